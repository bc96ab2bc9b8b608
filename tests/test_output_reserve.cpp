// find_pairs sizes its output before the walks (hash_grids.cpp): from the
// last detection's count, or, for a first detection over
// tuning::reserve_estimate_min objects, from a sample of the objects
// (counted by path_counts().outputs_estimated). The pairs stay exact
// (against brute force) whatever the estimate, which these tests also check
// is close on uniform, many-level, wrapped-around and pairless scenes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <string_view>
#include <type_traits>
#include <vector>

#include "hhg/broad_phase.hpp"
#include "hhg/brute_force.hpp"
#include "hhg/hash_grids.hpp"
#include "hhg/scenes.hpp"
#include "support.hpp"

namespace {

using hhg::handle;
using hhg::handle_pair;
using hhg_test::as_indices;
using hhg_test::brute_pairs;

template <class M>
class OutputReserve : public ::testing::Test {};
using reserve_types = ::testing::Types<HHG_TEST_VARIANTS(hhg::hash_grids)>;
TYPED_TEST_SUITE(OutputReserve, reserve_types);

// n boxes, centres uniform in [origin, origin + world)^D; edges uniform in
// [0, edge) or, with `decades`, log-uniform over that many decades below edge.
template <int D, class T>
std::vector<hhg::box<D, T>> boxes(std::uint64_t seed, std::size_t n, double world, double edge, double origin,
                                  int decades = 0) {
  hhg::scenes::rng r(seed);
  std::vector<hhg::box<D, T>> bs(n);
  for (auto& b : bs)
    for (int i = 0; i < D; ++i) {
      const double c = origin + r.uniform(0, world);
      const double e = decades > 0 ? edge * std::pow(10.0, -decades * r.uniform()) : r.uniform(0, edge);
      b.min[i] = static_cast<T>(c);
      b.max[i] = static_cast<T>(c + e);
    }
  return bs;
}

hhg::detail::tuning estimate_from(std::size_t n) {
  hhg::detail::tuning t;
  t.reserve_estimate_min = n;
  return t;
}

// A first detection into an empty vector: the sample runs once, the pairs
// are exact, and the capacity is the estimate + 1/4 + 1024, which lies
// within 1/3 of the count on these scenes (a vector grown by doubling would
// land anywhere from 1x to 2x).
TYPED_TEST(OutputReserve, FirstDetectionReservesTheSampledEstimate) {
  using M = TypeParam;
  constexpr int D = M::dimension;
  using T = typename M::scalar;
  struct scene {
    const char* name;
    std::vector<hhg::box<D, T>> bs;
  };
  const double world = D == 3 ? 40 : 160;
  const std::vector<scene> scenes = {
      {"uniform", boxes<D, T>(1, 6000, world, 2.5, 0)},
      {"far from the origin", boxes<D, T>(2, 6000, world, 2.5, std::is_same_v<T, float> ? 1e4 : 1e9)},
      {"three decades of sizes (many levels)", boxes<D, T>(3, 6000, world, 20, 0, 3)},
      {"a crowded clump", boxes<D, T>(4, 3000, world / 20, 1, 0)},
  };
  for (const scene& sc : scenes) {
    SCOPED_TRACE(sc.name);
    M m;
    m.set_tuning(estimate_from(1000));
    const std::vector<handle> hs = m.insert(std::span<const hhg::box<D, T>>(sc.bs));
    std::vector<handle_pair> out;
    m.find_pairs(out);
    EXPECT_EQ(m.path_counts().outputs_estimated, 1u);
    const auto want = brute_pairs<M>(std::span<const hhg::box<D, T>>(sc.bs));
    ASSERT_EQ(as_indices(out, hs), want);
    ASSERT_GT(want.size(), 2000u);  // (the scenes have pairs to estimate)
    const double ratio = static_cast<double>(out.capacity() - 1024) / static_cast<double>(want.size());
    EXPECT_GT(ratio, 1.25 * 0.75) << out.capacity() << " for " << want.size();
    EXPECT_LT(ratio, 1.25 * 1.33) << out.capacity() << " for " << want.size();
  }
}

// No pairs: the estimate is 0 and the reservation stays small.
TYPED_TEST(OutputReserve, PairlessSceneReservesLittle) {
  using M = TypeParam;
  constexpr int D = M::dimension;
  using T = typename M::scalar;
  std::vector<hhg::box<D, T>> bs;
  for (int k = 0; k < 3000; ++k) {
    hhg::box<D, T> b;
    for (int i = 0; i < D; ++i) {
      b.min[i] = static_cast<T>(4 * ((k >> (4 * i)) & 15) + (i == 0 ? 64 * (k >> 8) : 0));
      b.max[i] = b.min[i] + 1;
    }
    bs.push_back(b);
  }
  M m;
  m.set_tuning(estimate_from(1000));
  const std::vector<handle> hs = m.insert(std::span<const hhg::box<D, T>>(bs));
  std::vector<handle_pair> out;
  m.find_pairs(out);
  EXPECT_EQ(m.path_counts().outputs_estimated, 1u);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(out.capacity(), 1024u);
}

// After a detection, a new vector gets the last count + 1/8, without a
// sample; a reused one keeps its capacity. Below the minimum, and for
// for_each_pair, nothing is sampled; clear() forgets the count.
TYPED_TEST(OutputReserve, LaterDetectionsReserveTheLastCount) {
  using M = TypeParam;
  constexpr int D = M::dimension;
  using T = typename M::scalar;
  const double world = D == 3 ? 40 : 160;
  std::vector<hhg::box<D, T>> bs = boxes<D, T>(5, 5000, world, 2.5, 0);
  M m;
  m.set_tuning(estimate_from(4000));
  std::vector<handle> hs = m.insert(std::span<const hhg::box<D, T>>(bs));
  std::vector<handle_pair> first;
  m.find_pairs(first);
  ASSERT_EQ(m.path_counts().outputs_estimated, 1u);
  const std::size_t n1 = first.size();
  // the objects move: the new vector is sized from the last count
  for (auto& b : bs)
    for (int i = 0; i < D; ++i) {
      b.min[i] += static_cast<T>(0.25);
      b.max[i] += static_cast<T>(0.25);
    }
  m.move(std::span<const handle>(hs), std::span<const hhg::box<D, T>>(bs));
  std::vector<handle_pair> second;
  m.find_pairs(second);
  EXPECT_EQ(m.path_counts().outputs_estimated, 1u);
  ASSERT_LE(second.size(), n1 + n1 / 8);
  EXPECT_EQ(second.capacity(), n1 + n1 / 8);
  EXPECT_EQ(as_indices(second, hs), brute_pairs<M>(std::span<const hhg::box<D, T>>(bs)));
  const std::size_t kept = first.capacity();
  m.find_pairs(first);  // reused: enough room already
  EXPECT_EQ(first.capacity(), kept);
  // clear(): the next first detection samples again, or not below the minimum
  m.clear();
  const std::span<const hhg::box<D, T>> fewer(bs.data(), 3000);
  hs = m.insert(fewer);
  std::uint64_t visits = 0;
  m.for_each_pair([&](handle, handle) { ++visits; });
  EXPECT_EQ(visits, brute_pairs<M>(fewer).size());
  m.clear();
  hs = m.insert(std::span<const hhg::box<D, T>>(bs));
  std::vector<handle_pair> third;
  m.find_pairs(third);
  EXPECT_EQ(m.path_counts().outputs_estimated, 2u);
  EXPECT_EQ(as_indices(third, hs), brute_pairs<M>(std::span<const hhg::box<D, T>>(bs)));
}

}  // namespace

