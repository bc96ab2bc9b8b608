// The cell arithmetic of src/hash_grids/cells.hpp against plain scalar
// references: effective_size (the loop of std::max and std::fabs), cell_of
// (coord's floor_to_int per axis) and cell_and_reach (reach_of's floors of
// both corners). With SSE2 their double versions take two axes a vector and the floors from the 1.5 * 2^52 trick (the bulk
// move's pass 1, one-by-one insertion); these tests
// hold them to the references, bit for bit, on boxes near cell edges, far
// from the origin (up to the largest coordinates a box that fits a grid can
// have, 2^40 cells), negative, tiny, zero and infinite, in every rounding mode.
#include <gtest/gtest.h>

#include <cfenv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "hash_grids/cells.hpp"

namespace {

template <int D>
using types = hhg::detail::grid_types<D, double>;

// the scalar effective_size: what cells.hpp computed before it used vectors
template <int D>
double reference_effective_size(const hhg::box<D, double>& b, const std::array<double, D>& scale) {
  double edge = 0, mag = 0;
  for (int i = 0; i < D; ++i) {
    const double lo = b.min[i], hi = b.max[i];
    edge = std::max(edge, (hi - lo) * scale[i]);
    mag = std::max(mag, std::max(std::fabs(lo), std::fabs(hi)) * scale[i]);
  }
  double eff = std::max(edge, mag * 0x1p-40) * (1.0 + 0x1p-9);
  if (!(eff <= 0x1p900)) return std::numeric_limits<double>::infinity();
  if (eff > 0 && eff < 0x1p-900) eff = 0x1p-900;
  return eff;
}

template <int D>
typename types<D>::grid make_grid(double cell, const std::array<double, D>& scale, std::uint32_t bits0) {
  typename types<D>::grid g;
  g.cell_size = cell;
  for (int i = 0; i < D; ++i) {
    g.inv[i] = scale[i] / cell;
    g.bits[i] = bits0 + static_cast<std::uint32_t>(i);
    g.mask[i] = (1u << g.bits[i]) - 1;
  }
  return g;
}

// A box of grid g's objects (edge below a cell) at a coordinate drawn from
// one of several kinds: near 0, on a cell edge or one ulp off it, far out
// (up to the 2^40 cells a fitting box may lie from the origin), negative.
template <int D>
hhg::box<D, double> random_box(std::mt19937_64& rng, const typename types<D>::grid& g) {
  std::uniform_real_distribution<double> unit(0, 1);
  hhg::box<D, double> b;
  for (int i = 0; i < D; ++i) {
    const double cell = 1 / g.inv[i];
    double lo = 0;
    switch (rng() % 6) {
      case 0: lo = (unit(rng) - 0.5) * 64 * cell; break;
      case 1: lo = std::floor((unit(rng) - 0.5) * 1e6) * cell; break;  // on an edge
      case 2: lo = std::nextafter(std::floor((unit(rng) - 0.5) * 1e6) * cell, 0.0); break;
      case 3: lo = (unit(rng) - 0.5) * 0x1p39 * cell; break;  // far out
      case 4: lo = -std::ldexp(unit(rng), static_cast<int>(rng() % 40)) * cell; break;
      default: lo = std::ldexp(unit(rng), -static_cast<int>(rng() % 1000)); break;  // tiny, down to subnormal
    }
    const double edge = rng() % 8 == 0 ? 0 : unit(rng) * 0.9 * cell;
    b.min[i] = lo;
    b.max[i] = rng() % 16 == 0 ? std::nextafter(lo, 1e300) : lo + edge;
  }
  return b;
}

template <int D>
void expect_like_the_references(std::uint64_t seed) {
  using ty = types<D>;
  std::mt19937_64 rng(seed);
  std::size_t fitting = 0, reaching = 0;
  for (const double cell : {1.0, 12.2113, 0x1p-30, 3e7}) {
    std::array<double, D> scale{};
    for (int i = 0; i < D; ++i) scale[i] = i == 0 ? 1.0 : static_cast<double>(1u << (rng() % 3));
    const auto g = make_grid<D>(cell, scale, 4);
    for (int k = 0; k < 20000; ++k) {
      const hhg::box<D, double> b = random_box<D>(rng, g);
      const double eff = ty::effective_size(b, scale);
      ASSERT_EQ(eff, reference_effective_size<D>(b, scale)) << "cell " << cell << " box " << k;
      if (!ty::fits(g, eff)) continue;  // (cell_of and cell_and_reach take only the boxes a grid holds)
      ++fitting;
      std::array<std::uint32_t, D> c{};
      for (int i = 0; i < D; ++i) c[i] = ty::coord(g, i, b.min[i]);
      const std::uint32_t code = ty::encode(g, c);
      ASSERT_EQ(ty::cell_of(g, b), code) << "cell " << cell << " box " << k;
      const std::uint32_t reach = ty::reach_of(g, b);
      reaching += reach != 0;
      std::uint32_t both = ~0u;
      ASSERT_EQ(ty::cell_and_reach(g, b, both), code) << "cell " << cell << " box " << k;
      ASSERT_EQ(both, reach) << "cell " << cell << " box " << k;
    }
  }
  // the draw reached the cases: most boxes fit, many reach a next cell
  EXPECT_GT(fitting, 40000u);
  EXPECT_GT(reaching, 10000u);
}

TEST(CellMath, EffectiveSizeCellAndReachMatchTheScalarReferences3D) { expect_like_the_references<3>(1); }
TEST(CellMath, EffectiveSizeCellAndReachMatchTheScalarReferences2D) { expect_like_the_references<2>(2); }

TEST(CellMath, EveryRoundingModeGivesTheSameCells) {
  for (const int mode : {FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO, FE_TONEAREST}) {
    ASSERT_EQ(std::fesetround(mode), 0);
    expect_like_the_references<3>(3 + static_cast<std::uint64_t>(mode));
    expect_like_the_references<2>(4 + static_cast<std::uint64_t>(mode));
    std::fesetround(FE_TONEAREST);
  }
}

TEST(CellMath, InfiniteAndHugeBoxesHaveAnInfiniteSize) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  const std::array<double, 3> unit{1, 1, 1};
  const std::vector<hhg::box<3, double>> boxes = {
      {{0, 0, inf}, {0, 0, inf}},       // inf - inf: a NaN edge
      {{-inf, 0, 0}, {inf, 1, 1}},      // an infinite edge
      {{0, -inf, 0}, {1, -inf, 1}},     // -inf - -inf
      {{1e300, 0, 0}, {1e300, 0, 0}},   // past 2^900 by its magnitude
      {{-1e308, 0, 0}, {1e308, 0, 0}},  // an edge that overflows
  };
  for (const auto& b : boxes) {
    EXPECT_EQ(types<3>::effective_size(b, unit), inf);
    EXPECT_EQ(reference_effective_size<3>(b, unit), inf);
  }
  // zero stays zero (it fits every grid), a subnormal one takes the floor
  EXPECT_EQ(types<3>::effective_size({{0, 0, 0}, {0, 0, 0}}, unit), 0.0);
  EXPECT_EQ(types<3>::effective_size({{0, 0, 0}, {0x1p-1060, 0, 0}}, unit), 0x1p-900);
}

}  // namespace
