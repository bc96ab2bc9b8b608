// Dynamic use against the oracle: random interleavings of insert, move (small
// moves, jumps, resizes across grid levels, to and from infinity, far away and
// back), remove and clear, for several configurations; validate() after every
// operation. Plus handle semantics, clear(), copies and moves.
#include <atomic>
#include <limits>
#include <optional>
#include <span>
#include <string_view>
#include <thread>

#include "support.hpp"

namespace hhg_test {
namespace {

using hhg::scenes::rng;

template <class M>
class Dynamic : public ::testing::Test {};
TYPED_TEST_SUITE(Dynamic, method_types, method_names);

TYPED_TEST(Dynamic, RandomSequences) {
  for (const named_config& nc : test_configs()) {
    for (std::uint64_t seed = 1; seed <= 8; ++seed) run_sequence<TypeParam>(seed, nc, 500);
  }
}

TYPED_TEST(Dynamic, LongSequence) { run_sequence<TypeParam>(1000, {"default", {}}, 6000); }

// Bursts that cross the activation threshold in both directions.
TYPED_TEST(Dynamic, AroundTheActivationThreshold) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  rng r(77);
  mirror<TypeParam> m;
  for (int round = 0; round < 6; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    while (m.live_ids().size() < 34) {
      m.insert(random_box<D, T>(r, 5));
      ASSERT_TRUE(m.check());
    }
    while (m.live_ids().size() > 28) {
      m.remove(m.live_ids()[r.below(m.live_ids().size())]);
      ASSERT_TRUE(m.check());
    }
    if (round == 3) {
      m.clear();
      ASSERT_TRUE(m.check());
    }
  }
}

// Handles: null, dense indices, reuse with a new generation, stale after remove and clear.
TYPED_TEST(Dynamic, HandleSemantics) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  TypeParam m = make_method<TypeParam>();
  EXPECT_FALSE(m.contains(handle{}));
  EXPECT_FALSE(static_cast<bool>(handle{}));
  std::vector<handle> hs;
  for (int i = 0; i < 50; ++i) hs.push_back(m.insert(cube<D, T>(i, 0.5)));
  for (const handle h : hs) {
    EXPECT_TRUE(static_cast<bool>(h));
    EXPECT_LT(h.index, 50u) << "indices are dense";
    EXPECT_TRUE(m.contains(h));
  }
  for (std::size_t i = 0; i < hs.size(); ++i) {
    for (std::size_t j = i + 1; j < hs.size(); ++j) EXPECT_NE(hs[i].index, hs[j].index);
  }
  m.remove(hs[10]);
  EXPECT_FALSE(m.contains(hs[10]));
  const handle again = m.insert(cube<D, T>(100, 1));
  EXPECT_EQ(again.index, hs[10].index) << "the free slot is reused";
  EXPECT_NE(again.generation, hs[10].generation);
  EXPECT_FALSE(m.contains(hs[10]));
  EXPECT_TRUE(m.contains(again));
  EXPECT_EQ(m.get(again), (cube<D, T>(100, 1)));
  EXPECT_EQ(m.size(), 50u);
  m.clear();
  EXPECT_EQ(m.size(), 0u);
  for (const handle h : hs) EXPECT_FALSE(m.contains(h));
  EXPECT_FALSE(m.contains(again));
  // After clear the slots are reused; indices stay below the peak count.
  for (int i = 0; i < 50; ++i) {
    const handle h = m.insert(cube<D, T>(i, 0.5));
    EXPECT_LT(h.index, 50u);
    for (const handle old : hs) EXPECT_NE(h, old) << "a reused slot has a new generation";
  }
}

TYPED_TEST(Dynamic, ConceptSatisfied) {
  static_assert(hhg::dynamic_broad_phase<TypeParam>);
  TypeParam m = make_method<TypeParam>();
  EXPECT_EQ(m.size(), 0u);
}

// --- hash_grids only: clear, copies and moves -----------------------------------

template <class M>
class GridSemantics : public ::testing::Test {};
TYPED_TEST_SUITE(GridSemantics, grid_types, method_names);

template <class M>
std::vector<handle_pair> pairs_of(M& m) {
  std::vector<handle_pair> p;
  m.find_pairs(p);
  hhg::canonicalize(p);
  return p;
}

// b shifted by up to `reach` on each axis, independently
template <class B>
B jiggled(B b, hhg::scenes::rng& r, double reach) {
  using T = std::remove_cvref_t<decltype(b.min[0])>;
  for (std::size_t a = 0; a < b.min.size(); ++a) {
    const T d = static_cast<T>(r.uniform(-reach, reach));
    b.min[a] = static_cast<T>(b.min[a] + d);
    b.max[a] = static_cast<T>(b.max[a] + d);
  }
  return b;
}

TYPED_TEST(GridSemantics, ClearResetsEverything) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  mirror<TypeParam> m;
  for (const auto& b : hhg::scenes::make_zoo_scene<D, T>(hhg::scenes::zoo::mixed, 400, 9)) m.insert(b);
  ASSERT_TRUE(m.check());
  EXPECT_TRUE(m.subject().stats().grids_active);
  m.clear();
  const auto st = m.subject().stats();
  EXPECT_EQ(st.objects, 0u);
  EXPECT_FALSE(st.grids_active) << "clear() resets activation";
  EXPECT_TRUE(st.grids.empty()) << "clear() removes every grid";
  ASSERT_TRUE(m.check());
  for (const auto& b : hhg::scenes::make_zoo_scene<D, T>(hhg::scenes::zoo::varied12, 300, 10)) m.insert(b);
  ASSERT_TRUE(m.check());
}

