// Hostile input for the `hhg` tool (HHG_CLI_PATH): a huge file, very long and
// endless lines, NUL bytes, binary garbage, CRLF line ends and a byte order
// mark, a last line without '\n', numbers out of the range of double,
// hexadecimal, NaN and infinity spellings, wrong field counts, empty input and
// input of comments only. Each case runs on `hhg pairs`, `hhg replay`,
// `hhg neighbors` and on both files of `hhg query` (the boxes and the queries).
//
// The contract (README, "Input format"): bad input gives one message naming
// the line on standard error ("hhg: line N: ..."; for query "hhg: FILE: line N:
// ..."), exit status 2 and nothing on standard output (replay keeps what it
// printed before a bad line; no log here asks for pairs before its bad line).
// Every run has a time limit (coreutils `timeout`), so a hang or a quadratic
// parse fails the test instead of stalling the suite. Expected answers are
// computed here, independently of the tool.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "cli_support.hpp"
#include "hhg/scenes.hpp"

namespace {

namespace fs = std::filesystem;

/// Seconds one run of the tool may take (the slowest here, 200 000 lines under
/// the sanitizers, takes a few seconds).
constexpr int kTimeLimit = 120;

using result = hhg_cli_test::cli_result;
using hhg_cli_test::contains;
using hhg_cli_test::quote;
using hhg_cli_test::slurp;

/// Shortest text that reads back exactly.
std::string num(double v) {
  char buf[32];
  return {buf, std::to_chars(buf, buf + sizeof buf, v).ptr};
}

// --- the tools ----------------------------------------------------------------

enum class kind { pairs, replay, neighbors, query_boxes, query_points };

struct tool {
  kind k;
  const char* name;
  std::size_t numbers;  // numbers on a data line
  bool points;          // data lines are points, not boxes
};

// query_boxes: the data file is --boxes (queries: fixed points);
// query_points: the data file is --point (boxes: the fixed sample boxes).
const tool kTools[] = {{kind::pairs, "pairs", 6, false},
                       {kind::replay, "replay", 6, false},
                       {kind::neighbors, "neighbors --radius 1", 3, true},
                       {kind::query_boxes, "query --boxes FILE", 6, false},
                       {kind::query_points, "query --point FILE", 3, true}};

/// A data line: the numbers, after "add ID " in a replay log.
std::string data_line(const tool& t, std::size_t id, const std::string& numbers) {
  if (t.k != kind::replay) return numbers;
  std::string s = "add ";
  s += std::to_string(id);
  s += ' ';
  s += numbers;
  return s;
}

/// The last line of an input: a replay log asks for its pairs.
std::string finish(const tool& t) { return t.k == kind::replay ? "pairs\n" : ""; }

const std::vector<std::string> kSampleBoxes = {"0 0 0 1 1 1", "0.5 0.5 0.5 1.5 1.5 1.5", "3 3 3 4 4 4"};
const std::vector<std::string> kSamplePoints = {"0 0 0", "0.5 0 0", "3 0 0"};
// The queries of query_boxes.
const std::string kQueryPoints = "0.75 0.75 0.75\n10 10 10\n";

/// Three data lines, the middle one replaced by `middle` when given.
std::vector<std::string> sample_numbers(const tool& t, const std::string* middle = nullptr) {
  std::vector<std::string> v = t.points ? kSamplePoints : kSampleBoxes;
  if (middle != nullptr) v[1] = *middle;
  return v;
}

/// The sample input: its lines, each ended by `eol`, then finish().
std::string sample(const tool& t, const std::string& eol = "\n") {
  std::string s;
  const auto v = sample_numbers(t);
  for (std::size_t i = 0; i < v.size(); ++i) s += data_line(t, i, v[i]) + eol;
  return s + finish(t);
}

/// The sample with its second line replaced by `numbers` (after "add 1 " in
/// a log): a bad value there must be reported on line 2.
std::string sample_line2(const tool& t, const std::string& numbers) {
  std::string s = data_line(t, 0, sample_numbers(t)[0]) + "\n";
  s += data_line(t, 1, numbers) + "\n";
  s += data_line(t, 2, sample_numbers(t)[2]) + "\n";
  return s + finish(t);
}

/// The tool's answer for the sample: boxes 0 and 1 overlap; points 0 and 1 are
/// 0.5 apart (radius 1); the query point (0.75, ...) is in boxes 0 and 1,
/// (10, 10, 10) in none; the points (0, 0, 0) and (0.5, 0, 0) are in box 0.
std::string sample_answer(const tool& t) {
  switch (t.k) {
    case kind::pairs: return "0 1\n";
    case kind::replay: return "0 1\n--\n";
    case kind::neighbors: return "1\n0\n\n";
    case kind::query_boxes: return "0 1\n\n";
    case kind::query_points: return "0\n0\n\n";
  }
  return "";
}

/// What each tool prints for input without data lines.
std::string empty_answer(const tool& t) { return t.k == kind::query_boxes ? "\n\n" : ""; }

class cli_hostile : public hhg_cli_test::cli_fixture {
 protected:
  cli_hostile() : cli_fixture("hhg_cli_hostile_") {}
  void SetUp() override {
    cli_fixture::SetUp();
    std::string boxes;
    for (const auto& b : kSampleBoxes) boxes += b + "\n";
    boxes_ = write("sample_boxes.txt", boxes);
    points_ = write("query_points.txt", kQueryPoints);
  }
  /// Runs `hhg ARGS` with standard input empty, within the time limit.
  result run_raw(const std::string& args) {
    return run_tool(args, "/dev/null", "timeout " + std::to_string(kTimeLimit) + " ");
  }

