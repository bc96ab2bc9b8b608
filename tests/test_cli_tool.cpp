// The `hhg` tool as a demanding user meets it (issue 24): strict flag values,
// "hhg: " on every error, failed writes, JSON that parses strictly, quoted CSV,
// --count / --format / --distances / --order / --skip-header, the hash grid
// flags and --threads on every subcommand that builds a hash grid, the
// first-hit ray query, and a benchmark that offers only what it can run.
// Expected answers are computed here with hhg::overlaps and plain loops.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "../apps/hhg/format.hpp"
#include "cli_support.hpp"
#include "hhg/box.hpp"
#include "hhg/queries.hpp"
#include "hhg/scenes.hpp"

namespace {

namespace fs = std::filesystem;
using hhg_cli_test::cli_result;
using hhg_cli_test::contains;
using hhg_cli_test::quote;

std::string num(double v) {
  std::ostringstream s;
  s.precision(17);
  s << v;
  return s.str();
}

template <int D>
std::string box_lines(const std::vector<hhg::box<D, double>>& boxes) {
  std::string s;
  for (const auto& b : boxes) {
    for (int i = 0; i < D; ++i) s += num(b.min[i]) + " ";
    for (int i = 0; i < D; ++i) s += num(b.max[i]) + (i + 1 < D ? " " : "\n");
  }
  return s;
}

/// Random boxes on a grid of quarters (exact in text), some touching.
std::vector<hhg::box<3, double>> random_boxes(std::size_t n, std::uint64_t seed, double extent = 20) {
  hhg::scenes::rng r(seed);
  std::vector<hhg::box<3, double>> v(n);
  for (auto& b : v)
    for (int a = 0; a < 3; ++a) {
      b.min[a] = std::floor(r.uniform(0, extent) * 4) / 4;
      b.max[a] = b.min[a] + std::floor(r.uniform(0, 3) * 4) / 4;
    }
  return v;
}

std::vector<std::pair<std::size_t, std::size_t>> oracle_pairs(const std::vector<hhg::box<3, double>>& boxes) {
  std::vector<std::pair<std::size_t, std::size_t>> p;
  for (std::size_t i = 0; i < boxes.size(); ++i)
    for (std::size_t j = i + 1; j < boxes.size(); ++j)
      if (hhg::overlaps(boxes[i], boxes[j])) p.emplace_back(i, j);
  return p;
}

std::string pairs_text(const std::vector<std::pair<std::size_t, std::size_t>>& p) {
  std::string s;
  for (const auto& [i, j] : p) s += std::to_string(i) + " " + std::to_string(j) + "\n";
  return s;
}

/// Lines of a text, sorted (to compare outputs whose order is not specified).
std::vector<std::string> sorted_lines(const std::string& text) {
  std::vector<std::string> v;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) v.push_back(line);
  std::sort(v.begin(), v.end());
  return v;
}

