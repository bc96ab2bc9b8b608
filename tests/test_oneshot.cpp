// One-shot pairs (issue 19): the bulk insert of a whole batch, whose first
// grid level is anchored for the whole batch (anchor_cell, levels.hpp), then
// one detection. Every case is compared with a brute-force oracle written
// here (closed overlap, every pair i < j), on P. Terdiman's kind of data,
// many levels, touching and zero-size boxes, far from the origin, in 2D and
// 3D, float and double, into empty and non-empty structures; validate()
// after each.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "hhg/broad_phase.hpp"
#include "hhg/hash_grids.hpp"
#include "hhg/scenes.hpp"
#include "support.hpp"

namespace {

using hhg_test::as_indices;

using hhg::handle;
using hhg::handle_pair;
using hhg::hash_grids;
using index_pairs = std::vector<std::pair<std::uint32_t, std::uint32_t>>;

template <int D, class T>
index_pairs brute(const std::vector<hhg::box<D, T>>& bs) {
  index_pairs out;
  for (std::size_t i = 0; i < bs.size(); ++i)
    for (std::size_t j = i + 1; j < bs.size(); ++j) {
      bool hit = true;
      for (int a = 0; a < D; ++a) hit = hit && bs[i].min[a] <= bs[j].max[a] && bs[j].min[a] <= bs[i].max[a];
      if (hit) out.emplace_back(static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(j));
    }
  return out;
}

hhg::detail::tuning small_bulk() {
  hhg::detail::tuning t;
  t.bulk_min = 64;  // the bulk insert at test sizes
  return t;
}

// Half-extents uniform in [0, h) per axis, centres uniform in a cube of
// edge `edge` at `origin` (P. Terdiman's data with h = 127, edge = 4096).
template <int D, class T>
std::vector<hhg::box<D, T>> terdiman_boxes(std::uint64_t seed, std::size_t n, double edge, double h, double origin) {
  hhg::scenes::rng r(seed);
  std::vector<hhg::box<D, T>> bs(n);
  for (auto& b : bs)
    for (int a = 0; a < D; ++a) {
      const double c = origin + r.uniform(0, edge), e = r.uniform(0, h);
      b.min[a] = static_cast<T>(c - e);
      b.max[a] = static_cast<T>(c + e);
    }
  return bs;
}

template <class M>
class OneShot : public ::testing::Test {};
using oneshot_types = ::testing::Types<HHG_TEST_VARIANTS(hash_grids)>;
TYPED_TEST_SUITE(OneShot, oneshot_types);

// all_pairs (bulk insert into an empty structure, one detection) on
// Terdiman's data, near the origin and far from it; the batch's first level
// anchored for the whole batch: above the largest object, below sqrt(2) times it.
TYPED_TEST(OneShot, TerdimanDataExactAndAnchored) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  for (const double origin : {0.0, -2048.0, 3.0e5}) {
    const auto bs = terdiman_boxes<D, T>(7, 3000, D == 3 ? 1024 : 2048, 127, origin);
    TypeParam m;
    m.set_tuning(small_bulk());
    const index_pairs got = hhg::all_pairs(m, std::span<const hhg::box<D, T>>(bs));
    EXPECT_EQ(got, brute(bs)) << "origin " << origin;
    EXPECT_FALSE(got.empty());
    EXPECT_NO_THROW(m.validate());
    EXPECT_EQ(m.path_counts().bulk_inserts, 1u);
    double largest = 0;
    for (const auto& b : bs)
      for (int a = 0; a < D; ++a) largest = std::max(largest, static_cast<double>(b.max[a]) - b.min[a]);
    const auto st = m.stats();
    ASSERT_FALSE(st.grids.empty());
    const double top = st.grids.back().cell_size;
    EXPECT_GT(top, largest) << "origin " << origin;
    EXPECT_LT(top, largest * 1.3) << "origin " << origin;  // sqrt(2) x the largest before
  }
}

