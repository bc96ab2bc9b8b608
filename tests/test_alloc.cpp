// No allocation in steady state: after a warm-up, a step of move() calls plus
// a detection into a reused vector must not allocate. Out of memory: an
// allocation failure at the k-th allocation of insert, move, remove or
// detection, for every k, leaves the structure valid and unchanged.
//
// This file replaces the global allocation functions of the whole test program
// with counting versions (malloc/free underneath); only the tests below read
// the counter.
#include <atomic>
#include <cstdlib>
#include <new>

#include "dynamic_fuzz.hpp"
#include "hhg/hierarchical_hashing.hpp"
#include "hhg/linear_kdtree.hpp"
#include "hhg/pivot_hashing.hpp"
#include "hhg/spatial_hashing.hpp"
#include "hhg/sweep_and_prune.hpp"
#include "support.hpp"

namespace {
std::atomic<std::uint64_t> allocations{0};
// When non-zero, the allocation with this number (allocations after it is
// counted) throws std::bad_alloc: the out-of-memory tests set it.
std::atomic<std::uint64_t> fail_at{0};

void count_or_fail() {
  const std::uint64_t k = allocations.fetch_add(1, std::memory_order_relaxed) + 1;
  if (k == fail_at.load(std::memory_order_relaxed)) throw std::bad_alloc();
}

void* counted_alloc(std::size_t n) {
  count_or_fail();
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}

void* counted_aligned_alloc(std::size_t n, std::align_val_t al) {
  count_or_fail();
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

/// n boxes 10 long along x and 1 across, min corners uniform in [0, world)^3.
std::vector<box<3, double>> needles_along_x(int n, double world, std::uint64_t seed) {
  hhg::scenes::rng r(seed);
  std::vector<box<3, double>> bs(static_cast<std::size_t>(n));
  for (auto& b : bs)
    for (int k = 0; k < 3; ++k) {
      b.min[k] = r.uniform(0, world);
      b.max[k] = b.min[k] + (k == 0 ? 10 : 1);
    }
  return bs;
}

// Needles inserted at once get cells that follow their shape (axis scales);
// every detection then samples the objects' shape (check_shape), which
// allocates nothing while they keep it.
TEST(NoAllocationShape, NeedlesSampledAtEveryDetection) {
  using B = box<3, double>;
  const std::vector<B> a = needles_along_x(3000, 40, 31);
  std::vector<B> b = a;
  for (B& x : b) x = shifted(x, 1e-3);
  hash_grids<3, double> m;
  const std::vector<handle> hs = m.insert(std::span<const B>(a));
  ASSERT_EQ(m.path_counts().axes_scaled, 1u);
  std::vector<handle_pair> out;
  auto step = [&](std::size_t k) {
    const auto& boxes = k % 2 ? b : a;
    for (std::size_t i = 0; i < hs.size(); ++i) m.move(hs[i], boxes[i]);
    m.find_pairs(out);
  };
  for (std::size_t k = 0; k < 6; ++k) step(k);
  const std::uint64_t before = allocations.load(), checks = m.path_counts().shape_checks;
  for (std::size_t k = 0; k < 6; ++k) step(k);
  EXPECT_EQ(allocations.load() - before, 0u);
  EXPECT_EQ(m.path_counts().shape_checks, checks + 6) << "every detection sampled the shape";
  EXPECT_EQ(m.path_counts().reshapes, 0u);
  EXPECT_GT(out.size(), 0u);
}

// --- out of memory ------------------------------------------------------------

/// Runs fn with the k-th allocation from now failing (std::bad_alloc);
/// true when fn failed.
template <class F>
bool fails_at_allocation(int k, F&& fn) {
  fail_at.store(allocations.load() + static_cast<std::uint64_t>(k));
  bool failed = false;
  try {
    fn();
  } catch (const std::bad_alloc&) {
    failed = true;
  }
  fail_at.store(0);
  return failed;
}

/// Everything a user can observe: the boxes of the given handles, whether
/// each is stored, the size, and the pairs (as handle pairs, canonical).
template <class M>
struct observed {
  std::vector<bool> stored;
  std::vector<typename M::box_type> boxes;
  std::size_t size = 0;
  std::vector<handle_pair> pairs;
  bool operator==(const observed& o) const {
    if (stored != o.stored || size != o.size || pairs != o.pairs) return false;
    for (std::size_t i = 0; i < boxes.size(); ++i)
      for (int k = 0; k < M::dimension; ++k)
        if (boxes[i].min[k] != o.boxes[i].min[k] || boxes[i].max[k] != o.boxes[i].max[k]) return false;
    return true;
  }
};

template <class M>
observed<M> observe(M& m, const std::vector<handle>& hs) {
  observed<M> o;
  for (handle h : hs) {
    o.stored.push_back(m.contains(h));
    o.boxes.push_back(m.contains(h) ? m.get(h) : typename M::box_type{});
  }
  o.size = m.size();
  m.find_pairs(o.pairs);
  hhg::canonicalize(o.pairs);
  return o;
}

/// Runs `op` on copies of `base` with the k-th allocation failing, k = 1, 2,
/// ... until op completes without failing. After a failure the copy must be
/// valid and observably unchanged (strong guarantee). Returns the number of
/// allocation points tried.
template <class M, class Op>
int every_allocation_fails_cleanly(const M& base, const std::vector<handle>& hs, Op op, const char* what) {
  for (int k = 1; k < 10000; ++k) {
    M m = base;
    const observed<M> before = observe(m, hs);
    bool failed = false;
    fail_at.store(allocations.load() + static_cast<std::uint64_t>(k));
    try {
      op(m);
    } catch (const std::bad_alloc&) {
      failed = true;
    }
    fail_at.store(0);
    try {
      validate(m);
    } catch (const std::exception& e) {
      ADD_FAILURE() << what << ": allocation " << k << (failed ? " failed" : " (none failed)") << ", then " << e.what();
      return k;
    }
    if (!failed) return k - 1;
    EXPECT_TRUE(observe(m, hs) == before) << what << ": allocation " << k << " failed and the structure changed";
    if (::testing::Test::HasFailure()) return k;
  }
  ADD_FAILURE() << what << ": never completed";
  return 0;
}

template <class M>
class OutOfMemory : public ::testing::Test {};
// sweep_and_prune's recorded operations are strong like the others; its
// update() is covered by SweepAndPruneFailedUpdateRecovers below.
using oom_types = ::testing::Types<HHG_TEST_VARIANTS(hash_grids), brute_force<2, float>, brute_force<3, double>,
                                   hhg::sweep_and_prune<3, double>, hhg::sweep_and_prune<2, float>,
                                   hhg::linear_kdtree<3, double>, hhg::uniform_hashing<3, double>,
                                   hhg::multilevel_hashing<3, double>, hhg::hierarchical_hashing<3, double>,
                                   hhg::pivot_hashing<3, double>, hhg::pivot_chunked<3, double>>;
TYPED_TEST_SUITE(OutOfMemory, oom_types, method_names);

TYPED_TEST(OutOfMemory, EveryOperationStrongGuarantee) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  TypeParam base = make_method<TypeParam>();
  std::vector<handle> hs;
  for (const auto& b : hhg::scenes::make_zoo_scene<D, T>(hhg::scenes::zoo::mixed, 300, 3)) hs.push_back(base.insert(b));
  const auto far = cube<D, T>(1e6, 1);
  const auto huge = cube<D, T>(0, 1e4);
  int points = 0;
  points += every_allocation_fails_cleanly(
      base, hs, [&](TypeParam& m) { m.insert(huge); }, "insert (new grid level)");
  points += every_allocation_fails_cleanly(
      base, hs, [&](TypeParam& m) { m.insert(far); }, "insert (new cell)");
  points += every_allocation_fails_cleanly(
      base, hs, [&](TypeParam& m) { m.move(hs[5], far); }, "move (new cell)");
  points += every_allocation_fails_cleanly(
      base, hs, [&](TypeParam& m) { m.move(hs[6], huge); }, "move (new level)");
  points += every_allocation_fails_cleanly(
      base, hs, [&](TypeParam& m) { m.remove(hs[7]); }, "remove");
  points += every_allocation_fails_cleanly(
      base, hs,
      [&](TypeParam& m) {
        std::vector<handle_pair> out;  // fresh: detection allocates its output
        m.find_pairs(out);
      },
      "find_pairs");
  this->RecordProperty("allocation_points", points);
}

// Inserts that trigger the hash grid's activation (the 33rd object) and the
// growth of a grid (the 513th object of a 16^3 grid at density 8).
TYPED_TEST(OutOfMemory, ActivationAndGrowth) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  hhg::scenes::thesis_params p;
  p.n = 600;
  p.seed = 5;
  const hhg::scenes::thesis_scenario<D, T> scene(p);
  for (const std::size_t n : {std::size_t{32}, std::size_t{512}}) {
    TypeParam base = make_method<TypeParam>();
    std::vector<handle> hs;
    for (std::size_t i = 0; i < n; ++i) hs.push_back(base.insert(scene.boxes()[i]));
    const auto next = scene.boxes()[n];
    const int points = every_allocation_fails_cleanly(
        base, hs, [&](TypeParam& m) { m.insert(next); }, n == 32 ? "insert (activation)" : "insert (growth)");
    if constexpr (is_grids<TypeParam>) {
      TypeParam after = base;
      after.insert(next);
      if (n == 32) {
        EXPECT_TRUE(after.stats().grids_active);
      } else {
        EXPECT_GT(after.stats().grids[0].cell_count, base.stats().grids[0].cell_count) << "the grid grew";
      }
      EXPECT_GT(points, 0);
    }
  }
}