TYPED_TEST(GridSemantics, CopiesAreIndependent) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  config c;
  c.hierarchy_factor = 3;
  TypeParam a(c);
  std::vector<handle> hs;
  for (const auto& b : hhg::scenes::make_zoo_scene<D, T>(hhg::scenes::zoo::mixed, 500, 11)) hs.push_back(a.insert(b));
  const auto before = pairs_of(a);
  ASSERT_FALSE(before.empty());

  TypeParam b(a);  // copy construction
  b.validate();
  EXPECT_EQ(pairs_of(b), before);
  EXPECT_EQ(b.settings().hierarchy_factor, 3.0);
  for (std::size_t i = 0; i < hs.size(); i += 3) b.move(hs[i], cube<D, T>(0, 1));
  for (std::size_t i = 1; i < hs.size(); i += 3) b.remove(hs[i]);
  b.validate();
  EXPECT_NE(pairs_of(b), before);
  EXPECT_EQ(pairs_of(a), before) << "changing the copy changed the original";
  a.validate();

  TypeParam d;  // copy assignment over a non-empty structure with another config
  d.insert(cube<D, T>(0, 1));
  d = a;
  d.validate();
  EXPECT_EQ(d.settings().hierarchy_factor, 3.0);
  EXPECT_EQ(pairs_of(d), before);
  EXPECT_EQ(d.size(), a.size());

  TypeParam& alias = d;
  d = alias;  // self-assignment
  d.validate();
  EXPECT_EQ(pairs_of(d), before);
}

// Copying reads only, so a for_each_pair callback may copy the structure it
// visits (copy construction and assignment): the copy is not in a detection
// and takes every change, during the callback and after it.
TYPED_TEST(GridSemantics, CopyTakenInsideForEachPairIsUsable) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  TypeParam a;
  for (const auto& b : hhg::scenes::make_zoo_scene<D, T>(hhg::scenes::zoo::varied12, 300, 12)) a.insert(b);
  const auto before = pairs_of(a);
  ASSERT_FALSE(before.empty());
  std::optional<TypeParam> constructed;
  TypeParam assigned;
  bool inside = false;
  a.for_each_pair([&](handle, handle) {
    if (constructed) return;
    constructed.emplace(a);
    assigned = a;
    inside = true;
    constructed->insert(cube<D, T>(1e3, 1));  // threw reentrant_call: the copy took the running detection's flag
  });
  ASSERT_TRUE(inside);
  for (TypeParam* c : {&*constructed, &assigned}) {
    const handle h = c->insert(cube<D, T>(2e3, 1));
    c->move(h, cube<D, T>(3e3, 1));
    c->remove(h);
    std::vector<handle_pair> p;
    c->find_pairs(p);
    c->validate();
  }
  EXPECT_EQ(pairs_of(assigned), before);
  EXPECT_EQ(pairs_of(a), before);
}

TYPED_TEST(GridSemantics, MovesTransferAndMovedFromIsAssignable) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  TypeParam a;
  for (const auto& b : hhg::scenes::make_zoo_scene<D, T>(hhg::scenes::zoo::varied12, 300, 12)) a.insert(b);
  const auto before = pairs_of(a);
  TypeParam b(std::move(a));
  b.validate();
  EXPECT_EQ(pairs_of(b), before);
  TypeParam c;
  c = std::move(b);
  c.validate();
  EXPECT_EQ(pairs_of(c), before);
  // Moved-from objects can be assigned to again.
  a = c;
  a.validate();
  EXPECT_EQ(pairs_of(a), before);
  b = TypeParam();
  EXPECT_EQ(b.size(), 0u);
  b.insert(cube<D, T>(0, 1));
  EXPECT_EQ(b.size(), 1u);
}

// A copy taken while a rebuild is pending (rebuild strategy, moves not yet
// applied) detects the same pairs as the original.
TYPED_TEST(GridSemantics, CopyWithPendingRebuild) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  config c;
  c.strategy = hhg::update_strategy::rebuild;
  mirror<TypeParam> m(c);
  const auto boxes = hhg::scenes::make_zoo_scene<D, T>(hhg::scenes::zoo::varied12, 400, 14);
  for (const auto& b : boxes) m.insert(b);
  ASSERT_TRUE(m.check());
  for (std::size_t i = 0; i < boxes.size(); ++i) m.move(i, boxes[(i + 1) % boxes.size()]);
  TypeParam copy(m.subject());
  std::vector<handle_pair> from_copy;
  copy.find_pairs(from_copy);
  hhg::canonicalize(from_copy);
  EXPECT_EQ(from_copy, m.expected());
  ASSERT_TRUE(m.check());
}

