// hhg_queries_bench: queries of hhg against peers in the same run.
//
//   neighbours: hhg::cell_list (build + all lists) vs nanoflann's kd-tree
//               (build + radiusSearch for every point), N uniform points in a
//               cube, radius for ~30 neighbours per point (3D, double).
//   rays:       hhg::hash_grids<3, float> ray casts (all hits; first hit) vs
//               Bullet's btDbvtBroadphase::rayTest (all proxies whose AABB the
//               segment crosses), thesis-like scene of N cubes, segments of
//               ~20 cube sizes in random directions.
//
// Usage: hhg_queries_bench [N=100000] [repetitions=5]. Prints medians.
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <numbers>
#include <vector>

#include "hhg/hash_grids.hpp"
#include "hhg/neighbors.hpp"
#include "hhg/queries.hpp"
#include "hhg/scenes.hpp"

#if defined(HHG_HAVE_NANOFLANN)
#include <nanoflann.hpp>
#endif
#if defined(HHG_HAVE_BULLET)
#include <BulletCollision/BroadphaseCollision/btDbvtBroadphase.h>
#endif

namespace {

using clk = std::chrono::steady_clock;

template <class F>
double median_ms(int reps, F&& f) {
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const auto a = clk::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(clk::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

#if defined(HHG_HAVE_NANOFLANN)
struct cloud {
  const std::vector<std::array<double, 3>>* p;
  std::size_t kdtree_get_point_count() const { return p->size(); }
  double kdtree_get_pt(std::size_t i, std::size_t d) const { return (*p)[i][d]; }
  template <class B>
  bool kdtree_get_bbox(B&) const {
    return false;
  }
};
#endif

void neighbours(std::size_t n, int reps) {
  hhg::scenes::rng g(1);
  const double edge = std::cbrt(static_cast<double>(n));  // density 1
  std::vector<std::array<double, 3>> pts(n);
  for (auto& p : pts)
    for (auto& v : p) v = g.uniform(0, edge);
  const double r = std::cbrt(30.0 * 3 / (4 * std::numbers::pi));  // ~30 neighbours
  std::size_t found = 0;
  hhg::neighbor_list nl;
  const double t_hhg = median_ms(reps, [&] {
    hhg::cell_list<3, double> cl;
    cl.build(pts, r);
    cl.neighbors(nl);
    found = nl.indices.size();
  });
  const double t_hhg_u = median_ms(reps, [&] {
    hhg::cell_list<3, double> cl;
    cl.build(pts, r);
    cl.neighbors(nl, false);
  });
  std::printf("neighbours N=%zu r=%.3f: %.2f per point\n", n, r, static_cast<double>(found) / static_cast<double>(n));
  std::printf("  hhg cell_list (lists ascending)  %9.2f ms\n", t_hhg);
  std::printf("  hhg cell_list (lists unordered)  %9.2f ms\n", t_hhg_u);
#if defined(HHG_HAVE_NANOFLANN)
  using tree_t = nanoflann::KDTreeSingleIndexAdaptor<nanoflann::L2_Simple_Adaptor<double, cloud>, cloud, 3, std::uint32_t>;
  const cloud c{&pts};
  std::size_t found_nf = 0;
  const double t_nf = median_ms(reps, [&] {
    tree_t tree(3, c, nanoflann::KDTreeSingleIndexAdaptorParams(10));
    std::vector<std::pair<std::uint32_t, double>> res;
    nanoflann::SearchParams sp;
    sp.sorted = false;
    found_nf = 0;
    for (const auto& p : pts) {
      tree.radiusSearch(p.data(), r * r, res, sp);  // L2_Simple works on squared distances
      found_nf += res.size() - 1;                   // itself
    }
  });
  std::printf("  nanoflann (unordered)            %9.2f ms  (pairs %s)  hhg speed-up %.2fx ascending, %.2fx unordered\n",
              t_nf, found_nf == found ? "agree" : "DIFFER", t_nf / t_hhg, t_nf / t_hhg_u);
#else
  std::printf("  nanoflann: not available (libnanoflann-dev), skipped\n");
#endif
}

void rays(std::size_t n, int reps) {
  hhg::scenes::thesis_params tp;
  tp.n = n;
  hhg::scenes::thesis_scenario<3, float> sc(tp);
  const auto& boxes = sc.boxes();
  const double edge = sc.domain()[0];
  hhg::hash_grids<3, float> hg;
  for (const auto& b : boxes) hg.insert(b);
  hhg::scenes::rng g(2);
  const std::size_t nr = 10000;
  std::vector<hhg::ray<3, float>> rs(nr);
  for (auto& r : rs) {
    double d[3], len = 0;
    for (int i = 0; i < 3; ++i) {
      r.origin[static_cast<std::size_t>(i)] = static_cast<float>(g.uniform(0, edge));
      d[i] = g.uniform(-1, 1);
      len += d[i] * d[i];
    }
    len = std::sqrt(len);
    for (int i = 0; i < 3; ++i) r.direction[static_cast<std::size_t>(i)] = static_cast<float>(d[i] / len);
    r.max_t = 20.0;  // cube edge is 1 in the thesis scene
  }
  std::size_t hits = 0, firsts = 0;
  std::vector<hhg::ray_hit> out;
  const double t_all = median_ms(reps, [&] {
    hits = 0;
    for (const auto& r : rs) {
      hg.ray_hits(r, out);
      hits += out.size();
    }
  });
  const double t_first = median_ms(reps, [&] {
    firsts = 0;
    for (const auto& r : rs) firsts += hg.first_ray_hit(r).id ? 1 : 0;
  });
  auto inf_rays = rs;
  for (auto& r : inf_rays) r.max_t = std::numeric_limits<double>::infinity();
  std::size_t inf_firsts = 0;
  const double t_inf = median_ms(reps, [&] {
    inf_firsts = 0;
    for (const auto& r : inf_rays) inf_firsts += hg.first_ray_hit(r).id ? 1 : 0;
  });
  std::printf("rays N=%zu boxes, %zu segments of length 20: %.2f hits per ray\n", n, nr,
              static_cast<double>(hits) / static_cast<double>(nr));
  std::printf("  hhg all hits    %9.2f ms\n  hhg first hit   %9.2f ms\n", t_all, t_first);
  std::printf("  hhg first hit, infinite rays %9.2f ms (%zu of %zu hit)\n", t_inf, inf_firsts, nr);
#if defined(HHG_HAVE_BULLET)
  btDbvtBroadphase bp;
  for (std::size_t i = 0; i < boxes.size(); ++i) {
    const auto& b = boxes[i];
    bp.createProxy(btVector3(b.min[0], b.min[1], b.min[2]), btVector3(b.max[0], b.max[1], b.max[2]), 0,
                   reinterpret_cast<void*>(i), 1, -1, nullptr);
  }
  bp.optimize();
  struct cb : btBroadphaseRayCallback {
    std::size_t count = 0;
    bool process(const btBroadphaseProxy*) override {
      ++count;
      return true;
    }
  };
  std::size_t bhits = 0;
  const double t_bt = median_ms(reps, [&] {
    bhits = 0;
    for (const auto& r : rs) {
      const btVector3 from(r.origin[0], r.origin[1], r.origin[2]);
      const btVector3 dir(r.direction[0], r.direction[1], r.direction[2]);
      const btVector3 to = from + dir * static_cast<btScalar>(r.max_t);
      cb c;
      for (int i = 0; i < 3; ++i) {
        c.m_rayDirectionInverse[i] = dir[i] == btScalar(0) ? btScalar(BT_LARGE_FLOAT) : btScalar(1) / dir[i];
        c.m_signs[i] = c.m_rayDirectionInverse[i] < 0;
      }
      c.m_lambda_max = dir.dot(to - from);
      bp.rayTest(from, to, c);
      bhits += c.count;
    }
  });
  std::printf("  Bullet btDbvtBroadphase::rayTest %9.2f ms (%.2f hits per ray)  hhg all-hits speed-up %.2fx\n", t_bt,
              static_cast<double>(bhits) / static_cast<double>(nr), t_bt / t_all);
#else
  std::printf("  Bullet: not available (libbullet-dev), skipped\n");
#endif
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 100000;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 5;
  neighbours(n, reps);
  rays(n, reps);
  return 0;
}
