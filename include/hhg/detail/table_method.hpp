// hhg/detail/table_method.hpp: the dynamic side shared by methods that keep
// their boxes in an object_table and build their index at detection (uniform,
// multilevel and pivot hashing). Not public API: the methods derive from it.
#pragma once

#include <cstddef>

#include "hhg/box.hpp"
#include "hhg/handle.hpp"
#include "hhg/object_table.hpp"

namespace hhg::detail {

template <int D, class T>
class table_method {
 public:
  using box_type = box<D, T>;
  static constexpr int dimension = D;
  using scalar = T;

  /// O(1). Throws hhg::error for NaN or min > max; nothing changes then.
  handle insert(const box_type& b) { return table_.insert(b, "insert"); }
  /// O(1). Throws hhg::error for a null, stale or unknown handle.
  void remove(handle h) { table_.remove(h, "remove"); }
  /// O(1). Throws hhg::error for a bad handle or box; nothing changes then.
  void move(handle h, const box_type& b) { table_.move(h, b, "move"); }
  box_type get(handle h) const { return table_.get(h, "get"); }
  bool contains(handle h) const noexcept { return table_.contains(h); }
  std::size_t size() const noexcept { return table_.size(); }
  void clear() noexcept { table_.clear(); }
  /// Nothing to do: the index is built by the detection.
  void update() {}

 protected:
  object_table<D, T> table_;
};

}  // namespace hhg::detail
