// hhg_queries_bench: queries of hhg against peers in the same run.
//
//   neighbours: hhg::cell_list (build + all lists) and
//               hhg::hierarchical_neighbors (counts checked) vs nanoflann's kd-tree
//               (build + radiusSearch for every point) and CGAL's Kd_tree
//               (build + Fuzzy_sphere range search for every point), N uniform
//               points in a cube, radius for ~30 neighbours per point (3D,
//               double).
//   rays:       hhg::hash_grids<3, float> ray casts (all hits; first hit) vs
//               Bullet's btDbvtBroadphase::rayTest (all proxies whose AABB the
//               segment crosses) and FCL's DynamicAABBTreeCollisionManager
//               (FCL has no ray query: its own AABB tree, getTree(), is walked
//               here with a slab test at every node), thesis-like scene of N
//               cubes, segments of ~20 cube sizes in random directions.
//
// Usage: hhg_queries_bench [N=100000] [repetitions=5]. Prints medians. Exit
// status 1 when a peer finds a different number of pairs / hits than hhg.
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <numbers>
#include <vector>

#include "hhg/hash_grids.hpp"
#include "hhg/hierarchical_neighbors.hpp"
#include "hhg/neighbors.hpp"
#include "hhg/queries.hpp"
#include "hhg/scenes.hpp"

#if defined(HHG_HAVE_NANOFLANN)
#include <nanoflann.hpp>
#endif
#if defined(HHG_HAVE_BULLET)
#include <BulletCollision/BroadphaseCollision/btDbvtBroadphase.h>
#endif
#if defined(HHG_HAVE_CGAL)
#include <CGAL/Fuzzy_sphere.h>
#include <CGAL/Kd_tree.h>
#include <CGAL/Search_traits.h>
#endif
#if defined(HHG_HAVE_FCL)
#include <fcl/broadphase/broadphase_dynamic_AABB_tree.h>
#include <fcl/geometry/shape/box.h>
#include <fcl/narrowphase/collision_object.h>
#endif

