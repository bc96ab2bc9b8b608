// apps/hhg/format.hpp: CSV fields and JSON numbers as the `hhg` tool writes
// them (header-only, no CLI11: the tests use it too).
#pragma once

#include <cmath>
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

/// A double as JSON: null when not finite.
inline nlohmann::json json_number(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

}  // namespace hhg::cli
