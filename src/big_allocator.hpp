// Internal header (not installed): an allocator for the hash grid's big
// arrays (the object pool, 56 bytes per object in 3D double; the slots, the
// cell records and bricks; the bulk paths' keys), and advise_huge for the
// caller's big output vectors.
//
// Allocations of at least 2 MiB are mapped on their own (mmap, aligned to
// 2 MiB), marked for transparent huge pages (madvise(MADV_HUGEPAGE), a hint
// the kernel may ignore) and unmapped when freed (Linux; elsewhere, and under
// AddressSanitizer, which then keeps its checks on them, operator new).
// Smaller ones come from operator new. Failure is std::bad_alloc either way.
//
// Why huge pages: memory written for the first time costs a page fault per
// page, and on virtual machines a fault is dear. On the two-core test
// machine, writing a fresh 32 MiB array took 96 ms with 4 KiB pages (12 us
// a fault) and 8.5 ms with huge pages; at 10^6 objects the bulk insert and
// the first detection faulted ~19 000 pages, most of their time (insert +
// first detection 347 -> 155 ms with every array on huge pages). Random
// accesses to the pool also miss the TLB less (mean step 270-280 -> 265-268
// ns per object at 10^6 equal cubes).
//
// Why a mapping of its own: a huge-page hint on memory of the malloc heap
// stays on that address range after the array is freed, and the small
// allocations made there later fault whole 2 MiB pages (marking arrays from
// the heap raised the peak RSS by 30 % once). A mapping of its own is given
// back whole.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

#if defined(__SANITIZE_ADDRESS__)
#define HHG_BIG_MAPPED 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HHG_BIG_MAPPED 0
#endif
#endif
#if !defined(HHG_BIG_MAPPED)
#if defined(__linux__) && defined(MADV_HUGEPAGE)
#define HHG_BIG_MAPPED 1
#else
#define HHG_BIG_MAPPED 0
#endif
#endif

namespace hhg {
namespace detail {

inline constexpr std::size_t kHugePage = std::size_t{2} << 20;

// Marks the whole huge pages inside [p, p + bytes) for transparent huge
// pages, before they are first written: for a caller's vector that is about
// to be filled (the pairs output, the handles of a bulk insert). A hint:
// failure changes nothing, and elsewhere than Linux it does nothing.
inline void advise_huge([[maybe_unused]] void* p, [[maybe_unused]] std::size_t bytes) noexcept {
#if HHG_BIG_MAPPED
  const auto lo = (reinterpret_cast<std::uintptr_t>(p) + kHugePage - 1) & ~(kHugePage - 1);
  const auto hi = (reinterpret_cast<std::uintptr_t>(p) + bytes) & ~(kHugePage - 1);
  if (hi > lo) ::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_HUGEPAGE);
#endif
}

template <class T>
struct big_allocator {
  using value_type = T;

  big_allocator() noexcept = default;
  template <class U>
  big_allocator(const big_allocator<U>&) noexcept {}  // NOLINT: rebinding is implicit by design

  T* allocate(std::size_t n) {
    if (n > (static_cast<std::size_t>(-1) - 2 * kHugePage) / sizeof(T)) throw std::bad_array_new_length();
    const std::size_t bytes = n * sizeof(T);
    if (bytes < kHugePage) return static_cast<T*>(::operator new(bytes));
#if HHG_BIG_MAPPED
    // mapped with a huge page to spare, the parts before and after the
    // aligned array unmapped (whole pages: the mapping and the alignment are)
    const std::size_t length = mapped_length(bytes);
    void* m = ::mmap(nullptr, length + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) throw std::bad_alloc();
    const auto at = reinterpret_cast<std::uintptr_t>(m);
    const auto lo = (at + kHugePage - 1) & ~(kHugePage - 1);
    const std::size_t head = lo - at;  // (less than a huge page)
    if (head > 0) ::munmap(m, head);
    ::munmap(reinterpret_cast<void*>(lo + length), kHugePage - head);
    ::madvise(reinterpret_cast<void*>(lo), length, MADV_HUGEPAGE);  // a hint: failure changes nothing
    return reinterpret_cast<T*>(lo);
#else
    return static_cast<T*>(::operator new (bytes, std::align_val_t{kHugePage}));
#endif
  }

  void deallocate(T* p, std::size_t n) noexcept {
    const std::size_t bytes = n * sizeof(T);
    if (bytes < kHugePage) {
      ::operator delete(p);
      return;
    }
#if HHG_BIG_MAPPED
    ::munmap(p, mapped_length(bytes));
#else
    ::operator delete (p, std::align_val_t{kHugePage});
#endif
  }

  // resize(n) without a value leaves the new elements as they are (the
  // callers write them): T must be an implicit-lifetime type
  template <class U>
  void construct(U*) noexcept {}
  template <class U, class... A>
  void construct(U* p, A&&... a) {
    ::new (static_cast<void*>(p)) U(static_cast<A&&>(a)...);
  }

  friend bool operator==(const big_allocator&, const big_allocator&) noexcept { return true; }

 private:
  // whole pages (not whole huge pages: the last, partial one would be faulted
  // in whole)
  static std::size_t mapped_length(std::size_t bytes) {
    static const std::size_t page = page_size();
    return (bytes + page - 1) / page * page;
  }
  static std::size_t page_size() {
#if HHG_BIG_MAPPED
    const long p = ::sysconf(_SC_PAGESIZE);
    return p > 0 ? static_cast<std::size_t>(p) : 4096;
#else
    return 4096;
#endif
  }
};

template <class T>
using big_vector = std::vector<T, big_allocator<T>>;

}  // namespace detail
}  // namespace hhg
