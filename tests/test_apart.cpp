// Issue 20, parts 3, 4 and 5: the objects the hash grid keeps apart
// (unbounded, too large, or past the last free level) are paired through an
// index over their narrow axes (src/hash_grids/apart.hpp) and match brute
// force; the default method answers inputs that need more than 250 levels;
// a slot whose generation would wrap is retired; query visitors that change
// the structure are refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cli_support.hpp"
#include "hhg/executor.hpp"
#include "hhg/hash_grids.hpp"
#include "hhg/queries.hpp"
#include "hhg/sweep_and_prune.hpp"

namespace {

using hhg::errc;
using hhg::handle;
using index_pairs = std::vector<std::pair<std::uint32_t, std::uint32_t>>;
constexpr double kInf = std::numeric_limits<double>::infinity();

// pairs as sorted (insertion number, insertion number), from handles whose
// index is the insertion number (fresh structure, no removal)
index_pairs canonical(const std::vector<hhg::handle_pair>& ps) {
  index_pairs out;
  for (const auto& p : ps) out.emplace_back(std::min(p.a.index, p.b.index), std::max(p.a.index, p.b.index));
  std::sort(out.begin(), out.end());
  return out;
}

template <int D, class T>
index_pairs brute(const std::vector<hhg::box<D, T>>& bs) {
  index_pairs out;
  for (std::uint32_t i = 0; i < bs.size(); ++i)
    for (std::uint32_t j = i + 1; j < bs.size(); ++j)
      if (hhg::overlaps(bs[i], bs[j])) out.emplace_back(i, j);
  return out;
}

template <int D, class T>
index_pairs with_sap(const std::vector<hhg::box<D, T>>& bs) {
  hhg::sweep_and_prune<D, T> m;
  for (const auto& b : bs) m.insert(b);
  std::vector<hhg::handle_pair> ps;
  m.find_pairs(ps);
  return canonical(ps);
}

// The pairs of the default method (one insert each or one bulk insert),
// with the path counters after the detection.
template <int D, class T>
index_pairs with_grids(const std::vector<hhg::box<D, T>>& bs, bool bulk, std::size_t index_min,
                       hhg::detail::path_counters* paths = nullptr, hhg::executor* ex = nullptr,
                       std::vector<hhg::handle_pair>* raw = nullptr, double factor = hhg::config{}.hierarchy_factor) {
  hhg::config c;
  c.adaptive_factor = factor == c.hierarchy_factor;  // (a factor asked for: every level that far apart)
  c.hierarchy_factor = factor;
  hhg::hash_grids<D, T> m(c);
  m.set_executor(ex);
  auto t = m.tuning();
  t.apart_index_min = index_min;
  m.set_tuning(t);
  if (bulk) {
    const auto hs = m.insert(std::span<const hhg::box<D, T>>(bs));
    for (std::uint32_t i = 0; i < hs.size(); ++i) EXPECT_EQ(hs[i].index, i);
  } else {
    for (const auto& b : bs) m.insert(b);
  }
  m.validate();
  std::vector<hhg::handle_pair> ps;
  m.find_pairs(ps);
  if (paths != nullptr) *paths = m.path_counts();
  if (raw != nullptr) *raw = ps;
  auto out = canonical(ps);
  EXPECT_TRUE(std::adjacent_find(out.begin(), out.end()) == out.end()) << "a pair reported twice";
  return out;
}

// Unbounded objects of every kind (slabs, half-spaces, planes, lines, the
// whole space, degenerate boxes at infinity) among bounded boxes of sizes
// over 6 decades.
template <int D, class T>
std::vector<hhg::box<D, T>> unbounded_scene(std::uint64_t seed, std::size_t apart, std::size_t others) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  const double world = 100;
  std::vector<hhg::box<D, T>> bs;
  auto at = [&] { return static_cast<T>(std::floor((u(rng) * world - world / 2) * 4) / 4); };
  for (std::size_t k = 0; k < apart; ++k) {
    hhg::box<D, T> b;
    const int kind = static_cast<int>(rng() % 7);
    for (int i = 0; i < D; ++i) {
      const T lo = at();
      const T w = static_cast<T>(std::floor(u(rng) * 8) / 4);
      b.min[i] = lo;
      b.max[i] = static_cast<T>(lo + w);
    }
    const int axis = static_cast<int>(rng() % D);
    switch (kind) {
      case 0:  // a slab: finite on one axis only
        for (int i = 0; i < D; ++i)
          if (i != axis) b.min[i] = -kInf, b.max[i] = kInf;
        break;
      case 1: b.max[axis] = kInf; break;   // a half-space on one axis
      case 2: b.min[axis] = -kInf; break;  // the other side
      case 3:                              // a plane (zero width) infinite on the others
        b.max[axis] = b.min[axis];
        for (int i = 0; i < D; ++i)
          if (i != axis) b.min[i] = -kInf, b.max[i] = kInf;
        break;
      case 4:  // everything
        for (int i = 0; i < D; ++i) b.min[i] = -kInf, b.max[i] = kInf;
        break;
      case 5:  // a degenerate box at +infinity on one axis
        b.min[axis] = b.max[axis] = static_cast<T>(kInf);
        break;
      default:  // a half-line: one finite end per axis
        for (int i = 0; i < D; ++i) (rng() % 2 ? b.min[i] : b.max[i]) = static_cast<T>(rng() % 2 ? kInf : -kInf);
        if (b.min[0] > b.max[0]) std::swap(b.min[0], b.max[0]);
        for (int i = 0; i < D; ++i)
          if (b.min[i] > b.max[i]) b.min[i] = -kInf, b.max[i] = kInf;
    }
    bs.push_back(b);
  }
  for (std::size_t k = 0; k < others; ++k) {
    hhg::box<D, T> b;
    const double s = std::exp2(std::floor(u(rng) * 20) - 10);  // 2^-10 .. 2^9
    for (int i = 0; i < D; ++i) {
      b.min[i] = at();
      b.max[i] = static_cast<T>(b.min[i] + s);
    }
    bs.push_back(b);
  }
  std::shuffle(bs.begin(), bs.end(), rng);
  return bs;
}

