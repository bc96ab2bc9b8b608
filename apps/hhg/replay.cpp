// apps/hhg/replay.cpp: `hhg replay`, an operation log run against the dynamic
// structure.
//
// The log is executed line by line as it is read, so the tool can be driven
// through a pipe: when the input is not a regular file, the answer to each
// `pairs` is flushed at once. User IDs (any 64-bit value) map to handles through
// a hash map; handle.index is dense, so the way back is a plain array.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "commands.hpp"
#include "hhg/error.hpp"
#include "io.hpp"
#include "methods.hpp"
#include "parse.hpp"

namespace hhg::cli {

namespace {

template <class M>
class replayer {
 public:
  static constexpr int D = M::dimension;

  replayer(line_reader& in, output& out) : in_(in), out_(out) {}

  void run() {
    std::string_view line;
    while (in_.next(line)) {
      if (is_ignorable(line)) continue;
      count_ = split_fields(line, fields_, 2 + 2 * D);  // the most a valid line has
      line_ = in_.line_number();
      try {
        execute();
      } catch (const hhg::error& e) {  // the checks below should leave nothing for the library to reject
        std::string what = e.what();
        if (what.rfind("hhg: ", 0) == 0) what.erase(0, 5);
        fail_at(line_, what);
      }
    }
  }

 private:
  void execute() {
    if (count_ == 0)  // a line of separators only (",,,"): not blank, but no command either
      fail_at(line_, "expected a command (add, move, remove or pairs), found no fields");
    const std::string_view cmd = fields_[0];
    if (cmd == "add") {
      expect_box_fields();
      const std::uint64_t id = parse_id(fields_[1], line_);
      const box<D, typename M::scalar> b = parse_box<D>(fields_, 2, line_);
      if (ids_.contains(id)) fail_at(line_, "ID " + std::to_string(id) + " already added");
      const handle h = m_.insert(b);
      ids_.emplace(id, h);
      if (h.index >= id_of_.size()) id_of_.resize(std::max<std::size_t>(h.index + 1, 2 * id_of_.size()));
      id_of_[h.index] = id;
    } else if (cmd == "move") {
      expect_box_fields();
      const std::uint64_t id = parse_id(fields_[1], line_);
      const box<D, typename M::scalar> b = parse_box<D>(fields_, 2, line_);
      m_.move(find(id), b);
    } else if (cmd == "remove") {
      if (count_ != 2)
        fail_at(line_, "expected 'remove ID', found " + std::to_string(count_ - 1) + " fields after 'remove'");
      const std::uint64_t id = parse_id(fields_[1], line_);
      m_.remove(find(id));
      ids_.erase(id);
    } else if (cmd == "pairs") {
      if (count_ != 1) fail_at(line_, "'pairs' takes no arguments, found " + std::to_string(count_ - 1));
      print_pairs();
    } else {
      fail_at(line_, "unknown command " + quoted(cmd) + " (expected add, move, remove or pairs)");
    }
  }

  /// `add ID` / `move ID` followed by 2*D numbers.
  void expect_box_fields() const {
    const std::string cmd(fields_[0]);
    if (count_ < 2)
      fail_at(line_, "expected '" + cmd + " ID' followed by " + std::to_string(2 * D) + " numbers, found no ID");
    if (count_ != 2 + 2 * D)
      fail_at(line_, "expected '" + cmd + " ID' followed by " + std::to_string(2 * D) + " numbers, found " +
                         std::to_string(count_ - 2));
  }

  handle find(std::uint64_t id) const {
    const auto it = ids_.find(id);
    if (it == ids_.end()) fail_at(line_, "unknown ID " + std::to_string(id));
    return it->second;
  }

  void print_pairs() {
    pairs_.clear();
    m_.for_each_pair([this](handle a, handle b) {
      std::uint64_t x = id_of_[a.index];
      std::uint64_t y = id_of_[b.index];
      if (y < x) std::swap(x, y);
      pairs_.emplace_back(x, y);
    });
    std::sort(pairs_.begin(), pairs_.end());  // no deduplication: see pairs.cpp
    for (const auto& [x, y] : pairs_) out_.put_pair(x, y);
    out_.put("--\n");
    if (in_.interactive()) out_.flush();
  }

  line_reader& in_;
  output& out_;
  M m_;
  std::unordered_map<std::uint64_t, handle> ids_;
  std::vector<std::uint64_t> id_of_;  // handle.index -> ID
  std::vector<std::pair<std::uint64_t, std::uint64_t>> pairs_;
  std::vector<std::string_view> fields_;  // the first fields of the line (at most 2 + 2 * D)
  std::size_t count_ = 0;                 // the line's number of fields
  std::size_t line_ = 0;
};

template <class M>
int run_replay(line_reader& in) {
  output out(stdout);
  replayer<M> r(in, out);
  r.run();  // on an error, `out` flushes what was printed before as it is destroyed
  out.flush();
  return exit_ok;
}

template <int D>
int run_replay(line_reader& in, const std::string& method) {
  int status = exit_ok;
  with_method<D>(method, [&](auto type) { status = run_replay<typename decltype(type)::type>(in); });
  return status;
}

}  // namespace

CLI::App* add_replay_command(CLI::App& app, replay_options& o) {
  CLI::App* sub =
      app.add_subcommand("replay", "Run an operation log (add, move, remove, pairs) against the dynamic structure");
  sub->add_option("--method", o.method, method_help())->check(CLI::IsMember(method_names()));
  sub->add_option("--dim", o.dim, "Dimension, 2 or 3 (default: the '# dim N' first line, else 3)")
      ->check(CLI::IsMember({2, 3}));
  sub->add_option("file", o.file, "Operation log; standard input when absent or '-'");
  sub->footer(
      "Operations, one a line (fields separated by spaces, tabs or commas; blank lines and\n"
      "lines starting with '#' are ignored):\n"
      "  add ID min_1 .. min_d max_1 .. max_d    store a box under ID (0 to 2^64-1)\n"
      "  move ID min_1 .. min_d max_1 .. max_d   replace the box of ID\n"
      "  remove ID                               forget ID\n"
      "  pairs                                   print the overlapping pairs 'a b' by ID\n"
      "                                          (a < b, sorted), then a line '--'\n"
      "A bad line: message on standard error, status 2; output printed before it stays.");
  return sub;
}

int replay_command(const replay_options& o) {
  line_reader in(o.file);
  std::string_view first;
  const bool have_first = in.next(first);
  const int dim = choose_dimension(o.dim, have_first ? std::optional<std::string_view>(first) : std::nullopt);
  if (have_first) in.unread();
  return dim == 2 ? run_replay<2>(in, o.method) : run_replay<3>(in, o.method);
}

}  // namespace hhg::cli
