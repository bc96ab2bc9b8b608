// The walk across grids (across.hpp): every object of a finer grid against
// the cells of a coarser one. Into a coarser grid laid out in cell order
// with no displaced cells (after a bulk insert or a bulk move) it reads the
// coarser grid's row index (walk_rows, counted in
// path_counts().walk_across_rows): rows indexed over the grid's whole x
// range (uniform), over their own x, or searched; a cell's x - 1 wraps at
// x = 0 and its x + 1 at the last x. Otherwise (displaced cells, a grid not
// laid out) it looks the cells up (walk; walk_across counts both).
// Every case has two levels (the factor fixed), in 2D and 3D, float and
// double; each detection is compared with brute force (as a set: a missing,
// extra or duplicate pair fails) and validate()d, and the path it is named
// after is proved by its counter: dense scenes under bulk motion (uniform
// rows), sparse lines far along x (rows of their own x, and searched ones),
// clusters far from the origin over many periods of the hashed grids with
// boxes touching, zero-size and exactly on cell boundaries at the wrap,
// moves one by one (the lookup walk; the row walk over the gaps they
// leave), and the same pair sequence on 1, 2 and 3 workers.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <memory>
#include <span>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "hhg/brute_force.hpp"
#include "hhg/executor.hpp"
#include "hhg/hash_grids.hpp"
#include "hhg/scenes.hpp"
#include "support.hpp"