template <int D, class T>
void apart_matches_brute_force() {
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    for (const std::size_t apart : {3, 40, 400}) {
      const auto bs = unbounded_scene<D, T>(seed, apart, 1500);
      const auto want = brute<D, T>(bs);
      hhg::detail::path_counters paths;
      // the index forced, the default, and the direct test
      EXPECT_EQ((with_grids<D, T>(bs, false, 1, &paths)), want) << "seed " << seed << ", " << apart << " apart";
      EXPECT_GE(paths.apart_index, 1u) << "the index did not run";
      EXPECT_EQ((with_grids<D, T>(bs, true, 8, &paths)), want) << "seed " << seed << ", " << apart << " apart";
      EXPECT_EQ(paths.apart_index > 0, apart >= 8);
      EXPECT_EQ((with_grids<D, T>(bs, false, std::size_t(-1), &paths)), want) << "seed " << seed;
      EXPECT_EQ(paths.apart_index, 0u);
    }
  }
}

TEST(Apart, IndexMatchesBruteForce2Float) { apart_matches_brute_force<2, float>(); }
TEST(Apart, IndexMatchesBruteForce2Double) { apart_matches_brute_force<2, double>(); }
TEST(Apart, IndexMatchesBruteForce3Float) { apart_matches_brute_force<3, float>(); }
TEST(Apart, IndexMatchesBruteForce3Double) { apart_matches_brute_force<3, double>(); }

// Before activation (all-pairs list) the apart objects meet the list.
TEST(Apart, IndexBeforeActivation) {
  const auto bs = unbounded_scene<3, double>(9, 20, 25);
  hhg::config c;
  c.activation_threshold = 100;  // the 25 boxes stay in the list
  hhg::hash_grids<3, double> m(c);
  for (const auto& b : bs) m.insert(b);
  EXPECT_FALSE(m.stats().grids_active);
  std::vector<hhg::handle_pair> ps;
  m.find_pairs(ps);
  EXPECT_EQ(canonical(ps), (brute<3, double>(bs)));
  EXPECT_EQ(m.path_counts().apart_index, 1u);
}