  /// Runs tool `t` with `data` as its data file.
  result run(const tool& t, const fs::path& data) {
    const std::string d = quote(data);
    switch (t.k) {
      case kind::pairs: return run_raw("pairs " + d);
      case kind::replay: return run_raw("replay " + d);
      case kind::neighbors: return run_raw("neighbors --radius 1 " + d);
      case kind::query_boxes: return run_raw("query --boxes " + d + " --point " + quote(points_));
      case kind::query_points: return run_raw("query --boxes " + quote(boxes_) + " --point " + d);
    }
    return {};
  }

  result run_text(const tool& t, const std::string& content) { return run(t, write("data.txt", content)); }

  fs::path boxes_, points_;
};

/// One-line description of a case for failure messages: the tool and the
/// start of the input, non-printable bytes as \xNN.
std::string context(const tool& t, const std::string& input) {
  std::string s = t.name;
  s += ", input '";
  static constexpr char hex[] = "0123456789abcdef";
  for (std::size_t i = 0; i < input.size() && i < 80; ++i) {
    const auto u = static_cast<unsigned char>(input[i]);
    if (u >= 0x20 && u < 0x7f) {
      s += input[i];
    } else {
      s += "\\x";
      s += hex[u >> 4];
      s += hex[u & 15];
    }
  }
  if (input.size() > 80) s += "...";
  return s + "'";
}

/// Bad input: exit status 2, nothing on standard output, one line on standard
/// error starting "hhg: ", naming line `line` and containing `what`.
void expect_rejected(const result& r, std::size_t line, const std::string& what, const std::string& where) {
  EXPECT_EQ(r.status, 2) << where << "\n" << r.err;
  EXPECT_EQ(r.out, "") << where;
  EXPECT_EQ(r.err.rfind("hhg: ", 0), 0u) << where << "\n" << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << where << "\n" << r.err;
  std::string named = "line ";
  named += std::to_string(line);
  named += ": ";
  EXPECT_TRUE(contains(r.err, named)) << where << ": expected '" << named << "' in\n" << r.err;
  EXPECT_TRUE(contains(r.err, what)) << where << ": expected '" << what << "' in\n" << r.err;
}

/// Good input: exit status 0, the expected output, nothing on standard error.
void expect_accepted(const result& r, const std::string& out, const std::string& where) {
  EXPECT_EQ(r.status, 0) << where << "\n" << r.err;
  EXPECT_EQ(r.out, out) << where;
  EXPECT_EQ(r.err, "") << where;
}

// --- the sample itself --------------------------------------------------------

TEST_F(cli_hostile, SampleIsAccepted) {
  for (const tool& t : kTools) {
    const std::string in = sample(t);
    expect_accepted(run_text(t, in), sample_answer(t), context(t, in));
  }
}

// --- a huge input ---------------------------------------------------------------

/// Coordinates are multiples of 1/1024 (exact in decimal and in double, and so
/// are their differences and squares): boxes of edge 0.25 to 1 in a domain of
/// 1000 x 20 x 10, about one pair per box.
struct huge_scene {
  static constexpr std::size_t n = 200000;
  std::vector<std::array<double, 6>> boxes;  // min x, y, z, max x, y, z

