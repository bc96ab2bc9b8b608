// apps/hhg/pairs.cpp: `hhg pairs`, every overlapping pair of a list of boxes.
//
// The whole input is parsed and checked before anything is printed, so a bad
// line leaves standard output empty. Order (--order):
// - sorted: pairs are collected as 64-bit keys (i << 32 | j, i < j) and put in
//   order by hhg::sort_pair_keys (hhg/broad_phase.hpp, the radix sort of
//   all_pairs): O(N + P), 16 bytes per pair (the keys and a second buffer).
// - stream: each pair is written as the method reports it, nothing is kept:
//   the method's detection order, the same on every run for the same input,
//   method, configuration and thread count... and for every thread count (the
//   hash grid's results do not depend on its workers). Every pair once, i < j.
// - auto (default): one detection collects the keys; sorted when 16 bytes per
//   pair fit in --sort-memory (default a quarter of the physical memory), else
//   the keys are dropped as soon as they outgrow it and a second detection
//   streams the pairs.
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "commands.hpp"
#include "hhg/broad_phase.hpp"
#include "hhg/hash_grids.hpp"
#include "hhg/periodic.hpp"
#include "input.hpp"
#include "io.hpp"
#include "methods.hpp"
#include "options.hpp"
#include "parse.hpp"

namespace hhg::cli {

namespace {

/// Writes the pairs in the chosen format; `count` is the number of pairs when
/// known before they are written (sorted), else counted as they pass.
class pair_writer {
 public:
  pair_writer(const output_options& o, output& out) : o_(o), out_(out) {}
  void begin() {
    if (o_.count) return;
    if (o_.format == "csv" && !o_.skip_header) out_.put("i,j\n");
    if (o_.format == "json") out_.put("{\"pairs\": [");
  }
  void pair(std::uint64_t i, std::uint64_t j) {
    ++written_;
    if (o_.count) return;
    if (o_.format == "text") {
      out_.put_pair(i, j);
    } else if (o_.format == "csv") {
      out_.put_uint(i);
      out_.put(',');
      out_.put_uint(j);
      out_.put('\n');
    } else {
      out_.put(written_ == 1 ? "\n  [" : ",\n  [");
      out_.put_uint(i);
      out_.put(", ");
      out_.put_uint(j);
      out_.put(']');
    }
  }
  void end() {
    if (o_.count) {
      if (o_.format == "csv" && !o_.skip_header) out_.put("pairs\n");
      if (o_.format == "json") out_.put("{\"count\": ");
      out_.put_uint(written_);
      out_.put(o_.format == "json" ? "}\n" : "\n");
    } else if (o_.format == "json") {
      out_.put(written_ ? "\n], \"count\": " : "], \"count\": ");
      out_.put_uint(written_);
      out_.put("}\n");
    }
    out_.flush();
  }

 private:
  const output_options& o_;
  output& out_;
  std::uint64_t written_ = 0;
};

/// Writes the pairs sorted by (i, j), each once (hhg::sort_pair_keys: the
/// library's pair sort).
void write_sorted(std::vector<std::uint64_t>& keys, std::size_t n, pair_writer& w) {
  sort_pair_keys(keys, n);
  // No deduplication: every method reports each pair once, and a duplicate
  // here would be a library bug that the output should show, not hide.
  for (const std::uint64_t k : keys) w.pair(k >> 32, k & 0xFFFFFFFFu);
}

/// A quarter of the physical memory (the default of --sort-memory).
std::uint64_t default_sort_memory() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return std::uint64_t{1} << 30;
  return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page) / 4;
}

