// hhg/brute_force.hpp: the all-pairs method. It is the oracle every other
// method is tested against, the fallback of the hash grids below their
// activation threshold, and the baseline of every benchmark.
//
// Storage: an object_table (one dense array of boxes and handles).
// insert, move, remove: O(1). Detection: N(N-1)/2 box tests, no allocation.
#pragma once

#include <cstdint>
#include <vector>

#include "hhg/box.hpp"
#include "hhg/broad_phase.hpp"
#include "hhg/handle.hpp"
#include "hhg/object_table.hpp"

namespace hhg {

template <int D, class T>
class brute_force {
 public:
  using box_type = box<D, T>;
  static constexpr int dimension = D;
  using scalar = T;
  /// The method's name in `hhg pairs --method`, the benchmark and test names.
  static constexpr const char* method_name = "brute";

  handle insert(const box_type& b) { return table_.insert(b, "brute_force::insert"); }
  void remove(handle h) { table_.remove(h, "brute_force::remove"); }
  void move(handle h, const box_type& b) { table_.move(h, b, "brute_force::move"); }
  box_type get(handle h) const { return table_.get(h, "brute_force::get"); }
  bool contains(handle h) const noexcept { return table_.contains(h); }
  std::size_t size() const noexcept { return table_.size(); }
  void update() {}

  void for_each_pair(pair_callback f) {
    const auto boxes = table_.boxes();
    const auto ids = table_.ids();
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

  void clear() { table_.clear(); }

  /// Box tests done by the last detection.
  std::uint64_t box_tests() const noexcept { return box_tests_; }
  /// Bytes of capacity held.
  std::size_t bytes() const noexcept { return table_.bytes(); }

 private:
  object_table<D, T> table_;
  std::uint64_t box_tests_ = 0;
};

}  // namespace hhg
