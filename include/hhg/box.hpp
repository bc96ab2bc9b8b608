// hhg/box.hpp: the axis-aligned box every hhg method stores, and the overlap rule.
//
// Overlap is CLOSED: two boxes overlap when their intervals intersect on every axis,
// boundaries included. Boxes that only touch (a face, an edge or a corner) overlap.
// A zero-size box (min == max) is a point and overlaps every box that contains it.
// Infinite coordinates are allowed (planes, half-spaces, "everything"); NaN and
// min > max are not (see check_box).
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <type_traits>

namespace hhg {

/// An axis-aligned box in D dimensions (D = 2 or 3) with coordinates of type T
/// (float or double). `min[i] <= max[i]` on every axis for a valid box.
template <int D, class T>
struct box {
  static_assert(D == 2 || D == 3, "hhg supports 2D and 3D boxes only");
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "hhg boxes use float or double coordinates");
  static constexpr int dimension = D;
  using scalar = T;

  std::array<T, D> min{};
  std::array<T, D> max{};

  friend constexpr bool operator==(const box&, const box&) = default;
};

/// Closed overlap test: true when the boxes share at least one point.
/// O(D), no allocation, thread safe.
template <int D, class T>
constexpr bool overlaps(const box<D, T>& a, const box<D, T>& b) noexcept {
  for (int i = 0; i < D; ++i) {
    if (a.max[i] < b.min[i] || b.max[i] < a.min[i]) return false;
  }
  return true;
}

/// True when every coordinate is finite. A box with an infinite coordinate is
/// "unbounded": hhg keeps such boxes apart and tests them against all others.
template <int D, class T>
constexpr bool is_bounded(const box<D, T>& b) noexcept {
  for (int i = 0; i < D; ++i) {
    if (!std::isfinite(b.min[i]) || !std::isfinite(b.max[i])) return false;
  }
  return true;
}

/// Longest edge of a bounded box: the thesis' "object size".
template <int D, class T>
constexpr T longest_edge(const box<D, T>& b) noexcept {
  T size = 0;
  for (int i = 0; i < D; ++i) size = b.max[i] - b.min[i] > size ? b.max[i] - b.min[i] : size;
  return size;
}

/// What is wrong with a box, if anything.
enum class box_problem { none, nan_coordinate, inverted };

/// Reports the first problem found and the axis it was found on (or -1).
template <int D, class T>
constexpr box_problem check_box(const box<D, T>& b, int* axis = nullptr) noexcept {
  for (int i = 0; i < D; ++i) {
    if (std::isnan(b.min[i]) || std::isnan(b.max[i])) {
      if (axis) *axis = i;
      return box_problem::nan_coordinate;
    }
  }
  for (int i = 0; i < D; ++i) {
    if (b.min[i] > b.max[i]) {
      if (axis) *axis = i;
      return box_problem::inverted;
    }
  }
  if (axis) *axis = -1;
  return box_problem::none;
}

}  // namespace hhg
