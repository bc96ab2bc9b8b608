// The conformance suite: written once, run on every pair-finding method.
//
// A method's test file instantiates it for the (dimension, scalar) types it
// supports:
//
//   #include "conformance.hpp"
//   namespace hhg_test {
//   using sap_types = ::testing::Types<hhg::sweep_and_prune<2, float>, ...>;
//   INSTANTIATE_TYPED_TEST_SUITE_P(Sap, Conformance, sap_types, method_names);
//   }
//
// Every check compares with brute force exactly (canonical pair lists, each
// pair once): all zoo scenes at several sizes and seeds, with moves, removals
// and re-insertions; the thesis scenario stepped with move(); random dynamic
// sequences (insert, move across sizes, to infinity and back, far away,
// remove, clear); bad input (NaN, min > max, stale and double-removed
// handles), which must throw hhg::error and change nothing; the one-shot
// all_pairs() helper; and the contract itself (a compile-time check).
#pragma once

#include <functional>

#include "hhg/broad_phase.hpp"
#include "support.hpp"

namespace hhg_test {

template <class M>
class Conformance : public ::testing::Test {};
TYPED_TEST_SUITE_P(Conformance);

/// Inserts a zoo scene, checks; moves every object onto another's box, checks;
/// removes every other object, checks; inserts them again, checks.
template <class M>
void conformance_zoo(hhg::scenes::zoo z, std::initializer_list<std::size_t> sizes) {
  constexpr int D = M::dimension;
  using T = typename M::scalar;
  for (const std::size_t n : sizes) {
    for (const std::uint64_t seed : {1u, 5u}) {
      if (n >= 1000 && seed != 1) continue;
      SCOPED_TRACE("scene " + hhg::scenes::to_string(z) + " n=" + std::to_string(n) + " seed=" + std::to_string(seed));
      const std::vector<box<D, T>> boxes = hhg::scenes::make_zoo_scene<D, T>(z, n, seed);
      mirror<M> m;
      for (const auto& b : boxes) m.insert(b);
      ASSERT_TRUE(m.check()) << "after inserting";
      ASSERT_TRUE(m.check(true)) << "for_each_pair";
      for (std::size_t i = 0; i < n; ++i) m.move(i, boxes[(i * 7 + 3) % n]);
      ASSERT_TRUE(m.check()) << "after permuting the boxes with move()";
      for (std::size_t i = 0; i < n; i += 2) m.remove(i);
      ASSERT_TRUE(m.check()) << "after removing every other object";
      for (std::size_t i = 0; i < n; i += 2) m.insert(boxes[i]);
      ASSERT_TRUE(m.check()) << "after inserting them again";
    }
  }
}

TYPED_TEST_P(Conformance, ContractSatisfied) {
  static_assert(hhg::dynamic_broad_phase<TypeParam>, "every method satisfies the dynamic contract");
  TypeParam m = make_method<TypeParam>();
  EXPECT_EQ(m.size(), 0u);
  std::vector<handle_pair> out{{}};
  m.find_pairs(out);
  EXPECT_TRUE(out.empty()) << "find_pairs clears its output";
}

TYPED_TEST_P(Conformance, EveryZooScene) {
  for (const auto z : hhg::scenes::all_zoo_scenes()) conformance_zoo<TypeParam>(z, {0, 1, 2, 33, 300});
}

TYPED_TEST_P(Conformance, LargerScenes) {
  using hhg::scenes::zoo;
  for (const auto z : {zoo::mixed, zoo::log_uniform, zoo::touching, zoo::unbounded, zoo::one_cell})
    conformance_zoo<TypeParam>(z, {2000});
}

TYPED_TEST_P(Conformance, ThesisScenarioMoving) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  hhg::scenes::thesis_params equal, varied, needles;
  equal.n = varied.n = needles.n = 1500;
  varied.size_max = 12;
  needles.elongation = 10;
  needles.domain_aspect = 16;
  for (const auto& p : {equal, varied, needles}) {
    SCOPED_TRACE("thesis sizes " + std::to_string(p.size_max) + " elongation " + std::to_string(p.elongation));
    hhg::scenes::thesis_scenario<D, T> scene(p);
    mirror<TypeParam> m;
    for (const auto& b : scene.boxes()) m.insert(b);
    ASSERT_TRUE(m.check()) << "initial";
    for (int k = 0; k < 6; ++k) {
      scene.step();
      for (std::size_t i = 0; i < p.n; ++i) m.move(i, scene.boxes()[i]);
      ASSERT_TRUE(m.check(k % 2 == 1)) << "after step " << k + 1;
    }
  }
}