  explicit huge_scene(std::uint64_t seed) {
    hhg::scenes::rng g(seed);
    boxes.resize(n);
    for (auto& b : boxes) {
      const double extent[3] = {1000, 20, 10};
      for (int i = 0; i < 3; ++i) {
        const auto cells = static_cast<std::uint64_t>(extent[i] * 1024);
        b[static_cast<std::size_t>(i)] = static_cast<double>(g.below(cells)) / 1024;
        b[static_cast<std::size_t>(i) + 3] =
            b[static_cast<std::size_t>(i)] + static_cast<double>(256 + g.below(769)) / 1024;
      }
    }
  }

  /// Indices ordered by min x, for the sweeps below.
  std::vector<std::uint32_t> by_min_x() const {
    std::vector<std::uint32_t> order(n);
    for (std::size_t i = 0; i < n; ++i) order[i] = static_cast<std::uint32_t>(i);
    std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
      return boxes[a][0] < boxes[b][0] || (boxes[a][0] == boxes[b][0] && a < b);
    });
    return order;
  }

  /// Every overlapping pair (i < j), sorted: a sweep along x, closed overlap.
  std::vector<std::pair<std::uint32_t, std::uint32_t>> pairs() const {
    const auto order = by_min_x();
    std::vector<std::pair<std::uint32_t, std::uint32_t>> out;
    for (std::size_t a = 0; a < n; ++a) {
      const auto& p = boxes[order[a]];
      for (std::size_t b = a + 1; b < n && boxes[order[b]][0] <= p[3]; ++b) {
        const auto& q = boxes[order[b]];
        if (p[1] <= q[4] && q[1] <= p[4] && p[2] <= q[5] && q[2] <= p[5])
          out.push_back(std::minmax(order[a], order[b]));
      }
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  /// For the min corners as points: every other point at distance <= 1,
  /// ascending, per point (a sweep along x).
  std::vector<std::vector<std::uint32_t>> neighbors() const {
    const auto order = by_min_x();
    std::vector<std::vector<std::uint32_t>> out(n);
    for (std::size_t a = 0; a < n; ++a) {
      const auto& p = boxes[order[a]];
      for (std::size_t b = a + 1; b < n && boxes[order[b]][0] - p[0] <= 1; ++b) {
        const auto& q = boxes[order[b]];
        const double dx = q[0] - p[0], dy = q[1] - p[1], dz = q[2] - p[2];
        if (dx * dx + dy * dy + dz * dz <= 1) {
          out[order[a]].push_back(order[b]);
          out[order[b]].push_back(order[a]);
        }
      }
    }
    for (auto& v : out) std::sort(v.begin(), v.end());
    return out;
  }

  std::string box_text(std::size_t i) const {
    std::string s;
    for (int k = 0; k < 6; ++k) {
      if (k) s += ' ';
      s += num(boxes[i][static_cast<std::size_t>(k)]);
    }
    return s;
  }
  std::string point_text(std::size_t i) const {
    return num(boxes[i][0]) + " " + num(boxes[i][1]) + " " + num(boxes[i][2]);
  }
};

std::string pair_lines(const std::vector<std::pair<std::uint32_t, std::uint32_t>>& pairs) {
  std::string s;
  for (const auto& [a, b] : pairs) {
    s += std::to_string(a);
    s += ' ';
    s += std::to_string(b);
    s += '\n';
  }
  return s;
}

std::string index_lines(const std::vector<std::vector<std::uint32_t>>& lists) {
  std::string s;
  for (const auto& v : lists) {
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (i) s += ' ';
      s += std::to_string(v[i]);
    }
    s += '\n';
  }
  return s;
}

