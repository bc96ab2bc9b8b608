// The allocator of the engine's big arrays (src/big_allocator.hpp): small
// arrays from operator new; arrays of 2 MiB and more aligned to 2 MiB and,
// on Linux without AddressSanitizer, mapped on their own, marked for
// transparent huge pages and unmapped when freed; advise_huge marks the
// whole huge pages inside a caller's buffer. Contents survive growth, and
// failure is std::bad_alloc (or bad_array_new_length), as for std::vector.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <new>
#include <sstream>
#include <string>
#include <vector>

#include "../src/big_allocator.hpp"

namespace {

using hhg::detail::big_allocator;
using hhg::detail::big_vector;
using hhg::detail::kHugePage;

bool aligned_to(const void* p, std::size_t a) { return reinterpret_cast<std::uintptr_t>(p) % a == 0; }

#if HHG_BIG_MAPPED
// The mapping of /proc/self/smaps that holds address p: its first line and
// its "THPeligible:" value (-1: not found).
struct mapping {
  std::uintptr_t lo = 0, hi = 0;
  int thp_eligible = -1;
};
mapping mapping_of(const void* p) {
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  std::ifstream in("/proc/self/smaps");
  std::string line;
  mapping m, found;
  bool inside = false;
  while (std::getline(in, line)) {
    std::uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-' && line.find(':') > line.find(' ')) {
      if (inside) return found;
      inside = lo <= at && at < hi;
      found = {lo, hi, -1};
      continue;
    }
    if (inside && line.rfind("THPeligible:", 0) == 0) found.thp_eligible = std::stoi(line.substr(12));
  }
  return inside ? found : m;
}

bool huge_pages_on() {  // "always" or "madvise" (the kernel honours the hint)
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string s;
  std::getline(in, s);
  return s.find("[never]") == std::string::npos && !s.empty();
}

long mapped_kib() {  // VmSize of /proc/self/status
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmSize:", 0) == 0) return std::stol(line.substr(7));
  return -1;
}
#endif

TEST(BigAllocator, SmallArraysComeFromOperatorNew) {
  big_vector<std::uint32_t> v;
  for (std::uint32_t i = 0; i < 1000; ++i) v.push_back(i * 7);
  for (std::uint32_t i = 0; i < 1000; ++i) ASSERT_EQ(v[i], i * 7);
  EXPECT_LT(v.capacity() * sizeof(std::uint32_t), kHugePage);
}

TEST(BigAllocator, BigArraysAreAlignedAndKeepTheirContentsThroughGrowth) {
  // push_back across 2 MiB and beyond: the small array, then big ones
  // reallocated as it grows; every element written survives each move
  big_vector<std::uint64_t> v;
  const std::size_t n = 3 * kHugePage / sizeof(std::uint64_t) + 12345;
  for (std::size_t i = 0; i < n; ++i) v.push_back(i * 2654435761u);
  ASSERT_GE(v.capacity() * sizeof(std::uint64_t), kHugePage);
  EXPECT_TRUE(aligned_to(v.data(), kHugePage));
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(v[i], i * 2654435761u) << i;
  // an odd size (not a whole number of pages), written to its last byte
  big_vector<char> odd;
  odd.resize(kHugePage + 4097);
  EXPECT_TRUE(aligned_to(odd.data(), kHugePage));
  odd.front() = 1;
  odd.back() = 2;
  EXPECT_EQ(odd.front() + odd.back(), 3);
}

TEST(BigAllocator, FailureIsBadAlloc) {
  big_allocator<std::uint64_t> a;
  // past what a size can express
  EXPECT_THROW((void)a.allocate(static_cast<std::size_t>(-1) / 8), std::bad_array_new_length);
#if HHG_BIG_MAPPED  // (AddressSanitizer's operator new reports such a size instead of throwing)
  // expressible, but more than any machine maps; a vector that asks for it
  // keeps what it holds
  EXPECT_THROW((void)a.allocate(std::size_t{1} << 58), std::bad_alloc);
  big_vector<std::uint64_t> v(10, 7);
  EXPECT_THROW(v.reserve(std::size_t{1} << 58), std::bad_alloc);
  EXPECT_EQ(v.size(), 10u);
  EXPECT_EQ(v[9], 7u);
#endif
}

#if HHG_BIG_MAPPED
TEST(BigAllocator, BigArraysAreMappedForHugePagesAndUnmappedWhenFreed) {
  const long before = mapped_kib();
  ASSERT_GT(before, 0);
  {
    std::vector<big_vector<char>> arrays(8);
    for (auto& a : arrays) {
      a.resize(3 * kHugePage + 100);
      a[0] = a.back() = 1;
      const mapping m = mapping_of(a.data());
      ASSERT_NE(m.hi, 0u) << "the array is mapped";
      EXPECT_LE(m.lo, reinterpret_cast<std::uintptr_t>(a.data()));
      EXPECT_GE(m.hi, reinterpret_cast<std::uintptr_t>(a.data() + a.size()));
      if (huge_pages_on()) {
        EXPECT_EQ(m.thp_eligible, 1) << "marked MADV_HUGEPAGE";
      }
    }
    EXPECT_GE(mapped_kib() - before, 8 * 6 * 1024) << "8 arrays of 6 MiB mapped";
  }
  // freed: unmapped, not kept by malloc (the huge-page hint goes with them)
  EXPECT_LT(mapped_kib() - before, 4 * 1024);
}

TEST(BigAllocator, AdviseHugeMarksTheWholeHugePagesOfABuffer) {
  if (!huge_pages_on()) GTEST_SKIP() << "transparent huge pages are off";
  std::vector<char> v(4 * kHugePage);  // (mapped by malloc: above its mmap threshold)
  hhg::detail::advise_huge(v.data(), v.size());
  const auto lo = (reinterpret_cast<std::uintptr_t>(v.data()) + kHugePage - 1) & ~(kHugePage - 1);
  EXPECT_EQ(mapping_of(reinterpret_cast<const void*>(lo)).thp_eligible, 1);
  // a buffer without a whole huge page inside, and none at all: nothing happens
  hhg::detail::advise_huge(v.data() + 1, kHugePage / 2);
  hhg::detail::advise_huge(nullptr, 0);
  EXPECT_EQ(v[0], 0);
}
#endif

}  // namespace
