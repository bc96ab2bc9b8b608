// Tests of hhg::bullet_broadphase (hhg/bullet.hpp) inside Bullet's own
// btDiscreteDynamicsWorld, against brute force over the proxies' boxes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include <btBulletDynamicsCommon.h>

#include "hhg/bullet.hpp"
#include "hhg/executor.hpp"
#include "hhg/queries.hpp"

namespace {

using id_pair = std::pair<int, int>;

// A headless world: a static ground box and `n` boxes and spheres of mixed
// sizes falling onto it and each other.
struct world {
  btDefaultCollisionConfiguration config;
  btCollisionDispatcher dispatcher{&config};
  std::unique_ptr<btBroadphaseInterface> broadphase;
  btSequentialImpulseConstraintSolver solver;
  std::unique_ptr<btDiscreteDynamicsWorld> dynamics;
  std::vector<std::unique_ptr<btCollisionShape>> shapes;
  std::vector<std::unique_ptr<btDefaultMotionState>> states;
  std::vector<std::unique_ptr<btRigidBody>> bodies;
  std::mt19937 rng{12345};
  bool use_groups = false;
  int made = 0;

  explicit world(std::unique_ptr<btBroadphaseInterface> bp, int n, bool groups = false) : broadphase(std::move(bp)) {
    use_groups = groups;
    dynamics = std::make_unique<btDiscreteDynamicsWorld>(&dispatcher, broadphase.get(), &solver, &config);
    dynamics->setGravity(btVector3(0, -10, 0));
    shapes.push_back(std::make_unique<btBoxShape>(btVector3(40, 1, 40)));
    add(shapes.back().get(), 0, btVector3(0, -1, 0));
    const int side = std::max(1, static_cast<int>(std::cbrt(static_cast<double>(n))));
    for (int i = 0; i < n; ++i) {
      const int x = i % side, z = (i / side) % side, y = i / (side * side);
      add_random(btVector3(btScalar(1.3 * (x - side / 2)), btScalar(1.5 + 1.3 * y), btScalar(1.3 * (z - side / 2))));
    }
  }
  ~world() {
    for (auto& b : bodies)
      if (b) dynamics->removeRigidBody(b.get());
  }

  void add_random(const btVector3& at) {
    std::uniform_real_distribution<double> u(0, 1);
    const double r = u(rng) < 0.05 ? 1.0 + u(rng) : 0.2 + 0.35 * u(rng);  // a few big ones
    if (u(rng) < 0.5)
      shapes.push_back(std::make_unique<btSphereShape>(btScalar(r)));
    else
      shapes.push_back(std::make_unique<btBoxShape>(btVector3(btScalar(r), btScalar(r * (0.5 + u(rng))), btScalar(r))));
    const btVector3 jitter(btScalar(0.2 * (u(rng) - 0.5)), 0, btScalar(0.2 * (u(rng) - 0.5)));
    add(shapes.back().get(), 1, at + jitter);
  }

  void add(btCollisionShape* shape, btScalar mass, const btVector3& at) {
    btVector3 inertia(0, 0, 0);
    if (mass > 0) shape->calculateLocalInertia(mass, inertia);
    states.push_back(std::make_unique<btDefaultMotionState>(btTransform(btQuaternion::getIdentity(), at)));
    btRigidBody::btRigidBodyConstructionInfo info(mass, states.back().get(), shape, inertia);
    bodies.push_back(std::make_unique<btRigidBody>(info));
    btRigidBody* b = bodies.back().get();
    b->setUserIndex(made++);
    if (use_groups && mass > 0) {
      // Three groups of our own (bits 6-8, clear of Bullet's filters): 256
      // never pairs with 128; the ground (StaticFilter) pairs with all three.
      const int g = 64 << (b->getUserIndex() % 3);
      const int m = g == 256 ? ~128 : (g == 128 ? ~256 : -1);
      dynamics->addRigidBody(b, g, m);
    } else {
      dynamics->addRigidBody(b);
    }
  }

  // Removes `k` random dynamic bodies and drops `k` new ones from above.
  void churn(int k) {
    for (int i = 0; i < k; ++i) {
      std::uniform_int_distribution<std::size_t> pick(1, bodies.size() - 1);
      const std::size_t j = pick(rng);
      if (!bodies[j]) continue;
      dynamics->removeRigidBody(bodies[j].get());
      bodies[j].reset();
    }
    std::uniform_real_distribution<double> u(-8, 8);
    for (int i = 0; i < k; ++i) add_random(btVector3(btScalar(u(rng)), btScalar(25 + u(rng)), btScalar(u(rng))));
  }