// The batch move equals the moves one by one, in order (a handle may appear
// twice: the last box wins); a bad handle or box anywhere changes nothing.
TYPED_TEST(GridSemantics, BatchMoveEqualsSingleMoves) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  using B = box<D, T>;
  for (const auto strategy : {hhg::update_strategy::incremental, hhg::update_strategy::rebuild}) {
    config c;
    c.strategy = strategy;
    TypeParam batch(c), single(c);
    std::vector<handle> hb, hs;
    const auto boxes = hhg::scenes::make_zoo_scene<D, T>(hhg::scenes::zoo::varied12, 3000, 21);
    for (const auto& b : boxes) {
      hb.push_back(batch.insert(b));
      hs.push_back(single.insert(b));
    }
    hhg::scenes::rng r(5);
    for (int step = 0; step < 4; ++step) {
      std::vector<handle> which_b, which_s;
      std::vector<B> where;
      // below and above the size at which the batch runs in two passes (4096);
      // the big batches repeat each handle about three times
      const int count = step % 2 == 0 ? 2500 : 9000;
      for (int k = 0; k < count; ++k) {
        const std::size_t i = r.below(boxes.size());
        which_b.push_back(hb[i]);
        which_s.push_back(hs[i]);
        // small moves, jumps across the scene, and size changes (other grids)
        const auto& o = boxes[r.below(boxes.size())];
        B b = k % 3 == 0 ? o : batch.get(hb[i]);
        const double scale = k % 7 == 0 ? 20.0 : 1.0;
        for (int a = 0; a < D; ++a) {
          const T d = static_cast<T>(r.uniform(-0.3, 0.3));
          b.min[a] = static_cast<T>(b.min[a] + d);
          b.max[a] = static_cast<T>(b.min[a] + (b.max[a] - b.min[a] + static_cast<T>(0.1)) * scale);
        }
        where.push_back(b);
      }
      batch.move(std::span<const handle>(which_b), std::span<const B>(where));
      for (std::size_t k = 0; k < which_s.size(); ++k) single.move(which_s[k], where[k]);
      ASSERT_NO_THROW(batch.validate());
      ASSERT_EQ(pairs_of(batch), pairs_of(single)) << "step " << step;  // same insert order: same handles
      for (std::size_t i = 0; i < hb.size(); ++i) {                     // the last box of each handle wins
        const B x = batch.get(hb[i]), y = single.get(hs[i]);
        ASSERT_TRUE(x.min == y.min && x.max == y.max) << "object " << i << ", step " << step;
      }
      // a bad entry at the end: nothing changes
      const auto before = pairs_of(batch);
      std::vector<handle> bad_h = which_b;
      std::vector<B> bad_b = where;
      for (auto& b : bad_b)
        for (int a = 0; a < D; ++a) b.min[a] = static_cast<T>(b.min[a] + 50);
      bad_h.back() = handle{};
      EXPECT_THROW(batch.move(std::span<const handle>(bad_h), std::span<const B>(bad_b)), hhg::error);
      bad_h.back() = which_b.back();
      bad_b.back().min[0] = std::numeric_limits<T>::quiet_NaN();
      EXPECT_THROW(batch.move(std::span<const handle>(bad_h), std::span<const B>(bad_b)), hhg::error);
      EXPECT_THROW(batch.move(std::span<const handle>(bad_h), std::span<const B>(bad_b).first(3)), hhg::error);
      EXPECT_EQ(pairs_of(batch), before);
      ASSERT_NO_THROW(batch.validate());
    }
  }
}

// A batch that moves most objects, each once, is applied by laying the grids
// out anew (bulk_move, hash_grids.md "Batch moves"). Against brute force and
// against the same moves one by one: every object moved in handle order, in
// shuffled order, and only 60 % of them (the rest are read from the old
// storage); boxes that change to another existing grid, far-out and negative
// coordinates, touching and zero-size boxes; and batches the bulk path must
// leave to the object-by-object path (a size with no grid yet, an unbounded
// box, a handle twice), with both update strategies.
TYPED_TEST(GridSemantics, BulkBatchMoveMatchesBruteForce) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  using B = box<D, T>;
  for (const auto strategy : {hhg::update_strategy::incremental, hhg::update_strategy::rebuild}) {
    config c;
    c.strategy = strategy;
    mirror<TypeParam> m(c);
    TypeParam single(c);
    std::vector<handle> hs1;
    const auto boxes = hhg::scenes::make_zoo_scene<D, T>(hhg::scenes::zoo::varied12, 6000, 33);
    for (std::size_t i = 0; i < boxes.size(); ++i) {
      B b = boxes[i];
      if (i % 97 == 0)  // far from the origin, negative
        for (int a = 0; a < D; ++a) {
          b.min[a] = static_cast<T>(b.min[a] - 3e5);
          b.max[a] = static_cast<T>(b.max[a] - 3e5);
        }
      m.insert(b);
      hs1.push_back(single.insert(b));
    }
    ASSERT_TRUE(m.check());
    hhg::scenes::rng r(8);
    for (int step = 0; step < 9; ++step) {
      std::vector<std::size_t> ids(boxes.size());
      for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = i;
      if (step % 3 == 1)  // shuffled
        for (std::size_t i = ids.size(); i-- > 1;) std::swap(ids[i], ids[r.below(i + 1)]);
      if (step % 3 == 2) ids.resize(ids.size() * 6 / 10);  // 60 %: the others stay
      std::vector<B> where;
      for (std::size_t k = 0; k < ids.size(); ++k) {
        B b = jiggled(m.box_of(ids[k]), r, 0.4);
        if (k % 13 == 0) b = boxes[r.below(boxes.size())];  // a jump, maybe to another grid
        if (k % 101 == 0) b.max = b.min;                    // zero size
        if (k % 103 == 0 && k > 0) {                        // touching the previous box
          const B& prev = where.back();
          for (int a = 0; a < D; ++a) {
            b.min[a] = prev.max[a];
            b.max[a] = static_cast<T>(prev.max[a] + (prev.max[a] - prev.min[a]));
          }
        }
        if (step == 4 && k == 17) b = B{};                                       // all zero
        if (step == 5 && k == 5) b.max[0] = static_cast<T>(b.min[0] + 1e4);      // no grid yet
        if (step == 6 && k == 9) b.max[0] = std::numeric_limits<T>::infinity();  // unbounded
        where.push_back(b);
      }
      if (step == 7) {  // a handle twice: the last box wins
        ids.push_back(ids.front());
        where.push_back(where[1]);
      }
      m.move_batch(ids, where);
      std::vector<handle> which;
      for (std::size_t id : ids) which.push_back(hs1[id]);
      for (std::size_t k = 0; k < ids.size(); ++k) single.move(which[k], where[k]);
      ASSERT_TRUE(m.check()) << "step " << step;  // against brute force, with validate()
      ASSERT_EQ(pairs_of(m.subject()), pairs_of(single)) << "step " << step;
    }
  }
}

