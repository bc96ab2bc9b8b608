// Bad input at the API boundary: each case throws hhg::error with the right
// code and leaves the structure exactly as it was (same size, boxes, pairs,
// statistics, validate(), and the same handle for the next insert as a twin
// that never saw the bad call).
#include <functional>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "support.hpp"

namespace hhg_test {
namespace {

using hhg::errc;

template <class M>
class Errors : public ::testing::Test {};
TYPED_TEST_SUITE(Errors, method_types, method_names);

/// Everything observable about a structure, after a detection.
template <class M>
struct snapshot {
  std::size_t size = 0;
  std::vector<handle_pair> pairs;
  std::vector<bool> contained;
  std::vector<typename M::box_type> boxes;
  hhg::statistics stats;
};

template <class M>
snapshot<M> take(M& m, const std::vector<handle>& hs) {
  snapshot<M> s;
  s.size = m.size();
  m.find_pairs(s.pairs);
  hhg::canonicalize(s.pairs);
  for (const handle h : hs) {
    s.contained.push_back(m.contains(h));
    s.boxes.push_back(m.contains(h) ? m.get(h) : typename M::box_type{});
  }
  if constexpr (is_grids<M>) {
    s.stats = m.stats();
    m.validate();
  }
  return s;
}

template <class M>
::testing::AssertionResult same(const snapshot<M>& a, const snapshot<M>& b) {
  if (a.size != b.size) return ::testing::AssertionFailure() << "size " << a.size << " became " << b.size;
  if (a.pairs != b.pairs) return ::testing::AssertionFailure() << "the pairs changed";
  if (a.contained != b.contained) return ::testing::AssertionFailure() << "contains() changed";
  if (a.boxes != b.boxes) return ::testing::AssertionFailure() << "a stored box changed";
  const hhg::statistics& x = a.stats;
  const hhg::statistics& y = b.stats;
  if (x.objects != y.objects || x.unbounded_objects != y.unbounded_objects || x.list_objects != y.list_objects ||
      x.grids_active != y.grids_active || x.bytes != y.bytes || x.box_tests != y.box_tests ||
      x.cells_visited != y.cells_visited || x.pairs != y.pairs || x.grids.size() != y.grids.size())
    return ::testing::AssertionFailure() << "stats() changed";
  for (std::size_t i = 0; i < x.grids.size(); ++i) {
    const auto& g = x.grids[i];
    const auto& h = y.grids[i];
    if (g.cell_size != h.cell_size || g.cell_edges != h.cell_edges || g.cells_per_axis != h.cells_per_axis ||
        g.cell_count != h.cell_count || g.objects != h.objects || g.occupied_cells != h.occupied_cells ||
        g.bytes != h.bytes)
      return ::testing::AssertionFailure() << "stats() of grid " << i << " changed";
  }
  return ::testing::AssertionSuccess();
}

/// A structure and a twin receiving the same good calls; bad calls go to the
/// first only and must throw `code` and change nothing.
template <class M>
class pair_of_structures {
 public:
  using B = typename M::box_type;
  static constexpr int D = M::dimension;
  using T = typename M::scalar;

  explicit pair_of_structures(std::size_t n, const config& c = {}) : m_(make_method<M>(c)), twin_(make_method<M>(c)) {
    const auto boxes = hhg::scenes::make_zoo_scene<D, T>(hhg::scenes::zoo::mixed, n, 21);
    for (const B& b : boxes) {
      hs_.push_back(m_.insert(b));
      EXPECT_EQ(twin_.insert(b), hs_.back());
    }
    // Some removals so the free list is not empty, and some moves pending.
    for (std::size_t i = 0; i < hs_.size(); i += 5) {
      m_.remove(hs_[i]);
      twin_.remove(hs_[i]);
    }
    for (std::size_t i = 1; i < hs_.size(); i += 5) {
      m_.move(hs_[i], cube<D, T>(static_cast<double>(i % 7), 1.5));
      twin_.move(hs_[i], cube<D, T>(static_cast<double>(i % 7), 1.5));
    }
  }

  M& subject() { return m_; }
  const std::vector<handle>& handles() const { return hs_; }
  handle live() const { return hs_.size() > 1 ? hs_[1] : handle{}; }
  handle removed() const { return hs_.empty() ? handle{} : hs_[0]; }