// insert(span) into an empty structure activates the grids with no object
// and lays out the whole batch in bulk (bulk_activations): handles in the
// order of the boxes, every pair. A batch below bulk_min, or a structure
// that already holds objects, activates as before (the first
// activation_threshold + 1 one by one).
TYPED_TEST(OneShot, EmptyStructureLaysOutTheWholeBatch) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  const auto bs = terdiman_boxes<D, T>(5, 2000, D == 3 ? 1024 : 2048, 127, -2048.0);
  {
    TypeParam m;  // (default tuning: bulk_min 256)
    const std::vector<handle> hs = m.insert(std::span<const hhg::box<D, T>>(bs));
    EXPECT_EQ(m.path_counts().bulk_activations, 1u);
    EXPECT_EQ(m.path_counts().bulk_inserts, 1u);
    ASSERT_EQ(hs.size(), bs.size());
    for (std::size_t i = 0; i < hs.size(); ++i) ASSERT_EQ(hs[i].index, i);
    std::vector<handle_pair> out;
    m.find_pairs(out);
    EXPECT_EQ(as_indices(out, hs), brute(bs));
    EXPECT_FALSE(out.empty());
    EXPECT_NO_THROW(m.validate());
  }
  {
    TypeParam m;  // fewer than bulk_min
    const auto few = std::span<const hhg::box<D, T>>(bs).first(200);
    const std::vector<handle> hs = m.insert(few);
    EXPECT_EQ(m.path_counts().bulk_activations, 0u);
    EXPECT_TRUE(m.stats().grids_active);
    std::vector<handle_pair> out;
    m.find_pairs(out);
    EXPECT_EQ(as_indices(out, hs), brute(std::vector<hhg::box<D, T>>(few.begin(), few.end())));
  }
  {
    TypeParam m;  // not empty
    std::vector<handle> hs{m.insert(bs[0])};
    const std::vector<handle> rest = m.insert(std::span<const hhg::box<D, T>>(bs).subspan(1));
    hs.insert(hs.end(), rest.begin(), rest.end());
    EXPECT_EQ(m.path_counts().bulk_activations, 0u);
    EXPECT_EQ(m.path_counts().bulk_inserts, 1u);
    std::vector<handle_pair> out;
    m.find_pairs(out);
    EXPECT_EQ(as_indices(out, hs), brute(bs));
    EXPECT_NO_THROW(m.validate());
  }
}

// The largest objects last in the batch (the objects present at activation,
// the first ones, are smaller): no level coarser than the batch needs.
TYPED_TEST(OneShot, LargestLastNoExtraLevel) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  auto bs = terdiman_boxes<D, T>(3, 2000, 1500, 20, 0);
  const auto big = terdiman_boxes<D, T>(4, 50, 1500, 120, 0);
  bs.insert(bs.end(), big.begin(), big.end());
  TypeParam m;
  m.set_tuning(small_bulk());
  const index_pairs got = hhg::all_pairs(m, std::span<const hhg::box<D, T>>(bs));
  EXPECT_EQ(got, brute(bs));
  EXPECT_NO_THROW(m.validate());
  double largest = 0;
  for (const auto& b : bs)
    for (int a = 0; a < D; ++a) largest = std::max(largest, static_cast<double>(b.max[a]) - b.min[a]);
  EXPECT_LT(m.stats().grids.back().cell_size, largest * 1.5);
}

// Sizes over eight decades (many levels), zero-size boxes, boxes touching
// face to face, equal boxes and an unbounded one, in one batch; then a
// second batch into the non-empty structure.
TYPED_TEST(OneShot, ManyLevelsTouchingZeroSizeIntoEmptyAndNonEmpty) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  hhg::scenes::rng r(11);
  auto make = [&](std::size_t n) {
    std::vector<hhg::box<D, T>> bs;
    for (std::size_t i = 0; i < n; ++i) {
      hhg::box<D, T> b;
      const int kind = static_cast<int>(r.below(5));
      const double size = kind == 0 ? 0.0 : std::pow(10.0, r.uniform(-3, 5));  // zero-size, or 1e-3 .. 1e5
      for (int a = 0; a < D; ++a) {
        double lo = r.uniform(-1.0e5, 1.0e5);
        if (kind == 1) lo = std::floor(r.uniform(0, 40)) * 4;  // unit grid of boxes of edge 4: faces touch
        const double e = kind == 1 ? 4.0 : size;
        b.min[a] = static_cast<T>(lo);
        b.max[a] = static_cast<T>(lo + e);
      }
      bs.push_back(b);
    }
    return bs;
  };
  std::vector<hhg::box<D, T>> first = make(900), second = make(1200);
  first.push_back(first[5]);  // an equal box
  hhg::box<D, T> unbounded{};
  for (int a = 0; a < D; ++a) {
    unbounded.min[a] = a == 0 ? -std::numeric_limits<T>::infinity() : T(0);
    unbounded.max[a] = a == 0 ? std::numeric_limits<T>::infinity() : T(1);
  }
  first.push_back(unbounded);
  hhg::config fixed;  // (every level the factor apart: a batch's estimate would put these in one level)
  fixed.adaptive_factor = false;
  TypeParam m(fixed);
  m.set_tuning(small_bulk());
  std::vector<handle> hs = m.insert(std::span<const hhg::box<D, T>>(first));
  std::vector<handle_pair> found;
  m.find_pairs(found);
  EXPECT_EQ(as_indices(found, hs), brute(first));
  EXPECT_NO_THROW(m.validate());
  EXPECT_GE(m.stats().grids.size(), 4u);
  // a few one by one, then the second batch into the non-empty structure
  for (int k = 0; k < 20; ++k) {
    first.push_back(second[static_cast<std::size_t>(k)]);
    hs.push_back(m.insert(second[static_cast<std::size_t>(k)]));
  }
  const std::vector<handle> more = m.insert(std::span<const hhg::box<D, T>>(second).subspan(20));
  std::vector<hhg::box<D, T>> all = first;
  all.insert(all.end(), second.begin() + 20, second.end());
  hs.insert(hs.end(), more.begin(), more.end());
  m.find_pairs(found);
  EXPECT_EQ(as_indices(found, hs), brute(all));
  EXPECT_NO_THROW(m.validate());
  EXPECT_EQ(m.path_counts().bulk_inserts, 2u);
}

