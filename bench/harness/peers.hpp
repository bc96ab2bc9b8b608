// bench/harness/peers.hpp: the broad phases of other libraries, wrapped for
// the benchmark harness (same boxes, same motion, pairs compared across
// methods). Only `hhg_bench` (bench/CMakeLists.txt) compiles them in; the
// installed `hhg` tool links no peer library and offers no peer.
//
// Each wrapper has insert(box) -> handle, move(handle, box), update(),
// find_pairs(out), bytes() (0: not known; peak RSS is measured instead).
// The harness calls update() then find_pairs() every step: a peer's own
// detection runs once, in update() (the first find_pairs, at setup, builds the
// structure and runs it once); find_pairs only reads the result. (Running it
// again in find_pairs cost btDbvtBroadphase 1.8x: its second collide() of a
// step moved every proxy to its fixed tree, to be reinserted next step.)
// Every peer's candidate pairs are filtered with the exact closed-overlap test
// on the original double boxes, so all methods report the same pairs:
// - Bullet (float build): boxes are rounded outward to float (a superset);
//   btDbvtBroadphase fattens its leaves by a fixed margin (0.05), and
//   bt32BitAxisSweep3 quantizes to 32-bit integers inside a world box: both
//   give candidates, read from the overlapping-pair cache. A step is what a
//   Bullet world does: setAabb for every object (update), one
//   calculateOverlappingPairs (update), then the cache is read (find_pairs).
//   `bullet-dbvt` is btDbvtBroadphase as constructed (the world's default:
//   setAabb collides a proxy that left its enlarged leaf against both trees at
//   once). `bullet-dbvt-deferred` sets m_deferedcollide ("defer dynamic/static
//   collision to collide call", btDbvtBroadphase.h): setAabb only refits the
//   tree, and calculateOverlappingPairs collides the dynamic tree with itself
//   and with the fixed tree. Neither mode is lazy in adding: after the one
//   calculateOverlappingPairs of a step the cache holds every pair whose leaf
//   boxes (enlarged, so a superset of the exact boxes) overlap; both remove
//   ended pairs lazily (a share of the cache per call), so the cache also
//   holds stale pairs. find_pairs reads the whole cache and keeps the exactly
//   overlapping pairs, so the pair counts the harness compares across methods
//   each step check that no overlapping pair is missing. `bullet-hhg` is
//   hhg::bullet_broadphase (hhg/bullet.hpp) behind the same interface, when
//   the adapter is built.
// - FCL: the AABB of each object is set directly (no geometry arithmetic),
//   managers updated with update(objects) (a steady cost per step; the
//   argument-less update() refits everything), candidates from collide() with
//   a callback that only records (broad phase only, no narrow phase).
//   `fcl-dtree-refit` is the dynamic tree updated with update() instead, to
//   show the difference (its tree degrades as objects move). FCL's README
//   names DynamicAABBTreeCollisionManager as the one that "would provide the
//   best performance" in general. `fcl-hhg` is hhg::fcl_manager<double>
//   (hhg/fcl.hpp) behind the same interface, updated with update(objects).
// - CGAL: box_self_intersection_d on closed boxes, rebuilt every step.
// Peers are compiled in when bench/peers.cmake finds them (HHG_HAVE_BULLET,
// HHG_HAVE_FCL, HHG_HAVE_CGAL); a peer that is not compiled in is not offered.
// FCL's IntervalTreeCollisionManager is not offered: FCL 0.7's crashes
// (segfault) after update(objects) on these scenes.
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hhg/box.hpp"
#include "hhg/handle.hpp"

#ifdef HHG_HAVE_BULLET
#include <btBulletCollisionCommon.h>
#endif
#ifdef HHG_HAVE_BULLET_ADAPTER
#include "hhg/bullet.hpp"
#endif
#ifdef HHG_HAVE_FCL
#include <fcl/broadphase/broadphase_SaP.h>
#include <fcl/broadphase/broadphase_dynamic_AABB_tree.h>
#include <fcl/broadphase/broadphase_dynamic_AABB_tree_array.h>
#include <fcl/broadphase/broadphase_spatialhash.h>
#include <fcl/geometry/shape/box.h>
#include <fcl/narrowphase/collision_object.h>
#include "hhg/fcl.hpp"
#endif
#ifdef HHG_HAVE_CGAL
#include <CGAL/box_intersection_d.h>
#endif

namespace hhg::cli::peers {

using box3 = box<3, double>;

/// Names of the peers compiled into this build (the only ones offered).
inline std::vector<std::string> available() {
  std::vector<std::string> v;
#ifdef HHG_HAVE_BULLET
  v.insert(v.end(), {"bullet-dbvt", "bullet-dbvt-deferred", "bullet-sap"});
#endif
#ifdef HHG_HAVE_BULLET_ADAPTER
  v.emplace_back("bullet-hhg");
#endif
#ifdef HHG_HAVE_FCL
  v.insert(v.end(), {"fcl-dtree", "fcl-dtree-refit", "fcl-dtree-array", "fcl-sap", "fcl-shash", "fcl-hhg"});
#endif
#ifdef HHG_HAVE_CGAL
  v.push_back("cgal");
#endif
  return v;
}

/// Boxes kept by every wrapper for the exact filter.
class base {
 public:
  using box_type = box3;
  static constexpr int dimension = 3;
  using scalar = double;

