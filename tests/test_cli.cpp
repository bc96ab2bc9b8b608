// End-to-end tests of the `hhg` command-line tool (HHG_CLI_PATH): every test runs
// the built executable through the shell with its input in a temporary file and
// checks standard output, standard error and the exit status exactly.
//
// Expected answers are computed here, independently of the tool: with
// hhg::overlaps over all pairs for `pairs`, and with an ordered map of live boxes
// for `replay`. Random inputs use hhg::scenes::rng with fixed seeds.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cli_support.hpp"
#include "hhg/box.hpp"
#include "hhg/methods.hpp"
#include "hhg/scenes.hpp"

#include <nlohmann/json.hpp>

namespace {

namespace fs = std::filesystem;
using hhg_cli_test::cli_result;
using hhg_cli_test::contains;
using hhg_cli_test::quote;
std::string read_file(const fs::path& p) { return hhg_cli_test::slurp(p); }

/// The value of a "label:   value" line of the `hhg run` summary ("" when absent).
std::string summary_value(const std::string& out, const std::string& label) {
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind(label + ":", 0) != 0) continue;
    const std::size_t start = line.find_first_not_of(' ', label.size() + 1);
    return start == std::string::npos ? "" : line.substr(start);
  }
  return "";
}

/// Text of a coordinate that reads back exactly (the test data are multiples of 1/4).
std::string num(double v) {
  std::ostringstream s;
  s.precision(17);
  s << v;
  return s.str();
}

/// Every method of `hhg pairs --method` / `hhg replay --method`.
const std::vector<std::string> kAllMethods = [] {
  std::vector<std::string> v;
  for (const std::string_view n : hhg::all_methods::names()) v.emplace_back(n);
  return v;
}();

/// The fixture gives each test its own folder under the system's temporary directory.
class cli : public hhg_cli_test::cli_fixture {
 protected:
  cli() : cli_fixture("hhg_cli_test_") {}
  /// Runs `hhg ARGS < input`.
  cli_result run(const std::string& args, const std::string& input = "") {
    return run_tool(args, write("stdin.txt", input));
  }
};

// --- hhg pairs -----------------------------------------------------------------

TEST_F(cli, PairsKnownAnswer3D) {
  // Data line i is box i; physical lines differ because of comments and blank lines.
  const std::string input =
      "# six boxes, some touching\n"
      "0 0 0 1 1 1\n"  // 0
      "\n"
      "1,0,0,2,1,1\n"  // 1: touches 0 on a face
      "   # an indented comment\n"
      "\t2\t1\t1\t3\t2\t2\t\n"                   // 2: touches 1 on an edge
      "  10 10 10 11 11 11  \r\n"                // 3: alone (CRLF line end)
      "0.5, 0.5 ,0.5,,0.6 0.6\t, 0.6\n"          // 4: inside 0
      "-inf -INF -Infinity +inf infinity 0.5\n"  // 5: half-space z <= 0.5: 0, 1, 4
      "3 2 2 4 3 3";                             // 6: touches 2 at a corner; last line without '\n'
  const cli_result r = run("pairs", input);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out, "0 1\n0 4\n0 5\n1 2\n1 5\n2 6\n4 5\n");
}

TEST_F(cli, PairsDimHeaderAndFlag) {
  const std::string input =
      "# dim 2\n"
      "0 0 1 1\n"
      "1 1 2 2\n"
      "5 5 6 6\n"
      "1.5,1.5,5,5\n";
  const std::string expected = "0 1\n1 3\n2 3\n";
  cli_result r = run("pairs", input);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, expected);
  r = run("pairs --dim 2", input);
  EXPECT_EQ(r.out, expected);
  // CRLF and blanks around the header are fine.
  r = run("pairs", "  #  dim\t2 \r\n0 0 1 1\r\n1 0 2 1\r\n");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "0 1\n");
  // --dim wins over the header.
  r = run("pairs --dim 3", "# dim 2\n0 0 0 1 1 1\n1 1 1 2 2 2\n");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "0 1\n");
  // Without header or flag the dimension is 3.
  r = run("pairs", "0 0 1 1\n");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "hhg: line 1: expected 6 numbers, found 4")) << r.err;
  // Only the first line is a header.
  r = run("pairs", "\n# dim 2\n0 0 1 1\n");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "line 3")) << r.err;
}

