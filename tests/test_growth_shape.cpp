// The grid shape follows the objects (growth_rule::by_occupancy, the
// default): in a domain long along one axis the grid's cells go to that axis
// (bulk insert into an empty grid, bulk insert into a grid that holds the
// activation's first objects, object-by-object insertion), a grid whose
// objects spread along another axis after a bulk move is reshaped, the cell
// count stays the thesis' (every_axis'), and every pair stays exact against
// brute force (thin domains along each axis, 2D and 3D, float and double,
// near and far from the origin, touching faces, mixed sizes).
#include <numeric>

#include "support.hpp"

namespace hhg_test {
namespace {

template <class M>
class GrowthShape : public ::testing::Test {};
TYPED_TEST_SUITE(GrowthShape, grid_types, method_names);

/// Unit cubes with min corners spread over `length` along axis `along` and
/// `thin` along the others, from `origin` on every axis; every third one on
/// the integer lattice (faces touch exactly), every seventh one of a size
/// `other` (another level, when not 1).
template <int D, class T>
std::vector<box<D, T>> thin_scene(std::size_t n, int along, double length, double thin, double origin,
                                  std::uint64_t seed, double other = 1.0) {
  hhg::scenes::rng r(seed);
  std::vector<box<D, T>> out;
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double edge = i % 7 == 3 ? other : 1.0;
    box<D, T> b;
    for (int a = 0; a < D; ++a) {
      const auto k = static_cast<std::size_t>(a);
      double lo = r.uniform(0, a == along ? length : thin);
      if (i % 3 == 0) lo = std::floor(lo);
      b.min[k] = static_cast<T>(origin + lo);
      b.max[k] = static_cast<T>(origin + lo + edge);
    }
    out.push_back(b);
  }
  return out;
}

/// The hash grid's pairs against brute force over the same boxes (handles
/// matched by insertion order); validate() first.
template <class M>
::testing::AssertionResult exact(const M& m, const std::vector<handle>& hs,
                                 const std::vector<typename M::box_type>& boxes) {
  try {
    m.validate();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "validate(): " << e.what();
  }
  brute_force<M::dimension, typename M::scalar> oracle;
  std::vector<handle> oh;
  for (const auto& b : boxes) oh.push_back(oracle.insert(b));
  std::vector<std::size_t> id_of(oh.empty() ? 0 : 1 + std::max_element(oh.begin(), oh.end(), [](handle a, handle b) {
                                                        return a.index < b.index;
                                                      })->index);
  for (std::size_t i = 0; i < oh.size(); ++i) id_of[oh[i].index] = i;
  std::vector<handle_pair> want, got;
  oracle.find_pairs(want);
  for (auto& p : want) p = {hs[id_of[p.a.index]], hs[id_of[p.b.index]]};
  hhg::canonicalize(want);
  auto& mm = const_cast<M&>(m);
  mm.find_pairs(got);
  hhg::canonicalize(got);
  if (got != want)
    return ::testing::AssertionFailure() << "pairs differ from brute force: got " << got.size() << ", expected "
                                         << want.size();
  return ::testing::AssertionSuccess() << got.size() << " pairs";
}

/// The grid of the unit cubes (cell size in [1, 2)).
inline const hhg::grid_statistics* unit_grid(const hhg::statistics& st) {
  for (const auto& g : st.grids)
    if (g.cell_size >= 1 && g.cell_size < 2) return &g;
  return nullptr;
}

/// Cells along `along` at least `ratio` times those along every other axis.
template <int D>
::testing::AssertionResult long_along(const hhg::grid_statistics& g, int along, std::uint32_t ratio) {
  for (int a = 0; a < D; ++a) {
    if (a == along) continue;
    if (g.cells_per_axis[static_cast<std::size_t>(along)] < ratio * g.cells_per_axis[static_cast<std::size_t>(a)])
      return ::testing::AssertionFailure()
             << "cells per axis " << g.cells_per_axis[0] << " x " << g.cells_per_axis[1] << " x " << g.cells_per_axis[2]
             << ": axis " << along << " is not the long one";
  }
  return ::testing::AssertionSuccess();
}

template <class T>
double far_origin() {
  return std::is_same_v<T, float> ? 30000.0 : 1e7;
}

// Bulk insert with the default configuration (the activation's first
// objects one by one, the rest in one pass): a thin domain along each axis,
// near and far from the origin. The long axis gets the cells, the cell count
// is every_axis', the objects occupy more cells than with every_axis, pairs
// exact; then a batch move along the long axis and single moves stay exact.
TYPED_TEST(GrowthShape, ThinDomainBulkInsertFollowsTheObjects) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  EXPECT_EQ(config{}.growth, hhg::growth_rule::by_occupancy) << "the default";
  const std::size_t n = 6000;
  for (int along = 0; along < D; ++along)
    for (const double origin : {0.0, -far_origin<T>()}) {
      SCOPED_TRACE("along " + std::to_string(along) + ", origin " + std::to_string(origin));
      auto boxes = thin_scene<D, T>(n, along, 3000, 4, origin, 11 + static_cast<std::uint64_t>(along));
      // (cells of the objects' size in both: in 2D these boxes are about
      // far enough apart for cells twice as large, levels.hpp, spread_for)
      hhg::detail::tuning unspread;
      unspread.spread_max_log2 = 0;
      TypeParam m;
      m.set_tuning(unspread);
      const std::vector<handle> hs = m.insert(std::span<const box<D, T>>(boxes));
      ASSERT_EQ(hs.size(), n);
      EXPECT_TRUE(exact(m, hs, boxes));
      const auto st = m.stats();
      ASSERT_EQ(st.grids.size(), 1u);
      EXPECT_TRUE(long_along<D>(st.grids[0], along, 64));

      config every;
      every.growth = hhg::growth_rule::every_axis;
      TypeParam e(every);
      e.set_tuning(unspread);
      e.insert(std::span<const box<D, T>>(boxes));
      std::vector<handle_pair> tmp;
      e.find_pairs(tmp);
      const auto se = e.stats();
      ASSERT_EQ(se.grids.size(), 1u);
      EXPECT_EQ(st.grids[0].cell_count, se.grids[0].cell_count) << "the same cell count as every_axis";
      for (int a = 1; a < D; ++a)
        EXPECT_EQ(se.grids[0].cells_per_axis[static_cast<std::size_t>(a)], se.grids[0].cells_per_axis[0]);
      EXPECT_GT(st.grids[0].occupied_cells, 3 * se.grids[0].occupied_cells) << "the objects spread over more cells";
      EXPECT_LT(st.box_tests, se.box_tests) << "and detection tests fewer boxes";

      // a batch move of everything (the bulk move) along the long axis, then single moves
      std::vector<box<D, T>> moved = boxes;
      for (std::size_t i = 0; i < n; ++i) {
        auto& b = moved[i];
        const double dx = static_cast<double>(i % 5) * 0.3 - 0.6;
        const auto k = static_cast<std::size_t>(along);
        b.min[k] = static_cast<T>(static_cast<double>(b.min[k]) + dx);
        b.max[k] = static_cast<T>(static_cast<double>(b.max[k]) + dx);
      }
      m.move(std::span<const handle>(hs), std::span<const box<D, T>>(moved));
      EXPECT_TRUE(exact(m, hs, moved));
      for (std::size_t i = 0; i < n; i += 97) {
        moved[i] = moved[(i * 31) % n];  // onto another object: touching/equal boxes
        m.move(hs[i], moved[i]);
      }
      EXPECT_TRUE(exact(m, hs, moved));
      EXPECT_TRUE(long_along<D>(m.stats().grids[0], along, 64));
    }
}

