// hhg::cell_list against the brute-force double loop with hhg::within, exactly:
// uniform and clustered points, points far from the origin, duplicates, points
// on a lattice at exactly the radius, zero radius, two sets, incremental moves.
// hhg::hierarchical_neighbors (Pouchol et al. 3.3.2) against the same oracle,
// plus sparse clusters (where its pruning acts) and extreme coordinates.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <limits>
#include <memory>
#include <thread>
#include <vector>

#include "hhg/error.hpp"
#include "hhg/executor.hpp"
#include "hhg/hierarchical_neighbors.hpp"
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
        case 3:  // lattice, spacing 1, negative too
          p[k][i] = static_cast<T>(static_cast<double>(g.below(9)) - 4);
          break;
        default:  // sparse clusters far apart (empty space between them)
          p[k][i] = static_cast<T>(static_cast<double>(k % 5) * 1e4 * (i == 0 ? 1 : -1) + g.uniform(0, 4));
      }
    }
  return p;
}

// Small parallel pieces (results never depend on them): with an executor,
// every parallel path of cell_list runs at these sizes.
hhg::detail::cell_list_tuning small_pieces() {
  hhg::detail::cell_list_tuning t;
  t.piece = 37;
  t.queries = 29;
  t.parallel_sort = 64;
  t.parallel_transpose = 64;
  return t;
}

// Every scene and radius on each worker count of `workers` (0: no executor,
// the serial path; else a pool whose cell list runs in small pieces), against
// the brute-force lists, computed once per scene for every worker count; with
// an executor, the unordered lists must also be exactly the serial storage order.
template <int D, class T>
void check_all(std::initializer_list<unsigned> workers = {0u}) {
  std::vector<std::unique_ptr<hhg::thread_pool>> pools;
  for (const unsigned w : workers) pools.push_back(w != 0 ? std::make_unique<hhg::thread_pool>(w) : nullptr);
  for (int kind = 0; kind < 4; ++kind) {
    for (const double r : {0.0, 1.0, 1.5, 3.0}) {
      const auto pts = make_points<D, T>(kind, 700, 5 + static_cast<std::uint64_t>(kind));
      const auto want = brute<D, T>(pts, pts, r, true);
      // a second set
      const auto qs = make_points<D, T>(kind, 300, 77);
      const auto want2 = brute<D, T>(qs, pts, r, false);
      // incremental: small moves (mostly same cell), then a few big ones
      std::array<std::vector<std::uint32_t>, 2> which;
      std::array<std::vector<std::array<T, D>>, 2> where;
      std::array<hhg::neighbor_list, 2> want3;
      auto moved = pts;
      hhg::scenes::rng g(9);
      for (int step = 0; step < 2; ++step) {
        for (std::size_t k = 0; k < 20; ++k) {
          const auto i = static_cast<std::uint32_t>(g.below(moved.size()));
          auto p = moved[i];
          for (auto& v : p) v = static_cast<T>(v + (step == 0 ? 1e-3 : 2.5) * g.uniform(-1, 1));
          moved[i] = p;
          which[step].push_back(i);
          where[step].push_back(p);
        }
        want3[step] = brute<D, T>(moved, moved, r, true);
      }
      for (std::size_t w = 0; w < pools.size(); ++w) {
        hhg::executor* const ex = pools[w].get();
        SCOPED_TRACE(std::to_string(kind) + " r=" + std::to_string(r) + " workers " +
                     std::to_string(ex ? ex->workers() : 0));
        hhg::cell_list<D, T> cl;
        if (ex) {
          cl.set_executor(ex);
          cl.set_tuning(small_pieces());
        }
        cl.build(pts, r);
        hhg::neighbor_list got;
        cl.neighbors(got);
        ASSERT_EQ(got.offsets, want.offsets);
        ASSERT_EQ(got.indices, want.indices);
        // unordered lists: the same sets
        cl.neighbors(got, false);
        if (ex) {
          hhg::cell_list<D, T> serial;
          serial.build(pts, r);
          hhg::neighbor_list same;
          serial.neighbors(same, false);
          ASSERT_EQ(got.indices, same.indices);
          EXPECT_EQ(cl.cell_edge(), serial.cell_edge());
        }
        ASSERT_EQ(got.offsets, want.offsets);
        for (std::size_t i = 0; i < got.size(); ++i) {
          const auto b = got.indices.begin() + static_cast<std::ptrdiff_t>(got.offsets[i]);
          const auto e = got.indices.begin() + static_cast<std::ptrdiff_t>(got.offsets[i + 1]);
          std::sort(b, e);
        }
        ASSERT_EQ(got.indices, want.indices);
        cl.neighbors_of(qs, got);
        ASSERT_EQ(got.offsets, want2.offsets);
        ASSERT_EQ(got.indices, want2.indices);
        for (int step = 0; step < 2; ++step) {
          cl.move(which[step], where[step]);
          cl.neighbors(got);
          ASSERT_EQ(got.offsets, want3[step].offsets);
          ASSERT_EQ(got.indices, want3[step].indices);
        }
      }
    }
  }
}

