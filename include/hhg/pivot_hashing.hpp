// hhg/pivot_hashing.hpp: pivot-table spatial hashing (Pozzer et al. 2014) and
// its parallel and chunked forms (Zhyhallo & Woźna-Szcześniak, seed 004).
//
// A uniform grid over the scene's bounding box, one cell per object (the cell
// of its box's min corner), rebuilt at every detection with a counting sort:
//   1. pivots: per cell, count its objects (atomic counters, in parallel);
//   2. offsets: give every non-empty cell a range of the data table (an
//      atomic fetch-add on a shared counter, as in the paper);
//   3. scatter: each object takes a place in its cell's range (atomic
//      fetch-sub on the cell's index).
// Then each cell's objects are sorted by position (so the output does not
// depend on thread timing), and each occupied cell is tested against itself
// and its 13 (3D) / 4 (2D) forward neighbours; threads take fixed ranges of
// cells and their pairs are delivered in cell order: the same pairs, in the
// same order, for any thread count.
//
// pivot_hashing keeps one dense pivot table of cells; its memory grows with
// the scene's extent in cells, so the cell size is doubled when the table
// would exceed max(8 N, 4096) cells. pivot_chunked cuts the table into pages
// of 4^D cells allocated only where objects are (a directory hashes page
// coordinates), so its memory follows the objects, not the extent.
//
// The paper assumes every object fits in one cell. Here the cell edge is the
// longest edge among the objects (times 1 + 2^-20, a guard band for rounding);
// objects longer than 8 times the median edge, unbounded objects, and objects
// are kept apart and tested against every object, so one huge object cannot
// blow up the cell size; the cell is doubled until the scene spans fewer than
// 2^30 cells per axis, so cell coordinates are exact enough. See docs/methods/pivot.md.
//
// Thread safety: const members may run concurrently; detection needs
// exclusive access. Detection starts `threads()` worker threads per phase.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "hhg/box.hpp"
#include "hhg/broad_phase.hpp"
#include "hhg/detail/table_method.hpp"
#include "hhg/handle.hpp"

namespace hhg {

namespace detail {

template <int D, class T>
class pivot_base : public table_method<D, T> {
 public:
  /// threads = 0: std::thread::hardware_concurrency().
  explicit pivot_base(bool chunked, unsigned threads);

  void find_pairs(std::vector<handle_pair>& out);
  void for_each_pair(pair_callback f);

  /// Box tests of the last detection.
  std::uint64_t box_tests() const noexcept { return box_tests_; }
  std::size_t bytes() const noexcept;
  unsigned threads() const noexcept { return threads_; }
  /// 0: hardware concurrency. Changes nothing but the work split.
  void set_threads(unsigned n) noexcept;
  /// Cell edge of the last detection (0 before any).
  double cell_size() const noexcept { return cell_; }
  /// Pivot cells allocated by the last detection (dense table or pages).
  std::size_t pivot_cells() const noexcept { return count_.size(); }

 private:
  static constexpr int kPageBits = 2;  // pages of 4^D cells
  static constexpr std::uint32_t kPageCells = 1u << (kPageBits * D);

  void build();
  void detect_range(std::size_t first, std::size_t last, std::vector<handle_pair>& out, std::uint64_t& tests) const;
  std::uint32_t page_of(const std::array<std::int64_t, D>& page) const noexcept;  // index + 1, or 0
  std::uint32_t add_page(const std::array<std::int64_t, D>& page);
  std::uint32_t cell_id(const std::array<std::int64_t, D>& c) const noexcept;  // id + 1, or 0
  std::array<std::int64_t, D> coords_of(std::uint32_t id) const noexcept;

  template <class F>
  void parallel(std::size_t n, F&& f);

  bool chunked_;
  unsigned threads_;
  double cell_ = 0;
  std::array<double, D> origin_{};
  std::array<std::int64_t, D> dims_{};               // dense: cells per axis
  std::vector<std::array<std::int64_t, D>> coords_;  // per object: its cell
  std::vector<std::uint32_t> cell_of_;               // per object: cell id, or npos if apart
  std::vector<std::uint32_t> count_, index_;         // pivots (used through std::atomic_ref)
  std::vector<std::uint32_t> data_;                  // object positions by cell
  std::vector<std::uint32_t> apart_;
  std::vector<double> edges_, edge_scratch_;
  // chunked: page directory (open addressing over page coordinates)
  std::vector<std::array<std::int64_t, D>> page_key_;
  std::vector<std::uint32_t> dir_;
  std::vector<std::vector<handle_pair>> out_;
  std::vector<std::uint64_t> tests_;
  std::uint64_t box_tests_ = 0;
};

}  // namespace detail

/// Pivot-table hashing with one dense pivot table.
template <int D, class T>
class pivot_hashing : public detail::pivot_base<D, T> {
 public:
  static constexpr const char* method_name = "pivot";
  explicit pivot_hashing(unsigned threads = 0) : detail::pivot_base<D, T>(false, threads) {}
};

/// Pivot-table hashing with a chunked, paged pivot table.
template <int D, class T>
class pivot_chunked : public detail::pivot_base<D, T> {
 public:
  static constexpr const char* method_name = "pivot-chunked";
  explicit pivot_chunked(unsigned threads = 0) : detail::pivot_base<D, T>(true, threads) {}
};

extern template class detail::pivot_base<2, float>;
extern template class detail::pivot_base<2, double>;
extern template class detail::pivot_base<3, float>;
extern template class detail::pivot_base<3, double>;

}  // namespace hhg
