// The ladder of levels a batch chooses (config::adaptive_factor,
// src/hash_grids/levels.hpp): a batch that activates the grids may space the
// levels its sizes span hierarchy_factor times a power of two apart. Every
// case is compared with brute force (hhg::brute_force through all_pairs), in
// 2D and 3D, float and double: sizes over three decades share fewer levels,
// in a batch of a few hundred as in a large one; small objects that would
// crowd large cells keep their own level; sizes outside the batch's range, a
// cleared structure and adaptive_factor = false keep the configured factor;
// the zoo stays exact under motion. The estimate counts the shared cells
// only of the ladders that can still win, and chooses as if it counted all.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "hash_grids/levels.hpp"
#include "hhg/broad_phase.hpp"
#include "hhg/brute_force.hpp"
#include "hhg/executor.hpp"
#include "hhg/hash_grids.hpp"
#include "hhg/scenes.hpp"
#include "support.hpp"

namespace {

using hhg_test::as_indices;
using hhg_test::brute_pairs;

using hhg::handle;
using hhg::handle_pair;

template <class M>
class AdaptiveFactor : public ::testing::Test {};
using level_types = ::testing::Types<HHG_TEST_VARIANTS(hhg::hash_grids)>;
TYPED_TEST_SUITE(AdaptiveFactor, level_types);

// The bulk paths at test sizes (as at 10^6).
hhg::detail::tuning bulk_always() {
  hhg::detail::tuning t;
  t.bulk_min = 64;
  return t;
}

// A cube of the given edge, its min corner uniform in [lo, hi) per axis.
template <class B>
B random_cube(hhg::scenes::rng& r, double lo, double hi, double edge) {
  B b;
  for (int a = 0; a < B::dimension; ++a) {
    const double x = r.uniform(lo, hi);
    b.min[a] = static_cast<typename B::scalar>(x);
    b.max[a] = static_cast<typename B::scalar>(x + edge);
  }
  return b;
}

// The cell sizes of the levels, finest first.
template <class M>
std::vector<double> cell_sizes(const M& m) {
  std::vector<double> out;
  for (const auto& g : m.stats().grids) out.push_back(g.cell_size);
  return out;
}

// Sizes log-uniform over 1..1000 (the benchmark's `log-uniform` scene):
// fewer levels than with the factor fixed, the same pairs, through three
// steps of motion (batch moves and detections).
TYPED_TEST(AdaptiveFactor, LogUniformSizesShareFewerLevelsExactly) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  using B = hhg::box<D, T>;
  hhg::scenes::thesis_scenario<D, T> scene(hhg::scenes::named_scenario_params("log-uniform", 5000, 3));
  hhg::config fixed_cfg;
  fixed_cfg.adaptive_factor = false;
  TypeParam adaptive, fixed(fixed_cfg);
  adaptive.set_tuning(bulk_always());
  fixed.set_tuning(bulk_always());
  const auto want = brute_pairs<TypeParam>(std::span<const B>(scene.boxes()));
  ASSERT_FALSE(want.empty());
  EXPECT_EQ(hhg::all_pairs(adaptive, std::span<const B>(scene.boxes())), want);
  EXPECT_EQ(hhg::all_pairs(fixed, std::span<const B>(scene.boxes())), want);
  EXPECT_EQ(adaptive.path_counts().ladders_estimated, 1u);
  EXPECT_EQ(fixed.path_counts().ladders_estimated, 0u);
  EXPECT_LT(adaptive.stats().grids.size(), fixed.stats().grids.size());
  EXPECT_NO_THROW(adaptive.validate());
  adaptive.clear();
  const std::vector<handle> hs = adaptive.insert(std::span<const B>(scene.boxes()));
  for (int step = 0; step < 3; ++step) {
    scene.step();
    adaptive.move(std::span<const handle>(hs), std::span<const B>(scene.boxes()));
    std::vector<handle_pair> found;
    adaptive.find_pairs(found);
    EXPECT_EQ(as_indices(found, hs), brute_pairs<TypeParam>(std::span<const B>(scene.boxes()))) << "step " << step;
    EXPECT_NO_THROW(adaptive.validate());
  }
  EXPECT_EQ(adaptive.path_counts().ladders_estimated, 2u);
}

