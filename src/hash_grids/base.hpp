// The hash grid engine's basics: where-constants, the block-capacity ladder,
// the radix sorts and the tuning (every threshold that picks a path, in one
// struct that tests can set, and a counter per path).
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "../big_allocator.hpp"
#include "hhg/config.hpp"
#include "hhg/detail/checks.hpp"
#include "hhg/detail/tuning.hpp"
#include "hhg/executor.hpp"
#include "hhg/handle.hpp"
#include "hhg/hash_grids.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace hhg {
namespace detail {

namespace hg {

constexpr std::uint32_t npos = std::numeric_limits<std::uint32_t>::max();
constexpr std::uint32_t kPlaceList = 251;
constexpr std::uint32_t kPlaceApart = 252;
constexpr std::uint32_t kPlaceFree = 255;
constexpr std::uint32_t kMaxGrids = 250;
constexpr int kClasses = 52;

// Block capacities: 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, ...
constexpr std::uint32_t class_capacity(int k) {
  if (k == 0) return 1;
  if (k % 2 == 1) return 1u << ((k + 1) / 2);
  return 3u << ((k - 2) / 2);
}
static_assert(class_capacity(1) == 2 && class_capacity(2) == 3 && class_capacity(3) == 4 && class_capacity(4) == 6 &&
                  class_capacity(5) == 8 && class_capacity(6) == 12,
              "block classes grow by factors 1.33..1.5");
static_assert(class_capacity(kClasses - 1) >= (1u << 26), "the largest block holds a crowded cell");

constexpr int class_search(std::uint32_t n) {
  int k = 0;
  while (class_capacity(k) < n) ++k;
  return k;
}
// The smallest class that holds n objects (a table for the usual counts).
inline constexpr std::array<std::uint8_t, 64> kSmallClass = [] {
  std::array<std::uint8_t, 64> t{};
  for (std::uint32_t n = 0; n < t.size(); ++n) t[n] = static_cast<std::uint8_t>(class_search(n));
  return t;
}();
inline int class_for(std::uint32_t n) { return n < kSmallClass.size() ? kSmallClass[n] : class_search(n); }

inline std::int64_t floor_to_int(double t) {
  const auto k = static_cast<std::int64_t>(t);
  return k - (t < static_cast<double>(k) ? 1 : 0);
}

template <class V>
inline std::size_t capacity_bytes(const V& v) {
  return v.capacity() * sizeof(typename V::value_type);
}

// Grows a vector's capacity by 1.125x (not 2x) to bound the slack of the big
// arrays (pool, slots) to 12.5%; amortized O(1) still (each element is copied
// at most 8 times on average).
template <class V>
inline void reserve_for(V& v, std::size_t needed) {
  if (needed <= v.capacity()) return;
  std::size_t c = v.capacity() + v.capacity() / 8 + 16;
  v.reserve(std::max(c, needed));
}

// v.resize(n) for scratch that is about to be written whole: when it must
// grow, nothing is copied and 1/16 more is reserved. A count that wobbles from
// one detection or step to the next then neither reallocates every time nor
// doubles the capacity as resize does; the old array, freed into the heap,
// would stay resident beside the new one (10^6 equal cubes: row_pos doubled
// at the third step, +2.9 bytes per object of peak).
template <class V>
inline void resize_scratch(V& v, std::size_t n) {
  if (n > v.capacity()) {
    v.clear();
    v.reserve(n + n / 16);
  }
  v.resize(n);
}

// Stable LSD radix sort of v by key(x) < 2^bits (the passes read the digits
// of the low `bits` bits, the last one whole), kDigit bits a pass; tmp is
// scratch (resized). (radix_sort below chooses kDigit.)
template <std::uint32_t kDigit, class V, class W, class Key>
void radix_sort_by(V& v, W& tmp, std::uint32_t bits, Key key) {
  constexpr std::uint32_t kMask = (1u << kDigit) - 1;
  constexpr std::uint32_t kMaxDigits = (32 + kDigit - 1) / kDigit;
  const std::uint32_t digits = (std::min(bits, 32u) + kDigit - 1) / kDigit;
  resize_scratch(tmp, v.size());
  if (v.size() < 2) return;
  // the counts of every digit in one read (the keys do not change between passes)
  std::array<std::array<std::uint32_t, 1u << kDigit>, kMaxDigits> counts;
  for (std::uint32_t d = 0; d < digits; ++d) counts[d].fill(0);
  for (const auto& x : v) {
    const std::uint32_t k = key(x);
    for (std::uint32_t d = 0; d < digits; ++d) ++counts[d][(k >> (d * kDigit)) & kMask];
  }
  for (std::uint32_t d = 0; d < digits; ++d) {
    auto& c = counts[d];
    if (c[(key(v.front()) >> (d * kDigit)) & kMask] == v.size()) continue;  // one value: nothing moves
    std::uint32_t sum = 0;
    for (auto& x : c) {
      const std::uint32_t n = x;
      x = sum;
      sum += n;
    }
    const std::uint32_t shift = d * kDigit;
    for (const auto& x : v) tmp[c[(key(x) >> shift) & kMask]++] = x;
    v.swap(tmp);
  }
}

// Below this many items a pass's counters cost more than its items (each
// pass clears and sums 2^digit of them): radix_sort takes 8-bit digits.
// Instructions of `hhg run --n 1000 --steps 200 --threads 1` (callgrind):
// varied -8.8 %, log-uniform -14.9 %, equal -2.5 % (docs/hash_grids.md, Paths).
inline constexpr std::size_t kNarrowSortItems = 2048;

// Stable LSD radix sort of v by key(x) < 2^bits, kDigit bits a pass (8
// below kNarrowSortItems items); tmp is scratch (resized, kept by the caller
// for reuse).
template <std::uint32_t kDigit = 11, class V, class W, class Key>
void radix_sort(V& v, W& tmp, std::uint32_t bits, Key key) {
  if (v.size() < kNarrowSortItems)
    radix_sort_by<8>(v, tmp, bits, key);
  else
    radix_sort_by<kDigit>(v, tmp, bits, key);
}

}  // namespace hg
using namespace hg;  // NOLINT: the constants and helpers above are used unqualified

}  // namespace detail
}  // namespace hhg
