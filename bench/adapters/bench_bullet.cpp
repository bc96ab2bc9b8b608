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
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <random>
#include <vector>

#include <btBulletDynamicsCommon.h>

#include "hhg/bullet.hpp"

namespace {

// CPU time of this thread in seconds (the machine may be shared: wall time
// would count other programs' turns).
double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

// A dynamics world that times its broad-phase parts.
class timed_world : public btDiscreteDynamicsWorld {
 public:
  using btDiscreteDynamicsWorld::btDiscreteDynamicsWorld;
  double aabb_seconds = 0, pair_seconds = 0;
  void updateAabbs() override {
    const double t0 = cpu_seconds();
    btDiscreteDynamicsWorld::updateAabbs();
    aabb_seconds += cpu_seconds() - t0;
  }
  void computeOverlappingPairs() override {
    const double t0 = cpu_seconds();
    btDiscreteDynamicsWorld::computeOverlappingPairs();
    pair_seconds += cpu_seconds() - t0;
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
        shapes.push_back(
            std::make_unique<btBoxShape>(btVector3(btScalar(r), btScalar(r * (0.5 + u(rng))), btScalar(r))));
      const btVector3 at(btScalar(1.3 * (x - side / 2) + 0.2 * (u(rng) - 0.5)), btScalar(1.5 + 1.3 * y),
                         btScalar(1.3 * (z - side / 2) + 0.2 * (u(rng) - 0.5)));
      add(shapes.back().get(), 1, at);
    }
  }
  // Never destroyed (see main): tearing a Bullet world down body by body is
  // quadratic (cleanProxyFromPairs scans every pair, the object array is
  // searched linearly), minutes at 10^5 bodies.
  void add(btCollisionShape* shape, btScalar mass, const btVector3& at) {
    btVector3 inertia(0, 0, 0);
    if (mass > 0) shape->calculateLocalInertia(mass, inertia);
    states.push_back(std::make_unique<btDefaultMotionState>(btTransform(btQuaternion::getIdentity(), at)));
    bodies.push_back(std::make_unique<btRigidBody>(
        btRigidBody::btRigidBodyConstructionInfo(mass, states.back().get(), shape, inertia)));
    world->addRigidBody(bodies.back().get());
  }
  // Seconds of the whole step, of updateAabbs and of computeOverlappingPairs.
  std::array<double, 3> step() {
    world->aabb_seconds = world->pair_seconds = 0;
    const double t0 = cpu_seconds();
    world->stepSimulation(btScalar(1.0 / 60), 0);
    return {cpu_seconds() - t0, world->aabb_seconds, world->pair_seconds};
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
  std::printf(
      "# Bullet %d, btScalar %zu bytes; medians per step of thread CPU time (ms), dbvt and hhg stepped alternately\n",
      btGetVersion(), sizeof(btScalar));
  std::printf("# bp = updateAabbs (setAabb of every object) + computeOverlappingPairs; pairs = the latter alone\n");
  std::printf("%8s %6s %10s %10s %6s %10s %10s %6s %10s %10s %6s %10s %10s\n", "bodies", "steps", "dbvt_step",
              "hhg_step", "ratio", "dbvt_bp", "hhg_bp", "ratio", "dbvt_pairs", "hhg_pairs", "ratio", "dbvt_cache",
              "hhg_cache");
  std::fflush(stdout);
  for (int n : sizes) {
    // Left to the operating system at exit (see scene).
    scene& a = *new scene(std::make_unique<btDbvtBroadphase>(), n);
    scene& b = *new scene(std::make_unique<hhg::bullet_broadphase>(), n);
    const auto [warm, measured] = steps(n);
    for (int s = 0; s < warm; ++s) {
      a.step();
      b.step();
    }
    std::array<std::vector<double>, 3> ta, tb;
    for (int s = 0; s < measured; ++s) {
      const auto x = a.step();
      const auto y = b.step();
      ta[0].push_back(x[0]);
      ta[1].push_back(x[1] + x[2]);
      ta[2].push_back(x[2]);
      tb[0].push_back(y[0]);
      tb[1].push_back(y[1] + y[2]);
      tb[2].push_back(y[2]);
    }
    std::printf("%8d %6d", n, measured);
    for (int k = 0; k < 3; ++k) {
      const double ma = median(ta[k]), mb = median(tb[k]);
      std::printf(" %10.3f %10.3f %6.2f", ma * 1e3, mb * 1e3, ma / mb);
    }
    std::printf(" %10d %10d\n", a.broadphase->getOverlappingPairCache()->getNumOverlappingPairs(),
                b.broadphase->getOverlappingPairCache()->getNumOverlappingPairs());
    std::fflush(stdout);
  }
  return 0;
}
