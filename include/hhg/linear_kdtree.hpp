// hhg/linear_kdtree.hpp: the linear kd-tree of seed 002 ("An efficient space
// partitioning technique based on linear kd-trees for collision culling").
//
// Each box is quantized over the scene's bounding box to B-bit integers per
// axis (B = 31 in 2D, 21 in 3D); the Morton codes of its two corners (bits
// interleaved x, y, z from the top, so the kd-tree cuts x, y, z in turn) share
// a longest common prefix: the locational code of the deepest kd-tree node
// enclosing the box. Optionally (section 4) a box is split once along each
// axis at the cutting plane its node is cut by, when that shrinks the total
// node volume, giving up to 2^D sub-elements. The records (code, length,
// element) are sorted by code with prefixes first (section 5.4) and swept
// (section 5.5): record i is paired with every following record whose code it
// is a prefix of, i.e. every element in its node's subtree.
//
// That sweep is kd-tree-1: candidate pairs, with repeats when elements were
// split. The interface reports the exact set: candidates are box-tested and,
// with splitting, deduplicated (kd-tree-2). The raw counts are statistics
// (candidates(), unique_candidates(), records()) so the paper's Table 1 can be
// reproduced (bench/kdtree_table1.cpp).
//
// Exactness: quantization (subtract, scale, floor, clamp) is monotone, so two
// overlapping boxes have overlapping integer boxes, whose enclosing kd-tree
// nodes (dyadic cells of one hierarchy) are nested: the sweep always pairs
// them. Infinite coordinates clamp to the root's bounds, far-from-origin and
// tiny boxes only crowd nodes: never a missed pair. O(N log N) per detection
// (the sort); insert, move, remove O(1) through the object table.
//
// Thread safety: const members may run concurrently; detection needs
// exclusive access.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "hhg/box.hpp"
#include "hhg/broad_phase.hpp"
#include "hhg/detail/table_method.hpp"
#include "hhg/handle.hpp"

namespace hhg {

template <int D, class T>
class linear_kdtree : public detail::table_method<D, T> {
 public:
  static constexpr const char* method_name = "kdtree";

  /// `split`: split elements once per axis (section 4; default on).
  /// `count_unique`: also count the distinct candidate pairs (kd-tree-2's
  /// list) at each detection; costs a sort of all candidates.
  explicit linear_kdtree(bool split = true, bool count_unique = false) : split_(split), count_unique_(count_unique) {}

  void find_pairs(std::vector<handle_pair>& out);
  void for_each_pair(pair_callback f);

  /// Box tests of the last detection (candidates tested).
  std::uint64_t box_tests() const noexcept { return box_tests_; }
  /// kd-tree-1: candidate pairs of the last sweep, repeats included.
  std::uint64_t candidates() const noexcept { return candidates_; }
  /// kd-tree-2: distinct candidate pairs (0 unless count_unique).
  std::uint64_t unique_candidates() const noexcept { return unique_; }
  /// Records (sub-elements) of the last detection: N without splitting.
  std::size_t records() const noexcept { return records_.size(); }
  /// Sum over records of their node's volume (scene units), for V_n / V_e.
  double node_volume() const noexcept { return node_volume_; }
  std::size_t bytes() const noexcept;

  /// Builds the sorted records and calls f(i, j) for every candidate pair of
  /// table positions (kd-tree-1: repeats included, i != j, unordered), for
  /// statistics and experiments. Positions index table order (see
  /// object_table::position). Returns the number of candidates.
  template <class F>
  std::uint64_t for_each_candidate(F&& f) {
    build();
    std::uint64_t n = 0;
    sweep([&](std::uint32_t a, std::uint32_t b) {
      ++n;
      f(a, b);
    });
    return n;
  }

 private:
  struct record {
    std::uint64_t code;  // locational code, padded with zeros
    std::uint32_t len;   // bits of the code that are the path
    std::uint32_t element;
  };
  void build();
  void place(std::uint32_t element, std::array<std::uint64_t, D> lo, std::array<std::uint64_t, D> hi,
             unsigned split_axes);
  template <class F>
  void sweep(F&& f) const {
    const std::size_t n = records_.size();
    for (std::size_t i = 0; i + 1 < n; ++i) {
      const record& r = records_[i];
      const unsigned shift = kTotal - r.len;
      for (std::size_t j = i + 1; j < n; ++j) {
        const record& s = records_[j];
        if (s.len < r.len || (shift < 64 && (s.code >> shift) != (r.code >> shift))) break;
        if (s.element != r.element) f(r.element, s.element);
      }
    }
  }

  static constexpr unsigned kBits = D == 2 ? 31 : 21;
  static constexpr unsigned kTotal = kBits * D;

  bool split_;
  bool count_unique_;
  std::vector<record> records_;
  std::array<double, D> origin_{}, scale_{};
  std::vector<std::uint64_t> keys_;
  std::uint64_t box_tests_ = 0, candidates_ = 0, unique_ = 0;
  double node_volume_ = 0;
};

extern template class linear_kdtree<2, float>;
extern template class linear_kdtree<2, double>;
extern template class linear_kdtree<3, float>;
extern template class linear_kdtree<3, double>;

}  // namespace hhg
