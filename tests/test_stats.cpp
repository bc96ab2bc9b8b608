// stats() and the shape of the hierarchy: activation at the threshold, grids
// sorted by cell size in powers of the hierarchy factor, the first cell size,
// growth when a grid fills, levels created between existing ones, counters of
// the last detection, placement of far-away objects.
#include "support.hpp"

namespace hhg_test {
namespace {

template <class M>
class Stats : public ::testing::Test {};
TYPED_TEST_SUITE(Stats, grid_types, method_names);

bool power_of_two(std::uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

/// Checks every structural property of stats() that holds at any time.
template <class M>
::testing::AssertionResult consistent(const M& m) {
  const hhg::statistics st = m.stats();
  const config& c = m.settings();
  if (st.objects != m.size()) return ::testing::AssertionFailure() << "objects " << st.objects << " != size()";
  std::size_t in_grids = 0;
  for (std::size_t i = 0; i < st.grids.size(); ++i) {
    const hhg::grid_statistics& g = st.grids[i];
    in_grids += g.objects;
    std::uint64_t product = 1;
    for (int a = 0; a < 3; ++a) {
      const std::uint32_t n = g.cells_per_axis[static_cast<std::size_t>(a)];
      if (a == 2 && M::dimension == 2) {
        if (n != 1) return ::testing::AssertionFailure() << "grid " << i << ": cells_per_axis[2] = " << n << " in 2D";
      } else if (!power_of_two(n) || n < 4) {
        return ::testing::AssertionFailure() << "grid " << i << ": cells_per_axis[" << a << "] = " << n;
      }
      product *= n;
    }
    if (g.cell_count != product) return ::testing::AssertionFailure() << "grid " << i << ": cell_count != product";
    if (g.occupied_cells > g.objects || (g.objects > 0 && g.occupied_cells == 0))
      return ::testing::AssertionFailure()
             << "grid " << i << ": " << g.occupied_cells << " occupied cells for " << g.objects << " objects";
    if (static_cast<double>(g.objects) > static_cast<double>(g.cell_count) / c.minimal_grid_density)
      return ::testing::AssertionFailure() << "grid " << i << " holds " << g.objects << " objects in " << g.cell_count
                                           << " cells: it should have grown";
    if (!(g.cell_size > 0) || !std::isfinite(g.cell_size))
      return ::testing::AssertionFailure() << "grid " << i << ": cell_size " << g.cell_size;
    if (i > 0) {
      const double prev = st.grids[i - 1].cell_size;
      if (!(prev < g.cell_size)) return ::testing::AssertionFailure() << "grids not sorted ascending at " << i;
      const double levels = std::log(g.cell_size / prev) / std::log(c.hierarchy_factor);
      if (std::fabs(levels - std::round(levels)) > 1e-6 || std::round(levels) < 1)
        return ::testing::AssertionFailure() << "cell sizes " << prev << " and " << g.cell_size
                                             << " are not a power of the factor " << c.hierarchy_factor << " apart";
    }
  }
  if (in_grids + st.list_objects + st.unbounded_objects != st.objects)
    return ::testing::AssertionFailure() << in_grids << " in grids + " << st.list_objects << " in the list + "
                                         << st.unbounded_objects << " unbounded != " << st.objects;
  if (st.grids_active && st.list_objects != 0)
    return ::testing::AssertionFailure() << "grids active but " << st.list_objects << " objects in the list";
  if (!st.grids_active && in_grids != 0)
    return ::testing::AssertionFailure() << "grids inactive but " << in_grids << " objects in grids";
  if (st.objects > 0 && st.bytes == 0) return ::testing::AssertionFailure() << "bytes is 0";
  return ::testing::AssertionSuccess();
}

TYPED_TEST(Stats, PrecisionLimit) {
  const double expected = std::is_same_v<typename TypeParam::scalar, float> ? 0x1p22 : 0x1p40;
  EXPECT_EQ(TypeParam::precision_limit(), expected);
}

TYPED_TEST(Stats, ActivationSwitchesAtTheThreshold) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  for (const std::size_t threshold : {std::size_t{32}, std::size_t{0}, std::size_t{1}, std::size_t{5}}) {
    SCOPED_TRACE("activation_threshold " + std::to_string(threshold));
    config c;
    c.activation_threshold = threshold;
    TypeParam m(c);
    EXPECT_FALSE(m.stats().grids_active);
    std::vector<handle> hs;
    for (std::size_t i = 0; i < threshold + 10; ++i) {
      hs.push_back(m.insert(cube<D, T>(static_cast<double>(i % 7) * 0.3, 0.5)));
      const auto st = m.stats();
      EXPECT_EQ(st.grids_active, m.size() > threshold) << "after " << m.size() << " objects";
      EXPECT_EQ(st.list_objects, st.grids_active ? 0 : m.size());
      ASSERT_TRUE(consistent(m));
    }
    while (m.size() > 1) {
      m.remove(hs.back());
      hs.pop_back();
    }
    EXPECT_TRUE(m.stats().grids_active) << "activation is irrevocable";
    ASSERT_TRUE(consistent(m));
    m.clear();
    EXPECT_FALSE(m.stats().grids_active) << "clear() resets activation";
  }
}

// Unbounded objects are counted apart and never in the list or a grid.
TYPED_TEST(Stats, UnboundedObjectsAreCountedApart) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  for (const std::size_t n : {std::size_t{20}, std::size_t{500}}) {
    const auto boxes = hhg::scenes::make_zoo_scene<D, T>(hhg::scenes::zoo::unbounded, n, 31);
    TypeParam m;
    std::size_t unbounded = 0;
    for (const auto& b : boxes) {
      m.insert(b);
      unbounded += !hhg::is_bounded(b);
    }
    ASSERT_GT(unbounded, 0u);
    EXPECT_EQ(m.stats().unbounded_objects, unbounded);
    ASSERT_TRUE(consistent(m));
  }
}

// Activation anchors the ladder of levels at the largest object present: its
// grid's cells are sqrt(2) times its size, whichever object came first.
TYPED_TEST(Stats, ActivationAnchorsTheLevelsAtTheLargestObject) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  for (const double f : {2.0, 3.0, 4.0}) {
    SCOPED_TRACE("hierarchy_factor " + std::to_string(f));
    config c;
    c.hierarchy_factor = f;
    c.activation_threshold = 32;
    TypeParam m(c);
    // sizes 0.1 .. 3.2 in a scrambled order, the largest neither first nor last
    std::vector<double> sizes;
    for (int i = 0; i <= 32; ++i) sizes.push_back(0.1 + 0.1 * ((i * 7) % 32));
    const double largest = *std::max_element(sizes.begin(), sizes.end());
    ASSERT_NE(sizes.front(), largest);
    for (std::size_t i = 0; i < sizes.size(); ++i) m.insert(cube<D, T>(static_cast<double>(10 * i), sizes[i]));
    const auto st = m.stats();
    ASSERT_TRUE(st.grids_active);
    // the grid holding the largest object is the coarsest, cells sqrt(2) times its size
    EXPECT_NEAR(st.grids.back().cell_size / (largest * std::sqrt(std::min(f, 2.0))), 1.0, 0.01);
    ASSERT_TRUE(consistent(m));
  }
}

