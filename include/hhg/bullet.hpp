// hhg/bullet.hpp: hhg::bullet_broadphase, a Bullet (3.24) broad phase backed
// by hhg::hash_grids. Link the CMake target hhg::bullet. See docs/adapters.md.
//
//   hhg::bullet_broadphase broadphase;            // instead of btDbvtBroadphase
//   btDiscreteDynamicsWorld world(&dispatcher, &broadphase, &solver, &config);
//
// What the adapter does itself, on top of hash_grids (small, kept in one
// place, src in adapters/bullet.cpp): it keeps the proxies (Bullet's
// btBroadphaseProxy objects), buffers setAabb and moves all changed boxes in
// one batch at the next calculateOverlappingPairs / rayTest / aabbTest, and
// turns hhg's pair list of a step into pair-cache events: the pairs of this
// step and of the previous step are sorted and merged; pairs only in this step
// are added to the btOverlappingPairCache (if the cache's
// needsBroadphaseCollision accepts them: group/mask, or the user's
// btOverlapFilterCallback), pairs only in the previous step are removed.
//
// Bad input (a NaN or inverted box, a null, foreign or destroyed proxy) throws
// hhg::error out of the Bullet call that made the request; the adapter is
// unchanged then. Bullet itself does not expect exceptions from its broad
// phase: see docs/adapters.md for what the world sees.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include <BulletCollision/BroadphaseCollision/btBroadphaseInterface.h>
#include <BulletCollision/BroadphaseCollision/btBroadphaseProxy.h>
#include <BulletCollision/BroadphaseCollision/btOverlappingPairCache.h>

#include "hhg/config.hpp"
#include "hhg/executor.hpp"
#include "hhg/hash_grids.hpp"

namespace hhg {

/// A btBroadphaseInterface with Bullet's semantics, backed by hash_grids<3,
/// btScalar>. Overlap is closed (touching boxes pair), as in btDbvtBroadphase.
///
/// Pairs: calculateOverlappingPairs adds to the pair cache every pair that
/// began overlapping since the previous call and removes every pair that
/// ended, so after it the cache holds exactly the overlapping pairs its
/// needsBroadphaseCollision accepts. createProxy adds the new proxy's pairs
/// at once (against the current boxes of the others), as btDbvtBroadphase
/// does; destroyProxy removes them at once.
///
/// Not thread safe: one thread at a time (Bullet calls it from one thread).
class bullet_broadphase : public btBroadphaseInterface {
 public:
  using box_type = box<3, btScalar>;

  /// Owns a btHashedOverlappingPairCache. `c` configures the hash grids.
  explicit bullet_broadphase(const config& c = {});
  /// Uses `cache` (not owned, not deleted; must outlive this object). A cache
  /// with deferred removal (btSortedOverlappingPairCache) is supported: ended
  /// pairs are then dropped from its array in calculateOverlappingPairs, as
  /// btDbvtBroadphase does. nullptr: as the default constructor.
  explicit bullet_broadphase(btOverlappingPairCache* cache, const config& c = {});
  ~bullet_broadphase() override;
  bullet_broadphase(const bullet_broadphase&) = delete;
  bullet_broadphase& operator=(const bullet_broadphase&) = delete;