TYPED_TEST_P(Conformance, RandomDynamicSequences) {
  for (std::uint64_t seed = 1; seed <= 6; ++seed) run_sequence<TypeParam>(seed, {"default", {}}, 600);
}

TYPED_TEST_P(Conformance, BadInputChangesNothing) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  using B = typename TypeParam::box_type;
  const auto boxes = hhg::scenes::make_zoo_scene<D, T>(hhg::scenes::zoo::mixed, 200, 3);
  TypeParam m = make_method<TypeParam>();
  std::vector<handle> hs;
  for (const auto& b : boxes) hs.push_back(m.insert(b));
  const handle gone = hs.back();
  m.remove(gone);
  hs.pop_back();
  auto state = [&] {
    std::vector<handle_pair> p;
    m.find_pairs(p);
    hhg::canonicalize(p);
    return std::make_pair(m.size(), p);
  };
  const auto before = state();
  B nan_box = boxes[0];
  nan_box.min[D - 1] = std::numeric_limits<T>::quiet_NaN();
  B inverted = boxes[0];
  inverted.min[0] = inverted.max[0] + 1;
  const auto expect_error = [&](hhg::errc code, const std::function<void()>& f, const char* what) {
    try {
      f();
      ADD_FAILURE() << what << ": no error";
    } catch (const hhg::error& e) {
      EXPECT_EQ(e.code(), code) << what << ": " << e.what();
    }
    EXPECT_EQ(state(), before) << what << " changed the structure";
  };
  expect_error(
      hhg::errc::nan_coordinate, [&] { m.insert(nan_box); }, "insert NaN");
  expect_error(
      hhg::errc::inverted_box, [&] { m.insert(inverted); }, "insert min > max");
  expect_error(
      hhg::errc::nan_coordinate, [&] { m.move(hs[3], nan_box); }, "move to NaN");
  expect_error(
      hhg::errc::inverted_box, [&] { m.move(hs[3], inverted); }, "move to min > max");
  expect_error(
      hhg::errc::invalid_handle, [&] { m.move(gone, boxes[1]); }, "move stale");
  expect_error(
      hhg::errc::invalid_handle, [&] { m.remove(gone); }, "remove twice");
  expect_error(
      hhg::errc::invalid_handle, [&] { m.remove(handle{}); }, "remove null");
  expect_error(
      hhg::errc::invalid_handle,
      [&] {
        m.remove(handle{1000000, 1});
      },
      "remove unknown");
  expect_error(
      hhg::errc::invalid_handle, [&] { (void)m.get(gone); }, "get stale");
  EXPECT_FALSE(m.contains(gone));
  EXPECT_FALSE(m.contains(handle{}));
  // A reused slot gets a new generation: the old handle stays stale.
  const handle again = m.insert(boxes.back());
  EXPECT_FALSE(m.contains(gone) && again == gone);
  EXPECT_TRUE(m.contains(again));
}

TYPED_TEST_P(Conformance, OneShotAllPairs) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  const auto boxes = hhg::scenes::make_zoo_scene<D, T>(hhg::scenes::zoo::mixed, 700, 9);
  TypeParam m = make_method<TypeParam>();
  brute_force<D, T> oracle;
  const auto got = hhg::all_pairs(m, std::span<const box<D, T>>(boxes));
  const auto want = hhg::all_pairs(oracle, std::span<const box<D, T>>(boxes));
  EXPECT_EQ(got, want);
  EXPECT_FALSE(want.empty());
  // Reusing the same structure for another set clears the first.
  const auto again = hhg::all_pairs(m, std::span<const box<D, T>>(boxes.data(), 100));
  const auto want_again = hhg::all_pairs(oracle, std::span<const box<D, T>>(boxes.data(), 100));
  EXPECT_EQ(again, want_again);
}

REGISTER_TYPED_TEST_SUITE_P(Conformance, ContractSatisfied, EveryZooScene, LargerScenes, ThesisScenarioMoving,
                            RandomDynamicSequences, BadInputChangesNothing, OneShotAllPairs);

}  // namespace hhg_test