// A detection with pending work whose k-th allocation fails, for every k: the
// failure is reported (std::bad_alloc), every object stays stored with its
// box, validate() holds, and the next detection is exact. Pending work of
// every kind: moves (small and far), removals, insertions. With
// `twice`, the next detection fails at its k-th allocation too before one
// succeeds. Used where the detection finishes work the updates recorded:
// sweep and prune's update (its pair set grows while the axes are re-sorted,
// so it cannot reserve up front: a failure part-way makes the next update
// rebuild everything) and the hash grid's rebuild strategy.
template <class M>
void failed_detection_recovers(const M& empty, bool twice) {
  M base = empty;
  std::vector<handle> hs;
  const auto boxes = hhg::scenes::make_zoo_scene<3, double>(hhg::scenes::zoo::mixed, 400, 4);
  for (const auto& b : boxes) hs.push_back(base.insert(b));
  std::vector<handle_pair> out;
  base.find_pairs(out);
  hhg::scenes::rng r(8);
  for (std::size_t i = 0; i < 120; ++i) {
    auto b = boxes[r.below(boxes.size())];
    if (i % 10 == 0) b = cube<3, double>(1e3 + static_cast<double>(i), 2);
    base.move(hs[i], b);
  }
  for (std::size_t i = 200; i < 215; ++i) base.remove(hs[i]);
  for (std::size_t i = 0; i < 25; ++i) base.insert(boxes[r.below(boxes.size())]);
  M reference = base;
  std::vector<handle_pair> want;
  reference.find_pairs(want);
  hhg::canonicalize(want);
  int k = 1;
  for (; k < 100000; ++k) {
    M m = base;
    bool failed = false;
    fail_at.store(allocations.load() + static_cast<std::uint64_t>(k));
    try {
      m.find_pairs(out);
    } catch (const std::bad_alloc&) {
      failed = true;
    }
    if (failed && twice) {
      fail_at.store(allocations.load() + static_cast<std::uint64_t>(k));
      try {
        m.find_pairs(out);
      } catch (const std::bad_alloc&) {
      }
    }
    fail_at.store(0);
    ASSERT_NO_THROW(validate(m)) << "allocation " << k;
    EXPECT_EQ(m.size(), reference.size());
    for (std::size_t i = 0; i < hs.size(); ++i) {
      ASSERT_EQ(m.contains(hs[i]), reference.contains(hs[i]));
      if (m.contains(hs[i])) {
        const auto x = m.get(hs[i]), y = reference.get(hs[i]);
        ASSERT_TRUE(x.min == y.min && x.max == y.max) << "object " << i << " lost its box";
      }
    }
    std::vector<handle_pair> got;
    m.find_pairs(got);
    hhg::canonicalize(got);
    ASSERT_EQ(got, want) << "allocation " << k << " failed, the next detection differs";
    ASSERT_NO_THROW(validate(m));
    if (!failed) break;
  }
  EXPECT_GT(k, 3) << "the detection allocates at several points";
}

