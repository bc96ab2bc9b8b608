// The conformance suite (conformance.hpp) on the strong uniform-grid baseline
// (`grid`), 2D and 3D, float and double; its memory guard and its cell.
#include "conformance.hpp"
#include "hhg/uniform_grid.hpp"

namespace hhg_test {

using hhg::uniform_grid;

using uniform_grid_types = ::testing::Types<HHG_TEST_VARIANTS(uniform_grid)>;
INSTANTIATE_TYPED_TEST_SUITE_P(UniformGrid, Conformance, uniform_grid_types, method_names);

// The cell is the longest edge (plus the guard band); a huge sparse domain
// coarsens the cells so the dense array stays within max(4 N, 4096) cells,
// and the pairs stay exact.
TEST(UniformGrid, CellIsTheLongestEdgeAndMemoryIsCapped) {
  hhg::scenes::rng r(11);
  std::vector<hhg::box<3, double>> dense, sparse;
  for (int i = 0; i < 3000; ++i) {
    hhg::box<3, double> b;
    const double s = r.uniform(0.5, 2);
    for (int k = 0; k < 3; ++k) {
      b.min[k] = r.uniform(0, 30);
      b.max[k] = b.min[k] + (k == 0 ? 2.5 : s);
    }
    dense.push_back(b);
    for (int k = 0; k < 3; ++k) {
      b.min[k] *= 1e4;
      b.max[k] = b.min[k] + s;
    }
    sparse.push_back(b);
  }
  uniform_grid<3, double> a, b;
  hhg::brute_force<3, double> bf;
  EXPECT_EQ(hhg::all_pairs(a, std::span<const hhg::box<3, double>>(dense)),
            hhg::all_pairs(bf, std::span<const hhg::box<3, double>>(dense)));
  EXPECT_NEAR(a.cell_size(), 2.5, 1e-5);
  EXPECT_LE(a.cells(), 4096u + 4 * 3000u);
  const auto want = hhg::all_pairs(bf, std::span<const hhg::box<3, double>>(sparse));
  EXPECT_EQ(hhg::all_pairs(b, std::span<const hhg::box<3, double>>(sparse)), want);
  EXPECT_LE(b.cells(), 4 * 3000u) << "the dense array is capped";
  EXPECT_GT(b.cell_size(), 2.0) << "by enlarging the cells";
}

// Pairs exactly on cell boundaries: boxes on the lattice of the cell edge
// touching by faces, edges and corners, each pair once.
TEST(UniformGrid, TouchingOnCellBoundariesEachPairOnce) {
  std::vector<hhg::box<2, float>> boxes;
  for (int x = 0; x < 20; ++x)
    for (int y = 0; y < 20; ++y) boxes.push_back({{float(x), float(y)}, {float(x + 1), float(y + 1)}});
  uniform_grid<2, float> g;
  hhg::brute_force<2, float> bf;
  const auto got = hhg::all_pairs(g, std::span<const hhg::box<2, float>>(boxes));
  EXPECT_EQ(got, hhg::all_pairs(bf, std::span<const hhg::box<2, float>>(boxes)));
  EXPECT_EQ(got.size(), 2u * 19 * 20 + 2u * 19 * 19);  // 4-neighbours and diagonals
}

// Finite coordinates more than DBL_MAX apart (the span overflows): every
// object still lands in a cell, and the pairs are exact.
TEST(UniformGrid, CoordinatesSpanningMoreThanTheLargestDouble) {
  hhg::scenes::rng r(5);
  std::vector<hhg::box<3, double>> boxes;
  for (int i = 0; i < 200; ++i) {
    const double base = i % 3 == 0 ? -1.5e308 : i % 3 == 1 ? 1.5e308 : 0.0;
    const double scale = i % 3 == 2 ? 10.0 : 1e300;
    hhg::box<3, double> b;
    for (int k = 0; k < 3; ++k) {
      b.min[k] = base + scale * static_cast<double>(r.below(4));
      b.max[k] = b.min[k] + (i % 3 == 2 ? 3.0 : 1e300);
    }
    boxes.push_back(b);
  }
  uniform_grid<3, double> g;
  hhg::brute_force<3, double> bf;
  const auto want = hhg::all_pairs(bf, std::span<const hhg::box<3, double>>(boxes));
  EXPECT_EQ(hhg::all_pairs(g, std::span<const hhg::box<3, double>>(boxes)), want);
  EXPECT_FALSE(want.empty());
}

}  // namespace hhg_test