// Unit cubes packed densely, and a few cubes 60 times larger: one level
// would put every small cube into a few large cells, so the estimate keeps
// a fine level for them (cells of a few units), and the pairs are exact.
TYPED_TEST(AdaptiveFactor, CrowdedSmallObjectsKeepTheirOwnLevel) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  using B = hhg::box<D, T>;
  hhg::scenes::rng r(17);
  std::vector<B> bs;
  const double edge = D == 3 ? 20 : 80;  // about 0.75 unit cubes per unit of volume
  for (int i = 0; i < 6000; ++i) bs.push_back(random_cube<B>(r, 0, edge, 1));
  for (int i = 0; i < 40; ++i) bs.push_back(random_cube<B>(r, 0, edge, 60));
  TypeParam m;
  m.set_tuning(bulk_always());
  EXPECT_EQ(hhg::all_pairs(m, std::span<const B>(bs)), brute_pairs<TypeParam>(std::span<const B>(bs)));
  EXPECT_EQ(m.path_counts().ladders_estimated, 1u);
  const std::vector<double> cells = cell_sizes(m);
  ASSERT_GE(cells.size(), 2u);
  EXPECT_LT(cells.front(), 6.0);  // the unit cubes in cells of a few units, not 60
  EXPECT_NO_THROW(m.validate());
}

// After a batch that chose a wider ladder, objects far smaller than the
// batch's get levels hierarchy_factor apart below it; the pairs stay exact.
// A cleared structure and adaptive_factor = false keep the configured
// factor everywhere.
TYPED_TEST(AdaptiveFactor, OutsideTheBatchClearedOrOffKeepTheFactor) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  using B = hhg::box<D, T>;
  hhg::scenes::thesis_scenario<D, T> scene(hhg::scenes::named_scenario_params("log-uniform", 4000, 5));
  std::vector<B> bs = scene.boxes();
  const double f = hhg::config{}.hierarchy_factor;
  auto ratios = [](const std::vector<double>& cells) {
    std::vector<double> out;
    for (std::size_t i = 1; i < cells.size(); ++i) out.push_back(cells[i] / cells[i - 1]);
    return out;
  };
  auto near = [](double a, double b) { return std::fabs(a / b - 1) < 1e-9; };
  {
    TypeParam m;
    m.set_tuning(bulk_always());
    std::vector<handle> hs = m.insert(std::span<const B>(bs));
    const std::vector<double> batch_cells = cell_sizes(m);
    bool wider = false;
    for (double q : ratios(batch_cells)) {
      const double k = std::log2(q / f);
      EXPECT_TRUE(near(std::exp2(std::round(k)), q / f)) << q;  // f times a power of two
      wider = wider || q > f * 1.5;
    }
    EXPECT_TRUE(wider || batch_cells.size() == 1);
    hhg::scenes::rng r(3);
    const double lo = scene.boxes()[0].min[0];
    for (int i = 0; i < 300; ++i) {  // 1e-3 .. 1e-2: several levels below the batch's
      B b;
      const double s = std::pow(10.0, r.uniform(-3, -2));
      for (int a = 0; a < D; ++a) {
        const double x = lo + r.uniform(0, 2);
        b.min[a] = static_cast<T>(x);
        b.max[a] = static_cast<T>(x + s);
      }
      bs.push_back(b);
      hs.push_back(m.insert(b));
    }
    const std::vector<double> cells = cell_sizes(m);
    ASSERT_GE(cells.size(), batch_cells.size() + 2);
    const std::vector<double> q = ratios(cells);
    for (std::size_t i = 0; i + batch_cells.size() < cells.size() - 1; ++i) EXPECT_TRUE(near(q[i], f)) << q[i];
    std::vector<handle_pair> found;
    m.find_pairs(found);
    EXPECT_EQ(as_indices(found, hs), brute_pairs<TypeParam>(std::span<const B>(bs)));
    EXPECT_NO_THROW(m.validate());
    // cleared: one by one, the configured factor
    m.clear();
    for (const B& b : scene.boxes()) m.insert(b);
    for (double x : ratios(cell_sizes(m))) EXPECT_TRUE(near(x, f)) << x;
  }
  hhg::config off;
  off.adaptive_factor = false;
  TypeParam m(off);
  m.set_tuning(bulk_always());
  EXPECT_EQ(hhg::all_pairs(m, std::span<const B>(scene.boxes())),
            brute_pairs<TypeParam>(std::span<const B>(scene.boxes())));
  EXPECT_EQ(m.path_counts().ladders_estimated, 0u);
  ASSERT_GE(cell_sizes(m).size(), 2u);
  for (double x : ratios(cell_sizes(m))) EXPECT_TRUE(near(x, f)) << x;
}