// Active grids and no grid at all: every object unbounded (kept apart),
// more of them than the bulk path's smallest batch. A batch of all of them
// is not a bulk move (bulk_move reads grid 0's geometry before its loop, so
// it declines first); it goes one by one, and the pairs match brute force
// (each box pair overlaps on the axes the boxes are infinite on, and on the
// others only every 50th box's neighbour).
TYPED_TEST(GridSemantics, BatchOfObjectsKeptApartOnly) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  using B = box<D, T>;
  mirror<TypeParam> m;
  const std::size_t n = 5000;
  std::vector<std::size_t> ids;
  std::vector<B> where;
  for (std::size_t i = 0; i < n; ++i) {
    B b;
    for (int a = 0; a < D; ++a) {
      b.min[a] = static_cast<T>(2 * i);
      b.max[a] = static_cast<T>(2 * i + (i % 50 == 0 ? 2 : 1));  // touching the next one, or apart
    }
    b.max[0] = std::numeric_limits<T>::infinity();
    ids.push_back(m.insert(b));
    where.push_back(b);
  }
  ASSERT_TRUE(m.check());
  ASSERT_TRUE(m.subject().stats().grids.empty());
  for (B& b : where)
    for (int a = 1; a < D; ++a) {
      b.min[a] = static_cast<T>(b.min[a] + 0.5);
      b.max[a] = static_cast<T>(b.max[a] + 0.5);
    }
  m.move_batch(ids, where);
  ASSERT_TRUE(m.check());
  EXPECT_EQ(m.subject().path_counts().batch_bulk, 0u);
  EXPECT_EQ(pairs_of(m.subject()).size(), n / 50);
}

// A bulk move (hash_grids::move of most objects at once) of a batch in slot
// order does not write the objects' pool positions into their slots;
// whatever non-const call reads them settles them first (path_counts().settles),
// const calls find the objects in their cells without writing. Bulk
// moves in a row with only detections between them (in slot order, a part
// of the objects, shuffled, with a reused slot's new generation, with jumps
// to other grids), each followed by an operation that reads the slots
// (remove, move, insert, get), every detection against brute force.
TYPED_TEST(GridSemantics, BulkMovesInARowThenSingleOperations) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  using B = box<D, T>;
  mirror<TypeParam> m;
  const auto boxes = hhg::scenes::make_zoo_scene<D, T>(hhg::scenes::zoo::varied12, 8000, 41);
  for (const B& b : boxes) m.insert(b);
  B slab = boxes[0];  // kept apart (unbounded), never in a batch
  slab.min[0] = -std::numeric_limits<T>::infinity();
  slab.max[0] = std::numeric_limits<T>::infinity();
  const std::size_t apart = m.insert(slab);
  hhg::scenes::rng r(5);
  auto detection_matches = [&]() {
    std::vector<handle_pair> got;
    m.subject().find_pairs(got);
    const std::size_t reported = got.size();
    hhg::canonicalize(got);
    return m.compare(got, m.expected(), reported);
  };
  // the live bounded objects in slot order
  auto by_slot = [&]() {
    std::vector<std::size_t> ids;
    for (std::size_t id : m.live_ids())
      if (id != apart) ids.push_back(id);
    std::sort(ids.begin(), ids.end(),
              [&](std::size_t a, std::size_t b) { return m.subject_handle(a).index < m.subject_handle(b).index; });
    return ids;
  };
  auto moved = [&](const std::vector<std::size_t>& ids) {
    std::vector<B> where;
    for (std::size_t k = 0; k < ids.size(); ++k) {
      B b = jiggled(m.box_of(ids[k]), r, 0.4);
      if (k % 17 == 0) b = boxes[r.below(boxes.size())];  // a jump, often to another grid
      where.push_back(b);
    }
    return where;
  };
  for (int step = 0; step < 9; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    std::vector<std::size_t> ids = by_slot();
    if (step == 3 || step == 4) ids.resize(ids.size() * 6 / 10);  // the others stay (4800: still a bulk move)
    if (step == 5)
      for (std::size_t i = ids.size(); i-- > 1;) std::swap(ids[i], ids[r.below(i + 1)]);
    m.move_batch(ids, moved(ids));
    ASSERT_NO_THROW(m.subject().validate());  // (every slot's grid and cell, stale positions or not)
    ASSERT_TRUE(detection_matches());
    switch (step) {
      case 2: {  // a slot reused: the next batch in slot order has a generation apart
        const B b = m.box_of(ids[7]);
        m.remove(ids[7]);
        m.insert(b);
        ASSERT_EQ(m.subject_handle(m.ids() - 1).index, m.subject_handle(ids[7]).index);
        break;
      }
      case 4:  // single moves: within the cell, to another cell, to another grid
        for (std::size_t k = 0; k < 40; ++k) {
          const std::size_t id = ids[r.below(ids.size())];
          B b = m.box_of(id);
          if (k % 3 == 1) b = boxes[r.below(boxes.size())];
          if (k % 3 == 2) b = shifted(b, 0.01);
          m.move(id, b);
        }
        break;
      case 6: {  // get: the boxes just written (read-only: nothing settled)
        const auto settled = m.subject().path_counts().settles;
        for (std::size_t id : ids) ASSERT_TRUE(m.subject().get(m.subject_handle(id)) == m.box_of(id)) << id;
        ASSERT_EQ(m.subject().path_counts().settles, settled);
        break;
      }
      case 7:  // removes and inserts
        for (std::size_t k = 0; k < 30; ++k) m.remove(ids[k * 7]);
        for (std::size_t k = 0; k < 30; ++k) m.insert(boxes[r.below(boxes.size())]);
        break;
      default: break;
    }
    ASSERT_TRUE(detection_matches());
  }
  ASSERT_TRUE(m.check());  // with validate() and get() of every object
  // (the batches of steps 0-2 are in slot order: step 2's remove settled
  // their positions; after it, the reused slot's new generation puts the
  // batches out of slot order, and the bulk moves write every slot)
  EXPECT_EQ(m.subject().path_counts().settles, 1u);
}

