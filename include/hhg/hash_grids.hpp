// hhg/hash_grids.hpp: the hierarchical hash grid (Schornbaum 2009).
//
// Every bounded object sits in exactly one cell of exactly one grid: the grid
// whose cells are the smallest that are still larger than the object (cell/f <=
// size < cell, f the hierarchy factor). Grids are created lazily, are hashed
// (cells per axis a power of two, cell index = floor(coordinate / cell size)
// modulo that count), and grow when they fill. Detection tests each occupied
// cell against itself and half its neighbours, and each object against the
// cells of every coarser grid that can hold an overlapping object, so each
// overlapping pair is found exactly once. See docs/hash_grids.md.
//
// Thread safety: const member functions may run concurrently with each other;
// everything else needs exclusive access.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "hhg/box.hpp"
#include "hhg/broad_phase.hpp"
#include "hhg/config.hpp"
#include "hhg/detail/tuning.hpp"
#include "hhg/error.hpp"
#include "hhg/executor.hpp"
#include "hhg/handle.hpp"
#include "hhg/queries.hpp"
#include "hhg/stats.hpp"

namespace hhg {

namespace detail {
template <int D, class T>
struct hash_grids_state;
template <int D, class T>
struct detection_scratch;
}  // namespace detail

/// Hierarchical hash grid for D = 2 or 3, T = float or double.
/// Explicitly instantiated for all four combinations in the library.
template <int D, class T>
class hash_grids {
 public:
  using box_type = box<D, T>;
  static constexpr int dimension = D;
  using scalar = T;
  /// The method's name in `hhg pairs --method`, the benchmark and test names.
  static constexpr const char* method_name = "hhg";

  /// Throws hhg::error(errc::bad_config) if `c` is out of range.
  explicit hash_grids(const config& c = {});
  ~hash_grids();
  hash_grids(const hash_grids&);
  hash_grids& operator=(const hash_grids&);
  /// A moved-from structure may only be assigned to or destroyed; any other
  /// call throws hhg::error(errc::moved_from) (size() is 0, contains() false).
  /// Move assignment is noexcept and unchecked: do not move-assign to a
  /// structure from inside its own callback or query visitor.
  hash_grids(hash_grids&&) noexcept;
  hash_grids& operator=(hash_grids&&) noexcept;

  /// Stores a box and returns its handle. O(1) on average (a grid that grows
  /// rehashes its objects: amortized O(1)). May create a grid level or
  /// activate the grids (then all stored objects are assigned once).
  /// Throws hhg::error for NaN or min > max; nothing changes then.
  handle insert(const box_type& b);

  /// Stores many boxes: the same result as insert(bs[i]) for i = 0, 1, ...
  /// (handles returned in that order). Every box is checked first: a bad one
  /// throws hhg::error and nothing changes.
  std::vector<handle> insert(std::span<const box_type> bs);

  /// Removes an object. O(1). Throws hhg::error for a null, stale or unknown
  /// handle (removing twice included); nothing changes then. Grids do not shrink.
  void remove(handle h);

  /// Replaces the box of an object (move and/or resize): the update phase of
  /// thesis Algorithm 2 for one object. With the incremental strategy an object
  /// that stays in its cell costs a hash and a compare; otherwise it changes
  /// cell or grid in O(1). With the rebuild strategy only the box is stored and
  /// the next update() (or detection) reinserts every object.
  /// Throws hhg::error for a bad handle or box; nothing changes then.
  void move(handle h, const box_type& b);

  /// Moves many objects: the same result as move(hs[i], bs[i]) for i = 0, 1,
  /// ... in order (a handle may appear more than once; its last box wins),
  /// faster for large counts: the next objects' storage is fetched ahead, and
  /// objects that change cell are moved after the others, in the order of
  /// their cells. Every handle and box is checked first: a bad one throws
  /// hhg::error and nothing changes. Should memory run out part-way (a move
  /// to a new cell can allocate), some moves are done and the others are not
  /// (each object has its old box or its new one), no object is lost, and the
  /// structure stays valid. A batch of most objects lays the grids out anew
  /// and leaves the per-handle records to be brought up to date by the next
  /// call that needs them (insert, remove, move of one object, get,
  /// validate): that call takes one extra pass over the objects, once;
  /// detection and the next such batch do not need them.
  void move(std::span<const handle> hs, std::span<const box_type> bs);

