// The scene generators: the rng, determinism, exact counts, valid boxes, and
// the property each zoo scene promises; the thesis scenario's density, domain,
// motion and wrapping.
#include <cstring>
#include <map>
#include <set>

#include "support.hpp"

namespace hhg_test {
namespace {

using hhg::scenes::rng;
using hhg::scenes::thesis_params;
using hhg::scenes::zoo;

// --- rng -------------------------------------------------------------------------

TEST(Rng, SplitMix64ReferenceValues) {
  rng r(0);
  EXPECT_EQ(r.next(), 0xE220A8397B1DCDAFull);
  EXPECT_EQ(r.next(), 0x6E789E6AA1B965F4ull);
  EXPECT_EQ(r.next(), 0x06C45D188009454Full);
  EXPECT_EQ(r.next(), 0xF88BB8A8724C81ECull);
}

TEST(Rng, UniformIsIn01WithMeanOneHalf) {
  rng r(1);
  double sum = 0;
  constexpr int n = 100000;
  for (int i = 0; i < n; ++i) {
    const double u = r.uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    EXPECT_EQ(u, std::ldexp(std::floor(std::ldexp(u, 53)), -53)) << "53-bit grid";
    sum += u;
  }
  EXPECT_NEAR(sum / n, 0.5, 0.01);
  for (int i = 0; i < 1000; ++i) {
    const double v = r.uniform(-3, 5);
    EXPECT_GE(v, -3.0);
    EXPECT_LE(v, 5.0);
  }
}

TEST(Rng, BelowIsInRangeAndUnbiased) {
  rng r(2);
  EXPECT_EQ(r.below(1), 0u);
  std::array<int, 3> counts{};
  constexpr int n = 90000;
  for (int i = 0; i < n; ++i) {
    const std::uint64_t k = r.below(3);
    ASSERT_LT(k, 3u);
    ++counts[k];
  }
  for (const int c : counts) EXPECT_NEAR(c, n / 3, 900);
  // A bound just above 2^63: a plain modulo would give the low half twice the weight.
  const std::uint64_t big = (1ull << 63) + (1ull << 62);
  int low = 0;
  for (int i = 0; i < 20000; ++i) {
    const std::uint64_t k = r.below(big);
    ASSERT_LT(k, big);
    low += k < (1ull << 62);
  }
  EXPECT_NEAR(low, 20000 / 3, 400) << "values below 2^62 are a third of the range";
  for (int i = 0; i < 100; ++i) EXPECT_LT(r.below(~0ull), ~0ull);
}

TEST(Rng, SameSeedSameSequence) {
  rng a(42), b(42), c(43);
  bool differs = false;
  for (int i = 0; i < 100; ++i) {
    const std::uint64_t x = a.next();
    EXPECT_EQ(x, b.next());
    differs = differs || x != c.next();
  }
  EXPECT_TRUE(differs);
}

// --- zoo ------------------------------------------------------------------------------

TEST(ZooNames, DistinctAndComplete) {
  std::set<std::string> names;
  for (const zoo z : hhg::scenes::all_zoo_scenes()) names.insert(hhg::scenes::to_string(z));
  EXPECT_EQ(names.size(), hhg::scenes::all_zoo_scenes().size());
  EXPECT_EQ(names.count("equal"), 1u);
  EXPECT_EQ(names.count("mixed"), 1u);
  EXPECT_EQ(names.count("huge_among_small"), 1u);
}

template <class M>
class Scenes : public ::testing::Test {};
TYPED_TEST_SUITE(Scenes, grid_types, method_names);

TYPED_TEST(Scenes, DeterministicExactCountAndValid) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  for (const zoo z : hhg::scenes::all_zoo_scenes()) {
    for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{13}, std::size_t{1000}}) {
      SCOPED_TRACE("scene " + hhg::scenes::to_string(z) + " n=" + std::to_string(n));
      const auto a = hhg::scenes::make_zoo_scene<D, T>(z, n, 5);
      const auto b = hhg::scenes::make_zoo_scene<D, T>(z, n, 5);
      ASSERT_EQ(a.size(), n);
      ASSERT_EQ(0, n == 0 ? 0 : std::memcmp(a.data(), b.data(), n * sizeof(a[0]))) << "not bit-identical";
      for (const auto& x : a) ASSERT_EQ(hhg::check_box(x), hhg::box_problem::none) << show(x);
      if (n >= 13) {
        const auto c = hhg::scenes::make_zoo_scene<D, T>(z, n, 6);
        EXPECT_NE(a, c) << "another seed gives the same scene";
      }
    }
  }
}