namespace {

using hhg_test::as_indices;
using hhg_test::brute_pairs;
using hhg_test::small_tuning;

using hhg::handle;
using hhg::handle_pair;
using hhg::detail::path_counters;
using index_pairs = std::vector<std::pair<std::uint32_t, std::uint32_t>>;

template <class M>
class WalkAcrossRows : public ::testing::Test {};
TYPED_TEST_SUITE(WalkAcrossRows, hhg_test::grid_types, hhg_test::method_names);

// The walk counters of the detections between two snapshots.
struct across_counts {
  std::uint64_t rows = 0, all = 0, searched = 0, uniform = 0, ordered = 0, unordered = 0, displaced = 0;
  across_counts() = default;
  across_counts(const path_counters& a, const path_counters& b)
      : rows(b.walk_across_rows - a.walk_across_rows),
        all(b.walk_across - a.walk_across),
        searched(b.rows_searched - a.rows_searched),
        uniform(b.rows_uniform - a.rows_uniform),
        ordered(b.walk_ordered - a.walk_ordered),
        unordered(b.walk_unordered - a.walk_unordered),
        displaced(b.walk_displaced - a.walk_displaced) {}
  across_counts& operator+=(const across_counts& o) {
    rows += o.rows;
    all += o.all;
    searched += o.searched;
    uniform += o.uniform;
    ordered += o.ordered;
    unordered += o.unordered;
    displaced += o.displaced;
    return *this;
  }
  std::uint64_t lookup() const { return all - rows; }  // walks across through cell lookups
  std::string str() const {
    std::ostringstream os;
    os << "walk_across_rows " << rows << ", walk_across " << all << ", rows_searched " << searched << ", rows_uniform "
       << uniform << ", walk_ordered " << ordered << ", walk_unordered " << unordered << ", walk_displaced "
       << displaced;
    return os.str();
  }
};

// The counters of a test, in its XML record (--gtest_output=xml).
void record(const std::string& key, const across_counts& c) { ::testing::Test::RecordProperty(key, c.str()); }

// Levels the factor 4 apart (no estimate), and cells of the objects' size
// on every axis (no spread, no per-axis scales): sizes 1 .. 12 take two
// levels, cells of about 12.2 and 3.05 (anchored at the largest object).
hhg::config two_levels() {
  hhg::config c;
  c.hierarchy_factor = 4;
  c.adaptive_factor = false;
  return c;
}
hhg::detail::tuning across_tuning() {
  hhg::detail::tuning t = small_tuning();  // (row_cells 0: grids of test size keep the row walk; chunks of 53)
  t.spread_max_log2 = 0;
  t.axis_scale_max_log2 = 0;
  return t;
}

// A box with min corner p and edges e (computed in double, rounded to T).
template <class B>
B make(const std::array<double, 3>& p, const std::array<double, 3>& e) {
  B b;
  for (int a = 0; a < B::dimension; ++a) {
    b.min[a] = static_cast<typename B::scalar>(p[a]);
    b.max[a] = static_cast<typename B::scalar>(p[a] + e[a]);
  }
  return b;
}

// A box of longest edge s (the others 0.75 .. 1 times it), its min corner
// uniform in [lo, lo + span) per axis.
template <class B>
B random_box(hhg::scenes::rng& r, const std::array<double, 3>& lo, const std::array<double, 3>& span, double s) {
  std::array<double, 3> p{}, e{};
  const auto longest = static_cast<int>(r.below(B::dimension));
  for (int a = 0; a < 3; ++a) {
    p[a] = lo[a] + r.uniform(0, span[a]);
    e[a] = a == longest ? s : s * r.uniform(0.75, 1.0);
  }
  return make<B>(p, e);
}

template <class B>
double longest_edge(const B& b) {
  double s = 0;
  for (int a = 0; a < B::dimension; ++a) s = std::max(s, static_cast<double>(b.max[a]) - b.min[a]);
  return s;
}

// The box moved by d (computed in double, its edges kept as they round).
template <class B>
B moved(const B& b, const std::array<double, 3>& d) {
  using T = typename B::scalar;
  B out;
  for (int a = 0; a < B::dimension; ++a) {
    const double lo = static_cast<double>(b.min[a]), e = static_cast<double>(b.max[a]) - lo;
    out.min[a] = static_cast<T>(lo + d[a]);
    out.max[a] = static_cast<T>(static_cast<double>(out.min[a]) + e);
  }
  return out;
}

// Boxes and the group each moves with (group[i] == i: alone).
template <class B>
struct grouped {
  std::vector<B> boxes;
  std::vector<std::uint32_t> group;
  void add(const B& b, std::uint32_t g) {
    boxes.push_back(b);
    group.push_back(g);
  }
  void add(const B& b) { add(b, static_cast<std::uint32_t>(boxes.size())); }
  void append(const std::vector<B>& bs, bool together) {
    const auto g = static_cast<std::uint32_t>(boxes.size());
    for (const B& b : bs) together ? add(b, g) : add(b);
  }
  // every group moved by up to `fraction` of its first box's longest edge per axis
  void move(hhg::scenes::rng& r, double fraction) {
    std::vector<std::array<double, 3>> d(boxes.size());
    for (std::size_t i = 0; i < boxes.size(); ++i)
      if (group[i] == i)
        for (double& x : d[i]) x = r.uniform(-fraction, fraction) * longest_edge(boxes[i]);
    for (std::size_t i = 0; i < boxes.size(); ++i) boxes[i] = moved(boxes[i], d[group[i]]);
  }
};

// One detection: its pairs against brute force over the live boxes, as a
// set (a pair missing, extra or twice fails), validate(), and the counters
// it moved. live: every box when empty.
template <class M>
::testing::AssertionResult detect_exact(M& g, const std::vector<handle>& hs,
                                        const std::vector<typename M::box_type>& bs, std::vector<handle_pair>& found,
                                        across_counts& counts, const std::vector<char>& live = {}) {
  using B = typename M::box_type;
  const path_counters before = g.path_counts();
  g.find_pairs(found);
  counts = across_counts(before, g.path_counts());
  try {
    g.validate();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "validate(): " << e.what();
  }
  std::vector<handle> lh;
  std::vector<B> lb;
  std::vector<std::uint32_t> id;  // live position -> box index
  for (std::size_t i = 0; i < bs.size(); ++i)
    if (live.empty() || live[i]) {
      lh.push_back(hs[i]);
      lb.push_back(bs[i]);
      id.push_back(static_cast<std::uint32_t>(i));
    }
  const index_pairs got = as_indices(found, lh);
  const index_pairs want = brute_pairs<M>(std::span<const B>(lb));
  if (got == want) return ::testing::AssertionSuccess() << want.size() << " pairs";
  index_pairs missing, extra;
  std::set_difference(want.begin(), want.end(), got.begin(), got.end(), std::back_inserter(missing));
  std::set_difference(got.begin(), got.end(), want.begin(), want.end(), std::back_inserter(extra));
  auto out = ::testing::AssertionFailure();
  out << "pairs differ from brute force: got " << got.size() << ", expected " << want.size() << "; " << missing.size()
      << " missing, " << extra.size() << " extra or repeated; " << counts.str();
  auto list = [&](const char* what, const index_pairs& v) {
    for (std::size_t i = 0; i < std::min<std::size_t>(v.size(), 4); ++i)
      out << "\n  " << what << ": objects " << id[v[i].first] << ' ' << hhg_test::show(lb[v[i].first]) << " and "
          << id[v[i].second] << ' ' << hhg_test::show(lb[v[i].second]);
  };
  list("missing", missing);
  list("extra", extra);
  return out;
}

// The grids' statistics, finest first.
template <class M>
std::vector<hhg::grid_statistics> grids_of(const M& m) {
  return m.stats().grids;
}

// ---- (a) dense scenes: the coarser grid's rows indexed uniformly -----------

// n boxes in a cube (square) from `lo` on every axis: three quarters of
// sizes 1 .. 3 (the finer level, in about a fifth of its cells over the
// cube), a quarter of sizes 3 .. 12 (the coarser, a few objects a cell: not
// crowded). Both grids' rows are indexed over their whole x range (uniform)
// while the boxes keep clear of the grids' periods.
template <class B>
std::vector<B> dense_scene(std::uint64_t seed, std::size_t n, double lo) {
  hhg::scenes::rng r(seed);
  const double edge = B::dimension == 3 ? 56 * std::cbrt(static_cast<double>(n) / 2000)
                                        : 220 * std::sqrt(static_cast<double>(n) / 2000);
  std::vector<B> bs;
  for (std::size_t i = 0; i < n; ++i)
    bs.push_back(random_box<B>(r, {lo, lo, lo}, {edge, edge, edge}, i % 4 ? r.uniform(1, 3) : r.uniform(3, 12)));
  return bs;
}

// Bulk insert, then bulk moves of every object by up to 40 % of its size a
// step: every detection exact, and the coarser grid on the row walk,
// indexed uniformly (rows_uniform == walk_ordered: every ordered grid, the
// coarser among them, was). With the tuning of the path tests (chunks of 53
// objects), then the default one (one chunk; a small batch of sparse rows
// goes one by one there, so only the detection after the bulk insert is
// sure to take the row walk).
TYPED_TEST(WalkAcrossRows, DenseTwoLevelsUniformRowsExactUnderBulkMotion) {
  using B = typename TypeParam::box_type;
  for (const bool small : {true, false}) {
    SCOPED_TRACE(small ? "small_tuning" : "default tuning");
    std::vector<B> bs = dense_scene<B>(101, 2000, 24.0);
    TypeParam g(two_levels());
    hhg::detail::tuning t = small ? across_tuning() : hhg::detail::tuning{};
    t.spread_max_log2 = 0;
    t.axis_scale_max_log2 = 0;
    g.set_tuning(t);
    const std::vector<handle> hs = g.insert(std::span<const B>(bs));
    ASSERT_EQ(grids_of(g).size(), 2u);
    hhg::scenes::rng r(7);
    std::vector<handle_pair> found;
    across_counts sum, c;
    std::size_t pairs = 0;
    for (int step = 0; step < 5; ++step) {
      if (step > 0) {
        for (B& b : bs) {
          const double s = longest_edge(b);
          b = moved(b, {r.uniform(-0.4, 0.4) * s, r.uniform(-0.4, 0.4) * s, r.uniform(-0.4, 0.4) * s});
        }
        g.move(std::span<const handle>(hs), std::span<const B>(bs));
      }
      ASSERT_TRUE(detect_exact(g, hs, bs, found, c)) << "step " << step;
      EXPECT_EQ(c.all, 1u) << "step " << step;  // one pair of grids
      if (small || step == 0) {
        EXPECT_EQ(c.rows, 1u) << "step " << step;
        EXPECT_EQ(c.uniform, c.ordered) << "step " << step;
      }
      sum += c;
      pairs += found.size();
    }
    EXPECT_EQ(grids_of(g).size(), 2u);
    EXPECT_GT(pairs, 5 * 1000u);
    if (small) {
      EXPECT_EQ(g.path_counts().batch_bulk, 4u);
      EXPECT_EQ(sum.rows, 5u);
      EXPECT_EQ(sum.uniform, 10u);  // both grids, every detection
    }
    record(small ? "small_tuning" : "default_tuning", sum);
  }
}

// ---- (b) sparse lines: rows over their own x, and searched rows ------------

// The cell of coordinate v along an axis as a grid of cells `cell` computes
// it (cells.hpp: floor(v * inv), inv = 1 / cell with no per-axis scales),
// before the modulo.
template <class T>
std::int64_t cell_floor(T v, double cell) {
  return static_cast<std::int64_t>(std::floor(static_cast<double>(v) * (1.0 / cell)));
}

// The occupied rows of a grid (its objects' min-corner cells, y and z
// modulo the grid's cells), from the grid's statistics: the rows the row
// index holds.
template <class B>
std::size_t occupied_rows(const std::vector<B>& bs, const hhg::grid_statistics& g, double finer_cell) {
  std::vector<std::uint64_t> rows;
  for (const B& b : bs) {
    if (!(longest_edge(b) >= finer_cell)) continue;  // (in the finer grid)
    std::uint64_t row = 0;
    for (int a = 1; a < B::dimension; ++a)
      row = row << 20 | (static_cast<std::uint64_t>(cell_floor(b.min[a], g.cell_size)) & (g.cells_per_axis[a] - 1));
    rows.push_back(row);
  }
  std::sort(rows.begin(), rows.end());
  return static_cast<std::size_t>(std::unique(rows.begin(), rows.end()) - rows.begin());
}

// Coarser boxes (sizes 6 .. 12): five sixths thin along a line `length` long
// in x from lo, over the rows of y (and z) in [0, wide) (a few cells a row,
// far apart: searched rows), a sixth packed over x in [lo, lo + 400) and y
// in [wide, wide + 24) (rows indexed over their own x). Finer boxes (sizes
// 1 .. 3) in clumps of 12 whose min corners share a cell, one on every
// fourth coarser box: the finer grid is crowded and takes the lookup walk,
// so that the one ordered walk counted is the coarser grid's.
template <class B>
grouped<B> line_scene(std::uint64_t seed, std::size_t coarse, double lo, double length, double wide) {
  hhg::scenes::rng r(seed);
  grouped<B> sc;
  for (std::size_t i = 0; i < coarse; ++i) {
    const bool packed = i % 6 == 0;
    const std::array<double, 3> at{lo, packed ? wide : 0.0, 0.0};
    const std::array<double, 3> span{packed ? 400.0 : length, packed ? 24.0 : wide, wide};
    sc.add(random_box<B>(r, at, span, r.uniform(6, 12)));
  }
  for (std::size_t i = 0; i < coarse; i += 4) {
    const B o = sc.boxes[i];
    std::array<double, 3> p{};
    for (int a = 0; a < B::dimension; ++a) p[a] = static_cast<double>(o.min[a]) + r.uniform(-2, 5);
    std::vector<B> clump;
    for (int k = 0; k < 12; ++k) {
      const double s = r.uniform(1, 3);
      clump.push_back(make<B>({p[0] + r.uniform(0, 0.01), p[1] + r.uniform(0, 0.01), p[2] + r.uniform(0, 0.01)},
                              {s, s * r.uniform(0.75, 1), s * r.uniform(0.75, 1)}));
    }
    sc.append(clump, true);
  }
  return sc;
}

// The line from x = 0, and across x = 0 (cells on both sides of the wrap);
// bulk moves of every box (clumps together) by up to 30 % of its size a
// step. The one ordered grid is the coarser one (walk_ordered 1 a
// detection), on the row walk, not indexed uniformly, with searched rows and
// fewer searched rows than occupied ones (the others indexed over their
// own x). searched_share 0: the grid keeps the row walk although most of its
// cells lie in searched rows.
TYPED_TEST(WalkAcrossRows, SparseLinesSearchedRowsExactUnderBulkMotion) {
  using B = typename TypeParam::box_type;
  constexpr int D = TypeParam::dimension;
  for (const double lo : {0.0, -3000.0}) {
    SCOPED_TRACE(lo);
    grouped<B> sc = line_scene<B>(202, 1200, lo, 6000, D == 3 ? 60 : 240);
    TypeParam g(two_levels());
    hhg::detail::tuning t = across_tuning();
    t.searched_share = 0;
    g.set_tuning(t);
    const std::vector<handle> hs = g.insert(std::span<const B>(sc.boxes));
    ASSERT_EQ(grids_of(g).size(), 2u);
    hhg::scenes::rng r(9);
    std::vector<handle_pair> found;
    across_counts sum, c;
    for (int step = 0; step < 4; ++step) {
      if (step > 0) {
        sc.move(r, 0.3);
        g.move(std::span<const handle>(hs), std::span<const B>(sc.boxes));
      }
      ASSERT_TRUE(detect_exact(g, hs, sc.boxes, found, c)) << "step " << step;
      const auto gs = grids_of(g);
      ASSERT_EQ(gs.size(), 2u);
      EXPECT_EQ(c.all, 1u) << "step " << step;
      EXPECT_EQ(c.rows, 1u) << "step " << step;
      EXPECT_EQ(c.ordered, 1u) << "step " << step;  // the coarser grid only: the finer one is crowded
      EXPECT_EQ(c.uniform, 0u) << "step " << step;
      EXPECT_GT(c.searched, 0u) << "step " << step;
      EXPECT_LT(c.searched, occupied_rows(sc.boxes, gs[1], gs[0].cell_size)) << "step " << step;
      EXPECT_GT(found.size(), sc.boxes.size()) << "step " << step;
      sum += c;
    }
    record(lo == 0 ? "from_0" : "across_0", sum);
  }
}

// ---- (c) far from the origin, over many periods; touching and on boundaries -

// The least T with cell_floor(v, cell) >= k: the first coordinate of cell k
// as the grid computes cells.
template <class T>
T boundary(double cell, std::int64_t k) {
  constexpr T inf = std::numeric_limits<T>::infinity();
  T v = static_cast<T>(static_cast<double>(k) * cell);
  while (cell_floor(v, cell) >= k) v = std::nextafter(v, -inf);
  while (cell_floor(v, cell) < k) v = std::nextafter(v, inf);
  return v;
}

// A box placed around a lattice point p, per axis one of: min on p, max on
// p, both on p (zero extent), p inside, or just below p (not touching what
// starts at p); `s` its edge.
struct shape {
  std::array<int, 3> kind{};
  double s = 1;
};
template <class B>
B place(const shape& sh, const std::array<typename B::scalar, 3>& p) {
  using T = typename B::scalar;
  B b;
  for (int a = 0; a < B::dimension; ++a) {
    const T q = p[a];
    const double v = static_cast<double>(q);
    const T below = std::nextafter(q, -std::numeric_limits<T>::infinity());
    switch (sh.kind[a]) {
      case 0: b.min[a] = q, b.max[a] = static_cast<T>(v + sh.s); break;
      case 1: b.min[a] = static_cast<T>(v - sh.s), b.max[a] = q; break;
      case 2: b.min[a] = b.max[a] = q; break;
      case 3: b.min[a] = static_cast<T>(v - sh.s / 2), b.max[a] = static_cast<T>(v + sh.s / 2); break;
      default: b.min[a] = static_cast<T>(static_cast<double>(below) - sh.s), b.max[a] = below; break;
    }
  }
  return b;
}

// The boxes around one lattice point: 3 coarser (edges 4 .. 11, at least
// one axis not of zero extent), 5 finer (edges 1 .. 2.5) and a point.
std::vector<shape> pattern_shapes(hhg::scenes::rng& r) {
  std::vector<shape> out;
  for (int k = 0; k < 9; ++k) {
    shape sh;
    sh.s = k < 3 ? r.uniform(4, 11) : r.uniform(1, 2.5);
    for (int a = 0; a < 3; ++a) sh.kind[a] = k == 8 ? 2 : static_cast<int>(r.below(5));
    if (k < 3 && sh.kind[0] == 2) sh.kind[0] = static_cast<int>(r.below(2));  // (its level: the coarser)
    out.push_back(sh);
  }
  return out;
}

// Clusters of the dense scene (100 boxes each, moving together) around
// points far from the origin (up to 1e5 and 1e6 on every axis, either
// sign), then `points` lattice patterns: boxes on the coarser grid's cell
// boundaries, mostly at multiples of its period (x = 0 of the hashed grid:
// cells x = 0 and the last x meet there), placed after the grids exist.
template <class B>
struct far_scene {
  using T = typename B::scalar;
  grouped<B> sc;
  std::size_t first_pattern = 0;
  std::vector<shape> shapes;

