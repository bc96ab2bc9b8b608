// hhg_bench_bullet: a Bullet world (boxes and spheres falling onto a static
// ground and each other) stepped with btDbvtBroadphase and with
// hhg::bullet_broadphase in one run, steps alternating between the two
// worlds. Reports medians per step of the whole stepSimulation and of the
// broad phase (btCollisionWorld::updateAabbs, which calls setAabb for every
// object, plus computeOverlappingPairs, which calls calculateOverlappingPairs).
//
//   hhg_bench_bullet [bodies...]     default: 1000 10000 100000
//
// Steps per size: warm-up then measured, fewer for large worlds (see steps()).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <vector>

#include <btBulletDynamicsCommon.h>

#include "hhg/bullet.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

// A dynamics world that times its broad-phase parts.
class timed_world : public btDiscreteDynamicsWorld {
 public:
  using btDiscreteDynamicsWorld::btDiscreteDynamicsWorld;
  double broadphase_seconds = 0;
  void updateAabbs() override {
    const auto t0 = clock_type::now();
    btDiscreteDynamicsWorld::updateAabbs();
    broadphase_seconds += seconds_since(t0);
  }
  void computeOverlappingPairs() override {
    const auto t0 = clock_type::now();
    btDiscreteDynamicsWorld::computeOverlappingPairs();
    broadphase_seconds += seconds_since(t0);
  }
};

struct scene {
  btDefaultCollisionConfiguration config;
  btCollisionDispatcher dispatcher{&config};
  std::unique_ptr<btBroadphaseInterface> broadphase;
  btSequentialImpulseConstraintSolver solver;
  std::unique_ptr<timed_world> world;
  std::vector<std::unique_ptr<btCollisionShape>> shapes;
  std::vector<std::unique_ptr<btDefaultMotionState>> states;
  std::vector<std::unique_ptr<btRigidBody>> bodies;

  scene(std::unique_ptr<btBroadphaseInterface> bp, int n) : broadphase(std::move(bp)) {
    world = std::make_unique<timed_world>(&dispatcher, broadphase.get(), &solver, &config);
    world->setGravity(btVector3(0, -10, 0));
    const int side = std::max(1, static_cast<int>(std::cbrt(static_cast<double>(n))));
    const double half = 1.3 * side / 2 + 5;
    shapes.push_back(std::make_unique<btBoxShape>(btVector3(btScalar(half), 1, btScalar(half))));
    add(shapes.back().get(), 0, btVector3(0, -1, 0));
    std::mt19937 rng(42);  // the same bodies in both worlds
    std::uniform_real_distribution<double> u(0, 1);
    for (int i = 0; i < n; ++i) {
      const int x = i % side, z = (i / side) % side, y = i / (side * side);
      const double r = u(rng) < 0.05 ? 1.0 + u(rng) : 0.2 + 0.35 * u(rng);
      if (u(rng) < 0.5)
        shapes.push_back(std::make_unique<btSphereShape>(btScalar(r)));
      else
        shapes.push_back(std::make_unique<btBoxShape>(btVector3(btScalar(r), btScalar(r * (0.5 + u(rng))), btScalar(r))));
      const btVector3 at(btScalar(1.3 * (x - side / 2) + 0.2 * (u(rng) - 0.5)), btScalar(1.5 + 1.3 * y),
                         btScalar(1.3 * (z - side / 2) + 0.2 * (u(rng) - 0.5)));
      add(shapes.back().get(), 1, at);
    }
  }
  ~scene() {
    for (auto& b : bodies) world->removeRigidBody(b.get());
  }
  void add(btCollisionShape* shape, btScalar mass, const btVector3& at) {
    btVector3 inertia(0, 0, 0);
    if (mass > 0) shape->calculateLocalInertia(mass, inertia);
    states.push_back(std::make_unique<btDefaultMotionState>(btTransform(btQuaternion::getIdentity(), at)));
    bodies.push_back(std::make_unique<btRigidBody>(
        btRigidBody::btRigidBodyConstructionInfo(mass, states.back().get(), shape, inertia)));
    world->addRigidBody(bodies.back().get());
  }
  // Seconds of the whole step and of its broad-phase part.
  std::pair<double, double> step() {
    world->broadphase_seconds = 0;
    const auto t0 = clock_type::now();
    world->stepSimulation(btScalar(1.0 / 60), 0);
    return {seconds_since(t0), world->broadphase_seconds};
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

std::pair<int, int> steps(int n) {  // warm-up, measured
  if (n <= 2000) return {60, 200};
  if (n <= 20000) return {30, 60};
  return {10, 12};
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> sizes;
  for (int i = 1; i < argc; ++i) sizes.push_back(std::atoi(argv[i]));
  if (sizes.empty()) sizes = {1000, 10000, 100000};
  std::printf("# Bullet %d, btScalar %zu bytes; medians per step (ms), dbvt and hhg stepped alternately\n",
              btGetVersion(), sizeof(btScalar));
  std::printf("%8s %6s %12s %12s %8s %12s %12s %8s %10s %10s\n", "bodies", "steps", "dbvt_step", "hhg_step",
              "ratio", "dbvt_bp", "hhg_bp", "ratio", "dbvt_pairs", "hhg_pairs");
  for (int n : sizes) {
    scene a(std::make_unique<btDbvtBroadphase>(), n);
    scene b(std::make_unique<hhg::bullet_broadphase>(), n);
    const auto [warm, measured] = steps(n);
    for (int s = 0; s < warm; ++s) {
      a.step();
      b.step();
    }
    std::vector<double> as, ab, bs, bb;
    for (int s = 0; s < measured; ++s) {
      const auto x = a.step();
      const auto y = b.step();
      as.push_back(x.first);
      ab.push_back(x.second);
      bs.push_back(y.first);
      bb.push_back(y.second);
    }
    const double ms = 1e3;
    std::printf("%8d %6d %12.3f %12.3f %8.2f %12.3f %12.3f %8.2f %10d %10d\n", n, measured, median(as) * ms,
                median(bs) * ms, median(as) / median(bs), median(ab) * ms, median(bb) * ms, median(ab) / median(bb),
                a.broadphase->getOverlappingPairCache()->getNumOverlappingPairs(),
                b.broadphase->getOverlappingPairCache()->getNumOverlappingPairs());
    std::fflush(stdout);
  }
  return 0;
}