TEST(OutOfMemory, SweepAndPruneFailedUpdateRecovers) {
  failed_detection_recovers(hhg::sweep_and_prune<3, double>(), false);
  failed_detection_recovers(hhg::sweep_and_prune<3, double>(), true);
}

TEST(OutOfMemory, RebuildStrategyFailedDetectionRecovers) {
  config c;
  c.strategy = hhg::update_strategy::rebuild;
  failed_detection_recovers(hash_grids<3, double>(c), false);
  failed_detection_recovers(hash_grids<3, double>(c), true);
}

// The insert that activates the grids (the 33rd object), into a slot freed
// by clear(), whose k-th allocation fails, for every k: the slot taken is
// free again. (It stayed marked live while back on the free list: validate()
// failed, and the next clear() linked it in a second time, so that later two
// objects were given the same slot, one of them lost.)
TEST(OutOfMemory, FailedActivationFreesTheReusedSlot) {
  const auto at = [](int i) { return cube<3, double>(2.0 * i, 2.5); };  // each overlaps the next
  int k = 1;
  for (; k < 1000; ++k) {
    hash_grids<3, double> m;  // activation_threshold 32
    for (int i = 0; i < 40; ++i) m.insert(at(i));
    m.clear();  // not active, 40 free slots
    for (int i = 0; i < 32; ++i) m.insert(at(i));
    const bool failed = fails_at_allocation(k, [&] { m.insert(at(100)); });
    ASSERT_NO_THROW(m.validate()) << "allocation " << k << (failed ? " failed" : " did not fail");
    ASSERT_EQ(m.size(), failed ? 32u : 33u);
    m.clear();
    std::vector<handle> hs;
    for (int i = 0; i < 60; ++i) hs.push_back(m.insert(at(i)));
    ASSERT_NO_THROW(m.validate()) << "allocation " << k;
    std::vector<handle_pair> got, want;
    for (std::size_t i = 0; i + 1 < hs.size(); ++i) want.push_back({hs[i], hs[i + 1]});
    m.find_pairs(got);
    hhg::canonicalize(got);
    hhg::canonicalize(want);
    ASSERT_EQ(got, want) << "allocation " << k;
    if (!failed) break;
  }
  EXPECT_GT(k, 2) << "the activation allocates at several points";
}