/// Splits one CSV record (RFC 4180 quoting).
std::vector<std::string> csv_record(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        out.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        out.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

class cli_tool : public hhg_cli_test::cli_fixture {
 protected:
  cli_tool() : cli_fixture("hhg_cli_tool_") {}
  cli_result run(const std::string& args, const std::string& input = "") {
    return run_tool(args, write("stdin.txt", input));
  }
  /// Checks that `file` is strict JSON for Python and for nlohmann, and returns it.
  nlohmann::json strict_json(const fs::path& file) {
    EXPECT_EQ(python_strict_json(file), 0) << hhg_cli_test::slurp(file) << hhg_cli_test::slurp(dir_ / "python_err.txt");
    return nlohmann::json::parse(hhg_cli_test::slurp(file));  // throws (test fails) when not JSON
  }
  nlohmann::json strict_json_text(const std::string& text) { return strict_json(write("out.json", text)); }
};

// --- flag values ----------------------------------------------------------------

TEST_F(cli_tool, NumbersOnTheCommandLineAreStrict) {
  write("b.txt", "0 0 0 1 1 1\n");
  write("q.txt", "0 0 0\n");
  const std::string b = quote(dir_ / "b.txt"), q = quote(dir_ / "q.txt");
  for (const std::string& args : std::vector<std::string>{"run --n 12abc",
                                                          "run --seed -1",
                                                          "run --steps 1e3",
                                                          "run --n 0x10",
                                                          "run --factor 0x2",
                                                          "run --factor nan",
                                                          "run --factor 1",
                                                          "run --threads -1",
                                                          "run --threads 2x",
                                                          "bench --n 12abc",
                                                          "bench --n 100,12abc",
                                                          "bench --seed -1",
                                                          "bench --steps -3",
                                                          "bench --timeout 0",
                                                          "query --boxes " + b + " --nearest " + q + " --k -1",
                                                          "query --boxes " + b + " --nearest " + q + " --k 0",
                                                          "query --boxes " + b + " --nearest " + q + " --k 2.5",
                                                          "neighbors --radius 0x10",
                                                          "neighbors --radius -1",
                                                          "neighbors --radius nan",
                                                          "neighbors --radius 1e999",
                                                          "neighbors --radius 1abc",
                                                          "pairs --cells 6",
                                                          "pairs --cells 16x",
                                                          "pairs --density 0",
                                                          "pairs --cell-capacity 0",
                                                          "pairs --sort-memory -5"}) {
    const cli_result r = run(args, "0 0 0\n");
    EXPECT_EQ(r.status, 2) << args << ": " << r.err;
    EXPECT_EQ(r.out, "") << args;
    EXPECT_EQ(r.err.rfind("hhg: ", 0), 0u) << args << ": " << r.err;
  }
  // the same values written correctly run
  EXPECT_EQ(run("neighbors --radius 16 --dim 3", "0 0 0\n1 1 1\n").out, "1\n0\n");
  EXPECT_EQ(run("neighbors --radius +1.5e1", "0 0 0\n1 1 1\n").out, "1\n0\n");
}

TEST_F(cli_tool, EveryErrorMessageStartsWithHhg) {
  for (const char* args :
       {"", "--bogus", "frobnicate", "pairs --dim 4", "pairs --dim", "pairs a b", "run --scenario nope", "run --n",
        "query", "neighbors", "bench --methods nope", "bench --scenario nope", "replay --method nope",
        "pairs --method nope", "pairs /no/such/file"}) {
    const cli_result r = run(args, "0 0 0 1 1 1\n");
    EXPECT_EQ(r.status, 2) << args;
    EXPECT_EQ(r.err.rfind("hhg: ", 0), 0u) << "'" << args << "': " << r.err;
    // no second prefix
    EXPECT_NE(r.err.rfind("hhg: hhg: ", 0), 0u) << args << ": " << r.err;
  }
  const cli_result r = run("pairs", "0 0 0 1 1\n");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "hhg: line 1: expected 6 numbers, found 5\n");
}

// --- failed writes ------------------------------------------------------------------

TEST_F(cli_tool, AFailedWriteExits1InEverySubcommand) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full on this system";
  write("boxes.txt", "0 0 0 1 1 1\n0.5 0.5 0.5 2 2 2\n");
  write("points.txt", "0 0 0\n");
  write("log.txt", "add 1 0 0 0 1 1 1\nadd 2 0 0 0 1 1 1\npairs\n");
  const std::string boxes = quote(dir_ / "boxes.txt"), points = quote(dir_ / "points.txt");
  for (const std::string& args : std::vector<std::string>{
           "pairs " + boxes, "pairs --format json " + boxes, "pairs --count " + boxes, "pairs --order stream " + boxes,
           "replay " + quote(dir_ / "log.txt"), "run -q --n 200 --steps 2",
           "query --boxes " + boxes + " --point " + points,
           "query --boxes " + boxes + " --point " + points + " --format json", "neighbors --radius 1 " + points,
           "bench --scenario equal --methods hhg --n 100 --steps 1"}) {
    const cli_result r = run_shell(args, "< /dev/null > /dev/full");
    EXPECT_EQ(r.status, 1) << args << ": " << r.err;
    // the message (after bench's progress lines, which are not errors) starts with "hhg: "
    EXPECT_TRUE(r.err.rfind("hhg: cannot write", 0) == 0 || contains(r.err, "\nhhg: cannot write"))
        << args << ": " << r.err;
  }
  for (const char* args : {"run -q --n 200 --steps 2 --json /dev/full",
                           "bench --scenario equal --methods hhg --n 100 --steps 1 --json /dev/full",
                           "bench --scenario equal --methods hhg --n 100 --steps 1 --csv /dev/full"}) {
    const cli_result r = run_shell(args, "< /dev/null > /dev/null");
    EXPECT_EQ(r.status, 1) << args << ": " << r.err;
    // the message (after bench's progress lines, which are not errors) starts with "hhg: "
    EXPECT_TRUE(r.err.rfind("hhg: cannot write", 0) == 0 || contains(r.err, "\nhhg: cannot write"))
        << args << ": " << r.err;
  }
}

