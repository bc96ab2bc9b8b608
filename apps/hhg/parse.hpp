// apps/hhg/parse.hpp: the text input format shared by `hhg pairs` and `hhg replay`.
//
// A line is a list of fields separated by runs of spaces, tabs and commas (in any
// mix). A trailing carriage return (Windows line ends) is dropped. A line holding
// only spaces and tabs is blank; a line whose first non-blank character is '#' is a
// comment; both are ignored. The very first line of a file may be the header
// `# dim 2` or `# dim 3`, which selects the dimension when --dim is not given.
//
// Every error is reported as an input_error carrying the 1-based physical line
// number; main() prints "hhg: line N: <message>" and exits with status 2.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "hhg/box.hpp"

namespace hhg::cli {

/// Bad input (a bad line, a file that cannot be read). Exit status 2.
class input_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A field as shown in a message: in single quotes, cut after 40 bytes ("..."),
/// bytes outside printable ASCII written as \xNN.
std::string quoted(std::string_view field);

/// Throws input_error("line N: <what>").
[[noreturn]] void fail_at(std::size_t line, const std::string& what);

/// Drops one trailing '\r'.
std::string_view strip_cr(std::string_view line) noexcept;

/// True for a line to skip: only spaces and tabs (and a trailing '\r'), or '#'
/// after optional spaces and tabs.
bool is_ignorable(std::string_view line) noexcept;

/// The dimension a first line `# dim 2` / `# dim 3` selects; nullopt when the line
/// is no dimension header. A header with any other value (`# dim 4`) is an error.
std::optional<int> parse_dim_header(std::string_view first_line, std::size_t line);

/// Splits a line into fields at runs of spaces, tabs and commas and returns
/// how many there are. Keeps the first `keep` of them in `out` (reused): the
/// callers need only as many as a valid line has, and a line of millions of
/// fields then costs no memory.
std::size_t split_fields(std::string_view line, std::vector<std::string_view>& out, std::size_t keep);

/// Parses one coordinate: a decimal floating-point number (optional sign, digits,
/// optional fraction and exponent) or inf / infinity with an optional sign, case
/// insensitive. NaN, trailing characters and values out of the range of double
/// are errors naming `line`.
double parse_number(std::string_view field, std::size_t line);

/// Parses an object ID: a decimal integer in [0, 2^64 - 1].
std::uint64_t parse_id(std::string_view field, std::size_t line);

/// Parses 2*D fields `min_1 .. min_D max_1 .. max_D` starting at fields[first]
/// into a box and checks it (no NaN, min <= max on every axis). The caller has
/// checked the field count.
template <int D>
box<D, double> parse_box(const std::vector<std::string_view>& fields, std::size_t first, std::size_t line);

/// The dimension a command works in: `dim_flag` when it is 2 or 3 (given on the
/// command line), otherwise the `# dim N` header if `first_line` is one, otherwise 3.
int choose_dimension(int dim_flag, std::optional<std::string_view> first_line);

}  // namespace hhg::cli
