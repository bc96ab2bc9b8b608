// apps/hhg/input.cpp: box files, --periodic / --domain, periodic pair lines
// (input.hpp). Part of hhg_cli_input, shared by hhg and hhg_mpi.
#include "input.hpp"

#include <cmath>
#include <limits>
#include <optional>
#include <string>

#include "parse.hpp"

namespace hhg::cli {

int read_dimension(line_reader& in, int dim_flag) {
  std::string_view first;
  const bool have_first = in.next(first);
  const int dim = choose_dimension(dim_flag, have_first ? std::optional<std::string_view>(first) : std::nullopt);
  if (have_first) in.unread();
  return dim;
}

template <int D>
std::vector<box<D, double>> read_boxes(line_reader& in, const periodic_domain<D, double>* periodic) {
  std::vector<box<D, double>> boxes;
  std::vector<std::string_view> fields;
  std::string_view line;
  while (in.next(line)) {
    if (is_ignorable(line)) continue;
    constexpr std::size_t count = std::size_t{2} * D;
    const std::size_t found = split_fields(line, fields, count);
    if (found != count)
      fail_at(in.line_number(), "expected " + std::to_string(count) + " numbers, found " + std::to_string(found));
    boxes.push_back(parse_box<D>(fields, 0, in.line_number()));
    if (periodic != nullptr) {
      if (const std::string problem = periodic_box_problem(*periodic, boxes.back()); !problem.empty())
        fail_at(in.line_number(), problem);
    }
  }
  if (boxes.size() > std::numeric_limits<std::uint32_t>::max())
    throw input_error("too many boxes (at most 4294967295)");
  return boxes;
}

namespace {

/// Splits at commas (empty fields kept, so "1,,2" is an error).
std::vector<std::string_view> split_commas(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = s.find(',', start);
    out.push_back(s.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (comma == std::string_view::npos) return out;
    start = comma + 1;
  }
}

double domain_number(std::string_view f) {
  try {
    return parse_number(f, 0);
  } catch (const input_error&) {
    throw input_error("--domain: not a number: " + quoted(f) + " (expected LO,HI or LO,HI per axis)");
  }
}

}  // namespace

template <int D>
periodic_domain<D, double> parse_periodic(std::string_view axes, std::string_view bounds) {
  static constexpr const char* names[] = {"x", "y", "z"};
  periodic_domain<D, double> d;
  if (axes == "all") {
    d.periodic.fill(true);
  } else {
    for (const std::string_view a : split_commas(axes)) {
      int axis = -1;
      for (int i = 0; i < D; ++i)
        if (a == names[i]) axis = i;
      if (axis < 0)
        throw input_error("--periodic: unknown axis " + quoted(a) + " (expected a comma list of " +
                          (D == 2 ? "x, y" : "x, y, z") + ", or all)");
      if (d.periodic[axis]) throw input_error("--periodic: axis " + quoted(a) + " given twice");
      d.periodic[axis] = true;
    }
  }
  const std::vector<std::string_view> v = split_commas(bounds);
  if (v.size() != 2 && v.size() != 2 * D)
    throw input_error("--domain: expected LO,HI or " + std::to_string(D) + " pairs LO,HI (one per axis), found " +
                      std::to_string(v.size()) + " values");
  for (int i = 0; i < D; ++i) {
    const std::size_t k = v.size() == 2 ? 0 : 2 * static_cast<std::size_t>(i);
    const double lo = domain_number(v[k]), hi = domain_number(v[k + 1]);
    if (!d.periodic[i]) continue;
    if (!std::isfinite(lo) || !std::isfinite(hi) || !(lo < hi) || !std::isfinite(hi - lo))
      throw input_error(std::string("--domain: on periodic axis ") + names[i] +
                        " the bounds must be finite with LO < HI (found " + quoted(v[k]) + ", " + quoted(v[k + 1]) +
                        ")");
    d.bounds.min[i] = lo;
    d.bounds.max[i] = hi;
  }
  return d;
}

template <int D>
void put_periodic_pair(output& out, std::uint64_t i, std::uint64_t j, const std::array<std::int32_t, D>& shift) {
  out.put_uint(i);
  out.put(' ');
  out.put_uint(j);
  for (int k = 0; k < D; ++k) {
    out.put(' ');
    if (shift[k] < 0) out.put('-');
    out.put_uint(static_cast<std::uint64_t>(shift[k] < 0 ? -static_cast<std::int64_t>(shift[k]) : shift[k]));
  }
  out.put('\n');
}

template std::vector<box<2, double>> read_boxes<2>(line_reader&, const periodic_domain<2, double>*);
template std::vector<box<3, double>> read_boxes<3>(line_reader&, const periodic_domain<3, double>*);
template periodic_domain<2, double> parse_periodic<2>(std::string_view, std::string_view);
template periodic_domain<3, double> parse_periodic<3>(std::string_view, std::string_view);
template void put_periodic_pair<2>(output&, std::uint64_t, std::uint64_t, const std::array<std::int32_t, 2>&);
template void put_periodic_pair<3>(output&, std::uint64_t, std::uint64_t, const std::array<std::int32_t, 3>&);

}  // namespace hhg::cli