TYPED_TEST(Stats, FirstCellSizeIsLongestEdgeTimesSqrtTwo) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  for (const double f : {2.0, 1.5, 3.0, 4.0}) {
    for (const std::size_t threshold : {std::size_t{0}, std::size_t{32}}) {
      SCOPED_TRACE("hierarchy_factor " + std::to_string(f) + " threshold " + std::to_string(threshold));
      config c;
      c.hierarchy_factor = f;
      c.activation_threshold = threshold;
      TypeParam m(c);
      // A needle: longest edge 0.7 on the last axis, near the origin.
      auto needle = cube<D, T>(0.1, 0.1);
      needle.max[D - 1] = static_cast<T>(0.1 + 0.7);
      const double edge = edge_of(needle);
      for (std::size_t i = 0; i <= threshold; ++i) m.insert(needle);
      const auto st = m.stats();
      ASSERT_TRUE(st.grids_active);
      ASSERT_EQ(st.grids.size(), 1u);
      // hash_grids adds a guard band of 2^-9 to the size (src/hash_grids.cpp).
      // cells sqrt(2) times the size whatever f is (sqrt(f) below 2: the object must fit)
      EXPECT_NEAR(st.grids[0].cell_size / (edge * std::sqrt(std::min(f, 2.0))), 1.0, 0.01);
      EXPECT_EQ(st.grids[0].objects, threshold + 1);
      EXPECT_EQ(st.grids[0].occupied_cells, 1u);
      // Other sizes land on levels f^k away from the first.
      for (const double s : {0.01, 0.05, 0.3, 0.69, 0.71, 2.0, 9.0, 100.0}) m.insert(cube<D, T>(0.2, s));
      ASSERT_TRUE(consistent(m));
      ASSERT_GE(m.stats().grids.size(), 3u);
    }
  }
}

