// hhg/queries.hpp: query shapes, their exact predicates, and the visitor types
// used by the queries of hhg::hash_grids (see docs/queries.md).
//
// Every predicate here is THE definition of a match: the structures answer
// exactly the set of objects these functions accept (tests compare against
// brute force with the same functions). All arithmetic is done in double, also
// for float boxes. Every function is O(D), allocation free and thread safe.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <limits>
#include <type_traits>

#include "hhg/box.hpp"
#include "hhg/function_ref.hpp"
#include "hhg/handle.hpp"

namespace hhg {

/// A ray or segment: the points origin + t * direction for 0 <= t <= max_t.
/// With a unit direction t is the Euclidean distance from the origin. max_t may
/// be +infinity (a ray); a zero direction is the single point `origin`.
/// Origin and direction must be finite, max_t >= 0 and not NaN.
template <int D, class T>
struct ray {
  std::array<T, D> origin{};
  std::array<T, D> direction{};
  double max_t = std::numeric_limits<double>::infinity();
};

/// One object crossed by a ray: its handle and the ray parameter t at which the
/// ray enters its box (0 when the origin is inside the box).
struct ray_hit {
  handle id;
  double t = 0;
  friend constexpr bool operator==(const ray_hit&, const ray_hit&) = default;
};

/// Closed box-sphere test: true when some point of the box is at Euclidean
/// distance <= radius from `center` (a zero radius is a point test). Computed
/// as sum_i d_i^2 <= radius^2 in double, d_i the distance from the centre to
/// the box's interval on axis i.
template <int D, class T>
constexpr double box_distance_squared(const box<D, T>& b, const std::type_identity_t<std::array<T, D>>& p) noexcept {
  double s = 0;
  for (int i = 0; i < D; ++i) {
    const double lo = b.min[i], hi = b.max[i], v = p[i];
    const double d = v < lo ? lo - v : (v > hi ? v - hi : 0.0);
    s += d * d;
  }
  return s;
}

template <int D, class T>
constexpr bool box_meets_sphere(const box<D, T>& b, const std::type_identity_t<std::array<T, D>>& center, double radius) noexcept {
  return box_distance_squared(b, center) <= radius * radius;
}

/// True when the box contains the point (closed).
template <int D, class T>
constexpr bool box_contains_point(const box<D, T>& b, const std::type_identity_t<std::array<T, D>>& p) noexcept {
  for (int i = 0; i < D; ++i)
    if (!(b.min[i] <= p[i] && p[i] <= b.max[i])) return false;
  return true;
}

/// Slab test: the parameter t in [0, r.max_t] at which the ray enters the
/// closed box, or a negative value when it misses. An axis with direction 0
/// only checks that the origin lies in the box's interval on that axis
/// (closed: a ray grazing a face or an edge hits). Infinite box coordinates are
/// fine.
template <int D, class T>
inline double ray_box_entry(const ray<D, T>& r, const box<D, T>& b) noexcept {
  double tn = 0, tf = r.max_t;
  for (int i = 0; i < D; ++i) {
    const double o = r.origin[i], d = r.direction[i], lo = b.min[i], hi = b.max[i];
    if (d == 0) {
      if (o < lo || o > hi) return -1;
      continue;
    }
    double t1 = (lo - o) / d, t2 = (hi - o) / d;
    if (d < 0) std::swap(t1, t2);
    if (t1 > tn) tn = t1;
    if (t2 < tf) tf = t2;
    if (tn > tf) return -1;
  }
  return tn;
}

/// The box enclosing an object's motion over a step: the union of its box at
/// the start and at the end of the step (`001_` section 3.2). Inserting or
/// querying the swept box finds everything the object can meet on the way
/// when it moves along a straight line, so fast objects are not missed.
template <int D, class T>
constexpr box<D, T> swept_box(const box<D, T>& from, const box<D, T>& to) noexcept {
  box<D, T> s;
  for (int i = 0; i < D; ++i) {
    s.min[i] = from.min[i] < to.min[i] ? from.min[i] : to.min[i];
    s.max[i] = from.max[i] > to.max[i] ? from.max[i] : to.max[i];
  }
  return s;
}

/// The swept box of `b` translated by `displacement` over the step.
template <int D, class T>
constexpr box<D, T> swept_box(const box<D, T>& b, const std::type_identity_t<std::array<T, D>>& displacement) noexcept {
  box<D, T> to = b;
  for (int i = 0; i < D; ++i) {
    to.min[i] = b.min[i] + displacement[i];
    to.max[i] = b.max[i] + displacement[i];
  }
  return swept_box(b, to);
}

/// Region query visitor: called once per matching object; return false to stop.
using object_visitor = function_ref<bool(handle)>;
/// Ray visitor: called once per crossed object with its entry parameter (not
/// in order); return false to stop.
using ray_visitor = function_ref<bool(handle, double)>;
/// Closest-hit callback: the exact (narrow-phase) test of one candidate whose
/// box the ray enters at or before `max_t`. Returns the parameter t <= max_t
/// at which the object itself is hit, or a negative value for a miss. A hit
/// shortens the ray for the remaining candidates.
using exact_ray_test = function_ref<double(handle, double max_t)>;

}  // namespace hhg