template <int D, class T>
struct scene_facts {
  std::size_t unbounded = 0, points = 0, flat = 0, everything = 0, planes = 0, distinct = 0, negative_zero = 0;
  double min_edge = std::numeric_limits<double>::infinity(), max_edge = 0, max_abs = 0, min_coordinate = 0,
         max_coordinate = 0;
  std::array<bool, 3> long_axis{};  // some box is at least 10 times longer along this axis than across

  explicit scene_facts(const std::vector<box<D, T>>& boxes) {
    std::set<std::vector<double>> seen;
    min_coordinate = std::numeric_limits<double>::infinity();
    max_coordinate = -min_coordinate;
    for (const auto& b : boxes) {
      std::vector<double> key;
      bool all_inf = true, any_zero = false, all_zero = true;
      std::size_t infinite_axes = 0;
      for (std::size_t a = 0; a < static_cast<std::size_t>(D); ++a) {
        key.push_back(b.min[a]);
        key.push_back(b.max[a]);
        all_inf = all_inf && b.min[a] == -std::numeric_limits<T>::infinity() &&
                  b.max[a] == std::numeric_limits<T>::infinity();
        infinite_axes +=
            b.min[a] == -std::numeric_limits<T>::infinity() && b.max[a] == std::numeric_limits<T>::infinity();
        any_zero = any_zero || b.min[a] == b.max[a];
        all_zero = all_zero && b.min[a] == b.max[a];
        negative_zero += (b.min[a] == 0 && std::signbit(b.min[a])) || (b.max[a] == 0 && std::signbit(b.max[a]));
        if (hhg::is_bounded(b)) {
          max_abs =
              std::max({max_abs, std::fabs(static_cast<double>(b.min[a])), std::fabs(static_cast<double>(b.max[a]))});
          min_coordinate = std::min(min_coordinate, static_cast<double>(b.min[a]));
          max_coordinate = std::max(max_coordinate, static_cast<double>(b.max[a]));
        }
      }
      seen.insert(key);
      if (!hhg::is_bounded(b)) {
        ++unbounded;
        everything += all_inf;
        planes += infinite_axes == static_cast<std::size_t>(D - 1) && any_zero;
        continue;
      }
      points += all_zero;
      flat += any_zero && !all_zero;
      const double e = edge_of(b);
      if (e > 0) min_edge = std::min(min_edge, e);
      max_edge = std::max(max_edge, e);
      for (std::size_t a = 0; a < static_cast<std::size_t>(D); ++a) {
        const double along = static_cast<double>(b.max[a]) - static_cast<double>(b.min[a]);
        bool needle = along > 0;
        for (std::size_t o = 0; o < static_cast<std::size_t>(D); ++o) {
          if (o != a) needle = needle && along >= 10 * (static_cast<double>(b.max[o]) - static_cast<double>(b.min[o]));
        }
        long_axis[a] = long_axis[a] || needle;
      }
    }
    distinct = seen.size();
  }
};

