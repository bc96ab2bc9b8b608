// The conformance suite (conformance.hpp) on sweep and prune, in 2D and 3D,
// float and double; and tests aimed at what is particular to it: the axes
// kept sorted incrementally over many small moves, ties of min and max
// endpoints, degenerate infinite boxes, and inserts and removes batched
// between updates (including a slot reused before the update).
#include <gtest/gtest.h>

#include "conformance.hpp"
#include "hhg/sweep_and_prune.hpp"

namespace hhg_test {

using hhg::sweep_and_prune;

using sap_types = ::testing::Types<HHG_TEST_VARIANTS(sweep_and_prune)>;
INSTANTIATE_TYPED_TEST_SUITE_P(Sap, Conformance, sap_types, method_names);

template <class M>
class SapTest : public ::testing::Test {};
TYPED_TEST_SUITE(SapTest, sap_types, method_names);

// Many steps of small moves (the coherent case insertion sort is for): the
// axes stay sorted, positions stay right and the pair set equals brute force.
TYPED_TEST(SapTest, ManySmallMovesStaySorted) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  hhg::scenes::thesis_params p;
  p.n = 800;
  p.max_speed_fraction = 0.01;
  hhg::scenes::thesis_scenario<D, T> scene(p);
  mirror<TypeParam> m;
  for (const auto& b : scene.boxes()) m.insert(b);
  ASSERT_TRUE(m.check());
  std::uint64_t swaps = 0;
  for (int k = 0; k < 60; ++k) {
    scene.step();
    for (std::size_t i = 0; i < p.n; ++i) m.move(i, scene.boxes()[i]);
    if (k % 10 == 9) {
      ASSERT_TRUE(m.check()) << "step " << k;
      swaps += m.subject().swaps();
    } else {
      m.subject().update();
      m.subject().validate();
    }
  }
  EXPECT_GT(swaps, 0u) << "the objects moved past each other";
}

// Min equal to max is an overlap (closed), in every order of arrival and after
// moving onto the tie from either side.
TYPED_TEST(SapTest, TiesOfMinAndMaxOverlap) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  mirror<TypeParam> m;
  m.insert(cube<D, T>(0, 1));   // [0,1]
  m.insert(cube<D, T>(1, 1));   // [1,2]: touches at 1
  m.insert(cube<D, T>(2, 0));   // point at 2: touches the second
  m.insert(cube<D, T>(-3, 0));  // a lone point
  ASSERT_TRUE(m.check());
  // Move the lone point from below onto the corner 0 of the first box, and
  // the second box away and back onto the tie from above.
  m.move(3, cube<D, T>(0, 0));
  m.move(1, cube<D, T>(1.5, 1));
  ASSERT_TRUE(m.check());
  m.move(1, cube<D, T>(1, 1));
  ASSERT_TRUE(m.check());
  m.move(1, cube<D, T>(1.0001, 1));  // just apart from the first box
  ASSERT_TRUE(m.check());
  m.move(1, cube<D, T>(1, 1));
  m.move(2, cube<D, T>(2.5, 0));
  ASSERT_TRUE(m.check());
  m.move(2, cube<D, T>(2, 0));
  ASSERT_TRUE(m.check());
  // Many identical boxes and points at the same coordinates.
  for (int i = 0; i < 20; ++i) m.insert(i % 2 ? cube<D, T>(1, 0) : cube<D, T>(1, 1));
  ASSERT_TRUE(m.check());
  for (std::size_t i = 4; i < 24; i += 3) m.move(i, cube<D, T>(0, 1));
  ASSERT_TRUE(m.check());
}