// Each call that reads the pool positions a bulk move left stale, as the
// first call after it: remove, move, a small batch (the one-by-one path), a
// batch with a bad handle (checked after the bulk path declines), a rebuild
// (strategy rebuild), and insert, which reads none. Each settles once (or
// not at all), and the structure then matches brute force and validates.
TYPED_TEST(GridSemantics, FirstCallAfterBulkMoveSettlesPositions) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  using B = box<D, T>;
  const auto boxes = hhg::scenes::make_zoo_scene<D, T>(hhg::scenes::zoo::varied12, 2000, 23);
  hhg::detail::tuning t;
  t.bulk_rows_min = 0;  // (the bulk path at this size whatever the walk)
  for (const auto strategy : {hhg::update_strategy::incremental, hhg::update_strategy::rebuild})
    for (int kind = 0; kind < 5; ++kind) {
      SCOPED_TRACE("kind " + std::to_string(kind));
      config c;
      c.strategy = strategy;
      TypeParam m(c);
      m.set_tuning(t);
      std::vector<handle> hs;
      for (const B& b : boxes) hs.push_back(m.insert(b));
      std::vector<B> now(boxes.size());
      for (std::size_t i = 0; i < boxes.size(); ++i) now[i] = shifted(boxes[(i * 7 + 3) % boxes.size()], 0.1);
      m.move(std::span<const handle>(hs), std::span<const B>(now));
      ASSERT_EQ(m.path_counts().batch_bulk, 1u);
      ASSERT_EQ(m.path_counts().settles, 0u);
      std::vector<bool> live(boxes.size(), true);
      std::uint64_t settles = 1;
      switch (kind) {
        case 0:
          m.remove(hs[17]);
          live[17] = false;
          break;
        case 1:
          now[17] = boxes[1500];
          m.move(hs[17], now[17]);
          break;
        case 2: {
          std::vector<handle> few(hs.begin() + 100, hs.begin() + 150);
          std::vector<B> to(now.begin() + 100, now.begin() + 150);
          for (std::size_t k = 0; k < to.size(); ++k) now[100 + k] = to[k] = shifted(to[k], 0.3);
          m.move(std::span<const handle>(few), std::span<const B>(to));
          break;
        }
        case 3: {
          std::vector<handle> all = hs;
          all[1000].generation += 1;  // stale: the bulk path declines, the batch throws, nothing moves
          EXPECT_THROW(m.move(std::span<const handle>(all), std::span<const B>(boxes)), hhg::error);
          break;
        }
        case 4:
          hs.push_back(m.insert(boxes[0]));
          now.push_back(boxes[0]);
          live.push_back(true);
          settles = 0;
          break;
      }
      if (strategy == hhg::update_strategy::rebuild) m.update();
      EXPECT_EQ(m.path_counts().settles, settles);
      ASSERT_NO_THROW(m.validate());
      std::vector<handle_pair> got, want;
      m.find_pairs(got);
      for (std::size_t i = 0; i < now.size(); ++i) {
        if (live[i]) {
          ASSERT_EQ(m.get(hs[i]), now[i]) << i;
        }
        for (std::size_t j = i + 1; j < now.size(); ++j)
          if (live[i] && live[j] && hhg::overlaps(now[i], now[j])) want.push_back({hs[i], hs[j]});
      }
      hhg::canonicalize(got);
      hhg::canonicalize(want);
      EXPECT_EQ(got, want);
    }
}

// hash_grids keeps 24-bit generations (handle.hpp): a slot whose generation
// would wrap is retired (never reused), so no generation is 0 (the null
// handle) and no stale handle of the slot is ever accepted again.
TYPED_TEST(GridSemantics, GenerationWrapSkipsNull) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  if (D != 2 || !std::is_same_v<T, float>) GTEST_SKIP() << "one type is enough (2^24 cycles)";
  TypeParam m;
  const auto b = cube<D, T>(0, 1);
  const handle first = m.insert(b);
  handle h = first;
  handle previous{};
  bool null_seen = false;
  std::uint32_t index_changes = 0;
  for (std::uint32_t i = 0; i < (1u << 24) + 2; ++i) {
    m.remove(h);
    previous = h;
    h = m.insert(b);
    null_seen = null_seen || !h;
    index_changes += h.index != previous.index;
  }
  EXPECT_FALSE(null_seen) << "a generation wrapped to 0";
  EXPECT_EQ(index_changes, 1u) << "the slot is retired once, at the end of its generations";
  EXPECT_FALSE(m.contains(first));
  EXPECT_TRUE(m.contains(h));
  EXPECT_FALSE(m.contains(previous));
  EXPECT_THROW(m.remove(previous), hhg::error);
  EXPECT_EQ(m.size(), 1u);
}