// Bulk insert into a grid that is still empty: tiny objects activate the
// structure (their own level), then the unit cubes of a thin domain come in
// one batch into a new level. That grid's shape follows them; mixed sizes
// (a level of cubes of edge 40 too) stay exact.
TYPED_TEST(GrowthShape, BulkInsertIntoAnEmptyGridFollowsTheObjects) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  const int along = D - 1;
  TypeParam m;
  std::vector<box<D, T>> boxes;
  std::vector<handle> hs;
  for (int i = 0; i < 40; ++i) {
    boxes.push_back(cube<D, T>(0.01 * i, 0.015));  // overlapping tiny cubes
    hs.push_back(m.insert(boxes.back()));
  }
  auto batch = thin_scene<D, T>(8000, along, 4000, 3, far_origin<T>() / 3, 5, 40.0);
  const std::vector<handle> more = m.insert(std::span<const box<D, T>>(batch));
  boxes.insert(boxes.end(), batch.begin(), batch.end());
  hs.insert(hs.end(), more.begin(), more.end());
  EXPECT_TRUE(exact(m, hs, boxes));
  const auto st = m.stats();
  const hhg::grid_statistics* g = unit_grid(st);
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(long_along<D>(*g, along, 64));
  EXPECT_GE(st.grids.size(), 3u);
}

