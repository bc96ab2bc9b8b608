// apps/hhg/format.hpp: CSV fields and JSON numbers as the `hhg` tool writes
// them (header-only, no CLI11: the tests use it too).
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace hhg::cli {

/// A CSV field: as is when it holds no comma, quote, CR or LF; else in double
/// quotes with inner quotes doubled (RFC 4180).
inline std::string csv_field(std::string_view s) {
  if (s.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(s);
  std::string q = "\"";
  for (const char c : s) {
    if (c == '"') q += '"';
    q += c;
  }
  return q + "\"";
}

/// The Euclidean length of d (per-axis differences), rounded once or twice
/// but neither underflowing nor overflowing on the way: the largest part is
/// factored out (sqrt(sum d^2) printed 0 for points 1e-200 apart, until stop 79).
template <std::size_t N>
double length_of(const std::array<double, N>& d) {
  double m = 0;
  for (const double x : d) m = std::max(m, std::abs(x));
  if (!(m > 0) || !std::isfinite(m)) return m;
  double s = 0;
  for (const double x : d) s += (x / m) * (x / m);
  return m * std::sqrt(s);
}

/// A double as JSON: null when not finite.
inline nlohmann::json json_number(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

}  // namespace hhg::cli