TEST_F(cli_hostile, HugeInput200000Lines) {
  const huge_scene scene(2024);
  const auto pairs = scene.pairs();
  ASSERT_GT(pairs.size(), huge_scene::n / 4) << "the scene has plenty of pairs";
  std::string boxes, log, points;
  for (std::size_t i = 0; i < huge_scene::n; ++i) {
    boxes += scene.box_text(i) + "\n";
    log += "add " + std::to_string(i) + " " + scene.box_text(i) + "\n";
    points += scene.point_text(i) + "\n";
  }
  log += "pairs\n";
  const fs::path boxes_file = write("huge_boxes.txt", boxes);
  const std::string expected_pairs = pair_lines(pairs);

  expect_accepted(run(kTools[0], boxes_file), expected_pairs, "pairs, 200000 boxes");
  expect_accepted(run(kTools[1], write("huge_log.txt", log)), expected_pairs + "--\n", "replay, 200000 adds");
  expect_accepted(run(kTools[2], write("huge_points.txt", points)), index_lines(scene.neighbors()),
                  "neighbors, 200000 points");

  // query: 200000 boxes and 100 query points, each checked against every box
  hhg::scenes::rng g(7);
  std::string queries;
  std::vector<std::vector<std::uint32_t>> hits;
  for (int k = 0; k < 100; ++k) {
    const double p[3] = {static_cast<double>(g.below(1000 * 1024)) / 1024,
                         static_cast<double>(g.below(20 * 1024)) / 1024,
                         static_cast<double>(g.below(10 * 1024)) / 1024};
    queries += num(p[0]) + " " + num(p[1]) + " " + num(p[2]) + "\n";
    hits.emplace_back();
    for (std::size_t i = 0; i < huge_scene::n; ++i) {
      const auto& b = scene.boxes[i];
      if (b[0] <= p[0] && p[0] <= b[3] && b[1] <= p[1] && p[1] <= b[4] && b[2] <= p[2] && p[2] <= b[5])
        hits.back().push_back(static_cast<std::uint32_t>(i));
    }
  }
  expect_accepted(run_raw("query --boxes " + quote(boxes_file) + " --point " + quote(write("q.txt", queries))),
                  index_lines(hits), "query, 200000 boxes");

  // query: 200000 query points (the min corners) against the three sample boxes
  std::vector<std::vector<std::uint32_t>> in_sample(huge_scene::n);
  const double sample_boxes[3][6] = {{0, 0, 0, 1, 1, 1}, {0.5, 0.5, 0.5, 1.5, 1.5, 1.5}, {3, 3, 3, 4, 4, 4}};
  std::size_t inside = 0;
  for (std::size_t i = 0; i < huge_scene::n; ++i) {
    const auto& p = scene.boxes[i];
    for (std::uint32_t k = 0; k < 3; ++k) {
      const double* b = sample_boxes[k];
      if (b[0] <= p[0] && p[0] <= b[3] && b[1] <= p[1] && p[1] <= b[4] && b[2] <= p[2] && p[2] <= b[5]) {
        in_sample[i].push_back(k);
        ++inside;
      }
    }
  }
  expect_accepted(run(kTools[4], write("huge_queries.txt", points)), index_lines(in_sample),
                  "query, 200000 query points");
  RecordProperty("pairs", static_cast<int>(pairs.size()));
  RecordProperty("query_points_inside", static_cast<int>(inside));
}

// --- very long and endless lines ---------------------------------------------------

constexpr std::size_t kLong = std::size_t{5} << 20;  // 5 MiB