TEST_F(cli_tool, BenchOpensItsOutputFilesBeforeRunning) {
  // brute force on 10^5 objects would take minutes: the bad path must fail first
  for (const char* flag : {"--json", "--csv"}) {
    const cli_result r = run_tool(std::string("bench --scenario equal --methods hhg --n 100000 --steps 100000 ") +
                                      flag + " " + quote(dir_ / "no" / "such" / "dir" / "out"),
                                  write("stdin.txt", ""), "timeout 60 ");
    EXPECT_EQ(r.status, 2) << flag << ": " << r.err;
    EXPECT_TRUE(contains(r.err, "cannot write")) << r.err;
    EXPECT_FALSE(contains(r.err, "[1/")) << "a run started: " << r.err;
  }
}

// --- JSON and CSV -------------------------------------------------------------------------

TEST_F(cli_tool, RunAndBenchJsonParseStrictly) {
  const fs::path run_json = dir_ / "run.json";
  cli_result r = run("run -q --n 300 --steps 2 --scenario mixed --check --threads 2 --json " + quote(run_json));
  ASSERT_EQ(r.status, 0) << r.err;
  const nlohmann::json j = strict_json(run_json);
  EXPECT_EQ(j["scenario"], "mixed");
  EXPECT_EQ(j["threads"], 2);
  EXPECT_EQ(j["check"], true);
  EXPECT_TRUE(contains(r.out, "threads:")) << r.out;
  EXPECT_TRUE(contains(r.out, "check:           passed")) << r.out;

  const fs::path bench_json = dir_ / "bench.json", bench_csv = dir_ / "bench.csv";
  r = run("bench --scenario equal,update --methods hhg,brute --n 200 --steps 2 --json " + quote(bench_json) +
          " --csv " + quote(bench_csv));
  ASSERT_EQ(r.status, 0) << r.err;
  const nlohmann::json b = strict_json(bench_json);
  ASSERT_TRUE(b.is_array());
  ASSERT_EQ(b.size(), 3u);  // equal, update, update-jump
  std::set<std::string> labels;
  for (const auto& run : b) labels.insert(run["scenario"].get<std::string>());
  EXPECT_EQ(labels, (std::set<std::string>{"equal", "update", "update-jump"}));
  // the CSV has the JSON's columns (without machine and pairs_per_step), quoted where needed
  const std::string csv = hhg_cli_test::slurp(bench_csv);
  std::istringstream lines(csv);
  std::string header;
  std::getline(lines, header);
  const std::vector<std::string> columns = csv_record(header);
  EXPECT_EQ(header,
            "scenario,n,steps,seed,method,setup_ms,step_ms_median,step_ms_mean,update_ms_median,detect_ms_median,"
            "pairs,peak_bytes,update_ms_max,detect_ms_max,bytes,peak_rss_kb,box_tests,cells_visited,step_ns_per_object,"
            "bytes_per_object,peak_bytes_per_object,caller_bytes,own_peak_bytes_per_object,note");
  for (const auto& key : b[0]["results"][0].items()) {
    if (key.key() == "pairs_per_step") continue;
    EXPECT_NE(std::find(columns.begin(), columns.end(), key.key()), columns.end()) << key.key();
  }
  std::string line;
  std::size_t rows = 0;
  while (std::getline(lines, line)) {
    ++rows;
    EXPECT_EQ(csv_record(line).size(), columns.size()) << line;
  }
  EXPECT_EQ(rows, 4u);  // equal: hhg, brute; update: hhg; update-jump: hhg
  // --skip-header drops the first line only
  const fs::path csv2 = dir_ / "bench2.csv";
  r = run("bench --scenario equal --methods hhg --n 100 --steps 1 --skip-header --csv " + quote(csv2));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(hhg_cli_test::slurp(csv2).rfind("equal,100,1,1,hhg,", 0), 0u) << hhg_cli_test::slurp(csv2);
}

