// A user's FCL manager switched to hhg (the installed hhg::fcl): self
// collision and an object query of random boxes, the number of contacts
// compared with FCL's own NaiveCollisionManager.
#include <hhg/fcl.hpp>

#include <fcl/broadphase/broadphase_bruteforce.h>
#include <fcl/broadphase/default_broadphase_callbacks.h>
#include <fcl/geometry/shape/box.h>

#include <cstdio>
#include <memory>
#include <random>
#include <vector>

int main() {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> at(0, 10), size(0.2, 2);
  std::vector<std::unique_ptr<fcl::CollisionObjectd>> objects;
  std::vector<fcl::CollisionObjectd*> raw;
  for (int i = 0; i < 200; ++i) {
    auto shape = std::make_shared<fcl::Boxd>(size(rng), size(rng), size(rng));
    fcl::Transform3d tf = fcl::Transform3d::Identity();
    tf.translation() = fcl::Vector3d(at(rng), at(rng), at(rng));
    objects.push_back(std::make_unique<fcl::CollisionObjectd>(shape, tf));
    objects.back()->computeAABB();
    raw.push_back(objects.back().get());
  }
  hhg::fcl_manager<double> manager;  // was: fcl::DynamicAABBTreeCollisionManager<double> manager;
  fcl::NaiveCollisionManager<double> naive;
  manager.registerObjects(raw);
  naive.registerObjects(raw);
  manager.setup();
  naive.setup();

  auto self_contacts = [](fcl::BroadPhaseCollisionManager<double>& m) {
    fcl::DefaultCollisionData<double> data;
    data.request.num_max_contacts = 100000;
    m.collide(&data, fcl::DefaultCollisionFunction<double>);
    return data.result.numContacts();
  };
  auto object_contacts = [](fcl::BroadPhaseCollisionManager<double>& m, fcl::CollisionObjectd* o) {
    fcl::DefaultCollisionData<double> data;
    data.request.num_max_contacts = 100000;
    m.collide(o, &data, fcl::DefaultCollisionFunction<double>);
    return data.result.numContacts();
  };
  const std::size_t ours = self_contacts(manager), theirs = self_contacts(naive);
  const std::size_t ours_q = object_contacts(manager, raw[0]), theirs_q = object_contacts(naive, raw[0]);
  std::printf("consumer_fcl: self collision %zu contacts (naive %zu), object query %zu (naive %zu)\n", ours, theirs,
              ours_q, theirs_q);
  return ours == theirs && ours > 0 && ours_q == theirs_q ? 0 : 1;
}