// The detection's and the bulk move's scratch (row index, radix sort
// scratch, across-grid keys, each grid's key list) is kept between steps and
// grows by 1/16 when a step needs more, without copying: it does not double
// as a vector's resize would (the freed old array would stay resident beside
// the new one), and a small grid's key list does not keep the sort scratch's
// buffer, sized for the largest grid (Terdiman's data at 10^4: three levels,
// two of them sorted in one pass). Over many steps of moving objects, whose
// row and cell counts wobble, the memory held outside the grids stays within
// 1/16 of what the first two steps left (the first sorts every key, the
// second merges the cell changes into that order, each with its own
// scratch), and the pairs stay exact.
TEST(OutputReserve, ScratchDoesNotDoubleBetweenSteps) {
  using M = hhg::hash_grids<3, double>;
  for (const char* scenario : {"equal", "varied", "terdiman"}) {
    hhg::scenes::thesis_scenario<3, double> scene(hhg::scenes::named_scenario_params(scenario, 10000, 5));
    M m;
    const std::vector<handle> hs = m.insert(std::span<const hhg::box<3, double>>(scene.boxes()));
    std::vector<handle_pair> found;
    auto outside_grids = [&] {
      const hhg::statistics st = m.stats();
      std::size_t b = st.bytes;
      for (const auto& g : st.grids) b -= g.bytes;
      return b;
    };
    std::size_t first = 0, most = 0;
    for (int step = 0; step < 40; ++step) {
      scene.step();
      m.move(std::span<const handle>(hs), std::span<const hhg::box<3, double>>(scene.boxes()));
      m.find_pairs(found);
      (step <= 1 ? first : most) = std::max(step <= 1 ? first : most, outside_grids());
    }
    EXPECT_GT(m.path_counts().batch_bulk, 0u) << scenario;  // the bulk move's scratch was used
    if (std::string_view(scenario) != "terdiman") {         // (one grid: the merge)
      EXPECT_GT(m.path_counts().batch_merged, 0u) << scenario;
    }
    EXPECT_GT(m.path_counts().walk_ordered, 0u) << scenario;  // and the ordered walk's rows
    EXPECT_LE(most, first + first / 16) << scenario;
    EXPECT_EQ(as_indices(found, hs), brute_pairs<M>(std::span<const hhg::box<3, double>>(scene.boxes()))) << scenario;
  }
}