// Degenerate infinite boxes: -inf..-inf and +inf..+inf on an axis, half
// spaces and the everything box, moved between those shapes.
TYPED_TEST(SapTest, InfiniteEndpoints) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  using B = typename TypeParam::box_type;
  constexpr T inf = std::numeric_limits<T>::infinity();
  mirror<TypeParam> m;
  B low = cube<D, T>(0, 1), high = cube<D, T>(0, 1), half = cube<D, T>(0, 1), all;
  low.min[0] = low.max[0] = -inf;
  high.min[0] = high.max[0] = inf;
  half.min[0] = -inf;
  for (int i = 0; i < D; ++i) {
    all.min[static_cast<std::size_t>(i)] = -inf;
    all.max[static_cast<std::size_t>(i)] = inf;
  }
  for (const B& b : {low, low, high, half, all, cube<D, T>(0, 1), cube<D, T>(-1e30, 1)}) m.insert(b);
  ASSERT_TRUE(m.check());
  m.move(0, high);
  m.move(2, low);
  ASSERT_TRUE(m.check());
  m.move(4, cube<D, T>(5, 1));
  m.move(3, all);
  ASSERT_TRUE(m.check());
  m.move(0, low);
  m.move(1, half);
  ASSERT_TRUE(m.check());
}

// Inserts and removes recorded between updates: insert then remove before the
// update, remove then reuse the slot before the update, moves of removed and
// not-yet-inserted objects, and clear with pending operations.
TYPED_TEST(SapTest, BatchedInsertsAndRemoves) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  hhg::scenes::rng r(42);
  mirror<TypeParam> m;
  for (int i = 0; i < 200; ++i) m.insert(random_box<D, T>(r, 10));
  ASSERT_TRUE(m.check());
  for (int round = 0; round < 20; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    for (int k = 0; k < 15; ++k) {
      const auto& live = m.live_ids();
      const std::size_t id = live[r.below(live.size())];
      switch (r.below(4)) {
        case 0:
          m.move(id, random_box<D, T>(r, 10));
          m.remove(id);
          break;  // move then remove
        case 1:
          m.remove(id);
          m.insert(random_box<D, T>(r, 10));
          break;  // slot reused at once
        case 2: {
          const std::size_t fresh = m.insert(random_box<D, T>(r, 10));
          m.move(fresh, random_box<D, T>(r, 10));
          if (r.below(2)) m.remove(fresh);  // never reaches the axes
          break;
        }
        default: m.move(id, shifted(m.box_of(id), r.uniform(-0.2, 0.2)));
      }
      m.subject().validate();
    }
    ASSERT_TRUE(m.check(round % 2 == 0));
  }
  m.move(m.live_ids()[0], cube<D, T>(3, 1));
  m.insert(cube<D, T>(3, 1));
  m.clear();
  ASSERT_TRUE(m.check());
  for (int i = 0; i < 50; ++i) m.insert(random_box<D, T>(r, 5));
  ASSERT_TRUE(m.check());
}

// Work follows motion: with no motion an update does no swaps and no box tests.
TYPED_TEST(SapTest, NoMotionNoWork) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  hhg::scenes::thesis_params p;
  p.n = 500;
  hhg::scenes::thesis_scenario<D, T> scene(p);
  TypeParam s;
  std::vector<handle> hs;
  for (const auto& b : scene.boxes()) hs.push_back(s.insert(b));
  std::vector<handle_pair> first, again;
  s.find_pairs(first);
  EXPECT_GT(s.box_tests(), 0u);
  for (std::size_t i = 0; i < hs.size(); ++i) s.move(hs[i], scene.boxes()[i]);  // same boxes
  s.find_pairs(again);
  EXPECT_EQ(s.swaps(), 0u);
  EXPECT_EQ(s.box_tests(), 0u);
  EXPECT_EQ(first, again);
  EXPECT_GT(s.bytes(), 0u);
}

// Regression: a pair that separates on two (or all) axes in one step must
// leave the pair set (an early version erased only when the boxes still
// overlapped on every other axis, so a diagonal jump kept the pair).
TYPED_TEST(SapTest, SeparatingOnSeveralAxesAtOnce) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  mirror<TypeParam> m;
  m.insert(cube<D, T>(0, 1));
  m.insert(cube<D, T>(0.5, 1));
  ASSERT_TRUE(m.check());
  m.move(1, cube<D, T>(5, 1));  // away along the diagonal: separated on every axis
  ASSERT_TRUE(m.check());
  m.move(1, cube<D, T>(0.5, 1));  // and back
  ASSERT_TRUE(m.check());
}

}  // namespace hhg_test