// Random sequences of the hash grid's dynamic operations (dynamic_fuzz.hpp)
// in which some steps run with their k-th allocation failing (k random):
// a failed insert, remove, move or detection changes nothing, a failed
// batch move leaves each object its old box or one of its new ones, and
// after every step the structure validates and matches the model and brute
// force. (Found the slot a failed activation left live, above.)
template <int D, class T>
void out_of_memory_sequences() {
  SCOPED_TRACE(std::to_string(D) + "D " + (std::is_same_v<T, float> ? "float" : "double"));
  hhg::thread_pool pool(2);
  const auto hook = [](std::uint64_t k, const std::function<void()>& f) {
    return fails_at_allocation(static_cast<int>(k), f);
  };
  for (std::uint64_t seed = 1; seed <= 3; ++seed)
    for (int shape = 0; shape < 6; ++shape) {
      const int variant = static_cast<int>((seed * 5 + static_cast<std::uint64_t>(shape)) % 32);
      SCOPED_TRACE("seed " + std::to_string(seed) + " shape " + std::to_string(shape) + " variant " +
                   std::to_string(variant));
      const auto [c, small] = fuzz_config(variant);
      dynamic_fuzz<D, T> f(seed, shape, c, small, &pool, hook);
      try {
        f.run(150);
      } catch (const std::exception& e) {
        FAIL() << e.what();
      }
    }
}

