// The hash grid on several workers: the same pairs in the same order for every
// thread count (a hash of the whole pair sequence over many steps, as Box2D's
// determinism test does), equal to brute force; and every internal path
// forced at small sizes through the tuning, counted, and checked against
// brute force.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <set>
#include <utility>
#include <vector>

#include "hhg/brute_force.hpp"
#include "hhg/executor.hpp"
#include "hhg/hash_grids.hpp"
#include "hhg/scenes.hpp"
#include "support.hpp"

namespace {

using hhg_test::small_tuning;

using hhg::box;
using hhg::handle;
using hhg::handle_pair;

using box3 = box<3, double>;

// Every overlapping pair, by brute force over the live boxes, as sorted
// (smaller handle index first) handle pairs.
std::vector<handle_pair> brute(const std::vector<box3>& boxes, const std::vector<handle>& hs,
                               const std::vector<char>& live) {
  std::vector<handle_pair> out;
  for (std::size_t i = 0; i < boxes.size(); ++i) {
    if (!live[i]) continue;
    for (std::size_t j = i + 1; j < boxes.size(); ++j)
      if (live[j] && hhg::overlaps(boxes[i], boxes[j])) out.push_back({hs[i], hs[j]});
  }
  hhg::canonicalize(out);
  return out;
}

std::vector<handle_pair> canonical(std::vector<handle_pair> v) {
  hhg::canonicalize(v);
  return v;
}

// A polydisperse scene: sizes log-uniform over a factor 40 (at least 3 grid
// levels with the default factor 4), moving 30 % of their size a step so objects change
// cell and grid; some removed and inserted between steps.
struct scene {
  hhg::scenes::rng r;
  std::vector<box3> boxes;
  std::vector<char> live;
  double edge;
  explicit scene(std::uint64_t seed, std::size_t n) : r(seed), edge(std::cbrt(static_cast<double>(n)) * 6.0) {
    for (std::size_t i = 0; i < n; ++i) {
      boxes.push_back(make());
      live.push_back(1);
    }
  }
  box3 make() {
    const double s = std::exp(r.uniform(0.0, std::log(40.0))) * 0.5;
    box3 b;
    for (int a = 0; a < 3; ++a) {
      b.min[a] = r.uniform(0.0, edge);
      b.max[a] = b.min[a] + s * r.uniform(0.5, 1.0);
    }
    return b;
  }
  void step() {
    for (std::size_t i = 0; i < boxes.size(); ++i) {
      box3& b = boxes[i];
      double size = 0;
      for (int a = 0; a < 3; ++a) size = std::max(size, b.max[a] - b.min[a]);
      for (int a = 0; a < 3; ++a) {
        const double d = r.uniform(-0.3, 0.3) * size;
        b.min[a] += d;
        b.max[a] += d;
      }
      if (r.below(50) == 0) {  // a size change: may change grid level
        const double f = r.uniform(0.3, 3.0);
        for (int a = 0; a < 3; ++a) b.max[a] = b.min[a] + (b.max[a] - b.min[a]) * f;
      }
    }
  }
};

// FNV-1a over the pair sequence.
std::uint64_t mix(std::uint64_t h, const std::vector<handle_pair>& pairs) {
  for (const handle_pair& p : pairs)
    for (std::uint32_t w : {p.a.index, p.a.generation, p.b.index, p.b.generation}) {
      h ^= w;
      h *= 0x100000001b3ull;
    }
  return h ^ pairs.size();
}

// Runs the scene for `steps` steps on `threads` workers (0: no executor) and
// returns the hash of every step's pair sequence; with `check`, validates the
// structure each step and checks the paths taken, and without an executor
// checks each step against brute force (runs on workers must then give the
// same hash: their pairs are those pairs, in the same order).
std::uint64_t run(unsigned threads, std::size_t n, std::size_t steps, bool check) {
  scene sc(42, n);
  hhg::hash_grids<3, double> g;
  g.set_tuning(small_tuning());
  std::unique_ptr<hhg::thread_pool> pool;
  if (threads > 0) {
    pool = std::make_unique<hhg::thread_pool>(threads);
    g.set_executor(pool.get());
  }
  std::vector<handle> hs = g.insert(std::span<const box3>(sc.boxes));
  std::uint64_t h = 0xcbf29ce484222325ull;
  std::vector<handle_pair> pairs;
  for (std::size_t s = 0; s < steps; ++s) {
    sc.step();
    // the live objects in one batch (the bulk path when most are live)
    std::vector<handle> mh;
    std::vector<box3> mb;
    for (std::size_t i = 0; i < sc.boxes.size(); ++i)
      if (sc.live[i]) {
        mh.push_back(hs[i]);
        mb.push_back(sc.boxes[i]);
      }
    g.move(std::span<const handle>(mh), std::span<const box3>(mb));
    // a few removed and a few inserted
    for (int k = 0; k < 5; ++k) {
      const std::size_t i = sc.r.below(sc.boxes.size());
      if (sc.live[i]) {
        g.remove(hs[i]);
        sc.live[i] = 0;
      } else {
        sc.boxes[i] = sc.make();
        hs[i] = g.insert(sc.boxes[i]);
        sc.live[i] = 1;
      }
    }
    g.find_pairs(pairs);
    h = mix(h, pairs);
    if (check) {
      if (threads == 0) {
        EXPECT_EQ(canonical(pairs), brute(sc.boxes, hs, sc.live)) << "step " << s;
      }
      EXPECT_NO_THROW(g.validate());
    }
  }
  if (check) {
    EXPECT_GE(g.stats().grids.size(), 3u);
    EXPECT_GT(g.path_counts().batch_bulk, 0u);
    EXPECT_GT(g.path_counts().walk_across, 0u);
    if (threads > 1) {
      EXPECT_GT(g.path_counts().parallel_detections, 0u);
    }
  }
  return h;
}

TEST(DeterminismThreads, SamePairSequenceForEveryThreadCount) {
  const std::size_t n = 3000, steps = 25;
  const std::uint64_t reference = run(0, n, steps, true);
  for (unsigned t : {1u, 2u, 3u, 4u, 7u, 8u, 16u}) EXPECT_EQ(run(t, n, steps, t == 2), reference) << t << " threads";
}

TEST(DeterminismThreads, ForEachPairGivesFindPairsOrder) {
  scene sc(7, 2000);
  hhg::hash_grids<3, double> g;
  g.set_tuning(small_tuning());
  hhg::thread_pool pool(3);
  g.set_executor(&pool);
  g.insert(std::span<const box3>(sc.boxes));
  std::vector<handle_pair> a, b;
  g.find_pairs(a);
  g.for_each_pair([&](handle p, handle q) { b.push_back({p, q}); });
  EXPECT_EQ(a, b);
  EXPECT_FALSE(a.empty());
}

// ---- every path, forced and counted -------------------------------------------------

struct path_case {
  hhg::detail::tuning tune;
  bool ordered_first;  // a bulk move first (ordered grids)
  bool insert_after;   // inserts after the bulk move (displaced cells)
  bool one_by_one;     // moves object by object instead of a batch
  unsigned threads;
};

hhg::detail::path_counters run_paths(const path_case& pc) {
  scene sc(11, 1500);
  hhg::config fixed;  // every level the factor apart: three levels (the batch's estimate would choose one)
  fixed.adaptive_factor = false;
  hhg::hash_grids<3, double> g(fixed);
  g.set_tuning(pc.tune);
  hhg::thread_pool pool(pc.threads);
  g.set_executor(&pool);
  std::vector<handle> hs = g.insert(std::span<const box3>(sc.boxes));
  std::vector<handle_pair> pairs;
  for (int s = 0; s < 4; ++s) {
    sc.step();
    if (pc.one_by_one) {
      for (std::size_t i = 0; i < hs.size(); ++i) g.move(hs[i], sc.boxes[i]);
    } else if (pc.ordered_first || s > 0) {
      g.move(std::span<const handle>(hs), std::span<const box3>(sc.boxes));
    }
    if (pc.insert_after && s == 2) {
      for (int k = 0; k < 40; ++k) {
        sc.boxes.push_back(sc.make());
        sc.live.push_back(1);
        hs.push_back(g.insert(sc.boxes.back()));
      }
    }
    g.find_pairs(pairs);
    EXPECT_EQ(canonical(pairs), brute(sc.boxes, hs, sc.live)) << "step " << s;
    g.validate();
  }
  return g.path_counts();
}

TEST(PathsThreads, OrderedWalkAndBulkMoveRun) {
  path_case pc{small_tuning(), true, false, false, 2};
  const auto c = run_paths(pc);
  EXPECT_GT(c.walk_ordered, 0u);
  EXPECT_GT(c.batch_bulk, 0u);
  EXPECT_GT(c.parallel_detections, 0u);
}

TEST(PathsThreads, UnorderedWalkRunsWhenNothingIsLaidOut) {
  path_case pc{small_tuning(), false, false, true, 2};
  pc.tune.compact_min = 1u << 30;  // never compacted: the grids stay unordered
  pc.tune.bulk_min = 1u << 30;     // inserted one by one too: no grid is ever laid out
  const auto c = run_paths(pc);
  EXPECT_GT(c.walk_unordered, 0u);
  EXPECT_EQ(c.walk_ordered, 0u);
  EXPECT_EQ(c.bulk_inserts, 0u);
}

TEST(PathsThreads, DisplacedWalkRunsForCellsWrittenAfterALayout) {
  path_case pc{small_tuning(), true, true, false, 2};
  pc.tune.displaced_share = 0;  // never falls back to the unordered walk
  pc.tune.compact_min = 1u << 30;
  const auto c = run_paths(pc);
  EXPECT_GT(c.walk_displaced, 0u);
}

TEST(PathsThreads, CrowdedAndFlatCellsAndCompaction) {
  path_case crowded{small_tuning(), true, false, false, 2};
  crowded.tune.flat_cell = 0;  // every cell crowded
  const auto a = run_paths(crowded);
  EXPECT_GT(a.cells_crowded, 0u);
  EXPECT_EQ(a.cells_flat, 0u);
  path_case compacting{small_tuning(), false, false, true, 1};
  compacting.tune.compact_min = 1;
  compacting.tune.compact_ratio = 1;
  const auto b = run_paths(compacting);
  EXPECT_GT(b.compactions, 0u);
  EXPECT_GT(b.cells_flat, 0u);
  EXPECT_GT(b.walk_ordered, 0u);  // a compacted grid is ordered
}

// Every box moved by d on every axis.
void shift(std::vector<box3>& boxes, double d) {
  for (box3& b : boxes)
    for (int a = 0; a < 3; ++a) {
      b.min[a] += d;
      b.max[a] += d;
    }
}

// Crowded cells of the ordered walk (more than 4 objects) are tested in
// groups of up to 4 (cells_grouped): clumps of 5 to 30 boxes inside one
// cell, among unit boxes that touch and overlap them across cell faces (in
// the clumps of 20 and 30, a group's later objects are more than the 16
// offsets gather_offsets writes at once, kernel.hpp; so are the stretches
// that hold a clump); exact
// against brute force after the bulk insert and after bulk moves, with the
// same pairs in the same order on one and two workers.
TEST(PathsThreads, CrowdedCellsOfTheOrderedWalkAreTestedInGroups) {
  hhg::scenes::rng r(17);
  std::vector<box3> boxes;
  for (int i = 0; i < 3000; ++i) {  // unit boxes, about one a cell
    const std::array<double, 3> p{r.uniform(0, 14), r.uniform(0, 14), r.uniform(0, 14)};
    boxes.push_back(box3{{p[0], p[1], p[2]}, {p[0] + 1, p[1] + 1, p[2] + 1}});
  }
  for (int k : {5, 6, 7, 8, 9, 12, 13, 20, 30}) {  // one clump of k small boxes in one cell, at a few places
    for (int c = 0; c < 6; ++c) {
      const std::array<double, 3> o{r.uniform(1, 13), r.uniform(1, 13), r.uniform(1, 13)};
      for (int j = 0; j < k; ++j) {
        const double d = 0.02 * j, e = r.uniform(0.05, 0.6);
        boxes.push_back(box3{{o[0] + d, o[1] + d, o[2] + d}, {o[0] + d + e, o[1] + d + e, o[2] + d + e}});
      }
    }
  }
  std::vector<char> live(boxes.size(), 1);
  std::vector<std::vector<handle_pair>> runs;
  for (unsigned threads : {1u, 2u}) {
    hhg::hash_grids<3, double> g;
    hhg::thread_pool pool(threads);
    g.set_executor(&pool);
    std::vector<handle> hs = g.insert(std::span<const box3>(boxes));
    std::vector<box3> moved = boxes;
    std::vector<handle_pair> pairs, all;
    for (int s = 0; s < 3; ++s) {
      if (s > 0) {
        shift(moved, 0.3);
        g.move(std::span<const handle>(hs), std::span<const box3>(moved));
      }
      g.find_pairs(pairs);
      EXPECT_EQ(canonical(pairs), brute(moved, hs, live)) << "step " << s << ", " << threads << " workers";
      all.insert(all.end(), pairs.begin(), pairs.end());
    }
    g.validate();
    EXPECT_GT(g.path_counts().walk_ordered, 0u);
    EXPECT_GT(g.path_counts().cells_grouped, 0u);
    EXPECT_EQ(g.path_counts().cells_grouped, g.path_counts().cells_crowded);  // (no lookup walk here)
    runs.push_back(all);
  }
  EXPECT_EQ(runs[0], runs[1]);
}

// A sparse grid (a few objects per row of 64 or more cells): with the
// switch to the lookup walk off (searched_share = 0), the ordered walk
// searches its rows instead of indexing them; with it on (the default) and
// the boxes in a long slab (rows of ~1000 cells with ~100 objects, like
// `sparse` at 10^6: 15 in 256), most cells lie in searched rows and the grid
// takes the lookup walk. Exact against brute force either way, on one and
// two workers.
void sparse_rows_case(std::size_t searched_share, double yz_extent) {
  hhg::scenes::rng r(5);
  std::vector<box3> boxes;
  for (int i = 0; i < 6000; ++i) {  // tiny boxes far apart, and some touching pairs
    std::array<double, 3> p{r.uniform(0, 4000), r.uniform(0, yz_extent), r.uniform(0, yz_extent)};
    const double s = r.uniform(0.5, 1.0);
    boxes.push_back(box3{{p[0], p[1], p[2]}, {p[0] + s, p[1] + s, p[2] + s}});
    if (i % 3 == 0) boxes.push_back(box3{{p[0] + s, p[1], p[2]}, {p[0] + 2 * s, p[1] + s, p[2] + s}});
  }
  const std::vector<box3> start = boxes;
  std::vector<handle> first_hs;
  std::array<std::vector<handle_pair>, 3> want;  // brute force, per step (the same boxes on both worker counts)
  for (unsigned threads : {1u, 2u}) {
    hhg::hash_grids<3, double> g;
    hhg::detail::tuning t = small_tuning();
    t.searched_share = searched_share;
    t.spread_max_log2 = 0;  // (cells of the objects' size: sparse rows)
    g.set_tuning(t);
    hhg::thread_pool pool(threads);
    g.set_executor(&pool);
    boxes = start;
    std::vector<handle> hs = g.insert(std::span<const box3>(boxes));
    if (threads == 1) {
      first_hs = hs;
    } else {
      ASSERT_EQ(hs, first_hs);  // (the same handles: the pairs above are this run's too)
    }
    std::vector<char> live(boxes.size(), 1);
    std::vector<handle_pair> pairs;
    for (std::size_t s = 0; s < want.size(); ++s) {
      shift(boxes, 0.25);
      g.move(std::span<const handle>(hs), std::span<const box3>(boxes));
      g.find_pairs(pairs);
      if (threads == 1) want[s] = brute(boxes, hs, live);
      EXPECT_EQ(canonical(pairs), want[s]) << "step " << s << ", " << threads << " workers";
    }
    if (searched_share == 0) {
      EXPECT_GT(g.path_counts().rows_searched, 0u);
      EXPECT_EQ(g.path_counts().rows_uniform, 0u);  // (rows of ~1000 x for a few cells: each over its own)
      EXPECT_GT(g.path_counts().walk_ordered, 0u);
      EXPECT_EQ(g.path_counts().sparse_rows_lookup, 0u);
    } else {
      EXPECT_GE(g.path_counts().sparse_rows_lookup, 3u);
      EXPECT_EQ(g.path_counts().walk_ordered, 0u);
      EXPECT_EQ(g.path_counts().rows_searched, 0u);
    }
  }
}

TEST(PathsThreads, OrderedWalkSearchesSparseRows) { sparse_rows_case(0, 4000); }
TEST(PathsThreads, SparseRowsTakeTheLookupWalk) { sparse_rows_case(2, 40); }

// A dense slab of cubes (min corners over [lo, hi] along x, y and z over
// 8 edges; about 20 cells a row in a grid of 32 along x): every row is
// indexed over the grid's whole x range (rows_uniform). The cubes move at
// most 0.9 along x. The slab lies above 0 (cells from x = 0 on, none at
// the last x), across 0 (cells on both sides of the wrap: windows wrapping
// from the last x to 0 and back), or ends just below 0 (its last cells at
// the grid's last x, some of their cubes reaching past 0, but no cell at
// x = 0: nothing wraps). Exact against brute force on one and two workers,
// over three bulk moves.
void uniform_rows_case(double lo, double hi) {
  hhg::scenes::rng r(11);
  std::vector<box3> boxes;
  for (int i = 0; i < 3000; ++i) {
    std::array<double, 3> p{r.uniform(lo, hi), r.uniform(0, 7.5), r.uniform(0, 7.5)};
    const double s = r.uniform(0.5, 1.0);
    boxes.push_back(box3{{p[0], p[1], p[2]}, {p[0] + s, p[1] + s, p[2] + s}});
  }
  for (unsigned threads : {1u, 2u}) {
    hhg::hash_grids<3, double> g;
    g.set_tuning(small_tuning());
    hhg::thread_pool pool(threads);
    g.set_executor(&pool);
    std::vector<box3> now = boxes;
    std::vector<handle> hs = g.insert(std::span<const box3>(now));
    std::vector<char> live(now.size(), 1);
    std::vector<handle_pair> pairs;
    for (int s = 0; s < 3; ++s) {
      g.find_pairs(pairs);
      EXPECT_EQ(canonical(pairs), brute(now, hs, live)) << "slab from " << lo << ", step " << s;
      for (box3& b : now) {
        const double d = r.uniform(-0.3, 0.3);
        b.min[0] += d;
        b.max[0] += d;
      }
      g.move(std::span<const handle>(hs), std::span<const box3>(now));
    }
    EXPECT_GE(g.path_counts().rows_uniform, 3u) << "slab from " << lo;
    EXPECT_EQ(g.path_counts().rows_searched, 0u);
  }
}

TEST(PathsThreads, RowsIndexedUniformlyAboveZero) { uniform_rows_case(1, 20); }
TEST(PathsThreads, RowsIndexedUniformlyAcrossTheWrap) { uniform_rows_case(-10, 10); }
TEST(PathsThreads, RowsIndexedUniformlyEndingAtTheLastX) { uniform_rows_case(-20, -0.95); }

// An ordered grid whose rows hold few cells each (3000 tiny objects of the
// `sparse` scenario: about 3 cells a row, none of them searched) takes the
// lookup walk under the default tuning::row_cells (4), and the row walk with
// the rule off (0); searched_share = 0, so only this rule can switch. Exact
// against brute force either way, on one and two workers.
void few_cells_a_row_case(std::size_t row_cells) {
  for (unsigned threads : {1u, 2u}) {
    hhg::scenes::thesis_scenario<3, double> scene(hhg::scenes::named_scenario_params("sparse", 3000, 7));
    std::vector<box3> boxes(scene.boxes().begin(), scene.boxes().end());
    hhg::hash_grids<3, double> g;
    hhg::detail::tuning t = small_tuning();
    t.searched_share = 0;
    t.row_cells = row_cells;
    t.spread_max_log2 = 0;  // (cells of the objects' size: few a row)
    g.set_tuning(t);
    hhg::thread_pool pool(threads);
    g.set_executor(&pool);
    std::vector<handle> hs = g.insert(std::span<const box3>(boxes));
    const std::vector<char> live(boxes.size(), 1);
    std::vector<handle_pair> pairs;
    std::size_t found = 0;
    for (int s = 0; s < 3; ++s) {
      scene.step();
      boxes.assign(scene.boxes().begin(), scene.boxes().end());
      g.move(std::span<const handle>(hs), std::span<const box3>(boxes));
      g.find_pairs(pairs);
      found += pairs.size();
      EXPECT_EQ(canonical(pairs), brute(boxes, hs, live)) << "step " << s;
    }
    EXPECT_GT(found, 0u);                       // (the walks found pairs: tested, not only skipped)
    EXPECT_GE(g.path_counts().batch_bulk, 3u);  // every step laid the grids out in order
    if (row_cells == 0) {
      EXPECT_GE(g.path_counts().walk_ordered, 3u);
      EXPECT_EQ(g.path_counts().sparse_rows_lookup, 0u);
    } else {
      EXPECT_GE(g.path_counts().sparse_rows_lookup, 3u);
      EXPECT_EQ(g.path_counts().walk_ordered, 0u);
    }
  }
}

TEST(PathsThreads, FewCellsARowTakeTheLookupWalk) { few_cells_a_row_case(4); }
TEST(PathsThreads, FewCellsARowOnTheRowWalkWithTheRuleOff) { few_cells_a_row_case(0); }

// Under the default tuning, but with cells of the objects' size (no spread,
// levels.hpp), a batch of 1000 moves (below bulk_rows_min) takes the bulk
// move when the last detection found dense rows (equal cubes: about 7 cells
// a row), and goes one by one when it did not (`sparse`: 1-2); the sparse
// grid, laid out by the bulk insert, stays on the lookup walk.
// Exact against brute force either way, on one and two workers.
void small_batch_case(const char* scenario, bool dense) {
  for (unsigned threads : {1u, 2u}) {
    hhg::scenes::thesis_scenario<3, double> scene(hhg::scenes::named_scenario_params(scenario, 1000, 3));
    std::vector<box3> boxes(scene.boxes().begin(), scene.boxes().end());
    hhg::hash_grids<3, double> g;
    hhg::detail::tuning t;
    t.spread_max_log2 = 0;  // (cells of the objects' size: `sparse` has 1-2 a row)
    g.set_tuning(t);
    hhg::thread_pool pool(threads);
    g.set_executor(&pool);
    std::vector<handle> hs = g.insert(std::span<const box3>(boxes));
    const std::vector<char> live(boxes.size(), 1);
    std::vector<handle_pair> pairs;
    g.find_pairs(pairs);
    EXPECT_EQ(canonical(pairs), brute(boxes, hs, live));
    EXPECT_EQ(g.path_counts().bulk_inserts, 1u);
    for (int s = 0; s < 4; ++s) {
      scene.step();
      boxes.assign(scene.boxes().begin(), scene.boxes().end());
      g.move(std::span<const handle>(hs), std::span<const box3>(boxes));
      g.find_pairs(pairs);
      EXPECT_EQ(canonical(pairs), brute(boxes, hs, live)) << "step " << s;
    }
    const auto& pc = g.path_counts();
    if (dense) {
      EXPECT_EQ(pc.batch_bulk, 4u);
      EXPECT_EQ(pc.walk_ordered, 5u);
    } else {
      EXPECT_EQ(pc.batch_bulk, 0u);
      EXPECT_GE(pc.batch_one_by_one, 4u);
      EXPECT_EQ(pc.walk_ordered, 0u);
      EXPECT_GE(pc.sparse_rows_lookup, 1u);
    }
  }
}

TEST(PathsThreads, SmallBatchOfDenseRowsTakesTheBulkMove) { small_batch_case("equal", true); }
TEST(PathsThreads, SmallBatchOfSparseRowsGoesOneByOne) { small_batch_case("sparse", false); }

// A structure below tuning::compact_min (1000 objects moving 1 % of their
// size a step: a few change cell, some steps none) takes the bulk move every
// step, whatever the last batch changed: nothing else would put it back in
// order (it is never compacted), and the ordered walk runs every time. Before,
// the first batch in which no object changed cell sent every later one one
// by one (seed 1: from step 64 on), and the walk to the lookup walk.
TEST(PathsThreads, SmallStructureKeepsTheBulkMoveUnderSlowMotion) {
  hhg::scenes::thesis_scenario<3, double> scene(hhg::scenes::named_scenario_params("coherent", 1000, 1));
  std::vector<box3> boxes(scene.boxes().begin(), scene.boxes().end());
  hhg::hash_grids<3, double> g;
  std::vector<handle> hs = g.insert(std::span<const box3>(boxes));
  const std::vector<char> live(boxes.size(), 1);
  std::vector<handle_pair> pairs;
  g.find_pairs(pairs);  // (the first detection finds the rows dense: a small batch may take the bulk move)
  for (int s = 0; s < 100; ++s) {
    scene.step();
    boxes.assign(scene.boxes().begin(), scene.boxes().end());
    g.move(std::span<const handle>(hs), std::span<const box3>(boxes));
    g.find_pairs(pairs);
    if (s % 10 == 9) {
      EXPECT_EQ(canonical(pairs), brute(boxes, hs, live)) << "step " << s;
    }
  }
  EXPECT_EQ(g.path_counts().batch_bulk, 100u);
  EXPECT_EQ(g.path_counts().batch_one_by_one, 0u);
  EXPECT_EQ(g.path_counts().walk_unordered, 0u);
}

TEST(PathsThreads, OneByOneBatchBelowTheTwoPassSize) {
  path_case pc{small_tuning(), true, false, false, 1};
  pc.tune.batch_two_pass = 1u << 30;
  pc.tune.bulk_min = 1u << 30;
  const auto c = run_paths(pc);
  EXPECT_GT(c.batch_one_by_one, 0u);
  EXPECT_EQ(c.batch_bulk, 0u);
}

// A callback that changes the structure gets a clear error; the structure
// stays valid and usable.
TEST(MisuseThreads, ChangingTheStructureInsideForEachPairThrows) {
  scene sc(3, 500);
  hhg::hash_grids<3, double> g;
  std::vector<handle> hs = g.insert(std::span<const box3>(sc.boxes));
  std::vector<handle_pair> before;
  g.find_pairs(before);
  ASSERT_FALSE(before.empty());
  const auto try_in_callback = [&](auto&& change) {
    bool thrown = false;
    try {
      g.for_each_pair([&](handle, handle) { change(); });
    } catch (const hhg::error& e) {
      thrown = e.code() == hhg::errc::reentrant_call;
    }
    EXPECT_TRUE(thrown);
    g.validate();
    std::vector<handle_pair> after;
    g.find_pairs(after);
    EXPECT_EQ(canonical(after), canonical(before));
  };
  try_in_callback([&] { g.clear(); });
  try_in_callback([&] { g.remove(hs[0]); });
  try_in_callback([&] { g.move(hs[1], sc.boxes[2]); });
  try_in_callback([&] { g.insert(sc.boxes[3]); });
  try_in_callback([&] {
    std::vector<handle_pair> nested;
    g.find_pairs(nested);
  });
  hhg::hash_grids<3, double> moved(std::move(g));
  EXPECT_THROW(g.insert(sc.boxes[0]), hhg::error);  // NOLINT(bugprone-use-after-move): the point of the test
  try {
    std::vector<handle_pair> p;
    g.find_pairs(p);  // NOLINT(bugprone-use-after-move)
    ADD_FAILURE() << "a moved-from structure answered";
  } catch (const hhg::error& e) {
    EXPECT_EQ(e.code(), hhg::errc::moved_from);
  }
  EXPECT_EQ(moved.size(), sc.boxes.size());
}

}  // namespace

