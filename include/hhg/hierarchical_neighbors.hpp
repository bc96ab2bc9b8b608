// hhg/hierarchical_neighbors.hpp: fixed-radius neighbour search with the
// hierarchical hash structure of Pouchol, Ahmad, Crespin and Terraz (2009,
// seed 001, section 3.3.2).
//
// Cells have power-of-two edges. The finest class has cells of edge >= r (the
// interaction radius is the smallest class); coarser classes, a factor
// 2^level_step apart, go up to the extent of the point set. A point is hashed
// top-down (Listing 1): its key at a class is the sum of the cell hashes of
// all coarser classes and its own (eq. 4), every coarser cell it passes is
// flagged `has_children`, and it is stored in its finest-class cell. A search
// around p (Listing 3) walks the same classes from the top down over the
// cells that meet [p - r, p + r] per axis (the paper's 27 probe points p,
// p +- r, as cells, each once), and stops below a cell that has no children:
// empty regions are skipped at the coarsest class that shows them empty.
//
// One set (neighbors): on the fly, as in the paper: each point searches
// among the points inserted before it, then is inserted; each pair is found
// once and entered in both lists. Two sets (build + neighbors_of): the stored
// points are inserted, then each query point searches.
//
// The predicate is `within(a, b, r)` of neighbors.hpp; results equal the
// brute-force double loop for any finite coordinates (the search range is
// widened by a relative 2^-20, and by |coordinate| * 2^-30 far from the
// origin, so rounding never loses a neighbour). Lists are ascending.
//
// Cost: per point O(levels * 3^D) hash lookups in the worst case (dense
// data, where the flags prune nothing: then hhg::cell_list is faster), far
// fewer in sparse data. Memory O(N + occupied cells over all classes).
// Not incremental: after points move, search again (cell_list::move is the
// incremental method). Thread safety: const members may run concurrently.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "hhg/neighbors.hpp"

namespace hhg {

template <int D, class T>
class hierarchical_neighbors {
 public:
  using point = std::array<T, D>;

  /// level_step: classes are 2^level_step apart (1 = every power of two).
  /// Throws hhg::error (bad_config) unless 1 <= level_step <= 16.
  explicit hierarchical_neighbors(int level_step = 2);

  /// For every point, the other points within r (itself excluded), each list
  /// ascending: Listing 3 of the paper (search, then insert, point by point).
  /// Throws hhg::error (nan_coordinate) for a non-finite coordinate or radius,
  /// (inverted_box) for r < 0, (bad_config) for r > kMaxRadius, (capacity) for 2^32 points or more.
  void neighbors(const std::vector<point>& points, double r, neighbor_list& out);

  /// Inserts a point set (Listing 1) for neighbors_of. Errors as neighbors().
  void build(const std::vector<point>& points, double r);

  /// For every query point, the stored points within r of it, ascending.
  /// Throws hhg::error (nan_coordinate) for a non-finite query coordinate.
  void neighbors_of(const std::vector<point>& queries, neighbor_list& out) const;

  std::size_t size() const noexcept { return pts_.size(); }
  /// Classes of the hierarchy (finest first is class_edge(0) >= r).
  std::size_t levels() const noexcept { return levels_.size(); }
  /// Cells looked up by the last neighbors() call (the pruning's effect).
  std::uint64_t cells_visited() const noexcept { return cells_visited_; }
  /// Candidate points tested by the last neighbors() call.
  std::uint64_t candidates() const noexcept { return candidates_; }
  std::size_t bytes() const noexcept;

 private:
  struct cell {
    std::array<std::int64_t, D> at;
    std::uint64_t key;  // additive key: the sum of the cell hashes down to here
    std::int32_t level;
    std::uint32_t head;  // first stored point + 1 (finest class), or 0
    bool used, has_children;
  };
  struct live_cell {
    std::array<std::int64_t, D> at;
    std::uint64_t key;
  };

  void prepare(const std::vector<point>& points, double r);
  void insert(std::uint32_t i);
  cell& find_or_add(std::uint64_t key, std::int32_t level, const std::array<std::int64_t, D>& at);
  const cell* find(std::uint64_t key, std::int32_t level, const std::array<std::int64_t, D>& at) const;
  template <class F>
  std::uint64_t search(const std::array<double, D>& p, F&& visit) const;

  int step_;
  double r_ = 0, reach_ = 0;           // reach_: the widened search half-width
  std::array<double, D> lo_{}, hi_{};  // bounds of the stored points
  std::vector<std::int32_t> levels_;   // classes, descending
  std::vector<std::array<double, D>> pts_;
  std::vector<std::uint32_t> next_;  // next point in the same finest cell + 1, or 0
  std::vector<cell> table_;
  std::size_t used_ = 0;
  std::uint64_t cells_visited_ = 0;
  std::uint64_t candidates_ = 0;
};

extern template class hierarchical_neighbors<2, float>;
extern template class hierarchical_neighbors<2, double>;
extern template class hierarchical_neighbors<3, float>;
extern template class hierarchical_neighbors<3, double>;

}  // namespace hhg
