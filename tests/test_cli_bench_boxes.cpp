// `hhg bench --boxes FILE [--steps K --motion F]` (bench/harness/bench.cpp):
// the one-shot pairs of a user's box file timed with every method; the pair
// counts agree between methods and with brute force; bad files and flags are
// clear `hhg:` errors with status 2; the new scenarios (log-uniform, terdiman)
// run in `hhg run` and `hhg bench`; steady and peak bytes per object are
// reported side by side.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli_support.hpp"
#include "hhg/brute_force.hpp"
#include "hhg/scenes.hpp"

namespace {

namespace fs = std::filesystem;
using hhg_cli_test::cli_result;
using hhg_cli_test::contains;
using hhg_cli_test::quote;

class cli_bench_boxes : public hhg_cli_test::cli_fixture {
 protected:
  cli_bench_boxes() : cli_fixture("hhg_cli_bench_boxes_") {}
  cli_result run(const std::string& args) { return run_tool(args, "/dev/null", "timeout 300 "); }

  /// A box file of a zoo scene (touching boxes, points, duplicates...) and its brute-force pair count.
  template <int D>
  std::pair<fs::path, std::size_t> zoo_file(hhg::scenes::zoo z, std::size_t n, const std::string& name) {
    const auto boxes = hhg::scenes::make_zoo_scene<D, double>(z, n, 7);
    std::ostringstream s;
    s.precision(17);
    s << "# dim " << D << "\n";
    hhg::brute_force<D, double> bf;
    for (const auto& b : boxes) {
      for (int k = 0; k < D; ++k) s << b.min[k] << ' ';
      for (int k = 0; k < D; ++k) s << b.max[k] << (k + 1 < D ? ' ' : '\n');
      bf.insert(b);
    }
    std::vector<hhg::handle_pair> pairs;
    bf.find_pairs(pairs);
    return {write(name, s.str()), pairs.size()};
  }

  nlohmann::json json_of(const fs::path& p) {
    std::ifstream f(p);
    return nlohmann::json::parse(f);
  }
};

TEST_F(cli_bench_boxes, OneShotPairsAgreeAcrossEveryMethodAndWithBruteForce) {
  for (const auto z : {hhg::scenes::zoo::touching, hhg::scenes::zoo::mixed}) {
    const auto [file3, want3] = zoo_file<3>(z, 400, "boxes3.txt");
    const fs::path json = dir_ / "out.json";
    cli_result r = run("bench --boxes " + quote(file3) + " --json " + quote(json));
    ASSERT_EQ(r.status, 0) << r.err << r.out;
    EXPECT_TRUE(contains(r.out, "one-shot ms")) << r.out;
    const nlohmann::json j = json_of(json);
    ASSERT_EQ(j.size(), 1u);
    EXPECT_EQ(j[0]["n"], 400);
    EXPECT_EQ(j[0]["steps"], 0);
    EXPECT_EQ(j[0]["scenario"], "file:boxes3.txt");
    std::set<std::string> methods;
    for (const auto& row : j[0]["results"]) {
      methods.insert(row["method"].get<std::string>());
      EXPECT_EQ(row["note"], "") << row["method"];
      EXPECT_EQ(row["pairs"].get<double>(), static_cast<double>(want3)) << row["method"];
      ASSERT_EQ(row["pairs_per_step"].size(), 1u);
      EXPECT_GT(row["setup_ms"].get<double>(), 0.0);
      EXPECT_TRUE(row["peak_bytes_per_object"].is_number());
    }
    for (const char* m : {"hhg", "brute", "grid", "sap", "kdtree", "pivot"}) EXPECT_TRUE(methods.count(m)) << m;
  }
  // 2D, from the '# dim 2' header
  const auto [file2, want2] = zoo_file<2>(hhg::scenes::zoo::zero_size, 300, "boxes2.txt");
  const fs::path json = dir_ / "out2.json";
  cli_result r = run("bench --boxes " + quote(file2) + " --methods hhg,grid,brute --json " + quote(json));
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  const auto runs = json_of(json);  // (kept: a range-for over a temporary's element would dangle)
  for (const auto& row : runs[0]["results"])
    EXPECT_EQ(row["pairs"].get<double>(), static_cast<double>(want2)) << row["method"];
}

TEST_F(cli_bench_boxes, ReplayedMotionStepsAgreeAcrossMethods) {
  const auto [file, want] = zoo_file<3>(hhg::scenes::zoo::varied12, 500, "boxes.txt");
  const fs::path json = dir_ / "out.json", csv = dir_ / "out.csv";
  cli_result r = run("bench --boxes " + quote(file) + " --steps 4 --motion 0.5 --methods hhg,grid,sap,brute --json " +
                     quote(json) + " --csv " + quote(csv));
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  const nlohmann::json j = json_of(json);
  EXPECT_EQ(j[0]["motion"], 0.5);
  std::string counts;
  for (const auto& row : j[0]["results"]) {
    ASSERT_EQ(row["pairs_per_step"].size(), 5u) << "the one-shot count, then 4 steps";
    EXPECT_EQ(row["pairs_per_step"][0].get<std::size_t>(), want);
    if (counts.empty()) counts = row["pairs_per_step"].dump();
    EXPECT_EQ(row["pairs_per_step"].dump(), counts) << row["method"];
    EXPECT_GT(row["step_ms_median"].get<double>(), 0.0);
  }
  // the pairs change as the boxes move (the motion is real)
  const auto& steps = j[0]["results"][0]["pairs_per_step"];
  EXPECT_NE(steps[0], steps[4]);
}

TEST_F(cli_bench_boxes, BadFilesAndFlagsAreClearErrors) {
  const fs::path bad = write("bad.txt", "0 0 0 1 1 1\n0 0 0 1 nan 1\n");
  cli_result r = run("bench --boxes " + quote(bad));
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "hhg: line 2:")) << r.err;
  EXPECT_TRUE(r.out.empty()) << "nothing timed: " << r.out;

  const fs::path inverted = write("inverted.txt", "0 0 0 1 1 1\n2 0 0 1 1 1\n");
  r = run("bench --boxes " + quote(inverted));
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "hhg: line 2:")) << r.err;

  const fs::path short_line = write("short.txt", "0 0 0 1 1\n");
  r = run("bench --boxes " + quote(short_line));
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "hhg: line 1: expected 6 numbers, found 5")) << r.err;

  r = run("bench --boxes " + quote(dir_ / "missing.txt"));
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err.rfind("hhg: ", 0), 0u) << r.err;

  const fs::path empty = write("empty.txt", "# dim 3\n# nothing\n");
  r = run("bench --boxes " + quote(empty));
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "holds no box")) << r.err;

  const fs::path good = write("good.txt", "0 0 0 1 1 1\n0.5 0.5 0.5 2 2 2\n");
  for (const char* flags : {"--scenario equal", "--n 100", "--quick", "--motion -1", "--motion nan"}) {
    r = run("bench --boxes " + quote(good) + " " + flags);
    EXPECT_EQ(r.status, 2) << flags;
    EXPECT_EQ(r.err.rfind("hhg: ", 0), 0u) << flags << ": " << r.err;
  }
  r = run("bench --motion 0.1 --scenario equal --n 10 --steps 1");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "--motion applies to --boxes only")) << r.err;
  // the good file runs
  r = run("bench --boxes " + quote(good) + " --methods hhg,grid");
  EXPECT_EQ(r.status, 0) << r.err;
}