// The bulk move's two ways of finding a handle given twice: a batch in slot
// order (handle i at position i, as inserted) cannot hold one and sets its
// bits at once; any other order marks each handle, atomically on several
// workers. Both against brute force, with objects the batch leaves in place
// (the bits tell them apart), on one and two workers; a shuffled batch with
// a handle twice goes one by one (the last box wins).
TEST(PathsThreads, BulkMoveInSlotOrderAndShuffled) {
  for (unsigned threads : {1u, 2u}) {
    scene sc(7, 2000);
    hhg::hash_grids<3, double> g;
    g.set_tuning(small_tuning());
    hhg::thread_pool pool(threads);
    g.set_executor(&pool);
    const std::vector<handle> hs = g.insert(std::span<const box3>(sc.boxes));
    std::vector<handle_pair> pairs;
    for (int s = 0; s < 6; ++s) {
      // three quarters: the rest stay where they were; the first ones in
      // slot order (s = 0), a range further on in order (s = 2, 4: not slot
      // order, each handle's bit), or shuffled (s odd)
      const std::size_t off = s == 2 ? 500 : s == 4 ? 250 : 0;
      std::vector<std::size_t> which(1500);
      for (std::size_t i = 0; i < which.size(); ++i) {
        const std::size_t k = which[i] = i + off;
        const double d = sc.r.uniform(-0.3, 0.3) * (sc.boxes[k].max[0] - sc.boxes[k].min[0]);
        for (int a = 0; a < 3; ++a) {  // (sizes kept: no new level, so the batch qualifies for the bulk move)
          sc.boxes[k].min[a] += d;
          sc.boxes[k].max[a] += d;
        }
      }
      if (s % 2 == 1)
        for (std::size_t i = which.size() - 1; i > 0; --i) std::swap(which[i], which[sc.r.below(i + 1)]);
      std::vector<handle> mh;
      std::vector<box3> mb;
      for (std::size_t i : which) {
        mh.push_back(hs[i]);
        mb.push_back(sc.boxes[i]);
      }
      if (s == 5) {  // a handle twice: the second box wins
        box3 b = sc.boxes[which[3]];
        for (int a = 0; a < 3; ++a) {
          b.min[a] += 0.5;
          b.max[a] += 0.5;
        }
        mh.push_back(mh[3]);
        mb.push_back(b);
        sc.boxes[which[3]] = b;
      }
      const auto bulk_before = g.path_counts().batch_bulk;
      g.move(std::span<const handle>(mh), std::span<const box3>(mb));
      EXPECT_EQ(g.path_counts().batch_bulk, bulk_before + (s == 5 ? 0u : 1u)) << "step " << s;
      g.find_pairs(pairs);
      EXPECT_EQ(canonical(pairs), brute(sc.boxes, hs, sc.live)) << "threads " << threads << " step " << s;
      EXPECT_NO_THROW(g.validate());
    }
  }
}
