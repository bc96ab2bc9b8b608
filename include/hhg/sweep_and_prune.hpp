// hhg/sweep_and_prune.hpp: sweep and prune (sort and sweep) with a persistent
// pair set, after Erleben et al., "Physics-based Animation" (2005), the method
// the thesis compares the hierarchical hash grid with (Schornbaum 2009, 4.5).
//
// The min and max endpoints of every box are kept sorted along every axis.
// Between steps the arrays are re-sorted with insertion sort, which costs
// O(N + swaps): with temporal coherence objects move past few endpoints. Each
// swap of a min endpoint with a max endpoint is the moment two intervals start
// or stop overlapping on that axis; the set of overlapping pairs is updated
// right there, so detection only reads the pair set. See docs/methods/sap.md.
//
// Operations and cost (N objects, P overlapping pairs, k objects inserted or
// removed since the last update, S endpoint swaps caused by the moves):
//   insert, remove, move   O(1): recorded, applied by the next update()
//   update()               O(N + S) when objects moved; plus O(N + P) when
//                          objects were removed; plus O(N + k log k + C) when
//                          objects were inserted (the new endpoints are sorted
//                          and merged in; one sweep along axis 0 tests the new
//                          objects against the C objects their x-interval meets)
//   find_pairs, for_each_pair   update() then O(P) (reads the pair set)
// Memory: per object and axis two endpoints (value + 4-byte id) and two 4-byte
// positions; a box copy; the pair set (open addressing, load <= 1/2).
//
// Overlap is closed (box.hpp). At equal coordinates a min endpoint sorts
// before a max endpoint, so touching intervals count as overlapping. Infinite
// coordinates sort like any other value: unbounded boxes, points and
// far-from-origin coordinates are exact (no arithmetic is done on coordinates).
//
// Out of memory: insert, move and remove give the strong guarantee (capacity
// is reserved first). An update() (run by the detection) that runs out of
// memory part-way throws std::bad_alloc with every object still stored; the
// next update() rebuilds the axes and pairs from scratch (O(N log N)), so the
// following detection is exact again.
//
// Thread safety: const member functions may run concurrently with each other;
// everything else, including find_pairs and for_each_pair (they run update()),
// needs exclusive access.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "hhg/box.hpp"
#include "hhg/broad_phase.hpp"
#include "hhg/handle.hpp"
#include "hhg/object_table.hpp"

namespace hhg {

template <int D, class T>
class sweep_and_prune {
 public:
  using box_type = box<D, T>;
  static constexpr int dimension = D;
  using scalar = T;
  /// The method's name in `hhg pairs --method`, the benchmark and test names.
  static constexpr const char* method_name = "sap";

  /// Stores a box and returns its handle. O(1) amortized: the object joins the
  /// sorted axes at the next update(). Throws hhg::error for NaN or min > max
  /// (or errc::capacity beyond 2^31 - 2 objects); nothing changes then.
  handle insert(const box_type& b);
  /// Removes an object. O(1); its endpoints and pairs leave at the next
  /// update(). Throws hhg::error(errc::invalid_handle) for a null, stale or
  /// unknown handle; nothing changes then.
  void remove(handle h);
  /// Replaces the box of an object. O(1); the axes are re-sorted at the next
  /// update(). Throws hhg::error for a bad handle or box; nothing changes then.
  void move(handle h, const box_type& b);
  /// A copy of the stored box. O(1). Throws for a bad handle.
  box_type get(handle h) const { return table_.get(h, "sweep_and_prune::get"); }
  bool contains(handle h) const noexcept { return table_.contains(h); }
  std::size_t size() const noexcept { return table_.size(); }
  /// Removes everything (keeps capacity); every handle becomes stale.
  void clear();

  /// Applies the recorded removals, moves and inserts: afterwards the axes
  /// are sorted and the pair set holds exactly the overlapping pairs. The
  /// detection calls it; calling it earlier (e.g. right after the moves of a
  /// step) is allowed and makes the next detection cheaper.
  void update();

  /// Every overlapping pair once (update() first). `out` is cleared first and
  /// keeps its capacity. The order is the pair set's (deterministic for a
  /// given sequence of operations).
  void find_pairs(std::vector<handle_pair>& out);
  void for_each_pair(pair_callback f);

