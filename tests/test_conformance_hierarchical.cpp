// The conformance suite (conformance.hpp) on hierarchical hashing, in 2D and
// 3D, float and double; plus pruning on a scene with empty regions.
#include "conformance.hpp"
#include "hhg/hierarchical_hashing.hpp"

namespace hhg_test {

using hhg::hierarchical_hashing;

using hierarchical_types = ::testing::Types<HHG_TEST_VARIANTS(hierarchical_hashing)>;
INSTANTIATE_TYPED_TEST_SUITE_P(Hierarchical, Conformance, hierarchical_types, method_names);

// Small objects clustered in one corner of a large object's cells, many
// classes: exact pairs, and the has_children flags stop most descents.
TEST(HierarchicalHashing, PrunesEmptyRegions) {
  hhg::scenes::rng r(4);
  std::vector<hhg::box<2, double>> boxes;
  for (int i = 0; i < 200; ++i) {  // large objects spread out
    const double x = r.uniform(-1000, 1000), y = r.uniform(-1000, 1000), s = r.uniform(20, 60);
    boxes.push_back({{x, y}, {x + s, y + s}});
  }
  for (int i = 0; i < 800; ++i) {  // tiny objects in one small region
    const double x = r.uniform(0, 10), y = r.uniform(0, 10), s = r.uniform(0.01, 0.3);
    boxes.push_back({{x, y}, {x + s, y + s}});
  }
  hierarchical_hashing<2, double> h;
  hhg::brute_force<2, double> bf;
  EXPECT_EQ(hhg::all_pairs(h, std::span<const hhg::box<2, double>>(boxes)),
            hhg::all_pairs(bf, std::span<const hhg::box<2, double>>(boxes)));
  EXPECT_GE(h.classes(), 6u);
  // without pruning each large object would look at 4 cells in each of its
  // classes; with it, most large objects stop at their own class
  EXPECT_LT(h.cells_visited(), 4u * boxes.size() * h.classes() / 2);
}

}  // namespace hhg_test