TEST_F(cli_hostile, VeryLongLines) {
  for (const tool& t : kTools) {
    const auto v = sample_numbers(t);
    auto with_extra_line = [&](const std::string& extra) {  // `extra` as line 2, before the sample's data
      return data_line(t, 0, v[0]) + "\n" + extra + "\n" + data_line(t, 1, v[1]) + "\n" + data_line(t, 2, v[2]) + "\n" +
             finish(t);
    };
    // accepted: a blank line and a comment of 5 MiB, separators of 5 MiB
    // around the fields, and a 5 MiB spelling of zero in place of the first 0
    std::string in = with_extra_line(std::string(kLong, ' '));
    expect_accepted(run_text(t, in), sample_answer(t), context(t, in) + " (5 MiB of spaces)");
    in = with_extra_line(std::string(kLong / 2, ' ') + std::string(kLong / 2, '\t'));
    expect_accepted(run_text(t, in), sample_answer(t), context(t, in) + " (5 MiB of blanks)");
    in = with_extra_line("# " + std::string(kLong, 'x'));
    expect_accepted(run_text(t, in), sample_answer(t), context(t, in) + " (5 MiB comment)");
    std::string padded = v[0];
    padded.replace(padded.find(' '), 1, std::string(kLong, ','));
    in = data_line(t, 0, padded + std::string(kLong, ' ')) + "\n" + data_line(t, 1, v[1]) + "\n" +
         data_line(t, 2, v[2]) + "\n" + finish(t);
    expect_accepted(run_text(t, in), sample_answer(t), context(t, in) + " (5 MiB of separators)");
    in = data_line(t, 0, "0." + std::string(kLong, '0') + v[0].substr(1)) + "\n" + data_line(t, 1, v[1]) + "\n" +
         data_line(t, 2, v[2]) + "\n" + finish(t);
    expect_accepted(run_text(t, in), sample_answer(t), context(t, in) + " (zero of 5 MiB)");

    // rejected on line 2: a number of 5 MiB digits (out of range either way),
    // 2.5 million fields, a number of 5 MiB that is not one
    const std::string rest = v[1].substr(v[1].find(' '));
    in = sample_line2(t, "1" + std::string(kLong, '0') + rest);
    expect_rejected(run_text(t, in), 2, "number out of range: '1000", context(t, in));
    in = sample_line2(t, "0." + std::string(kLong, '0') + "1e-320" + rest);
    expect_rejected(run_text(t, in), 2, "number out of range", context(t, in));
    std::string many;
    for (std::size_t k = 0; k < kLong / 2; ++k) many += "1 ";
    in = sample_line2(t, many);
    expect_rejected(run_text(t, in), 2, "found", context(t, in) + " (2.5 million fields)");
    in = sample_line2(t, std::string(kLong, '7') + "x" + rest);
    expect_rejected(run_text(t, in), 2, "not a number: '7777", context(t, in));
  }
  // replay: an ID of 5 MiB digits
  const std::string in = "add 0 0 0 0 1 1 1\nadd " + std::string(kLong, '9') + " 0 0 0 1 1 1\npairs\n";
  expect_rejected(run_text(kTools[1], in), 2, "ID out of range", context(kTools[1], in));
}

// A line that never ends (/dev/zero: NUL bytes without '\n') is refused once
// it is 64 MiB long, instead of filling the memory.
TEST_F(cli_hostile, EndlessLine) {
  for (const tool& t : kTools) {
    expect_rejected(run(t, "/dev/zero"), 1, "line too long", std::string(t.name) + ", /dev/zero");
  }
  const tool& pairs = kTools[0];
  // just below the limit (64 MiB - 1 bytes) a line is read: a blank one here
  std::string in = data_line(pairs, 0, kSampleBoxes[0]) + "\n" + std::string((std::size_t{64} << 20) - 1, ' ') + "\n" +
                   kSampleBoxes[1] + "\n";
  expect_accepted(run_text(pairs, in), "0 1\n", "pairs, a blank line of 64 MiB - 1 bytes");
  in = data_line(pairs, 0, kSampleBoxes[0]) + "\n" + std::string(std::size_t{64} << 20, ' ') + "\n" + kSampleBoxes[1] +
       "\n";
  expect_rejected(run_text(pairs, in), 2, "line too long", "pairs, a blank line of 64 MiB");
}

// --- NUL bytes and binary garbage ------------------------------------------------