 protected:
  std::vector<box3> boxes_;
  void emit(std::uint32_t a, std::uint32_t b, std::vector<handle_pair>& out) const {
    if (a != b && overlaps(boxes_[a], boxes_[b])) out.push_back({{std::min(a, b), 1}, {std::max(a, b), 1}});
  }
};

#ifdef HHG_HAVE_BULLET
class bullet : public base {
 public:
  /// kind: bullet-dbvt, bullet-dbvt-deferred, bullet-sap, bullet-hhg
  explicit bullet(std::string kind) : kind_(std::move(kind)) {}
  // The pairs first, all in one pass, then the proxies: each destroyProxy
  // removes its proxy's pairs by a scan of the whole pair cache
  // (removeOverlappingPairsContainingProxy), so destroying 10^6 proxies with
  // their pairs took longer than the timeout (the runs at 10^6 were reported
  // as timed out after their steps were measured).
  ~bullet() {
    if (!bp_) return;
    struct every_pair : btOverlapCallback {
      bool processOverlap(btBroadphasePair&) override { return true; }  // true: removed
    } all;
    bp_->getOverlappingPairCache()->processAllOverlappingPairs(&all, nullptr);
    for (auto* p : proxies_) bp_->destroyProxy(p, nullptr);
  }
  handle insert(const box3& b) {
    boxes_.push_back(b);
    if (bp_) proxies_.push_back(create(boxes_.size() - 1));
    return {static_cast<std::uint32_t>(boxes_.size() - 1), 1};
  }
  void move(handle h, const box3& b) {
    boxes_[h.index] = b;
    if (bp_) bp_->setAabb(proxies_[h.index], lo(b), hi(b), nullptr);
  }
  void update() {
    if (!bp_)
      start();
    else
      bp_->calculateOverlappingPairs(nullptr);
  }
  void find_pairs(std::vector<handle_pair>& out) {
    out.clear();
    if (!bp_) start();  // setup
    btOverlappingPairCache* cache = bp_->getOverlappingPairCache();
    const int n = cache->getNumOverlappingPairs();
    const btBroadphasePair* p = cache->getOverlappingPairArrayPtr();
    for (int i = 0; i < n; ++i)
      emit(static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(p[i].m_pProxy0->m_clientObject)),
           static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(p[i].m_pProxy1->m_clientObject)), out);
  }
  std::size_t bytes() const { return 0; }

 private:
  static btVector3 lo(const box3& b) {
    return {std::nextafter(static_cast<float>(b.min[0]), -INFINITY),
            std::nextafter(static_cast<float>(b.min[1]), -INFINITY),
            std::nextafter(static_cast<float>(b.min[2]), -INFINITY)};
  }
  static btVector3 hi(const box3& b) {
    return {std::nextafter(static_cast<float>(b.max[0]), INFINITY),
            std::nextafter(static_cast<float>(b.max[1]), INFINITY),
            std::nextafter(static_cast<float>(b.max[2]), INFINITY)};
  }
  btBroadphaseProxy* create(std::size_t i) {
    return bp_->createProxy(lo(boxes_[i]), hi(boxes_[i]), BOX_SHAPE_PROXYTYPE, reinterpret_cast<void*>(i), 1, -1,
                            nullptr);
  }
  // The axis sweep needs the world box: it is taken from the boxes present at
  // the first update, with room around (boxes outside it are clamped, which
  // only adds candidates). Creates the proxies and runs the first
  // calculateOverlappingPairs.
  void start() {
    if (kind_ == "bullet-sap") {
      btVector3 a(INFINITY, INFINITY, INFINITY), b(-INFINITY, -INFINITY, -INFINITY);
      for (const auto& x : boxes_) {
        a.setMin(lo(x));
        b.setMax(hi(x));
      }
      const btVector3 pad = (b - a) * 0.1f + btVector3(1, 1, 1);
      bp_ = std::make_unique<bt32BitAxisSweep3>(a - pad, b + pad, static_cast<unsigned>(boxes_.size() + 16));
#ifdef HHG_HAVE_BULLET_ADAPTER
    } else if (kind_ == "bullet-hhg") {
      bp_ = std::make_unique<hhg::bullet_broadphase>();
#endif
    } else {
      auto dbvt = std::make_unique<btDbvtBroadphase>();
      dbvt->m_deferedcollide = kind_ == "bullet-dbvt-deferred";
      bp_ = std::move(dbvt);
    }
    for (std::size_t i = 0; i < boxes_.size(); ++i) proxies_.push_back(create(i));
    bp_->calculateOverlappingPairs(nullptr);
  }
  std::string kind_;
  std::unique_ptr<btBroadphaseInterface> bp_;
  std::vector<btBroadphaseProxy*> proxies_;
};
#endif