  std::vector<btCollisionObject*> objects() const {
    std::vector<btCollisionObject*> out;
    for (auto& b : bodies)
      if (b) out.push_back(b.get());
    return out;
  }
};

bool aabb_overlap(const btVector3& a0, const btVector3& a1, const btVector3& b0, const btVector3& b1) {
  // Closed, as btDbvt's Intersect and hhg::overlaps.
  for (int i = 0; i < 3; ++i)
    if (a1[i] < b0[i] || b1[i] < a0[i]) return false;
  return true;
}

id_pair key(const btBroadphaseProxy* a, const btBroadphaseProxy* b) {
  return std::minmax(a->m_uniqueId, b->m_uniqueId);
}

// Pairs of the world's proxies whose current boxes overlap and that `accept`
// admits: brute force over the boxes the broad phase reports (getAabb).
template <class Accept>
std::set<id_pair> brute_pairs(world& w, Accept accept) {
  const auto objs = w.objects();
  std::vector<std::pair<btVector3, btVector3>> boxes(objs.size());
  for (std::size_t i = 0; i < objs.size(); ++i)
    w.broadphase->getAabb(objs[i]->getBroadphaseHandle(), boxes[i].first, boxes[i].second);
  std::set<id_pair> out;
  for (std::size_t i = 0; i < objs.size(); ++i)
    for (std::size_t j = i + 1; j < objs.size(); ++j) {
      if (!aabb_overlap(boxes[i].first, boxes[i].second, boxes[j].first, boxes[j].second)) continue;
      btBroadphaseProxy* a = objs[i]->getBroadphaseHandle();
      btBroadphaseProxy* b = objs[j]->getBroadphaseHandle();
      if (accept(a, b)) out.insert(key(a, b));
    }
  return out;
}

// The pair cache's content; fails the test if a pair is there twice.
std::set<id_pair> cache_pairs(world& w) {
  std::set<id_pair> out;
  btOverlappingPairCache* cache = w.broadphase->getOverlappingPairCache();
  const btBroadphasePairArray& arr = cache->getOverlappingPairArray();
  for (int i = 0; i < arr.size(); ++i) {
    EXPECT_TRUE(out.insert(key(arr[i].m_pProxy0, arr[i].m_pProxy1)).second) << "pair twice in the cache";
  }
  return out;
}

bool group_mask_rule(const btBroadphaseProxy* a, const btBroadphaseProxy* b) {
  return (a->m_collisionFilterGroup & b->m_collisionFilterMask) != 0 &&
         (b->m_collisionFilterGroup & a->m_collisionFilterMask) != 0;
}

// Steps the world and checks the pair cache after every step: exact for hhg,
// a superset for btDbvtBroadphase (which keeps pairs of its enlarged leaf
// boxes and removes ended pairs a few per step).
template <class Accept>
void run_and_check(world& w, int steps, bool exact, Accept accept, int churn_every = 0) {
  std::size_t most = 0;
  for (int s = 0; s < steps; ++s) {
    if (churn_every > 0 && s % churn_every == churn_every - 1) w.churn(10);
    w.dynamics->stepSimulation(btScalar(1.0 / 60), 0);
    const std::set<id_pair> expect = brute_pairs(w, accept);
    const std::set<id_pair> got = cache_pairs(w);
    most = std::max(most, expect.size());
    if (exact) {
      ASSERT_EQ(got, expect) << "step " << s;
    } else {
      ASSERT_TRUE(std::includes(got.begin(), got.end(), expect.begin(), expect.end())) << "step " << s;
    }
  }
  EXPECT_GT(most, w.bodies.size() / 2) << "the scene should pile up";
}

std::unique_ptr<btBroadphaseInterface> dbvt() { return std::make_unique<btDbvtBroadphase>(); }
std::unique_ptr<btBroadphaseInterface> hhg_bp() { return std::make_unique<hhg::bullet_broadphase>(); }

const auto any_pair = [](const btBroadphaseProxy* a, const btBroadphaseProxy* b) { return group_mask_rule(a, b); };

TEST(BulletBroadphase, FallingPileDbvtReference) {
  world w(dbvt(), 1000);
  run_and_check(w, 200, false, any_pair);
}

TEST(BulletBroadphase, FallingPileExactPairsEveryStep) {
  world w(hhg_bp(), 1000);
  run_and_check(w, 200, true, any_pair);
}

TEST(BulletBroadphase, ExactPairsWithThreadPoolThreads) {
  hhg::thread_pool pool(3);
  auto bp = std::make_unique<hhg::bullet_broadphase>();
  bp->set_executor(&pool);
  world w(std::move(bp), 1000);
  run_and_check(w, 60, true, any_pair, 13);
}

TEST(BulletBroadphase, BodiesRemovedAndAddedDuringTheRun) {
  world w(hhg_bp(), 300);
  run_and_check(w, 150, true, any_pair, 7);
}

TEST(BulletBroadphase, GroupsAndMasksRespected) {
  world w(hhg_bp(), 500, true);
  // The rule computed here, not asked from Bullet.
  run_and_check(w, 120, true, [](const btBroadphaseProxy* a, const btBroadphaseProxy* b) {
    const int ga = a->m_collisionFilterGroup, gb = b->m_collisionFilterGroup;
    return !((ga == 128 && gb == 256) || (ga == 256 && gb == 128));
  });
}

struct no_even_pairs : btOverlapFilterCallback {
  bool needBroadphaseCollision(btBroadphaseProxy* a, btBroadphaseProxy* b) const override {
    const int ia = static_cast<btCollisionObject*>(a->m_clientObject)->getUserIndex();
    const int ib = static_cast<btCollisionObject*>(b->m_clientObject)->getUserIndex();
    return ia == 0 || ib == 0 || (ia % 2) + (ib % 2) != 0;  // even with even never, the ground with all
  }
};

TEST(BulletBroadphase, CustomOverlapFilterCallbackRespected) {
  no_even_pairs filter;
  // Installed before the bodies come: createProxy adds their pairs at once
  // (as btDbvtBroadphase), and a pair in the cache is not filtered again.
  auto bp = hhg_bp();
  bp->getOverlappingPairCache()->setOverlapFilterCallback(&filter);
  world w(std::move(bp), 500);
  run_and_check(w, 120, true, [](const btBroadphaseProxy* a, const btBroadphaseProxy* b) {
    const int ia = static_cast<btCollisionObject*>(a->m_clientObject)->getUserIndex();
    const int ib = static_cast<btCollisionObject*>(b->m_clientObject)->getUserIndex();
    return ia == 0 || ib == 0 || (ia % 2) + (ib % 2) != 0;
  });
}

TEST(BulletBroadphase, UserHashedPairCacheUsedAndNotDeleted) {
  auto cache = std::make_unique<btHashedOverlappingPairCache>();
  {
    world w(std::make_unique<hhg::bullet_broadphase>(cache.get()), 300);
    EXPECT_EQ(w.broadphase->getOverlappingPairCache(), cache.get());
    run_and_check(w, 80, true, any_pair, 11);
  }
  EXPECT_EQ(cache->getNumOverlappingPairs(), 0);  // still alive, emptied by the bodies' removal
}

TEST(BulletBroadphase, UserSortedPairCacheWithDeferredRemoval) {
  auto cache = std::make_unique<btSortedOverlappingPairCache>();
  ASSERT_TRUE(cache->hasDeferredRemoval());
  world w(std::make_unique<hhg::bullet_broadphase>(cache.get()), 300);
  run_and_check(w, 80, true, any_pair, 9);
}

// Ray and convex-sweep results of the world (through hhg) against Bullet's own:
// a btCollisionWorld with btDbvtBroadphase holding the same shapes at the
// same transforms. Objects are compared by user index.
struct reference_world {
  btDefaultCollisionConfiguration config;
  btCollisionDispatcher dispatcher{&config};
  btDbvtBroadphase broadphase;
  btCollisionWorld cw{&dispatcher, &broadphase, &config};
  std::vector<std::unique_ptr<btCollisionObject>> objects;
  explicit reference_world(const world& w) {
    for (btCollisionObject* o : w.objects()) {
      objects.push_back(std::make_unique<btCollisionObject>());
      objects.back()->setCollisionShape(o->getCollisionShape());
      objects.back()->setWorldTransform(o->getWorldTransform());
      objects.back()->setUserIndex(o->getUserIndex());
      cw.addCollisionObject(objects.back().get());
    }
    cw.updateAabbs();
  }
  ~reference_world() {
    for (auto& o : objects) cw.removeCollisionObject(o.get());
  }
};

std::multiset<int> ray_ids(btCollisionWorld& w, const btVector3& from, const btVector3& to) {
  btCollisionWorld::AllHitsRayResultCallback cb(from, to);
  w.rayTest(from, to, cb);
  std::multiset<int> out;
  for (int i = 0; i < cb.m_collisionObjects.size(); ++i) out.insert(cb.m_collisionObjects[i]->getUserIndex());
  return out;
}

std::pair<int, btScalar> sweep(btCollisionWorld& w, const btConvexShape& shape, const btVector3& from,
                               const btVector3& to) {
  btCollisionWorld::ClosestConvexResultCallback cb(from, to);
  w.convexSweepTest(&shape, btTransform(btQuaternion::getIdentity(), from),
                    btTransform(btQuaternion::getIdentity(), to), cb);
  return {cb.hasHit() ? cb.m_hitCollisionObject->getUserIndex() : -1, cb.m_closestHitFraction};
}

struct collect_ray : btBroadphaseRayCallback {
  std::vector<const btBroadphaseProxy*> got;
  bool process(const btBroadphaseProxy* p) override {
    got.push_back(p);
    return true;
  }
};
struct collect_aabb : btBroadphaseAabbCallback {
  std::vector<const btBroadphaseProxy*> got;
  bool process(const btBroadphaseProxy* p) override {
    got.push_back(p);
    return true;
  }
};

// True when the segment from..to, swept by a box of half size `r`, misses the
// broad-phase box of the object with user index `id` in `w`.
bool segment_misses_box(world& w, int id, const btVector3& from, const btVector3& to, double r) {
  for (btCollisionObject* o : w.objects()) {
    if (o->getUserIndex() != id) continue;
    btVector3 lo, hi;
    w.broadphase->getAabb(o->getBroadphaseHandle(), lo, hi);
    hhg::ray<3, double> ray;
    hhg::box<3, double> b;
    for (int i = 0; i < 3; ++i) {
      ray.origin[i] = from[i];
      ray.direction[i] = double(to[i]) - double(from[i]);
      b.min[i] = lo[i] - r;
      b.max[i] = hi[i] + r;
    }
    ray.max_t = 1;
    return hhg::ray_box_entry(ray, b) < 0;
  }
  return false;
}

// Bullet's own answer: the same bodies in a btCollisionWorld with
// btDbvtBroadphase. Its leaves are enlarged by 0.05, and Bullet's convex ray
// cast can report a hit up to the collision margin outside a shape, so the
// reference may hold an object whose box the ray misses: hhg hands over
// exactly the objects whose boxes the ray meets. So: hhg's objects are the
// reference's, except reference hits outside the object's box.
TEST(BulletBroadphase, RayTestsReturnBulletsOwnObjects) {
  world w(hhg_bp(), 1000);
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(-12, 12);
  const btScalar radius = btScalar(0.6);
  btSphereShape ball(radius);
  std::size_t hits = 0, sweeps = 0, margin_only = 0;
  for (int s = 0; s < 60; ++s) {
    w.dynamics->stepSimulation(btScalar(1.0 / 60), 0);
    if (s % 10 != 9) continue;
    // stepSimulation integrates after its collision detection: bring the
    // broad-phase boxes up to the bodies' new transforms (as a user would).
    w.dynamics->updateAabbs();
    reference_world ref(w);
    for (int r = 0; r < 60; ++r) {
      const btVector3 from(btScalar(u(rng)), btScalar(20 + u(rng)), btScalar(u(rng)));
      const btVector3 to = r % 3 == 0 ? btVector3(btScalar(u(rng)), -2, btScalar(u(rng)))
                                      : btVector3(btScalar(u(rng)), btScalar(u(rng) / 2 + 6), btScalar(u(rng)));
      const auto a = ray_ids(*w.dynamics, from, to), b = ray_ids(ref.cw, from, to);
      ASSERT_TRUE(std::includes(b.begin(), b.end(), a.begin(), a.end())) << "step " << s << " ray " << r;
      for (int id : b) {
        if (a.count(id) != 0) continue;
        ASSERT_TRUE(segment_misses_box(w, id, from, to, 0)) << "step " << s << " ray " << r << " object " << id;
        ++margin_only;
      }
      hits += a.size();
      const auto sa = sweep(*w.dynamics, ball, from, to), sb = sweep(ref.cw, ball, from, to);
      const bool tie = sa.first >= 0 && sb.first >= 0 && sa.second == sb.second;  // any of the tied objects
      if (sa != sb && !tie) {
        // Only when the reference's closest hit lies outside the swept box.
        ASSERT_GE(sb.first, 0);
        ASSERT_TRUE(segment_misses_box(w, sb.first, from, to, radius))
            << "step " << s << " sweep " << r << ": " << sa.first << " " << sa.second << " vs " << sb.first << " "
            << sb.second;
        ++margin_only;
      }
      sweeps += sa.first >= 0 ? 1 : 0;
    }
  }
  EXPECT_GT(hits, 100u);
  EXPECT_GT(sweeps, 50u);
  EXPECT_LT(margin_only * 50, hits) << "hits outside the boxes should be rare";
}

// The broad phase's own ray and box queries against brute force over the
// proxies' boxes, with and without the convex-sweep widening.
TEST(BulletBroadphase, RayTestAndAabbTestAgainstBruteForce) {
  world w(hhg_bp(), 600);
  for (int s = 0; s < 40; ++s) w.dynamics->stepSimulation(btScalar(1.0 / 60), 0);
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> u(-10, 10), e(0, 1.5);
  const auto objs = w.objects();
  std::size_t total = 0;
  for (int q = 0; q < 300; ++q) {
    const btVector3 from(btScalar(u(rng)), btScalar(u(rng) + 10), btScalar(u(rng)));
    const btVector3 to = q % 5 == 0 ? from : btVector3(btScalar(u(rng)), btScalar(u(rng) / 3 + 2), btScalar(u(rng)));
    btVector3 emin(0, 0, 0), emax(0, 0, 0);
    if (q % 2 == 1) {
      emin = btVector3(btScalar(-e(rng)), btScalar(-e(rng)), btScalar(-e(rng)));
      emax = btVector3(btScalar(e(rng)), btScalar(e(rng)), btScalar(e(rng)));
    }
    collect_ray cb;
    w.broadphase->rayTest(from, to, cb, emin, emax);
    std::multiset<const btBroadphaseProxy*> got(cb.got.begin(), cb.got.end()), expect;
    hhg::ray<3, double> r;
    for (int i = 0; i < 3; ++i) {
      r.origin[i] = from[i];
      r.direction[i] = double(to[i]) - double(from[i]);
    }
    r.max_t = 1;
    for (btCollisionObject* o : objs) {
      btVector3 lo, hi;
      w.broadphase->getAabb(o->getBroadphaseHandle(), lo, hi);
      hhg::box<3, double> b;
      for (int i = 0; i < 3; ++i) {
        b.min[i] = double(lo[i] - emax[i]);
        b.max[i] = double(hi[i] - emin[i]);
      }
      if (hhg::ray_box_entry(r, b) >= 0) expect.insert(o->getBroadphaseHandle());
    }
    ASSERT_EQ(got, expect) << "ray " << q;
    total += got.size();

    const btVector3 c(btScalar(u(rng)), btScalar(u(rng) / 2 + 3), btScalar(u(rng)));
    const btVector3 half(btScalar(e(rng) * 2), btScalar(e(rng)), btScalar(e(rng) * 2));
    collect_aabb ab;
    w.broadphase->aabbTest(c - half, c + half, ab);
    std::multiset<const btBroadphaseProxy*> got2(ab.got.begin(), ab.got.end()), expect2;
    for (btCollisionObject* o : objs) {
      btVector3 lo, hi;
      w.broadphase->getAabb(o->getBroadphaseHandle(), lo, hi);
      if (aabb_overlap(lo, hi, c - half, c + half)) expect2.insert(o->getBroadphaseHandle());
    }
    ASSERT_EQ(got2, expect2) << "box " << q;
    total += got2.size();
  }
  EXPECT_GT(total, 300u);
}

// ---- the interface directly ---------------------------------------------------

TEST(BulletBroadphase, ProxiesKeepWhatTheyWereGiven) {
  hhg::bullet_broadphase bp;
  btCollisionDispatcher* no_dispatcher = nullptr;
  int client = 0;
  btBroadphaseProxy* p =
      bp.createProxy(btVector3(0, 0, 0), btVector3(1, 2, 3), BOX_SHAPE_PROXYTYPE, &client, 2, 5, no_dispatcher);
  btBroadphaseProxy* q =
      bp.createProxy(btVector3(1, 2, 3), btVector3(4, 4, 4), SPHERE_SHAPE_PROXYTYPE, nullptr, 1, -1, no_dispatcher);
  EXPECT_EQ(p->m_clientObject, &client);
  EXPECT_EQ(p->m_collisionFilterGroup, 2);
  EXPECT_EQ(p->m_collisionFilterMask, 5);
  EXPECT_NE(p->m_uniqueId, q->m_uniqueId);
  btVector3 lo, hi;
  bp.setAabb(p, btVector3(btScalar(0.1), btScalar(0.2), btScalar(0.3)), btVector3(1, 2, btScalar(3.5)), no_dispatcher);
  bp.getAabb(p, lo, hi);
  EXPECT_EQ(lo, btVector3(btScalar(0.1), btScalar(0.2), btScalar(0.3)));
  EXPECT_EQ(hi, btVector3(1, 2, btScalar(3.5)));
  bp.getBroadphaseAabb(lo, hi);
  EXPECT_EQ(lo, btVector3(btScalar(0.1), btScalar(0.2), btScalar(0.3)));
  EXPECT_EQ(hi, btVector3(4, 4, 4));
  // p and q touch at a corner (closed overlap): p's group 2 & q's mask -1, q's group 1 & p's mask 5.
  bp.calculateOverlappingPairs(no_dispatcher);
  EXPECT_EQ(bp.getOverlappingPairCache()->getNumOverlappingPairs(), 1);
  bp.setAabb(q, btVector3(btScalar(1.01), 2, 3), btVector3(4, 4, 4), no_dispatcher);
  bp.calculateOverlappingPairs(no_dispatcher);
  EXPECT_EQ(bp.getOverlappingPairCache()->getNumOverlappingPairs(), 0);
  bp.setAabb(q, btVector3(1, 2, 3), btVector3(4, 4, 4), no_dispatcher);
  bp.calculateOverlappingPairs(no_dispatcher);
  EXPECT_EQ(bp.getOverlappingPairCache()->getNumOverlappingPairs(), 1);
  // destroyProxy removes the pair at once.
  bp.destroyProxy(q, no_dispatcher);
  EXPECT_EQ(bp.getOverlappingPairCache()->getNumOverlappingPairs(), 0);
  // A new proxy reusing q's slot pairs at once (as btDbvtBroadphase), once.
  btBroadphaseProxy* r =
      bp.createProxy(btVector3(1, 2, 3), btVector3(4, 4, 4), SPHERE_SHAPE_PROXYTYPE, nullptr, 1, -1, no_dispatcher);
  EXPECT_NE(r->m_uniqueId, p->m_uniqueId);
  EXPECT_EQ(bp.getOverlappingPairCache()->getNumOverlappingPairs(), 1);
  bp.calculateOverlappingPairs(no_dispatcher);
  EXPECT_EQ(bp.getOverlappingPairCache()->getNumOverlappingPairs(), 1);
  bp.destroyProxy(p, no_dispatcher);
  bp.destroyProxy(r, no_dispatcher);
  EXPECT_EQ(bp.proxy_count(), 0u);
  bp.resetPool(no_dispatcher);
  bp.getBroadphaseAabb(lo, hi);
  EXPECT_EQ(lo, btVector3(0, 0, 0));
  EXPECT_EQ(hi, btVector3(0, 0, 0));
  bp.calculateOverlappingPairs(no_dispatcher);
  EXPECT_EQ(bp.getOverlappingPairCache()->getNumOverlappingPairs(), 0);
}

// When a proxy created between steps gets its pairs: btDbvtBroadphase adds
// them in createProxy (its collider runs against both trees there), so does
// hhg. Driven through the interface, as a world does between steps: random
// boxes over 3 decades of size, some moved (setAabb) before new proxies come,
// new proxies destroyed again before the step and their slots reused. After
// every createProxy and every calculateOverlappingPairs the cache is compared
// with brute force over the live proxies' current boxes: equal for hhg (no
// pair twice), a superset for btDbvtBroadphase (its leaves are enlarged).
struct new_proxy_run {
  btBroadphaseInterface& bp;
  std::mt19937 rng{77};
  std::vector<btBroadphaseProxy*> live;
  std::vector<std::unique_ptr<int>> ids;  // client objects: a unique id per proxy ever made