TEST_F(cli_hostile, NulBytes) {
  const std::string nul(1, '\0');
  for (const tool& t : kTools) {
    const auto v = sample_numbers(t);
    const std::string rest = v[1].substr(v[1].find(' '));
    for (const std::string& bad :
         std::vector<std::string>{"0.5" + nul + rest, nul + rest, v[1] + nul, "0" + nul + "5" + rest}) {
      const std::string in = sample_line2(t, bad);
      expect_rejected(run_text(t, in), 2, "\\x00", context(t, in));
    }
    // a NUL alone is one field
    std::string in = sample_line2(t, nul);
    expect_rejected(run_text(t, in), 2, "found 1", context(t, in));
    // a NUL as the first byte of the input
    in = nul + sample(t);
    expect_rejected(run_text(t, in), 1, "\\x00", context(t, in));
    // a comment is free text, NUL included
    in = "# a NUL: " + nul + "\n" + sample(t);
    expect_accepted(run_text(t, in), sample_answer(t), context(t, in));
  }
  const std::string in = "add 0 0 0 0 1 1 1\nad" + nul + "d 1 0 0 0 1 1 1\npairs\n";
  expect_rejected(run_text(kTools[1], in), 2, "unknown command 'ad\\x00d'", context(kTools[1], in));
}

/// The 1-based number of the first line that is neither blank nor a comment
/// (README: after dropping one '\r' before the '\n', only spaces and tabs, or
/// '#' after optional spaces and tabs); 0 when there is none.
std::size_t first_data_line(const std::string& text) {
  std::size_t line = 0, start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string s = text.substr(start, end - start);
    ++line;
    if (!s.empty() && s.back() == '\r') s.pop_back();
    const std::size_t first = s.find_first_not_of(" \t");
    if (first != std::string::npos && s[first] != '#') return line;
    start = end + 1;
  }
  return 0;
}

TEST_F(cli_hostile, BinaryGarbage) {
  // Random bytes, half of them from the characters the parser cares about
  // (digits, signs, separators, line ends, '#'), so that garbage has blank and
  // comment lines and number-like fields; the first line is never a valid one.
  static constexpr char interesting[] = "0123456789.eE+-, \t\r\n#";
  for (std::uint64_t seed = 1; seed <= 12; ++seed) {
    hhg::scenes::rng g(seed);
    std::string garbage;
    const std::size_t size = 64 + g.below(8192);
    for (std::size_t i = 0; i < size; ++i) {
      garbage += g.below(2) ? static_cast<char>(g.below(256)) : interesting[g.below(sizeof interesting - 1)];
    }
    garbage += "\n\xff\n";  // at least one bad line
    const std::size_t line = first_data_line(garbage);
    ASSERT_GT(line, 0u);
    for (const tool& t : kTools) {
      // alone, and after a valid first line (where a '# dim' header cannot appear)
      expect_rejected(run_text(t, garbage), line, "", context(t, garbage) + ", seed " + std::to_string(seed));
      const std::string in = data_line(t, 0, sample_numbers(t)[0]) + "\n" + garbage;
      expect_rejected(run_text(t, in), line + 1, "", context(t, in) + ", seed " + std::to_string(seed));
    }
  }
  // every byte value once, in a line of its own after the sample's first line
  for (const tool& t : kTools) {
    std::string all;
    for (int c = 0; c < 256; ++c)
      if (c != '\n') all += static_cast<char>(c);
    const std::string in = data_line(t, 0, sample_numbers(t)[0]) + "\n" + all + "\n";
    expect_rejected(run_text(t, in), 2, "", context(t, in));
  }
}

// --- line ends ----------------------------------------------------------------------

