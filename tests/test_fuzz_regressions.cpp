// Inputs found by the fuzzer (tests/fuzz), kept as regression tests.
#include "hhg/hierarchical_hashing.hpp"
#include "hhg/spatial_hashing.hpp"
#include "support.hpp"

namespace hhg_test {
namespace {

// A box whose edge, max - min = 16 + 1e-30, rounds to 16: class 16 would let
// it span 3 cells per axis, and the corner hashing of multilevel and
// hierarchical hashing missed its pair with a box in the middle cell.
template <class M>
void rounded_edge_case() {
  M m;
  hhg::brute_force<2, double> bf;
  const std::vector<box<2, double>> boxes = {{{4.9406564584124654e-324, 6}, {4.9406564584124654e-324, 20.25}},
                                             {{-1e-30, -6}, {16, 8}}};
  EXPECT_EQ(hhg::all_pairs(m, std::span<const box<2, double>>(boxes)),
            hhg::all_pairs(bf, std::span<const box<2, double>>(boxes)));
}

TEST(FuzzRegression, RoundedEdgeSpansThreeCellsMultilevel) { rounded_edge_case<hhg::multilevel_hashing<2, double>>(); }
TEST(FuzzRegression, RoundedEdgeSpansThreeCellsHierarchical) {
  rounded_edge_case<hhg::hierarchical_hashing<2, double>>();
}

// A tiny negative coordinate over a huge class: ldexp underflows to -0, whose
// floor put the corner in cell 0 instead of -1 at the coarse classes, so the
// corner was not nested in its parent cell and the pair (1, 5) was pruned.
TEST(FuzzRegression, UnderflowToNegativeZeroHierarchical) {
  using B = box<3, double>;
  const double h = 1.0000000000000001e+300;
  const std::vector<B> boxes = {{{-11.625, -h, 11.125}, {-0.5, 0, 20.5}},
                                {{-16, -16, -16}, {0, 0, 0}},
                                {{-16, -h, -h}, {-9.75, -h, -h}},
                                {{-h, -h, -h}, {-h, -h, -h}},
                                {{4.9406564584124654e-324, 4.9406564584124654e-324, -15.5},
                                 {4.9406564584124654e-324, 4.9406564584124654e-324, -15.5}},
                                {{-0.0, -12.375, -1e-30}, {6, -12.375, 0}}};
  hhg::hierarchical_hashing<3, double> m;
  hhg::multilevel_hashing<3, double> ml;
  hhg::brute_force<3, double> bf;
  const auto want = hhg::all_pairs(bf, std::span<const B>(boxes));
  ASSERT_EQ(want.size(), 1u);
  EXPECT_EQ(hhg::all_pairs(m, std::span<const B>(boxes)), want);
  EXPECT_EQ(hhg::all_pairs(ml, std::span<const B>(boxes)), want);
}

}  // namespace
}  // namespace hhg_test
