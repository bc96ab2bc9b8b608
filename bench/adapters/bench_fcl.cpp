// hhg_bench_fcl: hhg::fcl_manager beside FCL's DynamicAABBTreeCollisionManager
// on random environments of boxes, spheres and cylinders (constant density).
// Broad phase only: the callbacks count pairs and do no narrow phase.
// Rows: register+setup, update after every object moved, self collide,
// 100 object queries (collide), 20 object distance queries with a callback
// returning the box distance (the broad phase's work of a distance query).
// Medians of `reps` runs, milliseconds.
//
//   hhg_bench_fcl [objects...]     default: 1000 10000 100000
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <fcl/broadphase/broadphase_dynamic_AABB_tree.h>
#include <fcl/geometry/shape/box.h>
#include <fcl/geometry/shape/cylinder.h>
#include <fcl/geometry/shape/sphere.h>

#include "hhg/fcl.hpp"

namespace {

using S = double;
using object = fcl::CollisionObject<S>;

std::vector<std::unique_ptr<object>> environment(int n, std::mt19937& rng) {
  const double scale = 20 * std::cbrt(static_cast<double>(n));  // about constant density
  std::uniform_real_distribution<double> pos(-scale, scale), unit(0, 1);
  std::vector<std::unique_ptr<object>> out;
  for (int i = 0; i < n; ++i) {
    std::shared_ptr<fcl::CollisionGeometry<S>> g;
    const double f = 0.5 + unit(rng);
    switch (i % 3) {
      case 0: g = std::make_shared<fcl::Box<S>>(5 * f, 10 * f, 20 * f); break;
      case 1: g = std::make_shared<fcl::Sphere<S>>(6 * f); break;
      default: g = std::make_shared<fcl::Cylinder<S>>(4 * f, 15 * f); break;
    }
    fcl::Transform3<S> tf = fcl::Transform3<S>::Identity();
    tf.translation() = fcl::Vector3<S>(pos(rng), pos(rng), pos(rng));
    out.push_back(std::make_unique<object>(g, tf));
  }
  return out;
}

bool count_pair(object*, object*, void* d) {
  ++*static_cast<std::size_t*>(d);
  return false;
}
bool box_distance(object* a, object* b, void* d, S& dist) {
  ++*static_cast<std::size_t*>(d);
  const S v = a->getAABB().distance(b->getAABB());
  if (v < dist) dist = v;
  return false;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// CPU time of this thread (the machine may be shared: wall time would count
// other programs' turns).
double cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) * 1e-6;
}

double time_ms(const std::function<void()>& f, int reps) {
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    const double t0 = cpu_ms();
    f();
    t.push_back(cpu_ms() - t0);
  }
  return median(t);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> sizes;
  for (int i = 1; i < argc; ++i) sizes.push_back(std::atoi(argv[i]));
  if (sizes.empty()) sizes = {1000, 10000, 100000};
  std::printf("# medians of thread CPU time in ms; broad phase only (counting callbacks)\n");
  std::printf("%8s %-10s %10s %10s %10s %12s %12s %10s\n", "objects", "manager", "register", "update", "collide",
              "100_queries", "20_distance", "pairs");
  for (int n : sizes) {
    std::mt19937 rng(1);
    auto env = environment(n, rng);
    auto queries = environment(100, rng);
    std::vector<object*> objs;
    for (auto& o : env) objs.push_back(o.get());
    const int reps = n >= 100000 ? 3 : 7;
    for (int which = 0; which < 2; ++which) {
      std::unique_ptr<fcl::BroadPhaseCollisionManager<S>> m;
      const auto make = [&] {
        if (which == 0)
          m = std::make_unique<fcl::DynamicAABBTreeCollisionManager<S>>();
        else
          m = std::make_unique<hhg::fcl_manager<S>>();
      };
      const double reg = time_ms(
          [&] {
            make();
            m->registerObjects(objs);
            m->setup();
          },
          reps);
      std::vector<fcl::Vector3<S>> saved;
      for (object* o : objs) saved.push_back(o->getTranslation());
      std::uniform_real_distribution<double> jiggle(-0.5, 0.5);
      const double upd = time_ms(
          [&] {
            for (object* o : objs) {
              o->setTranslation(o->getTranslation() + fcl::Vector3<S>(jiggle(rng), jiggle(rng), jiggle(rng)));
              o->computeAABB();
            }
            m->update();
          },
          reps);
      for (std::size_t i = 0; i < objs.size(); ++i) {  // both managers query the same scene
        objs[i]->setTranslation(saved[i]);
        objs[i]->computeAABB();
      }
      m->update();
      std::size_t pairs = 0;
      const double col = time_ms(
          [&] {
            pairs = 0;
            m->collide(&pairs, count_pair);
          },
          reps);
      std::size_t hits = 0;
      const double q = time_ms(
          [&] {
            for (auto& o : queries) m->collide(o.get(), &hits, count_pair);
          },
          reps);
      const double dq = time_ms(
          [&] {
            for (int i = 0; i < 20; ++i) m->distance(queries[i].get(), &hits, box_distance);
          },
          reps);
      std::printf("%8d %-10s %10.3f %10.3f %10.3f %12.3f %12.3f %10zu\n", n, which == 0 ? "fcl_dyntree" : "hhg", reg,
                  upd, col, q, dq, pairs);
      std::fflush(stdout);
    }
  }
  return 0;
}
