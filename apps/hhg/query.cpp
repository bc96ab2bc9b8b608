// apps/hhg/query.cpp: `hhg query`, region, ray and nearest queries on a list of
// boxes (hhg::hash_grids<D, double>).
//
// Both files are read and every query is answered before anything is printed,
// so a bad line (in either file) leaves standard output empty. Box i is the
// i-th data line of the boxes file (comments and blank lines skipped), as in
// `hhg pairs`.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "commands.hpp"
#include "hhg/hash_grids.hpp"
#include "io.hpp"
#include "parse.hpp"

namespace hhg::cli {

namespace {

enum class mode { aabb, point, sphere, ray, nearest };

/// Runs `body`, turning an input_error into one that names `file`.
template <class F>
auto in_file(const std::string& file, F&& body) {
  try {
    return body();
  } catch (const input_error& e) {
    std::string m = file == "-" || file.empty() ? std::string("standard input") : file;
    m += ": ";
    m += e.what();
    throw input_error(m);
  }
}

template <int D>
std::vector<box<D, double>> read_box_file(line_reader& in) {
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
  }
  if (boxes.size() >= std::numeric_limits<std::uint32_t>::max()) throw input_error("too many boxes");
  return boxes;
}

std::size_t fields_for(mode m, int d) {
  switch (m) {
    case mode::aabb:
      return 2 * static_cast<std::size_t>(d);
    case mode::point:
    case mode::nearest:
      return static_cast<std::size_t>(d);
    case mode::sphere:
      return static_cast<std::size_t>(d) + 1;
    case mode::ray:
      return 2 * static_cast<std::size_t>(d) + 1;
  }
  return 0;
}

const char* shape_name(mode m) {
  switch (m) {
    case mode::aabb:
      return "box";
    case mode::point:
    case mode::nearest:
      return "point";
    case mode::sphere:
      return "sphere (centre, radius)";
    case mode::ray:
      return "ray (origin, direction, maximum length)";
  }
  return "";
}

template <int D>
int run_query(line_reader& boxes_in, const query_options& o, mode m, const std::string& qfile) {
  const auto boxes = in_file(o.boxes, [&] { return read_box_file<D>(boxes_in); });
  hash_grids<D, double> g;
  std::vector<std::uint32_t> index_of;  // handle.index -> box index
  for (std::size_t i = 0; i < boxes.size(); ++i) {
    const handle h = g.insert(boxes[i]);
    if (h.index >= index_of.size()) index_of.resize(std::max<std::size_t>(h.index + 1, 2 * index_of.size()));
    index_of[h.index] = static_cast<std::uint32_t>(i);
  }
  // one answer per query: box indices, or -1 (closest ray, no hit)
  std::vector<std::vector<std::int64_t>> answers;
  std::vector<handle> hs;
  std::vector<ray_hit> hits;
  std::vector<std::string_view> fields;
  in_file(qfile, [&] {
    line_reader in(qfile);
    std::string_view line;
    const std::size_t want = fields_for(m, D);
    while (in.next(line)) {
      if (is_ignorable(line)) continue;
      const std::size_t ln = in.line_number();
      const std::size_t found = split_fields(line, fields, want);
      if (found != want) {
        std::string msg = "expected ";
        msg += std::to_string(want);
        msg += " numbers for a ";
        msg += shape_name(m);
        msg += ", found ";
        msg += std::to_string(found);
        fail_at(ln, msg);
      }
      std::vector<double> v(want);
      for (std::size_t i = 0; i < want; ++i) v[i] = parse_number(fields[i], ln);
      std::array<double, D> p{};
      for (int i = 0; i < D; ++i) p[static_cast<std::size_t>(i)] = v[static_cast<std::size_t>(i)];
      std::vector<std::int64_t> ans;
      auto from_handles = [&] {
        for (const handle h : hs) ans.push_back(index_of[h.index]);
        std::sort(ans.begin(), ans.end());
      };
      try {
        switch (m) {
          case mode::aabb: {
            g.overlapping(parse_box<D>(fields, 0, ln), hs);
            from_handles();
            break;
          }
          case mode::point:
            g.containing(p, hs);
            from_handles();
            break;
          case mode::sphere: {
            const double r = v[D];
            if (r < 0) fail_at(ln, "negative sphere radius");
            for (int i = 0; i < D; ++i)
              if (!std::isfinite(p[static_cast<std::size_t>(i)])) fail_at(ln, "sphere centre must be finite");
            g.in_sphere(p, r, hs);
            from_handles();
            break;
          }
          case mode::ray: {
            ray<D, double> r;
            double big = 0;
            for (int i = 0; i < D; ++i) {
              const auto a = static_cast<std::size_t>(i);
              r.origin[a] = v[a];
              r.direction[a] = v[D + a];
              if (!std::isfinite(r.origin[a]) || !std::isfinite(r.direction[a]))
                fail_at(ln, "ray origin and direction must be finite");
              big = std::max(big, std::fabs(r.direction[a]));
            }
            const double len = v[2 * D];
            if (len < 0) fail_at(ln, "negative ray length");
            // the segment o + s * direction / |direction|, 0 <= s <= len: scale
            // the direction by a power of two (exact, the same path) to a
            // largest component in [1, 2), so |direction| and len / |direction|
            // neither overflow nor underflow; max_t is len / |direction|
            // rounded (relative error below 2^-50)
            double norm = 0;
            if (big > 0) {
              const int k = std::ilogb(big);
              for (int i = 0; i < D; ++i) {
                const auto a = static_cast<std::size_t>(i);
                r.direction[a] = std::ldexp(r.direction[a], -k);
                norm += r.direction[a] * r.direction[a];
              }
            }
            r.max_t = big > 0 ? len / std::sqrt(norm) : len;
            g.ray_hits(r, hits);
            std::vector<std::pair<double, std::int64_t>> order;
            for (const ray_hit& h : hits) order.push_back({h.t, index_of[h.id.index]});
            std::sort(order.begin(), order.end());
            if (o.closest) {
              ans.push_back(order.empty() ? -1 : order.front().second);
            } else {
              for (const auto& e : order) ans.push_back(e.second);
            }
            break;
          }
          case mode::nearest: {
            for (int i = 0; i < D; ++i)
              if (!std::isfinite(p[static_cast<std::size_t>(i)])) fail_at(ln, "point must be finite");
            g.nearest(p, o.k, hs);
            // ties by box index: re-rank equal distances
            std::vector<std::pair<handle, std::int64_t>> order;
            for (const handle h : hs) order.push_back({h, index_of[h.index]});
            std::stable_sort(order.begin(), order.end(), [&](const auto& x, const auto& y) {
              const int c = compare_box_distance(g.get(x.first), g.get(y.first), p);  // exact
              return c < 0 || (c == 0 && x.second < y.second);
            });
            for (const auto& e : order) ans.push_back(e.second);
            break;
          }
        }
      } catch (const hhg::error& e) {
        fail_at(ln, e.what());
      }
      answers.push_back(std::move(ans));
    }
    return 0;
  });
  output out(stdout);
  for (const auto& a : answers) {
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (i) out.put(' ');
      if (a[i] < 0) {
        out.put("-1");
      } else {
        out.put_uint(static_cast<std::uint64_t>(a[i]));
      }
    }
    out.put('\n');
  }
  out.flush();
  return exit_ok;
}

}  // namespace