  /// The stored box of an object (a copy). Throws hhg::error for a bad handle.
  box_type get(handle h) const;

  /// True when `h` refers to a stored object.
  bool contains(handle h) const noexcept;

  /// Number of stored objects.
  std::size_t size() const noexcept;
  bool empty() const noexcept { return size() == 0; }

  /// Completes the update phase. Incremental strategy: nothing to do. Rebuild
  /// strategy: clears every cell and reinserts every object (thesis 2.6, 1.).
  /// Detection calls it when needed, so calling it is only useful to time the
  /// two phases apart.
  void update();

  /// Detection step: clears `out` and appends every overlapping pair once
  /// (order unspecified but deterministic; see canonicalize). Reuses the
  /// capacity of `out` and of internal scratch: no allocation in steady state.
  void find_pairs(std::vector<handle_pair>& out);

  /// Detection step delivering each overlapping pair to `f(a, b)` once, on
  /// the calling thread, in the order find_pairs gives. `f` must not modify
  /// this structure nor start another detection on it: such a call throws
  /// hhg::error(errc::reentrant_call) and changes nothing.
  void for_each_pair(pair_callback f);

  /// Removes every object and grid (activation is reset too). Handles of
  /// removed objects become stale.
  void clear();

  const config& settings() const;

  /// Runs the parallel parts (the batch move, detection, batch queries) on
  /// `e`, which is not owned and must outlive its use here; nullptr (the
  /// default) runs everything on the calling thread. Results, their order
  /// included, are the same for every executor and worker count. Copies of the
  /// structure share the executor.
  void set_executor(executor* e);
  executor* get_executor() const;

  /// For tests and benchmarks, not a stable API: the thresholds that choose
  /// between the engine's internal paths (set them to force a path at small
  /// sizes), and how often each path ran since construction.
  void set_tuning(const detail::tuning& t);
  const detail::tuning& tuning() const;
  const detail::path_counters& path_counts() const;

  /// Grids, objects, occupied cells, memory, and the counters of the last
  /// detection. O(number of grids).
  statistics stats() const;
  /// Box tests done by the last detection (stats().box_tests).
  std::uint64_t box_tests() const { return stats().box_tests; }
  /// Bytes of capacity held (stats().bytes).
  std::size_t bytes() const { return stats().bytes; }

  /// Checks every invariant of the data structure (each object in exactly one
  /// cell of the right grid, occupied-cell lists exact, handle table
  /// consistent, memory accounting right). O(N + cells in use). Throws
  /// std::logic_error describing the first violation.
  void validate() const;

  /// Largest |coordinate| / cell size at which hhg hashes an object into a
  /// cell of its own size class (2^22 for float, 2^40 for double). An object
  /// farther out is placed on a coarser grid level where the bound holds, so
  /// it is still paired exactly; when that level would be past the 250th,
  /// the object is kept apart with the unbounded ones (also paired exactly).
  /// See docs/hash_grids.md, "Precision".
  static double precision_limit() noexcept;

  // ===== queries (docs/queries.md) ===========================================
  // All queries are const: any number of them may run concurrently with each
  // other (they use only local scratch), but not with a non-const member.
  // A visitor (or closest_ray_hit's test) may run other queries, but a
  // non-const call on the structure it visits (insert, move, remove, clear,
  // a detection, ...) throws hhg::error(errc::reentrant_call) and changes
  // nothing (the query's mark is per thread: other threads' queries are not
  // affected). On a moved-from structure every query throws errc::moved_from.
  // Matches follow the predicates of hhg/queries.hpp exactly (closed overlap,
  // unbounded objects included). Each grid level is searched only in the cells
  // that can hold a match: the cell range of the query box widened by the
  // level's reach (objects are smaller than a cell); when that range holds
  // more cells than the level has occupied cells, the occupied cells are
  // scanned instead, so a query costs O(min(range, occupied cells) + matches)
  // per level. Objects before grid activation, unbounded objects, and (with
  // the rebuild strategy) objects moved since the last update() are tested
  // one by one. Bad query input throws hhg::error and has no effect.