  /// Runs `bad` on the subject only: it must throw `code` and change nothing.
  void expect_error(errc code, const std::string& what, const std::function<void(M&)>& bad) {
    SCOPED_TRACE(what);
    const snapshot<M> before = take(m_, hs_);
    try {
      bad(m_);
      ADD_FAILURE() << what << ": no exception";
    } catch (const hhg::error& e) {
      EXPECT_EQ(static_cast<int>(e.code()), static_cast<int>(code)) << what << ": " << e.what();
      EXPECT_NE(std::string(e.what()), "");
    } catch (const std::exception& e) {
      ADD_FAILURE() << what << ": not an hhg::error: " << e.what();
    }
    const snapshot<M> after = take(m_, hs_);
    EXPECT_TRUE(same(before, after)) << what;
    EXPECT_TRUE(same(after, take(twin_, hs_))) << what << ": differs from the twin";
  }

  /// A good call on both; they must agree.
  void both(const std::function<void(M&)>& good) {
    good(m_);
    good(twin_);
  }

  ::testing::AssertionResult agree() {
    const B b = cube<D, T>(0.25, 1);
    const handle h1 = m_.insert(b);
    const handle h2 = twin_.insert(b);
    hs_.push_back(h1);
    if (h1 != h2) return ::testing::AssertionFailure() << "the next insert returns another handle than the twin's";
    return same(take(m_, hs_), take(twin_, hs_));
  }