// The case, scaled down: slabs infinite in y and z among small
// boxes, against sweep and prune; the index runs, and the order of the pairs
// is the same for every worker count.
TEST(Apart, SlabsAmongBoxesThreads) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(0, 1);
  const std::size_t n = 6000;
  std::vector<hhg::box<3, double>> bs;
  for (std::size_t i = 0; i < n; ++i) {
    const double x = u(rng) * 3 * n;
    bs.push_back({{x, -kInf, -kInf}, {x + 0.5, kInf, kInf}});
  }
  for (std::size_t i = 0; i < n; ++i) {
    const double x = u(rng) * 3 * n, y = u(rng) * 40, z = u(rng) * 40;
    bs.push_back({{x, y, z}, {x + 1, y + 1, z + 1}});
  }
  hhg::detail::path_counters paths;
  std::vector<hhg::handle_pair> one, more;
  const auto got = with_grids<3, double>(bs, true, 8, &paths, nullptr, &one);
  EXPECT_EQ(got, (with_sap<3, double>(bs)));
  EXPECT_GT(got.size(), 1000u);
  EXPECT_EQ(paths.apart_index, 1u);
  for (unsigned threads : {2u, 3u}) {
    hhg::thread_pool pool(threads);
    with_grids<3, double>(bs, true, 8, nullptr, &pool, &more);
    EXPECT_EQ(more, one) << threads << " threads: another order";
  }
}

// ---- part 3: inputs that need more than 250 levels ----------------------------

template <int D, class T>
std::vector<hhg::box<D, T>> far_unit_boxes() {  // equal unit boxes at x = 2^k
  std::vector<hhg::box<D, T>> bs;
  const int top = std::is_same_v<T, float> ? 127 : 300;
  for (int k = 0; k < top; ++k) {
    hhg::box<D, T> b;
    for (int i = 0; i < D; ++i) b.min[i] = 0, b.max[i] = 1;
    b.min[0] = static_cast<T>(std::ldexp(1.0, k));
    b.max[0] = static_cast<T>(b.min[0] + 1);
    bs.push_back(b);
    if (k % 3 == 0) {  // a twin touching it (a pair far out)
      b.min[1] = 1, b.max[1] = 2;
      bs.push_back(b);
    }
  }
  return bs;
}
template <int D, class T>
std::vector<hhg::box<D, T>> points_far_and_near() {  // points at 2^-600 ... 2^600 (and their doubles)
  std::vector<hhg::box<D, T>> bs;
  const int top = std::is_same_v<T, float> ? 126 : 600;
  for (int k = -top; k <= top; ++k) {
    hhg::box<D, T> b;
    for (int i = 0; i < D; ++i) b.min[i] = b.max[i] = static_cast<T>(std::ldexp(k % 2 ? 1.0 : -1.0, k));
    bs.push_back(b);
    if (k % 5 == 0) bs.push_back(b);  // a coincident point: a pair
  }
  return bs;
}
template <int D, class T>
std::vector<hhg::box<D, T>> sizes_over_260_octaves() {  // sizes 2^0 ... 2^259, nested at the origin
  std::vector<hhg::box<D, T>> bs;
  const int top = std::is_same_v<T, float> ? 127 : 260;
  for (int k = 0; k < top; ++k) {
    hhg::box<D, T> b;
    for (int i = 0; i < D; ++i) {
      b.min[i] = static_cast<T>(std::ldexp(1.0, k) * (k % 2 ? 1 : -1));
      b.max[i] = static_cast<T>(b.min[i] + std::ldexp(1.0, k));
    }
    bs.push_back(b);
  }
  return bs;
}

