// hhg/hierarchical_hashing.hpp: hierarchical hashing (Pouchol, Ahmad,
// Crespin, Terraz 2009, seed 001, section 3).
//
// Classes as in multilevel hashing (cell size 2^c >= the object's longest
// edge), sorted from the largest down. An object's corners are hashed
// top-down: the key of a corner at class c is the sum of the cell hashes of
// all classes from the largest down to c (eq. 4), so cells of different
// parents rarely collide; every cell passed on the way down is flagged
// `has_children`. The object is stored under the keys of its corners' cells
// at its own class. The broad phase (section 3.3.1, Listing 2): each object
// walks its corners down from the largest class to its own, collecting the
// objects stored in those cells, and drops a corner as soon as its cell has
// no children: empty regions are pruned without visiting finer classes.
//
// Each pair once: an object looks only at its own class and coarser ones
// (finer partners find it), takes a partner of its own class only if that
// partner comes later in the table, and takes a partner only in the cell that
// holds the lower corner of the two boxes' intersection. Unbounded boxes and
// boxes whose cells cannot be formed exactly are kept apart and tested
// against everything. See docs/methods/hierarchical.md.
//
// Dynamic use through the object table (insert, move, remove O(1)); the hash
// structure is rebuilt by each detection. Thread safety: const members may
// run concurrently; detection needs exclusive access.
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

template <int D, class T>
class hierarchical_hashing : public detail::table_method<D, T> {
 public:
  static constexpr const char* method_name = "hierarchical";

  void find_pairs(std::vector<handle_pair>& out);
  void for_each_pair(pair_callback f);
  std::uint64_t box_tests() const noexcept { return box_tests_; }
  /// Cells looked at by the last detection (the pruning's effect).
  std::uint64_t cells_visited() const noexcept { return cells_visited_; }
  /// Classes of the last detection.
  std::size_t classes() const noexcept { return classes_.size(); }
  std::size_t bytes() const noexcept;

 private:
  struct entry {
    std::uint64_t key;
    std::array<std::int64_t, D> cell;
    std::int32_t level;
    std::uint32_t object;
  };
  struct slot {
    std::uint64_t key;
    std::uint32_t begin, end;  // entries with this key
    bool used, has_children;
  };
  void build();
  slot& find_or_add(std::uint64_t key);
  const slot* find(std::uint64_t key) const;

  std::vector<std::int32_t> level_of_;              // per object, or INT32_MIN (apart)
  std::vector<std::array<std::int64_t, D>> lo_of_;  // per object: cell of min at its class
  std::vector<std::int32_t> classes_;               // descending
  std::vector<entry> entries_;
  std::vector<slot> slots_;
  std::vector<std::uint32_t> apart_;
  std::size_t used_ = 0;
  std::uint64_t box_tests_ = 0, cells_visited_ = 0;
};

extern template class hierarchical_hashing<2, float>;
extern template class hierarchical_hashing<2, double>;
extern template class hierarchical_hashing<3, float>;
extern template class hierarchical_hashing<3, double>;

}  // namespace hhg