TYPED_TEST(Scenes, EachSceneHasItsProperty) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  constexpr std::size_t n = 2000;
  auto facts = [](zoo z) { return scene_facts<D, T>(hhg::scenes::make_zoo_scene<D, T>(z, n, 8)); };
  auto scene = [](zoo z) { return hhg::scenes::make_zoo_scene<D, T>(z, n, 8); };
  const bool single = std::is_same_v<T, float>;
  {
    const auto f = facts(zoo::equal);
    EXPECT_NEAR(f.min_edge, 1.0, 1e-3);
    EXPECT_NEAR(f.max_edge, 1.0, 1e-3);
  }
  {
    const auto f = facts(zoo::varied12);
    EXPECT_GE(f.min_edge, 1 - 1e-3);
    EXPECT_LE(f.max_edge, 12 + 1e-3);
    EXPECT_GT(f.max_edge / f.min_edge, 8.0);
  }
  EXPECT_GT(facts(zoo::log_uniform).max_edge / facts(zoo::log_uniform).min_edge, 1e6);
  {
    const auto f = facts(zoo::negative);
    EXPECT_LE(f.max_coordinate, 0.0) << "every coordinate is negative";
    EXPECT_LT(f.min_coordinate, -1000.0);
    EXPECT_GT(f.negative_zero, 0u) << "some coordinates are -0.0";
  }
  {
    const auto f = facts(zoo::far_from_origin);
    const double offset = single ? 1e6 : 1e12;
    EXPECT_GT(f.max_abs, 15 * offset);
    EXPECT_LT(f.min_coordinate, -0.99 * offset);
    for (const auto& b : scene(zoo::far_from_origin))
      ASSERT_GT(std::fabs(static_cast<double>(b.min[0])), 0.99 * offset);
  }
  {
    const auto boxes = scene(zoo::touching);
    std::size_t touching = 0;
    for (const auto& b : boxes) {
      for (std::size_t a = 0; a < static_cast<std::size_t>(D); ++a) {
        ASSERT_EQ(2 * b.min[a], std::round(2 * b.min[a])) << "half-unit lattice";
        ASSERT_EQ(2 * b.max[a], std::round(2 * b.max[a])) << "half-unit lattice";
      }
    }
    for (std::size_t i = 0; i < 300; ++i) {
      for (std::size_t j = 0; j < boxes.size(); ++j) {
        bool touch = false;
        for (std::size_t a = 0; a < static_cast<std::size_t>(D); ++a)
          touch = touch || boxes[i].max[a] == boxes[j].min[a];
        touching += touch && hhg::overlaps(boxes[i], boxes[j]);
      }
    }
    EXPECT_GT(touching, 50u) << "boxes touching exactly";
  }
  {
    const auto f = facts(zoo::zero_size);
    EXPECT_GT(f.points, n / 5);
    EXPECT_GT(f.flat, n / 20);
    EXPECT_LT(f.distinct, n) << "duplicated points";
  }
  EXPECT_LT(facts(zoo::duplicates).distinct, n / 2);
  {
    const auto f = facts(zoo::one_cell);
    EXPECT_GE(f.min_coordinate, -0.025);
    EXPECT_LE(f.max_coordinate, 0.025);
    EXPECT_GE(f.min_edge, 0.005 * 0.999);
    EXPECT_LE(f.max_edge, 0.015 * 1.001);
  }
  {
    const auto f = facts(zoo::elongated);
    for (int a = 0; a < D; ++a) EXPECT_TRUE(f.long_axis[static_cast<std::size_t>(a)]) << "no needle along axis " << a;
  }
  {
    const auto f = facts(zoo::unbounded);
    EXPECT_GE(f.unbounded, 50u) << "5 % up to n = 1000, then 50 + n / 400";
    EXPECT_LE(f.unbounded, n / 20);
    EXPECT_EQ(f.everything, 1u);
    EXPECT_GT(f.planes, 0u);
  }
  {
    const auto f = facts(zoo::huge_among_small);
    EXPECT_GT(f.max_edge, 400.0);
    EXPECT_LT(f.min_edge, 1.5 + 1e-3);
  }
  {
    const auto f = facts(zoo::mixed);
    EXPECT_GT(f.unbounded, 0u);
    EXPECT_GT(f.points, 0u);
    EXPECT_GT(f.max_abs, single ? 1e6 : 1e12);
    EXPECT_LT(f.min_edge, 1e-3);
  }
}

