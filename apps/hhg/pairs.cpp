// apps/hhg/pairs.cpp: `hhg pairs`, every overlapping pair of a list of boxes.
//
// The whole input is parsed and checked before anything is printed, so a bad
// line leaves standard output empty. Pairs are collected as 64-bit keys
// (i << 32 | j, i < j) and put in order with a counting sort on i followed by a
// small sort of each bucket: O(N + P) plus the bucket sorts, instead of a
// comparison sort over all P pairs.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "commands.hpp"
#include "io.hpp"
#include "methods.hpp"
#include "parse.hpp"

namespace hhg::cli {

namespace {

template <int D>
std::vector<box<D, double>> read_boxes(line_reader& in) {
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
  if (boxes.size() > std::numeric_limits<std::uint32_t>::max())
    throw input_error("too many boxes (at most 4294967295)");
  return boxes;
}

/// Inserts every box into `m` and returns the keys (i << 32 | j, i < j) of the
/// overlapping pairs in the order the method reports them.
template <class M>
std::vector<std::uint64_t> collect_pairs(M& m, const std::vector<typename M::box_type>& boxes) {
  std::vector<std::uint32_t> index_of;  // handle.index -> data line index
  for (std::size_t i = 0; i < boxes.size(); ++i) {
    const handle h = m.insert(boxes[i]);
    if (h.index >= index_of.size()) index_of.resize(std::max<std::size_t>(h.index + 1, 2 * index_of.size()));
    index_of[h.index] = static_cast<std::uint32_t>(i);
  }
  std::vector<std::uint64_t> keys;
  keys.reserve(2 * boxes.size());  // typical scenes have a few pairs per box
  m.for_each_pair([&](handle a, handle b) {
    std::uint64_t i = index_of[a.index];
    std::uint64_t j = index_of[b.index];
    if (j < i) std::swap(i, j);
    keys.push_back(i << 32 | j);
  });
  return keys;
}

/// Writes the pairs sorted by (i, j), each once.
void write_sorted(const std::vector<std::uint64_t>& keys, std::size_t n, output& out) {
  // Counting sort on i: start[i] .. start[i + 1] is the bucket of i.
  std::vector<std::size_t> start(n + 1, 0);
  for (const std::uint64_t k : keys) ++start[(k >> 32) + 1];
  for (std::size_t i = 0; i < n; ++i) start[i + 1] += start[i];
  std::vector<std::uint32_t> partner(keys.size());
  {
    std::vector<std::size_t> fill(start.begin(), start.end() - 1);
    for (const std::uint64_t k : keys) partner[fill[k >> 32]++] = static_cast<std::uint32_t>(k);
  }
  for (std::size_t i = 0; i < n; ++i) {
    const auto first = partner.begin() + static_cast<std::ptrdiff_t>(start[i]);
    const auto last = partner.begin() + static_cast<std::ptrdiff_t>(start[i + 1]);
    std::sort(first, last);
    // No deduplication: every method reports each pair once, and a duplicate
    // here would be a library bug that the output should show, not hide.
    for (auto it = first; it != last; ++it) out.put_pair(i, *it);
  }
}

template <int D>
int run_pairs(line_reader& in, const std::string& method) {
  const std::vector<box<D, double>> boxes = read_boxes<D>(in);
  std::vector<std::uint64_t> keys;
  with_method<D>(method, [&](auto type) {
    typename decltype(type)::type m;
    keys = collect_pairs(m, boxes);
  });
  output out(stdout);
  write_sorted(keys, boxes.size(), out);
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
  sub->footer(
      "Input: one box a line, 2*dim numbers 'min_1 .. min_d max_1 .. max_d' separated by\n"
      "spaces, tabs or commas; blank lines and lines starting with '#' are ignored;\n"
      "inf and -inf are allowed, nan is not. A first line '# dim 2' or '# dim 3' sets the\n"
      "dimension when --dim is not given.\n"
      "Output: one overlapping pair 'i j' a line (0-based indices of the box lines, i < j),\n"
      "sorted. Touching boxes overlap. A bad line: message on standard error, status 2,\n"
      "no output.");
  return sub;
}

int pairs_command(const pairs_options& o) {
  line_reader in(o.file);
  std::string_view first;
  const bool have_first = in.next(first);
  const int dim = choose_dimension(o.dim, have_first ? std::optional<std::string_view>(first) : std::nullopt);
  if (have_first) in.unread();
  return dim == 2 ? run_pairs<2>(in, o.method) : run_pairs<3>(in, o.method);
}

}  // namespace hhg::cli
