// apps/hhg/neighbors.cpp: `hhg neighbors`, fixed-radius neighbour lists of a
// point set (hhg::cell_list<D, double>, or with --method hierarchical
// hhg::hierarchical_neighbors<D, double>: the same lists).
//
// The whole input is parsed and checked before anything is printed, so a bad
// line leaves standard output empty.
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "commands.hpp"
#include "format.hpp"
#include "hhg/hierarchical_neighbors.hpp"
#include "hhg/neighbors.hpp"
#include "io.hpp"
#include "options.hpp"
#include "parse.hpp"

namespace hhg::cli {

namespace {

void put_distance(output& out, double d) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, d);
  out.put(std::string_view(buf, static_cast<std::size_t>(r.ptr - buf)));
}

template <int D>
int run_neighbors(line_reader& in, const neighbors_options& o) {
  const double radius = o.radius;
  const std::string& method = o.method;
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
  // --threads: cell_list sorts and walks on the pool (the lists do not depend
  // on the thread count); hierarchical_neighbors takes no executor and runs on
  // the calling thread.
  const std::unique_ptr<thread_pool> pool = make_executor(o.threads);
  if (method == "hierarchical") {
    hierarchical_neighbors<D, double> hn;
    if constexpr (requires { hn.set_executor(pool.get()); }) hn.set_executor(pool.get());
    hn.neighbors(pts, radius, nl);
  } else {
    cell_list<D, double> cl;
    cl.set_executor(pool.get());
    cl.build(pts, radius);
    cl.neighbors(nl);
  }
  auto distance = [&](std::size_t i, std::size_t j) {
    std::array<double, D> d{};
    for (std::size_t a = 0; a < static_cast<std::size_t>(D); ++a) d[a] = pts[i][a] - pts[j][a];
    return length_of(d);
  };
  output out(stdout);
  const output_options& f = o.out;
  if (f.format == "text") {
    for (std::size_t i = 0; i < pts.size(); ++i) {
      if (f.count) {
        out.put_uint(nl.offsets[i + 1] - nl.offsets[i]);
      } else {
        for (std::size_t j = nl.offsets[i]; j < nl.offsets[i + 1]; ++j) {
          if (j != nl.offsets[i]) out.put(' ');
          out.put_uint(nl.indices[j]);
          if (o.distances) {
            out.put(':');
            put_distance(out, distance(i, nl.indices[j]));
          }
        }
      }
      out.put('\n');
    }
  } else if (f.format == "csv") {
    if (!f.skip_header)
      out.put(f.count ? "point,count\n" : (o.distances ? "point,neighbor,distance\n" : "point,neighbor\n"));
    for (std::size_t i = 0; i < pts.size(); ++i) {
      if (f.count) {
        out.put_uint(i);
        out.put(',');
        out.put_uint(nl.offsets[i + 1] - nl.offsets[i]);
        out.put('\n');
        continue;
      }
      for (std::size_t j = nl.offsets[i]; j < nl.offsets[i + 1]; ++j) {
        out.put_uint(i);
        out.put(',');
        out.put_uint(nl.indices[j]);
        if (o.distances) {
          out.put(',');
          put_distance(out, distance(i, nl.indices[j]));
        }
        out.put('\n');
      }
    }
  } else {  // json
    nlohmann::json j;
    if (f.count) {
      std::vector<std::size_t> counts;
      for (std::size_t i = 0; i < pts.size(); ++i) counts.push_back(nl.offsets[i + 1] - nl.offsets[i]);
      j["counts"] = counts;
    } else {
      nlohmann::json all = nlohmann::json::array();
      for (std::size_t i = 0; i < pts.size(); ++i) {
        nlohmann::json row = nlohmann::json::array();
        for (std::size_t k = nl.offsets[i]; k < nl.offsets[i + 1]; ++k) {
          if (o.distances) {
            row.push_back({{"index", nl.indices[k]}, {"distance", json_number(distance(i, nl.indices[k]))}});
          } else {
            row.push_back(nl.indices[k]);
          }
        }
        all.push_back(row);
      }
      j["neighbors"] = all;
    }
    out.put(j.dump() + "\n");
  }
  out.flush();
  return exit_ok;
}

}  // namespace

CLI::App* add_neighbors_command(CLI::App& app, neighbors_options& o) {
  CLI::App* sub = app.add_subcommand("neighbors", "For each point, the other points within a radius");
  sub->add_option("--radius", o.radius,
                  "Radius R >= 0 and <= 2^511, a decimal number (Euclidean, closed: distance <= R)")
      ->required()
      ->check(number_in(0, kMaxRadius, false, "2^511 (its square must be finite)"));
  sub->add_option("--method", o.method,
                  "cell-list (sorted cell list, default) or hierarchical (Pouchol et al. 2009, 3.3.2); same output")
      ->check(CLI::IsMember({"cell-list", "hierarchical"}));
  sub->add_option("--dim", o.dim, "Dimension, 2 or 3 (default: the '# dim N' first line, else 3)")
      ->check(CLI::IsMember({2, 3}));
  sub->add_option("points", o.file, "Input file of points, dim numbers a line; standard input when absent or '-'");
  sub->add_flag("--distances", o.distances, "Also the distance to each neighbour ('index:distance' in text)");
  add_output_options(sub, o.out);
  add_threads_option(sub, o.threads);
  sub->footer(
      "Output: for each point (0-based data lines), one line with the indices of the other\n"
      "points at distance <= R, ascending (an empty line when none); --distances: 'j:d'.\n"
      "--count: one number per point. --format csv: header 'point,neighbor' (',distance'),\n"
      "one row per neighbour ('point,count' with --count). --format json:\n"
      "{\"neighbors\": [[j, ...], ...]} ({\"index\": j, \"distance\": d} with --distances),\n"
      "{\"counts\": [...]} with --count. A bad line: message on standard error, status 2, no output.");
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
  return dim == 2 ? run_neighbors<2>(in, o) : run_neighbors<3>(in, o);
}

}  // namespace hhg::cli