TEST(Neighbors, Exact3DDouble) { check_all<3, double>(); }
TEST(Neighbors, Exact3DFloat) { check_all<3, float>(); }
TEST(Neighbors, Exact2DDouble) { check_all<2, double>(); }
TEST(Neighbors, Exact2DFloat) { check_all<2, float>(); }

// cell_list on 1, 2, 3 and 8 workers: the brute-force lists (all of
// check_all: one set, two sets, moves) and the serial storage order.
template <int D, class T>
void check_all_threads() {
  check_all<D, T>({1u, 2u, 3u, 8u});
}
TEST(NeighborsThreads, Exact3DDouble) { check_all_threads<3, double>(); }
TEST(NeighborsThreads, Exact3DFloat) { check_all_threads<3, float>(); }
TEST(NeighborsThreads, Exact2DDouble) { check_all_threads<2, double>(); }
TEST(NeighborsThreads, Exact2DFloat) { check_all_threads<2, float>(); }

// The default piece sizes: above the parallel thresholds (2^16 points), the
// serial lists (which the tests above check against brute force).
TEST(NeighborsThreads, DefaultPiecesEqualSerial) {
  const auto pts = make_points<3, double>(0, 70000, 8);
  const auto qs = make_points<3, double>(0, 5000, 9);
  hhg::cell_list<3, double> serial;
  serial.build(pts, 2.0);
  hhg::neighbor_list want, want_q, got;
  serial.neighbors(want);
  serial.neighbors_of(qs, want_q);
  EXPECT_GT(want.indices.size(), pts.size());
  for (const unsigned w : {2u, 3u}) {
    hhg::thread_pool pool(w);
    hhg::cell_list<3, double> cl;
    cl.set_executor(&pool);
    cl.build(pts, 2.0);
    cl.neighbors(got);
    EXPECT_EQ(got.offsets, want.offsets);
    EXPECT_EQ(got.indices, want.indices);
    cl.neighbors_of(qs, got);
    EXPECT_EQ(got.offsets, want_q.offsets);
    EXPECT_EQ(got.indices, want_q.indices);
  }
}

// Bad input with an executor: an error, and nothing changes.
TEST(NeighborsThreads, BadInputChangesNothing) {
  hhg::thread_pool pool(3);
  const auto pts = make_points<3, double>(0, 500, 4);
  hhg::cell_list<3, double> cl;
  cl.set_executor(&pool);
  cl.set_tuning(small_pieces());
  cl.build(pts, 1.0);
  hhg::neighbor_list before, after;
  cl.neighbors(before);
  auto bad = pts;
  bad[250][1] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THROW(cl.build(bad, 1.0), hhg::error);
  EXPECT_THROW(cl.build(pts, -1.0), hhg::error);
  hhg::neighbor_list q = before;
  EXPECT_THROW(cl.neighbors_of(bad, q), hhg::error);
  EXPECT_EQ(q.indices, before.indices);
  EXPECT_EQ(q.offsets, before.offsets);
  cl.neighbors(after);
  EXPECT_EQ(after.offsets, before.offsets);
  EXPECT_EQ(after.indices, before.indices);
}

template <int D, class T>
void check_hierarchical() {
  for (int kind = 0; kind < 5; ++kind) {
    for (const double r : {0.0, 1.0, 1.5, 3.0}) {
      for (const int step : {1, 2, 5}) {
        SCOPED_TRACE(std::to_string(kind) + " r=" + std::to_string(r) + " step=" + std::to_string(step));
        const auto pts = make_points<D, T>(kind, 600, 15 + static_cast<std::uint64_t>(kind));
        hhg::hierarchical_neighbors<D, T> hn(step);
        hhg::neighbor_list got;
        hn.neighbors(pts, r, got);
        const auto want = brute<D, T>(pts, pts, r, true);
        ASSERT_EQ(got.offsets, want.offsets);
        ASSERT_EQ(got.indices, want.indices);
        EXPECT_GE(hn.levels(), 1u);
        // two sets
        const auto qs = make_points<D, T>(kind, 250, 78);
        hn.build(pts, r);
        hn.neighbors_of(qs, got);
        const auto want2 = brute<D, T>(qs, pts, r, false);
        ASSERT_EQ(got.offsets, want2.offsets);
        ASSERT_EQ(got.indices, want2.indices);
      }
    }
  }
}

