// The conformance suite (conformance.hpp) on the core methods: the
// hierarchical hash grid and brute force, in 2D and 3D, float and double.
#include "conformance.hpp"

namespace hhg_test {

using core_types = ::testing::Types<HHG_TEST_VARIANTS(hash_grids), brute_force<2, double>, brute_force<3, float>>;
INSTANTIATE_TYPED_TEST_SUITE_P(Core, Conformance, core_types, method_names);

}  // namespace hhg_test
