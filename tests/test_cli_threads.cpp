// `hhg neighbors --threads N`: the cell list runs on N threads (its parallel
// sort, walk and transposition start at 2^16 points) and prints the same
// bytes for every N; the lists are the brute-force ones on a small set.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "cli_support.hpp"
#include "hhg/neighbors.hpp"
#include "hhg/scenes.hpp"

namespace {

class CliThreads : public hhg_cli_test::cli_fixture {
 protected:
  CliThreads() : cli_fixture("hhg_cli_threads_") {}
};

std::string points_text(const std::vector<std::array<double, 3>>& pts) {
  std::string s;
  char buf[96];
  for (const auto& p : pts) {
    std::snprintf(buf, sizeof buf, "%.17g %.17g %.17g\n", p[0], p[1], p[2]);
    s += buf;
  }
  return s;
}

std::vector<std::array<double, 3>> random_points(std::size_t n, double edge, std::uint64_t seed) {
  hhg::scenes::rng g(seed);
  std::vector<std::array<double, 3>> pts(n);
  for (auto& p : pts)
    for (double& v : p) v = g.uniform(-edge, edge);
  return pts;
}

TEST_F(CliThreads, NeighborsSameBytesForEveryThreadCount) {
  // above the parallel thresholds of cell_list
  const auto pts = random_points(70000, 22, 5);
  const auto in = write("points.txt", points_text(pts));
  for (const std::string flags : {"", " --distances --format csv", " --count --format json"}) {
    const auto one = run_tool("neighbors --radius 1" + flags + " --threads 1", in);
    ASSERT_EQ(one.status, 0) << one.err;
    EXPECT_GT(one.out.size(), pts.size());
    for (const int t : {2, 3}) {
      const auto many = run_tool("neighbors --radius 1" + flags + " --threads " + std::to_string(t), in);
      ASSERT_EQ(many.status, 0) << many.err;
      EXPECT_TRUE(many.out == one.out) << "--threads " << t << flags << ": output differs";
    }
  }
}

TEST_F(CliThreads, NeighborsEqualBruteForce) {
  const auto pts = random_points(600, 4, 6);
  std::string want;
  for (std::size_t i = 0; i < pts.size(); ++i) {
    std::string line;
    for (std::size_t j = 0; j < pts.size(); ++j)
      if (j != i && hhg::within(pts[i], pts[j], 1.0)) {
        if (!line.empty()) line += ' ';
        line += std::to_string(j);
      }
    want += line + "\n";
  }
  const auto in = write("points.txt", points_text(pts));
  for (const int t : {1, 2, 8}) {
    const auto r = run_tool("neighbors --radius 1 --threads " + std::to_string(t), in);
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out, want) << "--threads " << t;
  }
}

}  // namespace
