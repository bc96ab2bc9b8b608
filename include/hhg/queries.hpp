// hhg/queries.hpp: query shapes, their exact predicates, and the visitor types
// used by the queries of hhg::hash_grids (see docs/queries.md).
//
// Every predicate here is THE definition of a match: the structures answer
// exactly the set of objects these functions accept (tests compare against
// brute force with the same functions, and tests/test_exact_queries.cpp
// against rational arithmetic). The predicates are exact for every finite
// input: they decide as real arithmetic on the doubles would (float boxes are
// converted to double, exactly), never by a rounded distance or quotient.
// Every function is O(D), allocation free and thread safe.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "hhg/box.hpp"
#include "hhg/exact.hpp"
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

/// Squared Euclidean distance from `p` to the box, computed in double: an
/// approximation (it overflows beyond ~1e154 and underflows below ~1e-154).
/// The queries never use it to decide; they compare exactly
/// (box_meets_sphere, compare_box_distance).
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

namespace detail {

// Per axis, the box coordinate nearest to v (both 0 where v is inside the
// interval, an infinite v included): the distance is exactly |v - near|.
// Returns false when the distance is +infinity (v or that coordinate infinite
// on an axis where v is outside).
template <int D, class T>
inline bool nearest_coords(const box<D, T>& b, const std::type_identity_t<std::array<T, D>>& p,
                           std::type_identity_t<std::array<double, D>>& near,
                           std::type_identity_t<std::array<double, D>>& from) noexcept {
  for (int i = 0; i < D; ++i) {
    const double lo = b.min[i], hi = b.max[i], v = p[i];
    if (lo <= v && v <= hi) {  // inside on this axis: distance 0 (an infinite v included)
      near[i] = from[i] = 0;
      continue;
    }
    from[i] = v;
    near[i] = v < lo ? lo : hi;
    if (!std::isfinite(near[i]) || !std::isfinite(v)) return false;
  }
  return true;
}

}  // namespace detail

/// Closed box-sphere test, exact: true when some point of the box is at
/// Euclidean distance <= radius from `center` (a zero radius is a point test),
/// i.e. sum_i d_i^2 <= radius^2 in exact arithmetic, d_i the exact distance
/// from the centre to the box's interval on axis i. Radius >= 0 (+infinity
/// meets every box); an infinite centre coordinate is at distance 0 from an
/// interval reaching to it, else infinitely far.
template <int D, class T>
inline bool box_meets_sphere(const box<D, T>& b, const std::type_identity_t<std::array<T, D>>& center,
                             double radius) noexcept {
  std::array<double, D> near{}, from{};
  if (!detail::nearest_coords(b, center, near, from)) return false;
  if (!std::isfinite(radius)) return true;
  const double zero = 0;
  return exact::compare_sum_squares(from.data(), near.data(), D, &radius, &zero, 1) <= 0;
}

/// The exact sign (-1, 0, 1) of dist(a, p)^2 - dist(b, p)^2 (box distances;
/// infinite distances compare equal to each other). The order of nearest().
template <int D, class T>
inline int compare_box_distance(const box<D, T>& a, const box<D, T>& b,
                                const std::type_identity_t<std::array<T, D>>& p) noexcept {
  std::array<double, D> na{}, fa{}, nb{}, fb{};
  const bool ia = !detail::nearest_coords(a, p, na, fa), ib = !detail::nearest_coords(b, p, nb, fb);
  if (ia || ib) return ia == ib ? 0 : (ia ? 1 : -1);
  return exact::compare_sum_squares(fa.data(), na.data(), D, fb.data(), nb.data(), D);
}

/// True when the box contains the point (closed).
template <int D, class T>
constexpr bool box_contains_point(const box<D, T>& b, const std::type_identity_t<std::array<T, D>>& p) noexcept {
  for (int i = 0; i < D; ++i)
    if (!(b.min[i] <= p[i] && p[i] <= b.max[i])) return false;
  return true;
}