TEST_F(cli_tool, CsvFieldsAreQuotedWhereNeeded) {
  EXPECT_EQ(hhg::cli::csv_field("plain"), "plain");
  EXPECT_EQ(hhg::cli::csv_field("a,b"), "\"a,b\"");
  EXPECT_EQ(hhg::cli::csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(hhg::cli::csv_field("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(csv_record(hhg::cli::csv_field("x, \"y\"") + ",z"), (std::vector<std::string>{"x, \"y\"", "z"}));
  EXPECT_TRUE(hhg::cli::json_number(std::nan("")).is_null());
  EXPECT_TRUE(hhg::cli::json_number(INFINITY).is_null());
  EXPECT_EQ(hhg::cli::json_number(0.25).get<double>(), 0.25);
}

// --- hhg bench offers what it can run -------------------------------------------------------

TEST_F(cli_tool, BenchOffersOnlyWhatRunsAndShowsNoMeaninglessColumn) {
  cli_result r = run("bench --help");
  EXPECT_EQ(r.status, 0);
  // the installed tool links no peer library and offers no peer
  for (const char* peer : {"bullet", "fcl-", "cgal"}) EXPECT_FALSE(contains(r.out, peer)) << peer;
  EXPECT_EQ(run("bench --methods fcl-itree --n 100 --steps 1").status, 2);
  // ... and its executable needs none of their shared libraries
  if (fs::exists("/usr/bin/ldd")) {
    const std::string deps = dir_ / "ldd.txt";
    ASSERT_EQ(std::system(("/usr/bin/ldd " + quote(hhg_cli_test::tool_path) + " > " + quote(deps)).c_str()), 0);
    const std::string libs = hhg_cli_test::slurp(deps);
    for (const char* lib : {"Bullet", "LinearMath", "libfcl", "libccd", "CGAL", "gmp"})
      EXPECT_FALSE(contains(libs, lib)) << lib << " in\n" << libs;
  }
  // a scenario the chosen methods cannot run is an error, not an empty table
  for (const char* args : {"bench --scenario factor --methods brute --n 100 --steps 1",
                           "bench --scenario update --methods sap --n 100 --steps 1"}) {
    r = run(args);
    EXPECT_EQ(r.status, 2) << args;
    EXPECT_EQ(r.out, "") << args;
    EXPECT_EQ(r.err.rfind("hhg: bench: scenario '", 0), 0u) << r.err;
  }
  // without an hhg row the ratio column is not shown
  r = run("bench --scenario equal --methods brute,sap --n 200 --steps 2");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_FALSE(contains(r.out, "x hhg")) << r.out;
  r = run("bench --scenario equal --methods hhg,sap --n 200 --steps 2");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "x hhg")) << r.out;
}

// --- outputs of pairs -----------------------------------------------------------------------

