// Coherent motion (objects moving about 1 % of their size a step, the common
// case in simulations): the batch paths that keep the layout in order under
// small moves, checked against brute force over many steps, with objects
// changing cells, grids and places (kept apart), and inserts and removes
// between steps; validate() after every step.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "hhg/brute_force.hpp"
#include "hhg/executor.hpp"
#include "hhg/hash_grids.hpp"
#include "hhg/scenes.hpp"
#include "support.hpp"

namespace {

using hhg_test::small_tuning;

using hhg::handle;
using hhg::handle_pair;

template <int D, class T>
struct slow_scene {
  using box_t = hhg::box<D, T>;
  hhg::scenes::rng r;
  double edge;
  std::vector<box_t> boxes;
  std::vector<std::array<double, D>> vel;
  std::vector<char> live;
  bool unbounded = true;  // a rare unbounded box (kept apart: the bulk move is then refused)
  bool resized = true;    // a rare size change (another grid level)

  slow_scene(std::uint64_t seed, std::size_t n)
      : r(seed), edge(std::pow(static_cast<double>(n), 1.0 / D) * (D == 3 ? 1.6 : 1.3)) {
    for (std::size_t i = 0; i < n; ++i) {
      boxes.push_back(make());
      vel.push_back(velocity(boxes.back()));
      live.push_back(1);
    }
  }
  static double size_of(const box_t& b) {
    double s = 0;
    for (int a = 0; a < D; ++a) s = std::max(s, static_cast<double>(b.max[a]) - static_cast<double>(b.min[a]));
    return s;
  }
  box_t make() {
    const double s = r.uniform(0.8, 1.2);
    box_t b;
    for (int a = 0; a < D; ++a) {
      b.min[a] = static_cast<T>(r.uniform(0.0, edge));
      b.max[a] = static_cast<T>(static_cast<double>(b.min[a]) + s);
    }
    return b;
  }
  std::array<double, D> velocity(const box_t& b) {
    std::array<double, D> v{};
    const double s = std::isfinite(size_of(b)) ? size_of(b) : 1.0;
    for (int a = 0; a < D; ++a) v[a] = r.uniform(-0.01, 0.01) * s;  // at most 1 % of the size per axis
    return v;
  }
  bool bounded(const box_t& b) const {
    for (int a = 0; a < D; ++a)
      if (!std::isfinite(static_cast<double>(b.max[a]))) return false;
    return true;
  }
  // Slow motion for all; every 40th object a jump of up to half its size
  // (a cell change now and then), a rare size change (another grid level),
  // a rare unbounded box (kept apart) and its return.
  void step() {
    for (std::size_t i = 0; i < boxes.size(); ++i) {
      box_t& b = boxes[i];
      if (!bounded(b)) {
        if (r.below(4) == 0) {
          b = make();
          vel[i] = velocity(b);
        }
        continue;
      }
      const double s = size_of(b);
      for (int a = 0; a < D; ++a) {
        double d = vel[i][a];
        if (i % 40 == 0) d += r.uniform(-0.5, 0.5) * s;
        b.min[a] = static_cast<T>(static_cast<double>(b.min[a]) + d);
        b.max[a] = static_cast<T>(static_cast<double>(b.max[a]) + d);
      }
      if (resized && r.below(300) == 0) {
        const double f = r.uniform(0.2, 5.0);
        for (int a = 0; a < D; ++a)
          b.max[a] = static_cast<T>(static_cast<double>(b.min[a]) + (static_cast<double>(b.max[a]) - b.min[a]) * f);
        vel[i] = velocity(b);
      }
      if (unbounded && r.below(1000) == 0) b.max[0] = std::numeric_limits<T>::infinity();
    }
  }
};

template <int D, class T>
std::vector<handle_pair> brute(const slow_scene<D, T>& sc, const std::vector<handle>& hs) {
  std::vector<handle_pair> out;
  for (std::size_t i = 0; i < sc.boxes.size(); ++i) {
    if (!sc.live[i]) continue;
    for (std::size_t j = i + 1; j < sc.boxes.size(); ++j)
      if (sc.live[j] && hhg::overlaps(sc.boxes[i], sc.boxes[j])) out.push_back({hs[i], hs[j]});
  }
  hhg::canonicalize(out);
  return out;
}

std::vector<handle_pair> canonical(std::vector<handle_pair> v) {
  hhg::canonicalize(v);
  return v;
}

// Runs `steps` steps of slow motion. Each step: one batch of the live
// objects; then a few objects removed and inserted again (their slots come
// back: the next batch still names consecutive slots), except every 7th
// step, when one removed object stays out for a step (the batch then skips
// a slot: the general two-pass path). Pairs against brute force and
// validate() after every step.
template <int D, class T>
hhg::detail::path_counters run_slow(const hhg::detail::tuning& tune, std::size_t n, std::size_t steps,
                                    hhg::executor* ex, std::uint64_t seed, bool unbounded = true) {
  slow_scene<D, T> sc(seed, n);
  sc.unbounded = unbounded;
  hhg::hash_grids<D, T> g;
  g.set_tuning(tune);
  if (ex != nullptr) g.set_executor(ex);
  std::vector<handle> hs = g.insert(std::span<const typename slow_scene<D, T>::box_t>(sc.boxes));
  std::vector<handle_pair> pairs;
  std::size_t out_index = n;  // an object kept out for a step (n: none)
  for (std::size_t s = 0; s < steps; ++s) {
    sc.step();
    std::vector<handle> mh;
    std::vector<typename slow_scene<D, T>::box_t> mb;
    for (std::size_t i = 0; i < n; ++i)
      if (sc.live[i]) {
        mh.push_back(hs[i]);
        mb.push_back(sc.boxes[i]);
      }
    g.move(std::span<const handle>(mh), std::span<const typename slow_scene<D, T>::box_t>(mb));
    if (out_index < n) {  // back in (its slot comes back)
      sc.boxes[out_index] = sc.make();
      const handle h = g.insert(sc.boxes[out_index]);
      EXPECT_EQ(h.index, hs[out_index].index);
      hs[out_index] = h;
      sc.live[out_index] = 1;
      out_index = n;
    }
    std::vector<std::size_t> gone;
    for (int k = 0; k < 3; ++k) {
      const std::size_t i = sc.r.below(n);
      if (!sc.live[i]) continue;
      g.remove(hs[i]);
      sc.live[i] = 0;
      gone.push_back(i);
    }
    if (s % 7 == 3 && !gone.empty()) {  // the first removed: its slot is the last to come back
      out_index = gone.front();
      gone.erase(gone.begin());
    }
    // reinserted in the reverse order of removal: each takes back its slot
    for (auto it = gone.rbegin(); it != gone.rend(); ++it) {
      sc.boxes[*it] = sc.make();
      sc.vel[*it] = sc.velocity(sc.boxes[*it]);
      const handle h = g.insert(sc.boxes[*it]);
      EXPECT_EQ(h.index, hs[*it].index);
      hs[*it] = h;
      sc.live[*it] = 1;
    }
    g.find_pairs(pairs);
    EXPECT_EQ(canonical(pairs), brute(sc, hs)) << "step " << s;
    EXPECT_NO_THROW(g.validate()) << "step " << s;
    if (::testing::Test::HasFailure()) break;
  }
  return g.path_counts();
}

// The in-place first pass (batches of consecutive slots that do not take
// the bulk move: bulk_changed_ratio 1 refuses it unless every object
// changed cell), the general two-pass batch when a slot is skipped, the
// displaced walk over the cells written since the layout, and compaction.
TEST(CoherentThreads, InPlaceBatchesStayExactUnderSlowMotion) {
  hhg::thread_pool pool(2);
  auto t = small_tuning();
  t.bulk_changed_ratio = 1;
  t.compact_ratio = 16;  // compactions every few steps at this size
  const auto c = run_slow<3, double>(t, 1500, 50, &pool, 5);
  EXPECT_GT(c.batch_in_place, 0u);
  EXPECT_GT(c.batch_two_pass, 0u);
  EXPECT_GT(c.walk_displaced, 0u);
  EXPECT_GT(c.walk_ordered, 0u);
  EXPECT_GT(c.compactions, 0u);
  EXPECT_GT(c.parallel_detections, 0u);
}

TEST(Coherent, InPlaceBatchesStayExact2DFloat) {
  auto t = small_tuning();
  t.bulk_changed_ratio = 1;
  const auto c = run_slow<2, float>(t, 1500, 40, nullptr, 9);
  EXPECT_GT(c.batch_in_place, 0u);
  EXPECT_GT(c.walk_displaced, 0u);
}

// Without compaction the displaced cells pile up step after step: the
// displaced walk (lookups done ahead, in a ring) carries them all, and the
// ordered part keeps its blocks (a cell that loses objects keeps its place).
TEST(Coherent, DisplacedWalkWithoutCompaction) {
  auto t = small_tuning();
  t.bulk_changed_ratio = 1;
  t.compact_min = std::size_t{1} << 40;  // never
  t.displaced_share = 1;                 // the unordered walk only past all objects displaced: never
  const auto c = run_slow<3, float>(t, 1500, 30, nullptr, 13);
  EXPECT_GT(c.batch_in_place, 0u);
  EXPECT_GT(c.walk_displaced, 20u);
  EXPECT_EQ(c.compactions, 0u);  // (levels made by the size changes are never laid out: those take the unordered walk)
}

// The default rule: even slow motion changes the cells of a few objects a
// step, and the bulk move (a fresh layout in cell order) is taken.
TEST(Coherent, DefaultRuleTakesTheBulkMove) {
  auto t = small_tuning();
  t.bulk_changed_ratio = hhg::detail::tuning{}.bulk_changed_ratio;
  const auto c = run_slow<3, double>(t, 2000, 20, nullptr, 21, false);
  EXPECT_GT(c.batch_bulk, 1u);  // the first batch is always a bulk move; later ones by the rule
}

// The in-place batch gives the same boxes and pairs as the same moves one
// by one.
TEST(Coherent, InPlaceBatchEqualsMovesOneByOne) {
  using box_t = hhg::box<3, double>;
  slow_scene<3, double> sc(31, 1500);
  hhg::hash_grids<3, double> a, b;
  auto t = small_tuning();
  t.bulk_changed_ratio = 1;
  a.set_tuning(t);
  b.set_tuning(t);
  const auto ha = a.insert(std::span<const box_t>(sc.boxes));
  std::vector<handle> hb;
  for (const box_t& x : sc.boxes) hb.push_back(b.insert(x));
  std::vector<handle_pair> pa, pb;
  for (int s = 0; s < 20; ++s) {
    sc.step();
    a.move(std::span<const handle>(ha), std::span<const box_t>(sc.boxes));
    for (std::size_t i = 0; i < hb.size(); ++i) b.move(hb[i], sc.boxes[i]);
    for (std::size_t i = 0; i < ha.size(); ++i) {
      const box_t x = a.get(ha[i]), y = b.get(hb[i]);
      for (int k = 0; k < 3; ++k) {
        ASSERT_EQ(x.min[k], sc.boxes[i].min[k]);
        ASSERT_EQ(x.max[k], sc.boxes[i].max[k]);
        ASSERT_EQ(y.min[k], x.min[k]);
        ASSERT_EQ(y.max[k], x.max[k]);
      }
    }
    a.find_pairs(pa);
    b.find_pairs(pb);
    ASSERT_EQ(canonical(pa), canonical(pb)) << "step " << s;
    ASSERT_EQ(canonical(pa), brute(sc, ha)) << "step " << s;
    a.validate();
  }
  EXPECT_GT(a.path_counts().batch_in_place, 0u);
}

// The bulk move's merge (the objects that changed cell merged into the last
// move's order instead of every key sorted) lays the grid out exactly as the
// sort does: two structures, one that merges whenever it may and one that
// never does, give the same pairs in the same order at every step (one
// with two workers), and brute force's. Between some batches a single
// insert, removal or move to another cell, or a batch in another order,
// makes the last order stale: that batch sorts, and the next merges again.
// validate() checks the kept order against the objects' cells every step.
template <int D, class T>
void merged_equals_sorted(std::uint64_t seed, hhg::executor* ex) {
  using box_t = hhg::box<D, T>;
  slow_scene<D, T> sc(seed, 1200);
  sc.unbounded = false;
  sc.resized = false;  // (one grid: the merge is for one grid)
  hhg::hash_grids<D, T> a, b;
  auto ta = small_tuning(), tb = small_tuning();
  ta.merge_ratio = 1;  // whatever changed in the last batch
  tb.merge_ratio = 0;  // never
  a.set_tuning(ta);
  b.set_tuning(tb);
  if (ex != nullptr) a.set_executor(ex);
  std::vector<handle> ha = a.insert(std::span<const box_t>(sc.boxes)), hb = b.insert(std::span<const box_t>(sc.boxes));
  ASSERT_EQ(a.stats().grids.size(), 1u);
  std::vector<handle_pair> pa, pb;
  std::uint64_t merged = 0, stale = 0;
  for (int s = 0; s < 40; ++s) {
    sc.step();
    const std::uint64_t before = a.path_counts().batch_merged;
    if (s % 8 == 7) {  // a batch in reverse order: not merged (the slots are not the positions)
      std::vector<handle> rh(ha.rbegin(), ha.rend()), rbh(hb.rbegin(), hb.rend());
      std::vector<box_t> rb(sc.boxes.rbegin(), sc.boxes.rend());
      a.move(std::span<const handle>(rh), std::span<const box_t>(rb));
      b.move(std::span<const handle>(rbh), std::span<const box_t>(rb));
      EXPECT_EQ(a.path_counts().batch_merged, before) << "step " << s;
      ++stale;
    } else {
      a.move(std::span<const handle>(ha), std::span<const box_t>(sc.boxes));
      b.move(std::span<const handle>(hb), std::span<const box_t>(sc.boxes));
      // merged unless the last step ended with a single change or was the first
      const bool expect = s > 0 && s % 8 != 0 && s % 5 != 1;
      EXPECT_EQ(a.path_counts().batch_merged, before + (expect ? 1 : 0)) << "step " << s;
      merged += expect;
    }
    ASSERT_EQ(a.path_counts().batch_bulk, b.path_counts().batch_bulk) << "step " << s;
    if (s % 5 == 0) {  // single changes after the batch: the kept order is stale
      const std::size_t i = sc.r.below(sc.boxes.size());
      if ((s / 5) % 2 == 0) {  // moved to another cell (far)
        sc.boxes[i] = sc.make();
        a.move(ha[i], sc.boxes[i]);
        b.move(hb[i], sc.boxes[i]);
      } else {  // two objects swap places (the same cells, held by others)
        const std::size_t j = (i + 1) % sc.boxes.size();
        std::swap(sc.boxes[i], sc.boxes[j]);
        a.move(ha[i], sc.boxes[i]);
        a.move(ha[j], sc.boxes[j]);
        b.move(hb[i], sc.boxes[i]);
        b.move(hb[j], sc.boxes[j]);
      }
      ++stale;
    }
    a.find_pairs(pa);
    b.find_pairs(pb);
    ASSERT_EQ(pa, pb) << "step " << s;  // the same layout: the same pairs in the same order
    ASSERT_EQ(canonical(pa), brute(sc, ha)) << "step " << s;
    a.validate();
    b.validate();
  }
  EXPECT_EQ(a.path_counts().batch_merged, merged);
  EXPECT_GT(merged, 20u);
  EXPECT_GT(stale, 10u);
  EXPECT_EQ(b.path_counts().batch_merged, 0u);
  // Removed and inserted again (its slot comes back, a generation later):
  // the next batch is not in slot order, and sorts.
  const std::size_t i = 17;
  a.remove(ha[i]);
  b.remove(hb[i]);
  sc.boxes[i] = sc.make();
  ha[i] = a.insert(sc.boxes[i]);
  hb[i] = b.insert(sc.boxes[i]);
  sc.step();
  const std::uint64_t bulk = a.path_counts().batch_bulk;
  a.move(std::span<const handle>(ha), std::span<const box_t>(sc.boxes));
  b.move(std::span<const handle>(hb), std::span<const box_t>(sc.boxes));
  EXPECT_EQ(a.path_counts().batch_bulk, bulk + 1);
  EXPECT_EQ(a.path_counts().batch_merged, merged);
  a.find_pairs(pa);
  b.find_pairs(pb);
  EXPECT_EQ(pa, pb);
  EXPECT_EQ(canonical(pa), brute(sc, ha));
  a.validate();
  // Copies keep no key list (scratch): copied, or assigned over a structure
  // with a list of its own, they sort, and stay exact.
  a.move(std::span<const handle>(ha), std::span<const box_t>(sc.boxes));  // (in slot order again: a list kept)
  hhg::hash_grids<D, T> c = a, d = b;
  c.validate();
  d.move(std::span<const handle>(hb), std::span<const box_t>(sc.boxes));  // a list of its own
  d = a;
  d.validate();
  for (hhg::hash_grids<D, T>* x : {&c, &d}) {
    const std::uint64_t was = x->path_counts().batch_merged;
    sc.step();
    x->move(std::span<const handle>(ha), std::span<const box_t>(sc.boxes));
    x->validate();
    x->find_pairs(pa);
    EXPECT_EQ(canonical(pa), brute(sc, ha));
    EXPECT_EQ(x->path_counts().batch_merged, was);
  }
}

TEST(Coherent, MergedBatchesLayOutAsSortedOnes) { merged_equals_sorted<3, double>(51, nullptr); }
TEST(Coherent, MergedBatchesLayOutAsSortedOnes2DFloat) { merged_equals_sorted<2, float>(52, nullptr); }
TEST(CoherentThreads, MergedBatchesLayOutAsSortedOnes) {
  hhg::thread_pool pool(2);
  merged_equals_sorted<3, double>(53, &pool);
}

// A batch of consecutive slots with a bad box or a stale handle changes
// nothing (everything is checked before the first pass).
TEST(Coherent, InPlaceBatchRefusesBadInputUnchanged) {
  using box_t = hhg::box<3, double>;
  slow_scene<3, double> sc(41, 500);
  hhg::hash_grids<3, double> g;
  auto t = small_tuning();
  t.bulk_changed_ratio = 1;
  g.set_tuning(t);
  auto hs = g.insert(std::span<const box_t>(sc.boxes));
  sc.step();
  g.move(std::span<const handle>(hs), std::span<const box_t>(sc.boxes));  // a first batch (bulk)
  std::vector<box_t> next = sc.boxes;
  for (box_t& x : next) x.min[1] += 0.001;
  next[321].min[2] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THROW(g.move(std::span<const handle>(hs), std::span<const box_t>(next)), hhg::error);
  for (std::size_t i = 0; i < hs.size(); ++i) EXPECT_EQ(g.get(hs[i]).min[1], sc.boxes[i].min[1]);
  g.validate();
}

}  // namespace