// With the default tuning, a batch of a few hundred objects (and one just
// past activation_threshold) estimates its ladder as a large one does:
// log-uniform sizes share fewer levels than with the factor fixed, and the
// pairs are exact.
TYPED_TEST(AdaptiveFactor, SmallBatchesEstimateTheirLadder) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  using B = hhg::box<D, T>;
  for (const std::size_t n : {std::size_t{hhg::config{}.activation_threshold + 8}, std::size_t{400}}) {
    SCOPED_TRACE(n);
    hhg::scenes::thesis_scenario<D, T> scene(hhg::scenes::named_scenario_params("log-uniform", n, 11));
    hhg::config fixed_cfg;
    fixed_cfg.adaptive_factor = false;
    TypeParam adaptive, fixed(fixed_cfg);
    const auto want = brute_pairs<TypeParam>(std::span<const B>(scene.boxes()));
    EXPECT_EQ(hhg::all_pairs(adaptive, std::span<const B>(scene.boxes())), want);
    EXPECT_EQ(hhg::all_pairs(fixed, std::span<const B>(scene.boxes())), want);
    EXPECT_EQ(adaptive.path_counts().ladders_estimated, 1u);
    EXPECT_LT(adaptive.stats().grids.size(), fixed.stats().grids.size());
    EXPECT_NO_THROW(adaptive.validate());
  }
}