TEST_F(cli, PairsFileArgumentAndDash) {
  const fs::path file = write("boxes.txt", "0 0 0 1 1 1\n1 1 1 2 2 2\n3 3 3 4 4 4\n");
  cli_result r = run("pairs " + quote(file));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "0 1\n");
  r = run("pairs -", read_file(file));
  EXPECT_EQ(r.out, "0 1\n");
  r = run("pairs --method brute " + quote(file));
  EXPECT_EQ(r.out, "0 1\n");
  r = run("pairs " + quote(dir_ / "missing.txt"));
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(contains(r.err, "cannot open")) << r.err;
}

TEST_F(cli, PairsEmptyInput) {
  for (const std::string input : {"", "\n\n", "# dim 2\n", "# nothing\n   \n\t\n", "\r\n"}) {
    const cli_result r = run("pairs", input);
    EXPECT_EQ(r.status, 0) << "input: " << input << "\n" << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, "");
  }
}

template <int D>
std::string random_boxes(std::uint64_t seed, int count, std::vector<hhg::box<D, double>>& boxes) {
  hhg::scenes::rng rng(seed);
  static const char* const separators[] = {" ", "\t", ",", ", ", " ,\t", "  "};
  std::string text = "# random boxes, seed " + std::to_string(seed) + "\n";
  for (int k = 0; k < count; ++k) {
    hhg::box<D, double> b;
    for (int i = 0; i < D; ++i) {
      // Multiples of 1/4 on a small lattice: many exact touches, exact decimal text.
      b.min[i] = static_cast<double>(rng.below(64)) / 4 - 4;
      b.max[i] = b.min[i] + static_cast<double>(rng.below(9)) / 4;
    }
    if (rng.below(50) == 0) b.min[rng.below(D)] = -std::numeric_limits<double>::infinity();
    if (rng.below(50) == 0) b.max[rng.below(D)] = std::numeric_limits<double>::infinity();
    boxes.push_back(b);
    if (rng.below(10) == 0) text += "\n";
    if (rng.below(10) == 0) text += "# comment " + std::to_string(k) + "\n";
    for (int i = 0; i < 2 * D; ++i) {
      if (i) text += separators[rng.below(std::size(separators))];
      text += num(i < D ? b.min[i] : b.max[i - D]);
    }
    text += "\n";
  }
  return text;
}

template <int D>
std::string expected_pairs(const std::vector<hhg::box<D, double>>& boxes) {
  std::string out;
  for (std::size_t i = 0; i < boxes.size(); ++i) {
    for (std::size_t j = i + 1; j < boxes.size(); ++j) {
      if (hhg::overlaps(boxes[i], boxes[j])) out += std::to_string(i) + " " + std::to_string(j) + "\n";
    }
  }
  return out;
}

TEST_F(cli, PairsBruteAndHhgAgreeOnRandomBoxes3D) {
  std::vector<hhg::box<3, double>> boxes;
  const std::string input = random_boxes<3>(20240611, 400, boxes);
  const std::string expected = expected_pairs(boxes);
  ASSERT_GT(expected.size(), 100u);  // the scene has plenty of pairs
  const cli_result hhg = run("pairs --method hhg", input);
  const cli_result brute = run("pairs --method brute", input);
  EXPECT_EQ(hhg.status, 0) << hhg.err;
  EXPECT_EQ(brute.status, 0) << brute.err;
  EXPECT_EQ(hhg.out, expected);
  EXPECT_EQ(brute.out, expected);
}

// Issue 3's acceptance: `hhg pairs --method M` gives the all-pairs answer for
// every method on every scene of the adversarial zoo, in 2D and 3D (the
// expected pairs are computed here with hhg::overlaps).
TEST_F(cli, PairsEveryMethodEveryZooScene) {
  for (int dim : {2, 3}) {
    for (const hhg::scenes::zoo z : hhg::scenes::all_zoo_scenes()) {
      std::string input = dim == 2 ? "# dim 2\n" : "";
      std::string expected;
      auto emit = [&](const auto& boxes) {
        for (const auto& b : boxes) {
          for (const double v : b.min) input += num(v) + " ";
          for (const double v : b.max) input += num(v) + " ";
          input += "\n";
        }
        expected = expected_pairs(boxes);
      };
      if (dim == 2)
        emit(hhg::scenes::make_zoo_scene<2, double>(z, 150, 5));
      else
        emit(hhg::scenes::make_zoo_scene<3, double>(z, 150, 5));
      for (const std::string& method : kAllMethods) {
        const cli_result r = run("pairs --method " + method, input);
        EXPECT_EQ(r.status, 0) << method << " " << dim << "D zoo " << static_cast<int>(z) << ": " << r.err;
        EXPECT_EQ(r.out, expected) << method << " " << dim << "D zoo " << static_cast<int>(z);
      }
    }
  }
}