#ifdef HHG_HAVE_FCL
class fcl_manager : public base {
 public:
  // An object whose AABB is set directly (managers read getAABB()).
  class object : public fcl::CollisionObjectd {
   public:
    object(const std::shared_ptr<fcl::CollisionGeometryd>& g, std::uint32_t id) : fcl::CollisionObjectd(g) {
      setUserData(reinterpret_cast<void*>(static_cast<std::uintptr_t>(id)));
    }
    void set(const box3& b) {
      aabb.min_ = fcl::Vector3d(b.min[0], b.min[1], b.min[2]);
      aabb.max_ = fcl::Vector3d(b.max[0], b.max[1], b.max[2]);
    }
  };
  explicit fcl_manager(std::string kind) : kind_(std::move(kind)), shape_(std::make_shared<fcl::Boxd>(1, 1, 1)) {}
  handle insert(const box3& b) {
    boxes_.push_back(b);
    objects_.push_back(std::make_unique<object>(shape_, static_cast<std::uint32_t>(boxes_.size() - 1)));
    objects_.back()->set(b);
    raw_.push_back(objects_.back().get());
    if (m_) m_->registerObject(raw_.back());
    return {static_cast<std::uint32_t>(boxes_.size() - 1), 1};
  }
  void move(handle h, const box3& b) {
    boxes_[h.index] = b;
    objects_[h.index]->set(b);
  }
  void update() {
    if (!m_) {
      start();
    } else if (kind_ == "fcl-dtree-refit") {
      m_->update();
    } else {
      m_->update(raw_);
    }
  }
  void find_pairs(std::vector<handle_pair>& out) {
    out.clear();
    if (!m_) start();  // setup
    struct sink {
      const fcl_manager* self;
      std::vector<handle_pair>* out;
    } s{this, &out};
    m_->collide(&s, [](fcl::CollisionObjectd* a, fcl::CollisionObjectd* b, void* d) {
      auto* k = static_cast<sink*>(d);
      k->self->emit(static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(a->getUserData())),
                    static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(b->getUserData())), *k->out);
      return false;  // never stop
    });
  }
  std::size_t bytes() const { return 0; }

 private:
  void start() {
    if (kind_ == "fcl-dtree" || kind_ == "fcl-dtree-refit") {
      m_ = std::make_unique<fcl::DynamicAABBTreeCollisionManagerd>();
    } else if (kind_ == "fcl-dtree-array") {
      m_ = std::make_unique<fcl::DynamicAABBTreeCollisionManager_Arrayd>();
    } else if (kind_ == "fcl-sap") {
      m_ = std::make_unique<fcl::SaPCollisionManagerd>();
    } else if (kind_ == "fcl-hhg") {
      m_ = std::make_unique<hhg::fcl_manager<double>>();
    } else {  // spatial hashing: cell = largest edge, scene = bounds of the boxes
      fcl::Vector3d a = fcl::Vector3d::Constant(INFINITY), b = fcl::Vector3d::Constant(-INFINITY);
      double cell = 0;
      for (const auto& x : boxes_)
        for (int k = 0; k < 3; ++k) {
          a[k] = std::min(a[k], x.min[k]);
          b[k] = std::max(b[k], x.max[k]);
          cell = std::max(cell, x.max[k] - x.min[k]);
        }
      m_ = std::make_unique<fcl::SpatialHashingCollisionManager<double>>(cell > 0 ? cell : 1.0, a, b,
                                                                         static_cast<unsigned>(boxes_.size() + 1));
    }
    m_->registerObjects(raw_);
    m_->setup();
  }
  std::string kind_;
  std::shared_ptr<fcl::CollisionGeometryd> shape_;
  std::vector<std::unique_ptr<object>> objects_;
  std::vector<fcl::CollisionObjectd*> raw_;
  std::unique_ptr<fcl::BroadPhaseCollisionManagerd> m_;
};
#endif

#ifdef HHG_HAVE_CGAL
class cgal : public base {
 public:
  handle insert(const box3& b) {
    boxes_.push_back(b);
    return {static_cast<std::uint32_t>(boxes_.size() - 1), 1};
  }
  void move(handle h, const box3& b) { boxes_[h.index] = b; }
  void update() {}
  void find_pairs(std::vector<handle_pair>& out) {
    out.clear();
    using cbox = CGAL::Box_intersection_d::Box_with_info_d<double, 3, std::uint32_t>;
    work_.clear();
    for (std::uint32_t i = 0; i < boxes_.size(); ++i) {
      const auto& b = boxes_[i];
      work_.emplace_back(CGAL::Bbox_3(b.min[0], b.min[1], b.min[2], b.max[0], b.max[1], b.max[2]), i);
    }
    CGAL::box_self_intersection_d(work_.begin(), work_.end(),
                                  [&](const cbox& a, const cbox& b) { emit(a.info(), b.info(), out); });
  }
  std::size_t bytes() const { return 0; }

 private:
  std::vector<CGAL::Box_intersection_d::Box_with_info_d<double, 3, std::uint32_t>> work_;
};
#endif

}  // namespace hhg::cli::peers