TEST(OutOfMemory, RandomSequences) {
  out_of_memory_sequences<2, float>();
  out_of_memory_sequences<2, double>();
  out_of_memory_sequences<3, float>();
  out_of_memory_sequences<3, double>();
}

// A batch move of the hash grid big enough to run in two passes (objects
// that keep their cell first, then the others in cell order), whose k-th
// allocation fails, for every k: no object is lost, each has its old box or
// one of its new ones, validate() holds, and the next detection is exact.
TEST(OutOfMemory, BatchMoveFailureLosesNothing) {
  using B = box<3, double>;
  hash_grids<3, double> base;
  std::vector<handle> hs;
  const auto boxes = hhg::scenes::make_zoo_scene<3, double>(hhg::scenes::zoo::mixed, 2000, 6);
  for (const auto& b : boxes) hs.push_back(base.insert(b));
  std::vector<handle_pair> out;
  base.find_pairs(out);
  hhg::scenes::rng r(9);
  std::vector<handle> which;
  std::vector<B> where;
  std::vector<std::vector<B>> given(hs.size());
  for (int k = 0; k < 4500; ++k) {  // each handle about twice
    const std::size_t i = r.below(hs.size());
    B b = boxes[i];
    if (k % 5 == 0) b = boxes[r.below(boxes.size())];         // a jump across the scene
    if (k % 11 == 0) b = cube<3, double>(1e4 + 3.0 * k, 40);  // another grid, far out
    for (int a = 0; a < 3; ++a) {
      const double d = r.uniform(-0.2, 0.2);
      b.min[a] += d;
      b.max[a] += d;
    }
    which.push_back(hs[i]);
    where.push_back(b);
    given[i].push_back(b);
  }
  int k = 1;
  for (; k < 100000; ++k) {
    hash_grids<3, double> m = base;
    bool failed = false;
    fail_at.store(allocations.load() + static_cast<std::uint64_t>(k));
    try {
      m.move(std::span<const handle>(which), std::span<const B>(where));
    } catch (const std::bad_alloc&) {
      failed = true;
    }
    fail_at.store(0);
    ASSERT_NO_THROW(m.validate()) << "allocation " << k << (failed ? " failed" : " did not fail");
    ASSERT_EQ(m.size(), hs.size());
    std::vector<B> now;
    for (std::size_t i = 0; i < hs.size(); ++i) {
      ASSERT_TRUE(m.contains(hs[i])) << "object " << i << " lost";
      const B x = m.get(hs[i]);
      bool known = x.min == boxes[i].min && x.max == boxes[i].max;
      for (const B& g : given[i]) known = known || (x.min == g.min && x.max == g.max);
      ASSERT_TRUE(known) << "object " << i << " has a box it was never given (allocation " << k << ")";
      now.push_back(x);
    }
    std::vector<handle_pair> got;
    m.find_pairs(got);
    std::vector<handle_pair> want;
    for (std::size_t i = 0; i < now.size(); ++i)
      for (std::size_t j = i + 1; j < now.size(); ++j)
        if (hhg::overlaps(now[i], now[j])) want.push_back({hs[i], hs[j]});
    hhg::canonicalize(got);
    hhg::canonicalize(want);
    ASSERT_EQ(got, want) << "allocation " << k << " failed, the next detection differs";
    if (!failed) break;
  }
  EXPECT_GT(k, 3) << "the batch allocates at several points";
}