  /// Box tests (full overlap tests on all axes) done by the updates since the
  /// previous detection, i.e. the work that detection's pairs cost.
  std::uint64_t box_tests() const noexcept { return box_tests_; }
  /// Endpoint swaps done by the updates since the previous detection.
  std::uint64_t swaps() const noexcept { return swaps_; }
  /// Pairs currently in the pair set (valid after update()).
  std::size_t pair_count() const noexcept { return pairs_.size(); }
  /// Bytes of capacity held.
  std::size_t bytes() const noexcept;

  /// Checks every internal invariant (axes sorted, positions consistent,
  /// pair keys valid); throws std::logic_error. O(N + P), for tests.
  void validate() const;

 private:
  // An endpoint: its coordinate and (proxy << 1 | is_max).
  struct endpoint {
    T value;
    std::uint32_t ref;
  };
  static bool less(const endpoint& a, const endpoint& b) noexcept {
    return a.value < b.value || (a.value == b.value && (a.ref & 1u) < (b.ref & 1u));
  }

  // The pair set: open addressing with linear probing and backward-shift
  // deletion over 64-bit keys (lo << 32 | hi, lo < hi proxies).
  class pair_set {
   public:
    bool insert(std::uint64_t key);
    void erase(std::uint64_t key) noexcept;
    void clear() noexcept;
    std::size_t size() const noexcept { return count_; }
    const std::vector<std::uint64_t>& slots() const noexcept { return slots_; }
    std::size_t bytes() const noexcept { return slots_.capacity() * sizeof(std::uint64_t); }
    static constexpr std::uint64_t empty = ~std::uint64_t{0};

   private:
    std::size_t home(std::uint64_t key) const noexcept {
      return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_);
    }
    void grow();
    std::vector<std::uint64_t> slots_;
    std::size_t count_ = 0;
    unsigned shift_ = 64;
  };

  enum state : std::uint8_t { free_state, live_state, pending_insert, pending_remove };

  static std::uint64_t key(std::uint32_t p, std::uint32_t q) noexcept {
    return p < q ? (std::uint64_t{p} << 32 | q) : (std::uint64_t{q} << 32 | p);
  }
  void mark_dirty() noexcept;
  void rebuild_all();
  void apply_removals();
  void apply_moves();
  void apply_inserts();
  void sort_axis(int axis);
  void add_if_overlapping(std::uint32_t p, std::uint32_t q);

  object_table<D, T> table_;                  // handles, validation, get()
  std::vector<std::uint32_t> proxy_of_slot_;  // handle.index -> proxy
  // Per proxy (an internal id, reused only after the update that dropped it).
  std::vector<box_type> boxes_;
  std::vector<handle> handles_;
  std::vector<std::uint8_t> state_;
  std::vector<std::uint8_t> moved_;
  std::vector<std::uint32_t> aux_;  // position in pending_inserts_, or in an active list
  std::vector<std::uint32_t> free_proxies_;
  // Per axis: the sorted endpoints and, per proxy, the positions of its two
  // endpoints (pos_[axis][proxy * 2 + is_max]).
  std::vector<endpoint> axes_[D];
  std::vector<std::uint32_t> pos_[D];
  // Recorded operations.
  std::vector<std::uint32_t> pending_inserts_;
  std::vector<std::uint32_t> pending_removes_;
  std::vector<std::uint32_t> moved_list_;
  // Scratch reused between updates.
  std::vector<endpoint> merge_new_;
  std::vector<endpoint> merge_out_;
  std::vector<std::uint32_t> active_old_, active_new_;
  std::vector<std::uint64_t> keep_;
  pair_set pairs_;
  std::uint64_t box_tests_ = 0, swaps_ = 0;
  std::uint64_t tests_since_ = 0, swaps_since_ = 0;
  // An update failed (out of memory) part-way: the axes and the pair set are
  // stale, and the next update() rebuilds them from the stored boxes.
  bool dirty_ = false;
};

extern template class sweep_and_prune<2, float>;
extern template class sweep_and_prune<2, double>;
extern template class sweep_and_prune<3, float>;
extern template class sweep_and_prune<3, double>;

}  // namespace hhg
