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
#if defined(__linux__)
#include <sys/mman.h>
#endif

#include <algorithm>
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

/// Bytes per object that `hhg run` and `hhg bench` write once before a timed
/// setup (warm_memory): more than hhg's or the strong grid's peak (143 and
/// 210 at 10^6 equal cubes), about that of the k-d tree or CGAL; the peers
/// that hold more (FCL, ~650) find part of theirs cold.
inline constexpr std::size_t kWarmBytesPerObject = 512;

/// Writes `bytes` (at most 4 GiB) of new memory once and gives it back, just
/// before a timed setup. On a virtual machine that reports the guest's free
/// memory to its host (Linux free page reporting; Firecracker, where stop 49
/// measured it), memory left free for about two seconds costs the host a
/// fault per page at its next first touch: 1.1-4 s per GiB in huge pages,
/// against 0.12 s for memory used just before; at 10^6 objects that was most
/// of a cold setup (hhg: 358-448 ms cold, 83-153 ms after this). Memory just
/// freed is handed out first, so the timed run gets memory the host has
/// backed. The run's own first touches (the guest kernel's faults and its
/// zeroing of every page) stay in its time: only the host's part is taken
/// out, for every method alike. Elsewhere (no Linux) nothing is done.
inline void warm_memory(std::size_t bytes) {
#if defined(__linux__)
  bytes = std::min(bytes, std::size_t{4} << 30);
  if (bytes == 0) return;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return;  // (only the conditions of the measurement: nothing to report)
#if defined(MADV_HUGEPAGE)
  madvise(p, bytes, MADV_HUGEPAGE);  // (the pages hhg's big arrays get)
#endif
  for (std::size_t i = 0; i < bytes; i += 4096) static_cast<volatile char*>(p)[i] = 1;
  munmap(p, bytes);
#else
  static_cast<void>(bytes);
#endif
}

/// Reads one byte of every 4 KiB page of [p, p + bytes) and returns their sum
/// (so the reads happen): the caller's input, just after warm_memory. On a
/// VM that keeps shadow page tables (this host in stop 51: a PVM guest),
/// unmapping the warmed memory drops the translations of every page of the
/// process, and the first read of each 4 KiB page after it costs ~5 us: 58 ms
/// for the 48 MB of 10^6 boxes, paid inside the timed setup (the bulk
/// insert's first pass over the boxes: 70 ms instead of ~8). A user's boxes,
/// just computed, have theirs; so the tools read the input once, untimed,
/// for every method alike.
inline unsigned touch_pages(const void* p, std::size_t bytes) {
  const auto* c = static_cast<const volatile unsigned char*>(p);
  unsigned sum = 0;
  for (std::size_t i = 0; i < bytes; i += 4096) sum += c[i];
  return sum;
}

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