// Const member functions may run concurrently (hash_grids.hpp).
TYPED_TEST(GridSemantics, ConstFunctionsConcurrently) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  for (const auto strategy : {hhg::update_strategy::incremental, hhg::update_strategy::rebuild}) {
    config c;
    c.strategy = strategy;
    TypeParam m(c);
    std::vector<handle> hs;
    const auto boxes = hhg::scenes::make_zoo_scene<D, T>(hhg::scenes::zoo::mixed, 2000, 15);
    for (const auto& b : boxes) hs.push_back(m.insert(b));
    for (std::size_t i = 0; i < hs.size(); i += 2) m.move(hs[i], boxes[(i + 7) % boxes.size()]);
    const TypeParam& view = m;
    const std::size_t expected_bytes = view.stats().bytes;
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        for (int round = 0; round < 3; ++round) {
          try {
            view.validate();
          } catch (...) {
            ++failures;
          }
          if (view.stats().bytes != expected_bytes || view.size() != hs.size()) ++failures;
          for (std::size_t i = static_cast<std::size_t>(t); i < hs.size(); i += 4) {
            const auto want = i % 2 == 0 ? boxes[(i + 7) % boxes.size()] : boxes[i];
            if (!view.contains(hs[i]) || !(view.get(hs[i]) == want)) ++failures;
          }
        }
      });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(failures.load(), 0);
  }
}

// The same right after a bulk move, which left the objects' pool positions
// stale: get() and validate() find the objects in their cells, read-only.
TYPED_TEST(GridSemantics, ConstFunctionsConcurrentlyAfterBulkMove) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  using B = box<D, T>;
  TypeParam m;
  const auto boxes = hhg::scenes::make_zoo_scene<D, T>(hhg::scenes::zoo::equal, 5000, 16);
  std::vector<handle> hs;
  for (const B& b : boxes) hs.push_back(m.insert(b));
  std::vector<B> where;
  for (std::size_t i = 0; i < boxes.size(); ++i) where.push_back(shifted(boxes[(i + 11) % boxes.size()], 0.25));
  m.move(std::span<const handle>(hs), std::span<const B>(where));
  const TypeParam& view = m;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      if (t == 3) {
        try {
          view.validate();
        } catch (...) {
          ++failures;
        }
      }
      for (std::size_t i = static_cast<std::size_t>(t); i < hs.size(); i += 3)
        if (!(view.get(hs[i]) == where[i])) ++failures;
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  // the const calls wrote nothing; the positions were left to settle, which the first remove does
  EXPECT_EQ(m.path_counts().settles, 0u);
  m.remove(hs[0]);
  EXPECT_EQ(m.path_counts().settles, 1u);
  m.validate();
  EXPECT_EQ(m.get(hs[1]), where[1]);
}

TYPED_TEST(GridSemantics, FindPairsReusesOutputAndClearsIt) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  TypeParam a;
  for (const auto& b : hhg::scenes::make_zoo_scene<D, T>(hhg::scenes::zoo::equal, 200, 13)) a.insert(b);
  std::vector<handle_pair> out(5, handle_pair{});  // stale content must go
  a.find_pairs(out);
  const auto first = out;
  a.find_pairs(out);
  EXPECT_EQ(out, first) << "detection is deterministic";
  for (const auto& p : out) {
    EXPECT_TRUE(a.contains(p.a));
    EXPECT_TRUE(a.contains(p.b));
    EXPECT_NE(p.a, p.b);
  }
}

// Compaction (storage rebuilt in cell order, hash_grids.md) starts at 4096
// objects in a grid: fast motion over many steps must trigger it, and the
// pairs must stay exactly those of brute force, with validate() passing.
TYPED_TEST(GridSemantics, CompactionKeepsPairsExact) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  hhg::scenes::thesis_params p;
  p.n = 6000;
  p.max_speed_fraction = 1.0;
  p.seed = 21;
  hhg::scenes::thesis_scenario<D, T> scene(p);
  mirror<TypeParam> m;
  std::vector<std::size_t> ids;
  for (const auto& b : scene.boxes()) ids.push_back(m.insert(b));
  ASSERT_TRUE(m.check());
  for (int step = 0; step < 8; ++step) {
    scene.step();
    for (std::size_t i = 0; i < ids.size(); ++i) m.move(ids[i], scene.boxes()[i]);
    ASSERT_TRUE(m.check()) << "step " << step;
  }
  EXPECT_GT(m.subject().stats().compactions, 0u) << "the scene must exercise compaction";
}

// A cube of the given edge with its low corner at lo (in box B's scalar).
template <class B, std::size_t D>
B cube_from(const std::array<double, D>& lo, double edge) {
  using T = std::remove_cvref_t<decltype(B{}.min[0])>;
  B b;
  for (std::size_t a = 0; a < D; ++a) {
    b.min[a] = static_cast<T>(lo[a]);
    b.max[a] = static_cast<T>(lo[a] + edge);
  }
  return b;
}