TEST(HierarchicalNeighbors, Exact3DDouble) { check_hierarchical<3, double>(); }
TEST(HierarchicalNeighbors, Exact3DFloat) { check_hierarchical<3, float>(); }
TEST(HierarchicalNeighbors, Exact2DDouble) { check_hierarchical<2, double>(); }
TEST(HierarchicalNeighbors, Exact2DFloat) { check_hierarchical<2, float>(); }

// The pruning acts: isolated points in a large square stop their search near
// the top of the hierarchy, where their ancestors' cells are empty, instead of
// looking up the 9 cells of every level.
TEST(HierarchicalNeighbors, PruningSkipsEmptySpace) {
  hhg::scenes::rng g(3);
  std::vector<std::array<double, 2>> pts(4000);
  for (auto& p : pts) p = {g.uniform(-1e6, 1e6), g.uniform(-1e6, 1e6)};
  hhg::hierarchical_neighbors<2, double> deep(1);
  hhg::neighbor_list a;
  deep.neighbors(pts, 1.0, a);
  EXPECT_EQ(a.indices, (brute<2, double>(pts, pts, 1.0, true).indices));
  EXPECT_GE(deep.levels(), 20u);
  std::printf("levels %zu, cells looked up per point %.2f\n", deep.levels(),
              static_cast<double>(deep.cells_visited()) / static_cast<double>(pts.size()));
  EXPECT_LT(deep.cells_visited(), pts.size() * deep.levels());
}

TEST(HierarchicalNeighbors, ExtremeCoordinates) {
  constexpr double big = std::numeric_limits<double>::max();
  const std::vector<std::array<double, 3>> pts = {{big, big, -big}, {big, big, -big}, {-big, 0, 0},
                                                  {big / 2, 0, 0},  {0, 0, 0},        {1e-300, -1e-300, 0},
                                                  {-5e-324, 0, 0},  {1, 1, 1},        {big, big * 0.999, -big}};
  for (const double r : {0.0, 1e-300, 1.0, 1e150, 0x1p511}) {
    SCOPED_TRACE(r);
    hhg::hierarchical_neighbors<3, double> hn;
    hhg::neighbor_list got;
    hn.neighbors(pts, r, got);
    const auto want = brute<3, double>(pts, pts, r, true);
    ASSERT_EQ(got.offsets, want.offsets);
    ASSERT_EQ(got.indices, want.indices);
    hn.build(pts, r);
    hn.neighbors_of(pts, got);
    const auto want2 = brute<3, double>(pts, pts, r, false);
    ASSERT_EQ(got.indices, want2.indices);
  }
}

TEST(HierarchicalNeighbors, BadInputChangesNothing) {
  hhg::hierarchical_neighbors<2, double> hn;
  const std::vector<std::array<double, 2>> pts = {{0, 0}, {0.5, 0}};
  hn.build(pts, 1);
  EXPECT_THROW(hn.build({{0, 0}}, -1), hhg::error);
  EXPECT_THROW(hn.build({{0, 0}}, std::nan("")), hhg::error);
  EXPECT_THROW(hn.build({{0, std::nan("")}}, 1), hhg::error);
  EXPECT_THROW(hn.build({{0, INFINITY}}, 1), hhg::error);
  EXPECT_THROW(hn.build({{0, 0}}, 0x1p512), hhg::error);  // r * r must be finite
  hhg::neighbor_list nl;
  EXPECT_THROW(hn.neighbors_of({{0, std::nan("")}}, nl), hhg::error);
  EXPECT_THROW((hhg::hierarchical_neighbors<2, double>(0)), hhg::error);
  EXPECT_THROW((hhg::hierarchical_neighbors<2, double>(17)), hhg::error);
  hn.neighbors_of({{0.25, 0}}, nl);  // the earlier build is intact
  EXPECT_EQ(nl.indices, (std::vector<std::uint32_t>{0, 1}));
  EXPECT_EQ(hn.size(), 2u);
}

// neighbors_of is const and may run concurrently (run under TSan in CI).
TEST(HierarchicalNeighbors, ConcurrentQueries) {
  const auto pts = make_points<3, double>(0, 3000, 8);
  hhg::hierarchical_neighbors<3, double> hn;
  hn.build(pts, 1.5);
  hhg::neighbor_list want;
  hn.neighbors_of(pts, want);
  std::vector<hhg::neighbor_list> got(2);
  std::vector<std::thread> ts;
  for (int t = 0; t < 2; ++t) ts.emplace_back([&, t] { hn.neighbors_of(pts, got[static_cast<std::size_t>(t)]); });
  for (auto& t : ts) t.join();
  for (const auto& g : got) EXPECT_EQ(g.indices, want.indices);
}

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
  EXPECT_THROW(cl.build({{0, 0}}, 1e300), hhg::error);  // r * r must be finite
}

}  // namespace