TEST_F(cli_tool, PairsCountFormatsAndOrders) {
  const auto boxes = random_boxes(300, 7);
  const auto expected = oracle_pairs(boxes);
  ASSERT_GT(expected.size(), 50u);
  const std::string input = box_lines<3>(boxes);
  cli_result r = run("pairs", input);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, pairs_text(expected));
  EXPECT_EQ(run("pairs --count", input).out, std::to_string(expected.size()) + "\n");
  EXPECT_EQ(run("pairs --count --format csv", input).out, "pairs\n" + std::to_string(expected.size()) + "\n");
  EXPECT_EQ(run("pairs --count --format csv --skip-header", input).out, std::to_string(expected.size()) + "\n");
  EXPECT_EQ(strict_json_text(run("pairs --count --format json", input).out)["count"], expected.size());
  // csv
  std::string csv = "i,j\n";
  for (const auto& [i, j] : expected) csv += std::to_string(i) + "," + std::to_string(j) + "\n";
  EXPECT_EQ(run("pairs --format csv", input).out, csv);
  EXPECT_EQ(run("pairs --format csv --skip-header", input).out, csv.substr(4));
  // json
  const nlohmann::json j = strict_json_text(run("pairs --format json", input).out);
  ASSERT_EQ(j["pairs"].size(), expected.size());
  EXPECT_EQ(j["count"], expected.size());
  for (std::size_t k = 0; k < expected.size(); ++k) {
    EXPECT_EQ(j["pairs"][k][0], expected[k].first);
    EXPECT_EQ(j["pairs"][k][1], expected[k].second);
  }
  EXPECT_EQ(strict_json_text(run("pairs --format json", "").out)["pairs"].size(), 0u);
  // streamed: the same pairs, each once with i < j, in the method's order
  for (const std::string method : {"hhg", "brute", "sap", "pivot"}) {
    r = run("pairs --order stream --method " + method, input);
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(sorted_lines(r.out), sorted_lines(pairs_text(expected))) << method;
    // auto switches to streaming when the sorted list does not fit
    r = run("pairs --sort-memory 12 --method " + method, input);
    EXPECT_EQ(sorted_lines(r.out), sorted_lines(pairs_text(expected))) << method;
    EXPECT_EQ(run("pairs --order stream --method " + method, input).out, r.out) << "stream order not repeatable";
    r = run("pairs --sort-memory 100000000 --method " + method, input);
    EXPECT_EQ(r.out, pairs_text(expected)) << method;
  }
  r = run("pairs --order stream --format json", input);
  EXPECT_EQ(strict_json_text(r.out)["count"], expected.size());
}

TEST_F(cli_tool, HashGridFlagsOnEverySubcommandThatBuildsOne) {
  const auto boxes = random_boxes(400, 11, 40);
  const std::string input = box_lines<3>(boxes);
  const std::string expected = pairs_text(oracle_pairs(boxes));
  for (const char* flags :
       {"--factor 3", "--cells 64", "--cells 8,16,32", "--cells 256", "--threshold 0", "--density 1 --cell-capacity 16",
        "--strategy rebuild --growth by-occupancy", "--factor 1.5 --cells 4"}) {
    const cli_result r = run(std::string("pairs ") + flags, input);
    EXPECT_EQ(r.status, 0) << flags << ": " << r.err;
    EXPECT_EQ(r.out, expected) << flags;
  }
  // ranges that are really usable: at most 2^24 cells in a new grid
  EXPECT_EQ(run("pairs --dim 2 --cells 4096", "0 0 1 1\n1 1 2 2\n").out, "0 1\n");
  for (const char* args :
       {"pairs --cells 32768", "pairs --cells 512", "pairs --cells 8,16", "pairs --dim 2 --cells 8192",
        "run --n 100 --steps 1 --cells 32768", "pairs --method brute --factor 3", "pairs --method sap --cells 8"}) {
    const cli_result r = run(args, "0 0 0 1 1 1\n");
    EXPECT_EQ(r.status, 2) << args;
    EXPECT_EQ(r.err.rfind("hhg: ", 0), 0u) << args << ": " << r.err;
  }
  EXPECT_TRUE(contains(run("pairs --cells 512", input).err, "--cells")) << "names the flag";
  // --cells takes one argument: the file after it is the input (until stop 79
  // a second value, "must be an integer from 4 to 32768, got 'FILE'")
  write("flags.txt", input);
  for (const char* flags : {"--cells 8 ", "--cells=8 ", "--cells 8,16,32 ", "--method hhg --cells 64 "}) {
    const cli_result r = run(std::string("pairs ") + flags + quote(dir_ / "flags.txt"));
    EXPECT_EQ(r.status, 0) << flags << ": " << r.err;
    EXPECT_EQ(r.out, expected) << flags;
  }
  EXPECT_TRUE(contains(run("pairs --cells 8,8,8,8", input).err, "1 to 3")) << "four values";
  EXPECT_TRUE(contains(run("pairs --cells 8,,8", input).err, "--cells")) << "an empty value";
  // query builds a hash grid too
  write("boxes.txt", input);
  write("pts.txt", "1 1 1\n10 10 10\n");
  const std::string q = "query --boxes " + quote(dir_ / "boxes.txt") + " --point " + quote(dir_ / "pts.txt");
  const cli_result plain = run(q);
  ASSERT_EQ(plain.status, 0) << plain.err;
  EXPECT_EQ(run(q + " --cells 32 --factor 4 --threads 2").out, plain.out);
  EXPECT_EQ(run(q + " --cells 1024").status, 2);
}