namespace detail {

// A ray parameter (a - b) / d with d > 0, or +-infinity (inf = +-1).
struct ray_param {
  double a = 0, b = 0, d = 1;
  int inf = 0;
};

inline int compare_param(const ray_param& x, const ray_param& y) noexcept {
  if (x.inf != 0 || y.inf != 0) return x.inf == y.inf ? 0 : (x.inf < y.inf ? -1 : 1);
  const exact::term t[2] = {exact::make_term(x.a, x.b, y.d, 0), exact::make_term(y.a, y.b, 0, x.d)};
  return exact::sign_of_sum(t, 2);
}

inline bool odd_double(double c) noexcept {
  std::uint64_t u = 0;
  std::memcpy(&u, &c, sizeof u);
  return (u & 1) != 0;
}

// (c1 + c2) / 2 for adjacent non-negative doubles c1 < c2 (c2 = 2^1024 when
// c1 is the largest double).
inline exact::dyadic midpoint(double c1, double c2, bool c2_overflow) noexcept {
  const exact::dyadic x = exact::to_dyadic(c1), y = c2_overflow ? exact::dyadic{1, 1024} : exact::to_dyadic(c2);
  if (x.m == 0) return {y.m, y.e - 1};
  const int e = std::min(x.e, y.e);
  return {(x.m << (x.e - e)) + (y.m << (y.e - e)), e - 1};
}

// The sign of (a - b) / d - mu.
inline int compare_to(const ray_param& x, const exact::dyadic& mu) noexcept {
  const exact::term t[2] = {{exact::to_dyadic(x.a), exact::to_dyadic(x.b), {1, 0}, {0, 0}},
                            {mu, {0, 0}, {0, 0}, exact::to_dyadic(x.d)}};
  return exact::sign_of_sum(t, 2);
}

// (a - b) / d > 0, finite, rounded to nearest (ties to even; +inf above the
// largest double's rounding range): exact, by comparisons with midpoints.
inline double round_param(const ray_param& x) noexcept {
  const double big = std::max(std::fabs(x.a), std::fabs(x.b));
  const int k1 = std::ilogb(big), k2 = std::ilogb(x.d);
  const double num = std::ldexp(x.a, -k1) - std::ldexp(x.b, -k1);
  double c = std::ldexp(num / std::ldexp(x.d, -k2), k1 - k2);
  constexpr double kMax = std::numeric_limits<double>::max();
  if (!(c >= 0)) c = 0;
  if (c > kMax) c = kMax;
  for (;;) {
    const bool top = c == kMax;
    const double up = top ? kMax : std::nextafter(c, kMax);
    const int s = compare_to(x, midpoint(c, up, top));
    if (s > 0 || (s == 0 && odd_double(c))) {
      if (top) return std::numeric_limits<double>::infinity();
      c = up;
      continue;
    }
    if (c > 0) {
      const double dn = std::nextafter(c, 0.0);
      const int s2 = compare_to(x, midpoint(dn, c, false));
      if (s2 < 0 || (s2 == 0 && odd_double(c))) {
        c = dn;
        continue;
      }
    }
    return c;
  }
}

// The exact slab test (see ray_box_entry), for any finite ray.
template <int D, class T>
double ray_box_entry_exact(const ray<D, T>& r, const box<D, T>& b) noexcept {
  constexpr double inf = std::numeric_limits<double>::infinity();
  ray_param tn{0, 0, 1, 0}, tf{r.max_t, 0, 1, 0};
  if (r.max_t == inf) tf = {0, 0, 1, 1};
  for (int i = 0; i < D; ++i) {
    const double o = r.origin[i], d = r.direction[i], lo = b.min[i], hi = b.max[i];
    if (d == 0) {
      if (o < lo || o > hi) return -1;
      continue;
    }
    const double ad = std::fabs(d);
    // entry: (near - o) / d, exit: (far - o) / d, as (a - b) / |d|
    const double n = d > 0 ? lo : hi, f = d > 0 ? hi : lo;
    ray_param en, ex;
    if (std::isinf(n))
      en.inf = (d > 0) == (n > 0) ? 1 : -1;
    else
      en = d > 0 ? ray_param{n, o, ad, 0} : ray_param{o, n, ad, 0};
    if (std::isinf(f))
      ex.inf = (d > 0) == (f > 0) ? 1 : -1;
    else
      ex = d > 0 ? ray_param{f, o, ad, 0} : ray_param{o, f, ad, 0};
    if (compare_param(en, tn) > 0) tn = en;
    if (compare_param(ex, tf) < 0) tf = ex;
  }
  if (compare_param(tn, tf) > 0) return -1;
  if (tn.inf > 0) return inf;
  if (tn.a == tn.b) return 0;
  return round_param(tn);
}

// RN((n - o) / d) for a quotient q = fl(fl(n - o) / d) in [2^-1000, 2^1000];
// NaN when undecided (then the exact path rounds).
inline double round_entry_fast(double n, double o, double d, double q) noexcept {
  const double s = n - o;
  const double e = exact::detail::two_sum_err(n, -o, s);
  if (e == 0) return q;  // one rounding: q = RN(s / d)
  if (!(std::fabs(s) >= 0x1p-960)) return std::numeric_limits<double>::quiet_NaN();
  const double ss = d > 0 ? s : -s, ee = d > 0 ? e : -e, dd = std::fabs(d);
  const double rem = std::fma(-q, dd, ss);  // exact: the remainder of a rounded quotient
  const double R = rem + ee;                // (t - q) * dd, relative error 2^-53
  // q > 0 is normal here: its neighbours are the adjacent bit patterns
  const auto step = [](double x, int k) {
    std::uint64_t u = 0;
    std::memcpy(&u, &x, sizeof u);
    u = k > 0 ? u + 1 : u - 1;
    std::memcpy(&x, &u, sizeof u);
    return x;
  };
  for (const double c : {q, step(q, 1), step(q, -1)}) {
    const double shift = (c - q) * dd;  // exact (power of two times dd)
    const double g = R - shift;
    const double lo = (step(c, -1) - c) * 0.5 * dd, hi = (step(c, 1) - c) * 0.5 * dd;
    const double m = (std::fabs(R) + std::fabs(shift) + std::fabs(hi)) * 0x1p-45;
    if (g > lo + m && g < hi - m) return c;
  }
  return std::numeric_limits<double>::quiet_NaN();
}

// True when fl(fl(n - o) / d) = t is the exact quotient (both steps exact).
inline bool exact_quotient(double n, double o, double d, double t) noexcept {
  const double s = n - o;
  return exact::detail::two_sum_err(n, -o, s) == 0 && std::fma(t, d, -s) == 0;
}

// The fast path's tn and tf are exact (every quotient of a finite coordinate
// was computed without rounding: lattices, axis-aligned rays, grazing rays).
template <int D, class T>
bool all_quotients_exact(const ray<D, T>& r, const box<D, T>& b) noexcept {
  for (int i = 0; i < D; ++i) {
    const double o = r.origin[i], d = r.direction[i];
    if (d == 0) continue;
    for (const double c : {static_cast<double>(b.min[i]), static_cast<double>(b.max[i])})
      if (std::isfinite(c) && !exact_quotient(c, o, d, (c - o) / d)) return false;
  }
  return true;
}

inline bool param_in_range(double t, bool nonzero) noexcept {
  if (t == 0) return !nonzero;
  const double a = std::fabs(t);
  return a >= 0x1p-1000 && a <= 0x1p1000;
}

}  // namespace detail