template <int D, class T>
void many_levels() {
  for (int which = 0; which < 3; ++which) {
    auto bs = which == 0   ? far_unit_boxes<D, T>()
              : which == 1 ? points_far_and_near<D, T>()
                           : sizes_over_260_octaves<D, T>();
    for (int order = 0; order < 2; ++order) {
      if (order == 1) std::reverse(bs.begin(), bs.end());
      const auto want = brute<D, T>(bs);
      if (which != 2) {
        EXPECT_FALSE(want.empty());
      }
      // factor 2 fixed (the thesis') needs more than the 250 levels on these
      // scenes (objects kept apart); the default (factor 4, a batch's ladder
      // estimated) needs fewer
      for (const bool bulk : {false, true})
        for (const double factor : {2.0, hhg::config{}.hierarchy_factor}) {
          hhg::config c;
          c.adaptive_factor = factor == c.hierarchy_factor;
          c.hierarchy_factor = factor;
          hhg::hash_grids<D, T> m(c);
          if (bulk) {
            m.insert(std::span<const hhg::box<D, T>>(bs));
          } else {
            for (const auto& b : bs) m.insert(b);
          }
          m.validate();
          std::vector<hhg::handle_pair> ps;
          m.find_pairs(ps);
          // (handles: insertion numbers, nothing removed)
          EXPECT_EQ(canonical(ps), want) << "scene " << which << ", order " << order << ", bulk " << bulk;
          // move every object to the next one's box and back: still exact
          std::vector<handle> hs;
          for (std::uint32_t i = 0; i < bs.size(); ++i) hs.push_back({i, 1});
          std::vector<hhg::box<D, T>> shifted(bs.begin() + 1, bs.end());
          shifted.push_back(bs.front());
          m.move(std::span<const handle>(hs), std::span<const hhg::box<D, T>>(shifted));
          m.validate();
          m.find_pairs(ps);
          index_pairs back;
          const std::uint32_t n = static_cast<std::uint32_t>(bs.size());
          for (const auto& [a, b] : canonical(ps)) {  // object i holds box i + 1
            const std::uint32_t x = (a + 1) % n, y = (b + 1) % n;
            back.emplace_back(std::min(x, y), std::max(x, y));
          }
          std::sort(back.begin(), back.end());
          EXPECT_EQ(back, want) << "after moves, scene " << which;
          if (factor == 2.0 && (which == 1 || std::is_same_v<T, double>)) {
            EXPECT_GT(m.stats().unbounded_objects, 0u) << "no object was kept apart";
          }
        }
    }
  }
}

// Enough objects for the bulk insert (>= tuning::bulk_min), which needs a
// level past the last free one: it gives up, changing nothing, and the
// objects go one by one (the ones without a level kept apart).
TEST(ManyLevels, BulkInsertPastTheLastLevel) {
  std::vector<hhg::box<3, double>> bs;
  for (int copy = 0; copy < 15; ++copy)
    for (int k = 0; k < 300; ++k) {
      const double x = std::ldexp(1.0, k);
      bs.push_back({{x, 0, 0}, {x + 1, 1, 1}});
    }
  hhg::detail::path_counters paths;
  EXPECT_EQ((with_grids<3, double>(bs, true, 8, &paths, nullptr, nullptr, 2.0)), (brute<3, double>(bs)));
  EXPECT_EQ(paths.apart_index, 1u);
}

TEST(ManyLevels, AnsweredExactly2Float) { many_levels<2, float>(); }
TEST(ManyLevels, AnsweredExactly2Double) { many_levels<2, double>(); }
TEST(ManyLevels, AnsweredExactly3Float) { many_levels<3, float>(); }
TEST(ManyLevels, AnsweredExactly3Double) { many_levels<3, double>(); }

class apart_cli : public hhg_cli_test::cli_fixture {
 protected:
  apart_cli() : cli_fixture("hhg_apart_") {}
  template <class B>
  void same_as_sap(const std::vector<B>& bs, const std::string& name) {
    std::ostringstream s;
    s.precision(17);
    for (const auto& b : bs)
      s << b.min[0] << ' ' << b.min[1] << ' ' << b.min[2] << ' ' << b.max[0] << ' ' << b.max[1] << ' ' << b.max[2]
        << '\n';
    const auto in = write(name, s.str());
    const auto def = run_tool("pairs", in), sap = run_tool("pairs --method sap", in);
    EXPECT_EQ(def.status, 0) << def.err;
    EXPECT_EQ(sap.status, 0) << sap.err;
    EXPECT_EQ(def.out, sap.out) << name;
    EXPECT_FALSE(hhg_cli_test::contains(def.err, "grid levels")) << def.err;
    std::ostringstream want;
    for (const auto& [a, b] : brute<3, double>(bs)) want << a << ' ' << b << '\n';
    EXPECT_EQ(def.out, want.str()) << name;
  }
};

TEST_F(apart_cli, PairsNeedingMoreThan250Levels) {
  same_as_sap(far_unit_boxes<3, double>(), "far.txt");
  same_as_sap(points_far_and_near<3, double>(), "points.txt");
  same_as_sap(sizes_over_260_octaves<3, double>(), "sizes.txt");
}

// ---- part 4: generations and visitors ------------------------------------------

