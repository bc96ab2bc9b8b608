// A user's Bullet world switched to hhg (the installed hhg::bullet): spheres
// fall onto a ground box. Checks that they come to rest on it (the broad phase
// handed their pairs to the narrow phase) and that the pair cache holds exactly
// the overlapping pairs of the bodies' broad-phase boxes (brute force).
#include <hhg/bullet.hpp>

#include <btBulletDynamicsCommon.h>

#include <cstdio>
#include <memory>
#include <vector>

int main() {
  btDefaultCollisionConfiguration configuration;
  btCollisionDispatcher dispatcher(&configuration);
  hhg::bullet_broadphase broadphase;  // was: btDbvtBroadphase broadphase;
  btSequentialImpulseConstraintSolver solver;
  btDiscreteDynamicsWorld world(&dispatcher, &broadphase, &solver, &configuration);
  world.setGravity(btVector3(0, -10, 0));

  btBoxShape ground_shape(btVector3(20, 1, 20));
  btSphereShape ball(btScalar(0.5));
  std::vector<std::unique_ptr<btRigidBody>> bodies;
  bodies.push_back(std::make_unique<btRigidBody>(0, nullptr, &ground_shape));
  bodies.back()->setWorldTransform(btTransform(btQuaternion::getIdentity(), btVector3(0, -1, 0)));
  world.addRigidBody(bodies.back().get());
  btVector3 inertia;
  ball.calculateLocalInertia(1, inertia);
  for (int i = 0; i < 27; ++i) {
    bodies.push_back(std::make_unique<btRigidBody>(1, nullptr, &ball, inertia));
    bodies.back()->setWorldTransform(
        btTransform(btQuaternion::getIdentity(),
                    btVector3(btScalar(1.2 * (i % 3)), btScalar(2 + 1.2 * (i / 9)), btScalar(1.2 * (i / 3 % 3)))));
    world.addRigidBody(bodies.back().get());
  }
  for (int s = 0; s < 240; ++s) world.stepSimulation(btScalar(1.0 / 60), 0);

  int failures = 0;
  for (std::size_t i = 1; i < bodies.size(); ++i) {
    const btScalar y = bodies[i]->getWorldTransform().getOrigin().y();
    if (!(y > btScalar(0.3) && y < btScalar(5))) ++failures;  // on the ground or on other balls
  }
  int expected = 0;
  for (std::size_t i = 0; i < bodies.size(); ++i)
    for (std::size_t j = i + 1; j < bodies.size(); ++j) {
      btVector3 a0, a1, b0, b1;
      broadphase.getAabb(bodies[i]->getBroadphaseHandle(), a0, a1);
      broadphase.getAabb(bodies[j]->getBroadphaseHandle(), b0, b1);
      bool overlap = true;
      for (int k = 0; k < 3; ++k) overlap = overlap && a0[k] <= b1[k] && b0[k] <= a1[k];
      expected += overlap ? 1 : 0;
    }
  const int cached = broadphase.getOverlappingPairCache()->getNumOverlappingPairs();
  std::printf("consumer_bullet: %zu bodies at rest (%d not), %d pairs in the cache, %d by brute force\n",
              bodies.size() - 1 - static_cast<std::size_t>(failures), failures, cached, expected);
  for (auto& b : bodies) world.removeRigidBody(b.get());
  return failures == 0 && cached == expected && expected > 0 ? 0 : 1;
}
