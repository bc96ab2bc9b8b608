// apps/hhg/parse.cpp: fields, numbers, IDs and boxes of the text input format.
//
// Numbers go through std::from_chars (exact rounding, no locale, no allocation),
// which also accepts "inf", "infinity" and "nan" in any case. It does not accept a
// leading '+', so one is skipped here first; it reports ERANGE both for overflow
// (1e400) and for a nonzero value that rounds to zero (1e-400): both are errors.
#include "parse.hpp"

#include <charconv>
#include <cmath>
#include <string>
#include <system_error>

namespace hhg::cli {

namespace {

bool is_blank(char c) noexcept { return c == ' ' || c == '\t'; }
bool is_separator(char c) noexcept { return c == ' ' || c == '\t' || c == ','; }

const char* axis_name(int axis) noexcept {
  static constexpr const char* names[] = {"x", "y", "z"};
  return names[axis];
}

std::string format_number(double v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

}  // namespace

std::string quoted(std::string_view field) {
  constexpr std::size_t max_shown = 40;
  static constexpr char hex[] = "0123456789abcdef";
  std::string s(1, '\'');
  for (const char c : field.substr(0, max_shown)) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f) {
      s.push_back(c);
    } else {
      s.append("\\x");
      s.push_back(hex[u >> 4]);
      s.push_back(hex[u & 15]);
    }
  }
  if (field.size() > max_shown) s.append("...");
  s.push_back('\'');
  return s;
}

void fail_at(std::size_t line, const std::string& what) {
  throw input_error("line " + std::to_string(line) + ": " + what);
}

std::string_view strip_cr(std::string_view line) noexcept {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

bool is_ignorable(std::string_view line) noexcept {
  for (const char c : strip_cr(line)) {
    if (is_blank(c)) continue;
    return c == '#';
  }
  return true;
}

std::optional<int> parse_dim_header(std::string_view first_line, std::size_t line) {
  std::string_view s = strip_cr(first_line);
  std::size_t i = 0;
  while (i < s.size() && is_blank(s[i])) ++i;
  if (i == s.size() || s[i] != '#') return std::nullopt;
  ++i;
  while (i < s.size() && is_blank(s[i])) ++i;
  if (s.substr(i, 3) != "dim") return std::nullopt;
  i += 3;
  // "# dim" must be followed by blanks then the value ("# dimensions ..." is a comment).
  if (i == s.size() || !is_blank(s[i])) return std::nullopt;
  while (i < s.size() && is_blank(s[i])) ++i;
  std::size_t end = s.size();
  while (end > i && is_blank(s[end - 1])) --end;
  const std::string_view value = s.substr(i, end - i);
  if (value == "2") return 2;
  if (value == "3") return 3;
  fail_at(line, "the '# dim' header must give 2 or 3, found " + quoted(value));
}

int choose_dimension(int dim_flag, std::optional<std::string_view> first_line) {
  if (dim_flag == 2 || dim_flag == 3) return dim_flag;
  if (first_line) {
    if (const std::optional<int> d = parse_dim_header(*first_line, 1)) return *d;
  }
  return 3;
}

std::size_t split_fields(std::string_view line, std::vector<std::string_view>& out, std::size_t keep) {
  out.clear();
  line = strip_cr(line);
  std::size_t i = 0, count = 0;
  const std::size_t n = line.size();
  while (true) {
    while (i < n && is_separator(line[i])) ++i;
    if (i == n) return count;
    const std::size_t start = i;
    while (i < n && !is_separator(line[i])) ++i;
    if (count++ < keep) out.push_back(line.substr(start, i - start));
  }
}

double parse_number(std::string_view field, std::size_t line) {
  const char* first = field.data();
  const char* const last = field.data() + field.size();
  // from_chars takes no '+'; accept one, but not "+-1" or "++1".
  if (first != last && *first == '+' && last - first > 1 && first[1] != '-' && first[1] != '+') ++first;
  double v = 0;
  const auto [ptr, ec] = std::from_chars(first, last, v, std::chars_format::general);
  if (ec == std::errc::result_out_of_range && ptr == last) fail_at(line, "number out of range: " + quoted(field));
  if (ec != std::errc{} || ptr != last) fail_at(line, "not a number: " + quoted(field));
  if (std::isnan(v)) fail_at(line, "NaN is not allowed: " + quoted(field));
  return v;
}

std::uint64_t parse_id(std::string_view field, std::size_t line) {
  const char* const last = field.data() + field.size();
  std::uint64_t v = 0;
  const auto [ptr, ec] = std::from_chars(field.data(), last, v, 10);
  if (ec == std::errc::result_out_of_range)
    fail_at(line, "ID out of range (0 to 18446744073709551615): " + quoted(field));
  if (ec != std::errc{} || ptr != last)
    fail_at(line, "bad ID " + quoted(field) + " (expected an integer from 0 to 18446744073709551615)");
  return v;
}

template <int D>
box<D, double> parse_box(const std::vector<std::string_view>& fields, std::size_t first, std::size_t line) {
  box<D, double> b;
  for (int i = 0; i < D; ++i) b.min[i] = parse_number(fields[first + i], line);
  for (int i = 0; i < D; ++i) b.max[i] = parse_number(fields[first + D + i], line);
  for (int i = 0; i < D; ++i) {
    if (b.min[i] > b.max[i])
      fail_at(line, std::string("min > max on axis ") + axis_name(i) + " (" + format_number(b.min[i]) + " > " +
                        format_number(b.max[i]) + ")");
  }
  return b;
}

template box<2, double> parse_box<2>(const std::vector<std::string_view>&, std::size_t, std::size_t);
template box<3, double> parse_box<3>(const std::vector<std::string_view>&, std::size_t, std::size_t);

}  // namespace hhg::cli