// --- query and neighbors outputs ------------------------------------------------------------

TEST_F(cli_tool, QueryNearestAndRayDistancesCountsAndFormats) {
  const auto boxes = random_boxes(200, 3, 30);
  write("boxes.txt", box_lines<3>(boxes));
  const std::string b = "query --boxes " + quote(dir_ / "boxes.txt");
  hhg::scenes::rng r(5);
  std::string pts, rays;
  std::vector<std::array<double, 3>> points;
  for (int i = 0; i < 20; ++i) {
    std::array<double, 3> p{};
    for (auto& c : p) c = std::floor(r.uniform(-5, 35) * 4) / 4;
    points.push_back(p);
    pts += num(p[0]) + " " + num(p[1]) + " " + num(p[2]) + "\n";
    rays += num(p[0]) + " " + num(p[1]) + " " + num(p[2]) + " 1 0.5 0.25 inf\n";
  }
  write("pts.txt", pts);
  write("rays.txt", rays);
  // --nearest --k 3 --distances: the distances of the three nearest, ascending
  cli_result res = run(b + " --nearest " + quote(dir_ / "pts.txt") + " --k 3 --distances --format json");
  ASSERT_EQ(res.status, 0) << res.err;
  nlohmann::json j = strict_json_text(res.out);
  ASSERT_EQ(j["results"].size(), points.size());
  for (std::size_t q = 0; q < points.size(); ++q) {
    std::vector<double> all;
    for (const auto& bx : boxes) all.push_back(std::sqrt(hhg::box_distance_squared(bx, points[q])));
    std::sort(all.begin(), all.end());
    ASSERT_EQ(j["results"][q].size(), 3u);
    for (std::size_t k = 0; k < 3; ++k) {
      const auto& m = j["results"][q][k];
      const std::size_t idx = m["index"].get<std::size_t>();
      EXPECT_DOUBLE_EQ(m["distance"].get<double>(), all[k]);
      EXPECT_DOUBLE_EQ(m["distance"].get<double>(), std::sqrt(hhg::box_distance_squared(boxes[idx], points[q])));
    }
  }
  // text with distances: index:distance
  res = run(b + " --nearest " + quote(dir_ / "pts.txt") + " --distances");
  EXPECT_TRUE(contains(res.out, ":")) << res.out;
  // rays: the closest hit is the first of all hits, its entry distance as reported by --distances
  const cli_result all = run(b + " --ray " + quote(dir_ / "rays.txt") + " --distances --format json");
  const cli_result first = run(b + " --ray " + quote(dir_ / "rays.txt") + " --closest --distances --format json");
  ASSERT_EQ(all.status, 0) << all.err;
  ASSERT_EQ(first.status, 0) << first.err;
  const nlohmann::json ja = strict_json_text(all.out), jf = strict_json_text(first.out);
  std::size_t hit = 0;
  for (std::size_t q = 0; q < points.size(); ++q) {
    if (ja["results"][q].empty()) {
      EXPECT_TRUE(jf["results"][q].empty());
      continue;
    }
    ++hit;
    ASSERT_EQ(jf["results"][q].size(), 1u);
    EXPECT_EQ(jf["results"][q][0], ja["results"][q][0]);
    // the entry distance: the point origin + t d enters the box
    const std::size_t idx = ja["results"][q][0]["index"].get<std::size_t>();
    const double t = ja["results"][q][0]["t"].get<double>();
    const double len = std::sqrt(1 + 0.25 + 0.0625);
    std::array<double, 3> at{};
    const double dir[3] = {1, 0.5, 0.25};
    for (int a = 0; a < 3; ++a) at[a] = points[q][a] + t / len * dir[a];
    EXPECT_LT(std::sqrt(hhg::box_distance_squared(boxes[idx], at)), 1e-9 * (1 + t));
  }
  EXPECT_GT(hit, 0u);
  // text --closest: -1 without a hit; --count: 0 then
  const std::string text = run(b + " --ray " + quote(dir_ / "rays.txt") + " --closest").out;
  const std::string counts = run(b + " --ray " + quote(dir_ / "rays.txt") + " --closest --count").out;
  std::istringstream tl(text), cl(counts);
  std::string t1, c1;
  while (std::getline(tl, t1) && std::getline(cl, c1)) EXPECT_EQ(c1, t1 == "-1" ? "0" : "1") << t1;
  // csv with a header (or not), one row per match
  const std::string csv = run(b + " --point " + quote(dir_ / "pts.txt") + " --format csv").out;
  EXPECT_EQ(csv.rfind("query,index\n", 0), 0u) << csv;
  EXPECT_EQ(run(b + " --point " + quote(dir_ / "pts.txt") + " --format csv --skip-header").out, csv.substr(12));
  EXPECT_EQ(run(b + " --point " + quote(dir_ / "pts.txt") + " --count --format csv").out.rfind("query,count\n", 0), 0u);
  // --distances only where there is a distance
  EXPECT_EQ(run(b + " --point " + quote(dir_ / "pts.txt") + " --distances").status, 2);
}