 private:
  M m_;
  M twin_;
  std::vector<handle> hs_;
};

template <class M>
void run_bad_input(std::size_t n, const config& c) {
  using B = typename M::box_type;
  constexpr int D = M::dimension;
  using T = typename M::scalar;
  SCOPED_TRACE("objects " + std::to_string(n));
  pair_of_structures<M> s(n, c);
  const T nan = std::numeric_limits<T>::quiet_NaN();
  const T inf = std::numeric_limits<T>::infinity();
  const B good = cube<D, T>(1, 2);
  const handle live = s.live();
  ASSERT_TRUE(s.subject().contains(live));

  for (int axis = 0; axis < D; ++axis) {
    const auto a = static_cast<std::size_t>(axis);
    const std::string on = " on axis " + std::to_string(axis);
    B b = good;
    b.min[a] = nan;
    s.expect_error(errc::nan_coordinate, "insert NaN min" + on, [&](M& m) { m.insert(b); });
    s.expect_error(errc::nan_coordinate, "move to NaN min" + on, [&](M& m) { m.move(live, b); });
    b = good;
    b.max[a] = nan;
    s.expect_error(errc::nan_coordinate, "insert NaN max" + on, [&](M& m) { m.insert(b); });
    s.expect_error(errc::nan_coordinate, "move to NaN max" + on, [&](M& m) { m.move(live, b); });
    b = good;
    b.min[a] = b.max[a] = nan;
    s.expect_error(errc::nan_coordinate, "insert NaN point" + on, [&](M& m) { m.insert(b); });
    b = good;
    b.min[a] = 3;
    b.max[a] = 2;
    s.expect_error(errc::inverted_box, "insert min > max" + on, [&](M& m) { m.insert(b); });
    s.expect_error(errc::inverted_box, "move to min > max" + on, [&](M& m) { m.move(live, b); });
    b = good;
    b.min[a] = std::nextafter(b.max[a], inf);
    s.expect_error(errc::inverted_box, "insert min one ulp above max" + on, [&](M& m) { m.insert(b); });
    b = good;
    b.min[a] = inf;
    b.max[a] = -inf;
    s.expect_error(errc::inverted_box, "insert [inf, -inf]" + on, [&](M& m) { m.insert(b); });
    s.expect_error(errc::inverted_box, "move to [inf, -inf]" + on, [&](M& m) { m.move(live, b); });
    if constexpr (requires(M & m, std::span<const B> bs) { m.insert(bs); }) {
      // insert of a span (hash_grids: the bulk insert): one bad box in the
      // middle of 600 good ones is found before any of them goes in
      auto batch = [&](const B& bad) {
        std::vector<B> bs(600);
        for (std::size_t i = 0; i < bs.size(); ++i)
          bs[i] = cube<D, T>(static_cast<double>(i % 37), 1.0 + static_cast<double>(i % 5));
        bs[300] = bad;
        return bs;
      };
      B nan_min = good, inverted = good;
      nan_min.min[a] = nan;
      inverted.min[a] = std::nextafter(inverted.max[a], inf);
      for (const auto& [bad, code, what] : {std::tuple{nan_min, errc::nan_coordinate, "NaN min"},
                                            std::tuple{inverted, errc::inverted_box, "min one ulp above max"}}) {
        const std::vector<B> bs = batch(bad);
        s.expect_error(code, std::string("insert a span with ") + what + on,
                       [&](M& m) { (void)m.insert(std::span<const B>(bs)); });
      }
    }
  }
  {
    B b = good;
    b.min[0] = 5;  // inverted on axis 0
    b.max[static_cast<std::size_t>(D - 1)] = nan;
    s.expect_error(errc::nan_coordinate, "NaN wins over min > max", [&](M& m) { m.insert(b); });
  }

  const handle null{};
  s.expect_error(errc::invalid_handle, "move null handle", [&](M& m) { m.move(null, good); });
  s.expect_error(errc::invalid_handle, "remove null handle", [&](M& m) { m.remove(null); });
  s.expect_error(errc::invalid_handle, "get null handle", [&](M& m) { (void)m.get(null); });
  s.expect_error(errc::invalid_handle, "null handle with a live index", [&](M& m) { m.remove(handle{live.index, 0}); });

  const handle removed = s.removed();
  ASSERT_FALSE(s.subject().contains(removed));
  s.expect_error(errc::invalid_handle, "remove a removed handle (twice)", [&](M& m) { m.remove(removed); });
  s.expect_error(errc::invalid_handle, "move a removed handle", [&](M& m) { m.move(removed, good); });
  s.expect_error(errc::invalid_handle, "get a removed handle", [&](M& m) { (void)m.get(removed); });

  const handle wrong_generation{live.index, live.generation + 1};
  s.expect_error(errc::invalid_handle, "handle with a wrong generation", [&](M& m) { m.remove(wrong_generation); });
  for (const std::uint32_t high : {1u << 24, 1u << 31, 0xFF000000u}) {
    const handle high_bits{live.index, live.generation + high};
    s.expect_error(errc::invalid_handle, "generation differing only above bit 24", [&](M& m) { m.remove(high_bits); });
  }
  const handle out_of_range{static_cast<std::uint32_t>(s.handles().size() + 1000), 1};
  s.expect_error(errc::invalid_handle, "handle index out of range", [&](M& m) { m.remove(out_of_range); });
  s.expect_error(errc::invalid_handle, "move with index out of range", [&](M& m) { m.move(out_of_range, good); });
  const handle huge_index{0xFFFFFFFFu, 0xFFFFFFFFu};
  s.expect_error(errc::invalid_handle, "handle index 2^32-1", [&](M& m) { m.remove(huge_index); });

  // A handle of another, larger structure.
  {
    M other = make_method<M>();
    handle foreign{};
    for (std::size_t i = 0; i < s.handles().size() + 50; ++i) foreign = other.insert(cube<D, T>(0, 1));
    s.expect_error(errc::invalid_handle, "handle of another structure", [&](M& m) { m.remove(foreign); });
    s.expect_error(errc::invalid_handle, "move handle of another structure", [&](M& m) { m.move(foreign, good); });
  }

  // Stale after slot reuse: remove live, insert (reuses its slot), then the old handle.
  s.both([&](M& m) { m.remove(live); });
  s.both([&](M& m) { m.insert(good); });
  s.expect_error(errc::invalid_handle, "stale handle after slot reuse", [&](M& m) { m.remove(live); });
  s.expect_error(errc::invalid_handle, "move stale handle after slot reuse", [&](M& m) { m.move(live, good); });
  s.expect_error(errc::invalid_handle, "get stale handle after slot reuse", [&](M& m) { (void)m.get(live); });

  // Boxes at infinity are valid, not errors.
  B at_inf = good;
  at_inf.min[0] = at_inf.max[0] = inf;
  s.both([&](M& m) { m.insert(at_inf); });
  EXPECT_TRUE(s.agree());

  // After clear every old handle is stale.
  const std::vector<handle> old = s.handles();
  s.both([&](M& m) { m.clear(); });
  for (const handle h : old) {
    if (!h) continue;
    s.expect_error(errc::invalid_handle, "handle from before clear()", [&](M& m) { m.remove(h); });
    break;
  }
  EXPECT_TRUE(s.agree());
}

TYPED_TEST(Errors, BadInputWithFewObjects) { run_bad_input<TypeParam>(12, {}); }

TYPED_TEST(Errors, BadInputWithGridsActive) { run_bad_input<TypeParam>(300, {}); }

TYPED_TEST(Errors, BadInputWithRebuildStrategy) {
  config c;
  c.strategy = hhg::update_strategy::rebuild;
  c.activation_threshold = 0;
  run_bad_input<TypeParam>(120, c);
}

// --- configuration ------------------------------------------------------------------

template <class M>
class ConfigErrors : public ::testing::Test {};
TYPED_TEST_SUITE(ConfigErrors, grid_types, method_names);

TYPED_TEST(ConfigErrors, BadConfigThrowsBadConfig) {
  std::vector<std::pair<std::string, config>> bad;
  auto add = [&bad](const std::string& name, auto change) {
    config c;
    change(c);
    bad.emplace_back(name, c);
  };
  for (const double f : {1.0, 0.999, 0.5, 0.0, -2.0, std::numeric_limits<double>::quiet_NaN(),
                         std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()}) {
    add("hierarchy_factor " + std::to_string(f), [f](config& c) { c.hierarchy_factor = f; });
  }
  const int axes = TypeParam::dimension;
  for (int axis = 0; axis < axes; ++axis) {
    for (const std::uint32_t cells : {0u, 1u, 2u, 3u, 6u, 12u, 100u, 65536u, 0x80000000u, 0xFFFFFFFFu}) {
      add("initial_cells[" + std::to_string(axis) + "] " + std::to_string(cells),
          [axis, cells](config& c) { c.initial_cells[static_cast<std::size_t>(axis)] = cells; });
    }
  }
  add("minimal_grid_density 0", [](config& c) { c.minimal_grid_density = 0; });
  add("cell_capacity 0", [](config& c) { c.cell_capacity = 0; });
  add("cell_capacity 65537", [](config& c) { c.cell_capacity = 65537; });
  add("strategy 7", [](config& c) { c.strategy = static_cast<hhg::update_strategy>(7); });
  add("growth 5", [](config& c) { c.growth = static_cast<hhg::growth_rule>(5); });
  for (const auto& [name, c] : bad) {
    SCOPED_TRACE(name);
    try {
      TypeParam m(c);
      ADD_FAILURE() << "constructor accepted " << name;
    } catch (const hhg::error& e) {
      EXPECT_EQ(e.code(), errc::bad_config) << e.what();
    }
    try {
      hhg::validate_config(c);
      ADD_FAILURE() << "validate_config accepted " << name;
    } catch (const hhg::error& e) {
      EXPECT_EQ(e.code(), errc::bad_config) << e.what();
    }
  }
}

// The extremes of the documented ranges are accepted and work.
TYPED_TEST(ConfigErrors, EdgesOfValidRangesWork) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  std::vector<std::pair<std::string, config>> ok;
  auto add = [&ok](const std::string& name, auto change) {
    config c;
    change(c);
    ok.emplace_back(name, c);
  };
  add("hierarchy_factor 1.01", [](config& c) { c.hierarchy_factor = 1.01; });
  add("hierarchy_factor 1000", [](config& c) { c.hierarchy_factor = 1000; });
  add("initial_cells 4", [](config& c) { c.initial_cells = {4, 4, 4}; });
  add("initial_cells 4 x 32768", [](config& c) { c.initial_cells = {4, 32768, 4}; });
  add("minimal_grid_density 1", [](config& c) { c.minimal_grid_density = 1; });
  // (minimal_grid_density 2^32-1 and cell_capacity 65536 are valid too but make
  // every grid or cell as large as allowed: gigabytes for a test; see below.)
  add("minimal_grid_density 64", [](config& c) { c.minimal_grid_density = 64; });
  add("cell_capacity 1024", [](config& c) { c.cell_capacity = 1024; });
  add("cell_capacity 3 (rounded up)", [](config& c) { c.cell_capacity = 3; });
  add("occupied_cells_capacity 0", [](config& c) { c.occupied_cells_capacity = 0; });
  add("activation_threshold 0", [](config& c) { c.activation_threshold = 0; });
  add("growth by_occupancy", [](config& c) { c.growth = hhg::growth_rule::by_occupancy; });
  for (const auto& [name, c] : ok) {
    SCOPED_TRACE(name);
    ASSERT_NO_THROW(hhg::validate_config(c));
    mirror<TypeParam> m(c);
    for (const auto& b : hhg::scenes::make_zoo_scene<D, T>(hhg::scenes::zoo::varied12, 200, 22)) m.insert(b);
    ASSERT_TRUE(m.check());
    EXPECT_EQ(m.subject().settings().hierarchy_factor, c.hierarchy_factor);
  }
}

// The largest cell capacity, on a few objects in few cells.
TYPED_TEST(ConfigErrors, LargestCellCapacity) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  config c;
  c.cell_capacity = 65536;
  c.activation_threshold = 0;
  mirror<TypeParam> m(c);
  hhg::scenes::rng r(23);
  for (int i = 0; i < 40; ++i) m.insert(cube<D, T>(r.uniform(0, 0.004), 0.01));
  ASSERT_TRUE(m.check());
}

