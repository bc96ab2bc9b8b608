// hhg::cell_list against the brute-force double loop with hhg::within, exactly:
// uniform and clustered points, points far from the origin, duplicates, points
// on a lattice at exactly the radius, zero radius, two sets, incremental moves.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "hhg/error.hpp"
#include "hhg/neighbors.hpp"
#include "hhg/scenes.hpp"

namespace {

template <int D, class T>
hhg::neighbor_list brute(const std::vector<std::array<T, D>>& a, const std::vector<std::array<T, D>>& b, double r,
                         bool same) {
  hhg::neighbor_list nl;
  nl.offsets.push_back(0);
  for (std::size_t i = 0; i < a.size(); ++i) {
    for (std::size_t j = 0; j < b.size(); ++j)
      if ((!same || i != j) && hhg::within(a[i], b[j], r)) nl.indices.push_back(static_cast<std::uint32_t>(j));
    nl.offsets.push_back(nl.indices.size());
  }
  return nl;
}

template <int D, class T>
std::vector<std::array<T, D>> make_points(int kind, std::size_t n, std::uint64_t seed) {
  hhg::scenes::rng g(seed);
  std::vector<std::array<T, D>> p(n);
  const double edge = std::cbrt(static_cast<double>(n)) * 2;
  for (std::size_t k = 0; k < n; ++k)
    for (std::size_t i = 0; i < static_cast<std::size_t>(D); ++i) {
      switch (kind) {
        case 0:  // uniform
          p[k][i] = static_cast<T>(g.uniform(0, edge));
          break;
        case 1:  // clustered, with duplicates
          p[k][i] = static_cast<T>(k % 7 == 0 && k > 0 ? p[k - 1][i] : g.uniform(-0.5, 0.5) * (k % 3 ? 1 : 0.01));
          break;
        case 2:  // far from the origin
          p[k][i] = static_cast<T>((std::is_same_v<T, float> ? 1e5 : 1e12) + g.uniform(0, edge));
          break;
        default:  // lattice, spacing 1, negative too
          p[k][i] = static_cast<T>(static_cast<double>(g.below(9)) - 4);
      }
    }
  return p;
}

template <int D, class T>
void check_all() {
  for (int kind = 0; kind < 4; ++kind) {
    for (const double r : {0.0, 1.0, 1.5, 3.0}) {
      SCOPED_TRACE(std::to_string(kind) + " r=" + std::to_string(r));
      const auto pts = make_points<D, T>(kind, 700, 5 + static_cast<std::uint64_t>(kind));
      hhg::cell_list<D, T> cl;
      cl.build(pts, r);
      hhg::neighbor_list got;
      cl.neighbors(got);
      const auto want = brute<D, T>(pts, pts, r, true);
      ASSERT_EQ(got.offsets, want.offsets);
      ASSERT_EQ(got.indices, want.indices);
      // unordered lists: the same sets
      cl.neighbors(got, false);
      ASSERT_EQ(got.offsets, want.offsets);
      for (std::size_t i = 0; i < got.size(); ++i) {
        const auto b = got.indices.begin() + static_cast<std::ptrdiff_t>(got.offsets[i]);
        const auto e = got.indices.begin() + static_cast<std::ptrdiff_t>(got.offsets[i + 1]);
        std::sort(b, e);
      }
      ASSERT_EQ(got.indices, want.indices);
      // a second set
      const auto qs = make_points<D, T>(kind, 300, 77);
      cl.neighbors_of(qs, got);
      const auto want2 = brute<D, T>(qs, pts, r, false);
      ASSERT_EQ(got.offsets, want2.offsets);
      ASSERT_EQ(got.indices, want2.indices);
      // incremental: small moves (mostly same cell), then a few big ones
      auto moved = pts;
      std::vector<std::uint32_t> which;
      std::vector<std::array<T, D>> where;
      hhg::scenes::rng g(9);
      for (int step = 0; step < 2; ++step) {
        which.clear();
        where.clear();
        for (std::size_t k = 0; k < 20; ++k) {
          const auto i = static_cast<std::uint32_t>(g.below(moved.size()));
          auto p = moved[i];
          for (auto& v : p) v = static_cast<T>(v + (step == 0 ? 1e-3 : 2.5) * g.uniform(-1, 1));
          moved[i] = p;
          which.push_back(i);
          where.push_back(p);
        }
        cl.move(which, where);
        cl.neighbors(got);
        const auto want3 = brute<D, T>(moved, moved, r, true);
        ASSERT_EQ(got.offsets, want3.offsets);
        ASSERT_EQ(got.indices, want3.indices);
      }
    }
  }
}

TEST(Neighbors, Exact3DDouble) { check_all<3, double>(); }
TEST(Neighbors, Exact3DFloat) { check_all<3, float>(); }
TEST(Neighbors, Exact2DDouble) { check_all<2, double>(); }
TEST(Neighbors, Exact2DFloat) { check_all<2, float>(); }

TEST(Neighbors, EmptyAndSingle) {
  hhg::cell_list<3, double> cl;
  hhg::neighbor_list nl;
  cl.build({}, 1);
  cl.neighbors(nl);
  EXPECT_EQ(nl.offsets, std::vector<std::size_t>{0});
  cl.neighbors_of({{0, 0, 0}}, nl);
  EXPECT_EQ(nl.offsets, (std::vector<std::size_t>{0, 0}));
  cl.build({{1e300, -1e300, 0}}, 0);
  cl.neighbors(nl);
  EXPECT_EQ(nl.offsets, (std::vector<std::size_t>{0, 0}));
}

TEST(Neighbors, BadInput) {
  hhg::cell_list<2, double> cl;
  EXPECT_THROW(cl.build({{0, 0}}, -1), hhg::error);
  EXPECT_THROW(cl.build({{0, 0}}, std::nan("")), hhg::error);
  EXPECT_THROW(cl.build({{0, std::nan("")}}, 1), hhg::error);
  EXPECT_THROW(cl.build({{0, INFINITY}}, 1), hhg::error);
}

}  // namespace
