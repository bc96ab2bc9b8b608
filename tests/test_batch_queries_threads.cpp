// Threads: the batch queries of hash_grids (overlapping, ray_hits over a
// vector) on a thread_pool of 1, 2, 3 and 8 workers give exactly the lists of
// the single forms and the brute-force ones; a bad query leaves `out` as it
// was. (cell_list on threads: tests/test_neighbors.cpp, NeighborsThreads.)
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

}  // namespace
