// Threads: the batch queries of hash_grids (overlapping, ray_hits over a
// vector) and hhg::cell_list (build, neighbors, neighbors_of, move) on a
// thread_pool of 1, 2, 3 and 8 workers give exactly the serial results and the
// brute-force ones. cell_list's piece sizes are made small
// (detail::cell_list_tuning) so that every parallel path (blocked sort and
// merges, runs of the walk, the split transposition, query pieces) runs at
// sizes the brute force can check; one test also runs the default sizes.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "hhg/error.hpp"
#include "hhg/executor.hpp"
#include "hhg/hash_grids.hpp"
#include "hhg/neighbors.hpp"
#include "hhg/queries.hpp"
#include "hhg/scenes.hpp"

namespace {

constexpr unsigned kWorkers[] = {1, 2, 3, 8};

// ---- batch queries ----------------------------------------------------------------

template <int D, class T>
void check_batches(hhg::scenes::zoo z) {
  SCOPED_TRACE(hhg::scenes::to_string(z));
  const auto boxes = hhg::scenes::make_zoo_scene<D, T>(z, 1500, 17);
  hhg::hash_grids<D, T> g;
  const std::vector<hhg::handle> hs = g.insert(std::span<const hhg::box<D, T>>(boxes));
  // queries: boxes of the scene itself (touching cases), grown and shrunk ones,
  // and random rays from scene points in random directions, finite and infinite
  hhg::scenes::rng r(99);
  std::vector<hhg::box<D, T>> qs;
  for (std::size_t k = 0; k < 300; ++k) {
    hhg::box<D, T> q = boxes[r.below(boxes.size())];
    const double grow = k % 3 == 0 ? 0.0 : r.uniform(-0.2, 3.0);
    for (int i = 0; i < D; ++i) {
      if (!std::isfinite(static_cast<double>(q.min[i])) || !std::isfinite(static_cast<double>(q.max[i]))) continue;
      const double w = static_cast<double>(q.max[i]) - static_cast<double>(q.min[i]);
      const T lo = static_cast<T>(static_cast<double>(q.min[i]) - grow * w);
      const T hi = static_cast<T>(static_cast<double>(q.max[i]) + grow * w);
      if (lo <= hi) {
        q.min[i] = lo;
        q.max[i] = hi;
      }
    }
    qs.push_back(q);
  }
  std::vector<hhg::ray<D, T>> rays;
  for (std::size_t k = 0; k < 200; ++k) {
    hhg::ray<D, T> ray;
    const auto& b = boxes[r.below(boxes.size())];
    for (int i = 0; i < D; ++i) {
      const double lo = static_cast<double>(b.min[i]), hi = static_cast<double>(b.max[i]);
      ray.origin[i] = static_cast<T>(std::isfinite(lo) ? lo : (std::isfinite(hi) ? hi : 0.0));
      ray.direction[i] = static_cast<T>(r.uniform(-1, 1) * (k % 5 == 0 && i == 0 ? 0 : 1));
    }
    ray.max_t = k % 2 ? std::numeric_limits<double>::infinity() : r.uniform(0, 50);
    rays.push_back(ray);
  }
  // brute force and the single forms
  std::vector<std::vector<hhg::handle>> want_boxes(qs.size());
  for (std::size_t k = 0; k < qs.size(); ++k) {
    for (std::size_t j = 0; j < boxes.size(); ++j)
      if (hhg::overlaps(boxes[j], qs[k])) want_boxes[k].push_back(hs[j]);
    std::vector<hhg::handle> single;
    g.overlapping(qs[k], single);
    std::vector<hhg::handle> a = single, b = want_boxes[k];
    const auto by_index = [](hhg::handle x, hhg::handle y) { return x.index < y.index; };
    std::sort(a.begin(), a.end(), by_index);
    std::sort(b.begin(), b.end(), by_index);
    ASSERT_EQ(a, b) << "box query " << k;
    want_boxes[k] = single;  // the batch gives exactly the single form's list
  }
  std::vector<std::vector<hhg::ray_hit>> want_rays(rays.size());
  for (std::size_t k = 0; k < rays.size(); ++k) {
    std::vector<hhg::ray_hit> brute;
    for (std::size_t j = 0; j < boxes.size(); ++j) {
      const double t = hhg::ray_box_entry(rays[k], boxes[j]);
      if (t >= 0) brute.push_back({hs[j], t});
    }
    std::sort(brute.begin(), brute.end(), [](const hhg::ray_hit& x, const hhg::ray_hit& y) {
      return x.t < y.t || (x.t == y.t && x.id.index < y.id.index);
    });
    std::vector<hhg::ray_hit> single;
    g.ray_hits(rays[k], single);
    ASSERT_EQ(single, brute) << "ray " << k;
    want_rays[k] = single;
  }
  std::size_t matches = 0;
  for (const auto& v : want_boxes) matches += v.size();
  EXPECT_GT(matches, qs.size());  // the queries do find things
  for (const unsigned w : kWorkers) {
    SCOPED_TRACE("workers " + std::to_string(w));
    hhg::thread_pool pool(w);
    g.set_executor(&pool);
    std::vector<std::vector<hhg::handle>> got_boxes(3, std::vector<hhg::handle>(2));  // stale content is replaced
    g.overlapping(qs, got_boxes);
    EXPECT_EQ(got_boxes, want_boxes);
    std::vector<std::vector<hhg::ray_hit>> got_rays;
    g.ray_hits(rays, got_rays);
    EXPECT_EQ(got_rays, want_rays);
    // a bad query anywhere: an error, and `out` is not touched
    auto bad_qs = qs;
    bad_qs[qs.size() / 2].min[0] = std::numeric_limits<T>::quiet_NaN();
    EXPECT_THROW(g.overlapping(bad_qs, got_boxes), hhg::error);
    EXPECT_EQ(got_boxes, want_boxes);
    auto bad_rays = rays;
    bad_rays.back().max_t = -1;
    EXPECT_THROW(g.ray_hits(bad_rays, got_rays), hhg::error);
    EXPECT_EQ(got_rays, want_rays);
    g.set_executor(nullptr);
  }
}

TEST(BatchQueriesThreads, EqualSerialAndBrute3DDouble) {
  for (const auto z : {hhg::scenes::zoo::log_uniform, hhg::scenes::zoo::touching, hhg::scenes::zoo::mixed,
                       hhg::scenes::zoo::far_from_origin})
    check_batches<3, double>(z);
}
TEST(BatchQueriesThreads, EqualSerialAndBrute3DFloat) {
  check_batches<3, float>(hhg::scenes::zoo::mixed);
  check_batches<3, float>(hhg::scenes::zoo::zero_size);
}
TEST(BatchQueriesThreads, EqualSerialAndBrute2D) {
  check_batches<2, double>(hhg::scenes::zoo::mixed);
  check_batches<2, float>(hhg::scenes::zoo::unbounded);
}

// ---- cell_list ----------------------------------------------------------------------

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
std::vector<std::array<T, D>> points_of(int kind, std::size_t n, std::uint64_t seed) {
  hhg::scenes::rng g(seed);
  std::vector<std::array<T, D>> p(n);
  const double edge = std::pow(static_cast<double>(n), 1.0 / D) * 1.5;
  for (std::size_t k = 0; k < n; ++k)
    for (std::size_t i = 0; i < static_cast<std::size_t>(D); ++i) switch (kind) {
        case 0:  // uniform
          p[k][i] = static_cast<T>(g.uniform(0, edge));
          break;
        case 1:  // clusters over 8 decades of spread, with duplicates
          p[k][i] = static_cast<T>(k % 7 == 0 && k > 0 ? p[k - 1][i]
                                                       : g.uniform(-1, 1) * std::pow(10.0, static_cast<double>(k % 9) - 4));
          break;
        case 2:  // far from the origin
          p[k][i] = static_cast<T>((std::is_same_v<T, float> ? 1e5 : 1e12) + g.uniform(0, edge));
          break;
        default:  // lattice at spacing 1 (distances exactly at the radius), negative too
          p[k][i] = static_cast<T>(static_cast<double>(g.below(11)) - 5);
      }
  return p;
}

hhg::detail::cell_list_tuning small_pieces() {
  hhg::detail::cell_list_tuning t;
  t.piece = 37;
  t.queries = 29;
  t.parallel_sort = 64;
  t.parallel_transpose = 64;
  return t;
}

template <int D, class T>
void check_cell_list() {
  for (int kind = 0; kind < 4; ++kind)
    for (const double r : {0.0, 1.0, 2.5}) {
      SCOPED_TRACE("kind " + std::to_string(kind) + " r " + std::to_string(r));
      const auto pts = points_of<D, T>(kind, 900, 3 + static_cast<std::uint64_t>(kind));
      const auto qs = points_of<D, T>(kind, 300, 50 + static_cast<std::uint64_t>(kind));
      const auto want = brute<D, T>(pts, pts, r, true);
      const auto want_q = brute<D, T>(qs, pts, r, false);
      // serial reference for the unordered lists (their order is the storage order)
      hhg::cell_list<D, T> ref;
      ref.build(pts, r);
      hhg::neighbor_list ref_unordered;
      ref.neighbors(ref_unordered, false);
      // moved: a third of the points jump (re-sort), then a small jitter
      std::vector<std::uint32_t> which;
      std::vector<std::array<T, D>> where;
      auto moved = pts;
      for (std::uint32_t k = 0; k < pts.size(); k += 3) {
        which.push_back(k);
        where.push_back(pts[(k * 7 + 11) % pts.size()]);
        moved[k] = where.back();
      }
      const auto want_moved = brute<D, T>(moved, moved, r, true);
      for (const unsigned w : kWorkers) {
        SCOPED_TRACE("workers " + std::to_string(w));
        hhg::thread_pool pool(w);
        hhg::cell_list<D, T> cl;
        cl.set_executor(&pool);
        cl.set_tuning(small_pieces());
        cl.build(pts, r);
        EXPECT_EQ(cl.cell_edge(), ref.cell_edge());
        hhg::neighbor_list got;
        cl.neighbors(got);
        ASSERT_EQ(got.offsets, want.offsets);
        ASSERT_EQ(got.indices, want.indices);
        cl.neighbors(got, false);
        EXPECT_EQ(got.offsets, ref_unordered.offsets);
        EXPECT_EQ(got.indices, ref_unordered.indices);
        cl.neighbors_of(qs, got);
        ASSERT_EQ(got.offsets, want_q.offsets);
        ASSERT_EQ(got.indices, want_q.indices);
        cl.move(which, where);
        cl.neighbors(got);
        ASSERT_EQ(got.offsets, want_moved.offsets);
        ASSERT_EQ(got.indices, want_moved.indices);
      }
    }
}

TEST(NeighborsThreads, EqualSerialAndBrute3DDouble) { check_cell_list<3, double>(); }
TEST(NeighborsThreads, EqualSerialAndBrute3DFloat) { check_cell_list<3, float>(); }
TEST(NeighborsThreads, EqualSerialAndBrute2DDouble) { check_cell_list<2, double>(); }
TEST(NeighborsThreads, EqualSerialAndBrute2DFloat) { check_cell_list<2, float>(); }

// The default piece sizes: above the parallel thresholds (2^16 points), equal
// to the serial lists (which the tests above and test_neighbors.cpp check
// against brute force).
TEST(NeighborsThreads, DefaultPiecesEqualSerial) {
  const auto pts = points_of<3, double>(0, 70000, 8);
  const auto qs = points_of<3, double>(0, 5000, 9);
  hhg::cell_list<3, double> serial;
  serial.build(pts, 1.0);
  hhg::neighbor_list want, want_q, got;
  serial.neighbors(want);
  serial.neighbors_of(qs, want_q);
  EXPECT_GT(want.indices.size(), pts.size());
  for (const unsigned w : {2u, 3u}) {
    hhg::thread_pool pool(w);
    hhg::cell_list<3, double> cl;
    cl.set_executor(&pool);
    cl.build(pts, 1.0);
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
  auto pts = points_of<3, double>(0, 500, 4);
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
  cl.neighbors(after);
  EXPECT_EQ(after.offsets, before.offsets);
  EXPECT_EQ(after.indices, before.indices);
}

}  // namespace
