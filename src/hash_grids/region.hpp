// Region search over a hash_grids structure (the region queries of
// hash_grids_queries.cpp, whose header comment says why the cell range is
// exact, and the pair-count sample of find_pairs in hash_grids.cpp).
#pragma once

#include "hash_grids/state.hpp"

namespace hhg {
namespace detail {

constexpr double kHuge = 0x1p50;  // |coordinate / cell| beyond this: scan

// Calls match/visit on every entry of a level's occupied cells.
template <int D, class T, class F>
bool scan_grid(const typename hash_grids_state<D, T>::grid& g, F&& on_entry) {
  for (const auto& oc : g.occupied) {
    const auto* e = g.pool.data() + oc.block;
    for (std::uint32_t j = 0; j < oc.count; ++j)
      if (!on_entry(e[j])) return false;
  }
  return true;
}

template <class V, class F>
bool scan_vector(const V& v, F&& on_entry) {
  for (const auto& e : v)
    if (!on_entry(e)) return false;
  return true;
}

// Every entry that can overlap the closed double box [lo, hi] gets on_entry
// (which applies the exact predicate); stops when it returns false.
// Only the levels from s.levels[from] up (coarser) are searched when `from`
// is given, and the objects apart and on the all-pairs list only when
// `loose` (a scan each).
template <int D, class T, class F>
bool search_region(const hash_grids_state<D, T>& s, const std::array<double, D>& lo, const std::array<double, D>& hi,
                   F&& on_entry, std::size_t from = 0, bool loose = true) {
  using state_t = hash_grids_state<D, T>;
  if (loose && !scan_vector(s.apart, on_entry)) return false;
  if (loose && !scan_vector(s.list, on_entry)) return false;
  for (std::size_t li = from; li < s.levels.size(); ++li) {
    const auto& g = s.grids[s.levels[li]];
    if (g.objects == 0) continue;
    bool scan = s.rebuild_pending;  // cells are stale until update()
    std::array<std::int64_t, D> klo{}, khi{};
    double cells = 1;
    for (int i = 0; i < D && !scan; ++i) {
      const double a = lo[i] * g.inv[i], b = hi[i] * g.inv[i];
      if (!(a >= -kHuge && b <= kHuge)) {
        scan = true;
        break;
      }
      klo[i] = floor_to_int(a) - 1;
      khi[i] = floor_to_int(b);
      const std::int64_t n = std::int64_t{g.mask[i]} + 1;
      if (khi[i] - klo[i] + 1 > n) khi[i] = klo[i] + n - 1;
      cells *= static_cast<double>(khi[i] - klo[i] + 1);
    }
    if (scan || cells > static_cast<double>(g.occupied.size())) {
      if (!scan_grid<D, T>(g, on_entry)) return false;
      continue;
    }
    std::array<std::uint32_t, D> c{};
    auto cell = [&]() {
      const std::uint32_t r = state_t::lookup(g, state_t::encode(g, c));
      if (r == 0) return true;
      const auto& oc = g.occupied[r - 1];
      const auto* e = g.pool.data() + oc.block;
      for (std::uint32_t j = 0; j < oc.count; ++j)
        if (!on_entry(e[j])) return false;
      return true;
    };
    if constexpr (D == 2) {
      for (std::int64_t y = klo[1]; y <= khi[1]; ++y) {
        c[1] = static_cast<std::uint32_t>(y) & g.mask[1];
        for (std::int64_t x = klo[0]; x <= khi[0]; ++x) {
          c[0] = static_cast<std::uint32_t>(x) & g.mask[0];
          if (!cell()) return false;
        }
      }
    } else {
      for (std::int64_t z = klo[2]; z <= khi[2]; ++z) {
        c[2] = static_cast<std::uint32_t>(z) & g.mask[2];
        for (std::int64_t y = klo[1]; y <= khi[1]; ++y) {
          c[1] = static_cast<std::uint32_t>(y) & g.mask[1];
          for (std::int64_t x = klo[0]; x <= khi[0]; ++x) {
            c[0] = static_cast<std::uint32_t>(x) & g.mask[0];
            if (!cell()) return false;
          }
        }
      }
    }
  }
  return true;
}

}  // namespace detail
}  // namespace hhg
