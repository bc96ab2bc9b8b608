// hhg/fcl.hpp: hhg::fcl_manager<S>, an FCL (0.7) broad-phase collision manager
// backed by hhg::hash_grids. Header only; link the CMake target hhg::fcl.
// See docs/adapters.md.
//
//   hhg::fcl_manager<double> manager;      // instead of DynamicAABBTreeCollisionManager
//   manager.registerObjects(objects);
//   manager.setup();
//   manager.collide(&data, fcl::DefaultCollisionFunction<double>);
//
// FCL's contract: a collision callback returning true stops the search and no
// call follows; a distance callback's last argument is the smallest distance
// so far, in and out, and the manager skips every pair whose boxes are not
// closer than the value written back; collide/distance against another
// manager expect it to be an hhg::fcl_manager<S> as well.
//
// Objects' boxes: the manager reads obj->getAABB() in registerObject(s) and
// update (as FCL's managers do): call computeAABB() on a moved object, then
// update. Bad input (a null object, a NaN or inverted box, an object
// registered twice, an unknown one) throws hhg::error and changes nothing.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fcl/broadphase/broadphase_collision_manager.h>
#include <fcl/narrowphase/collision_object.h>

#include "hhg/config.hpp"
#include "hhg/error.hpp"
#include "hhg/hash_grids.hpp"

namespace hhg {

/// An fcl::BroadPhaseCollisionManager<S> (S = float or double) storing the
/// objects' boxes in hash_grids<3, S>. Overlap is closed, as fcl::AABB::overlap.
///
/// Callback arguments: collide/distance against one object call
/// callback(query, stored, ...) for stored objects only (the query itself too
/// if it is registered, as NaiveCollisionManager does); self queries call
/// callback(a, b, ...) once per unordered pair; against another manager
/// callback(object of this, object of other, ...).
///
/// Cost: collide against one object is an hhg box query; self collide is one
/// hhg detection; distance grows a box around the query (doubling) and hands
/// candidates over in increasing box distance until the box is wider than the
/// smallest distance found.
///
/// Not thread safe (the const queries reuse the grids' detection scratch).
template <typename S>
class fcl_manager : public fcl::BroadPhaseCollisionManager<S> {
  static_assert(std::is_same_v<S, float> || std::is_same_v<S, double>, "fcl_manager<S>: S is float or double");

 public:
  using object = fcl::CollisionObject<S>;
  using box_type = box<3, S>;
  using fcl::BroadPhaseCollisionManager<S>::collide;
  using fcl::BroadPhaseCollisionManager<S>::distance;
  using fcl::BroadPhaseCollisionManager<S>::update;

  explicit fcl_manager(const config& c = {}) : grids_(c) {}

  /// Throws for a null object, a bad box, or an object already registered.
  void registerObject(object* obj) override { registerObjects(std::vector<object*>{obj}); }

  /// All or nothing: every object is checked first.
  void registerObjects(const std::vector<object*>& objs) override {
    writable("registerObjects");
    std::vector<box_type> bs;
    bs.reserve(objs.size());
    {
      std::unordered_map<const object*, char> seen;
      for (object* o : objs) {
        bs.push_back(checked_box(o, "registerObjects"));
        if (ids_.count(o) != 0 || !seen.emplace(o, 0).second)
          throw error(errc::invalid_handle, "hhg::fcl_manager::registerObjects: object registered twice");
      }
    }
    ids_.reserve(ids_.size() + objs.size());
    const std::size_t slots = by_slot_.size() + objs.size();
    reserve_geometric(by_slot_, slots);  // one by one registration stays linear
    reserve_geometric(boxes_, slots);
    reserve_geometric(handles_, slots);
    const std::vector<handle> hs = grids_.insert(std::span<const box_type>(bs));
    for (std::size_t i = 0; i < objs.size(); ++i) {
      const std::uint32_t s = hs[i].index;
      if (by_slot_.size() <= s) {
        by_slot_.resize(s + 1, nullptr);
        boxes_.resize(s + 1);
        handles_.resize(s + 1);
      }
      by_slot_[s] = objs[i];
      handles_[s] = hs[i];
      boxes_[s] = bs[i];
      ids_.emplace(objs[i], hs[i]);
    }
  }

  /// Throws hhg::error(invalid_handle) for an object not registered.
  void unregisterObject(object* obj) override {
    writable("unregisterObject");
    const handle h = find(obj, "unregisterObject");
    grids_.remove(h);
    by_slot_[h.index] = nullptr;
    ids_.erase(obj);
  }

