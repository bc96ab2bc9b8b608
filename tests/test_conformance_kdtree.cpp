// The conformance suite (conformance.hpp) on the linear kd-tree, with and
// without element splitting, in 2D and 3D, float and double; and the paper's
// counters: kd-tree-1 candidates >= kd-tree-2 unique candidates >= pairs, and
// splitting cuts the candidates on a scene with large objects.
#include "conformance.hpp"
#include "hhg/linear_kdtree.hpp"

namespace hhg_test {

using hhg::linear_kdtree;

// The default constructor splits; this one does not (own method name so the
// test names differ).
template <int D, class T>
class kdtree_nosplit : public linear_kdtree<D, T> {
 public:
  static constexpr const char* method_name = "kdtree_nosplit";
  kdtree_nosplit() : linear_kdtree<D, T>(false) {}
};

using kdtree_types =
    ::testing::Types<HHG_TEST_VARIANTS(linear_kdtree), kdtree_nosplit<2, double>, kdtree_nosplit<3, float>>;
INSTANTIATE_TYPED_TEST_SUITE_P(KdTree, Conformance, kdtree_types, method_names);

TEST(KdTree, CountersAndSplitting) {
  hhg::scenes::rng r(11);
  std::vector<hhg::box<3, double>> boxes;
  for (int i = 0; i < 3000; ++i) {
    hhg::box<3, double> b;
    const double s = r.uniform(0.5, 1.5);
    for (int k = 0; k < 3; ++k) {
      b.min[k] = r.uniform(0, 30);
      b.max[k] = b.min[k] + s;
    }
    boxes.push_back(b);
  }
  hhg::brute_force<3, double> bf;
  const auto want = hhg::all_pairs(bf, std::span<const hhg::box<3, double>>(boxes));
  linear_kdtree<3, double> split(true, true), plain(false, true);
  EXPECT_EQ(hhg::all_pairs(split, std::span<const hhg::box<3, double>>(boxes)), want);
  EXPECT_EQ(hhg::all_pairs(plain, std::span<const hhg::box<3, double>>(boxes)), want);
  EXPECT_EQ(plain.records(), boxes.size());
  EXPECT_GT(split.records(), boxes.size());
  EXPECT_LE(split.records(), 8 * boxes.size());
  for (const auto* k : {&split, &plain}) {
    EXPECT_GE(k->candidates(), k->unique_candidates());
    EXPECT_GE(k->unique_candidates(), want.size());
  }
  EXPECT_EQ(plain.candidates(), plain.unique_candidates()) << "no repeats without splitting";
  EXPECT_LT(split.unique_candidates() * 4, plain.candidates()) << "splitting selects far fewer candidates";
  EXPECT_LT(split.node_volume(), plain.node_volume());
}

}  // namespace hhg_test