// Levels created in decreasing and alternating size order end up sorted, and
// a level created between two existing ones sits at a power of f from both.
TYPED_TEST(Stats, LevelsCreatedBetweenExistingOnes) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  for (const double f : {2.0, 3.0, 1.5}) {
    SCOPED_TRACE("hierarchy_factor " + std::to_string(f));
    config c;
    c.hierarchy_factor = f;
    c.activation_threshold = 0;
    {
      mirror<TypeParam> m(c);
      std::size_t grids = 0;
      for (int k = 10; k >= -10; --k) {  // decreasing sizes: each a new, finer level
        m.insert(cube<D, T>(-0.5 * k, std::ldexp(1.0, k)));
        ASSERT_TRUE(consistent(m.subject()));
        const std::size_t now = m.subject().stats().grids.size();
        EXPECT_GE(now, grids);
        grids = now;
      }
      EXPECT_GE(grids, 10u);
      ASSERT_TRUE(m.check());
    }
    {
      mirror<TypeParam> m(c);
      const double sizes[] = {1, 1000, 3, 300, 10, 100, 30, 0.5, 2000, 0.02, 55, 7};
      std::size_t grids = 0;
      for (const double s : sizes) {
        m.insert(cube<D, T>(-s / 3, s));
        ASSERT_TRUE(consistent(m.subject())) << "after size " << s;
        grids = m.subject().stats().grids.size();
      }
      EXPECT_GE(grids, 6u);
      ASSERT_TRUE(m.check());
      // More objects of every size, spread out: pairs across all levels.
      hhg::scenes::rng r(5);
      for (int i = 0; i < 400; ++i) {
        const double s = sizes[r.below(std::size(sizes))] * r.uniform(0.8, 1.2);
        m.insert(cube<D, T>(r.uniform(-3000, 3000), s));
      }
      ASSERT_TRUE(consistent(m.subject()));
      ASSERT_TRUE(m.check());
    }
  }
}

