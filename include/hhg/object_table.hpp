// hhg/object_table.hpp: boxes stored under handles in one dense array.
//
// The storage that methods share when they rebuild their index from the boxes
// (brute force, the linear kd-tree, uniform and pivot hashing, ...): a dense
// array of (box, handle) with swap-removal and a slot table from handle index
// to position. insert, move, remove, get, contains: O(1). A method that keeps
// an incremental index keeps a table too and adds its own per-slot data,
// indexed by handle.index (dense, below slot_count()).
//
// Bad input (NaN, min > max, a null/stale/unknown handle) throws hhg::error and
// changes nothing.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "hhg/box.hpp"
#include "hhg/detail/checks.hpp"
#include "hhg/error.hpp"
#include "hhg/handle.hpp"

namespace hhg {

template <int D, class T>
class object_table {
 public:
  using box_type = box<D, T>;

  /// Stores a box; returns its handle. `what` names the caller in errors.
  handle insert(const box_type& b, const char* what = "insert") {
    detail::require_valid_box(b);
    if (free_head_ == npos && slots_.size() >= npos - 1) too_many(what);
    // Reserve first so that a failed allocation changes nothing.
    if (boxes_.size() == boxes_.capacity()) {
      boxes_.reserve(boxes_.size() * 2 + 16);
      ids_.reserve(boxes_.size() * 2 + 16);
    } else if (ids_.capacity() < boxes_.capacity()) {
      ids_.reserve(boxes_.capacity());
    }
    if (free_head_ == npos && slots_.size() == slots_.capacity()) slots_.reserve(slots_.size() * 2 + 16);
    std::uint32_t index;
    if (free_head_ != npos) {
      index = free_head_;
      free_head_ = slots_[index].pos;
    } else {
      index = static_cast<std::uint32_t>(slots_.size());
      slots_.push_back({1, npos, false});
    }
    slot& s = slots_[index];
    s.live = true;
    s.pos = static_cast<std::uint32_t>(boxes_.size());
    boxes_.push_back(b);
    ids_.push_back({index, s.generation});
    return {index, s.generation};
  }

  /// Forgets an object; its handle becomes stale.
  void remove(handle h, const char* what = "remove") {
    require(h, what);
    const std::uint32_t pos = slots_[h.index].pos;
    boxes_[pos] = boxes_.back();
    ids_[pos] = ids_.back();
    slots_[ids_[pos].index].pos = pos;
    boxes_.pop_back();
    ids_.pop_back();
    slot& s = slots_[h.index];
    s.generation = s.generation + 1 == 0 ? 1 : s.generation + 1;
    s.pos = free_head_;
    s.live = false;
    free_head_ = h.index;
  }

  /// Replaces the box of a stored object.
  void move(handle h, const box_type& b, const char* what = "move") {
    require(h, what);
    detail::require_valid_box(b);
    boxes_[slots_[h.index].pos] = b;
  }

  const box_type& get(handle h, const char* what = "get") const {
    require(h, what);
    return boxes_[slots_[h.index].pos];
  }

  bool contains(handle h) const noexcept {
    return h.generation != 0 && h.index < slots_.size() && slots_[h.index].live &&
           slots_[h.index].generation == h.generation;
  }

  /// Throws hhg::error(errc::invalid_handle) unless `h` is stored.
  void require(handle h, const char* what) const {
    if (!contains(h)) detail::throw_invalid_handle(what);
  }

  /// Position of a stored object in boxes() / ids() (changes on removals).
  std::uint32_t position(handle h) const noexcept { return slots_[h.index].pos; }

  std::size_t size() const noexcept { return boxes_.size(); }
  /// One past the largest handle index ever given out.
  std::size_t slot_count() const noexcept { return slots_.size(); }

  /// The stored boxes and their handles, in the same (unspecified) order.
  std::span<const box_type> boxes() const noexcept { return boxes_; }
  std::span<const handle> ids() const noexcept { return ids_; }

  /// Removes everything; every handle given out becomes stale.
  void clear() noexcept {
    for (const handle& id : ids_) {
      slot& s = slots_[id.index];
      s.generation = s.generation + 1 == 0 ? 1 : s.generation + 1;
      s.live = false;
      s.pos = free_head_;
      free_head_ = id.index;
    }
    boxes_.clear();
    ids_.clear();
  }

  /// Capacity in bytes.
  std::size_t bytes() const noexcept {
    return boxes_.capacity() * sizeof(box_type) + ids_.capacity() * sizeof(handle) + slots_.capacity() * sizeof(slot);
  }

 private:
  [[noreturn]] static void too_many(const char* what) {
    std::string message = "hhg: ";  // appended, not operator+: g++ 12 warns falsely there
    message += what;
    message += ": too many objects";
    throw error(errc::capacity, message);
  }
  static constexpr std::uint32_t npos = std::numeric_limits<std::uint32_t>::max();
  struct slot {
    std::uint32_t generation;
    std::uint32_t pos;  // position in boxes_, or the next free slot
    bool live;
  };
  std::vector<box_type> boxes_;
  std::vector<handle> ids_;
  std::vector<slot> slots_;
  std::uint32_t free_head_ = npos;
};

}  // namespace hhg
