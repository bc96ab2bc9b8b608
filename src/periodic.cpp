// hhg::periodic_pairs (hhg/periodic.hpp; docs/distributed.md, Periodic domains).
//
// Completeness: if box a overlaps the image b + sL at a point x, let t be the
// shift that brings x into the domain [lo, hi). Then a + tL and b + (s + t)L
// both contain x + tL, a point of the domain, so both images are among those
// inserted (every image that reaches within L/4 of the domain), and they
// overlap: the pair is a candidate. The images are enlarged by delta (much more
// than the rounding of their computation), so rounding cannot hide a candidate.
// Each candidate pair is then tested with the one canonical image computation
// (periodic_image) for every shift in a range one wider than needed on each side.
#include "hhg/periodic.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "hhg/error.hpp"
#include "hhg/hash_grids.hpp"
#include "periodic_limits.hpp"

namespace hhg {

namespace {
constexpr double max_span_periods = 64;        // a box spans at most this many periods on an axis
constexpr double max_distance_periods = 1024;  // and lies within this many periods of the domain

// The shifts t of a box [mn, mx] whose image meets [lo - L/4, hi + L/4]:
// ceil((lo - L/4 - mx) / L) to floor((hi + L/4 - mn) / L), the differences taken
// of quarters (exact) and multiplied back: for a domain near the largest double
// they overflowed, and the cast of an infinite shift gave a spurious "more
// than 65536 images" (until stop 79). The box lies within 1024 periods (checked
// first), so the shifts fit.
std::int64_t first_shift(double lo, double L, double mx) {
  return static_cast<std::int64_t>(std::ceil((lo * 0.25 - L / 16 - mx * 0.25) / L * 4));
}
std::int64_t last_shift(double hi, double L, double mn) {
  return static_cast<std::int64_t>(std::floor((hi * 0.25 + L / 16 - mn * 0.25) / L * 4));
}
}  // namespace

namespace detail {
std::string too_many_images_problem() {
  return "the box has more than " + std::to_string(periodic_max_images) + " images";
}
}  // namespace detail

template <int D, class T>
void validate_domain(const periodic_domain<D, T>& d) {
  for (int i = 0; i < D; ++i) {
    if (!d.periodic[i]) continue;
    const T lo = d.bounds.min[i], hi = d.bounds.max[i];
    if (!std::isfinite(lo) || !std::isfinite(hi) || !(lo < hi) || !std::isfinite(hi - lo))
      throw error(errc::bad_config, "hhg::periodic_domain: periodic axis " + std::to_string(i) +
                                        " needs finite bounds with min < max (a finite period)");
  }
}

template <int D, class T>
std::string periodic_box_problem(const periodic_domain<D, T>& d, const box<D, T>& b) {
  std::uint64_t images = 1;
  for (int i = 0; i < D; ++i) {
    if (!d.periodic[i]) continue;
    const double lo = d.bounds.min[i], hi = d.bounds.max[i];
    const double L = static_cast<double>(d.bounds.max[i] - d.bounds.min[i]);
    const double mn = b.min[i], mx = b.max[i];
    if (!std::isfinite(mn) || !std::isfinite(mx) || mx - mn > max_span_periods * L ||
        mn < lo - max_distance_periods * L || mx > hi + max_distance_periods * L)
      return "on periodic axis " + std::to_string(i) +
             " the box is infinite, spans more than 64 periods, or lies more than 1024 periods from the domain";
    const auto t_lo = first_shift(lo, L, mx);
    const auto t_hi = last_shift(hi, L, mn);
    images *= static_cast<std::uint64_t>(std::max(t_lo, t_hi) - t_lo + 1);
    if (images > periodic_max_images) return detail::too_many_images_problem();
  }
  return {};
}

template <int D, class T>
void periodic_pairs(const periodic_domain<D, T>& d, std::span<const box<D, T>> boxes,
                    std::vector<periodic_pair<D>>& out, const config& c) {
  out.clear();
  validate_domain(d);
  validate_config(c);
  if (boxes.size() >= std::numeric_limits<std::uint32_t>::max())
    throw error(errc::capacity, "hhg::periodic_pairs: too many boxes");
  constexpr double eps = std::numeric_limits<T>::epsilon();
  std::array<double, D> lo{}, hi{}, period{}, delta{};
  for (int i = 0; i < D; ++i) {
    if (!d.periodic[i]) continue;
    lo[i] = d.bounds.min[i];
    hi[i] = d.bounds.max[i];
    period[i] = static_cast<double>(d.bounds.max[i] - d.bounds.min[i]);  // as periodic_image computes it
    // (term by term: the sum overflowed for a period above ~8.7e304)
    delta[i] = period[i] / 1024 + 64 * eps * std::abs(lo[i]) + 64 * eps * std::abs(hi[i]) +
               (64 * eps * (2 * max_distance_periods + 4)) * period[i];
  }
  // Check every box first: nothing is reported for a bad input.
  std::vector<std::array<std::int64_t, 2 * D>> ranges(boxes.size());
  for (std::size_t k = 0; k < boxes.size(); ++k) {
    const box<D, T>& b = boxes[k];
    int axis = -1;
    const box_problem p = check_box(b, &axis);
    if (p != box_problem::none)
      throw error(p == box_problem::nan_coordinate ? errc::nan_coordinate : errc::inverted_box,
                  "hhg::periodic_pairs: box " + std::to_string(k) +
                      (p == box_problem::nan_coordinate ? " has a NaN coordinate" : " has min > max") + " on axis " +
                      std::to_string(axis));
    // the limits and their message: periodic_box_problem's, as the distributed
    // version reports them (one text; until stop 79 this loop had its own)
    if (const std::string problem = periodic_box_problem(d, b); !problem.empty())
      throw error(errc::out_of_domain, "hhg::periodic_pairs: box " + std::to_string(k) + ": " + problem);
    for (int i = 0; i < D; ++i) {
      if (!d.periodic[i]) {
        ranges[k][2 * i] = ranges[k][2 * i + 1] = 0;
        continue;
      }
      const double mn = b.min[i], mx = b.max[i], L = period[i];
      const auto t_lo = first_shift(lo[i], L, mx);
      ranges[k][2 * i] = t_lo;
      ranges[k][2 * i + 1] = std::max(t_lo, last_shift(hi[i], L, mn));
    }
  }

  // Candidates: the enlarged images near the domain in a hash grid.
  hash_grids<D, T> grid(c);
  std::vector<std::uint32_t> owner;
  std::vector<box<D, T>> images;
  for (std::size_t k = 0; k < boxes.size(); ++k) {
    std::array<std::int32_t, D> t{};
    for (int i = 0; i < D; ++i) t[i] = static_cast<std::int32_t>(ranges[k][2 * i]);
    while (true) {
      box<D, T> im = periodic_image(boxes[k], t, d);
      for (int i = 0; i < D; ++i) {
        if (!d.periodic[i]) continue;
        im.min[i] = static_cast<T>(static_cast<double>(im.min[i]) - delta[i]);
        im.max[i] = static_cast<T>(static_cast<double>(im.max[i]) + delta[i]);
      }
      images.push_back(im);
      owner.push_back(static_cast<std::uint32_t>(k));
      int i = 0;
      for (; i < D; ++i) {
        if (t[i] < ranges[k][2 * i + 1]) {
          ++t[i];
          break;
        }
        t[i] = static_cast<std::int32_t>(ranges[k][2 * i]);
      }
      if (i == D) break;
    }
  }
  const std::vector<handle> hs = grid.insert(std::span<const box<D, T>>(images));
  std::vector<std::uint32_t> owner_of(images.size());
  for (std::size_t k = 0; k < hs.size(); ++k) {
    if (hs[k].index >= owner_of.size()) owner_of.resize(hs[k].index + 1);
    owner_of[hs[k].index] = owner[k];
  }
  std::vector<std::uint64_t> candidates;
  grid.for_each_pair([&](handle x, handle y) {
    std::uint64_t a = owner_of[x.index], b = owner_of[y.index];
    if (b < a) std::swap(a, b);
    candidates.push_back(a << 32 | b);
  });
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());