TEST_F(cli_bench_boxes, NewScenariosRunAndMemoryIsReportedSideBySide) {
  const fs::path json = dir_ / "run.json";
  cli_result r = run("run --scenario log-uniform --n 3000 --steps 3 --check -q --threads 1 --json " + quote(json));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "memory:          steady ")) << r.out;
  EXPECT_TRUE(contains(r.out, "bytes per object, peak ")) << r.out;
  const nlohmann::json j = json_of(json);
  EXPECT_GT(j["bytes_per_object"].get<double>(), 0.0);
  EXPECT_TRUE(j["peak_bytes_per_object"].is_number());
  EXPECT_GE(j["peak_bytes"].get<long long>(), 0);
  // the caller's handles (8 bytes each) and its largest pairs output (16 each)
  // are counted apart: the own peak is the rise without them
  EXPECT_TRUE(contains(r.out, "own peak:")) << r.out;
  EXPECT_GE(j["caller_bytes"].get<long long>(),
            static_cast<long long>(3000 * 8 + 16 * j["pairs_median"].get<double>()));
  const double rise = j["peak_bytes_per_object"].get<double>(), own = j["own_peak_bytes_per_object"].get<double>();
  EXPECT_NEAR(own, std::max(0.0, rise - static_cast<double>(j["caller_bytes"].get<long long>()) / 3000.0), 0.01);

  r = run("run --scenario terdiman --n 2000 --steps 2 --check -q --threads 1");
  ASSERT_EQ(r.status, 0) << r.err;

  const fs::path bjson = dir_ / "bench.json";
  r = run("bench --scenario log-uniform,terdiman --methods hhg,grid,brute --n 1500 --steps 2 --json " + quote(bjson));
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  EXPECT_TRUE(contains(r.out, "peak B/obj")) << r.out;
  const nlohmann::json b = json_of(bjson);
  ASSERT_EQ(b.size(), 2u);
  for (const auto& run : b)
    for (const auto& row : run["results"]) {
      EXPECT_EQ(row["note"], "") << run["scenario"] << " " << row["method"];
      EXPECT_TRUE(row["bytes_per_object"].is_number()) << row["method"];
      EXPECT_GE(row["caller_bytes"].get<long long>(), 1500 * 8) << row["method"];  // the handles at least
      EXPECT_LE(row["own_peak_bytes_per_object"].get<double>(), row["peak_bytes_per_object"].get<double>());
    }
}

}  // namespace
