// apps/hhg/neighbors.cpp: `hhg neighbors`, fixed-radius neighbour lists of a
// point set (hhg::cell_list<D, double>, or with --method hierarchical
// hhg::hierarchical_neighbors<D, double>: the same lists).
//
// The whole input is parsed and checked before anything is printed, so a bad
// line leaves standard output empty.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "commands.hpp"
#include "hhg/hierarchical_neighbors.hpp"
#include "hhg/neighbors.hpp"
#include "io.hpp"
#include "parse.hpp"

namespace hhg::cli {

namespace {

template <int D>
int run_neighbors(line_reader& in, double radius, const std::string& method) {
  std::vector<std::array<double, D>> pts;
  std::vector<std::string_view> fields;
  std::string_view line;
  while (in.next(line)) {
    if (is_ignorable(line)) continue;
    const std::size_t found = split_fields(line, fields, D);
    if (found != static_cast<std::size_t>(D))
      fail_at(in.line_number(), "expected " + std::to_string(D) + " numbers, found " + std::to_string(found));
    std::array<double, D> p{};
    for (std::size_t i = 0; i < static_cast<std::size_t>(D); ++i) {
      p[i] = parse_number(fields[i], in.line_number());
      if (!std::isfinite(p[i])) fail_at(in.line_number(), "point coordinates must be finite");
    }
    pts.push_back(p);
  }
  if (pts.size() >= std::numeric_limits<std::uint32_t>::max()) throw input_error("too many points");
  neighbor_list nl;
  if (method == "hierarchical") {
    hierarchical_neighbors<D, double> hn;
    hn.neighbors(pts, radius, nl);
  } else {
    cell_list<D, double> cl;
    cl.build(pts, radius);
    cl.neighbors(nl);
  }
  output out(stdout);
  for (std::size_t i = 0; i < pts.size(); ++i) {
    for (std::size_t j = nl.offsets[i]; j < nl.offsets[i + 1]; ++j) {
      if (j != nl.offsets[i]) out.put(' ');
      out.put_uint(nl.indices[j]);
    }
    out.put('\n');
  }
  out.flush();
  return exit_ok;
}

}  // namespace

CLI::App* add_neighbors_command(CLI::App& app, neighbors_options& o) {
  CLI::App* sub = app.add_subcommand("neighbors", "For each point, the other points within a radius");
  sub->add_option("--radius", o.radius, "Radius R >= 0 (Euclidean, closed: distance <= R)")->required();
  sub->add_option("--method", o.method,
                  "cell-list (sorted cell list, default) or hierarchical (Pouchol et al. 2009, 3.3.2); same output")
      ->check(CLI::IsMember({"cell-list", "hierarchical"}));
  sub->add_option("--dim", o.dim, "Dimension, 2 or 3 (default: the '# dim N' first line, else 3)")
      ->check(CLI::IsMember({2, 3}));
  sub->add_option("points", o.file, "Input file of points, dim numbers a line; standard input when absent or '-'");
  sub->footer(
      "Output: for each point (0-based data lines), one line with the indices of the other\n"
      "points at distance <= R, ascending (an empty line when none). A bad line: message on\n"
      "standard error, status 2, no output.");
  return sub;
}

int neighbors_command(const neighbors_options& o) {
  if (!(o.radius >= 0) || !(o.radius <= kMaxRadius))
    throw usage_error("neighbors: --radius must be >= 0 and at most 2^511 (its square must be finite)");
  line_reader in(o.file);
  std::string_view first;
  const bool have_first = in.next(first);
  const int dim = choose_dimension(o.dim, have_first ? std::optional<std::string_view>(first) : std::nullopt);
  if (have_first) in.unread();
  return dim == 2 ? run_neighbors<2>(in, o.radius, o.method) : run_neighbors<3>(in, o.radius, o.method);
}

}  // namespace hhg::cli