// The estimate itself (levels.hpp): every factor f0 * 2^k up to one level
// is listed; a ladder whose shared cells were not counted (cell_pairs
// +inf) costs, without them, at least the cheapest counted one, so
// factor_for's choice is the one counting every ladder would make. On
// log-uniform sizes only the one-level ladder is counted; on small cubes
// crowded around large ones the finer ladders are counted too.
// Tiny cubes far apart (the benchmark's `sparse`: unit cubes some 16 units
// apart): the batch's level gets cells a power of two larger than its
// objects (levels.hpp, spread_for), so that a cell holds a few of them
// instead of one; the pairs stay exact through three steps of motion.
TYPED_TEST(AdaptiveFactor, ObjectsFarApartGetLargerCells) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  using B = hhg::box<D, T>;
  hhg::scenes::rng r(29);
  const int n = 4000;
  const double edge = 16 * std::pow(static_cast<double>(n), 1.0 / D);  // 16 units between neighbours
  std::vector<B> bs;
  for (int i = 0; i < n; ++i) bs.push_back(random_cube<B>(r, -edge / 2, edge / 2, i % 7 == 0 ? 0.25 : 1.0));
  // a few pairs: cubes placed on others
  for (int i = 0; i < 200; i += 10) {
    B b = bs[static_cast<std::size_t>(i)];
    for (int a = 0; a < D; ++a) b.min[a] = static_cast<T>(b.min[a] + T(0.5)), b.max[a] = static_cast<T>(b.min[a] + 1);
    bs.push_back(b);
  }
  TypeParam m;
  m.set_tuning(bulk_always());
  const auto want = brute_pairs<TypeParam>(std::span<const B>(bs));
  ASSERT_GE(want.size(), 15u);
  EXPECT_EQ(hhg::all_pairs(m, std::span<const B>(bs)), want);
  EXPECT_EQ(m.path_counts().levels_spread, 1u);
  const std::vector<double> cells = cell_sizes(m);
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_GT(cells.front(), 8.0);  // (without the spread: 1.41)
  EXPECT_LT(cells.front(), 64.0);
  EXPECT_NO_THROW(m.validate());
  // under motion, on one worker and on two: the same pairs in the same order
  TypeParam m1, m2;
  m1.set_tuning(bulk_always());
  m2.set_tuning(bulk_always());
  hhg::thread_pool pool(2);
  m2.set_executor(&pool);
  const std::vector<handle> hs = m1.insert(std::span<const B>(bs));
  const std::vector<handle> hs2 = m2.insert(std::span<const B>(bs));
  ASSERT_EQ(hs, hs2);
  EXPECT_EQ(m1.path_counts().levels_spread, 1u);
  EXPECT_EQ(m2.path_counts().levels_spread, 1u);
  hhg::scenes::rng motion(5);
  for (int step = 0; step < 3; ++step) {
    for (B& b : bs)
      for (int a = 0; a < D; ++a) {
        const T d = static_cast<T>(motion.uniform(-3, 3));
        b.min[a] = static_cast<T>(b.min[a] + d);
        b.max[a] = static_cast<T>(b.max[a] + d);
      }
    m1.move(std::span<const handle>(hs), std::span<const B>(bs));
    m2.move(std::span<const handle>(hs2), std::span<const B>(bs));
    std::vector<handle_pair> found, found2;
    m1.find_pairs(found);
    m2.find_pairs(found2);
    EXPECT_EQ(as_indices(found, hs), brute_pairs<TypeParam>(std::span<const B>(bs))) << "step " << step;
    EXPECT_EQ(found, found2) << "step " << step;
    EXPECT_NO_THROW(m1.validate());
    EXPECT_NO_THROW(m2.validate());
  }
  EXPECT_EQ(m1.path_counts().spread_checks, 3u);  // (still far apart: the cells stay)
  EXPECT_EQ(m1.path_counts().spread_undone, 0u);
  EXPECT_EQ(cell_sizes(m1), cells);
}

// Objects far apart that then come together (particles settling into a
// pile): the larger cells of the spread would crowd, so the first detection
// that finds them crowded builds the grids again with cells of the objects'
// size, for good; the pairs stay exact before, at and after it.
TYPED_TEST(AdaptiveFactor, ObjectsThatComeTogetherGetCellsOfTheirSize) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  using B = hhg::box<D, T>;
  hhg::scenes::rng r(37);
  const int n = 3000;
  const double side = std::pow(static_cast<double>(n), 1.0 / D);  // (16 units apart, then 1.3)
  std::vector<B> apart, pile;
  for (int i = 0; i < n; ++i) apart.push_back(random_cube<B>(r, 0, 16 * side, 1));
  for (int i = 0; i < n; ++i) pile.push_back(random_cube<B>(r, 0, 1.3 * side, 1));
  TypeParam m;
  m.set_tuning(bulk_always());
  const std::vector<handle> hs = m.insert(std::span<const B>(apart));
  ASSERT_EQ(m.path_counts().levels_spread, 1u);
  std::vector<handle_pair> found;
  m.find_pairs(found);
  EXPECT_EQ(as_indices(found, hs), brute_pairs<TypeParam>(std::span<const B>(apart)));
  EXPECT_GT(cell_sizes(m).front(), 8.0);
  m.move(std::span<const handle>(hs), std::span<const B>(pile));
  for (int step = 0; step < 2; ++step) {
    m.find_pairs(found);
    EXPECT_EQ(as_indices(found, hs), brute_pairs<TypeParam>(std::span<const B>(pile))) << "step " << step;
    EXPECT_NO_THROW(m.validate());
  }
  EXPECT_EQ(m.path_counts().spread_undone, 1u);
  EXPECT_EQ(m.path_counts().spread_checks, 2u);  // (none after the cells are the objects' size again)
  const std::vector<double> cells = cell_sizes(m);
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_LT(cells.front(), 2.0);
  EXPECT_LT(m.stats().box_tests, 40u * static_cast<std::uint64_t>(n));  // (in the crowded cells: ~n^2 / 100)
}