TEST_F(cli, PairsBruteAndHhgAgreeOnRandomBoxes2D) {
  std::vector<hhg::box<2, double>> boxes;
  const std::string input = "# dim 2\n" + random_boxes<2>(77, 300, boxes);
  const std::string expected = expected_pairs(boxes);
  const cli_result hhg = run("pairs", input);
  const cli_result brute = run("pairs --method brute", input);
  EXPECT_EQ(hhg.status, 0) << hhg.err;
  EXPECT_EQ(hhg.out, expected);
  EXPECT_EQ(brute.out, expected);
}

TEST_F(cli, PairsBadLines) {
  struct bad_case {
    std::string line;
    std::string message;
  };
  const std::vector<bad_case> cases = {
      {"1 2 3 4 5", "expected 6 numbers, found 5"},
      {"0 0 0 1 1 1 1", "expected 6 numbers, found 7"},
      {"0 0 0 1 1 1 # trailing comment", "expected 6 numbers, found 9"},
      {",,,", "expected 6 numbers, found 0"},
      {"0 0 0 1 1 abc", "not a number: 'abc'"},
      {"0 0 0 1 1 1.5x", "not a number: '1.5x'"},
      {"0 0 0 1 1 0x10", "not a number: '0x10'"},
      {"0 0 0 1 1 ++1", "not a number: '++1'"},
      {"0 0 0 1 1 infin", "not a number: 'infin'"},
      {"0 0 0 1 1 \xe2\x88\x92"
       "1",
       "not a number: '\\xe2\\x88\\x921'"},  // U+2212 minus sign
      {std::string("0 0 0 1 1 1\0", 12), "not a number: '1\\x00'"},
      {"nan 0 0 1 1 1", "NaN is not allowed: 'nan'"},
      {"0 0 0 1 1 -NaN", "NaN is not allowed: '-NaN'"},
      {"0 2 0 1 1 1", "min > max on axis y (2 > 1)"},
      {"0 0 inf 1 1 1", "min > max on axis z (inf > 1)"},
      {"0 0 0 1 1 1e999", "number out of range: '1e999'"},
      {"-1e400 0 0 1 1 1", "number out of range: '-1e400'"},
      {"0 0 0 1 1 1e-400", "number out of range: '1e-400'"},
  };
  for (const bad_case& c : cases) {
    // Lines 1 and 4 overlap: still nothing may be printed. The bad line is line 5.
    const std::string input = "0 0 0 1 1 1\n# comment\n\n0.5 0.5 0.5 2 2 2\n" + c.line + "\n9 9 9 9 9 9\n";
    for (const char* method : {"hhg", "brute"}) {
      const cli_result r = run(std::string("pairs --method ") + method, input);
      EXPECT_EQ(r.status, 2) << c.line;
      EXPECT_EQ(r.out, "") << c.line;
      EXPECT_EQ(r.err, "hhg: line 5: " + c.message + "\n") << c.line;
    }
  }
  // 2D: the count follows the dimension; CRLF lines keep their numbers.
  cli_result r = run("pairs", "# dim 2\r\n0 0 1 1\r\n0 0 0 1 1 1\r\n");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "hhg: line 3: expected 4 numbers, found 6\n");
  r = run("pairs", "# dim 4\n0 0 1 1\n");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(contains(r.err, "hhg: line 1:")) << r.err;
}

// --- hhg replay ----------------------------------------------------------------

TEST_F(cli, ReplayKnownAnswer) {
  const std::string log =
      "# dim 2\n"
      "add 10 0 0 1 1\n"
      "add 18446744073709551615 1 1 2 2\n"  // touches 10 at a corner
      "add 3, 5, 5, 6, 6\n"
      "pairs\n"
      "move 3 0.5 0.5 0.75 0.75\n"
      "\n"
      "  # comment\n"
      "pairs\n"
      "remove 10\n"
      "pairs\n"
      "add 10 -inf -inf inf inf\n"  // the same ID again, now everything
      "pairs\r\n";
  const std::string expected =
      "10 18446744073709551615\n--\n"
      "3 10\n10 18446744073709551615\n--\n"
      "--\n"
      "3 10\n10 18446744073709551615\n--\n";
  for (const std::string& method : kAllMethods) {
    const cli_result r = run("replay --method " + method, log);
    EXPECT_EQ(r.status, 0) << method << ": " << r.err;
    EXPECT_EQ(r.err, "");
    EXPECT_EQ(r.out, expected) << method;
  }
  const cli_result r = run("replay", "");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, "");
}

