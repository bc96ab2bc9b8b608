// The named scenarios added for the benchmark (scenes/scenes.cpp): `log-uniform`
// (sizes log-uniform over three decades at the thesis density) and `terdiman`
// (P. Terdiman's box-pruning data): the sizes, positions and pair counts they
// promise, determinism, and the parameters they rest on.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "hhg/hash_grids.hpp"
#include "hhg/scenes.hpp"

namespace {

using hhg::scenes::thesis_params;
using hhg::scenes::thesis_scenario;

template <int D, class T>
double pairs_per_object(const std::vector<hhg::box<D, T>>& boxes) {
  hhg::hash_grids<D, T> g;
  for (const auto& b : boxes) g.insert(b);
  std::vector<hhg::handle_pair> pairs;
  g.find_pairs(pairs);
  return static_cast<double>(pairs.size()) / static_cast<double>(boxes.size());
}

TEST(ScenesNamed, TableHasTheNewScenarios) {
  const auto names = hhg::scenes::named_scenario_names();
  for (const char* n : {"log-uniform", "terdiman"})
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  const thesis_params lu = hhg::scenes::named_scenario_params("log-uniform", 123, 9);
  EXPECT_EQ(lu.n, 123u);
  EXPECT_EQ(lu.seed, 9u);
  EXPECT_TRUE(lu.log_uniform_sizes);
  EXPECT_EQ(lu.size_min, 1);
  EXPECT_EQ(lu.size_max, 1000);
  const thesis_params t = hhg::scenes::named_scenario_params("terdiman", 10, 1);
  EXPECT_EQ(t.fixed_domain_edge, 4096);
  EXPECT_TRUE(t.per_axis_sizes && t.centred);
  EXPECT_THROW(hhg::scenes::find_named_scenario("log_uniform"), std::invalid_argument);
}

TEST(ScenesNamed, LogUniformSizesOverThreeDecadesAtModerateDensity) {
  const thesis_params p = hhg::scenes::named_scenario_params("log-uniform", 20000, 3);
  const thesis_scenario<3, double> s(p);
  std::array<int, 3> decade{};
  for (const auto& b : s.boxes()) {
    const double size = b.max[1] - b.min[1];
    ASSERT_GE(size, 1 - 1e-9);
    ASSERT_LE(size, 1000 * (1 + 1e-9));
    EXPECT_NEAR(b.max[0] - b.min[0], size, 1e-9 * size);  // cubes
    EXPECT_NEAR(b.max[2] - b.min[2], size, 1e-9 * size);
    ++decade[static_cast<std::size_t>(std::min(2.0, std::floor(std::log10(size))))];
  }
  for (const int c : decade) {  // a third of the objects in each decade
    EXPECT_GT(c, 20000 * 0.30);
    EXPECT_LT(c, 20000 * 0.37);
  }
  // the density rule uses the log-uniform moments: about 2 pairs per object
  // (fewer: pairs across the periodic boundary are not counted, and large
  // objects often straddle it)
  const double ppo = pairs_per_object(s.boxes());
  EXPECT_GT(ppo, 1.2);
  EXPECT_LT(ppo, 2.3);
  // deterministic, and a different seed differs
  const thesis_scenario<3, double> same(p);
  EXPECT_EQ(s.boxes(), same.boxes());
  thesis_params q = p;
  q.seed = 4;
  EXPECT_NE((thesis_scenario<3, double>(q).boxes()), s.boxes());
  // it moves and keeps its sizes, 2D float too
  thesis_scenario<2, float> flat(hhg::scenes::named_scenario_params("log-uniform", 2000, 5));
  const auto before = flat.boxes();
  flat.step();
  EXPECT_NE(flat.boxes(), before);
  for (std::size_t i = 0; i < before.size(); ++i)
    EXPECT_NEAR(flat.boxes()[i].max[1] - flat.boxes()[i].min[1], before[i].max[1] - before[i].min[1],
                1e-3f * (before[i].max[1] - before[i].min[1]) + 1e-3f);
}

TEST(ScenesNamed, TerdimanDataCentresInTheCubeHalfExtentsUpTo127) {
  for (const std::size_t n : {10000u, 30000u}) {
    const thesis_scenario<3, double> s(hhg::scenes::named_scenario_params("terdiman", n, 1));
    ASSERT_EQ(s.boxes().size(), n);
    std::array<double, 3> longest{};
    for (const auto& b : s.boxes()) {
      for (int k = 0; k < 3; ++k) {
        const double half = (b.max[k] - b.min[k]) / 2, centre = (b.max[k] + b.min[k]) / 2;
        ASSERT_GE(half, 0);
        ASSERT_LE(half, 127 * (1 + 1e-12));
        ASSERT_GE(centre, -1e-9);
        ASSERT_LT(centre, 4096 + 1e-9);
        longest[static_cast<std::size_t>(k)] = std::max(longest[static_cast<std::size_t>(k)], half);
      }
    }
    for (const double h : longest) EXPECT_GT(h, 120);  // per axis, independently
    // Terdiman's figures: about 1.2 pairs per box at 10^4; the count grows with n (fixed cube)
    const double ppo = pairs_per_object(s.boxes());
    const double expected = 1.19 * static_cast<double>(n) / 10000;
    EXPECT_GT(ppo, 0.85 * expected) << n;
    EXPECT_LT(ppo, 1.15 * expected) << n;
  }
}

TEST(ScenesNamed, ZeroMinimumSizeOnlyWithPerAxisSizesInAFixedDomain) {
  thesis_params p;
  p.n = 50;
  p.size_min = 0;
  p.size_max = 2;
  EXPECT_THROW((thesis_scenario<3, double>(p)), std::invalid_argument);
  p.per_axis_sizes = true;
  EXPECT_THROW((thesis_scenario<3, double>(p)), std::invalid_argument) << "the density rule needs sizes > 0";
  p.fixed_domain_edge = 10;
  EXPECT_NO_THROW((thesis_scenario<3, double>(p)));
  p.fixed_domain_edge = -1;
  EXPECT_THROW((thesis_scenario<3, double>(p)), std::invalid_argument);
  thesis_params lu;
  lu.log_uniform_sizes = true;
  lu.size_min = 0;
  lu.fixed_domain_edge = 10;
  lu.per_axis_sizes = true;
  EXPECT_THROW((thesis_scenario<3, double>(lu)), std::invalid_argument) << "log-uniform needs size_min > 0";
}

}  // namespace