TEST_F(cli_hostile, CrlfLineEndsAndByteOrderMark) {
  for (const tool& t : kTools) {
    // CRLF everywhere, with a header, a comment and a blank line in CRLF too
    std::string in = "# dim 3\r\n# a comment\r\n\r\n" + sample(t, "\r\n");
    if (t.k == kind::replay) in.replace(in.size() - 1, 1, "\r\n");  // "pairs\r\n"
    expect_accepted(run_text(t, in), sample_answer(t), context(t, in));
    // CRLF and LF mixed, and a last line ending in '\r' without '\n'
    const auto v = sample_numbers(t);
    in = data_line(t, 0, v[0]) + "\r\n" + data_line(t, 1, v[1]) + "\n" + data_line(t, 2, v[2]);
    in += t.k == kind::replay ? "\r\npairs\r" : "\r";
    expect_accepted(run_text(t, in), sample_answer(t), context(t, in));
    // a UTF-8 byte order mark before the first line
    in = "\xEF\xBB\xBF" + sample(t);
    expect_accepted(run_text(t, in), sample_answer(t), context(t, in));
    // a carriage return that does not end a line is a bad byte
    const std::string rest = v[1].substr(v[1].find(' '));
    in = sample_line2(t, "0\r5" + rest);
    expect_rejected(run_text(t, in), 2, "\\x0d", context(t, in));
    // two carriage returns before '\n': only one is dropped
    in = sample_line2(t, v[1] + "\r\r");
    expect_rejected(run_text(t, in), 2, "\\x0d", context(t, in));
    // old Mac line ends (CR only): one long line
    in = sample(t, "\r");
    expect_rejected(run_text(t, in), 1, "", context(t, in));
  }
}

TEST_F(cli_hostile, LastLineWithoutNewline) {
  for (const tool& t : kTools) {
    std::string in = sample(t);
    in.pop_back();
    expect_accepted(run_text(t, in), sample_answer(t), context(t, in));
    // a bad last line without '\n' is reported with its number
    const auto v = sample_numbers(t);
    in = data_line(t, 0, v[0]) + "\n" + data_line(t, 1, v[1]) + "\n" + data_line(t, 2, v[2] + " 1");
    expect_rejected(run_text(t, in), 3, "found", context(t, in));
    // a last line of blanks or a comment without '\n'
    for (const std::string& tail : std::vector<std::string>{"   ", "\t", "# the end"}) {
      in = sample(t) + tail;
      expect_accepted(run_text(t, in), sample_answer(t), context(t, in));
    }
  }
}

// --- numbers --------------------------------------------------------------------

TEST_F(cli_hostile, NumbersOutOfRangeAreErrors) {
  for (const tool& t : kTools) {
    const auto v = sample_numbers(t);
    const std::string rest = v[1].substr(v[1].find(' '));
    for (const std::string& bad :
         std::vector<std::string>{"1e400", "-1e400", "1e-400", "-1e-400", "2e-324", "1.8e308", "1e99999999999999999999",
                                  "1" + std::string(400, '0'), "0." + std::string(400, '0') + "1"}) {
      const std::string in = sample_line2(t, bad + rest);
      expect_rejected(run_text(t, in), 2, "number out of range: '" + bad.substr(0, 20), context(t, in));
    }
    // the extremes of double are read: the largest finite value and the
    // smallest subnormal, in places that change no answer
    const std::string big = t.points ? "1.7976931348623157e308 0 0" : "3 3 3 1.7976931348623157e308 4 4";
    const std::string tiny = t.points ? "3 5e-324 0" : "3 5e-324 3 4 4 4";
    for (const std::string& line3 : std::vector<std::string>{big, tiny}) {
      const std::string in =
          data_line(t, 0, v[0]) + "\n" + data_line(t, 1, v[1]) + "\n" + data_line(t, 2, line3) + "\n" + finish(t);
      expect_accepted(run_text(t, in), sample_answer(t), context(t, in));
    }
  }
}