  /// Throws hhg::error (nan_coordinate, inverted_box) for a bad box; nothing
  /// is created then. m_uniqueId is unique among live proxies (slots are
  /// reused). `shapeType` is kept but not used. The new proxy's pairs with
  /// the proxies whose boxes overlap its box (closed) are added to the pair
  /// cache before it returns, if needsBroadphaseCollision accepts them, as
  /// btDbvtBroadphase does (not in its deferred-collide mode).
  btBroadphaseProxy* createProxy(const btVector3& aabbMin, const btVector3& aabbMax, int shapeType, void* userPtr,
                                 int collisionFilterGroup, int collisionFilterMask, btDispatcher* dispatcher) override;
  /// Removes the proxy's pairs from the pair cache (through `dispatcher`) and
  /// the proxy. Throws hhg::error(invalid_handle) for a null, foreign or
  /// already destroyed proxy; nothing changes then.
  void destroyProxy(btBroadphaseProxy* proxy, btDispatcher* dispatcher) override;
  /// Records the new box (O(1), no hashing); the hash grids see it at the
  /// next calculateOverlappingPairs, rayTest or aabbTest. An unchanged box
  /// costs a compare. Throws hhg::error for a bad proxy or box.
  void setAabb(btBroadphaseProxy* proxy, const btVector3& aabbMin, const btVector3& aabbMax,
               btDispatcher* dispatcher) override;
  /// Exactly the box last given to createProxy or setAabb.
  void getAabb(btBroadphaseProxy* proxy, btVector3& aabbMin, btVector3& aabbMax) const override;
  /// Calls rayCallback.process(proxy) for every proxy whose box, widened to
  /// [min - aabbMax, max - aabbMin], the segment rayFrom..rayTo meets (closed;
  /// unordered; once each). The segment is taken from rayFrom and rayTo (the
  /// callback's m_rayDirectionInverse and m_lambda_max are not read). Throws
  /// hhg::error for non-finite ends or NaN/inverted extents.
  void rayTest(const btVector3& rayFrom, const btVector3& rayTo, btBroadphaseRayCallback& rayCallback,
               const btVector3& aabbMin = btVector3(0, 0, 0), const btVector3& aabbMax = btVector3(0, 0, 0)) override;
  /// Calls callback.process(proxy) for every proxy whose box overlaps the
  /// given box (closed), once each; process's result is ignored, as in Bullet.
  void aabbTest(const btVector3& aabbMin, const btVector3& aabbMax, btBroadphaseAabbCallback& callback) override;
  /// The detection step: see the class comment.
  void calculateOverlappingPairs(btDispatcher* dispatcher) override;
  btOverlappingPairCache* getOverlappingPairCache() override { return cache_; }
  const btOverlappingPairCache* getOverlappingPairCache() const override { return cache_; }
  /// The union of all proxies' boxes; (0,0,0)-(0,0,0) when there are none.
  /// O(proxies).
  void getBroadphaseAabb(btVector3& aabbMin, btVector3& aabbMax) const override;
  /// With no live proxy: releases the hash grids' memory. Otherwise nothing.
  void resetPool(btDispatcher* dispatcher) override;
  /// Prints proxies, pairs and the hash grids' levels to stdout.
  void printStats() override;

  // ---- beyond btBroadphaseInterface ----
  std::size_t proxy_count() const noexcept { return live_; }
  /// Overlapping pairs found by the last calculateOverlappingPairs (filtered
  /// or not).
  std::size_t last_pair_count() const noexcept { return prev_.size(); }
  /// The hash grids (their boxes may lag setAabb until the next step).
  const hash_grids<3, btScalar>& grids() const noexcept { return grids_; }
  /// Runs the batch move and detection on `e` (not owned); nullptr: serial.
  void set_executor(executor* e) noexcept { grids_.set_executor(e); }

 private:
  struct proxy;
  proxy* checked(const btBroadphaseProxy* p, const char* where) const;
  void flush();
  void add_new_pairs(proxy* p);
  void drop_deferred(btDispatcher* dispatcher);
  // A pair added by createProxy: its key, and the destroy counts of its two
  // slots then (it is stale if either slot was destroyed since).
  struct new_pair {
    std::uint64_t key;
    std::uint32_t lo_generation, hi_generation;
  };

  std::unique_ptr<btOverlappingPairCache> own_cache_;
  btOverlappingPairCache* cache_ = nullptr;
  hash_grids<3, btScalar> grids_;
  std::vector<std::unique_ptr<proxy>> storage_;  // every proxy object ever made
  std::deque<proxy*> free_;                      // destroyed ones, reused first in, first out
  std::vector<proxy*> by_slot_;                  // live proxy by handle index (nullptr: none)
  std::vector<std::uint32_t> dirty_;             // slots whose box changed since the last flush
  std::vector<std::uint8_t> recycled_;           // by slot: destroyed since the last step
  std::vector<std::uint32_t> recycled_list_;
  std::vector<std::uint32_t> generation_;  // by slot: destroys so far
  std::vector<new_pair> new_pairs_;        // added by createProxy since the last step
  std::vector<std::uint64_t> new_keys_;
  std::vector<std::uint32_t> partners_;
  std::vector<handle_pair> found_;
  std::vector<std::uint64_t> prev_, cur_, sort_scratch_;  // pair keys (lo slot << 32 | hi slot), sorted
  std::vector<std::uint32_t> sort_count_;
  std::vector<handle> move_handles_;
  std::vector<box_type> move_boxes_;
  std::size_t live_ = 0;
};

}  // namespace hhg