// A slot is retired when its generation would wrap: 2^24 reuses of one slot
// never bring a stale handle back, and the slot is not taken again.
TEST(Generations, SlotRetiredBeforeTheGenerationWraps) {
  hhg::hash_grids<2, float> m;
  const auto b = hhg::box<2, float>{{0, 0}, {1, 1}};
  const handle first = m.insert(b);
  const handle other = m.insert(b);  // a second live object, for pairs
  handle h = first;
  std::uint32_t changed_at = 0;
  for (std::uint32_t i = 1; i <= (1u << 24) + 2; ++i) {
    m.remove(h);
    h = m.insert(b);
    if (changed_at == 0 && h.index != first.index) changed_at = i;
    if (h.index == first.index && h.generation == first.generation) FAIL() << "the first handle came back at " << i;
  }
  EXPECT_EQ(m.path_counts().slots_retired, 1u);
  EXPECT_EQ(changed_at, (1u << 24) - 2) << "retired after the last generation";
  EXPECT_FALSE(m.contains(first));
  EXPECT_THROW(m.remove(first), hhg::error);
  EXPECT_TRUE(m.contains(h));
  EXPECT_TRUE(m.contains(other));
  EXPECT_EQ(m.size(), 2u);
  m.validate();
  std::vector<hhg::handle_pair> ps;
  m.find_pairs(ps);
  EXPECT_EQ(ps.size(), 1u);
  // the retired slot stays out of use, also after clear()
  m.clear();
  for (int k = 0; k < 5; ++k) EXPECT_NE(m.insert(b).index, first.index);
  m.validate();
}

template <class F>
int code_of(F&& f) {
  try {
    f();
    return -1;
  } catch (const hhg::error& e) {
    return static_cast<int>(e.code());
  }
}

// Every query's visitor that changes the structure gets reentrant_call; the
// structure stays as it was; queries inside a visitor are allowed.
TEST(Visitors, ChangesFromAQueryVisitorAreRefused) {
  using M = hhg::hash_grids<3, double>;
  using B = M::box_type;
  for (const std::size_t n : {10u, 500u}) {  // the list and the grids
    M m;
    std::vector<handle> hs;
    for (std::size_t i = 0; i < n; ++i) {
      const double x = static_cast<double>(i % 10), y = static_cast<double>(i / 10);
      hs.push_back(m.insert(B{{x, y, 0}, {x + 1.5, y + 1.5, 1}}));
    }
    hs.push_back(m.insert(B{{-kInf, -kInf, 0}, {kInf, kInf, 0.5}}));  // one kept apart
    std::vector<hhg::handle_pair> before, after;
    m.find_pairs(before);
    const B probe{{0, 0, 0}, {3, 3, 1}};
    const std::vector<std::function<void(M&)>> changes = {
        [&](M& s) { s.insert(probe); },
        [&](M& s) { s.move(hs[1], probe); },
        [&](M& s) { s.remove(hs[2]); },
        [&](M& s) { s.clear(); },
        [&](M& s) { s.find_pairs(after); },
        [&](M& s) { s.for_each_pair([](handle, handle) {}); },
        [&](M& s) { s.update(); },
        [&](M& s) {
          std::vector<handle> one{hs[3]};
          std::vector<B> to{probe};
          s.move(std::span<const handle>(one), std::span<const B>(to));
        },
        [&](M& s) {
          const M empty;
          s = empty;  // (copy assignment; see hash_grids.hpp for move assignment)
        },
    };
    for (std::size_t c = 0; c < changes.size(); ++c) {
      const auto& change = changes[c];
      int visits = 0;
      auto refused = [&](auto&& query) {
        visits = 0;
        return code_of(query);
      };
      const int overl = refused([&] {
        m.for_each_overlapping(probe, [&](handle) {
          ++visits;
          change(m);
          return true;
        });
      });
      EXPECT_EQ(overl, static_cast<int>(errc::reentrant_call)) << "change " << c;
      EXPECT_EQ(visits, 1);
      EXPECT_EQ(refused([&] {
                  m.for_each_containing({0.5, 0.5, 0.5}, [&](handle) {
                    ++visits;
                    change(m);
                    return true;
                  });
                }),
                static_cast<int>(errc::reentrant_call));
      EXPECT_EQ(refused([&] {
                  m.for_each_in_sphere({1, 1, 0.5}, 1, [&](handle) {
                    ++visits;
                    change(m);
                    return true;
                  });
                }),
                static_cast<int>(errc::reentrant_call));
      const hhg::ray<3, double> r{{-5, 0.5, 0.5}, {1, 0, 0}, kInf};
      EXPECT_EQ(refused([&] {
                  m.for_each_ray_hit(r, [&](handle, double) {
                    ++visits;
                    change(m);
                    return true;
                  });
                }),
                static_cast<int>(errc::reentrant_call));
      EXPECT_EQ(refused([&] {
                  m.closest_ray_hit(r, [&](handle, double t) {
                    ++visits;
                    change(m);
                    return t;
                  });
                }),
                static_cast<int>(errc::reentrant_call));
      EXPECT_EQ(visits, 1);
      m.validate();
      EXPECT_EQ(m.size(), n + 1);
      m.find_pairs(after);
      EXPECT_EQ(after, before) << "change " << c << " left a trace";
    }
    // allowed: queries (and const calls) inside a visitor, changes after it
    std::size_t inner = 0;
    m.for_each_overlapping(probe, [&](handle h) {
      inner += m.overlapping(m.get(h)).size();
      return true;
    });
    EXPECT_GT(inner, 0u);
    m.insert(probe);
    m.validate();
    // another structure may be changed from a visitor
    M other;
    m.for_each_overlapping(probe, [&](handle) {
      other.insert(probe);
      return true;
    });
    EXPECT_GT(other.size(), 0u);
  }
}