template <int D>
void random_log(std::uint64_t seed, int operations, std::string& log, std::string& expected) {
  hhg::scenes::rng rng(seed);
  std::vector<std::uint64_t> ids = {0, std::numeric_limits<std::uint64_t>::max()};
  while (ids.size() < 120) ids.push_back(rng.next() >> rng.below(64));
  std::map<std::uint64_t, hhg::box<D, double>> live;
  auto random_box = [&rng] {
    hhg::box<D, double> b;
    for (int i = 0; i < D; ++i) {
      b.min[i] = static_cast<double>(rng.below(48)) / 4;
      b.max[i] = b.min[i] + static_cast<double>(rng.below(8)) / 4;
    }
    return b;
  };
  auto box_text = [](const hhg::box<D, double>& b) {
    std::string s;
    for (int i = 0; i < D; ++i) s.append(" ").append(num(b.min[i]));
    for (int i = 0; i < D; ++i) s.append(" ").append(num(b.max[i]));
    return s;
  };
  log = D == 2 ? "# dim 2\n" : "";
  expected.clear();
  for (int k = 0; k < operations; ++k) {
    const std::uint64_t id = ids[rng.below(ids.size())];
    const std::uint64_t choice = rng.below(10);
    const bool is_live = live.count(id) != 0;
    if (choice == 0) {
      log += "pairs\n";
      for (auto a = live.begin(); a != live.end(); ++a) {
        for (auto b = std::next(a); b != live.end(); ++b) {
          if (hhg::overlaps(a->second, b->second))
            expected += std::to_string(a->first) + " " + std::to_string(b->first) + "\n";
        }
      }
      expected += "--\n";
    } else if (!is_live) {
      const auto b = random_box();
      live[id] = b;
      log += "add " + std::to_string(id) + box_text(b) + "\n";
    } else if (choice <= 2) {
      live.erase(id);
      log += "remove " + std::to_string(id) + "\n";
    } else {
      const auto b = random_box();
      live[id] = b;
      log += "move " + std::to_string(id) + box_text(b) + "\n";
    }
  }
}

TEST_F(cli, ReplayRandomLogMatchesModel) {
  for (int dim : {2, 3}) {
    std::string log, expected;
    if (dim == 2)
      random_log<2>(99, 900, log, expected);
    else
      random_log<3>(100, 900, log, expected);
    ASSERT_GT(expected.size(), 500u);
    for (const std::string& method : kAllMethods) {
      const cli_result r = run("replay --method " + method, log);
      EXPECT_EQ(r.status, 0) << method << " " << dim << "D: " << r.err;
      EXPECT_EQ(r.out, expected) << method << " " << dim << "D";
    }
  }
}

TEST_F(cli, ReplayErrorsKeepEarlierOutput) {
  struct bad_case {
    std::string line;
    std::string message;
  };
  const std::vector<bad_case> cases = {
      {"move 99 0 0 0 1 1 1", "unknown ID 99"},
      {"remove 99", "unknown ID 99"},
      {"add 3 0 0 0 1 1 1", "ID 3 already added"},
      {"add 5 0 0 0 1 1", "expected 'add ID' followed by 6 numbers, found 5"},
      {"move 3", "expected 'move ID' followed by 6 numbers, found 0"},
      {"add", "expected 'add ID' followed by 6 numbers, found no ID"},
      {"remove", "expected 'remove ID', found 0 fields after 'remove'"},
      {"remove 3 4", "expected 'remove ID', found 2 fields after 'remove'"},
      {"pairs now", "'pairs' takes no arguments, found 1"},
      {"frobnicate 3", "unknown command 'frobnicate' (expected add, move, remove or pairs)"},
      {"ADD 5 0 0 0 1 1 1", "unknown command 'ADD' (expected add, move, remove or pairs)"},
      {"add x 0 0 0 1 1 1", "bad ID 'x' (expected an integer from 0 to 18446744073709551615)"},
      {"add -1 0 0 0 1 1 1", "bad ID '-1' (expected an integer from 0 to 18446744073709551615)"},
      {"add 18446744073709551616 0 0 0 1 1 1", "ID out of range (0 to 18446744073709551615): '18446744073709551616'"},
      {"add 5 0 0 0 1 1 nan", "NaN is not allowed: 'nan'"},
      {"move 3 0 0 0 -1 1 1", "min > max on axis x (0 > -1)"},
      {"add 5 0 0 0 1 1 1z", "not a number: '1z'"},
  };
  for (const bad_case& c : cases) {
    const std::string log = "add 3 0 0 0 1 1 1\nadd 4 1 1 1 2 2 2\npairs\n# comment\n" + c.line + "\npairs\n";
    for (const char* method : {"hhg", "brute"}) {
      const cli_result r = run(std::string("replay --method ") + method, log);
      EXPECT_EQ(r.status, 2) << c.line;
      EXPECT_EQ(r.out, "3 4\n--\n") << c.line;  // the pairs before the bad line, not after
      EXPECT_EQ(r.err, "hhg: line 5: " + c.message + "\n") << c.line;
    }
  }
  // After a remove the ID is unknown; it may be added again.
  cli_result r = run("replay", "add 1 0 0 0 1 1 1\nremove 1\npairs\nremove 1\n");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, "--\n");
  EXPECT_EQ(r.err, "hhg: line 4: unknown ID 1\n");
  r = run("replay --dim 2", "add 1 0 0 1 1\nremove 1\nadd 1 0 0 1 1\nadd 2 1 1 1 1\npairs\n");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "1 2\n--\n");
}