// Values the header documents as valid but src/config.cpp rejects: see the
// report (hierarchy_factor "> 1 and finite", activation_threshold unbounded).
TYPED_TEST(ConfigErrors, DocumentedRangesAccepted) {
  config c;
  c.hierarchy_factor = 1e7;
  EXPECT_NO_THROW(TypeParam{c}) << "hierarchy_factor 1e7 is > 1 and finite";
  c = {};
  c.activation_threshold = std::numeric_limits<std::size_t>::max();
  EXPECT_NO_THROW(TypeParam{c}) << "activation_threshold has no documented upper bound";
}

// Sizes spanning many decades with a factor close to 1 need more than the
// 250 levels: the objects that find no free level are kept apart (paired
// through the apart index), never refused; pairs stay exact.
TYPED_TEST(ConfigErrors, TooManyLevelsKeptApart) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  config c;
  c.hierarchy_factor = 1.01;
  c.activation_threshold = 0;
  mirror<TypeParam> m(c);
  for (int k = 0; k < 300; ++k) {  // sizes 2^(k/20): one level each
    m.insert(cube<D, T>(0.5, std::exp2(k / 20.0)));
    ASSERT_TRUE(m.check()) << "after inserting size 2^" << k / 20.0;
  }
  EXPECT_GT(m.subject().stats().unbounded_objects, 0u) << "expected some objects past the last level";
  EXPECT_EQ(m.subject().stats().grids.size(), 250u);
}