// Object-by-object insertion grows the grid step by step from the objects
// present: the long axis gets the cells there too, pairs exact after every
// growth, and removing most objects keeps the structure valid.
TYPED_TEST(GrowthShape, ThinDomainOneByOneFollowsTheObjects) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  for (int along = 0; along < D; ++along) {
    SCOPED_TRACE("along " + std::to_string(along));
    auto boxes = thin_scene<D, T>(5000, along, 2500, 3, along == 1 ? far_origin<T>() : 0.0, 23, 0.3);
    TypeParam m;
    std::vector<handle> hs;
    std::uint64_t cells = 0;
    for (std::size_t i = 0; i < boxes.size(); ++i) {
      hs.push_back(m.insert(boxes[i]));
      const auto st = m.stats();
      const hhg::grid_statistics* g = unit_grid(st);
      if (g != nullptr && g->cell_count != cells) {  // a growth: exact right after it
        cells = g->cell_count;
        std::vector<box<D, T>> sofar(boxes.begin(), boxes.begin() + static_cast<std::ptrdiff_t>(i + 1));
        ASSERT_TRUE(exact(m, hs, sofar)) << "after a growth to " << cells << " cells";
      }
    }
    EXPECT_TRUE(exact(m, hs, boxes));
    const auto final_stats = m.stats();  // (kept: g points into it)
    const hhg::grid_statistics* g = unit_grid(final_stats);
    ASSERT_NE(g, nullptr);
    EXPECT_TRUE(long_along<D>(*g, along, 64));
    std::vector<box<D, T>> kept;
    std::vector<handle> kh;
    for (std::size_t i = 0; i < boxes.size(); ++i)
      if (i % 4 == 0) {
        kept.push_back(boxes[i]);
        kh.push_back(hs[i]);
      } else {
        m.remove(hs[i]);
      }
    EXPECT_TRUE(exact(m, kh, kept));
  }
}

// A column long along the last axis, then moved in one batch (the bulk move)
// to a layer spread over the other axes: the grid, shaped for the column,
// is reshaped for the layer after the move (its cell count kept), and pairs
// stay exact before and after.
TYPED_TEST(GrowthShape, ReshapedWhenTheObjectsSpreadElsewhere) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  const int tall = D - 1;
  const std::size_t n = 6000;
  auto column = thin_scene<D, T>(n, tall, 6000, 3, 0.0, 31);
  TypeParam m;
  const std::vector<handle> hs = m.insert(std::span<const box<D, T>>(column));
  EXPECT_TRUE(exact(m, hs, column));
  const auto before = m.stats();
  ASSERT_EQ(before.grids.size(), 1u);
  EXPECT_TRUE(long_along<D>(before.grids[0], tall, 64));
  // the layer: spread over the other axes (as wide as the density allows), one cell thick along `tall`
  const double wide = D == 3 ? 120.0 : 6000.0;
  hhg::scenes::rng r(32);
  std::vector<box<D, T>> layer(n);
  for (std::size_t i = 0; i < n; ++i)
    for (int a = 0; a < D; ++a) {
      const auto k = static_cast<std::size_t>(a);
      const double lo = a == tall ? r.uniform(0, 0.3) : std::floor(r.uniform(0, wide) * 4) / 4;
      layer[i].min[k] = static_cast<T>(lo);
      layer[i].max[k] = static_cast<T>(lo + 1);
    }
  m.move(std::span<const handle>(hs), std::span<const box<D, T>>(layer));
  EXPECT_TRUE(exact(m, hs, layer));
  const auto after = m.stats();
  ASSERT_EQ(after.grids.size(), 1u);
  EXPECT_EQ(after.grids[0].cell_count, before.grids[0].cell_count) << "reshaped, not grown";
  const auto t = static_cast<std::size_t>(tall);
  EXPECT_LT(after.grids[0].cells_per_axis[t], before.grids[0].cells_per_axis[t]) << "the tall axis gave its cells";
  EXPECT_GT(after.grids[0].occupied_cells, 4 * before.grids[0].occupied_cells / 10)
      << "the layer is not crowded into the column's few cells";
  EXPECT_LE(static_cast<double>(after.grids[0].objects), static_cast<double>(m.settings().minimal_grid_density) *
                                                             static_cast<double>(after.grids[0].occupied_cells));
}

// every_axis keeps the thesis' even shape whatever the objects do.
TYPED_TEST(GrowthShape, EveryAxisStaysEven) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  config c;
  c.growth = hhg::growth_rule::every_axis;
  auto boxes = thin_scene<D, T>(6000, 0, 3000, 4, 0.0, 41);
  TypeParam m(c);
  const std::vector<handle> hs = m.insert(std::span<const box<D, T>>(boxes));
  EXPECT_TRUE(exact(m, hs, boxes));
  const auto st = m.stats();
  ASSERT_EQ(st.grids.size(), 1u);
  for (int a = 1; a < D; ++a)
    EXPECT_EQ(st.grids[0].cells_per_axis[static_cast<std::size_t>(a)], st.grids[0].cells_per_axis[0]);
}

}  // namespace
}  // namespace hhg_test