// --- hhg run -------------------------------------------------------------------

TEST_F(cli, RunCheckSmall) {
  const cli_result r = run("run --n 2000 --steps 5 --check");
  EXPECT_EQ(r.status, 0) << r.err;
  for (const char* key : {"scenario:", "objects:", "steps:", "setup:", "update:", "detection:", "step:",
                          "pairs per step:", "box tests:", "memory:", "peak RSS:", "grids:", "check:"})
    EXPECT_TRUE(contains(r.out, key)) << key << "\n" << r.out;
  EXPECT_EQ(summary_value(r.out, "objects"), "2000") << r.out;
  EXPECT_GT(std::stoull(summary_value(r.out, "box tests")), 0u) << r.out;  // 2000 cubes at ~2 pairs each
  EXPECT_EQ(summary_value(r.out, "steps").rfind('5', 0), 0u) << r.out;
  EXPECT_TRUE(contains(r.out, "cell size")) << r.out;
  EXPECT_TRUE(contains(r.err, "step 5/5")) << r.err;  // progress
}

TEST_F(cli, RunCheckEveryScenarioAndVariant) {
  for (const char* scenario : {"equal", "varied", "elongated", "coherent", "sparse", "uneven"}) {
    const cli_result r = run(std::string("run -q --n 300 --steps 4 --check --scenario ") + scenario);
    EXPECT_EQ(r.status, 0) << scenario << ": " << r.err;
    EXPECT_EQ(summary_value(r.out, "scenario"), scenario) << r.out;
    EXPECT_EQ(r.err, "");
  }
  for (const char* variant : {"--dim 2", "--float", "--dim 2 --float", "--strategy rebuild",
                              "--factor 3 --density 2 --threshold 0 --cells 4 --cell-capacity 16", "--seed 7",
                              "--growth every-axis --threshold 0 --cells 4"}) {
    const cli_result r = run(std::string("run -q --n 700 --steps 4 --check --scenario varied ") + variant);
    EXPECT_EQ(r.status, 0) << variant << ": " << r.err;
    EXPECT_TRUE(contains(r.out, "check:")) << r.out;
  }
}

TEST_F(cli, RunJson) {
  const fs::path json = dir_ / "summary.json";
  const cli_result r = run("run -q --n 500 --steps 4 --scenario coherent --json " + quote(json));
  EXPECT_EQ(r.status, 0) << r.err;
  const std::string text = read_file(json);
  const char* keys[] = {"scenario",
                        "n",
                        "steps",
                        "dim",
                        "scalar",
                        "strategy",
                        "growth",
                        "setup_ms",
                        "first_detect_ms",
                        "update_ms_median",
                        "detect_ms_median",
                        "step_ms_median",
                        "step_ns_per_object",
                        "step_ms_mean",
                        "step_ns_per_object_mean",
                        "pairs_median",
                        "box_tests",
                        "bytes",
                        "bytes_per_object",
                        "peak_rss_bytes"};
  const nlohmann::json j = nlohmann::json::parse(text);  // throws (test fails) when not JSON
  for (const char* key : keys) EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["scenario"], "coherent");
  EXPECT_EQ(j["n"], 500);
  EXPECT_EQ(j["steps"], 4);
  EXPECT_EQ(j["dim"], 3);
  EXPECT_EQ(j["scalar"], "double");
  EXPECT_EQ(j["strategy"], "incremental");
  EXPECT_EQ(j["growth"], "by-occupancy");
  for (const char* key :
       {"setup_ms", "first_detect_ms", "update_ms_median", "detect_ms_median", "step_ms_median", "step_ns_per_object",
        "step_ms_mean", "step_ns_per_object_mean", "pairs_median", "box_tests", "bytes", "bytes_per_object"}) {
    EXPECT_TRUE(j[key].is_number()) << key;
    EXPECT_GE(j[key].get<double>(), 0) << key;
  }
  EXPECT_GT(j["bytes"].get<double>(), 0);
  EXPECT_TRUE(j["peak_rss_bytes"].is_number() || j["peak_rss_bytes"].is_null());
}