// A factor just above 1 is valid ("> 1 and finite"): a new level is found
// in a few steps of the ladder, not one step per factor between the sizes
// (1 + 2^-52 from size 1 to 0.5 was 10^16 divisions: insert never returned).
// Sizes over 600 decades (60 in float), most a level of their own, smaller
// and larger than every level before, with a factor of 1 + 2^-52 and
// 1 + 1e-12, one by one and after a batch's ladder (insert of a span:
// config::adaptive_factor).
TYPED_TEST(ConfigErrors, HierarchyFactorNearOneFindsLevelsFast) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  const double far = std::is_same_v<T, float> ? 1e30 : 1e300;
  for (const double f : {std::nextafter(1.0, 2.0), 1 + 1e-12}) {
    SCOPED_TRACE("hierarchy_factor 1 + " + std::to_string(f - 1));
    config c;
    c.hierarchy_factor = f;
    c.activation_threshold = 0;
    mirror<TypeParam> m(c);
    m.insert(cube<D, T>(0, 1));
    for (const double size : {0.5, 2.0, 1e-3, 1e3, 1 / far, far, 0.75, 1.5}) {
      m.insert(cube<D, T>(0, size));
      ASSERT_TRUE(m.check()) << "after size " << size;
    }
    EXPECT_GE(m.subject().stats().grids.size(), 7u);
    TypeParam batch(c);
    std::vector<box<D, T>> boxes;
    for (int k = 0; k < 300; ++k) boxes.push_back(cube<D, T>(0, std::exp2(k % 40 - 20)));
    batch.insert(std::span<const box<D, T>>(boxes));
    batch.insert(cube<D, T>(0, 1 / far));
    batch.insert(cube<D, T>(0, far));
    ASSERT_NO_THROW(batch.validate());
  }
}

}  // namespace
}  // namespace hhg_test
