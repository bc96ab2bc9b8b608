// The memory measure of `hhg run` and `hhg bench` (apps/hhg/peak_memory.hpp):
// peak_meter's rise and warm_memory, which writes memory once before a timed
// setup and gives it back, and touch_pages, which reads the caller's input once
// after it.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "../apps/hhg/peak_memory.hpp"

namespace {

TEST(PeakMemory, TouchPagesReadsTheFirstByteOfEveryPage) {
  std::vector<unsigned char> bytes(3 * 4096 + 10, 100);  // 4 pages begin in it (the last one partly)
  for (std::size_t p = 0; p < 4; ++p) bytes[p * 4096] = static_cast<unsigned char>(p + 1);
  EXPECT_EQ(hhg::cli::touch_pages(bytes.data(), bytes.size()), 1u + 2u + 3u + 4u);
  EXPECT_EQ(hhg::cli::touch_pages(bytes.data(), 4096), 1u);
  EXPECT_EQ(hhg::cli::touch_pages(bytes.data(), 0), 0u);
}

#if defined(__linux__)
// VmRSS of this process, bytes
long long resident_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  return -1;
}

constexpr long long kMiB = 1 << 20;

TEST(PeakMemory, RiseCountsMemoryWrittenSinceStart) {
  hhg::cli::peak_meter m;
  m.start();
  ASSERT_TRUE(m.exact()) << "/proc/self/clear_refs could not reset the peak";
  std::vector<char> block(48 * kMiB);
  std::memset(block.data(), 1, block.size());
  EXPECT_GE(m.rise(), 46 * kMiB);
  EXPECT_LE(m.rise(), 64 * kMiB);
}

TEST(PeakMemory, WarmMemoryWritesItsBytesAndGivesThemBack) {
  hhg::cli::peak_meter m;
  m.start();
  ASSERT_TRUE(m.exact());
  const long long before = resident_bytes();
  hhg::cli::warm_memory(64 * kMiB);
  // every page was resident at once (written), and is not any more (unmapped;
  // under AddressSanitizer its shadow, an eighth of the range, may stay: 8 MiB
  // + 28 KiB in stop 51's CI failed a bound of 8 MiB)
  EXPECT_GE(m.rise(), 62 * kMiB);
  EXPECT_LE(resident_bytes(), before + 16 * kMiB);
  // a meter started after it sees none of it: the tools warm, then start
  m.start();
  EXPECT_LE(m.rise(), 8 * kMiB);
}

TEST(PeakMemory, WarmMemoryOfNothingTouchesNothing) {
  hhg::cli::peak_meter m;
  m.start();
  ASSERT_TRUE(m.exact());
  hhg::cli::warm_memory(0);
  EXPECT_LE(m.rise(), 2 * kMiB);
}
#endif

}  // namespace