// A grid crowded past 8 objects per occupied cell is walked by lookups,
// not rows (detect_unordered). Here 100 crowds of 80 objects each (a crowd
// straddles cell boundaries, so cells of a few objects border it) and 600
// objects spread thinly (a few hundred pairs): the cells of at most 4
// objects deliver their pairs in batches. Against brute force after
// inserts, batch moves and one-by-one moves.
TYPED_TEST(GridSemantics, CrowdedGridLookupWalkKeepsPairsExact) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  using B = box<D, T>;
  mirror<TypeParam> m;
  hhg::scenes::rng r(6);
  const double spread = D == 3 ? 9.0 : 30.0;  // one object in 6 (2D) to 10 (3D) cells
  std::vector<std::size_t> ids;
  auto place = [&](int i) {
    std::array<double, D> lo;
    if (i < 600) {
      for (int a = 0; a < D; ++a) lo[a] = r.uniform(-spread, spread);
    } else {  // crowd (i - 600) / 80, at x = 60 + 3k
      lo.fill(0.1);
      lo[0] = 60.0 + 3.0 * ((i - 600) / 80);
      for (int a = 0; a < D; ++a) lo[a] += r.uniform(0.0, 0.2);
    }
    return cube_from<B>(lo, 0.7);  // one grid: cells of 0.99
  };
  for (int i = 0; i < 600 + 100 * 80; ++i) ids.push_back(m.insert(place(i)));
  ASSERT_TRUE(m.check());
  const auto st = m.subject().stats();
  ASSERT_EQ(st.grids.size(), 1u);
  ASSERT_GT(st.grids[0].objects, 8 * st.grids[0].occupied_cells) << "the lookup walk is what this test is for";
  for (int step = 0; step < 4; ++step) {
    std::vector<B> where;
    for (std::size_t i = 0; i < ids.size(); ++i) where.push_back(place(static_cast<int>(i)));
    if (step % 2 == 0) {
      m.move_batch(ids, where);
    } else {
      for (std::size_t i = 0; i < ids.size(); ++i) m.move(ids[i], where[i]);
    }
    ASSERT_TRUE(m.check()) << "step " << step;
  }
}

// After a compaction or a bulk move a grid's pool is in cell-code order, and
// detection reads a row's window of cells as one stretch of it
// (detect_ordered). Removals and moves within a cell keep that order,
// writing sentinels where entries leave; validate() checks them. The scene
// has cells at both ends of each axis (the modulo wrap between x = 0 and
// the last x), a crowded cell, rows whose few cells are far apart, and
// touching boxes; the pairs must equal brute force after every edit.
TYPED_TEST(GridSemantics, OrderedLayoutKeepsPairsExact) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  using B = box<D, T>;
  mirror<TypeParam> m;
  hhg::scenes::rng r(5);
  auto cube_at = [](const std::array<double, D>& lo, double edge) { return cube_from<B>(lo, edge); };
  for (int i = 0; i < 5000; ++i) {  // around the origin: negative and positive cells
    std::array<double, D> lo;
    for (int a = 0; a < D; ++a) lo[a] = r.uniform(-12.0, 12.0);
    m.insert(cube_at(lo, 0.7));  // one grid: sizes in [0.5, 0.99)
  }
  for (int i = 0; i < 40; ++i) {  // a crowd in one cell
    std::array<double, D> lo;
    lo.fill(3.1 + 0.002 * i);
    m.insert(cube_at(lo, 0.6));
  }
  for (int i = 0; i < 6; ++i) {  // rows with a few cells far apart
    std::array<double, D> lo;
    lo.fill(40.0 + 3.0 * (i / 2));
    lo[0] = i % 2 == 0 ? 1.0 + i : 70.0 + 9.0 * i;
    m.insert(cube_at(lo, 0.7));
  }
  for (int i = 0; i < 10; ++i) {  // touching across x = 0
    std::array<double, D> lo;
    lo.fill(-0.5 + 0.3 * i);
    lo[0] = -0.8;
    m.insert(cube_at(lo, 0.8));
    lo[0] = 0.0;
    m.insert(cube_at(lo, 0.8));
  }
  ASSERT_TRUE(m.check());  // the first detection compacts (over 4096 objects)
  ASSERT_GT(m.subject().stats().compactions, 0u);
  ASSERT_TRUE(m.check());
  for (int round = 0; round < 4; ++round) {
    std::vector<std::size_t> live = m.live_ids();  // all at once: the bulk path lays the pool out in order again
    std::vector<B> where;
    for (std::size_t id : live) {
      B b = m.box_of(id);
      const T d = static_cast<T>(r.uniform(-0.3, 0.3));
      for (int a = 0; a < D; ++a) {
        b.min[a] = static_cast<T>(b.min[a] + d);
        b.max[a] = static_cast<T>(b.max[a] + d);
      }
      where.push_back(b);
    }
    m.move_batch(live, where);
    ASSERT_TRUE(m.check()) << "round " << round << ", batch";
    for (std::size_t k = round; k < live.size(); k += 11) m.remove(live[k]);  // the order stays
    ASSERT_TRUE(m.check()) << "round " << round << ", removals";
    for (std::size_t k = round; k < live.size(); k += 7) {  // small moves, mostly within the cell
      B b = m.box_of(live[k]);
      for (int a = 0; a < D; ++a) {
        const T d = static_cast<T>(r.uniform(-0.05, 0.05));
        b.min[a] = static_cast<T>(b.min[a] + d);
        b.max[a] = static_cast<T>(b.max[a] + d);
      }
      if (m.live(live[k])) m.move(live[k], b);
    }
    ASSERT_TRUE(m.check()) << "round " << round << ", moves";
    for (int i = 0; i < 50; ++i) {  // new objects: new cells break the order
      std::array<double, D> lo;
      for (int a = 0; a < D; ++a) lo[a] = r.uniform(-14.0, 14.0);
      m.insert(cube_at(lo, r.uniform(0.5, 1.0)));
    }
    ASSERT_TRUE(m.check()) << "round " << round << ", inserts";
  }
}