TEST_F(cli, RunRefusesBadRequests) {
  cli_result r = run("run --n 20001 --check");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(contains(r.err, "--check")) << r.err;
  EXPECT_TRUE(contains(r.err, "20000")) << r.err;
  r = run("run --n 100 --steps 1 --cells 6");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "--cells")) << r.err;
  r = run("run --n 100 --steps 1 --factor 1");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "--factor")) << r.err;
  r = run("run --n 100 --steps 1 --json " + quote(dir_ / "no" / "such" / "dir.json"));
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "cannot write")) << r.err;
}

// --- usage -----------------------------------------------------------------------

TEST_F(cli, UsageHelpAndVersion) {
  cli_result r = run("");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(contains(r.err, "Usage")) << r.err;
  r = run("--help");
  EXPECT_EQ(r.status, 0);
  EXPECT_TRUE(contains(r.out, "pairs")) << r.out;
  EXPECT_TRUE(contains(r.out, "replay")) << r.out;
  EXPECT_TRUE(contains(r.out, "run")) << r.out;
  for (const char* sub : {"pairs", "replay", "run"}) {
    r = run(std::string(sub) + " --help");
    EXPECT_EQ(r.status, 0) << sub;
    EXPECT_TRUE(contains(r.out, std::string("hhg ") + sub)) << r.out;
  }
  r = run("--version");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out.rfind("hhg ", 0), 0u) << r.out;
}

TEST_F(cli, UsageBadFlagsExit2) {
  for (const char* args : {"--bogus",
                           "frobnicate",
                           "pairs --method kd-tree",
                           "pairs --dim 4",
                           "pairs --dim",
                           "pairs a b",
                           "replay --method nope",
                           "replay --dim 1",
                           "run --n abc",
                           "run --n 0",
                           "run --n -5",
                           "run --steps 0",
                           "run --scenario nope",
                           "run --strategy lazy",
                           "run --growth sideways",
                           "run --dim 5",
                           "run --seed x",
                           "run --density -1",
                           "run --n 99999999999999999999999",
                           "run --check=maybe",
                           "pairs --n 5"}) {
    const cli_result r = run(args);
    EXPECT_EQ(r.status, 2) << args;
    EXPECT_EQ(r.out, "") << args;
    EXPECT_NE(r.err, "") << args;
  }
}

// --- hhg bench ---------------------------------------------------------------------

TEST_F(cli, BenchQuickWritesResultsAndMethodsAgree) {
  const fs::path json = dir_ / "bench.json", csv = dir_ / "bench.csv";
  const cli_result r = run("bench --scenario equal,mixed --methods hhg,brute,sap,pivot --n 300,600 --steps 3 --json " +
                           quote(json) + " --csv " + quote(csv));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "x hhg")) << r.out;
  EXPECT_FALSE(contains(r.out, "DIFFER")) << r.out;
  const std::string c = read_file(csv);
  EXPECT_EQ(c.rfind("scenario,n,steps,seed,method,setup_ms,", 0), 0u) << c;
  // header + 2 scenarios x 2 sizes x 4 methods
  EXPECT_EQ(std::count(c.begin(), c.end(), '\n'), 17);
  // the contract: a list of runs (scenario, n), each with its results
  const auto j = nlohmann::json::parse(read_file(json));
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 4u);
  for (const auto& run : j) {
    EXPECT_TRUE(run["scenario"] == "equal" || run["scenario"] == "mixed");
    EXPECT_TRUE(run["n"] == 300 || run["n"] == 600);
    EXPECT_EQ(run["steps"], 3);
    EXPECT_TRUE(run["machine"].contains("cpu"));
    EXPECT_TRUE(run["machine"].contains("compiler"));
    ASSERT_EQ(run["results"].size(), 4u);
    for (const auto& row : run["results"]) {
      for (const char* key : {"method", "setup_ms", "step_ms_median", "update_ms_median", "detect_ms_median", "pairs",
                              "peak_bytes", "box_tests", "cells_visited"})
        EXPECT_TRUE(row.contains(key)) << key;
      EXPECT_EQ(row["pairs_per_step"].size(), 3u);
      EXPECT_EQ(row["note"], "");
      EXPECT_GT(row["pairs"].get<double>(), 0.0);
      EXPECT_GT(row["step_ms_median"].get<double>(), 0.0);
      EXPECT_GE(row["peak_bytes"].get<double>(), 0.0);
      if (row["method"] == "hhg") {
        EXPECT_GT(row["box_tests"].get<double>(), 0.0);
      }
    }
  }
  const cli_result bad = run("bench --scenario nope");
  EXPECT_EQ(bad.status, 2);
  EXPECT_EQ(bad.err.rfind("hhg: --scenario: nope not in {", 0), 0u) << bad.err;
  EXPECT_EQ(run("bench --methods hhg,nope").status, 2);
  EXPECT_EQ(run("bench --n 0").status, 2);
}