TEST_F(cli_tool, NeighborsDistancesCountsAndFormats) {
  hhg::scenes::rng r(9);
  std::vector<std::array<double, 2>> pts(150);
  std::string input = "# dim 2\n";
  for (auto& p : pts) {
    for (auto& c : p) c = std::floor(r.uniform(0, 10) * 4) / 4;
    input += num(p[0]) + " " + num(p[1]) + "\n";
  }
  const double radius = 1.25;
  std::vector<std::vector<std::pair<std::size_t, double>>> expected(pts.size());
  for (std::size_t i = 0; i < pts.size(); ++i)
    for (std::size_t j = 0; j < pts.size(); ++j) {
      const double dx = pts[i][0] - pts[j][0], dy = pts[i][1] - pts[j][1];
      if (i != j && dx * dx + dy * dy <= radius * radius) expected[i].emplace_back(j, std::sqrt(dx * dx + dy * dy));
    }
  for (const char* method : {"cell-list", "hierarchical"}) {
    const std::string base = std::string("neighbors --radius 1.25 --method ") + method;
    const nlohmann::json j = strict_json_text(run(base + " --distances --format json --threads 2", input).out);
    ASSERT_EQ(j["neighbors"].size(), pts.size()) << method;
    for (std::size_t i = 0; i < pts.size(); ++i) {
      ASSERT_EQ(j["neighbors"][i].size(), expected[i].size()) << method << " " << i;
      for (std::size_t k = 0; k < expected[i].size(); ++k) {
        EXPECT_EQ(j["neighbors"][i][k]["index"], expected[i][k].first);
        EXPECT_DOUBLE_EQ(j["neighbors"][i][k]["distance"].get<double>(), expected[i][k].second);
      }
    }
    std::string counts, csv = "point,neighbor\n";
    for (std::size_t i = 0; i < pts.size(); ++i) {
      counts += std::to_string(expected[i].size()) + "\n";
      for (const auto& [n, d] : expected[i]) csv += std::to_string(i) + "," + std::to_string(n) + "\n";
    }
    EXPECT_EQ(run(base + " --count", input).out, counts) << method;
    EXPECT_EQ(run(base + " --format csv", input).out, csv) << method;
    EXPECT_EQ(run(base + " --format csv --skip-header", input).out, csv.substr(15)) << method;
    EXPECT_EQ(strict_json_text(run(base + " --count --format json", input).out)["counts"].size(), pts.size());
    const std::string text = run(base + " --distances", input).out;
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), static_cast<long>(pts.size()));
  }
}

// --- threads ---------------------------------------------------------------------------------