// A batch that moves every object once takes the bulk path (the grids laid out
// anew); it allocates everything before it changes the storage, so a failure at
// any allocation leaves every object with its old box, and success moves all.
TEST(OutOfMemory, BulkBatchMoveFailureChangesNothing) {
  using B = box<3, double>;
  hash_grids<3, double> base;
  std::vector<handle> hs;
  const auto boxes = hhg::scenes::make_zoo_scene<3, double>(hhg::scenes::zoo::varied12, 5000, 7);
  for (const auto& b : boxes) hs.push_back(base.insert(b));
  std::vector<handle_pair> out;
  base.find_pairs(out);
  hhg::scenes::rng r(4);
  std::vector<B> where;
  for (std::size_t i = 0; i < hs.size(); ++i) {
    B b = boxes[i];
    if (i % 9 == 0) b = boxes[r.below(boxes.size())];  // a jump, maybe to another grid
    for (int a = 0; a < 3; ++a) {
      const double d = r.uniform(-0.3, 0.3);
      b.min[a] += d;
      b.max[a] += d;
    }
    where.push_back(b);
  }
  int k = 1, undone = 0;
  for (; k < 1000; ++k) {
    hash_grids<3, double> m = base;
    const bool failed = fails_at_allocation(k, [&] { m.move(std::span<const handle>(hs), std::span<const B>(where)); });
    // (the batch is in slot order: the slots take the new grids and cells
    // before the last allocations; a failure there puts the old ones back,
    // a settle, and the checks below are const: they settle nothing)
    undone += failed && m.path_counts().settles > base.path_counts().settles;
    ASSERT_NO_THROW(m.validate()) << "allocation " << k;
    ASSERT_EQ(m.size(), hs.size());
    for (std::size_t i = 0; i < hs.size(); ++i) {
      const B x = m.get(hs[i]), want = failed ? boxes[i] : where[i];
      ASSERT_TRUE(x.min == want.min && x.max == want.max) << "object " << i << ", allocation " << k;
    }
    std::vector<handle_pair> got;
    m.find_pairs(got);
    std::vector<handle_pair> want;
    const auto& now = failed ? boxes : where;
    for (std::size_t i = 0; i < now.size(); ++i)
      for (std::size_t j = i + 1; j < now.size(); ++j)
        if (hhg::overlaps(now[i], now[j])) want.push_back({hs[i], hs[j]});
    hhg::canonicalize(got);
    hhg::canonicalize(want);
    ASSERT_EQ(got, want) << "allocation " << k;
    if (!failed) break;
  }
  EXPECT_GT(k, 3) << "the bulk move allocates at several points";
  EXPECT_GT(undone, 0) << "no allocation failed after the slots took the new cells";
}

// insert(span) through the bulk insert (which appends the new handles to the
// vector it returns): into an empty structure (activated with no object,
// every box laid out in bulk) and into an active one (all in bulk). With
// each allocation failing in turn, the batch throws std::bad_alloc and the
// structure is as before: the stored objects, their boxes and pairs, and no
// other object (size); the empty one still inactive, with no level; then it
// completes with handles in the order of the boxes and the pairs of brute
// force.
TEST(OutOfMemory, BulkInsertFailureChangesNothing) {
  using B = box<3, double>;
  const auto first = hhg::scenes::make_zoo_scene<3, double>(hhg::scenes::zoo::mixed, 300, 11);
  const auto batch = hhg::scenes::make_zoo_scene<3, double>(hhg::scenes::zoo::varied12, 400, 12);
  hhg::detail::tuning t;
  t.bulk_min = 64;  // the bulk insert at test sizes
  for (const bool empty : {true, false}) {
    hash_grids<3, double> base;
    base.set_tuning(t);
    std::vector<handle> hs;
    if (!empty)
      for (const auto& b : first) hs.push_back(base.insert(b));
    const std::uint64_t bulk_before = base.path_counts().bulk_inserts;
    int k = 1;
    for (; k < 10000; ++k) {
      hash_grids<3, double> m = base;
      const observed<hash_grids<3, double>> before = observe(m, hs);
      std::vector<handle> got;
      bool failed = false;
      fail_at.store(allocations.load() + static_cast<std::uint64_t>(k));
      try {
        got = m.insert(std::span<const B>(batch));
      } catch (const std::bad_alloc&) {
        failed = true;
      }
      fail_at.store(0);
      ASSERT_NO_THROW(m.validate()) << "allocation " << k;
      if (failed) {
        ASSERT_TRUE(observe(m, hs) == before) << (empty ? "empty" : "active") << ": allocation " << k;
        if (empty) {
          ASSERT_FALSE(m.stats().grids_active) << "allocation " << k;
          ASSERT_TRUE(m.stats().grids.empty()) << "allocation " << k;
        }
        continue;
      }
      EXPECT_EQ(m.path_counts().bulk_inserts, bulk_before + 1) << "the bulk path ran";
      EXPECT_EQ(m.path_counts().bulk_activations, empty ? 1u : 0u);
      ASSERT_EQ(got.size(), batch.size());
      std::vector<B> all = empty ? std::vector<B>{} : first;
      all.insert(all.end(), batch.begin(), batch.end());
      std::vector<handle> every = hs;
      every.insert(every.end(), got.begin(), got.end());
      ASSERT_EQ(m.size(), all.size());
      for (std::size_t i = 0; i < all.size(); ++i) {
        const B x = m.get(every[i]);
        ASSERT_TRUE(x.min == all[i].min && x.max == all[i].max) << "object " << i;
      }
      std::vector<handle_pair> pairs, want;
      m.find_pairs(pairs);
      for (std::size_t i = 0; i < all.size(); ++i)
        for (std::size_t j = i + 1; j < all.size(); ++j)
          if (hhg::overlaps(all[i], all[j])) want.push_back({every[i], every[j]});
      hhg::canonicalize(pairs);
      hhg::canonicalize(want);
      EXPECT_EQ(pairs, want);
      break;
    }
    EXPECT_GT(k, 3) << "the bulk insert allocates at several points";
  }
}