namespace {

using clk = std::chrono::steady_clock;

bool peers_agree = true;  // cleared when a peer's count differs from hhg's

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

#if defined(HHG_HAVE_CGAL)
// CGAL's kd-tree directly over the benchmark's point type: its search traits
// only ask for the coordinates of a point as an iterator range.
using point3 = std::array<double, 3>;
struct point3_coordinates {
  using result_type = const double*;
  const double* operator()(const point3& p) const { return p.data(); }
  const double* operator()(const point3& p, int) const { return p.data() + 3; }  // past the end
};
using cgal_traits = CGAL::Search_traits<double, point3, const double*, point3_coordinates, CGAL::Dimension_tag<3>>;
using cgal_tree = CGAL::Kd_tree<cgal_traits>;  // sliding midpoint splitter, 10 points per leaf
using cgal_sphere = CGAL::Fuzzy_sphere<cgal_traits>;

// Output iterator for Kd_tree::search that only counts the reported points.
struct counting_output {
  using iterator_category = std::output_iterator_tag;
  using value_type = void;
  using difference_type = std::ptrdiff_t;
  using pointer = void;
  using reference = void;
  std::size_t* count;
  counting_output& operator*() { return *this; }
  counting_output& operator++() { return *this; }
  counting_output operator++(int) { return *this; }
  counting_output& operator=(const point3&) {
    ++*count;
    return *this;
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
  std::size_t found_h = 0;
  const double t_hier = median_ms(reps, [&] {
    hhg::hierarchical_neighbors<3, double> hn;  // Pouchol et al., section 3.3.2 of the seed
    hn.neighbors(pts, r, nl);
    found_h = nl.indices.size();
  });
  std::printf("  hhg cell_list (lists ascending)  %9.2f ms\n", t_hhg);
  std::printf("  hhg cell_list (lists unordered)  %9.2f ms\n", t_hhg_u);
  std::printf("  hhg hierarchical_neighbors       %9.2f ms  (lists ascending; %.2fx the cell list)\n", t_hier,
              t_hier / t_hhg);
  if (found_h != found) {
    std::fprintf(stderr, "error: hierarchical_neighbors found %zu neighbour entries, cell_list %zu\n", found_h, found);
    std::exit(1);
  }
#if defined(HHG_HAVE_NANOFLANN)
  using tree_t =
      nanoflann::KDTreeSingleIndexAdaptor<nanoflann::L2_Simple_Adaptor<double, cloud>, cloud, 3, std::uint32_t>;
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
  std::printf(
      "  nanoflann (unordered)            %9.2f ms  (pairs %s)  hhg speed-up %.2fx ascending, %.2fx unordered\n", t_nf,
      found_nf == found ? "agree" : "DIFFER", t_nf / t_hhg, t_nf / t_hhg_u);
  if (found_nf != found) {
    std::fprintf(stderr, "error: nanoflann found %zu neighbour entries, hhg %zu\n", found_nf, found);
    peers_agree = false;
  }
#else
  std::printf("  nanoflann: not available (libnanoflann-dev), skipped\n");
#endif
#if defined(HHG_HAVE_CGAL)
  // Fuzzy_sphere with epsilon 0 is exact and closed (squared distance <= r^2),
  // the same predicate as hhg::within.
  std::size_t found_cg = 0;
  const double t_cg = median_ms(reps, [&] {
    cgal_tree tree(pts.begin(), pts.end());
    tree.build();
    std::size_t k = 0;
    for (const auto& p : pts) tree.search(counting_output{&k}, cgal_sphere(p, r, 0.0));
    found_cg = k - pts.size();  // each point finds itself
  });
  std::printf(
      "  CGAL Kd_tree + Fuzzy_sphere      %9.2f ms  (pairs %s)  hhg speed-up %.2fx ascending, %.2fx unordered\n", t_cg,
      found_cg == found ? "agree" : "DIFFER", t_cg / t_hhg, t_cg / t_hhg_u);
  if (found_cg != found) {
    std::fprintf(stderr, "error: CGAL found %zu neighbour entries, hhg %zu\n", found_cg, found);
    peers_agree = false;
  }
#else
  std::printf("  CGAL: not available (libcgal-dev), skipped\n");
#endif
}

#if defined(HHG_HAVE_FCL)
// Ray casts over the AABB tree of FCL's DynamicAABBTreeCollisionManager.
// FCL has no ray query, so this walks the manager's own tree (getTree()):
// depth first, a slab test against every node's box, all leaves hit reported.
using fcl_node = fcl::detail::NodeBase<fcl::AABB<double>>;

struct fcl_ray {
  double origin[3];
  double inverse[3];  // 1 / direction, unused on flat axes
  bool flat[3];       // direction component 0: the ray stays in one plane
  double max_t;
};

// Closed slab test: does origin + t * direction, 0 <= t <= max_t, meet the box?
bool ray_meets(const fcl_ray& r, const fcl::AABB<double>& bv) {
  double enter = 0, leave = r.max_t;
  for (int i = 0; i < 3; ++i) {
    const double lo = bv.min_[i], hi = bv.max_[i];
    if (r.flat[i]) {
      if (r.origin[i] < lo || r.origin[i] > hi) return false;
      continue;
    }
    double t1 = (lo - r.origin[i]) * r.inverse[i], t2 = (hi - r.origin[i]) * r.inverse[i];
    if (t1 > t2) std::swap(t1, t2);
    if (t1 > enter) enter = t1;
    if (t2 < leave) leave = t2;
    if (enter > leave) return false;
  }
  return true;
}

// Appends the collision objects of every leaf the ray meets to `out`.
void fcl_ray_hits(const fcl_node* root, const fcl_ray& r, std::vector<const fcl_node*>& stack,
                  std::vector<fcl::CollisionObject<double>*>& out) {
  out.clear();
  if (root == nullptr || !ray_meets(r, root->bv)) return;
  stack.clear();
  stack.push_back(root);
  while (!stack.empty()) {
    const fcl_node* node = stack.back();
    stack.pop_back();
    if (node->isLeaf()) {
      out.push_back(static_cast<fcl::CollisionObject<double>*>(node->data));
      continue;
    }
    for (const fcl_node* child : node->children)
      if (ray_meets(r, child->bv)) stack.push_back(child);
  }
}
#endif

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
  // The peers report hits unordered: the same without ray_hits' sort by t.
  std::size_t hits_u = 0;
  const double t_all_u = median_ms(reps, [&] {
    hits_u = 0;
    for (const auto& r : rs)
      hg.for_each_ray_hit(r, [&](hhg::handle, double) {
        ++hits_u;
        return true;
      });
  });
  if (hits_u != hits) {
    std::fprintf(stderr, "error: for_each_ray_hit found %zu hits, ray_hits %zu\n", hits_u, hits);
    peers_agree = false;
  }
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
  std::printf("  hhg all hits (ray_hits, by t)    %9.2f ms\n", t_all);
  std::printf("  hhg all hits (for_each_ray_hit)  %9.2f ms\n", t_all_u);
  std::printf("  hhg first hit (first_ray_hit)    %9.2f ms\n", t_first);
  std::printf("  hhg first hit, infinite rays     %9.2f ms (%zu of %zu hit)\n", t_inf, inf_firsts, nr);
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
  std::printf(
      "  Bullet btDbvtBroadphase::rayTest %9.2f ms (%.2f hits per ray, %s)  hhg speed-up %.2fx by t, %.2fx unordered\n",
      t_bt, static_cast<double>(bhits) / static_cast<double>(nr), bhits == hits ? "agree" : "DIFFER", t_bt / t_all,
      t_bt / t_all_u);
  if (bhits != hits) {
    std::fprintf(stderr, "error: Bullet found %zu ray hits, hhg %zu\n", bhits, hits);
    peers_agree = false;
  }
#else
  std::printf("  Bullet: not available (libbullet-dev), skipped\n");
#endif
#if defined(HHG_HAVE_FCL)
  {
    // One fcl::Box per object, placed at the box centre. In double the centre
    // and half extents of a float box are exact, so FCL's leaf AABBs are
    // exactly the scene's boxes. registerObjects builds the tree top-down
    // (FCL's default); setup() would only rebalance a tree built by inserts.
    std::vector<std::unique_ptr<fcl::CollisionObject<double>>> objects;
    std::vector<fcl::CollisionObject<double>*> registered;
    objects.reserve(boxes.size());
    registered.reserve(boxes.size());
    for (const auto& b : boxes) {
      fcl::Vector3<double> lo, hi;
      for (int i = 0; i < 3; ++i) {
        lo[i] = b.min[static_cast<std::size_t>(i)];
        hi[i] = b.max[static_cast<std::size_t>(i)];
      }
      auto shape = std::make_shared<fcl::Box<double>>(hi - lo);
      fcl::Transform3<double> pose = fcl::Transform3<double>::Identity();
      pose.translation() = (lo + hi) / 2;
      objects.push_back(std::make_unique<fcl::CollisionObject<double>>(shape, pose));
      registered.push_back(objects.back().get());
    }
    fcl::DynamicAABBTreeCollisionManager<double> manager;
    const auto b0 = clk::now();
    manager.registerObjects(registered);
    manager.setup();
    const double t_fcl_build = std::chrono::duration<double, std::milli>(clk::now() - b0).count();
    const fcl_node* root = manager.getTree().getRoot();
    std::vector<fcl_ray> frs(nr);
    for (std::size_t k = 0; k < nr; ++k) {
      for (std::size_t i = 0; i < 3; ++i) {
        const double d = rs[k].direction[i];
        frs[k].origin[i] = rs[k].origin[i];
        frs[k].flat[i] = d == 0;
        frs[k].inverse[i] = d == 0 ? 0.0 : 1.0 / d;
      }
      frs[k].max_t = rs[k].max_t;
    }
    std::vector<const fcl_node*> stack;
    std::vector<fcl::CollisionObject<double>*> found;
    std::size_t fhits = 0;
    const double t_fcl = median_ms(reps, [&] {
      fhits = 0;
      for (const auto& r : frs) {
        fcl_ray_hits(root, r, stack, found);
        fhits += found.size();
      }
    });
    std::printf(
        "  FCL AABB tree, slab-test walk    %9.2f ms (%.2f hits per ray, %s)  hhg speed-up %.2fx by t, %.2fx unordered"
        "  (DynamicAABBTreeCollisionManager<double>::getTree(); its build %.0f ms is not timed)\n",
        t_fcl, static_cast<double>(fhits) / static_cast<double>(nr), fhits == hits ? "agree" : "DIFFER", t_fcl / t_all,
        t_fcl / t_all_u, t_fcl_build);
    if (fhits != hits) {
      std::fprintf(stderr, "error: FCL tree walk found %zu ray hits, hhg %zu\n", fhits, hits);
      peers_agree = false;
    }
  }
#else
  std::printf("  FCL: not available (libfcl-dev), skipped\n");
#endif
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 100000;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 5;
  neighbours(n, reps);
  rays(n, reps);
  return peers_agree ? 0 : 1;
}