  /// Nothing to build: the grids are always ready.
  void setup() override {}

  /// Re-reads every object's box (a batch move). Throws (nothing changes) if a
  /// box is bad.
  void update() override {
    writable("update");
    std::vector<handle> hs;
    std::vector<box_type> bs;
    hs.reserve(ids_.size());
    bs.reserve(ids_.size());
    for (std::size_t s = 0; s < by_slot_.size(); ++s) {
      if (by_slot_[s] == nullptr) continue;
      hs.push_back(handles_[s]);
      bs.push_back(checked_box(by_slot_[s], "update"));
    }
    commit(hs, bs);
  }
  /// Re-reads one object's box. Throws for an unknown object or a bad box.
  void update(object* updated_obj) override { update(std::vector<object*>{updated_obj}); }
  /// Re-reads these objects' boxes; all or nothing.
  void update(const std::vector<object*>& updated_objs) override {
    writable("update");
    std::vector<handle> hs;
    std::vector<box_type> bs;
    hs.reserve(updated_objs.size());
    bs.reserve(updated_objs.size());
    for (object* o : updated_objs) {
      hs.push_back(find(o, "update"));
      bs.push_back(checked_box(o, "update"));
    }
    commit(hs, bs);
  }

  void clear() override {
    writable("clear");
    grids_.clear();
    ids_.clear();
    by_slot_.clear();
    boxes_.clear();
    handles_.clear();
  }

  /// In slot order (not registration order).
  void getObjects(std::vector<object*>& objs) const override {
    objs.clear();
    objs.reserve(ids_.size());
    for (object* o : by_slot_)
      if (o != nullptr) objs.push_back(o);
  }

  /// callback(obj, o, cdata) for every registered o whose box overlaps obj's.
  void collide(object* obj, void* cdata, fcl::CollisionCallBack<S> callback) const override {
    const box_type q = checked_box(obj, "collide");
    const calling guard(*this);
    grids_.for_each_overlapping(q, [&](handle h) { return !callback(obj, by_slot_[h.index], cdata); });
  }

  /// callback(a, b, cdata) once for every pair of registered objects whose
  /// boxes overlap, a in the lower slot; the pairs in the detection's order
  /// (deterministic: the same for the same calls, any worker count).
  void collide(void* cdata, fcl::CollisionCallBack<S> callback) const override {
    // The pairs are taken out of pairs_ while the callbacks run: a self
    // collide inside a callback (a read, allowed) fills pairs_ again, and the
    // outer loop read the inner call's pairs (until stop 79).
    struct taken {
      std::vector<handle_pair>& home;
      std::vector<handle_pair> pairs;
      explicit taken(std::vector<handle_pair>& h) : home(h) { pairs.swap(home); }
      ~taken() { pairs.swap(home); }  // (its memory kept for the next call)
    } t(pairs_);
    grids_.find_pairs(t.pairs);  // (in a deterministic order)
    const calling guard(*this);
    for (const handle_pair& p : t.pairs) {
      const auto [lo, hi] = std::minmax(p.a.index, p.b.index);
      if (callback(by_slot_[lo], by_slot_[hi], cdata)) return;
    }
  }

  /// callback(a, b, cdata) for every a of this manager and b of `other` whose
  /// boxes overlap. `other` must be an fcl_manager<S> (else hhg::error).
  void collide(fcl::BroadPhaseCollisionManager<S>* other, void* cdata,
               fcl::CollisionCallBack<S> callback) const override {
    const fcl_manager& o = same_class(other, "collide");
    if (&o == this) return collide(cdata, callback);
    const calling guard(*this), other_guard(o);
    const bool mine_smaller = size() <= o.size();
    const fcl_manager& small = mine_smaller ? *this : o;
    const fcl_manager& large = mine_smaller ? o : *this;
    for (std::size_t s = 0; s < small.by_slot_.size(); ++s) {
      object* a = small.by_slot_[s];
      if (a == nullptr) continue;
      const bool go_on = large.grids_.for_each_overlapping(small.boxes_[s], [&](handle h) {
        object* b = large.by_slot_[h.index];
        return !(mine_smaller ? callback(a, b, cdata) : callback(b, a, cdata));
      });
      if (!go_on) return;
    }
  }

