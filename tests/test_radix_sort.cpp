// The engine's radix sorts (src/hash_grids/base.hpp) against std::stable_sort:
// the 8-bit digits below kNarrowSortItems items and the wide ones (11, 12
// bits) at and above it, for keys of 8 to 32 bits (below 2^bits, the sorts'
// precondition) with many equal keys (stability: equal keys keep their input
// order).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "../src/hash_grids/base.hpp"

namespace {

struct item {
  std::uint32_t key;
  std::uint32_t pos;  // input position: equal keys must keep their order
  bool operator==(const item&) const = default;
};

// n items with keys below 2^bits, about `distinct` different ones
std::vector<item> random_items(std::size_t n, std::uint32_t bits, std::uint32_t distinct, std::uint64_t seed) {
  const std::uint32_t mask = bits >= 32 ? ~0u : (1u << bits) - 1;
  std::mt19937_64 rng(seed);
  std::vector<item> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = {static_cast<std::uint32_t>(rng()) % distinct * 2654435761u & mask, static_cast<std::uint32_t>(i)};
  return v;
}

std::vector<item> reference(std::vector<item> v) {
  std::stable_sort(v.begin(), v.end(), [](const item& a, const item& b) { return a.key < b.key; });
  return v;
}

template <std::uint32_t kDigit>
void expect_sorted_like_stable_sort(std::size_t n, std::uint32_t bits, std::uint32_t distinct) {
  const std::vector<item> in = random_items(n, bits, distinct, n * 131 + bits);
  std::vector<item> v = in, tmp;
  hhg::detail::hg::radix_sort<kDigit>(v, tmp, bits, [](const item& x) { return x.key; });
  EXPECT_EQ(v, reference(in)) << "n " << n << " bits " << bits << " digit " << kDigit;
}

}  // namespace

TEST(RadixSort, NarrowAndWideDigitsMatchStableSort) {
  using hhg::detail::hg::kNarrowSortItems;
  // below the threshold (8-bit digits), at it and above (kDigit)
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{300}, kNarrowSortItems - 1,
                              kNarrowSortItems, kNarrowSortItems + 1, std::size_t{3 * kNarrowSortItems + 17}})
    for (const std::uint32_t bits : {8u, 13u, 20u, 24u, 32u})
      for (const std::uint32_t distinct : {1u, 7u, 1000u, 1u << 30}) {
        expect_sorted_like_stable_sort<11>(n, bits, distinct);
        expect_sorted_like_stable_sort<12>(n, bits, distinct);
      }
}

TEST(RadixSort, EachDigitWidthMatchesStableSort) {
  // the digit widths themselves, whatever the size (radix_sort picks them by size)
  for (const std::size_t n : {std::size_t{5}, std::size_t{1000}, std::size_t{5000}})
    for (const std::uint32_t bits : {9u, 24u, 32u}) {
      const std::vector<item> in = random_items(n, bits, 500, n + bits);
      const auto key = [](const item& x) { return x.key; };
      std::vector<item> a = in, b = in, c = in, tmp;
      hhg::detail::hg::radix_sort_by<8>(a, tmp, bits, key);
      hhg::detail::hg::radix_sort_by<11>(b, tmp, bits, key);
      hhg::detail::hg::radix_sort_by<12>(c, tmp, bits, key);
      const std::vector<item> want = reference(in);
      EXPECT_EQ(a, want) << "8-bit digits, n " << n << " bits " << bits;
      EXPECT_EQ(b, want) << "11-bit digits, n " << n << " bits " << bits;
      EXPECT_EQ(c, want) << "12-bit digits, n " << n << " bits " << bits;
    }
}