// What the spread must not enlarge: cubes packed densely (the benchmark's
// `equal`: 1.4 others a cell already), and tiny cubes packed as densely in
// two clusters far apart, whose bounding box is nearly empty (the estimate
// counts objects that share cells, not the volume they span).
TYPED_TEST(AdaptiveFactor, DenseObjectsAndDenseClustersKeepTheirCells) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  using B = hhg::box<D, T>;
  for (const bool clusters : {false, true}) {
    hhg::scenes::rng r(31);
    const int n = 4000;
    const double edge = 1.3 * std::pow(static_cast<double>(n / (clusters ? 2 : 1)), 1.0 / D);
    std::vector<B> bs;
    for (int i = 0; i < n; ++i) {
      const double shift = clusters && i % 2 == 1 ? 1e5 : 0;
      bs.push_back(random_cube<B>(r, shift, shift + edge, 1));
    }
    TypeParam m;
    m.set_tuning(bulk_always());
    EXPECT_EQ(hhg::all_pairs(m, std::span<const B>(bs)), brute_pairs<TypeParam>(std::span<const B>(bs)));
    EXPECT_EQ(m.path_counts().levels_spread, 0u) << "clusters " << clusters;
    const std::vector<double> cells = cell_sizes(m);
    ASSERT_EQ(cells.size(), 1u);
    EXPECT_LT(cells.front(), 2.0) << "clusters " << clusters;  // 1.41
  }
}

