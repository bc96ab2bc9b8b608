// The memory measure of `hhg run` and `hhg bench` (apps/hhg/peak_memory.hpp):
// peak_meter's rise and warm_memory, which writes memory once before a timed
// setup and gives it back.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "../apps/hhg/peak_memory.hpp"

namespace {

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
  // every page was resident at once (written), and is not any more (unmapped)
  EXPECT_GE(m.rise(), 62 * kMiB);
  EXPECT_LE(resident_bytes(), before + 8 * kMiB);
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