// --rounds: the methods run R times, forward then backward (the order on
// stderr proves it), one row per method (its median round), the same pairs in
// every round, and a method that did not run once (brute over --timeout is a
// skip, not a failure) is not run again.
TEST_F(cli, BenchRoundsAlternateTheMethods) {
  const fs::path json = dir_ / "rounds.json";
  const cli_result r =
      run("bench --scenario equal --methods hhg,grid,sap --n 500 --steps 2 --rounds 3 --json " + quote(json));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_FALSE(contains(r.out, "DIFFER")) << r.out;
  std::vector<std::string> order;
  for (const char* m : {"hhg", "grid", "sap"})
    for (int k = 1; k <= 3; ++k) {
      const std::string line = std::string("equal n=500 ") + m + " (round " + std::to_string(k) + "/3)";
      EXPECT_TRUE(contains(r.err, line)) << line << "\n" << r.err;
    }
  const auto at = [&](const std::string& m, int k) {
    return r.err.find(std::string("equal n=500 ") + m + " (round " + std::to_string(k) + "/3)");
  };
  EXPECT_LT(at("hhg", 1), at("grid", 1));
  EXPECT_LT(at("grid", 1), at("sap", 1));
  EXPECT_LT(at("sap", 1), at("sap", 2));  // round 2 backward
  EXPECT_LT(at("sap", 2), at("grid", 2));
  EXPECT_LT(at("grid", 2), at("hhg", 2));
  EXPECT_LT(at("hhg", 2), at("hhg", 3));  // round 3 forward
  EXPECT_LT(at("hhg", 3), at("sap", 3));
  const auto j = nlohmann::json::parse(read_file(json));
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["rounds"], 3);
  ASSERT_EQ(j[0]["results"].size(), 3u);
  for (const auto& row : j[0]["results"]) {
    EXPECT_EQ(row["note"], "");
    EXPECT_EQ(row["pairs_per_step"], j[0]["results"][0]["pairs_per_step"]);
  }
  // brute over 2 * 10^4 objects, 100 steps (2 * 10^10 tests), takes far more than 5 s: skipped once, then left out
  const cli_result slow =
      run("bench --scenario sparse --methods hhg,brute --n 20000 --steps 100 --rounds 2 --timeout 5");
  EXPECT_EQ(slow.status, 0) << slow.err;
  EXPECT_TRUE(contains(slow.err, "brute (round 1/2)")) << slow.err;
  EXPECT_FALSE(contains(slow.err, "brute (round 2/2)")) << slow.err;
  EXPECT_TRUE(contains(slow.err, "hhg (round 2/2)")) << slow.err;
  EXPECT_TRUE(contains(slow.out, "skipped: timed out")) << slow.out;
  EXPECT_EQ(run("bench --rounds 0").status, 2);
}