  /// Visits every object whose box overlaps `q` (closed) until `v` returns
  /// false. Returns false when stopped early.
  bool for_each_overlapping(const box_type& q, object_visitor v) const;
  /// Clears `out` and appends the handles of every object overlapping `q`.
  void overlapping(const box_type& q, std::vector<handle>& out) const;
  std::vector<handle> overlapping(const box_type& q) const;

  /// Objects whose box contains point `p` (closed).
  bool for_each_containing(const std::array<T, D>& p, object_visitor v) const;
  void containing(const std::array<T, D>& p, std::vector<handle>& out) const;

  /// Objects whose box meets the closed sphere (box_meets_sphere). Throws
  /// hhg::error(nan_coordinate) for a NaN, errc::inverted_box for radius < 0.
  bool for_each_in_sphere(const std::array<T, D>& center, double radius, object_visitor v) const;
  void in_sphere(const std::array<T, D>& center, double radius, std::vector<handle>& out) const;

  /// Every object whose box the ray crosses (ray_box_entry >= 0), unordered,
  /// with its entry parameter, until `v` returns false. Throws
  /// hhg::error(nan_coordinate) for a non-finite origin or direction or a NaN
  /// max_t, errc::inverted_box for max_t < 0. Grid levels are walked along the
  /// ray column by column (a 3D-DDA over the dominant axis, widened by the
  /// level's reach); past about twice the level's occupied cells (e.g. an
  /// infinite ray) the rest of the level is scanned, skipping what was walked.
  bool for_each_ray_hit(const ray<D, T>& r, ray_visitor v) const;
  /// Clears `out` and appends every crossed object, in order of entry
  /// parameter (ties by handle index).
  void ray_hits(const ray<D, T>& r, std::vector<ray_hit>& out) const;
  /// The first object in entry order (ties by handle index); id null when none.
  ray_hit first_ray_hit(const ray<D, T>& r) const;
  /// Some crossed object (stops at the first one found); id null when none.
  ray_hit any_ray_hit(const ray<D, T>& r) const;
  /// The waLBerla closest-hit query: candidates are handed to `exact` in
  /// increasing entry order per search region, only while their entry
  /// parameter is <= the current max_t; each exact hit shortens the ray, and
  /// the walk along the ray stops once it is past max_t. Returns the hit with
  /// the smallest exact t (ties: the first found); id null when none.
  ray_hit closest_ray_hit(const ray<D, T>& r, exact_ray_test exact) const;

  /// Clears `out` and appends the k objects nearest to `p` by box distance
  /// (box_distance_squared), nearest first, ties by handle index (fewer when
  /// fewer are stored). Grows a cube around p by doubling until it holds k
  /// objects within its half width: O(log(spread) * box query).
  void nearest(const std::array<T, D>& p, std::size_t k, std::vector<handle>& out) const;

  /// Batch forms: one result list per query; out[i] answers queries[i] and is
  /// the list of the single form. Every query is checked before any is run (a
  /// bad one throws and `out` is untouched); the queries then run in ranges on
  /// the executor (set_executor), with the same lists for every worker count.
  void overlapping(const std::vector<box_type>& queries, std::vector<std::vector<handle>>& out) const;
  void ray_hits(const std::vector<ray<D, T>>& rays, std::vector<std::vector<ray_hit>>& out) const;
  // ===== end of queries =======================================================

 private:
  void move_checked(handle h, const box_type& b);
  detail::hash_grids_state<D, T>& writable(const char* op);
  const detail::hash_grids_state<D, T>& readable(const char* op) const;
  std::unique_ptr<detail::hash_grids_state<D, T>> s_;   // the lasting structure
  std::unique_ptr<detail::detection_scratch<D, T>> x_;  // detection scratch (not copied)
};

extern template class hash_grids<2, float>;
extern template class hash_grids<2, double>;
extern template class hash_grids<3, float>;
extern template class hash_grids<3, double>;

}  // namespace hhg