  // Exact test of every shift in each candidate's range.
  for (const std::uint64_t key : candidates) {
    const auto ia = static_cast<std::uint32_t>(key >> 32), ib = static_cast<std::uint32_t>(key);
    const box<D, T>& a = boxes[ia];
    const box<D, T>& b = boxes[ib];
    std::array<std::int32_t, D> s_lo{}, s_hi{}, s{};
    for (int i = 0; i < D; ++i) {
      if (!d.periodic[i]) continue;
      const double L = period[i];
      // (halves: a.min - b.max overflowed for a period near the largest
      // double, and the cast of an infinite shift skipped pairs; stop 79)
      s_lo[i] = static_cast<std::int32_t>(
                    std::floor((static_cast<double>(a.min[i]) * 0.5 - static_cast<double>(b.max[i]) * 0.5) / L * 2)) -
                1;
      s_hi[i] = static_cast<std::int32_t>(
                    std::ceil((static_cast<double>(a.max[i]) * 0.5 - static_cast<double>(b.min[i]) * 0.5) / L * 2)) +
                1;
    }
    s = s_lo;
    while (true) {
      bool take = true;
      if (ia == ib) {  // self images: s != 0, first nonzero component positive
        int first = 0;
        while (first < D && s[first] == 0) ++first;
        take = first < D && s[first] > 0;
      }
      if (take && overlaps(a, periodic_image(b, s, d))) out.push_back(periodic_pair<D>{ia, ib, s});
      int i = 0;
      for (; i < D; ++i) {
        if (s[i] < s_hi[i]) {
          ++s[i];
          break;
        }
        s[i] = s_lo[i];
      }
      if (i == D) break;
    }
  }
  std::sort(out.begin(), out.end());
}

#define HHG_PERIODIC(D, T)                                                                         \
  template void validate_domain<D, T>(const periodic_domain<D, T>&);                               \
  template std::string periodic_box_problem<D, T>(const periodic_domain<D, T>&, const box<D, T>&); \
  template void periodic_pairs<D, T>(const periodic_domain<D, T>&, std::span<const box<D, T>>,     \
                                     std::vector<periodic_pair<D>>&, const config&);
HHG_PERIODIC(2, float)
HHG_PERIODIC(2, double)
HHG_PERIODIC(3, float)
HHG_PERIODIC(3, double)
#undef HHG_PERIODIC

}  // namespace hhg