// Random scenes average a moderate number of pairs per object.
TYPED_TEST(Scenes, ModeratePairCounts) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  for (const zoo z : {zoo::equal, zoo::varied12, zoo::log_uniform, zoo::negative, zoo::far_from_origin, zoo::touching,
                      zoo::zero_size, zoo::elongated, zoo::unbounded}) {
    SCOPED_TRACE(hhg::scenes::to_string(z));
    brute_force<D, T> bf;
    for (const auto& b : hhg::scenes::make_zoo_scene<D, T>(z, 2000, 9)) bf.insert(b);
    std::vector<handle_pair> pairs;
    bf.find_pairs(pairs);
    const double per_object = static_cast<double>(pairs.size()) / 2000;
    EXPECT_GT(per_object, 0.5);
    EXPECT_LT(per_object, 6.0);
  }
}

// --- thesis scenario ---------------------------------------------------------------

TYPED_TEST(Scenes, ThesisSizesDomainAndDensity) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  struct variant {
    double size_max, elongation, aspect;
  };
  for (const variant v :
       {variant{1, 1, 1}, variant{12, 1, 1}, variant{1, 10, 1}, variant{1, 1, 64}, variant{4, 10, 16}}) {
    thesis_params p;
    p.n = 3000;
    p.size_max = v.size_max;
    p.elongation = v.elongation;
    p.domain_aspect = v.aspect;
    p.seed = 17;
    SCOPED_TRACE("size_max " + std::to_string(v.size_max) + " elongation " + std::to_string(v.elongation) + " aspect " +
                 std::to_string(v.aspect));
    const hhg::scenes::thesis_scenario<D, T> s(p);
    ASSERT_EQ(s.boxes().size(), p.n);
    ASSERT_EQ(s.domain().size(), static_cast<std::size_t>(D));
    EXPECT_NEAR(s.domain()[0] / s.domain()[1], v.aspect, 1e-9 * v.aspect);
    for (const auto& b : s.boxes()) {
      const double size = static_cast<double>(b.max[1]) - static_cast<double>(b.min[1]);
      ASSERT_GE(size, 1 - 1e-3);
      ASSERT_LE(size, v.size_max * (1 + 1e-3) + 1e-3);
      EXPECT_NEAR(static_cast<double>(b.max[0]) - static_cast<double>(b.min[0]), v.elongation * size,
                  1e-3 * v.elongation * size + 1e-3);
      for (std::size_t a = 0; a < static_cast<std::size_t>(D); ++a) {
        ASSERT_GE(b.min[a], 0);
        ASSERT_LE(b.min[a], s.domain()[a]);
      }
    }
    brute_force<D, T> bf;
    for (const auto& b : s.boxes()) bf.insert(b);
    std::vector<handle_pair> pairs;
    bf.find_pairs(pairs);
    const double per_object = static_cast<double>(pairs.size()) / static_cast<double>(p.n);
    // 2 expected; pairs across the periodic boundary are not counted.
    EXPECT_GT(per_object, 1.5);
    EXPECT_LT(per_object, 2.3);
  }
}

