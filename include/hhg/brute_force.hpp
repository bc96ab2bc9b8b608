// hhg/brute_force.hpp: the all-pairs method. It is the oracle every other
// method is tested against, the fallback of the hash grids below their
// activation threshold, and the baseline of every benchmark.
//
// Storage: one dense array of (box, handle); a slot table maps handles to
// positions. insert, move, remove: O(1). Detection: N(N-1)/2 box tests.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "hhg/box.hpp"
#include "hhg/broad_phase.hpp"
#include "hhg/detail/checks.hpp"
#include "hhg/handle.hpp"

namespace hhg {

template <int D, class T>
class brute_force {
 public:
  using box_type = box<D, T>;
  static constexpr int dimension = D;
  using scalar = T;

  handle insert(const box_type& b) {
    detail::require_valid_box(b);
    if (free_head_ == npos && slots_.size() >= npos)
      throw error(errc::capacity, "hhg: brute_force: too many objects");
    std::uint32_t index;
    if (free_head_ != npos) {
      index = free_head_;
      free_head_ = slots_[index].pos;
      slots_[index].live = true;
    } else {
      index = static_cast<std::uint32_t>(slots_.size());
      slots_.push_back({1, npos});
    }
    entries_.push_back({b, {index, slots_[index].generation}});
    slots_[index].pos = static_cast<std::uint32_t>(entries_.size() - 1);
    return {index, slots_[index].generation};
  }

  void remove(handle h) {
    if (!contains(h)) detail::throw_invalid_handle("brute_force::remove");
    const std::uint32_t pos = slots_[h.index].pos;
    entries_[pos] = entries_.back();
    slots_[entries_[pos].id.index].pos = pos;
    entries_.pop_back();
    slot& s = slots_[h.index];
    s.generation = s.generation + 1 == 0 ? 1 : s.generation + 1;
    s.pos = free_head_;
    s.live = false;
    free_head_ = h.index;
  }

  void move(handle h, const box_type& b) {
    if (!contains(h)) detail::throw_invalid_handle("brute_force::move");
    detail::require_valid_box(b);
    entries_[slots_[h.index].pos].b = b;
  }

  box_type get(handle h) const {
    if (!contains(h)) detail::throw_invalid_handle("brute_force::get");
    return entries_[slots_[h.index].pos].b;
  }

  bool contains(handle h) const noexcept {
    return h.generation != 0 && h.index < slots_.size() && slots_[h.index].live &&
           slots_[h.index].generation == h.generation;
  }

  std::size_t size() const noexcept { return entries_.size(); }

  void update() {}

  void for_each_pair(pair_callback f) {
    const std::size_t n = entries_.size();
    for (std::size_t i = 0; i < n; ++i) {
      const entry& a = entries_[i];
      for (std::size_t j = i + 1; j < n; ++j) {
        if (overlaps(a.b, entries_[j].b)) f(a.id, entries_[j].id);
      }
    }
    box_tests_ = n < 2 ? 0 : static_cast<std::uint64_t>(n) * (n - 1) / 2;
  }

  void find_pairs(std::vector<handle_pair>& out) {
    out.clear();
    for_each_pair([&out](handle a, handle b) { out.push_back({a, b}); });
  }

  void clear() {
    for (const entry& e : entries_) {
      slot& s = slots_[e.id.index];
      s.generation = s.generation + 1 == 0 ? 1 : s.generation + 1;
      s.live = false;
      s.pos = free_head_;
      free_head_ = e.id.index;
    }
    entries_.clear();
  }

  /// Box tests done by the last detection.
  std::uint64_t box_tests() const noexcept { return box_tests_; }

 private:
  static constexpr std::uint32_t npos = std::numeric_limits<std::uint32_t>::max();
  struct entry {
    box_type b;
    handle id;
  };
  struct slot {
    std::uint32_t generation;
    std::uint32_t pos;  // position in entries_, or next free slot
    bool live = true;
  };
  std::vector<entry> entries_;
  std::vector<slot> slots_;
  std::uint32_t free_head_ = npos;
  std::uint64_t box_tests_ = 0;
};

}  // namespace hhg
