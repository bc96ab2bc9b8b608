// apps/hhg/peak_memory.hpp: the peak memory a run adds, for `hhg run` and
// `hhg bench` (one source).
//
// How it is measured (Linux): start() writes "5" to /proc/self/clear_refs,
// which resets the kernel's peak resident set size (VmHWM) to the current one
// (Linux >= 4.0), and records the current resident set size (VmRSS). rise()
// is then VmHWM - that VmRSS: the most memory resident at any moment since
// start(), above what was resident before. Limits: it counts pages, not
// bytes asked for (memory allocated but never touched is not counted; a
// freed block the allocator keeps stays counted); it includes every
// allocation of the process in between (the scene's, the timing vectors'),
// and the kernel updates VmHWM lazily (at page granularity, a few pages of
// slack). Where clear_refs cannot be written, the rise is VmHWM(now) -
// VmHWM(start): a lower bound when an earlier peak was higher. Without
// /proc, getrusage's ru_maxrss is used the same way.
#pragma once

#include <sys/resource.h>

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <optional>
#include <string>

#include <hhg/handle.hpp>

namespace hhg::cli {

class peak_meter {
 public:
  /// Resets the peak where the kernel allows it and records the baseline.
  void start() {
    reset_ = false;
    if (std::FILE* f = std::fopen("/proc/self/clear_refs", "w")) {
      reset_ = std::fputs("5", f) >= 0;
      reset_ = (std::fclose(f) == 0) && reset_;
    }
    const auto rss = status_kb("VmRSS:");
    const auto hwm = status_kb("VmHWM:");
    if (reset_ && rss) {
      base_kb_ = *rss;
    } else if (hwm) {
      reset_ = false;
      base_kb_ = *hwm;
    } else {
      reset_ = false;
      base_kb_ = maxrss_kb();
      from_rusage_ = true;
    }
  }
  /// Bytes the peak resident set rose above the baseline since start() (>= 0).
  long long rise() const {
    long long now = 0;
    if (from_rusage_) {
      now = maxrss_kb();
    } else if (const auto hwm = status_kb("VmHWM:")) {
      now = *hwm;
    }
    return now > base_kb_ ? (now - base_kb_) * 1024 : 0;
  }
  /// The process' peak resident set size in bytes (VmHWM, else ru_maxrss).
  static long long peak_rss() {
    if (const auto hwm = status_kb("VmHWM:")) return *hwm * 1024;
    return maxrss_kb() * 1024;
  }
  /// True when the peak could be reset (the rise is exact up to page granularity).
  bool exact() const noexcept { return reset_; }

 private:
  static std::optional<long long> status_kb(const char* key) {
    std::ifstream status("/proc/self/status");
    std::string line;
    const std::string k(key);
    while (std::getline(status, line)) {
      if (line.compare(0, k.size(), k) != 0) continue;
      long long kb = 0;
      if (std::sscanf(line.c_str() + k.size(), "%lld", &kb) == 1) return kb;
    }
    return std::nullopt;
  }
  static long long maxrss_kb() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
  }
  long long base_kb_ = 0;
  bool reset_ = false;
  bool from_rusage_ = false;
};

/// The part of a run's peak that is the caller's own data, not the method's:
/// its handles (every element written) and its pairs output up to the most
/// pairs any detection wrote (room reserved beyond that is never touched, so
/// never resident). Subtracted from the rise it leaves the method's own peak:
/// its structure and everything transient (issue 19's measure), which does
/// not grow with the number of pairs per object.
inline long long caller_bytes(std::size_t handles, std::size_t most_pairs) {
  return static_cast<long long>(handles * sizeof(handle) + most_pairs * sizeof(handle_pair));
}
/// The rise without the caller's data (>= 0: page granularity can make the rise smaller).
inline long long own_peak(long long rise, long long caller) { return rise > caller ? rise - caller : 0; }

}  // namespace hhg::cli