  far_scene(std::uint64_t seed, std::size_t clusters, std::size_t points) {
    hhg::scenes::rng r(seed);
    for (std::size_t k = 0; k < clusters; ++k) {
      const double far = k % 4 == 3 ? 1e6 : 1e5;
      std::array<double, 3> at{};
      for (double& x : at) x = r.uniform(-far, far);
      std::vector<B> bs = dense_scene<B>(seed * 131 + k, 100, 0.0);
      for (B& b : bs) b = moved(b, at);
      sc.append(bs, true);
    }
    first_pattern = sc.boxes.size();
    for (std::size_t j = 0; j < points; ++j)
      for (const shape& sh : pattern_shapes(r)) {
        shapes.push_back(sh);
        sc.add(place<B>(
            sh, {static_cast<T>(1000.0 * static_cast<double>(j) - 30000), T(0), T(0)}));  // (until the grids exist)
      }
  }

  // The patterns around new lattice points of the coarser grid g: per axis
  // a multiple of the period up to about 1e5 away (two in three on x), one
  // cell beside it, or any cell up to 1e5 away.
  void place_patterns(hhg::scenes::rng& r, const hhg::grid_statistics& g) {
    const std::size_t per = 9;
    for (std::size_t j = first_pattern, s = 0; j < sc.boxes.size(); j += per, s += per) {
      std::array<T, 3> p{};
      for (int a = 0; a < B::dimension; ++a) {
        const auto cells = static_cast<std::int64_t>(g.cells_per_axis[a]);
        const auto periods = static_cast<std::int64_t>(1e5 / (static_cast<double>(cells) * g.cell_size));
        const std::int64_t m =
            static_cast<std::int64_t>(r.below(2 * static_cast<std::uint64_t>(periods) + 1)) - periods;
        const std::uint64_t how = r.below(a == 0 ? 6 : 3);
        std::int64_t k = m * cells;
        if (how == 1) k += r.below(2) ? 1 : -1;
        if (how == 2) k = static_cast<std::int64_t>(r.uniform(-1e5, 1e5) / g.cell_size);
        p[a] = boundary<T>(g.cell_size, k);
      }
      for (std::size_t i = 0; i < per; ++i) sc.boxes[j + i] = place<B>(shapes[s + i], p);
    }
  }
};

// Of the pairs found: those that touch (faces meeting at one coordinate on
// some axis), those of a point (a box of zero extent on every
// axis), and those of an object of the top grid whose min corner lies in
// its cell x = 0 with one of a finer grid in its last x, or the other way
// round (the pairs the row walk finds through its wrapped spans).
struct pair_kinds {
  std::size_t touching = 0, points = 0, wrapped = 0;
};
template <class B>
pair_kinds kinds_of(const std::vector<B>& bs, const index_pairs& pairs, const std::vector<hhg::grid_statistics>& gs) {
  pair_kinds out;
  const double cell = gs.back().cell_size, below = gs[gs.size() - 2].cell_size;
  const std::int64_t mx = gs.back().cells_per_axis[0] - 1;
  for (const auto& [i, j] : pairs) {
    bool touch = false;  // a face on a face: both of extent, meeting at one coordinate
    for (int a = 0; a < B::dimension; ++a)
      touch = touch || (bs[i].min[a] < bs[i].max[a] && bs[j].min[a] < bs[j].max[a] &&
                        std::max(bs[i].min[a], bs[j].min[a]) == std::min(bs[i].max[a], bs[j].max[a]));
    out.touching += touch;
    out.points += longest_edge(bs[i]) == 0 || longest_edge(bs[j]) == 0;
    const bool ti = longest_edge(bs[i]) >= below, tj = longest_edge(bs[j]) >= below;
    if (ti == tj) continue;
    const B& fine = ti ? bs[j] : bs[i];
    const B& top = ti ? bs[i] : bs[j];
    const std::int64_t xf = cell_floor(fine.min[0], cell) & mx, xt = cell_floor(top.min[0], cell) & mx;
    out.wrapped += (xf == 0 && xt == mx) || (xf == mx && xt == 0);
  }
  return out;
}

// The grids holding objects.
template <class M>
std::size_t live_grids(const M& m) {
  std::size_t n = 0;
  for (const auto& g : m.stats().grids) n += g.objects != 0;
  return n;
}

// Clusters up to 1e6 from the origin (the hashed grids alias them: their
// periods are a few hundred units) and lattice patterns at the coarsest
// grid's cell boundaries, new ones each step while the clusters move; bulk
// moves. (Points far from the origin are sized by their coordinates'
// precision: they take levels of their own, far below the two of the
// clusters, some made by a batch, which then moves one by one.) Exact, a
// walk across every pair of live grids, on the row walk in every detection
// (searched_share 0: rows of cells scattered by the aliasing may be
// searched), and all of them after the bulk insert; touching pairs, pairs
// of points, pairs across the wrap of x.
TYPED_TEST(WalkAcrossRows, FarFromOriginAcrossPeriodsTouchingAndOnBoundariesExact) {
  using B = typename TypeParam::box_type;
  far_scene<B> fs(303, 24, 60);
  TypeParam g(two_levels());
  hhg::detail::tuning t = across_tuning();
  t.searched_share = 0;
  g.set_tuning(t);
  const std::vector<handle> hs = g.insert(std::span<const B>(fs.sc.boxes));
  ASSERT_GE(grids_of(g).size(), 2u);
  const double top = grids_of(g).back().cell_size;
  hhg::scenes::rng r(11);
  std::vector<handle_pair> found;
  across_counts sum, c;
  pair_kinds kinds;
  for (int step = 0; step < 5; ++step) {
    if (step > 0) {
      fs.sc.move(r, 0.3);
      fs.place_patterns(r, grids_of(g).back());
      g.move(std::span<const handle>(hs), std::span<const B>(fs.sc.boxes));
    }
    ASSERT_TRUE(detect_exact(g, hs, fs.sc.boxes, found, c)) << "step " << step;
    const auto gs = grids_of(g);
    ASSERT_EQ(gs.back().cell_size, top);  // (the clusters' levels stay)
    const std::size_t live = live_grids(g);
    EXPECT_EQ(c.all, live * (live - 1) / 2) << "step " << step;
    EXPECT_GE(c.rows, 1u) << "step " << step;
    if (step == 0) {
      EXPECT_EQ(c.rows, c.all);
    }
    const pair_kinds k = kinds_of(fs.sc.boxes, as_indices(found, hs), gs);
    kinds.touching += k.touching;
    kinds.points += k.points;
    kinds.wrapped += k.wrapped;
    sum += c;
  }
  EXPECT_GT(kinds.touching, 20u);
  EXPECT_GT(kinds.points, 5u);
  EXPECT_GT(kinds.wrapped, 5u);
  record("far", sum);
  ::testing::Test::RecordProperty(
      "pairs_touching_points_wrapped",
      std::to_string(kinds.touching) + " " + std::to_string(kinds.points) + " " + std::to_string(kinds.wrapped));
  ::testing::Test::RecordProperty("grids", static_cast<int>(grids_of(g).size()));
}

// ---- (d) moves one by one: the lookup walk, and the row walk over gaps ------

// After a bulk insert: a few coarser objects moved one by one into empty
// cells far away (displaced cells: the lookup walk, with the displaced
// walk within the grid); a bulk move (the row walk again); then finer
// objects moved one by one anywhere, coarser ones removed and moved within
// their cells (the coarser grid keeps its layout, with gaps: the row walk);
// then half the coarser objects moved one by one (too many displaced: the
// lookup walk over an unordered grid). compact_min: never compacted.
TYPED_TEST(WalkAcrossRows, MovesOneByOneTakeTheLookupWalkOrKeepTheRows) {
  using B = typename TypeParam::box_type;
  constexpr int D = TypeParam::dimension;
  std::vector<B> bs = dense_scene<B>(404, 2000, 24.0);
  TypeParam g(two_levels());
  hhg::detail::tuning t = across_tuning();
  t.compact_min = std::size_t{1} << 40;
  g.set_tuning(t);
  const std::vector<handle> hs = g.insert(std::span<const B>(bs));
  ASSERT_EQ(grids_of(g).size(), 2u);
  const double fine_cell = grids_of(g)[0].cell_size;
  std::vector<std::size_t> coarse, fine;
  for (std::size_t i = 0; i < bs.size(); ++i) (longest_edge(bs[i]) >= fine_cell ? coarse : fine).push_back(i);
  ASSERT_GT(coarse.size(), 300u);
  std::vector<char> live(bs.size(), 1);
  hhg::scenes::rng r(13);
  std::vector<handle_pair> found;
  across_counts c, lookup, rows;
  ASSERT_TRUE(detect_exact(g, hs, bs, found, c));
  EXPECT_EQ(c.rows, 1u);
  rows += c;
  auto one = [&](std::size_t i, const B& b) {
    bs[i] = b;
    g.move(hs[i], b);
  };
  // a few coarser objects into empty cells far off (with a finer one on each)
  for (std::size_t k = 0; k < 6; ++k) {
    const std::size_t i = coarse[k * 37];
    one(i, moved(bs[i], {1000.0 + 40.0 * static_cast<double>(k), 0, 0}));
    const B o = bs[i];
    one(fine[k], make<B>({o.min[0] + 0.5, o.min[1] + 0.5, D == 3 ? o.min[D - 1] + 0.5 : 0.0}, {1.5, 1.5, 1.5}));
  }
  ASSERT_TRUE(detect_exact(g, hs, bs, found, c, live)) << "coarser objects moved into empty cells";
  EXPECT_EQ(c.all, 1u);
  EXPECT_EQ(c.rows, 0u);  // the lookup walk
  EXPECT_GE(c.displaced, 1u);
  lookup += c;
  // a bulk move: laid out again
  for (B& b : bs) b = moved(b, {r.uniform(-0.5, 0.5), r.uniform(-0.5, 0.5), r.uniform(-0.5, 0.5)});
  g.move(std::span<const handle>(hs), std::span<const B>(bs));
  ASSERT_TRUE(detect_exact(g, hs, bs, found, c, live)) << "after the bulk move";
  EXPECT_EQ(c.rows, 1u);
  rows += c;
  // finer objects anywhere, coarser ones removed or moved within their cells
  for (std::size_t k = 0; k < 40; ++k) {
    const std::size_t i = fine[r.below(fine.size())];
    one(i, moved(bs[i], {r.uniform(-20, 20), r.uniform(-20, 20), r.uniform(-20, 20)}));
  }
  const double coarse_cell = grids_of(g)[1].cell_size;
  for (std::size_t k = 0; k < 30; ++k) {
    const std::size_t i = coarse[k * 11 + 3];
    if (k % 2 == 0) {
      g.remove(hs[i]);
      live[i] = 0;
    } else {  // within its cell: its min corner stays in the cell's floor
      std::array<double, 3> d{};
      for (int a = 0; a < B::dimension; ++a) {
        const double lo = static_cast<double>(bs[i].min[a]);
        const double room =
            static_cast<double>(boundary<typename B::scalar>(coarse_cell, cell_floor(bs[i].min[a], coarse_cell) + 1)) -
            lo;
        d[a] = room * 0.5;
      }
      one(i, moved(bs[i], d));
    }
  }
  ASSERT_TRUE(detect_exact(g, hs, bs, found, c, live)) << "gaps in the coarser grid";
  EXPECT_EQ(c.all, 1u);
  EXPECT_EQ(c.rows, 1u);  // its layout kept: the row walk
  rows += c;
  // half the coarser objects one by one: too many displaced, the grid unordered
  for (std::size_t k = 0; k < coarse.size(); k += 2) {
    const std::size_t i = coarse[k];
    if (!live[i]) continue;
    one(i, moved(bs[i], {r.uniform(-30, 30), r.uniform(-30, 30), r.uniform(-30, 30)}));
  }
  ASSERT_TRUE(detect_exact(g, hs, bs, found, c, live)) << "half the coarser objects moved";
  EXPECT_EQ(c.all, 1u);
  EXPECT_EQ(c.rows, 0u);
  EXPECT_GE(c.unordered, 1u);
  lookup += c;
  EXPECT_EQ(lookup.lookup(), 2u);
  EXPECT_EQ(rows.rows, 3u);
  EXPECT_EQ(grids_of(g).size(), 2u);
  record("lookup", lookup);
  record("rows", rows);
}

// ---- (e) the same pairs in the same order on any number of workers --------

// A run of a scene: bulk insert and three bulk moves, on `threads` workers
// (0: no executor); the pairs of every detection, in order, one after the
// other. Without an executor each detection is compared with brute force.
template <class B>
struct run_result {
  std::vector<handle_pair> sequence;
  std::vector<handle> hs;
  across_counts counts;
  std::uint64_t parallel = 0;
};
template <class M>
run_result<typename M::box_type> run_on(grouped<typename M::box_type> sc, unsigned threads,
                                        std::size_t searched_share) {
  using B = typename M::box_type;
  M g(two_levels());
  hhg::detail::tuning t = across_tuning();
  t.searched_share = searched_share;
  g.set_tuning(t);
  std::unique_ptr<hhg::thread_pool> pool;
  if (threads > 0) {
    pool = std::make_unique<hhg::thread_pool>(threads);
    g.set_executor(pool.get());
  }
  run_result<B> out;
  out.hs = g.insert(std::span<const B>(sc.boxes));
  hhg::scenes::rng r(17);
  std::vector<handle_pair> found;
  for (int step = 0; step < 4; ++step) {
    if (step > 0) {
      sc.move(r, 0.3);
      g.move(std::span<const handle>(out.hs), std::span<const B>(sc.boxes));
    }
    across_counts c;
    if (threads == 0) {
      EXPECT_TRUE(detect_exact(g, out.hs, sc.boxes, found, c)) << "step " << step;
    } else {
      const path_counters before = g.path_counts();
      g.find_pairs(found);
      c = across_counts(before, g.path_counts());
    }
    EXPECT_GE(c.rows, 1u) << "step " << step << ", " << threads << " workers";
    out.counts += c;
    out.sequence.insert(out.sequence.end(), found.begin(), found.end());
  }
  out.parallel = g.path_counts().parallel_detections;
  return out;
}

template <class M>
void same_on_every_worker_count(const grouped<typename M::box_type>& sc, std::size_t searched_share,
                                const std::string& name) {
  const auto reference = run_on<M>(sc, 0, searched_share);
  ASSERT_FALSE(reference.sequence.empty());
  for (const unsigned threads : {1u, 2u, 3u}) {
    const auto run = run_on<M>(sc, threads, searched_share);
    ASSERT_EQ(run.hs, reference.hs);
    EXPECT_TRUE(run.sequence == reference.sequence)
        << threads << " workers: the pair sequence differs (" << run.sequence.size() << " pairs, "
        << reference.sequence.size() << " without an executor)";
    EXPECT_EQ(run.counts.rows, reference.counts.rows) << threads << " workers";
    EXPECT_EQ(run.counts.all, reference.counts.all) << threads << " workers";
    if (threads > 1) {
      EXPECT_EQ(run.parallel, 4u) << threads << " workers";
    }
  }
  record(name, reference.counts);
}

TEST(WalkAcrossRowsThreads, UniformRowsSamePairSequenceOnOneTwoThreeWorkers) {
  using M = hhg::hash_grids<3, double>;
  grouped<M::box_type> sc;
  sc.append(dense_scene<M::box_type>(505, 4000, 24.0), false);
  same_on_every_worker_count<M>(sc, 2, "uniform_3d_double");
}

TEST(WalkAcrossRowsThreads, SearchedRowsSamePairSequenceOnOneTwoThreeWorkers) {
  using M = hhg::hash_grids<2, float>;
  same_on_every_worker_count<M>(line_scene<M::box_type>(606, 1200, -3000, 6000, 240), 0, "searched_2d_float");
}

TEST(WalkAcrossRowsThreads, FarFromOriginSamePairSequenceOnOneTwoThreeWorkers) {
  using M = hhg::hash_grids<3, float>;
  far_scene<M::box_type> fs(707, 24, 60);
  {  // the patterns on the cell boundaries of the grids these boxes get
    M g(two_levels());
    g.set_tuning(across_tuning());
    g.insert(std::span<const M::box_type>(fs.sc.boxes));
    hhg::scenes::rng r(19);
    fs.place_patterns(r, grids_of(g).back());
  }
  same_on_every_worker_count<M>(fs.sc, 0, "far_3d_float");
}

}  // namespace
