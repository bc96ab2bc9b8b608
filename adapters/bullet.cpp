// hhg::bullet_broadphase (hhg/bullet.hpp). See docs/adapters.md.
#include "hhg/bullet.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <string>

#include "hhg/error.hpp"

namespace hhg {

// A Bullet proxy plus what the adapter keeps per object.
struct bullet_broadphase::proxy : btBroadphaseProxy {
  handle id;           // the object in the hash grids
  int shape_type = 0;  // as given to createProxy (not used)
  bool live = false;
  bool dirty = false;  // box changed since the last flush (slot is in dirty_)
};

namespace {

// Destroyed proxy objects wait this long (in destroys) before reuse, so a
// proxy destroyed twice is caught unless this many others died in between.
constexpr std::size_t reuse_delay = 1024;

using bbox = box<3, btScalar>;

bbox to_box(const btVector3& lo, const btVector3& hi) {
  bbox b;
  for (int i = 0; i < 3; ++i) {
    b.min[i] = lo[i];
    b.max[i] = hi[i];
  }
  return b;
}

void check(const bbox& b, const char* where) {
  int axis = -1;
  switch (check_box(b, &axis)) {
    case box_problem::none: return;
    case box_problem::nan_coordinate:
      throw error(errc::nan_coordinate,
                  std::string("hhg::bullet_broadphase::") + where + ": NaN coordinate on axis " + std::to_string(axis));
    case box_problem::inverted:
      throw error(errc::inverted_box,
                  std::string("hhg::bullet_broadphase::") + where + ": min > max on axis " + std::to_string(axis));
  }
}

bool same_box(const btVector3& a0, const btVector3& a1, const btVector3& b0, const btVector3& b1) {
  return a0.x() == b0.x() && a0.y() == b0.y() && a0.z() == b0.z() && a1.x() == b1.x() && a1.y() == b1.y() &&
         a1.z() == b1.z();
}

// Makes room for `more` elements without a reallocation later, growing the
// capacity geometrically (reserve(size + 1) on every call would copy the
// vector each time: quadratic over many calls).
template <class V>
void reserve_more(V& v, std::size_t more) {
  const std::size_t need = v.size() + more;
  if (need > v.capacity()) v.reserve(std::max(need, 2 * v.capacity()));
}

// Sorts 64-bit keys: LSD radix sort on 16-bit digits, skipping digits that
// are equal in every key. O(n + 65536) per pass: std::sort below 4096 keys.
void sort_keys(std::vector<std::uint64_t>& keys, std::vector<std::uint64_t>& scratch,
               std::vector<std::uint32_t>& count) {
  const std::size_t n = keys.size();
  if (n < 4096) {
    std::sort(keys.begin(), keys.end());
    return;
  }
  std::uint64_t all_or = 0, all_and = ~std::uint64_t{0};
  for (std::uint64_t k : keys) {
    all_or |= k;
    all_and &= k;
  }
  const std::uint64_t varying = all_or ^ all_and;
  scratch.resize(n);
  count.resize(std::size_t{1} << 16);
  for (int shift = 0; shift < 64; shift += 16) {
    if (((varying >> shift) & 0xFFFFu) == 0) continue;
    std::fill(count.begin(), count.end(), 0u);
    for (std::uint64_t k : keys) ++count[(k >> shift) & 0xFFFFu];
    std::uint32_t sum = 0;
    for (auto& c : count) {
      const std::uint32_t x = c;
      c = sum;
      sum += x;
    }
    for (std::uint64_t k : keys) scratch[count[(k >> shift) & 0xFFFFu]++] = k;
    keys.swap(scratch);
  }
}

}  // namespace

bullet_broadphase::bullet_broadphase(const config& c) : bullet_broadphase(nullptr, c) {}

bullet_broadphase::bullet_broadphase(btOverlappingPairCache* cache, const config& c) : grids_(c) {
  if (cache == nullptr) {
    own_cache_ = std::make_unique<btHashedOverlappingPairCache>();
    cache = own_cache_.get();
  }
  cache_ = cache;
}

bullet_broadphase::~bullet_broadphase() = default;

bullet_broadphase::proxy* bullet_broadphase::checked(const btBroadphaseProxy* p, const char* where) const {
  if (p != nullptr) {
    const long long slot = static_cast<long long>(p->m_uniqueId) - 1;
    if (slot >= 0 && static_cast<std::size_t>(slot) < by_slot_.size() && by_slot_[slot] == p && by_slot_[slot]->live)
      return by_slot_[slot];
  }
  throw error(errc::invalid_handle, std::string("hhg::bullet_broadphase::") + where +
                                        (p == nullptr ? ": null proxy"
                                                      : ": proxy not live in this broad phase "
                                                        "(destroyed, or made by another one)"));
}

btBroadphaseProxy* bullet_broadphase::createProxy(const btVector3& aabbMin, const btVector3& aabbMax, int shapeType,
                                                  void* userPtr, int collisionFilterGroup, int collisionFilterMask,
                                                  btDispatcher* /*dispatcher*/) {
  const bbox b = to_box(aabbMin, aabbMax);
  check(b, "createProxy");
  // Everything that can throw comes before the insert.
  proxy* p = nullptr;
  if (free_.size() > reuse_delay) {
    p = free_.front();
  } else {
    reserve_more(storage_, 1);
    storage_.push_back(std::make_unique<proxy>());
  }
  if (grids_.size() + 1 > by_slot_.size()) reserve_more(by_slot_, grids_.size() + 1 - by_slot_.size());
  const handle h = grids_.insert(b);
  if (p != nullptr) {
    free_.pop_front();
  } else {
    p = storage_.back().get();
  }
  if (by_slot_.size() <= h.index) {
    by_slot_.resize(h.index + 1, nullptr);
    recycled_.resize(h.index + 1, 0);
    generation_.resize(h.index + 1, 0);
  }
  p->m_clientObject = userPtr;
  p->m_collisionFilterGroup = collisionFilterGroup;
  p->m_collisionFilterMask = collisionFilterMask;
  p->m_aabbMin = aabbMin;
  p->m_aabbMax = aabbMax;
  p->m_uniqueId = static_cast<int>(h.index + 1);
  p->id = h;
  p->shape_type = shapeType;
  p->live = true;
  p->dirty = false;
  by_slot_[h.index] = p;
  ++live_;
  add_new_pairs(p);
  return p;
}

// The new proxy's pairs, at once (as btDbvtBroadphase's createProxy): every
// proxy whose current box overlaps the new one's. Their keys are kept until
// the next step, which takes them as pairs of the previous step (so they are
// not added twice, and are removed if they ended); a key whose slot is
// destroyed before that step is stale (generation_) and dropped.
void bullet_broadphase::add_new_pairs(proxy* p) {
  flush();  // the others' boxes as last given
  partners_.clear();
  const std::uint32_t self = p->id.index;
  grids_.for_each_overlapping(to_box(p->m_aabbMin, p->m_aabbMax), [&](handle h) {
    if (h.index != self) partners_.push_back(h.index);
    return true;
  });
  reserve_more(new_pairs_, partners_.size());
  for (const std::uint32_t other : partners_) {
    const std::uint64_t a = std::min(self, other), b = std::max(self, other);
    new_pairs_.push_back({a << 32 | b, generation_[a], generation_[b]});
    proxy* q = by_slot_[other];
    if (cache_->needsBroadphaseCollision(p, q)) cache_->addOverlappingPair(p, q);
  }
}

void bullet_broadphase::destroyProxy(btBroadphaseProxy* bp, btDispatcher* dispatcher) {
  proxy* p = checked(bp, "destroyProxy");
  const std::uint32_t slot = p->id.index;
  reserve_more(recycled_list_, 1);
  free_.push_back(p);  // may throw: before any change
  cache_->removeOverlappingPairsContainingProxy(p, dispatcher);
  grids_.remove(p->id);
  by_slot_[slot] = nullptr;
  ++generation_[slot];
  if (!recycled_[slot]) {
    recycled_[slot] = 1;
    recycled_list_.push_back(slot);
  }
  p->live = false;
  p->dirty = false;
  --live_;
}

void bullet_broadphase::setAabb(btBroadphaseProxy* bp, const btVector3& aabbMin, const btVector3& aabbMax,
                                btDispatcher* /*dispatcher*/) {
  proxy* p = checked(bp, "setAabb");
  if (same_box(p->m_aabbMin, p->m_aabbMax, aabbMin, aabbMax)) return;
  check(to_box(aabbMin, aabbMax), "setAabb");
  if (!p->dirty) {
    dirty_.push_back(p->id.index);  // may throw: before any change
    p->dirty = true;
  }
  p->m_aabbMin = aabbMin;
  p->m_aabbMax = aabbMax;
}

void bullet_broadphase::getAabb(btBroadphaseProxy* bp, btVector3& aabbMin, btVector3& aabbMax) const {
  const proxy* p = checked(bp, "getAabb");
  aabbMin = p->m_aabbMin;
  aabbMax = p->m_aabbMax;
}

// Hands every box changed since the last flush to the hash grids in one batch.
void bullet_broadphase::flush() {
  if (dirty_.empty()) return;
  move_handles_.clear();
  move_boxes_.clear();
  for (std::uint32_t slot : dirty_) {
    proxy* p = by_slot_[slot];
    if (p == nullptr || !p->dirty) continue;  // destroyed since
    move_handles_.push_back(p->id);
    move_boxes_.push_back(to_box(p->m_aabbMin, p->m_aabbMax));
  }
  grids_.move(move_handles_, move_boxes_);
  for (std::uint32_t slot : dirty_)
    if (by_slot_[slot] != nullptr) by_slot_[slot]->dirty = false;
  dirty_.clear();
}

// ---- pair events: the part the library may take over later --------------------
// The pairs of this step and of the previous one, as sorted keys (lower slot in
// the high half), are merged: a key only here began, a key only there ended. A
// slot destroyed since the previous step ("recycled") had its pairs removed by
// destroyProxy, so its old keys are dropped silently and its new keys (a new
// proxy in the same slot) begin. The pairs createProxy added since the previous
// step count as pairs of the previous step (they are in the cache already).
void bullet_broadphase::calculateOverlappingPairs(btDispatcher* dispatcher) {
  flush();
  grids_.find_pairs(found_);
  cur_.resize(found_.size());
  for (std::size_t i = 0; i < found_.size(); ++i) {
    std::uint64_t a = found_[i].a.index, b = found_[i].b.index;
    if (b < a) std::swap(a, b);
    cur_[i] = a << 32 | b;
  }
  sort_keys(cur_, sort_scratch_, sort_count_);

  const auto lo = [](std::uint64_t k) { return static_cast<std::uint32_t>(k >> 32); };
  const auto hi = [](std::uint64_t k) { return static_cast<std::uint32_t>(k & 0xFFFFFFFFu); };
  const auto recycled = [&](std::uint64_t k) { return recycled_[lo(k)] != 0 || recycled_[hi(k)] != 0; };
  if (!recycled_list_.empty()) std::erase_if(prev_, recycled);
  if (!new_pairs_.empty()) {
    new_keys_.clear();
    for (const new_pair& np : new_pairs_)
      if (generation_[lo(np.key)] == np.lo_generation && generation_[hi(np.key)] == np.hi_generation)
        new_keys_.push_back(np.key);
    new_pairs_.clear();
    sort_keys(new_keys_, sort_scratch_, sort_count_);
    sort_scratch_.resize(prev_.size() + new_keys_.size());
    const auto end =
        std::set_union(prev_.begin(), prev_.end(), new_keys_.begin(), new_keys_.end(), sort_scratch_.begin());
    sort_scratch_.resize(static_cast<std::size_t>(end - sort_scratch_.begin()));
    prev_.swap(sort_scratch_);
  }
  const auto begin_pair = [&](std::uint64_t k) {
    proxy* a = by_slot_[lo(k)];
    proxy* b = by_slot_[hi(k)];
    if (cache_->needsBroadphaseCollision(a, b)) cache_->addOverlappingPair(a, b);
  };
  const auto end_pair = [&](std::uint64_t k) {
    cache_->removeOverlappingPair(by_slot_[lo(k)], by_slot_[hi(k)], dispatcher);
  };
  std::size_t i = 0, j = 0;
  while (i < prev_.size() && j < cur_.size()) {
    if (prev_[i] < cur_[j]) {
      end_pair(prev_[i++]);
    } else if (cur_[j] < prev_[i]) {
      begin_pair(cur_[j++]);
    } else {
      ++i;
      ++j;
    }
  }
  for (; i < prev_.size(); ++i) end_pair(prev_[i]);
  for (; j < cur_.size(); ++j) begin_pair(cur_[j]);

  for (std::uint32_t slot : recycled_list_) recycled_[slot] = 0;
  recycled_list_.clear();
  prev_.swap(cur_);
  if (cache_->hasDeferredRemoval()) drop_deferred(dispatcher);
}

// A cache with deferred removal ignores removeOverlappingPair: drop every pair
// whose boxes no longer overlap from its array, as btDbvtBroadphase does.
void bullet_broadphase::drop_deferred(btDispatcher* dispatcher) {
  btBroadphasePairArray& pairs = cache_->getOverlappingPairArray();
  for (int k = 0; k < pairs.size();) {
    btBroadphasePair& pr = pairs[k];
    const btBroadphaseProxy* a = pr.m_pProxy0;
    const btBroadphaseProxy* b = pr.m_pProxy1;
    const bool keep = a != nullptr && b != nullptr &&
                      overlaps(to_box(a->m_aabbMin, a->m_aabbMax), to_box(b->m_aabbMin, b->m_aabbMax));
    if (keep) {
      ++k;
      continue;
    }
    cache_->cleanOverlappingPair(pr, dispatcher);
    pairs.swap(k, pairs.size() - 1);
    pairs.pop_back();
  }
}

void bullet_broadphase::rayTest(const btVector3& rayFrom, const btVector3& rayTo, btBroadphaseRayCallback& rayCallback,
                                const btVector3& aabbMin, const btVector3& aabbMax) {
  for (int i = 0; i < 3; ++i) {
    if (!std::isfinite(rayFrom[i]) || !std::isfinite(rayTo[i]))
      throw error(errc::nan_coordinate,
                  "hhg::bullet_broadphase::rayTest: non-finite ray end on axis " + std::to_string(i));
  }
  const bbox extent = to_box(aabbMin, aabbMax);
  check(extent, "rayTest (aabbMin/aabbMax extents)");
  flush();
  ray<3, btScalar> r;
  for (int i = 0; i < 3; ++i) {
    r.origin[i] = rayFrom[i];
    r.direction[i] = rayTo[i] - rayFrom[i];
  }
  r.max_t = 1.0;
  const bool widened = !(extent.min == std::array<btScalar, 3>{} && extent.max == std::array<btScalar, 3>{});
  if (!widened) {
    grids_.for_each_ray_hit(r, [&](handle h, double) {
      rayCallback.process(by_slot_[h.index]);
      return true;
    });
    return;
  }
  // Widened: candidates from the box swept by the extents, then the exact
  // slab test against each widened proxy box.
  bbox q;
  for (int i = 0; i < 3; ++i) {
    q.min[i] = std::min(rayFrom[i], rayTo[i]) + extent.min[i];
    q.max[i] = std::max(rayFrom[i], rayTo[i]) + extent.max[i];
  }
  grids_.for_each_overlapping(q, [&](handle h) {
    const proxy* p = by_slot_[h.index];
    bbox w;
    for (int i = 0; i < 3; ++i) {
      w.min[i] = p->m_aabbMin[i] - extent.max[i];
      w.max[i] = p->m_aabbMax[i] - extent.min[i];
    }
    if (ray_box_entry(r, w) >= 0) rayCallback.process(by_slot_[h.index]);
    return true;
  });
}

void bullet_broadphase::aabbTest(const btVector3& aabbMin, const btVector3& aabbMax,
                                 btBroadphaseAabbCallback& callback) {
  const bbox q = to_box(aabbMin, aabbMax);
  check(q, "aabbTest");
  flush();
  grids_.for_each_overlapping(q, [&](handle h) {
    callback.process(by_slot_[h.index]);
    return true;
  });
}

void bullet_broadphase::getBroadphaseAabb(btVector3& aabbMin, btVector3& aabbMax) const {
  bool any = false;
  btVector3 lo(0, 0, 0), hi(0, 0, 0);
  for (const proxy* p : by_slot_) {
    if (p == nullptr) continue;
    if (!any) {
      lo = p->m_aabbMin;
      hi = p->m_aabbMax;
      any = true;
    } else {
      lo.setMin(p->m_aabbMin);
      hi.setMax(p->m_aabbMax);
    }
  }
  aabbMin = lo;
  aabbMax = hi;
}

void bullet_broadphase::resetPool(btDispatcher* /*dispatcher*/) {
  if (live_ != 0) return;
  grids_.clear();
  by_slot_.clear();
  by_slot_.shrink_to_fit();
  recycled_.clear();
  recycled_list_.clear();
  generation_.clear();
  new_pairs_.clear();
  new_pairs_.shrink_to_fit();
  dirty_.clear();
  prev_.clear();
  prev_.shrink_to_fit();
  cur_.clear();
  cur_.shrink_to_fit();
  found_.clear();
  found_.shrink_to_fit();
  sort_scratch_.clear();
  sort_scratch_.shrink_to_fit();
  sort_count_.clear();
  sort_count_.shrink_to_fit();
}

void bullet_broadphase::printStats() {
  const statistics s = grids_.stats();
  std::printf("hhg::bullet_broadphase: %zu proxies, %zu overlapping pairs at the last step, %d pairs in the cache\n",
              live_, prev_.size(), cache_->getNumOverlappingPairs());
  std::printf("  hash grids: %zu objects (%zu unbounded), %zu levels, %zu bytes, %s\n", s.objects, s.unbounded_objects,
              s.grids.size(), s.bytes, s.grids_active ? "grids active" : "all-pairs list");
  for (const grid_statistics& g : s.grids)
    std::printf("  level: cell %g, %u x %u x %u cells, %zu objects in %zu cells\n", g.cell_size, g.cells_per_axis[0],
                g.cells_per_axis[1], g.cells_per_axis[2], g.objects, g.occupied_cells);
}

}  // namespace hhg