// Between compactions an ordered grid takes one-by-one changes without
// losing its order: objects that jump to new cells, cells that outgrow their
// blocks (a hole stays behind), cells that empty, objects that leave and
// come back, all written above the ordered part and walked apart. Checked
// against brute force (and validate) after every round, while the
// compaction count shows that no compaction intervened.
TYPED_TEST(GridSemantics, DisplacedCellsKeepPairsExact) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  using B = box<D, T>;
  mirror<TypeParam> m;
  hhg::scenes::rng r(9);
  auto cube_at = [](const std::array<double, D>& lo, double edge) { return cube_from<B>(lo, edge); };
  auto random_lo = [&](double half) {
    std::array<double, D> lo;
    for (int a = 0; a < D; ++a) lo[a] = r.uniform(-half, half);
    return lo;
  };
  for (int i = 0; i < 8000; ++i) m.insert(cube_at(random_lo(10.0), 0.7));  // dense: cells of several objects
  ASSERT_TRUE(m.check());                                                  // the first detection compacts
  const auto compactions = m.subject().stats().compactions;
  ASSERT_GT(compactions, 0u);
  std::vector<std::size_t> live = m.live_ids();
  for (int round = 0; round < 3; ++round) {
    for (std::size_t k = round; k < live.size(); k += 331)  // jumps: new cells and emptied cells
      if (m.live(live[k])) m.move(live[k], cube_at(random_lo(11.0), 0.7));
    ASSERT_TRUE(m.check()) << "round " << round << ", jumps";
    std::array<double, D> spot;  // a cell that outgrows its block: relocated, a hole behind
    spot.fill(-4.3 + 2.1 * round);
    for (int i = 0; i < 6; ++i) m.insert(cube_at(spot, 0.6));
    ASSERT_TRUE(m.check()) << "round " << round << ", crowd";
    for (std::size_t k = round + 5; k < live.size(); k += 211) m.remove(live[k]);
    for (int i = 0; i < 10; ++i) m.insert(cube_at(random_lo(11.0), 0.7));
    ASSERT_TRUE(m.check()) << "round " << round << ", removals and inserts";
    for (std::size_t k = round + 3; k < live.size(); k += 293) {  // touching across x = 0, either side
      if (!m.live(live[k])) continue;
      std::array<double, D> lo = random_lo(11.0);
      lo[0] = k % 2 == 0 ? -0.7 : 0.0;
      m.move(live[k], cube_at(lo, 0.7));
    }
    ASSERT_TRUE(m.check()) << "round " << round << ", across x = 0";
  }
  EXPECT_EQ(m.subject().stats().compactions, compactions)
      << "a compaction intervened: the displaced walk was not what ran";
}

// A batch large enough for the bulk path (bulk_move validates as it reads)
// with one bad handle or box, first, in the middle or last, possibly after a
// box that needs a new grid level: the error of the first bad one, and
// nothing changes (boxes, pairs, levels). Equal cubes (one grid: the
// placement loop for one grid) and sizes over three decades (several grids:
// the general loop); the good batch before takes the bulk path in both.
TYPED_TEST(GridSemantics, BadBulkBatchMoveChangesNothing) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  using B = box<D, T>;
  for (const char* name : {"equal", "log-uniform"}) {
    SCOPED_TRACE(name);
    const bool one_grid = std::string_view(name) == "equal";
    hhg::scenes::thesis_scenario<D, T> scene(hhg::scenes::named_scenario_params(name, 6000, 4));
    TypeParam m;
    std::vector<handle> hs;
    for (const auto& b : scene.boxes()) hs.push_back(m.insert(b));
    scene.step();
    m.move(std::span<const handle>(hs), std::span<const B>(scene.boxes()));  // a good batch first
    ASSERT_EQ(m.path_counts().batch_bulk, 1u);
    const std::vector<B> now = scene.boxes();
    std::vector<handle_pair> before;
    m.find_pairs(before);
    std::sort(before.begin(), before.end());
    const std::size_t levels = m.stats().grids.size();
    if (one_grid)
      ASSERT_EQ(levels, 1u);
    else
      ASSERT_GT(levels, 1u);
    scene.step();
    for (int kind = 0; kind < 6; ++kind)
      for (const std::size_t at : {std::size_t{0}, std::size_t{2999}, std::size_t{5999}}) {
        std::vector<B> where = scene.boxes();
        std::vector<handle> which = hs;
        hhg::errc expected = hhg::errc::nan_coordinate;
        if (kind == 0) where[at].min[D - 1] = std::numeric_limits<T>::quiet_NaN();
        if (kind == 1) {
          where[at].min[0] = static_cast<T>(where[at].max[0] + 1);
          expected = hhg::errc::inverted_box;
        }
        if (kind == 2) {
          which[at].generation += 1;  // stale
          expected = hhg::errc::invalid_handle;
        }
        if (kind == 3) {  // a size no grid exists for yet, then a NaN
          where[at / 2].max[0] = static_cast<T>(where[at / 2].min[0] + 1e6);
          where[at].max[1] = std::numeric_limits<T>::quiet_NaN();
        }
        if (kind == 4) {
          which[at].index = 1u << 30;  // no such slot
          expected = hhg::errc::invalid_handle;
        }
        if (kind == 5) {
          which[at].generation += 1u << 24;  // the slot's generation in its low 24 bits
          expected = hhg::errc::invalid_handle;
        }
        try {
          m.move(std::span<const handle>(which), std::span<const B>(where));
          ADD_FAILURE() << "kind " << kind << " at " << at << ": no error";
        } catch (const hhg::error& e) {
          EXPECT_EQ(e.code(), expected) << "kind " << kind << " at " << at << ": " << e.what();
        }
        m.validate();
        for (std::size_t i = 0; i < hs.size(); ++i) ASSERT_EQ(m.get(hs[i]), now[i]) << "kind " << kind << " at " << at;
        std::vector<handle_pair> after;
        m.find_pairs(after);
        std::sort(after.begin(), after.end());
        EXPECT_EQ(after, before) << "kind " << kind << " at " << at;
        EXPECT_EQ(m.stats().grids.size(), levels) << "kind " << kind << " at " << at;
      }
    EXPECT_EQ(m.path_counts().batch_bulk, 1u);  // (no bad batch was applied in bulk)
  }
}

}  // namespace
}  // namespace hhg_test
