// The conformance suite (conformance.hpp) on uniform and multilevel spatial
// hashing, in 2D and 3D, float and double; plus what is particular to them.
#include "conformance.hpp"
#include "hhg/spatial_hashing.hpp"

namespace hhg_test {

using hhg::multilevel_hashing;
using hhg::uniform_hashing;

using hashing_types = ::testing::Types<HHG_TEST_VARIANTS(uniform_hashing), HHG_TEST_VARIANTS(multilevel_hashing)>;
INSTANTIATE_TYPED_TEST_SUITE_P(Hashing, Conformance, hashing_types, method_names);

// A fixed small cell makes big objects cover many cells (and the biggest go
// apart past max_cells): still exactly the brute-force pairs.
TEST(UniformHashing, FixedCellsAndObjectsKeptApart) {
  hhg::scenes::rng r(5);
  for (double cell : {0.25, 1.0, 3.0}) {
    uniform_hashing<3, double> u(cell, 64);
    hhg::brute_force<3, double> bf;
    std::vector<hhg::box<3, double>> boxes;
    for (int i = 0; i < 400; ++i) {
      const double s = i % 50 == 0 ? 30.0 : r.uniform(0.05, 2.0);
      boxes.push_back(cube<3, double>(r.uniform(-20, 20), s));
    }
    const auto got = hhg::all_pairs(u, std::span<const hhg::box<3, double>>(boxes));
    const auto want = hhg::all_pairs(bf, std::span<const hhg::box<3, double>>(boxes));
    EXPECT_EQ(got, want) << "cell " << cell;
    EXPECT_EQ(u.last_cell_size(), cell == 3.0 ? 4.0 : cell) << "cell sizes are powers of two";
  }
  EXPECT_THROW((uniform_hashing<2, float>(-1.0)), hhg::error);
  EXPECT_THROW((uniform_hashing<2, float>(std::nan(""))), hhg::error);
  EXPECT_THROW((uniform_hashing<2, float>(1.0, 0)), hhg::error);
}

// Sizes over many decades give many classes; each pair is still found once.
TEST(MultilevelHashing, ManyClasses) {
  hhg::scenes::rng r(8);
  multilevel_hashing<2, double> m;
  hhg::brute_force<2, double> bf;
  std::vector<hhg::box<2, double>> boxes;
  for (int i = 0; i < 600; ++i) boxes.push_back(cube<2, double>(r.uniform(-50, 50), std::pow(10.0, r.uniform(-4, 2))));
  const auto got = hhg::all_pairs(m, std::span<const hhg::box<2, double>>(boxes));
  EXPECT_EQ(got, hhg::all_pairs(bf, std::span<const hhg::box<2, double>>(boxes)));
  EXPECT_GE(m.classes(), 15u);
}

}  // namespace hhg_test
