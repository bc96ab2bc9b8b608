// Tests of hhg::fcl_manager (hhg/fcl.hpp) with the logic of FCL's own
// broad-phase tests (random environments of boxes, spheres and cylinders;
// self collision, object queries, manager against manager; exhaustive and
// not; distance), each compared with fcl::NaiveCollisionManager.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include <fcl/broadphase/broadphase_bruteforce.h>
#include <fcl/geometry/shape/box.h>
#include <fcl/geometry/shape/cylinder.h>
#include <fcl/geometry/shape/sphere.h>
#include <fcl/narrowphase/collision.h>
#include <fcl/narrowphase/distance.h>

#include "hhg/fcl.hpp"

namespace {

using S = double;
using object = fcl::CollisionObject<S>;
using objects = std::vector<std::unique_ptr<object>>;

std::size_t index_of(const object* o) { return reinterpret_cast<std::size_t>(o->getUserData()); }

// Random objects: boxes, spheres, cylinders in [-scale, scale]^3, random
// rotations; every `odd`-th object is tiny or huge (sizes over 5 decades).
objects environment(std::mt19937& rng, int per_kind, double scale, std::size_t first_index) {
  std::uniform_real_distribution<double> pos(-scale, scale), ang(-M_PI, M_PI), unit(0, 1);
  objects out;
  for (int i = 0; i < 3 * per_kind; ++i) {
    double f = 1;
    if (i % 17 == 5) f = 0.01;
    if (i % 41 == 7) f = 8;
    std::shared_ptr<fcl::CollisionGeometry<S>> g;
    switch (i % 3) {
      case 0: g = std::make_shared<fcl::Box<S>>(5 * f, 10 * f, 20 * f); break;
      case 1: g = std::make_shared<fcl::Sphere<S>>(8 * f); break;
      default: g = std::make_shared<fcl::Cylinder<S>>(5 * f, 20 * f); break;
    }
    const fcl::Quaternion<S> q = fcl::Quaternion<S>(
        Eigen::AngleAxis<S>(ang(rng), fcl::Vector3<S>(unit(rng), unit(rng), unit(rng) + 0.1).normalized()));
    fcl::Transform3<S> tf = fcl::Transform3<S>::Identity();
    tf.linear() = q.toRotationMatrix();
    tf.translation() = fcl::Vector3<S>(pos(rng), pos(rng), pos(rng));
    out.push_back(std::make_unique<object>(g, tf));
    out.back()->setUserData(reinterpret_cast<void*>(first_index + out.size() - 1));
  }
  return out;
}

std::vector<object*> raw(const objects& v) {
  std::vector<object*> out;
  for (auto& o : v) out.push_back(o.get());
  return out;
}

// ---- callbacks, as in FCL's tests, plus checks of the contract -------------------
struct collision_data {
  bool exhaustive = true;
  bool done = false;
  bool called_after_done = false;
  std::size_t contacts = 0;
  std::set<std::pair<std::size_t, std::size_t>> colliding, seen;
  bool duplicate = false;
};

bool collide_cb(object* a, object* b, void* d) {
  auto* c = static_cast<collision_data*>(d);
  if (c->done) {
    c->called_after_done = true;
    return true;
  }
  if (index_of(b) < index_of(a)) std::swap(a, b);  // the narrow phase in one order
  if (!c->seen.emplace(index_of(a), index_of(b)).second) c->duplicate = true;
  fcl::CollisionRequest<S> req(c->exhaustive ? 1000 : 1, false);
  fcl::CollisionResult<S> res;
  if (fcl::collide(a, b, req, res) > 0) {
    c->contacts += res.numContacts();
    c->colliding.emplace(index_of(a), index_of(b));
    if (!c->exhaustive) c->done = true;
  }
  return c->done;
}

struct distance_data {
  S min_distance = std::numeric_limits<S>::max();
  std::set<std::pair<std::size_t, std::size_t>> seen;
  bool duplicate = false;
};

bool distance_cb(object* a, object* b, void* d, S& dist) {
  auto* c = static_cast<distance_data*>(d);
  if (index_of(b) < index_of(a)) std::swap(a, b);
  if (!c->seen.emplace(index_of(a), index_of(b)).second) c->duplicate = true;
  fcl::DistanceRequest<S> req;
  fcl::DistanceResult<S> res;
  const S v = fcl::distance(a, b, req, res);
  if (v < dist) dist = v;
  if (v < c->min_distance) c->min_distance = v;
  return dist <= 0;
}

void expect_same(const collision_data& hhg, const collision_data& naive, const char* what) {
  EXPECT_FALSE(hhg.duplicate) << what;
  EXPECT_FALSE(hhg.called_after_done) << what;
  if (naive.exhaustive) {
    EXPECT_EQ(hhg.contacts, naive.contacts) << what;
    EXPECT_EQ(hhg.colliding, naive.colliding) << what;
  } else {
    EXPECT_EQ(hhg.done, naive.done) << what;
    EXPECT_LE(hhg.colliding.size(), 1u) << what;
  }
}

// Registers `env` in an hhg manager and a naive one; checks self collision,
// queries with `queries`, and the same after moving some objects.
void collision_round(int per_kind, double scale, bool exhaustive, unsigned seed) {
  std::mt19937 rng(seed);
  objects env = environment(rng, per_kind, scale, 0);
  objects queries = environment(rng, 4, scale, 100000);
  objects env2 = environment(rng, per_kind / 2 + 1, scale, 200000);
  hhg::fcl_manager<S> m, m2;
  fcl::NaiveCollisionManager<S> n, n2;
  m.registerObjects(raw(env));
  n.registerObjects(raw(env));
  m2.registerObjects(raw(env2));
  n2.registerObjects(raw(env2));
  m.setup();
  n.setup();
  m2.setup();
  n2.setup();
  std::size_t total = 0;
  for (int round = 0; round < 3; ++round) {
    {
      collision_data a, b;
      a.exhaustive = b.exhaustive = exhaustive;
      m.collide(&a, collide_cb);
      n.collide(&b, collide_cb);
      expect_same(a, b, "self");
      total += b.colliding.size();
    }
    for (auto& q : queries) {
      collision_data a, b;
      a.exhaustive = b.exhaustive = exhaustive;
      m.collide(q.get(), &a, collide_cb);
      n.collide(q.get(), &b, collide_cb);
      expect_same(a, b, "query");
      total += b.colliding.size();
    }
    for (int dir = 0; dir < 2; ++dir) {
      collision_data a, b;
      a.exhaustive = b.exhaustive = exhaustive;
      if (dir == 0) {
        m.collide(&m2, &a, collide_cb);
        n.collide(&n2, &b, collide_cb);
      } else {
        m2.collide(&m, &a, collide_cb);
        n2.collide(&n, &b, collide_cb);
      }
      expect_same(a, b, "manager");
      total += b.colliding.size();
    }
    // Move a third of the objects and update, each form of update once.
    std::uniform_real_distribution<double> step(-scale / 10, scale / 10);
    std::vector<object*> moved;
    for (std::size_t i = 0; i < env.size(); i += 3) {
      env[i]->setTranslation(env[i]->getTranslation() + fcl::Vector3<S>(step(rng), step(rng), step(rng)));
      env[i]->computeAABB();
      moved.push_back(env[i].get());
    }
    if (round == 0) {
      m.update();
    } else if (round == 1) {
      m.update(moved);
    } else {
      for (object* o : moved) m.update(o);
    }
    n.update();
  }
  EXPECT_GT(total, 0u);
}

TEST(FclManager, CollisionExhaustiveSmall) { collision_round(10, 100, true, 1); }
TEST(FclManager, CollisionExhaustiveMedium) { collision_round(100, 300, true, 2); }
TEST(FclManager, CollisionExhaustiveLarge) { collision_round(400, 500, true, 3); }
TEST(FclManager, CollisionNotExhaustive) {
  for (unsigned s = 0; s < 5; ++s) collision_round(30, 40 + 30 * s, false, 10 + s);
}

// update(objs) with the same list every step (a simulation's loop): the
// handles of the last call are reused, so every step must still equal the
// naive manager, and an unregistered object must not leave a stale handle.
TEST(FclManager, UpdateTheSameListEveryStep) {
  std::mt19937 rng(21);
  objects env = environment(rng, 60, 200, 0);
  hhg::fcl_manager<S> m;
  m.registerObjects(raw(env));
  const std::vector<object*> all = raw(env);
  std::uniform_real_distribution<double> step(-20, 20);
  const auto move_all = [&] {
    for (auto& o : env) {
      o->setTranslation(o->getTranslation() + fcl::Vector3<S>(step(rng), step(rng), step(rng)));
      o->computeAABB();
    }
  };
  const auto check = [&](const std::vector<object*>& registered, const char* what) {
    fcl::NaiveCollisionManager<S> n;
    n.registerObjects(registered);
    collision_data a, b;
    m.collide(&a, collide_cb);
    n.collide(&b, collide_cb);
    expect_same(a, b, what);
    return b.colliding.size();
  };
  std::size_t total = 0;
  for (int round = 0; round < 4; ++round) {
    move_all();
    m.update(all);
    total += check(all, "the same list again");
  }
  EXPECT_GT(total, 0u);
  // A bad box in the list: refused, nothing changes (the next update still works).
  const fcl::Vector3<S> old = env[3]->getTranslation();
  env[3]->setTranslation(fcl::Vector3<S>(std::nan(""), 0, 0));
  env[3]->computeAABB();
  EXPECT_THROW(m.update(all), hhg::error);
  env[3]->setTranslation(old);
  env[3]->computeAABB();
  check(all, "after a refused update");
  // Unregistered: the list names an unknown object; registered again (a new
  // handle, another object in its old slot): the list works again.
  m.unregisterObject(all[5]);
  EXPECT_THROW(m.update(all), hhg::error);
  objects extra = environment(rng, 1, 200, 900);
  m.registerObject(extra[0].get());
  m.registerObject(all[5]);
  move_all();
  m.update(all);
  std::vector<object*> registered = all;
  registered.push_back(extra[0].get());
  check(registered, "after unregister and register again");
  move_all();
  m.update(all);
  check(registered, "the new list again");
}

// Self collide hands the pairs over lower slot first (here: registration
// order), in detection's order, the same with and without worker threads.
TEST(FclManager, CollideOrderLowerSlotFirstSameForAnyThreadCount) {
  std::mt19937 rng(33);
  objects env = environment(rng, 4000, 600, 0);
  const auto order = [&](hhg::executor* e) {
    hhg::fcl_manager<S> m;
    m.set_executor(e);
    m.registerObjects(raw(env));
    std::vector<std::pair<std::size_t, std::size_t>> got;
    m.collide(&got, [](object* a, object* b, void* d) {
      static_cast<std::vector<std::pair<std::size_t, std::size_t>>*>(d)->emplace_back(index_of(a), index_of(b));
      return false;
    });
    return got;
  };
  const auto serial = order(nullptr);
  hhg::thread_pool pool(3);
  const auto threaded = order(&pool);
  EXPECT_GT(serial.size(), 1000u);
  EXPECT_TRUE(serial == threaded);
  for (const auto& [a, b] : serial) EXPECT_LT(a, b);
}

void distance_round(int per_kind, double scale, unsigned seed) {
  std::mt19937 rng(seed);
  objects env = environment(rng, per_kind, scale, 0);
  objects queries = environment(rng, 4, scale * 1.5, 100000);
  objects env2 = environment(rng, per_kind / 2 + 1, scale, 200000);
  // Spread env2 away so manager distances are positive.
  for (auto& o : env2) {
    o->setTranslation(o->getTranslation() + fcl::Vector3<S>(3 * scale, 0, 0));
    o->computeAABB();
  }
  hhg::fcl_manager<S> m, m2;
  fcl::NaiveCollisionManager<S> n, n2;
  m.registerObjects(raw(env));
  n.registerObjects(raw(env));
  m2.registerObjects(raw(env2));
  n2.registerObjects(raw(env2));
  {
    distance_data a, b;
    m.distance(&a, distance_cb);
    n.distance(&b, distance_cb);
    EXPECT_FALSE(a.duplicate);
    EXPECT_EQ(a.min_distance, b.min_distance) << "self";
  }
  int positive = 0;
  for (auto& q : queries) {
    distance_data a, b;
    m.distance(q.get(), &a, distance_cb);
    positive += b.min_distance > 0 ? 1 : 0;
    n.distance(q.get(), &b, distance_cb);
    EXPECT_FALSE(a.duplicate);
    EXPECT_EQ(a.min_distance, b.min_distance) << "query";
    // hhg prunes: it tests no more pairs than the naive manager does.
    EXPECT_LE(a.seen.size(), b.seen.size());
  }
  EXPECT_GT(positive, 0) << "some queries should be apart from everything";
  for (int dir = 0; dir < 2; ++dir) {
    distance_data a, b;
    if (dir == 0) {
      m.distance(&m2, &a, distance_cb);
      n.distance(&n2, &b, distance_cb);
    } else {
      m2.distance(&m, &a, distance_cb);
      n2.distance(&n, &b, distance_cb);
    }
    EXPECT_FALSE(a.duplicate);
    EXPECT_GT(b.min_distance, 0);
    EXPECT_EQ(a.min_distance, b.min_distance) << "manager";
  }
}

TEST(FclManager, DistanceSmall) { distance_round(5, 100, 21); }
TEST(FclManager, DistanceSparse) { distance_round(50, 2000, 22); }
TEST(FclManager, DistanceDense) { distance_round(100, 300, 23); }

// ---- the callback contract -------------------------------------------------------------
struct counter {
  int calls = 0;
  int stop_at = 0;
};
bool counting_collide(object*, object*, void* d) {
  auto* c = static_cast<counter*>(d);
  return ++c->calls >= c->stop_at;
}
bool counting_distance(object*, object*, void* d, S& dist) {
  auto* c = static_cast<counter*>(d);
  ++c->calls;
  if (c->stop_at < 0) {
    dist = 0;  // prune everything after this call
    return false;
  }
  return c->calls >= c->stop_at;
}

TEST(FclManager, CallbackReturningTrueStopsAndNoCallFollows) {
  std::mt19937 rng(5);
  objects env = environment(rng, 60, 60, 0);  // dense: many overlapping boxes
  objects env2 = environment(rng, 30, 60, 1000);
  hhg::fcl_manager<S> m, m2;
  m.registerObjects(raw(env));
  m2.registerObjects(raw(env2));
  for (int stop_at : {1, 3, 10}) {
    counter c{0, stop_at};
    m.collide(&c, counting_collide);
    EXPECT_EQ(c.calls, stop_at);
    c = {0, stop_at};
    m.collide(&m2, &c, counting_collide);
    EXPECT_EQ(c.calls, stop_at);
    c = {0, stop_at};
    m.collide(env[0].get(), &c, counting_collide);
    int overlapping = 0;  // env[0] is registered: it meets itself at least
    for (auto& o : env) overlapping += env[0]->getAABB().overlap(o->getAABB()) ? 1 : 0;
    EXPECT_EQ(c.calls, std::min(stop_at, overlapping));
    c = {0, stop_at};
    m.distance(&c, counting_distance);
    EXPECT_EQ(c.calls, stop_at);
    c = {0, stop_at};
    m.distance(&m2, &c, counting_distance);
    EXPECT_EQ(c.calls, stop_at);
    c = {0, stop_at};
    m.distance(env2[0].get(), &c, counting_distance);
    EXPECT_EQ(c.calls, stop_at);
  }
  // A distance callback writing 0 back prunes every later pair.
  counter c{0, -1};
  m.distance(&c, counting_distance);
  EXPECT_EQ(c.calls, 1);
  c = {0, -1};
  m.distance(&m2, &c, counting_distance);
  EXPECT_EQ(c.calls, 1);
  c = {0, -1};
  m.distance(env2[0].get(), &c, counting_distance);
  EXPECT_EQ(c.calls, 1);
}

TEST(FclManager, RegisterUnregisterGetObjects) {
  std::mt19937 rng(8);
  objects env = environment(rng, 20, 100, 0);
  hhg::fcl_manager<S> m;
  EXPECT_TRUE(m.empty());
  for (auto& o : env) m.registerObject(o.get());
  EXPECT_EQ(m.size(), env.size());
  for (std::size_t i = 0; i < env.size(); i += 2) m.unregisterObject(env[i].get());
  std::vector<object*> got;
  m.getObjects(got);
  std::set<object*> expect;
  for (std::size_t i = 1; i < env.size(); i += 2) expect.insert(env[i].get());
  EXPECT_EQ(std::set<object*>(got.begin(), got.end()), expect);
  EXPECT_EQ(got.size(), expect.size());
  // Self collision equals naive on what is left.
  fcl::NaiveCollisionManager<S> n;
  n.registerObjects(got);
  collision_data a, b;
  m.collide(&a, collide_cb);
  n.collide(&b, collide_cb);
  expect_same(a, b, "after unregister");
  m.clear();
  EXPECT_TRUE(m.empty());
  m.getObjects(got);
  EXPECT_TRUE(got.empty());
}

TEST(FclManager, BadInputThrowsAndChangesNothing) {
  std::mt19937 rng(9);
  objects env = environment(rng, 5, 50, 0);
  hhg::fcl_manager<S> m;
  m.registerObjects(raw(env));
  const auto code = [](auto&& f) {
    try {
      f();
    } catch (const hhg::error& e) {
      return static_cast<int>(e.code());
    }
    return -1;
  };
  const std::size_t n0 = m.size();
  EXPECT_EQ(code([&] { m.registerObject(nullptr); }), int(hhg::errc::invalid_handle));
  EXPECT_EQ(code([&] { m.registerObject(env[0].get()); }), int(hhg::errc::invalid_handle));
  objects extra = environment(rng, 1, 50, 500);
  EXPECT_EQ(code([&] { m.registerObjects({extra[0].get(), extra[0].get()}); }), int(hhg::errc::invalid_handle));
  EXPECT_EQ(m.size(), n0);
  EXPECT_EQ(code([&] { m.unregisterObject(extra[0].get()); }), int(hhg::errc::invalid_handle));
  EXPECT_EQ(code([&] { m.update(extra[0].get()); }), int(hhg::errc::invalid_handle));
  // A NaN box (a NaN translation) and an inverted one.
  const fcl::Vector3<S> old = env[1]->getTranslation();
  env[1]->setTranslation(fcl::Vector3<S>(std::nan(""), 0, 0));
  env[1]->computeAABB();
  EXPECT_EQ(code([&] { m.update(); }), int(hhg::errc::nan_coordinate));
  EXPECT_EQ(code([&] { m.update(env[1].get()); }), int(hhg::errc::nan_coordinate));
  EXPECT_EQ(code([&] { m.registerObject(env[1].get()); }), int(hhg::errc::nan_coordinate));
  env[1]->setTranslation(old);
  env[1]->computeAABB();
  extra[1]->computeAABB();
  fcl::AABB<S>& box = const_cast<fcl::AABB<S>&>(extra[1]->getAABB());
  std::swap(box.min_[0], box.max_[0]);
  EXPECT_EQ(code([&] { m.registerObject(extra[1].get()); }), int(hhg::errc::inverted_box));
  EXPECT_EQ(code([&] { m.registerObjects({extra[2].get(), extra[1].get()}); }), int(hhg::errc::inverted_box));
  collision_data d;
  EXPECT_EQ(code([&] { m.collide(extra[1].get(), &d, collide_cb); }), int(hhg::errc::inverted_box));
  fcl::NaiveCollisionManager<S> naive;
  EXPECT_EQ(code([&] { m.collide(&naive, &d, collide_cb); }), int(hhg::errc::invalid_handle));
  EXPECT_EQ(m.size(), n0);
  m.unregisterObject(env[0].get());
  EXPECT_EQ(code([&] { m.unregisterObject(env[0].get()); }), int(hhg::errc::invalid_handle));
  EXPECT_EQ(m.size(), n0 - 1);
  // The state is intact: self collision still equals naive's.
  std::vector<object*> left;
  m.getObjects(left);
  fcl::NaiveCollisionManager<S> n;
  n.registerObjects(left);
  collision_data a, b;
  m.collide(&a, collide_cb);
  n.collide(&b, collide_cb);
  expect_same(a, b, "after errors");
}

// ---- found by the review of stop 79 ----------------------------------------------------
std::unique_ptr<object> cube_at(double side, double x, std::size_t index) {
  auto o = std::make_unique<object>(std::make_shared<fcl::Box<S>>(side, side, side));
  fcl::Transform3<S> tf = fcl::Transform3<S>::Identity();
  tf.translation() = fcl::Vector3<S>(x, 0, 0);
  o->setTransform(tf);
  o->computeAABB();
  o->setUserData(reinterpret_cast<void*>(index));
  return o;
}
bool box_distance_cb(object* a, object* b, void* d, S& dist) {
  const S v = a->getAABB().distance(b->getAABB());
  if (v < dist) dist = v;
  auto* best = static_cast<S*>(d);
  if (v < *best) *best = v;
  return false;
}

// The nearest object's box at exactly the first search radius (2, the query's
// edge), one rounding step outside the rounded search box: its distance was
// "done" in the next round and no round handed it over, so the minimum came
// back as the far object's (95.47 instead of 2) in all three forms.
TEST(FclManager, DistanceFindsAnObjectAtTheSearchRadiusOutsideTheRoundedBox) {
  auto query = cube_at(2.0, 3.031859454455258, 0);    // x in [2.0318594544552582, 4.0318594544552582]
  auto near = cube_at(1.0, -0.46814054554474188, 1);  // x max 0.031859454455258118: gap 2 on x
  auto far = cube_at(1.0, 100.0, 2);
  ASSERT_EQ(query->getAABB().distance(near->getAABB()), 2.0);
  ASSERT_GT(S(query->getAABB().min_[0] - 2.0), near->getAABB().max_[0]) << "the rounded search box misses near";
  hhg::fcl_manager<S> m;
  fcl::NaiveCollisionManager<S> naive;
  m.registerObjects({near.get(), far.get()});
  naive.registerObjects({near.get(), far.get()});
  S got = std::numeric_limits<S>::max(), want = got;
  m.distance(query.get(), &got, box_distance_cb);
  naive.distance(query.get(), &want, box_distance_cb);
  EXPECT_EQ(want, 2.0);
  EXPECT_EQ(got, want) << "against one object";
  hhg::fcl_manager<S> q;
  q.registerObject(query.get());
  got = std::numeric_limits<S>::max();
  q.distance(&m, &got, box_distance_cb);
  EXPECT_EQ(got, want) << "manager against manager";
  hhg::fcl_manager<S> all;
  all.registerObjects({query.get(), near.get(), far.get()});
  got = std::numeric_limits<S>::max();
  all.distance(&got, box_distance_cb);
  EXPECT_EQ(got, want) << "self";
}

// Changing the manager from inside its own callback: every query form refuses
// it (reentrant_call) and nothing changes; until stop 79 the self forms
// accepted it and later callbacks got a null object or one that overlapped
// nothing. A nested self collide (a read) inside a self collide's callback is
// allowed and leaves the outer call's pairs alone.
TEST(FclManager, ChangesFromInsideItsOwnCallbacksThrowAndChangeNothing) {
  auto a = cube_at(1, 0.0, 0), b = cube_at(1, 0.3, 1), c = cube_at(1, 0.6, 2), far = cube_at(1, 1000.0, 3);
  auto e = cube_at(1, 0.2, 4);
  hhg::fcl_manager<S> m, other;
  other.registerObject(e.get());
  struct probe {
    hhg::fcl_manager<S>* m;
    object* b;
    object* far;
    std::vector<int> codes;
    std::vector<std::pair<object*, object*>> calls;
    void change() {
      for (int what = 0; what < 5; ++what) {
        try {
          if (what == 0) m->unregisterObject(b);
          if (what == 1) m->registerObject(far);
          if (what == 2) m->update();
          if (what == 3) m->update(b);
          if (what == 4) m->clear();
          codes.push_back(-1);
        } catch (const hhg::error& e) {
          codes.push_back(static_cast<int>(e.code()));
        }
      }
    }
  };
  const auto collide_probe = [](object* x, object* y, void* d) {
    auto* p = static_cast<probe*>(d);
    p->calls.emplace_back(x, y);
    p->change();
    return false;
  };
  const auto distance_probe = [](object* x, object* y, void* d, S&) {
    auto* p = static_cast<probe*>(d);
    p->calls.emplace_back(x, y);
    p->change();
    return false;
  };
  m.registerObjects({a.get(), b.get(), c.get()});  // a-b, a-c, b-c overlap
  for (int form = 0; form < 6; ++form) {
    SCOPED_TRACE("form " + std::to_string(form));
    probe p{&m, b.get(), far.get(), {}, {}};
    if (form == 0) m.collide(&p, collide_probe);
    if (form == 1) m.collide(a.get(), &p, collide_probe);
    if (form == 2) m.collide(&other, &p, collide_probe);
    if (form == 3) m.distance(&p, distance_probe);
    if (form == 4) m.distance(a.get(), &p, distance_probe);
    if (form == 5) m.distance(&other, &p, distance_probe);
    ASSERT_FALSE(p.calls.empty());
    EXPECT_EQ(p.codes.size(), 5 * p.calls.size());
    for (const int code : p.codes) EXPECT_EQ(code, int(hhg::errc::reentrant_call));
    for (const auto& [x, y] : p.calls) EXPECT_TRUE(x != nullptr && y != nullptr);
    EXPECT_EQ(m.size(), 3u);
    EXPECT_EQ(other.size(), 1u);
    if (form == 0) {
      EXPECT_EQ(p.calls.size(), 3u) << "every overlapping pair, once";
    }
  }
  // a nested self collide in a self collide's callback: the outer call still
  // hands over its own three pairs
  struct nest {
    hhg::fcl_manager<S>* m;
    int outer = 0, inner = 0;
  } n{&m};
  m.collide(&n, [](object*, object*, void* d) {
    auto* s = static_cast<nest*>(d);
    ++s->outer;
    hhg::fcl_manager<S>* mm = s->m;
    mm->collide(s, [](object*, object*, void* dd) {
      ++static_cast<nest*>(dd)->inner;
      return false;
    });
    return false;
  });
  EXPECT_EQ(n.outer, 3);
  EXPECT_EQ(n.inner, 9);
  // and after all that the manager is intact
  collision_data x, y;
  fcl::NaiveCollisionManager<S> naive;
  naive.registerObjects({a.get(), b.get(), c.get()});
  m.collide(&x, collide_cb);
  naive.collide(&y, collide_cb);
  expect_same(x, y, "after the refused changes");
}

}  // namespace
