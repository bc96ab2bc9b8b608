// hhg/spatial_hashing.hpp: the two classic hashing broad phases the seed
// papers compare against.
//
// uniform_hashing (Teschner et al. 2003): one cell size; every object is
// entered in every cell its box overlaps; a hash table of cells (XOR of the
// cell coordinates times large primes); candidates are objects sharing a cell.
//
// multilevel_hashing (Eitz & Lixu 2007, as described by Pouchol et al. 2009,
// section 2.2): a power-of-two cell size s = 2^ceil(log2 l) per object class
// (l = longest box edge), so an object overlaps at most 2 cells per axis; the
// object is entered in the cells holding its 2^D corners at its own class,
// all classes in one table; an object finds its partners by looking, in
// every class, at the cells its box overlaps.
//
// Both keep the boxes in an object_table (insert, move, remove O(1)) and
// build the table at detection with a counting sort over hash buckets (count,
// prefix sums, scatter): no per-cell allocation, memory linear in the number
// of (object, cell) entries. Each pair is reported exactly once, without a
// duplicate set: a pair is reported only from the cell holding the lower
// corner of the two boxes' intersection (on the coarser class for pairs of
// different classes), and colliding cells in a bucket are told apart by their
// coordinates. Unbounded boxes, and boxes whose cell coordinates cannot be
// formed exactly (or that would cover more than max_cells cells), are kept
// apart and tested against everything. See docs/methods/uniform.md and
// docs/methods/multilevel.md.
//
// Thread safety: const members may run concurrently; detection needs
// exclusive access (it reuses scratch).
#pragma once

#include <array>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "hhg/box.hpp"
#include "hhg/broad_phase.hpp"
#include "hhg/detail/table_method.hpp"
#include "hhg/handle.hpp"

namespace hhg {

namespace detail {

/// The table both methods build (internal).
template <int D, class T>
struct cell_hash {
  struct entry {
    std::array<std::int64_t, D> cell;
    std::uint32_t object;  // position in the object table
    std::int32_t level;    // class c (cell size 2^c)
  };
  std::vector<entry> entries, sorted;
  std::vector<std::uint32_t> hash_of, bucket_start, cursor;
  std::vector<std::int32_t> level_of;              // per object; kApart for apart objects
  std::vector<std::array<std::int64_t, D>> lo_of;  // per object: first cell at its level
  std::vector<std::uint32_t> apart;                // positions of apart objects
  std::vector<std::int32_t> levels;                // classes present, ascending
  unsigned bits = 0;
  std::uint64_t box_tests = 0;

  static constexpr std::int32_t kApart = INT32_MIN;

  /// Builds the table. Uniform mode: every object in class `uniform_level`,
  /// objects over `max_cells` cells kept apart. Otherwise each object gets
  /// its own class (raised where needed for exact cell coordinates).
  void build(std::span<const box<D, T>> boxes, bool uniform, std::int32_t uniform_level, std::uint64_t max_cells);
  void pairs(std::span<const box<D, T>> boxes, std::span<const handle> ids, pair_callback f);
  std::size_t bytes() const noexcept;
};

}  // namespace detail

/// Uniform spatial hashing, one cell size for all objects.
template <int D, class T>
class uniform_hashing : public detail::table_method<D, T> {
 public:
  static constexpr const char* method_name = "uniform";

  /// `cell_size` > 0 fixes the cell size (rounded up to a power of two, so
  /// cell coordinates are exact); 0 (default) picks, at each detection, the
  /// power of two at or above the mean longest edge of the bounded boxes
  /// (Teschner et al.: cells about the size of an average object).
  /// `max_cells`: an object overlapping more cells than this is kept apart
  /// and tested against every object.
  explicit uniform_hashing(double cell_size = 0, std::uint64_t max_cells = 4096);

  void find_pairs(std::vector<handle_pair>& out);
  void for_each_pair(pair_callback f);
  /// Box tests done by the last detection.
  std::uint64_t box_tests() const noexcept { return hash_.box_tests; }
  /// Cell size used by the last detection.
  double last_cell_size() const noexcept { return last_cell_; }
  std::size_t bytes() const noexcept { return this->table_.bytes() + hash_.bytes(); }

 private:
  double cell_size_;
  std::uint64_t max_cells_;
  double last_cell_ = 0;
  detail::cell_hash<D, T> hash_;
};

/// Multilevel hashing: power-of-two cell size per object class.
template <int D, class T>
class multilevel_hashing : public detail::table_method<D, T> {
 public:
  static constexpr const char* method_name = "multilevel";

  void find_pairs(std::vector<handle_pair>& out);
  void for_each_pair(pair_callback f);
  std::uint64_t box_tests() const noexcept { return hash_.box_tests; }
  /// Number of classes (cell sizes) used by the last detection.
  std::size_t classes() const noexcept { return hash_.levels.size(); }
  std::size_t bytes() const noexcept { return this->table_.bytes() + hash_.bytes(); }

 private:
  detail::cell_hash<D, T> hash_;
};

extern template struct detail::cell_hash<2, float>;
extern template struct detail::cell_hash<2, double>;
extern template struct detail::cell_hash<3, float>;
extern template struct detail::cell_hash<3, double>;
extern template class uniform_hashing<2, float>;
extern template class uniform_hashing<2, double>;
extern template class uniform_hashing<3, float>;
extern template class uniform_hashing<3, double>;
extern template class multilevel_hashing<2, float>;
extern template class multilevel_hashing<2, double>;
extern template class multilevel_hashing<3, float>;
extern template class multilevel_hashing<3, double>;

}  // namespace hhg