/// Slab test, exact: the ray parameter at which the ray enters the closed box,
/// or a negative value when it misses. With the exact entry parameter
/// tn = max(0, max_i (near_i - o_i) / d_i) and exit parameter
/// tf = min(max_t, min_i (far_i - o_i) / d_i) (rationals of the doubles, no
/// rounding), the ray hits when tn <= tf; an axis with direction 0 only checks
/// that the origin lies in the box's interval on that axis (closed: a ray
/// grazing a face or an edge hits). The value returned is tn rounded to the
/// nearest double (ties to even; +infinity when tn is beyond the largest
/// double, or an entry at an infinite box coordinate), so it is monotone in
/// the exact entry parameter and never above max_t. Infinite box coordinates
/// are fine. Fast in double when every quotient is in [2^-1000, 2^1000] and
/// the decision is clear by 2^-49 relative; exact big-integer arithmetic
/// otherwise (hhg/exact.hpp).
template <int D, class T>
inline double ray_box_entry(const ray<D, T>& r, const box<D, T>& b) noexcept {
  double tn = 0, tf = r.max_t;
  bool safe = true;
  std::array<double, D> ent{};
  for (int i = 0; i < D; ++i) {
    const double o = r.origin[i], d = r.direction[i], lo = b.min[i], hi = b.max[i];
    if (d == 0) {
      if (o < lo || o > hi) return -1;
      ent[i] = -std::numeric_limits<double>::infinity();
      continue;
    }
    const double n = d > 0 ? lo : hi, f = d > 0 ? hi : lo;
    const double t1 = (n - o) / d, t2 = (f - o) / d;
    if (std::isfinite(n)) safe = safe && detail::param_in_range(t1, n != o);
    if (std::isfinite(f)) safe = safe && detail::param_in_range(t2, f != o);
    ent[i] = t1;
    if (t1 > tn) tn = t1;
    if (t2 < tf) tf = t2;
  }
  if (!safe) return detail::ray_box_entry_exact(r, b);
  // Every computed quotient has the exact sign and a relative error below
  // 2^-52 (no overflow, no underflow); box coordinates at infinity give exact
  // infinities.
  constexpr double lo_f = 1 - 0x1p-49, hi_f = 1 + 0x1p-49;
  if (!(tn <= tf)) {
    if (tn == 0 || tf <= 0 || tn * lo_f > tf * hi_f) return -1;
    return detail::all_quotients_exact(r, b) ? -1 : detail::ray_box_entry_exact(r, b);
  }
  if (tn == 0) return 0;
  if (!(tf == std::numeric_limits<double>::infinity() || tn * hi_f < tf * lo_f))
    return detail::all_quotients_exact(r, b) ? tn : detail::ray_box_entry_exact(r, b);
  if (tn == std::numeric_limits<double>::infinity()) return tn;
  // the entry, rounded to nearest: every axis whose entry can be the largest
  double best = 0;
  for (int i = 0; i < D; ++i) {
    if (!(ent[i] >= tn * lo_f)) continue;
    const double d = r.direction[i];
    const double n = d > 0 ? b.min[i] : b.max[i];
    const double c = detail::round_entry_fast(n, r.origin[i], d, ent[i]);
    if (std::isnan(c)) return detail::ray_box_entry_exact(r, b);
    best = std::max(best, c);
  }
  return best;
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
