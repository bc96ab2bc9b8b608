// No allocation in steady state: after a warm-up, a step of move() calls plus
// a detection into a reused vector must not allocate.
//
// This file replaces the global allocation functions of the whole test program
// with counting versions (malloc/free underneath); only the tests below read
// the counter.
#include <atomic>
#include <cstdlib>
#include <new>

#include "support.hpp"

namespace {
std::atomic<std::uint64_t> allocations{0};

void* counted_alloc(std::size_t n) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}

void* counted_aligned_alloc(std::size_t n, std::align_val_t al) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  const auto a = static_cast<std::size_t>(al);
  const std::size_t size = n == 0 ? a : (n + a - 1) / a * a;
  if (void* p = std::aligned_alloc(a, size)) return p;
  throw std::bad_alloc();
}
}  // namespace

void* operator new(std::size_t n) { return counted_alloc(n); }
void* operator new[](std::size_t n) { return counted_alloc(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return counted_alloc(n);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return counted_alloc(n);
  } catch (...) {
    return nullptr;
  }
}
void* operator new(std::size_t n, std::align_val_t al) { return counted_aligned_alloc(n, al); }
void* operator new[](std::size_t n, std::align_val_t al) { return counted_aligned_alloc(n, al); }
void* operator new(std::size_t n, std::align_val_t al, const std::nothrow_t&) noexcept {
  try {
    return counted_aligned_alloc(n, al);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, std::align_val_t al, const std::nothrow_t&) noexcept {
  try {
    return counted_aligned_alloc(n, al);
  } catch (...) {
    return nullptr;
  }
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }

namespace hhg_test {
namespace {

template <class M>
class NoAllocation : public ::testing::Test {};
TYPED_TEST_SUITE(NoAllocation, method_types, method_names);

TEST(NoAllocationCounter, CountsAllocations) {
  const std::uint64_t before = allocations.load();
  std::vector<int>* volatile p = new std::vector<int>(100);  // volatile: the allocation cannot be elided
  delete p;
  EXPECT_GE(allocations.load() - before, 2u) << "the replaced operator new is not in use";
}

/// Steps alternating between two sets of boxes (the scene and the scene
/// shifted by `shift` times each object's size), each step a move() of every
/// object plus a detection. Returns the allocations of `measured` steps after
/// `warmup` steps.
template <class M>
std::uint64_t allocations_in_steady_state(std::size_t n, double shift, const config& c, bool callback,
                                          std::size_t* pairs) {
  constexpr int D = M::dimension;
  using T = typename M::scalar;
  hhg::scenes::thesis_params p;
  p.n = n;
  p.size_max = 12;
  p.seed = 71;
  const hhg::scenes::thesis_scenario<D, T> scene(p);
  std::vector<box<D, T>> a = scene.boxes();
  std::vector<box<D, T>> b = a;
  for (auto& x : b) x = shifted(x, shift * edge_of(x));
  M m = make_method<M>(c);
  std::vector<handle> hs;
  for (const auto& x : a) hs.push_back(m.insert(x));
  std::vector<handle_pair> out;
  std::size_t counted = 0;
  auto count = [&counted](handle, handle) { ++counted; };
  auto step = [&](std::size_t k) {
    const auto& boxes = k % 2 ? b : a;
    for (std::size_t i = 0; i < hs.size(); ++i) m.move(hs[i], boxes[i]);
    if (callback) {
      counted = 0;
      m.for_each_pair(count);
    } else {
      m.find_pairs(out);
    }
  };
  for (std::size_t k = 0; k < 6; ++k) step(k);
  const std::uint64_t before = allocations.load();
  for (std::size_t k = 0; k < 6; ++k) step(k);
  const std::uint64_t used = allocations.load() - before;
  *pairs = callback ? counted : out.size();
  return used;
}

TYPED_TEST(NoAllocation, MovesInPlaceAndFindPairs) {
  std::size_t pairs = 0;
  EXPECT_EQ(allocations_in_steady_state<TypeParam>(3000, 0.0, {}, false, &pairs), 0u);
  EXPECT_GT(pairs, 0u);
}

TYPED_TEST(NoAllocation, SmallMovesAndFindPairs) {
  std::size_t pairs = 0;
  EXPECT_EQ(allocations_in_steady_state<TypeParam>(3000, 1e-3, {}, false, &pairs), 0u);
  EXPECT_GT(pairs, 0u);
}

TYPED_TEST(NoAllocation, SmallMovesAndForEachPair) {
  std::size_t pairs = 0;
  EXPECT_EQ(allocations_in_steady_state<TypeParam>(3000, 1e-3, {}, true, &pairs), 0u);
  EXPECT_GT(pairs, 0u);
}

TYPED_TEST(NoAllocation, BelowTheActivationThreshold) {
  std::size_t pairs = 0;
  EXPECT_EQ(allocations_in_steady_state<TypeParam>(30, 1e-3, {}, false, &pairs), 0u);
}

TYPED_TEST(NoAllocation, RebuildStrategy) {
  config c;
  c.strategy = hhg::update_strategy::rebuild;
  std::size_t pairs = 0;
  EXPECT_EQ(allocations_in_steady_state<TypeParam>(3000, 1e-3, c, false, &pairs), 0u);
  EXPECT_GT(pairs, 0u);
}

}  // namespace
}  // namespace hhg_test
