// hhg/brute_force.hpp: the all-pairs method. It is the oracle every other
// method is tested against, the fallback of the hash grids below their
// activation threshold, and the baseline of every benchmark.
//
// Storage: an object_table (one dense array of boxes and handles).
// insert, move, remove: O(1). Detection: N(N-1)/2 box tests, no allocation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "hhg/box.hpp"
#include "hhg/broad_phase.hpp"
#include "hhg/detail/table_method.hpp"
#include "hhg/handle.hpp"

namespace hhg {

/// insert, move, remove, get, contains, size, clear and update come from
/// detail::table_method (the object_table shared with the hashing methods).
template <int D, class T>
class brute_force : public detail::table_method<D, T> {
 public:
  using typename detail::table_method<D, T>::box_type;
  /// The method's name in `hhg pairs --method`, the benchmark and test names.
  static constexpr const char* method_name = "brute";

  void for_each_pair(pair_callback f) {
    const auto boxes = this->table_.boxes();
    const auto ids = this->table_.ids();
    const std::size_t n = boxes.size();
    for (std::size_t i = 0; i < n; ++i) {
      const box_type& a = boxes[i];
      for (std::size_t j = i + 1; j < n; ++j) {
        if (overlaps(a, boxes[j])) f(ids[i], ids[j]);
      }
    }
    box_tests_ = n < 2 ? 0 : static_cast<std::uint64_t>(n) * (n - 1) / 2;
  }

  void find_pairs(std::vector<handle_pair>& out) {
    out.clear();
    for_each_pair([&out](handle a, handle b) { out.push_back({a, b}); });
  }

  /// Box tests done by the last detection.
  std::uint64_t box_tests() const noexcept { return box_tests_; }
  /// Bytes of capacity held.
  std::size_t bytes() const noexcept { return this->table_.bytes(); }

 private:
  std::uint64_t box_tests_ = 0;
};

}  // namespace hhg