// A grid grows (cells double per axis) exactly when it holds more objects than
// cells / minimal_grid_density.
TYPED_TEST(Stats, GridGrowsWhenFull) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  for (const std::uint32_t density : {1u, 8u}) {
    SCOPED_TRACE("minimal_grid_density " + std::to_string(density));
    config c;
    c.initial_cells = {4, 4, 4};
    c.minimal_grid_density = density;
    c.activation_threshold = 0;
    mirror<TypeParam> m(c);
    hhg::scenes::rng r(41);
    const std::size_t n = density == 1 ? 6000 : 2000;
    const double world = std::pow(static_cast<double>(n), 1.0 / D) * 1.5;
    std::array<std::uint32_t, 3> cells{};
    int growths = 0;
    for (std::size_t i = 0; i < n; ++i) {
      auto b = cube<D, T>(0, 1);
      for (int a = 0; a < D; ++a) {
        b.min[static_cast<std::size_t>(a)] = static_cast<T>(r.uniform(-world, world));
        b.max[static_cast<std::size_t>(a)] = b.min[static_cast<std::size_t>(a)] + 1;
      }
      m.insert(b);
      const auto st = m.subject().stats();
      ASSERT_EQ(st.grids.size(), 1u);
      const auto& g = st.grids[0];
      EXPECT_LE(static_cast<double>(g.objects), static_cast<double>(g.cell_count) / density);
      if (i > 0 && g.cells_per_axis != cells) {
        ++growths;
        std::uint64_t before = 1;
        for (int a = 0; a < D; ++a) {
          EXPECT_EQ(g.cells_per_axis[static_cast<std::size_t>(a)], 2 * cells[static_cast<std::size_t>(a)])
              << "cells double per axis";
          before *= cells[static_cast<std::size_t>(a)];
        }
        EXPECT_GT(static_cast<double>(g.objects), static_cast<double>(before) / density)
            << "grew before it was full, at " << g.objects << " objects";
      }
      cells = g.cells_per_axis;
    }
    EXPECT_GE(growths, 2) << "the grid should grow several times";
    EXPECT_EQ(m.subject().path_counts().grid_growths, static_cast<std::uint64_t>(growths)) << "each growth counted";
    ASSERT_TRUE(consistent(m.subject()));
    ASSERT_TRUE(m.check());
    // Moving everything around after growth.
    for (std::size_t i = 0; i < n; i += 3) m.move(i, shifted(m.box_of(i), 0.37 * static_cast<double>(i % 5)));
    ASSERT_TRUE(m.check());
  }
}

// growth_rule::by_occupancy spends a growth's doublings where the objects'
// cell coordinates still spread: in a long channel along x the x axis gets
// the cells; the total cell count is the thesis' (2^D per growth); objects
// spread evenly get the thesis' even doubling; pairs stay exact.
TYPED_TEST(Stats, GrowthFollowsOccupancy) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  const std::size_t n = 3000;
  auto grown = [&](hhg::growth_rule rule, bool channel) {
    config c;
    c.initial_cells = {4, 4, 4};
    c.activation_threshold = 0;
    c.growth = rule;
    mirror<TypeParam> m(c);
    hhg::scenes::rng r(7);
    for (std::size_t i = 0; i < n; ++i) {
      auto b = cube<D, T>(0, 1);
      for (int a = 0; a < D; ++a) {
        const double extent = channel ? (a == 0 ? 4000.0 : 3.0) : 40.0;
        b.min[static_cast<std::size_t>(a)] = static_cast<T>(r.uniform(-extent / 2, extent / 2));
        b.max[static_cast<std::size_t>(a)] = b.min[static_cast<std::size_t>(a)] + 1;
      }
      m.insert(b);
    }
    EXPECT_TRUE(consistent(m.subject()));
    EXPECT_TRUE(m.check());
    for (std::size_t i = 0; i < n; i += 2) m.move(i, shifted(m.box_of(i), 0.61 * static_cast<double>(i % 7)));
    EXPECT_TRUE(m.check());
    const auto st = m.subject().stats();
    EXPECT_EQ(st.grids.size(), 1u);
    return st.grids.empty() ? hhg::grid_statistics{} : st.grids[0];
  };
  for (const bool channel : {true, false}) {
    SCOPED_TRACE(channel ? "channel" : "cube");
    const auto occ = grown(hhg::growth_rule::by_occupancy, channel);
    const auto every = grown(hhg::growth_rule::every_axis, channel);
    EXPECT_EQ(occ.cell_count, every.cell_count) << "both rules grow to the same cell count";
    for (int a = 1; a < D; ++a)
      EXPECT_EQ(every.cells_per_axis[static_cast<std::size_t>(a)], every.cells_per_axis[0]) << "every_axis: even";
    if (channel) {
      for (int a = 1; a < D; ++a)
        EXPECT_GE(occ.cells_per_axis[0], 16 * occ.cells_per_axis[static_cast<std::size_t>(a)])
            << "the channel's long axis gets the cells";
      EXPECT_GT(occ.occupied_cells, 2 * every.occupied_cells) << "and the objects spread over more cells";
    } else {
      for (int a = 1; a < D; ++a)
        EXPECT_EQ(occ.cells_per_axis[static_cast<std::size_t>(a)], occ.cells_per_axis[0]) << "even spread: even growth";
    }
  }
}