  explicit new_proxy_run(btBroadphaseInterface& b) : bp(b) {}
  ~new_proxy_run() {
    for (btBroadphaseProxy* p : live) bp.destroyProxy(p, nullptr);  // btDbvtBroadphase frees them here
  }
  new_proxy_run(const new_proxy_run&) = delete;
  new_proxy_run& operator=(const new_proxy_run&) = delete;

  btVector3 corner(double extent) {
    std::uniform_real_distribution<double> u(0, extent);
    return {btScalar(u(rng)), btScalar(u(rng)), btScalar(u(rng))};
  }
  std::pair<btVector3, btVector3> random_box() {
    std::uniform_real_distribution<double> e(-3, 0.5);  // sizes 10^-3 .. 10^0.5 in a domain of 12
    const btVector3 lo = corner(12);
    const btScalar s = btScalar(std::pow(10.0, e(rng)));
    return {lo, lo + btVector3(s, s * btScalar(0.7), s * btScalar(1.3))};
  }
  btBroadphaseProxy* create() {
    const auto [lo, hi] = random_box();
    ids.push_back(std::make_unique<int>(static_cast<int>(ids.size())));
    btBroadphaseProxy* p = bp.createProxy(lo, hi, BOX_SHAPE_PROXYTYPE, ids.back().get(), 1, -1, nullptr);
    live.push_back(p);
    return p;
  }
  static int id(const btBroadphaseProxy* p) { return *static_cast<const int*>(p->m_clientObject); }
  // Pairs of client ids whose current boxes (getAabb) overlap; only those
  // with `only` if given.
  std::set<id_pair> brute(const btBroadphaseProxy* only = nullptr) const {
    std::set<id_pair> out;
    std::vector<std::pair<btVector3, btVector3>> b(live.size());
    for (std::size_t i = 0; i < live.size(); ++i) bp.getAabb(live[i], b[i].first, b[i].second);
    for (std::size_t i = 0; i < live.size(); ++i)
      for (std::size_t j = i + 1; j < live.size(); ++j)
        if ((only == nullptr || live[i] == only || live[j] == only) &&
            aabb_overlap(b[i].first, b[i].second, b[j].first, b[j].second))
          out.insert(std::minmax(id(live[i]), id(live[j])));
    return out;
  }
  std::set<id_pair> cache(const btBroadphaseProxy* only = nullptr) const {
    std::set<id_pair> out;
    const btBroadphasePairArray& arr = bp.getOverlappingPairCache()->getOverlappingPairArray();
    for (int i = 0; i < arr.size(); ++i) {
      const btBroadphasePair& pr = arr[i];
      if (pr.m_pProxy0 == nullptr || pr.m_pProxy1 == nullptr) continue;  // a sorted cache's removed pair
      if (only != nullptr && pr.m_pProxy0 != only && pr.m_pProxy1 != only) continue;
      EXPECT_TRUE(out.insert(std::minmax(id(pr.m_pProxy0), id(pr.m_pProxy1))).second) << "pair twice in the cache";
    }
    return out;
  }
  void expect(const std::set<id_pair>& got, const std::set<id_pair>& want, bool exact, const char* when) const {
    if (exact) {
      EXPECT_EQ(got, want) << when;
    } else {
      EXPECT_TRUE(std::includes(got.begin(), got.end(), want.begin(), want.end())) << when;
    }
  }
  // Returns how many pairs the new proxies brought in createProxy.
  std::size_t run(bool exact) {
    std::size_t brought = 0;
    for (int i = 0; i < 400; ++i) create();
    bp.calculateOverlappingPairs(nullptr);
    expect(cache(), brute(), exact, "first step");
    for (int step = 0; step < 12; ++step) {
      std::uniform_int_distribution<std::size_t> pick(0, live.size() - 1);
      for (int k = 0; k < 40; ++k) {  // moves before the new proxies come
        const auto [lo, hi] = random_box();
        bp.setAabb(live[pick(rng)], lo, hi, nullptr);
      }
      for (int k = 0; k < 30; ++k) {
        btBroadphaseProxy* p = create();
        const std::set<id_pair> want = brute(p);
        brought += want.size();
        // right after createProxy: the new proxy's pairs, against the current boxes
        expect(cache(p), want, exact, "after createProxy");
        if (k % 7 == 3) {  // destroyed before the step; the next one may take its slot
          bp.destroyProxy(p, nullptr);
          live.pop_back();
          EXPECT_TRUE(cache(p).empty());
        }
        if (k % 11 == 5) {  // an old proxy destroyed between steps
          const std::size_t j = pick(rng) % (live.size() - 1);
          bp.destroyProxy(live[j], nullptr);
          live.erase(live.begin() + static_cast<std::ptrdiff_t>(j));
        }
      }
      bp.calculateOverlappingPairs(nullptr);
      if (::testing::Test::HasFailure()) return brought;
      expect(cache(), brute(), exact, "after calculateOverlappingPairs");
    }
    return brought;
  }
};

TEST(BulletBroadphase, NewProxyPairsInCreateProxyAsDbvt) {
  btDbvtBroadphase dbvt_bp;
  ASSERT_FALSE(dbvt_bp.m_deferedcollide);  // the default mode
  new_proxy_run reference{dbvt_bp};
  const std::size_t brought = reference.run(false);
  EXPECT_GT(brought, 300u);  // the new proxies do bring pairs
  hhg::bullet_broadphase hhg_bp;
  new_proxy_run ours{hhg_bp};
  EXPECT_EQ(ours.run(true), brought);  // the same scene (same seed)
  // a pair cache with deferred removal: still no pair twice, exact after each step
  btSortedOverlappingPairCache sorted;
  hhg::bullet_broadphase hhg_sorted(&sorted);
  new_proxy_run ours_sorted{hhg_sorted};
  EXPECT_EQ(ours_sorted.run(true), brought);
}

TEST(BulletBroadphase, BadInputThrowsAndChangesNothing) {
  hhg::bullet_broadphase bp;
  btDispatcher* nd = nullptr;
  const btScalar nan = std::numeric_limits<btScalar>::quiet_NaN();
  btBroadphaseProxy* p =
      bp.createProxy(btVector3(0, 0, 0), btVector3(1, 1, 1), BOX_SHAPE_PROXYTYPE, nullptr, 1, -1, nd);
  btBroadphaseProxy* q =
      bp.createProxy(btVector3(0, 0, 0), btVector3(1, 1, 1), BOX_SHAPE_PROXYTYPE, nullptr, 1, -1, nd);
  bp.calculateOverlappingPairs(nd);
  ASSERT_EQ(bp.getOverlappingPairCache()->getNumOverlappingPairs(), 1);
  const auto code = [](auto&& f) {
    try {
      f();
    } catch (const hhg::error& e) {
      return static_cast<int>(e.code());
    }
    return -1;
  };
  EXPECT_EQ(code([&] { bp.createProxy(btVector3(nan, 0, 0), btVector3(1, 1, 1), 0, nullptr, 1, -1, nd); }),
            int(hhg::errc::nan_coordinate));
  EXPECT_EQ(code([&] { bp.createProxy(btVector3(2, 0, 0), btVector3(1, 1, 1), 0, nullptr, 1, -1, nd); }),
            int(hhg::errc::inverted_box));
  EXPECT_EQ(bp.proxy_count(), 2u);
  EXPECT_EQ(code([&] { bp.setAabb(p, btVector3(0, nan, 0), btVector3(1, 1, 1), nd); }), int(hhg::errc::nan_coordinate));
  EXPECT_EQ(code([&] { bp.setAabb(p, btVector3(0, 0, 5), btVector3(1, 1, 1), nd); }), int(hhg::errc::inverted_box));
  btVector3 lo, hi;
  bp.getAabb(p, lo, hi);
  EXPECT_EQ(lo, btVector3(0, 0, 0));
  EXPECT_EQ(hi, btVector3(1, 1, 1));
  btDbvtBroadphase other;
  btBroadphaseProxy* foreign = other.createProxy(btVector3(0, 0, 0), btVector3(1, 1, 1), 0, nullptr, 1, -1, nd);
  EXPECT_EQ(code([&] { bp.destroyProxy(foreign, nd); }), int(hhg::errc::invalid_handle));
  EXPECT_EQ(code([&] { bp.setAabb(foreign, btVector3(0, 0, 0), btVector3(1, 1, 1), nd); }),
            int(hhg::errc::invalid_handle));
  EXPECT_EQ(code([&] { bp.destroyProxy(nullptr, nd); }), int(hhg::errc::invalid_handle));
  other.destroyProxy(foreign, nd);
  collect_ray rc;
  EXPECT_EQ(code([&] { bp.rayTest(btVector3(nan, 0, 0), btVector3(1, 1, 1), rc); }), int(hhg::errc::nan_coordinate));
  EXPECT_EQ(
      code([&] { bp.rayTest(btVector3(0, 0, 0), btVector3(1, 1, 1), rc, btVector3(1, 0, 0), btVector3(0, 0, 0)); }),
      int(hhg::errc::inverted_box));
  collect_aabb ac;
  EXPECT_EQ(code([&] { bp.aabbTest(btVector3(1, 1, 1), btVector3(0, 0, 0), ac); }), int(hhg::errc::inverted_box));
  bp.destroyProxy(q, nd);
  EXPECT_EQ(code([&] { bp.destroyProxy(q, nd); }), int(hhg::errc::invalid_handle));
  EXPECT_EQ(code([&] { bp.getAabb(q, lo, hi); }), int(hhg::errc::invalid_handle));
  EXPECT_EQ(bp.proxy_count(), 1u);
  EXPECT_EQ(bp.getOverlappingPairCache()->getNumOverlappingPairs(), 0);
  bp.calculateOverlappingPairs(nd);
  EXPECT_EQ(bp.getOverlappingPairCache()->getNumOverlappingPairs(), 0);
  bp.getAabb(p, lo, hi);
  EXPECT_EQ(hi, btVector3(1, 1, 1));
  bp.destroyProxy(p, nd);
}

}  // namespace