template <int D>
int run_pairs(line_reader& in, const pairs_options& o) {
  const std::vector<box<D, double>> boxes = read_boxes<D>(in);
  const bool grid_flags = !o.grid.is_default();
  if (grid_flags && o.method != "hhg")
    throw usage_error("pairs: the hash grid flags (--factor, --cells, ...) apply to --method hhg only");
  const config cfg = make_config(o.grid, D, "pairs");
  const std::unique_ptr<thread_pool> pool = make_executor(o.threads);
  output out(stdout);
  pair_writer w(o.out, out);
  with_method<D>(o.method, [&](auto type) {
    using M = typename decltype(type)::type;
    M m = [&] {
      if constexpr (std::is_same_v<M, hash_grids<D, double>>) {
        M g(cfg);
        g.set_executor(pool.get());
        return g;
      } else {
        return M();
      }
    }();
    std::vector<std::uint32_t> index_of;                  // handle.index -> data line index
    const std::vector<handle> hs = insert_all(m, boxes);  // (in bulk where the method can)
    for (std::size_t i = 0; i < hs.size(); ++i) {
      const handle h = hs[i];
      if (h.index >= index_of.size()) index_of.resize(std::max<std::size_t>(h.index + 1, 2 * index_of.size()));
      index_of[h.index] = static_cast<std::uint32_t>(i);
    }
    auto ordered = [&](handle a, handle b) {
      std::uint64_t i = index_of[a.index], j = index_of[b.index];
      if (j < i) std::swap(i, j);
      return std::pair<std::uint64_t, std::uint64_t>(i, j);
    };
    const bool try_sort = o.order == "sorted" || (o.order == "auto" && !o.out.count);
    // auto: one detection collects the keys while 16 bytes per pair fit in
    // --sort-memory; only when they do not (the keys are then dropped) does a
    // second detection stream the pairs. (Until issue 19 a first detection
    // counted the pairs in every case.)
    const std::uint64_t limit =
        o.order == "sorted" ? UINT64_MAX : (o.sort_memory ? o.sort_memory : default_sort_memory()) / 16;
    std::vector<std::uint64_t> keys;
    bool fits = try_sort;
    if (try_sort) {
      keys.reserve(std::min<std::uint64_t>(2 * boxes.size(), limit));  // typical scenes have a few pairs per box
      m.for_each_pair([&](handle a, handle b) {
        if (!fits) return;
        if (keys.size() >= limit) {
          fits = false;
          std::vector<std::uint64_t>().swap(keys);
          return;
        }
        const auto [i, j] = ordered(a, b);
        keys.push_back(i << 32 | j);
      });
    }
    w.begin();
    if (fits) {
      write_sorted(keys, boxes.size(), w);
    } else {
      m.for_each_pair([&](handle a, handle b) {
        const auto [i, j] = ordered(a, b);
        w.pair(i, j);
      });
    }
  });
  w.end();
  return exit_ok;
}

/// `hhg pairs --periodic AXES --domain BOUNDS`: hhg::periodic_pairs, each
/// pair once per image shift, sorted by (i, j, shift).
template <int D>
int run_periodic_pairs(line_reader& in, const pairs_options& o) {
  if (o.periodic.empty()) throw usage_error("pairs: --domain needs --periodic AXES (which axes wrap around)");
  if (o.domain.empty()) throw usage_error("pairs: --periodic needs --domain LO,HI (the periodic domain)");
  const periodic_domain<D, double> d = parse_periodic<D>(o.periodic, o.domain);
  if (o.method != "hhg") throw usage_error("pairs: --periodic works with --method hhg only");
  if (o.order == "stream") throw usage_error("pairs: --periodic pairs are always sorted (no --order stream)");
  const config cfg = make_config(o.grid, D, "pairs");
  const std::vector<box<D, double>> boxes = read_boxes<D>(in, &d);  // (a box out of the domain: its line)
  std::vector<periodic_pair<D>> pairs;
  periodic_pairs(d, std::span<const box<D, double>>(boxes), pairs, cfg);
  output out(stdout);
  const output_options& f = o.out;
  if (f.count) {
    if (f.format == "csv" && !f.skip_header) out.put("pairs\n");
    if (f.format == "json") out.put("{\"count\": ");
    out.put_uint(pairs.size());
    out.put(f.format == "json" ? "}\n" : "\n");
  } else if (f.format == "text") {
    for (const auto& p : pairs) put_periodic_pair<D>(out, p.a, p.b, p.shift);
  } else if (f.format == "csv") {
    if (!f.skip_header) out.put(D == 2 ? "i,j,sx,sy\n" : "i,j,sx,sy,sz\n");
    for (const auto& p : pairs) {
      out.put_uint(p.a);
      out.put(',');
      out.put_uint(p.b);
      for (int k = 0; k < D; ++k) out.put("," + std::to_string(p.shift[k]));
      out.put('\n');
    }
  } else {
    out.put("{\"pairs\": [");
    for (std::size_t n = 0; n < pairs.size(); ++n) {
      out.put(n == 0 ? "\n  [" : ",\n  [");
      out.put_uint(pairs[n].a);
      out.put(", ");
      out.put_uint(pairs[n].b);
      out.put(", [");
      for (int k = 0; k < D; ++k) out.put((k ? ", " : "") + std::to_string(pairs[n].shift[k]));
      out.put("]]");
    }
    out.put(pairs.empty() ? "], \"count\": " : "\n], \"count\": ");
    out.put_uint(pairs.size());
    out.put("}\n");
  }
  out.flush();
  return exit_ok;
}

}  // namespace