TEST_F(cli_hostile, HexNanAndInfinitySpellings) {
  for (const tool& t : kTools) {
    const auto v = sample_numbers(t);
    const std::string rest = v[1].substr(v[1].find(' '));
    for (const std::string& bad : std::vector<std::string>{
             "0x1p3", "0X10", "0x.8p1", "-0x1", "0x1P-2", "1p3", "infinit", "infinityy", "in",          "i", "nfinity",
             "1e",    "1e+",  "--1",    "+-1",  "1.2.3",  ".",   "e5",      "\xd9\xa1",  "\xef\xbc\x91"}) {
      const std::string in = sample_line2(t, bad + rest);
      expect_rejected(run_text(t, in), 2, "not a number", context(t, in));
    }
    for (const std::string& bad :
         std::vector<std::string>{"nan", "NaN", "-nan", "+NAN", "nan(1)", "nan(snan)", "-NaN(0x7ff)"}) {
      const std::string in = sample_line2(t, bad + rest);
      expect_rejected(run_text(t, in), 2, "NaN is not allowed", context(t, in));
    }
  }
  // infinity in any case, with or without a sign: the box of everything
  const std::string all = "-inf -INF -Infinity +inf infinity INF";
  for (const tool& t : kTools) {
    if (t.points) continue;
    const auto v = sample_numbers(t);
    const std::string in =
        data_line(t, 0, v[0]) + "\n" + data_line(t, 1, v[1]) + "\n" + data_line(t, 2, all) + "\n" + finish(t);
    const std::string answer = t.k == kind::pairs    ? "0 1\n0 2\n1 2\n"
                               : t.k == kind::replay ? "0 1\n0 2\n1 2\n--\n"
                                                     : "0 1 2\n2\n";
    expect_accepted(run_text(t, in), answer, context(t, in));
  }
  // neighbors: points must be finite
  const std::string in = sample_line2(kTools[2], "-Infinity 0 0");
  expect_rejected(run_text(kTools[2], in), 2, "finite", context(kTools[2], in));
}

// --- field counts, empty input, comments ------------------------------------------------

TEST_F(cli_hostile, WrongFieldCounts) {
  for (const tool& t : kTools) {
    const auto v = sample_numbers(t);
    const std::string fewer = v[1].substr(0, v[1].rfind(' '));
    const std::string more = v[1] + " 1";
    const std::size_t n = t.numbers;
    for (const auto& [line2, found] :
         {std::pair{fewer, n - 1}, std::pair{more, n + 1}, std::pair{v[1] + " 1 2 3", n + 3},
          std::pair{std::string("1"), std::size_t{1}}}) {
      const std::string in = sample_line2(t, line2);
      expect_rejected(run_text(t, in), 2, "found " + std::to_string(found), context(t, in));
    }
    // a line of separators only has no fields
    const std::string none = t.k == kind::replay ? "found no fields" : "found 0";
    for (const std::string& line2 : std::vector<std::string>{",", ",,,", " , \t,", ",\r"}) {
      std::string in = data_line(t, 0, v[0]) + "\n" + line2 + "\n" + data_line(t, 1, v[1]) + "\n" + finish(t);
      expect_rejected(run_text(t, in), 2, none, context(t, in));
      in = line2 + "\n" + sample(t);  // as the first line (replay crashed on it)
      expect_rejected(run_text(t, in), 1, none, context(t, in));
    }
  }
  // replay: the operations' own counts
  for (const std::string& line2 : std::vector<std::string>{"add", "add 1", "add 1 0 0 0 1 1", "move 0", "remove",
                                                           "remove 0 1", "pairs 1", "move 0 1 1 1 2 2 2 3"}) {
    const std::string in = "add 0 0 0 0 1 1 1\n" + line2 + "\npairs\n";
    expect_rejected(run_text(kTools[1], in), 2, "found", context(kTools[1], in));
  }
}

TEST_F(cli_hostile, EmptyInputAndOnlyComments) {
  for (const tool& t : kTools) {
    for (const std::string& in :
         std::vector<std::string>{"", "\n", "\n\n\n", "\r\n", " \t \n", "# only a comment\n", "# dim 3\n",
                                  "# one\n  # two\n\t#three\n\n# four", "\xEF\xBB\xBF", "\xEF\xBB\xBF# bom\n"}) {
      expect_accepted(run_text(t, in), empty_answer(t), context(t, in));
    }
  }
  // with the dimension set by a header of comments only, the other tools agree
  for (const tool& t : kTools) {
    if (t.k == kind::query_boxes) continue;  // its query points have 3 numbers
    const std::string in = "# dim 2\n# nothing else\n";
    expect_accepted(run_text(t, in), "", context(t, in));
  }
}

}  // namespace