  /// callback(obj, o, cdata, dist) for registered objects o in increasing box
  /// distance while that distance is below dist (which starts at the largest
  /// S and is what the callback writes back).
  void distance(object* obj, void* cdata, fcl::DistanceCallBack<S> callback) const override {
    const box_type q = checked_box(obj, "distance");
    const calling guard(*this);
    S min_dist = std::numeric_limits<S>::max();
    nearest_first(
        q, min_dist, [](handle) { return true; },
        [&](handle h) { return callback(obj, by_slot_[h.index], cdata, min_dist); });
  }

  /// The same over every unordered pair of registered objects, one shared dist.
  void distance(void* cdata, fcl::DistanceCallBack<S> callback) const override {
    const calling guard(*this);
    S min_dist = std::numeric_limits<S>::max();
    for (std::size_t s = 0; s < by_slot_.size(); ++s) {
      object* a = by_slot_[s];
      if (a == nullptr) continue;
      if (min_dist <= 0) return;  // no pair can be below 0
      const bool stop = nearest_first(
          boxes_[s], min_dist, [&](handle h) { return h.index > s; },
          [&](handle h) { return callback(a, by_slot_[h.index], cdata, min_dist); });
      if (stop) return;
    }
  }

  /// The same over pairs (a of this, b of `other`), one shared dist. `other`
  /// must be an fcl_manager<S> (else hhg::error).
  void distance(fcl::BroadPhaseCollisionManager<S>* other, void* cdata,
                fcl::DistanceCallBack<S> callback) const override {
    const fcl_manager& o = same_class(other, "distance");
    if (&o == this) return distance(cdata, callback);
    const calling guard(*this), other_guard(o);
    const bool mine_smaller = size() <= o.size();
    const fcl_manager& small = mine_smaller ? *this : o;
    const fcl_manager& large = mine_smaller ? o : *this;
    S min_dist = std::numeric_limits<S>::max();
    for (std::size_t s = 0; s < small.by_slot_.size(); ++s) {
      object* a = small.by_slot_[s];
      if (a == nullptr) continue;
      if (min_dist <= 0) return;
      const bool stop = large.nearest_first(
          small.boxes_[s], min_dist, [](handle) { return true; },
          [&](handle h) {
            object* b = large.by_slot_[h.index];
            return mine_smaller ? callback(a, b, cdata, min_dist) : callback(b, a, cdata, min_dist);
          });
      if (stop) return;
    }
  }

  bool empty() const override { return ids_.empty(); }
  size_t size() const override { return ids_.size(); }

  /// The hash grids holding the boxes.
  const hash_grids<3, S>& grids() const noexcept { return grids_; }
  /// Runs detection and the batch move on `e` (not owned); nullptr: serial.
  void set_executor(executor* e) noexcept { grids_.set_executor(e); }

 private:
  // Callbacks of a query are running (queries nest: a count). A change then
  // throws reentrant_call: the self collide and self distance used to accept
  // it, and later callbacks got a null object or one that overlapped nothing
  // (until stop 79; the query against one object refused it through the grids).
  struct calling {
    const fcl_manager& m;
    explicit calling(const fcl_manager& mm) : m(mm) { ++m.calling_; }
    ~calling() { --m.calling_; }
    calling(const calling&) = delete;
    calling& operator=(const calling&) = delete;
  };
  void writable(const char* where) const {
    if (calling_ != 0)
      throw error(errc::reentrant_call, std::string("hhg::fcl_manager::") + where +
                                            ": called from inside a callback of this manager's collide or distance");
  }

  static box_type checked_box(const object* o, const char* where) {
    if (o == nullptr) throw error(errc::invalid_handle, std::string("hhg::fcl_manager::") + where + ": null object");
    const fcl::AABB<S>& a = o->getAABB();
    box_type b;
    for (int i = 0; i < 3; ++i) {
      b.min[i] = a.min_[i];
      b.max[i] = a.max_[i];
    }
    int axis = -1;
    const box_problem p = check_box(b, &axis);
    if (p == box_problem::nan_coordinate)
      throw error(errc::nan_coordinate, std::string("hhg::fcl_manager::") + where +
                                            ": NaN in the object's AABB (axis " + std::to_string(axis) + ")");
    if (p == box_problem::inverted)
      throw error(errc::inverted_box, std::string("hhg::fcl_manager::") + where +
                                          ": the object's AABB has min > max (axis " + std::to_string(axis) +
                                          "); call computeAABB()?");
    return b;
  }