CLI::App* add_pairs_command(CLI::App& app, pairs_options& o) {
  CLI::App* sub = app.add_subcommand("pairs", "Print every overlapping pair of a list of boxes");
  sub->add_option("--method", o.method, method_help())->check(CLI::IsMember(method_names()));
  sub->add_option("--dim", o.dim, "Dimension, 2 or 3 (default: the '# dim N' first line, else 3)")
      ->check(CLI::IsMember({2, 3}));
  sub->add_option("file", o.file, "Input file; standard input when absent or '-'");
  sub->add_option("--order", o.order,
                  "sorted: by (i, j); stream: as the method reports them, nothing kept (for more pairs than "
                  "memory holds); auto (default): sorted when the pairs fit in --sort-memory, else stream")
      ->check(CLI::IsMember({"auto", "sorted", "stream"}));
  sub->add_option("--sort-memory", o.sort_memory,
                  "Bytes the sorted list may take with --order auto (16 per pair; default: a quarter of the "
                  "physical memory)")
      ->check(integer_in(1, std::numeric_limits<std::uint64_t>::max()));
  sub->add_option("--periodic", o.periodic,
                  "Axes that wrap around: a comma list of x, y, z, or all (needs --domain); each pair is "
                  "reported once per image shift, as 'i j s_1 .. s_dim'");
  sub->add_option("--domain", o.domain,
                  "The periodic domain: LO,HI for every periodic axis, or LO,HI per axis "
                  "(LO_x,HI_x,LO_y,HI_y[,LO_z,HI_z]; bounds of non-periodic axes ignored)");
  add_output_options(sub, o.out);
  add_threads_option(sub, o.threads);
  add_grid_options(sub, o.grid);
  sub->footer(
      "Input: one box a line, 2*dim numbers 'min_1 .. min_d max_1 .. max_d' separated by\n"
      "spaces, tabs or commas; blank lines and lines starting with '#' are ignored;\n"
      "inf and -inf are allowed, nan is not. A first line '# dim 2' or '# dim 3' sets the\n"
      "dimension when --dim is not given.\n"
      "Output: one overlapping pair 'i j' a line (0-based indices of the box lines, i < j),\n"
      "sorted (see --order). Touching boxes overlap. --format csv: header 'i,j' then 'i,j'\n"
      "rows; --format json: {\"pairs\": [[i, j], ...], \"count\": P}. --count: only P\n"
      "(csv header 'pairs'; json {\"count\": P}). The hash grid flags apply to --method hhg.\n"
      "--periodic AXES --domain LO,HI: box i overlaps box j moved by s_k periods on each\n"
      "periodic axis k; one line 'i j s_1 .. s_dim' per (pair, shift), sorted, i <= j\n"
      "(i == j: a box meets its own image, shift lexicographically positive);\n"
      "csv 'i,j,sx,sy[,sz]', json [[i, j, [sx, ...]], ...]. See docs/distributed.md.\n"
      "A bad line: message on standard error, status 2, no output.");
  return sub;
}

int pairs_command(const pairs_options& o) {
  line_reader in(o.file);
  const int dim = read_dimension(in, o.dim);
  if (!o.periodic.empty() || !o.domain.empty())
    return dim == 2 ? run_periodic_pairs<2>(in, o) : run_periodic_pairs<3>(in, o);
  return dim == 2 ? run_pairs<2>(in, o) : run_pairs<3>(in, o);
}

}  // namespace hhg::cli
