// hhg/neighbors.hpp: fixed-radius neighbour search for point sets (SPH, DEM,
// molecular dynamics): for every point, every point within distance r.
//
// Method: a cell list with sorted storage. Cells are cubes of edge slightly
// above r / 2; the points are sorted by cell (row-major cell key) into one
// contiguous array of coordinates, so a cell's points are adjacent in memory
// and the 5^D cells around a cell are, per row, one contiguous run. The walk
// goes cell by cell in key order with one forward-only cursor per neighbour
// row, so finding the neighbour cells costs O(1) amortized (no hashing, no
// binary search). Results are compact lists (offsets + indices).
//
// Exactness: `within(a, b, r)` below is the predicate (exact: no rounding);
// results equal the brute-force double loop with it, for any finite coordinates (the cell edge
// is raised so |coordinate| / edge < 2^40, keeping cell indices exact enough).
//
// Cost: build O(N log N) (a sort), neighbour lists O(N + candidate pairs),
// memory O(N + pairs). Thread safety: const members may run concurrently.
// Threads: with an executor (set_executor), build, the re-sort of move,
// neighbors and neighbors_of run in ranges on it; the results (every list and
// its order) are the same for every executor and worker count.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "hhg/exact.hpp"
#include "hhg/executor.hpp"

namespace hhg {

/// The largest radius the neighbour searches accept: r * r is finite, so a
/// distance whose square overflows is correctly "not within".
inline constexpr double kMaxRadius = 0x1p511;

/// Closed distance test, exact: sum (a_i - b_i)^2 <= r^2 in exact arithmetic
/// on the coordinates (converted to double, exactly), for every finite input:
/// no overflow, underflow or rounding decides (hhg/exact.hpp).
template <class T, std::size_t D>
inline bool within(const std::array<T, D>& a, const std::array<T, D>& b, double r) noexcept {
  std::array<double, D> x{}, y{};
  for (std::size_t i = 0; i < D; ++i) {
    x[i] = static_cast<double>(a[i]);
    y[i] = static_cast<double>(b[i]);
  }
  return exact::within_exact(x, y, r);
}

namespace detail {

// within() with a fast path: d2 = sum of rounded squares in double (relative
// error below 2^-50 when r^2 is in [2^-960, 2^1000]: no harmful underflow, and
// an overflowed d2 is far beyond r^2) decides unless it is within 2^-45 of r^2.
struct within_filter {
  double r = 0, accept = -1, reject = -1;
  bool fast = false;
  explicit within_filter(double radius) noexcept : r(radius) {
    const double r2 = radius * radius;
    fast = r2 >= 0x1p-960 && r2 <= 0x1p1000;
    accept = r2 * (1 - 0x1p-45);
    reject = r2 * (1 + 0x1p-45);
  }
  template <std::size_t D>
  bool operator()(const std::array<double, D>& a, const std::array<double, D>& b, double d2) const noexcept {
    if (fast) {
      if (d2 <= accept) return true;
      if (d2 > reject) return false;
    }
    return exact::within_exact(a, b, r);
  }
};

// The sizes of cell_list's parallel pieces (not public API: tests make them
// small to run every parallel path at sizes brute force can check). None of
// them changes a result.
struct cell_list_tuning {
  std::size_t piece = std::size_t{1} << 14;               // points per piece of build and per run of the walk
  std::size_t queries = 1024;                             // queries per piece of neighbors_of
  std::size_t parallel_sort = std::size_t{1} << 16;       // fewer points: one std::sort
  std::size_t parallel_transpose = std::size_t{1} << 16;  // fewer points: one transposition walk
};

}  // namespace detail

/// Compact neighbour lists: the neighbours of point i are
/// indices[offsets[i] .. offsets[i + 1]) (ascending unless asked otherwise).
/// offsets has N + 1 entries.
struct neighbor_list {
  std::vector<std::size_t> offsets;
  std::vector<std::uint32_t> indices;
  std::size_t size() const noexcept { return offsets.empty() ? 0 : offsets.size() - 1; }
  std::size_t count(std::size_t i) const { return offsets[i + 1] - offsets[i]; }
};

/// A cell list over one point set, for one radius.
template <int D, class T>
class cell_list {
 public:
  using point = std::array<T, D>;

  /// Sorts the points into cells of edge slightly above r / 2 (cell_edge()). Throws hhg::error
  /// (nan_coordinate) for a non-finite coordinate or radius, (inverted_box)
  /// for r < 0, (bad_config) for r > kMaxRadius, (capacity) for 2^32 points or more. O(N log N).
  void build(const std::vector<point>& points, double r);

  /// For every stored point, the other stored points within r (itself
  /// excluded), each list ascending. O(N + candidates); putting the lists in
  /// ascending order is a transposition pass over all pairs (random writes:
  /// about 40% of the time for 30 neighbours per point). With
  /// `ascending = false` each list is in an unspecified (spatial) order and
  /// that pass is a block copy.
  void neighbors(neighbor_list& out, bool ascending = true) const;

  /// For every query point q (a second set), the stored points within r of q.
  /// Throws hhg::error for a non-finite query coordinate.
  void neighbors_of(const std::vector<point>& queries, neighbor_list& out) const;

  /// Replaces the coordinates of some points (incremental update): a point that
  /// stays in its cell is rewritten in place; the others are re-sorted in.
  /// `which[i]` is the index of a moved point, `where[i]` its new position.
  /// O(moved + N) in the worst case, O(moved) when no point changes cell.
  void move(const std::vector<std::uint32_t>& which, const std::vector<point>& where);

  /// Runs the parallel parts (the sort of build and move, neighbors,
  /// neighbors_of) on `e`; nullptr (the default) runs them on the calling
  /// thread. The results do not depend on it. `e` must outlive its use; a copy
  /// of the cell list shares it.
  void set_executor(executor* e) noexcept { exec_ = e; }
  executor* get_executor() const noexcept { return exec_; }
  /// Piece sizes of the parallel work (for tests; results never depend on them).
  void set_tuning(const detail::cell_list_tuning& t) noexcept { tune_ = t; }

  std::size_t size() const noexcept { return index_.size(); }
  double radius() const noexcept { return r_; }
  /// Edge of a cell: max(r / 2, max|coordinate| * 2^-30, 2^-1000) * (1 + 2^-10).
  double cell_edge() const noexcept { return h_; }

 private:
  std::int64_t key_of(const std::array<double, D>& p) const;
  void sort_all(const std::vector<std::array<double, D>>& pts);
  template <class F>
  void for_each_candidate_run(std::int64_t key, F&& f) const;

  executor* exec_ = nullptr;
  detail::cell_list_tuning tune_{};
  double r_ = 0, h_ = 1, inv_ = 1;
  std::array<std::int64_t, D> kmin_{};
  std::array<std::int64_t, D> span_{};      // cells per axis (padded by one on each side)
  std::vector<std::array<double, D>> xyz_;  // coordinates, sorted by cell
  std::vector<std::uint32_t> index_;        // original index of each sorted point
  std::vector<std::uint32_t> where_;        // sorted position of each original point
  std::vector<std::int64_t> cell_key_;      // key of each occupied cell, ascending
  std::vector<std::uint32_t> cell_start_;   // first sorted point of each cell, + end
  std::vector<std::int64_t> point_key_;     // cell key of each sorted point
};

extern template class cell_list<2, float>;
extern template class cell_list<2, double>;
extern template class cell_list<3, float>;
extern template class cell_list<3, double>;

}  // namespace hhg
