// Random sequences of every dynamic operation of the hash grid against a
// model and brute force, one worker and a pool in lockstep (dynamic_fuzz.hpp):
// 6 scene shapes (sizes near 1, over six decades, crowded, touching integer
// boxes, far from the origin, extremes), 32 configurations, fixed seeds
// (printed on failure with the last steps).
#include "dynamic_fuzz.hpp"

namespace hhg_test {
namespace {

template <class M>
class DynamicFuzz : public ::testing::Test {};
TYPED_TEST_SUITE(DynamicFuzz, grid_types, method_names);

TYPED_TEST(DynamicFuzz, LockstepAgainstTheModel) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  hhg::thread_pool pool(3);
  for (std::uint64_t seed = 1; seed <= 4; ++seed)
    for (int shape = 0; shape < 6; ++shape) {
      const int variant = static_cast<int>((seed * 7 + static_cast<std::uint64_t>(shape) + D) % 32);
      SCOPED_TRACE("seed " + std::to_string(seed) + " shape " + std::to_string(shape) + " variant " +
                   std::to_string(variant));
      const auto [c, small] = fuzz_config(variant);
      dynamic_fuzz<D, T> f(seed, shape, c, small, &pool);
      try {
        f.run(200);
      } catch (const std::exception& e) {
        FAIL() << e.what();
      }
    }
}

}  // namespace
}  // namespace hhg_test