TEST(LevelChoice, CountsOnlyTheLaddersThatCanWin) {
  using L = hhg::detail::level_choice<3, double>;
  using B = hhg::box<3, double>;
  auto check = [](const std::vector<B>& bs, std::size_t want_counted_min, std::size_t want_counted_max) {
    SCOPED_TRACE(bs.size());
    std::vector<double> effs;
    for (const B& b : bs) effs.push_back(hhg::detail::grid_types<3, double>::effective_size(b, L::types::unit_scale()));
    const double f0 = hhg::config{}.hierarchy_factor;
    const double c0 = L::anchor_cell(f0, bs, effs, L::types::unit_scale());
    ASSERT_GT(c0, 0);
    const std::vector<L::estimate> es = L::estimates(f0, c0, bs, effs, L::types::unit_scale());
    ASSERT_GE(es.size(), 2u);
    EXPECT_TRUE(es.back().levels == 1 || es.size() == static_cast<std::size_t>(L::kLadders));
    double least = std::numeric_limits<double>::infinity(), factor = 0;
    std::size_t counted = 0;
    for (std::size_t i = 0; i < es.size(); ++i) {
      EXPECT_DOUBLE_EQ(es[i].factor, f0 * std::exp2(static_cast<double>(i)));
      if (std::isfinite(es[i].cell_pairs)) {
        ++counted;
        if (es[i].cost() < least) {
          least = es[i].cost();
          factor = es[i].factor;
        }
      }
    }
    for (const L::estimate& e : es) {
      if (std::isfinite(e.cell_pairs)) continue;
      EXPECT_GE(L::kAcrossCost * e.across + L::kLevelCost * (e.nonempty - 1), least);
    }
    EXPECT_GE(counted, want_counted_min);
    EXPECT_LE(counted, want_counted_max);
    EXPECT_EQ(L::factor_for(f0, c0, bs, effs, L::types::unit_scale()).factor, factor);
  };
  hhg::scenes::thesis_scenario<3, double> scene(hhg::scenes::named_scenario_params("log-uniform", 3000, 2));
  check(scene.boxes(), 1, 1);
  hhg::scenes::rng r(5);
  // count cubes of edge `edge`, lower corners uniform in [0, span * edge) per axis, appended to bs
  auto cubes = [&r](std::vector<B>& bs, int count, double span, double edge) {
    for (int i = 0; i < count; ++i) {
      B b;
      for (int a = 0; a < 3; ++a) {
        b.min[a] = r.uniform(0, span) * edge;
        b.max[a] = b.min[a] + edge;
      }
      bs.push_back(b);
    }
  };
  std::vector<B> crowded;
  cubes(crowded, 6000, 20, 1);  // unit cubes, densely
  cubes(crowded, 40, 1.0 / 3, 60);
  check(crowded, 2, 64);
  // Tiny boxes crowded near the origin and a few huge ones, sizes 2^-880 and
  // 2^880: no factor a double holds puts them in one level, so the ladders
  // stop at kLadders; the counted ones include ladders whose finest cell
  // is below what a double holds in units of the anchor (f^(levels-1)
  // overflows), and the batch's pairs are exact.
  std::vector<B> extreme;
  cubes(extreme, 3000, 30, std::ldexp(1.0, -880));
  cubes(extreme, 20, 3, std::ldexp(1.0, 880));
  check(extreme, 2, L::kLadders);
  {
    std::vector<double> effs;
    for (const B& b : extreme)
      effs.push_back(hhg::detail::grid_types<3, double>::effective_size(b, L::types::unit_scale()));
    const double f0 = hhg::config{}.hierarchy_factor;
    const std::vector<L::estimate> es = L::estimates(f0, L::anchor_cell(f0, extreme, effs, L::types::unit_scale()),
                                                     extreme, effs, L::types::unit_scale());
    EXPECT_EQ(es.size(), static_cast<std::size_t>(L::kLadders));
    bool overflowed = false;
    for (const L::estimate& e : es)
      overflowed = overflowed || (std::isfinite(e.cell_pairs) && std::isinf(std::pow(e.factor, e.levels - 1)));
    EXPECT_TRUE(overflowed);
  }
  using M = hhg::hash_grids<3, double>;
  M m;
  const auto want = brute_pairs<M>(std::span<const B>(extreme));
  EXPECT_EQ(hhg::all_pairs(m, std::span<const B>(extreme)), want);
  EXPECT_EQ(m.path_counts().ladders_estimated, 1u);
  EXPECT_NO_THROW(m.validate());
}

// Every zoo scene (wide size ratios, far from the origin, touching,
// zero-size, crowded, elongated, unbounded) with the estimate forced: the
// one-shot pairs and, after moving every third object, the pairs again.
TYPED_TEST(AdaptiveFactor, ZooExactWithTheEstimateForced) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  using B = hhg::box<D, T>;
  for (const hhg::scenes::zoo z : hhg::scenes::all_zoo_scenes()) {
    SCOPED_TRACE(hhg::scenes::to_string(z));
    std::vector<B> bs = hhg::scenes::make_zoo_scene<D, T>(z, 900, 9);
    TypeParam m;
    m.set_tuning(bulk_always());
    const std::vector<handle> hs = m.insert(std::span<const B>(bs));
    std::vector<handle_pair> found;
    auto check = [&] {
      m.find_pairs(found);
      EXPECT_EQ(as_indices(found, hs), brute_pairs<TypeParam>(std::span<const B>(bs)));
      EXPECT_NO_THROW(m.validate());
    };
    check();
    for (std::size_t i = 0; i < bs.size(); i += 3) {  // each moved onto another object's box
      bs[i] = bs[(i * 7 + 1) % bs.size()];
      m.move(hs[i], bs[i]);
    }
    check();
  }
}

}  // namespace