TYPED_TEST(Scenes, ThesisMotion) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  thesis_params p;
  p.n = 4000;
  p.size_max = 12;
  p.max_speed_fraction = 0.2;
  p.seed = 18;
  hhg::scenes::thesis_scenario<D, T> s(p), same(p);
  p.seed = 19;
  hhg::scenes::thesis_scenario<D, T> other(p);
  std::vector<double> mean(D, 0.0);
  double mean_speed = 0;
  int wraps = 0;
  for (int step = 0; step < 5; ++step) {
    const auto before = s.boxes();
    s.step();
    same.step();
    other.step();
    ASSERT_EQ(s.boxes(), same.boxes()) << "not deterministic";
    EXPECT_NE(s.boxes(), other.boxes());
    for (std::size_t i = 0; i < p.n; ++i) {
      const auto& b = s.boxes()[i];
      const double size = static_cast<double>(b.max[1]) - static_cast<double>(b.min[1]);
      double d2 = 0;
      bool wrapped = false;
      for (std::size_t a = 0; a < static_cast<std::size_t>(D); ++a) {
        ASSERT_GE(b.min[a], 0) << "wrapped into [0, edge)";
        ASSERT_LE(b.min[a], s.domain()[a]);
        double d = static_cast<double>(b.min[a]) - static_cast<double>(before[i].min[a]);
        if (std::fabs(d) > s.domain()[a] / 2) {
          wrapped = true;
          d -= std::copysign(s.domain()[a], d);
        }
        d2 += d * d;
        if (step == 0) mean[a] += d;
        // The box keeps its size.
        EXPECT_NEAR(static_cast<double>(b.max[a]) - static_cast<double>(b.min[a]),
                    static_cast<double>(before[i].max[a]) - static_cast<double>(before[i].min[a]), 1e-3 * size);
      }
      wraps += wrapped;
      ASSERT_LE(std::sqrt(d2), p.max_speed_fraction * size * (1 + 1e-3) + 1e-3) << "object " << i << " too fast";
      if (step == 0) mean_speed += std::sqrt(d2);
    }
  }
  EXPECT_GT(wraps, 0);
  mean_speed /= static_cast<double>(p.n);
  EXPECT_GT(mean_speed, 0.1 * p.max_speed_fraction);
  for (int a = 0; a < D; ++a) {
    EXPECT_LT(std::fabs(mean[static_cast<std::size_t>(a)] / static_cast<double>(p.n)), 0.1 * mean_speed)
        << "directions are not isotropic on axis " << a;
  }
}

TYPED_TEST(Scenes, ThesisStillWithoutSpeedAndBadParams) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  thesis_params p;
  p.n = 100;
  p.max_speed_fraction = 0;
  hhg::scenes::thesis_scenario<D, T> s(p);
  const auto before = s.boxes();
  s.step();
  EXPECT_EQ(s.boxes(), before);
  thesis_params empty;
  empty.n = 0;
  EXPECT_TRUE((hhg::scenes::thesis_scenario<D, T>(empty).boxes().empty()));
  auto bad = [](auto change) {
    thesis_params q;
    change(q);
    return q;
  };
  EXPECT_THROW((hhg::scenes::thesis_scenario<D, T>(bad([](thesis_params& q) { q.size_min = 0; }))),
               std::invalid_argument);
  EXPECT_THROW((hhg::scenes::thesis_scenario<D, T>(bad([](thesis_params& q) { q.size_max = 0.5; }))),
               std::invalid_argument);
  EXPECT_THROW((hhg::scenes::thesis_scenario<D, T>(bad([](thesis_params& q) { q.pairs_per_object = 0; }))),
               std::invalid_argument);
  EXPECT_THROW((hhg::scenes::thesis_scenario<D, T>(bad([](thesis_params& q) { q.elongation = -1; }))),
               std::invalid_argument);
  EXPECT_THROW((hhg::scenes::thesis_scenario<D, T>(bad([](thesis_params& q) { q.domain_aspect = 0; }))),
               std::invalid_argument);
  EXPECT_THROW((hhg::scenes::thesis_scenario<D, T>(
                   bad([](thesis_params& q) { q.max_speed_fraction = std::numeric_limits<double>::quiet_NaN(); }))),
               std::invalid_argument);
}

}  // namespace
}  // namespace hhg_test