// Concurrent queries, each with a visitor that tries a change: every one is
// refused, none disturbs the others (the mark is per thread).
TEST(Visitors, RefusedChangesConcurrent) {
  using M = hhg::hash_grids<3, double>;
  M m;
  for (int i = 0; i < 2000; ++i) {
    const double x = i % 20, y = (i / 20) % 20, z = i / 400;
    m.insert(M::box_type{{x, y, z}, {x + 1.2, y + 1.2, z + 1.2}});
  }
  const auto want = m.overlapping(M::box_type{{3, 3, 1}, {9, 9, 3}});
  std::vector<std::thread> ts;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&] {
      for (int k = 0; k < 200; ++k) {
        std::vector<handle> got;
        const int code = code_of([&] {
          m.for_each_overlapping(M::box_type{{3, 3, 1}, {9, 9, 3}}, [&](handle h) {
            got.push_back(h);
            if (got.size() == want.size()) m.remove(h);  // refused: nothing changes
            return true;
          });
        });
        if (code != static_cast<int>(errc::reentrant_call) || got.size() != want.size()) ++bad;
        if (m.overlapping(M::box_type{{3, 3, 1}, {9, 9, 3}}).size() != want.size()) ++bad;
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(m.size(), 2000u);
  m.validate();
}

// A moved-from structure refuses queries too (and nothing crashes).
TEST(Visitors, MovedFromQueriesThrow) {
  using M = hhg::hash_grids<2, double>;
  M m;
  m.insert(M::box_type{{0, 0}, {1, 1}});
  M n(std::move(m));
  const auto moved = static_cast<int>(errc::moved_from);
  EXPECT_EQ(code_of([&] { (void)m.overlapping(M::box_type{{0, 0}, {1, 1}}); }), moved);
  EXPECT_EQ(code_of([&] {
              std::vector<handle> o;
              m.containing({0.5, 0.5}, o);
            }),
            moved);
  EXPECT_EQ(code_of([&] {
              std::vector<handle> o;
              m.in_sphere({0.5, 0.5}, 1, o);
            }),
            moved);
  EXPECT_EQ(code_of([&] {
              std::vector<hhg::ray_hit> o;
              m.ray_hits({{0, 0}, {1, 0}, 5}, o);
            }),
            moved);
  EXPECT_EQ(code_of([&] { (void)m.first_ray_hit({{0, 0}, {1, 0}, 5}); }), moved);
  EXPECT_EQ(code_of([&] { (void)m.any_ray_hit({{0, 0}, {1, 0}, 5}); }), moved);
  EXPECT_EQ(code_of([&] { (void)m.closest_ray_hit({{0, 0}, {1, 0}, 5}, [](handle, double t) { return t; }); }), moved);
  EXPECT_EQ(code_of([&] {
              std::vector<handle> o;
              m.nearest({0, 0}, 1, o);
            }),
            moved);
  EXPECT_EQ(n.overlapping(M::box_type{{0, 0}, {1, 1}}).size(), 1u);
}

}  // namespace