// Needles that turn from x to y make the cells chosen for them wrong: a
// detection re-shapes them (check_shape), every grid laid out again in one
// pass. A failure at any allocation of that detection loses no object (those
// not yet placed are kept apart), validate() holds, and the next detection is
// exact.
TEST(OutOfMemory, ReshapeFailureLosesNothing) {
  using B = box<3, double>;
  std::vector<B> bs = needles_along_x(600, 30, 21);
  hhg::detail::tuning t;
  t.bulk_min = 64;  // the bulk paths at test sizes
  hash_grids<3, double> base;
  base.set_tuning(t);
  const std::vector<handle> hs = base.insert(std::span<const B>(bs));
  ASSERT_EQ(base.path_counts().axes_scaled, 1u);
  for (B& b : bs) {  // turned to y
    b.max[0] = b.min[0] + 1;
    b.max[1] = b.min[1] + 10;
  }
  base.move(std::span<const handle>(hs), std::span<const B>(bs));
  int calls = 0;  // detections up to the one that re-shapes
  {
    hash_grids<3, double> probe = base;
    std::vector<handle_pair> out;
    while (probe.path_counts().reshapes == 0 && calls < 8) {
      probe.find_pairs(out);
      ++calls;
    }
    ASSERT_EQ(probe.path_counts().reshapes, 1u);
  }
  std::vector<handle_pair> want;
  for (std::size_t i = 0; i < bs.size(); ++i)
    for (std::size_t j = i + 1; j < bs.size(); ++j)
      if (hhg::overlaps(bs[i], bs[j])) want.push_back({hs[i], hs[j]});
  hhg::canonicalize(want);
  int k = 1;
  for (; k < 100000; ++k) {
    hash_grids<3, double> m = base;
    std::vector<handle_pair> got;
    for (int c = 1; c < calls; ++c) m.find_pairs(got);
    const bool failed = fails_at_allocation(k, [&] { m.find_pairs(got); });
    ASSERT_NO_THROW(m.validate()) << "allocation " << k;
    ASSERT_EQ(m.size(), hs.size());
    for (std::size_t i = 0; i < hs.size(); ++i) {
      ASSERT_TRUE(m.contains(hs[i])) << "object " << i << " lost (allocation " << k << ")";
      const B x = m.get(hs[i]);
      ASSERT_TRUE(x.min == bs[i].min && x.max == bs[i].max) << "object " << i << " (allocation " << k << ")";
    }
    m.find_pairs(got);
    hhg::canonicalize(got);
    ASSERT_EQ(got, want) << "allocation " << k << (failed ? " failed" : " did not fail");
    if (!failed) {
      EXPECT_EQ(m.path_counts().reshapes, 1u);
      EXPECT_EQ(m.path_counts().bulk_inserts, base.path_counts().bulk_inserts + 1) << "the layout in one pass";
      break;
    }
  }
  EXPECT_GT(k, 3) << "the re-shaping detection allocates at several points";
}

}  // namespace
}  // namespace hhg_test