// A batch into a structure with freed slots: the bulk insert takes the free
// list's slots first (their next generation), then appends new ones; an
// all-zero box comes after sized ones (it fits every grid). Handles distinct
// and live, stale handles stay stale, boxes kept, pairs exact.
TYPED_TEST(OneShot, BatchTakesFreedSlotsThenNewOnes) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  std::vector<hhg::box<D, T>> live = terdiman_boxes<D, T>(21, 600, 1500, 60, -300);
  const std::vector<hhg::box<D, T>> small = terdiman_boxes<D, T>(22, 200, 1500, 2, -300);
  live.insert(live.end(), small.begin(), small.end());  // two or more levels
  TypeParam m;
  m.set_tuning(small_bulk());
  std::vector<handle> hs = m.insert(std::span<const hhg::box<D, T>>(live));
  // remove every third: 267 freed slots
  std::vector<handle> stale;
  std::vector<hhg::box<D, T>> kept_boxes;
  std::vector<handle> kept;
  for (std::size_t i = 0; i < hs.size(); ++i) {
    if (i % 3 == 0) {
      m.remove(hs[i]);
      stale.push_back(hs[i]);
    } else {
      kept.push_back(hs[i]);
      kept_boxes.push_back(live[i]);
    }
  }
  std::vector<hhg::box<D, T>> batch = terdiman_boxes<D, T>(23, 500, 1500, 60, -300);
  batch[7] = hhg::box<D, T>{};  // all zero, after sized boxes
  const std::vector<handle> more = m.insert(std::span<const hhg::box<D, T>>(batch));
  ASSERT_EQ(more.size(), batch.size());
  std::size_t reused = 0;
  for (const handle h : more) {
    EXPECT_TRUE(m.contains(h));
    for (const handle s : stale) reused += s.index == h.index;
  }
  EXPECT_EQ(reused, stale.size());  // every freed slot taken before any new one
  for (const handle s : stale) EXPECT_FALSE(m.contains(s));
  std::vector<handle> all_h = kept;
  all_h.insert(all_h.end(), more.begin(), more.end());
  std::vector<handle> sorted = all_h;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end());
  std::vector<hhg::box<D, T>> all_b = kept_boxes;
  all_b.insert(all_b.end(), batch.begin(), batch.end());
  std::vector<handle_pair> found;
  m.find_pairs(found);
  EXPECT_EQ(as_indices(found, all_h), brute(all_b));
  EXPECT_NO_THROW(m.validate());
  EXPECT_EQ(m.path_counts().bulk_inserts, 2u);
  for (std::size_t i = 0; i < batch.size(); ++i) EXPECT_EQ(m.get(more[i]), batch[i]);
}

// The anchor's edge cases: all boxes zero-size (no size to anchor at), all
// equal cubes (sqrt(2) times their size as before), a factor below 1 + 1/64.
TYPED_TEST(OneShot, AnchorEdgeCases) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  hhg::scenes::rng r(5);
  std::vector<hhg::box<D, T>> points(500), cubes(500);
  for (std::size_t i = 0; i < points.size(); ++i)
    for (int a = 0; a < D; ++a) {
      const double c = std::floor(r.uniform(0, 8));  // repeated points: pairs
      points[i].min[a] = points[i].max[a] = static_cast<T>(c);
      const double x = r.uniform(0, 200);
      cubes[i].min[a] = static_cast<T>(x);
      cubes[i].max[a] = static_cast<T>(x + 3);
    }
  for (const double f : {4.0, 1.01}) {
    hhg::config c;
    c.hierarchy_factor = f;
    for (const auto* bs : {&points, &cubes}) {
      TypeParam m(c);
      m.set_tuning(small_bulk());
      EXPECT_EQ(hhg::all_pairs(m, std::span<const hhg::box<D, T>>(*bs)), brute(*bs)) << "factor " << f;
      EXPECT_NO_THROW(m.validate());
    }
    TypeParam m(c);
    hhg::detail::tuning t = small_bulk();
    t.spread_max_log2 = 0;  // (these cubes are far apart: with the spread, cells 2^k times larger, levels.hpp)
    m.set_tuning(t);
    hhg::all_pairs(m, std::span<const hhg::box<D, T>>(cubes));
    if (f == 4.0) {
      EXPECT_NEAR(m.stats().grids.back().cell_size, 3 * std::sqrt(2.0), 0.05);
    }
  }
}

}  // namespace
