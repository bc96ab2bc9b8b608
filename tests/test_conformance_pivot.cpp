// The conformance suite (conformance.hpp) on pivot-table hashing, dense and
// chunked, in 2D and 3D, float and double; the same pairs for any thread
// count; chunked memory independent of the scene's extent.
#include "conformance.hpp"
#include "hhg/pivot_hashing.hpp"

namespace hhg_test {

using hhg::pivot_chunked;
using hhg::pivot_hashing;

using pivot_types = ::testing::Types<HHG_TEST_VARIANTS(pivot_hashing), HHG_TEST_VARIANTS(pivot_chunked)>;
INSTANTIATE_TYPED_TEST_SUITE_P(Pivot, Conformance, pivot_types, method_names);

// Threads: the pairs, and their order, are the same for 1, 2, 3 and 8
// threads, on scenes big enough to be split (and equal brute force).
template <class M>
class PivotThreads : public ::testing::Test {};
using pivot_3d = ::testing::Types<pivot_hashing<3, double>, pivot_chunked<3, float>, pivot_hashing<2, float>>;
TYPED_TEST_SUITE(PivotThreads, pivot_3d, method_names);

TYPED_TEST(PivotThreads, SamePairsForAnyThreadCount) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  hhg::scenes::thesis_params p;
  p.n = 6000;
  p.size_max = 4;
  hhg::scenes::thesis_scenario<D, T> scene(p);
  TypeParam m(1);
  hhg::brute_force<D, T> bf;
  std::vector<handle> hs, bh;
  for (const auto& b : scene.boxes()) {
    hs.push_back(m.insert(b));
    bh.push_back(bf.insert(b));
  }
  m.insert(hhg::box<D, T>{});  // a point at the origin
  bf.insert(hhg::box<D, T>{});
  std::vector<handle_pair> one, many;
  for (int step = 0; step < 3; ++step) {
    m.set_threads(1);
    m.find_pairs(one);
    auto expected = std::vector<handle_pair>();
    bf.find_pairs(expected);
    auto a = one, b = expected;
    hhg::canonicalize(a);
    hhg::canonicalize(b);
    ASSERT_EQ(a, b) << "step " << step;
    for (unsigned t : {2u, 3u, 8u}) {
      m.set_threads(t);
      m.find_pairs(many);
      ASSERT_EQ(many, one) << t << " threads, step " << step;
    }
    scene.step();
    for (std::size_t i = 0; i < hs.size(); ++i) {
      m.move(hs[i], scene.boxes()[i]);
      bf.move(bh[i], scene.boxes()[i]);
    }
  }
}

// The chunked table allocates pages where objects are: spreading the same
// objects over a 10^6 times larger extent does not grow its memory much,
// while the dense table is capped (it coarsens its cells instead).
TEST(PivotChunked, MemoryFollowsObjectsNotExtent) {
  hhg::scenes::rng r(3);
  std::vector<hhg::box<3, double>> near, far;
  for (int i = 0; i < 2000; ++i) {
    const double x = r.uniform(0, 100), y = r.uniform(0, 100), z = r.uniform(0, 100);
    near.push_back(cube<3, double>(0, 1));
    for (int k = 0; k < 3; ++k) near.back().min[k] = (k == 0 ? x : k == 1 ? y : z);
    for (int k = 0; k < 3; ++k) near.back().max[k] = near.back().min[k] + 1;
    far.push_back(near.back());
    for (int k = 0; k < 3; ++k) {
      far.back().min[k] *= 1e6;
      far.back().max[k] = far.back().min[k] + 1;
    }
  }
  pivot_chunked<3, double> a(1), b(1);
  hhg::brute_force<3, double> bf;
  EXPECT_EQ(hhg::all_pairs(a, std::span<const hhg::box<3, double>>(near)),
            hhg::all_pairs(bf, std::span<const hhg::box<3, double>>(near)));
  EXPECT_EQ(hhg::all_pairs(b, std::span<const hhg::box<3, double>>(far)),
            hhg::all_pairs(bf, std::span<const hhg::box<3, double>>(far)));
  EXPECT_LE(b.pivot_cells(), 64u * 2000u) << "at most one page per object";
  EXPECT_LT(b.bytes(), 4 * a.bytes() + 200000) << "memory follows the objects";
  EXPECT_NEAR(b.cell_size(), a.cell_size(), 1e-6) << "no coarsening needed";
}

}  // namespace hhg_test