  handle find(const object* o, const char* where) const {
    const auto it = ids_.find(o);
    if (it == ids_.end())
      throw error(errc::invalid_handle, std::string("hhg::fcl_manager::") + where +
                                            (o == nullptr ? ": null object" : ": object not registered"));
    return it->second;
  }

  const fcl_manager& same_class(fcl::BroadPhaseCollisionManager<S>* other, const char* where) const {
    const auto* o = dynamic_cast<const fcl_manager*>(other);
    if (o == nullptr)
      throw error(errc::invalid_handle,
                  std::string("hhg::fcl_manager::") + where + ": the other manager is not an hhg::fcl_manager");
    return *o;
  }

  void commit(const std::vector<handle>& hs, const std::vector<box_type>& bs) {
    grids_.move(std::span<const handle>(hs), std::span<const box_type>(bs));
    for (std::size_t i = 0; i < hs.size(); ++i) boxes_[hs[i].index] = bs[i];
  }

  // Euclidean distance between boxes, as fcl::AABB::distance.
  static double box_gap(const box_type& a, const box_type& b) {
    double s = 0;
    for (int i = 0; i < 3; ++i) {
      double d = 0;
      if (a.min[i] > b.max[i])
        d = double(a.min[i]) - double(b.max[i]);
      else if (b.min[i] > a.max[i])
        d = double(b.min[i]) - double(a.max[i]);
      s += d * d;
    }
    return std::sqrt(s);
  }

  // Hands the stored objects `accept` admits to `call` in increasing box
  // distance from q while that distance is below min_dist (which `call` may
  // lower). Searches a box around q widened by r, doubling r, until r reaches
  // min_dist or the box holds everything. True when `call` asked to stop.
  template <class Accept, class Call>
  bool nearest_first(const box_type& q, S& min_dist, Accept accept, Call call) const {
    if (ids_.empty()) return false;
    double r = std::max<double>(longest_edge(q), typical_edge());
    if (!(r > 0) || !std::isfinite(r)) r = 1;
    // Handed over already: in the last round's search box with a distance up
    // to its radius (done). The box is rounded, so "distance <= done" alone
    // also skipped an object at distance done just outside it, which no round
    // then handed over (until stop 79: a nearest object missed, the minimum
    // far too large).
    double done = -1;
    box_type last{};
    std::vector<std::pair<double, handle>> ring;
    for (;;) {
      box_type w;
      for (int i = 0; i < 3; ++i) {
        w.min[i] = static_cast<S>(double(q.min[i]) - r);
        w.max[i] = static_cast<S>(double(q.max[i]) + r);
      }
      ring.clear();
      std::size_t seen = 0;
      grids_.for_each_overlapping(w, [&](handle h) {
        ++seen;
        if (!accept(h)) return true;
        const double d = box_gap(q, boxes_[h.index]);
        if (d > done || !overlaps(last, boxes_[h.index])) ring.emplace_back(d, h);
        return true;
      });
      const bool all = seen == ids_.size();
      std::sort(ring.begin(), ring.end(), [](const auto& x, const auto& y) {
        return x.first < y.first || (x.first == y.first && x.second < y.second);
      });
      for (const auto& [d, h] : ring) {
        if (!all && d > r) break;
        if (!(d < double(min_dist))) break;
        if (call(h)) return true;
      }
      if (all || double(min_dist) <= r) return false;
      done = r;
      last = w;
      r *= 2;
    }
  }

  // Mean longest edge of the stored bounded boxes (sampled), the first search radius.
  double typical_edge() const {
    double sum = 0;
    std::size_t n = 0;
    const std::size_t step = std::max<std::size_t>(1, by_slot_.size() / 64);
    for (std::size_t s = 0; s < by_slot_.size(); s += step) {
      if (by_slot_[s] == nullptr || !is_bounded(boxes_[s])) continue;
      sum += longest_edge(boxes_[s]);
      ++n;
    }
    return n == 0 ? 1.0 : sum / double(n);
  }

  template <class V>
  static void reserve_geometric(V& v, std::size_t n) {
    if (n > v.capacity()) v.reserve(std::max(n, 2 * v.capacity()));
  }

  mutable hash_grids<3, S> grids_;
  std::unordered_map<const object*, handle> ids_;
  std::vector<object*> by_slot_;  // registered object by handle index (nullptr: none)
  std::vector<box_type> boxes_;   // its box as last read
  std::vector<handle> handles_;   // its handle
  mutable std::vector<handle_pair> pairs_;
  mutable int calling_ = 0;  // queries whose callbacks are running
};

}  // namespace hhg