CLI::App* add_query_command(CLI::App& app, query_options& o) {
  CLI::App* sub = app.add_subcommand("query", "Answer box, point, sphere, ray or nearest queries on a list of boxes");
  sub->add_option("--boxes", o.boxes, "File of boxes, in the format of 'hhg pairs' ('-': standard input)")
      ->required();
  auto* a = sub->add_option("--aabb", o.aabb, "File of query boxes (2*dim numbers a line)");
  auto* p = sub->add_option("--point", o.point, "File of query points (dim numbers a line)");
  auto* s = sub->add_option("--sphere", o.sphere, "File of spheres (centre, radius)");
  auto* r = sub->add_option("--ray", o.ray, "File of rays (origin, direction, maximum length or inf)");
  auto* n = sub->add_option("--nearest", o.nearest, "File of points: the K nearest boxes of each");
  for (auto* x : {a, p, s, r, n})
    for (auto* y : {a, p, s, r, n})
      if (x != y) x->excludes(y);
  sub->add_option("--k", o.k, "Number of nearest boxes for --nearest (default 1)");
  sub->add_flag("--closest", o.closest, "With --ray: print only the first box hit, or -1");
  sub->add_option("--dim", o.dim, "Dimension, 2 or 3 (default: the '# dim N' first line of the boxes, else 3)")
      ->check(CLI::IsMember({2, 3}));
  sub->footer(
      "Exactly one of --aabb, --point, --sphere, --ray, --nearest names the query file.\n"
      "Output: one line per query with the indices of the matching boxes (0-based data\n"
      "lines of --boxes), ascending; for rays in order of entry distance (ties by index);\n"
      "for --nearest the K nearest by box distance (ties by index). Closed overlap: touching\n"
      "counts. A bad line: message with the file and line number on standard error,\n"
      "status 2, no output.");
  return sub;
}

int query_command(const query_options& o) {
  mode m = mode::aabb;
  std::string qfile;
  int given = 0;
  const std::pair<const std::string*, mode> choices[] = {{&o.aabb, mode::aabb},
                                                         {&o.point, mode::point},
                                                         {&o.sphere, mode::sphere},
                                                         {&o.ray, mode::ray},
                                                         {&o.nearest, mode::nearest}};
  for (const auto& [file, md] : choices)
    if (!file->empty()) {
      ++given;
      m = md;
      qfile = *file;
    }
  if (given != 1) throw usage_error("query: give exactly one of --aabb, --point, --sphere, --ray, --nearest");
  if (o.closest && m != mode::ray) throw usage_error("query: --closest goes with --ray");
  if ((o.boxes == "-" || o.boxes.empty()) && qfile == "-")
    throw usage_error("query: the boxes and the queries cannot both come from standard input");
  line_reader in(o.boxes);
  std::string_view first;
  const int dim = in_file(o.boxes, [&] {
    const bool have_first = in.next(first);
    const int d = choose_dimension(o.dim, have_first ? std::optional<std::string_view>(first) : std::nullopt);
    if (have_first) in.unread();
    return d;
  });
  return dim == 2 ? run_query<2>(in, o, m, qfile) : run_query<3>(in, o, m, qfile);
}

}  // namespace hhg::cli