TEST_F(cli_tool, ThreadsFlagRunPrintsTheCount) {
  for (const char* t : {"1", "2", "3"}) {
    const cli_result r = run(std::string("run -q --n 500 --steps 3 --check --threads ") + t);
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(contains(r.out, std::string("threads:         ") + t + "\n")) << r.out;
  }
}

TEST_F(cli_tool, ThreadsPairsOutputIsTheSameForEveryCountOnTheZoo) {
  for (const hhg::scenes::zoo z : hhg::scenes::all_zoo_scenes()) {
    for (const std::size_t n : {std::size_t{40}, std::size_t{700}}) {
      const auto boxes = hhg::scenes::make_zoo_scene<3, double>(z, n, 3);
      const std::string input = box_lines<3>(boxes);
      for (const char* order : {"sorted", "stream"}) {
        const std::string args = std::string("pairs --order ") + order + " --threads ";
        const cli_result one = run(args + "1", input);
        ASSERT_EQ(one.status, 0) << hhg::scenes::to_string(z) << ": " << one.err;
        const cli_result two = run(args + "2", input);
        EXPECT_EQ(two.status, 0) << two.err;
        EXPECT_EQ(two.out, one.out) << hhg::scenes::to_string(z) << " n=" << n << " " << order;
        EXPECT_EQ(run(args + "3 --threshold 0", input).out, run(args + "1 --threshold 0", input).out)
            << hhg::scenes::to_string(z) << " n=" << n << " " << order;
      }
      const auto boxes2 = hhg::scenes::make_zoo_scene<2, double>(z, n, 4);
      const std::string input2 = "# dim 2\n" + box_lines<2>(boxes2);
      EXPECT_EQ(run("pairs --threads 2", input2).out, run("pairs --threads 1", input2).out)
          << hhg::scenes::to_string(z) << " 2D";
    }
  }
}

// Found by the review of stop 79: a grid flag given its default value with
// another method, --k without --nearest and --motion in hex were accepted; a
// printed distance underflowed to 0.
TEST_F(cli_tool, FlagsThatDoNotApplyAndNumbersOutOfTheRuleAreRefused) {
  const std::string two = "0 0 0 1 1 1\n0.5 0.5 0.5 2 2 2\n";
  for (const char* args : {"pairs --method brute --factor 4", "pairs --method sap --threshold 32",
                           "pairs --method brute --fixed-factor"}) {
    const cli_result r = run(args, two);
    EXPECT_EQ(r.status, 2) << args;
    EXPECT_TRUE(contains(r.err, "apply to --method hhg only")) << args << ": " << r.err;
    EXPECT_EQ(r.out, "") << args;
  }
  EXPECT_EQ(run("pairs --factor 4", two).out, "0 1\n") << "with hhg a default value is fine";
  write("two.txt", two);
  write("p.txt", "1 1 1\n");
  const std::string boxes = " --boxes " + quote(dir_ / "two.txt") + " ";
  const cli_result k = run("query" + boxes + "--point " + quote(dir_ / "p.txt") + " --k 3");
  EXPECT_EQ(k.status, 2);
  EXPECT_TRUE(contains(k.err, "--k goes with --nearest")) << k.err;
  EXPECT_EQ(run("query" + boxes + "--nearest " + quote(dir_ / "p.txt") + " --k 2").status, 0);
  for (const char* motion : {"0x10", "1e-400", "' 0.5'"}) {
    const cli_result m = run("bench" + boxes + "--steps 1 --methods brute --motion " + motion);
    EXPECT_EQ(m.status, 2) << motion;
    EXPECT_TRUE(contains(m.err, "--motion")) << m.err;
  }
  // distances neither underflow nor overflow on the way
  write("tiny.txt", "0 0 0\n1e-200 0 0\n");
  EXPECT_EQ(run("neighbors " + quote(dir_ / "tiny.txt") + " --radius 1.5e-200 --distances").out,
            "1:1e-200\n0:1e-200\n");
  write("tb.txt", "1e-200 0 0 1e-200 0 0\n");
  write("tp.txt", "0 0 0\n");
  EXPECT_EQ(
      run("query --boxes " + quote(dir_ / "tb.txt") + " --nearest " + quote(dir_ / "tp.txt") + " --distances").out,
      "0:1e-200\n");
}

}  // namespace
