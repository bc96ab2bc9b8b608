// apps/hhg/query.cpp: `hhg query`, region, ray and nearest queries on a list of
// boxes (hhg::hash_grids<D, double>).
//
// Both files are read and every query is answered before anything is printed,
// so a bad line (in either file) leaves standard output empty. Box i is the
// i-th data line of the boxes file (comments and blank lines skipped), as in
// `hhg pairs`.
#include <algorithm>
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
#include "hhg/hash_grids.hpp"
#include "io.hpp"
#include "options.hpp"
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
    case mode::aabb: return 2 * static_cast<std::size_t>(d);
    case mode::point:
    case mode::nearest: return static_cast<std::size_t>(d);
    case mode::sphere: return static_cast<std::size_t>(d) + 1;
    case mode::ray: return 2 * static_cast<std::size_t>(d) + 1;
  }
  return 0;
}

const char* shape_name(mode m) {
  switch (m) {
    case mode::aabb: return "box";
    case mode::point:
    case mode::nearest: return "point";
    case mode::sphere: return "sphere (centre, radius)";
    case mode::ray: return "ray (origin, direction, maximum length)";
  }
  return "";
}

/// One match of a query: a box index (-1: --closest found nothing) and, with
/// --distances, its distance (--nearest) or entry parameter (--ray).
struct match {
  std::int64_t index = -1;
  double value = 0;
};

/// Writes the answers in the chosen format (see the footer of `hhg query`).
void write_answers(const std::vector<std::vector<match>>& answers, const query_options& o, const char* value_name,
                   bool with_values) {
  output out(stdout);
  const output_options& f = o.out;
  auto put_value = [&](double v) {
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    out.put(std::string_view(buf, static_cast<std::size_t>(r.ptr - buf)));
  };
  auto put_index = [&](std::int64_t i) {
    if (i < 0) {
      out.put("-1");
    } else {
      out.put_uint(static_cast<std::uint64_t>(i));
    }
  };
  auto size_of = [](const std::vector<match>& a) {
    return static_cast<std::uint64_t>(a.size() == 1 && a[0].index < 0 ? 0 : a.size());
  };
  if (f.format == "text") {
    for (const auto& a : answers) {
      if (f.count) {
        out.put_uint(size_of(a));
      } else {
        for (std::size_t i = 0; i < a.size(); ++i) {
          if (i) out.put(' ');
          put_index(a[i].index);
          if (with_values && a[i].index >= 0) {
            out.put(':');
            put_value(a[i].value);
          }
        }
      }
      out.put('\n');
    }
  } else if (f.format == "csv") {
    if (!f.skip_header) {
      out.put(f.count ? "query,count\n" : "query,index");
      if (!f.count) out.put(with_values ? std::string(",") + value_name + "\n" : std::string("\n"));
    }
    for (std::size_t q = 0; q < answers.size(); ++q) {
      if (f.count) {
        out.put_uint(q);
        out.put(',');
        out.put_uint(size_of(answers[q]));
        out.put('\n');
        continue;
      }
      for (const match& mt : answers[q]) {
        if (mt.index < 0) continue;  // --closest without a hit: no row
        out.put_uint(q);
        out.put(',');
        put_index(mt.index);
        if (with_values) {
          out.put(',');
          put_value(mt.value);
        }
        out.put('\n');
      }
    }
  } else {  // json
    nlohmann::json j;
    if (f.count) {
      std::vector<std::uint64_t> counts;
      for (const auto& a : answers) counts.push_back(size_of(a));
      j["counts"] = counts;
    } else {
      nlohmann::json results = nlohmann::json::array();
      for (const auto& a : answers) {
        nlohmann::json row = nlohmann::json::array();
        for (const match& mt : a) {
          if (mt.index < 0) continue;  // --closest without a hit: an empty list
          if (with_values) {
            row.push_back({{"index", mt.index}, {value_name, json_number(mt.value)}});
          } else {
            row.push_back(mt.index);
          }
        }
        results.push_back(row);
      }
      j["results"] = results;
    }
    const std::string text = j.dump() + "\n";
    out.put(text);
  }
  out.flush();
}

