// hhg/periodic.hpp: overlapping pairs in a periodic domain (docs/distributed.md, Periodic domains).
//
// A domain box [lo, hi) with any subset of its axes periodic (period L = hi - lo
// on those axes). The image of box b under an integer shift s is b moved by
// s[i] * L[i] on every periodic axis (s[i] = 0 on the others), computed as
// periodic_image() does. A pair (a, b, s) is reported when box a overlaps
// (closed) the image of box b under s:
//  - for a < b every such shift s is reported (two objects that overlap
//    through two different images are reported twice, once per shift);
//  - an object is paired with its own image only for s != 0 with its first
//    nonzero component positive ((a, a, s) and (a, a, -s) are the same pair);
//  - (a, b, s) with a > b is the pair (b, a, -s): reported in that form only.
// Boxes need not lie inside the domain. On a periodic axis a box must be finite
// within 1024 periods of the domain, and span at most 64 periods with at most
// 65536 images near the domain
// (otherwise hhg::error(errc::out_of_domain)); other axes take any box,
// infinite included.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "hhg/box.hpp"
#include "hhg/config.hpp"

namespace hhg {

/// The most images near the domain one box may have (periodic_box_problem).
inline constexpr std::uint64_t periodic_max_images = std::uint64_t{1} << 16;

template <int D, class T>
struct periodic_domain {
  /// The domain [min, max) on the periodic axes (ignored on the others).
  box<D, T> bounds{};
  /// Which axes wrap around.
  std::array<bool, D> periodic{};
};

template <int D>
struct periodic_pair {
  std::uint32_t a = 0;                  ///< index of the first box
  std::uint32_t b = 0;                  ///< index of the second box (a <= b)
  std::array<std::int32_t, D> shift{};  ///< box a overlaps b's image under this shift
  friend constexpr bool operator==(const periodic_pair&, const periodic_pair&) = default;
  friend constexpr auto operator<=>(const periodic_pair&, const periodic_pair&) = default;
};

/// The image of `b` under `shift`: on each periodic axis i, min and max plus
/// T(shift[i]) * (bounds.max[i] - bounds.min[i]), computed in T. The one
/// definition of an image: periodic_pairs reports exactly the shifts for which
/// overlaps(a, periodic_image(b, shift, d)) holds.
template <int D, class T>
box<D, T> periodic_image(const box<D, T>& b, const std::type_identity_t<std::array<std::int32_t, D>>& shift,
                         const periodic_domain<D, T>& d) {
  box<D, T> r = b;
  for (int i = 0; i < D; ++i) {
    if (!d.periodic[i] || shift[i] == 0) continue;
    const T offset = static_cast<T>(shift[i]) * (d.bounds.max[i] - d.bounds.min[i]);
    r.min[i] = b.min[i] + offset;
    r.max[i] = b.max[i] + offset;
  }
  return r;
}

/// Throws hhg::error(errc::bad_config) for a periodic axis whose bounds are not
/// finite with min < max (and a finite period).
template <int D, class T>
void validate_domain(const periodic_domain<D, T>& d);

/// Empty when `b` fits the limits above on the periodic axes of `d` (finite,
/// at most 64 periods wide, within 1024 periods of the domain, at most 65536
/// images near it); otherwise what is wrong ("on periodic axis 0 the box ...").
/// NaN and min > max are not checked here (check_box). The one statement of
/// the limits: periodic_pairs, distributed_hash_grids and the tools use it.
template <int D, class T>
std::string periodic_box_problem(const periodic_domain<D, T>& d, const box<D, T>& b);

/// Clears `out` and appends every periodic pair (see above), sorted by (a, b,
/// shift). Candidates come from an hhg::hash_grids of the boxes' images near
/// the domain (slightly enlarged), each candidate pair is then tested exactly
/// for every shift in its range. Throws hhg::error for a bad domain
/// (bad_config), a bad box (nan_coordinate, inverted_box) or a box the domain
/// cannot hold (out_of_domain); `out` is left empty then.
template <int D, class T>
void periodic_pairs(const periodic_domain<D, T>& d, std::span<const box<D, T>> boxes,
                    std::vector<periodic_pair<D>>& out, const config& c = {});

}  // namespace hhg