TYPED_TEST(Stats, CountersOfTheLastDetection) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  TypeParam m;
  for (const auto& b : hhg::scenes::make_zoo_scene<D, T>(hhg::scenes::zoo::equal, 5000, 51)) m.insert(b);
  std::vector<handle_pair> out;
  m.find_pairs(out);
  ASSERT_FALSE(out.empty());
  auto st = m.stats();
  EXPECT_EQ(st.pairs, out.size());
  EXPECT_GE(st.box_tests, out.size()) << "every pair needs a box test";
  EXPECT_GT(st.cells_visited, 0u);
  EXPECT_LT(st.box_tests, 5000ull * 4999 / 2 / 50) << "a sparse scene should need far fewer tests than all pairs";
  ASSERT_TRUE(consistent(m));

  std::uint64_t counted = 0;
  m.for_each_pair([&counted](handle, handle) { ++counted; });
  st = m.stats();
  EXPECT_EQ(st.pairs, counted);
  EXPECT_EQ(counted, out.size());

  // Below the threshold the detection is all-pairs.
  TypeParam small;
  for (int i = 0; i < 10; ++i) small.insert(cube<D, T>(i, 1.5));
  small.find_pairs(out);
  EXPECT_EQ(out.size(), 9u);
  EXPECT_EQ(small.stats().pairs, 9u);
  EXPECT_EQ(small.stats().box_tests, 45u);
}

// An object far from the origin goes to a grid whose cells keep
// |coordinate| / cell size within precision_limit().
TYPED_TEST(Stats, FarObjectsGoToCoarserLevels) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  const double far = std::is_same_v<T, float> ? 1e8 : 1e14;
  for (const double at : {far, -far, 16 * far}) {
    config c;
    c.activation_threshold = 0;
    mirror<TypeParam> m(c);
    m.insert(cube<D, T>(at, 1));
    m.insert(cube<D, T>(at + 1, 1));  // touches the first (or, rounded in float, overlaps it)
    m.insert(cube<D, T>(0, 1));
    const auto st = m.subject().stats();
    ASSERT_FALSE(st.grids.empty());
    EXPECT_GE(st.grids.back().cell_size * TypeParam::precision_limit(), std::fabs(at))
        << "object at " << at << " hashed beyond the precision limit";
    ASSERT_TRUE(consistent(m.subject()));
    ASSERT_TRUE(m.check());
  }
}

TYPED_TEST(Stats, BytesGrowWithObjects) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  TypeParam m;
  const std::size_t empty = m.stats().bytes;
  for (const auto& b : hhg::scenes::make_zoo_scene<D, T>(hhg::scenes::zoo::varied12, 3000, 61)) m.insert(b);
  const auto st = m.stats();
  EXPECT_GT(st.bytes, empty);
  EXPECT_GE(st.bytes, 3000 * sizeof(typename TypeParam::box_type)) << "the boxes alone take this much";
  std::size_t grid_bytes = 0;
  for (const auto& g : st.grids) grid_bytes += g.bytes;
  EXPECT_LE(grid_bytes, st.bytes);
}

}  // namespace
}  // namespace hhg_test