template <int D>
int run_query(line_reader& boxes_in, const query_options& o, mode m, const std::string& qfile) {
  const auto boxes = in_file(o.boxes, [&] { return read_box_file<D>(boxes_in); });
  hash_grids<D, double> g(make_config(o.grid, D, "query"));
  const std::unique_ptr<thread_pool> pool = make_executor(o.threads);
  g.set_executor(pool.get());
  std::vector<std::uint32_t> index_of;  // handle.index -> box index
  for (std::size_t i = 0; i < boxes.size(); ++i) {
    const handle h = g.insert(boxes[i]);
    if (h.index >= index_of.size()) index_of.resize(std::max<std::size_t>(h.index + 1, 2 * index_of.size()));
    index_of[h.index] = static_cast<std::uint32_t>(i);
  }
  // one answer per query: box indices, or -1 (closest ray, no hit)
  std::vector<std::vector<match>> answers;
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
      std::vector<match> ans;
      auto from_handles = [&] {
        for (const handle h : hs) ans.push_back({index_of[h.index], 0.0});
        std::sort(ans.begin(), ans.end(), [](const match& a, const match& b) { return a.index < b.index; });
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
            double scale = 1;
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
            // parameter t = distance / |direction| (the scaled direction's length)
            const double length = big > 0 ? std::sqrt(norm) : 0.0;
            r.max_t = big > 0 ? len / length : len;
            scale = big > 0 ? length : 1.0;
            if (o.closest) {  // the first-hit query: stops at the first box along the ray
              const ray_hit h = g.first_ray_hit(r);
              ans.push_back(h.id ? match{index_of[h.id.index], h.t * scale} : match{-1, 0.0});
              break;
            }
            g.ray_hits(r, hits);
            std::vector<std::pair<double, std::int64_t>> order;
            for (const ray_hit& h : hits) order.push_back({h.t, index_of[h.id.index]});
            std::sort(order.begin(), order.end());
            for (const auto& e : order) ans.push_back({e.second, e.first * scale});
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
            // (the distance printed is rounded; the order above is exact)
            for (const auto& e : order) {
              const auto b = g.get(e.first);
              std::array<double, D> gap{};
              for (int i = 0; i < D; ++i) {
                const double lo = b.min[i], hi = b.max[i], at = p[static_cast<std::size_t>(i)];
                gap[static_cast<std::size_t>(i)] = at < lo ? lo - at : (at > hi ? at - hi : 0.0);
              }
              ans.push_back({e.second, length_of(gap)});
            }
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
  write_answers(answers, o, m == mode::ray ? "t" : "distance", o.distances);
  return exit_ok;
}

}  // namespace

CLI::App* add_query_command(CLI::App& app, query_options& o) {
  CLI::App* sub = app.add_subcommand("query", "Answer box, point, sphere, ray or nearest queries on a list of boxes");
  sub->add_option("--boxes", o.boxes, "File of boxes, in the format of 'hhg pairs' ('-': standard input)")->required();
  auto* a = sub->add_option("--aabb", o.aabb, "File of query boxes (2*dim numbers a line)");
  auto* p = sub->add_option("--point", o.point, "File of query points (dim numbers a line)");
  auto* s = sub->add_option("--sphere", o.sphere, "File of spheres (centre, radius)");
  auto* r = sub->add_option("--ray", o.ray, "File of rays (origin, direction, maximum length or inf)");
  auto* n = sub->add_option("--nearest", o.nearest, "File of points: the K nearest boxes of each");
  for (auto* x : {a, p, s, r, n})
    for (auto* y : {a, p, s, r, n})
      if (x != y) x->excludes(y);
  sub->add_option("--k", o.k, "Number of nearest boxes for --nearest, 1 to 2^32 (default 1)")
      ->check(integer_in(1, std::uint64_t{1} << 32))
      ->each([&o](const std::string&) { o.k_given = true; });
  sub->add_flag("--closest", o.closest, "With --ray: only the first box hit (the first-hit query), or -1");
  sub->add_flag("--distances", o.distances,
                "With --nearest: the distance of each box; with --ray: the distance along the ray at which it "
                "enters each box ('index:value' in text)");
  add_output_options(sub, o.out);
  add_threads_option(sub, o.threads);
  add_grid_options(sub, o.grid);
  sub->add_option("--dim", o.dim, "Dimension, 2 or 3 (default: the '# dim N' first line of the boxes, else 3)")
      ->check(CLI::IsMember({2, 3}));
  sub->footer(
      "Exactly one of --aabb, --point, --sphere, --ray, --nearest names the query file.\n"
      "Output: one line per query with the indices of the matching boxes (0-based data\n"
      "lines of --boxes), ascending; for rays in order of entry distance (ties by index);\n"
      "for --nearest the K nearest by box distance (ties by index). Closed overlap: touching\n"
      "counts. --distances: 'index:value' (value: Euclidean distance for --nearest, distance\n"
      "from the origin along the ray at entry for --ray). --count: one number per query.\n"
      "--format csv: header 'query,index' (',distance' or ',t' with --distances), one row\n"
      "per match; 'query,count' with --count. --format json: {\"results\": [[i, ...], ...]}\n"
      "({\"index\": i, \"distance\"|\"t\": v} with --distances), {\"counts\": [...]} with --count.\n"
      "A bad line: message with the file and line number on standard error, status 2, no output.");
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
  if (o.k_given && m != mode::nearest) throw usage_error("query: --k goes with --nearest");  // (was ignored)
  if (o.distances && m != mode::ray && m != mode::nearest)
    throw usage_error("query: --distances goes with --nearest or --ray");
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