// --interleave: the methods of a (scenario, N) run at once, taking turns: the
// JSON counts the turns the harness gave (each method's setup and each step:
// methods x (steps + 1); 0 without), and the pairs are those of separate runs.
// A method over --timeout (its own turns' time) is skipped; the others finish.
TEST_F(cli, BenchInterleaveTakesTurns) {
  const fs::path json = dir_ / "interleave.json", plain = dir_ / "plain.json";
  const cli_result r =
      run("bench --scenario equal,varied --methods hhg,grid,sap --n 500 --steps 3 --interleave --json " + quote(json));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_FALSE(contains(r.out, "DIFFER")) << r.out;
  EXPECT_TRUE(contains(r.err, "equal n=500 grid (interleaved)")) << r.err;
  const cli_result p =
      run("bench --scenario equal,varied --methods hhg,grid,sap --n 500 --steps 3 --json " + quote(plain));
  EXPECT_EQ(p.status, 0) << p.err;
  const auto j = nlohmann::json::parse(read_file(json));
  const auto q = nlohmann::json::parse(read_file(plain));
  ASSERT_EQ(j.size(), 2u);
  ASSERT_EQ(q.size(), 2u);
  for (std::size_t k = 0; k < 2; ++k) {
    EXPECT_EQ(j[k]["interleaved_turns"], 3 * (3 + 1));
    EXPECT_EQ(q[k]["interleaved_turns"], 0);
    ASSERT_EQ(j[k]["results"].size(), 3u);
    for (const auto& row : j[k]["results"]) {
      EXPECT_EQ(row["note"], "");
      EXPECT_EQ(row["pairs_per_step"], q[k]["results"][0]["pairs_per_step"]);
      EXPECT_GT(row["step_ms_median"].get<double>(), 0.0);
    }
  }
  // brute over 2 * 10^4 objects, 100 steps (2 * 10^10 tests), takes far more than 2 s
  const cli_result slow =
      run("bench --scenario sparse --methods hhg,brute,grid --n 20000 --steps 100 --timeout 2 "
          "--interleave --json " +
          quote(json));
  EXPECT_EQ(slow.status, 0) << slow.err;
  EXPECT_TRUE(contains(slow.out, "skipped: timed out after 2 s")) << slow.out;
  const auto s = nlohmann::json::parse(read_file(json));
  ASSERT_EQ(s.size(), 1u);
  for (const auto& row : s[0]["results"])
    if (row["method"] != "brute") {
      EXPECT_EQ(row["note"], "") << row["method"];
    }
  EXPECT_GT(s[0]["interleaved_turns"].get<int>(), 2 * (100 + 1));  // (and brute's turns until its time ran out)
}

// --- hostile input (issue 5): big and malformed files ------------------------------

// 200 000 lines: the pair count equals an independent count (cubes of edge 0.5
// on a lattice of spacing 0.5 in x only: each touches its neighbours).
TEST_F(cli, HostileHugeFile) {
  std::string text;
  text.reserve(200000 * 24);
  for (int i = 0; i < 200000; ++i) {
    const double x = 0.5 * (i % 1000), y = 10.0 * (i / 1000);
    text += std::to_string(x) + " " + std::to_string(y) + " 0 " + std::to_string(x + 0.5) + " " +
            std::to_string(y + 0.5) + " 0.5\n";
  }
  const cli_result r = run("pairs " + quote(write("big.txt", text)));
  EXPECT_EQ(r.status, 0) << r.err;
  // per row of 1000 cubes: 999 touching neighbours; rows 10 apart never meet
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 200 * 999);
}

TEST_F(cli, HostileLongLinesAndOddBytes) {
  // 5 MB of blanks before the numbers: accepted
  cli_result r = run("pairs", std::string(5000000, ' ') + "0 0 0 1 1 1\n1 1 1 2 2 2\n");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "0 1\n");
  // a 3-million-digit number: out of range, named by its line
  r = run("pairs", "0 0 0 1 1 1\n0 0 0 1 1 " + std::string(3000000, '1') + "\n");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(contains(r.err, "line 2")) << r.err.substr(0, 200);
  EXPECT_LT(r.err.size(), 1000u) << "the message quotes a bounded part of the line";
  // a NUL byte inside a number
  const char nul_pairs[] = "0 0 0 1 1 1\n0 0\0 0 1 1 1\n";
  r = run("pairs", std::string(nul_pairs, sizeof nul_pairs - 1));
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "line 2")) << r.err;
  // binary garbage
  std::string garbage;
  for (int i = 0; i < 4096; ++i) garbage += static_cast<char>((i * 131 + 7) % 256);
  r = run("pairs", garbage);
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, "");
  // CRLF line endings and a last line without a newline: accepted
  r = run("pairs", "0 0 0 1 1 1\r\n0 0 0 1 1 1\r\n");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "0 1\n");
  r = run("pairs", "0 0 0 1 1 1\n0 0 0 1 1 1");
  EXPECT_EQ(r.out, "0 1\n");
  // numbers beyond double: an error, not infinity
  r = run("pairs", "0 0 0 1 1 1e400\n");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "out of range")) << r.err;
  // only comments and blank lines: valid, no pairs
  r = run("pairs", "# nothing\n\n   \n# more\n");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, "");
  // the same file through replay, query and neighbors
  const char nul_replay[] = "add 0 0 0 0 1 1 1\nadd 1 0 0\0 0 1 1 1\npairs\n";
  r = run("replay", std::string(nul_replay, sizeof nul_replay - 1));
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "line 2")) << r.err;
  r = run("neighbors --radius 1", "0 0 0\n0 0 " + std::string(3000000, '9') + "\n");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(contains(r.err, "line 2")) << r.err.substr(0, 200);
}

}  // namespace
