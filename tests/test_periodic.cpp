// hhg::periodic_pairs against brute force over images (hhg/periodic.hpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "hhg/error.hpp"
#include "hhg/periodic.hpp"
#include "support.hpp"

namespace {

using hhg::box;
using hhg::periodic_domain;
using hhg::periodic_pair;

/// Every (a, b, s) with a <= b (s lexicographically positive when a == b)
/// over a shift range two wider than needed on each side.
template <int D, class T>
std::vector<periodic_pair<D>> brute(const periodic_domain<D, T>& d, const std::vector<box<D, T>>& boxes) {
  std::vector<periodic_pair<D>> out;
  for (std::uint32_t a = 0; a < boxes.size(); ++a) {
    for (std::uint32_t b = a; b < boxes.size(); ++b) {
      std::array<std::int32_t, D> lo{}, hi{}, s{};
      for (int i = 0; i < D; ++i) {
        if (!d.periodic[i]) continue;
        // (in long double: its exponent range holds the differences of any
        // two doubles, which overflow in double near the top of the range)
        const auto L = static_cast<long double>(static_cast<double>(d.bounds.max[i] - d.bounds.min[i]));
        lo[i] =
            static_cast<std::int32_t>(std::floor((static_cast<long double>(boxes[a].min[i]) - boxes[b].max[i]) / L)) -
            2;
        hi[i] =
            static_cast<std::int32_t>(std::ceil((static_cast<long double>(boxes[a].max[i]) - boxes[b].min[i]) / L)) + 2;
      }
      s = lo;
      while (true) {
        bool positive = false, zero = true;
        for (int i = 0; i < D && zero; ++i)
          if (s[i] != 0) {
            zero = false;
            positive = s[i] > 0;
          }
        if ((a != b || positive) && hhg::overlaps(boxes[a], hhg::periodic_image(boxes[b], s, d)))
          out.push_back({a, b, s});
        int i = 0;
        for (; i < D; ++i) {
          if (s[i] < hi[i]) {
            ++s[i];
            break;
          }
          s[i] = lo[i];
        }
        if (i == D) break;
      }
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

/// Compares with brute force; returns how many pairs go through an image (shift != 0).
template <int D, class T>
std::size_t expect_exact(const periodic_domain<D, T>& d, const std::vector<box<D, T>>& boxes) {
  std::vector<periodic_pair<D>> got;
  hhg::periodic_pairs<D, T>(d, boxes, got);
  const auto want = brute(d, boxes);
  EXPECT_EQ(got.size(), want.size());
  EXPECT_TRUE(got == want);
  return static_cast<std::size_t>(std::count_if(got.begin(), got.end(), [](const periodic_pair<D>& p) {
    return std::any_of(p.shift.begin(), p.shift.end(), [](std::int32_t s) { return s != 0; });
  }));
}

template <int D, class T>
periodic_domain<D, T> domain(double lo, double hi, unsigned mask) {
  periodic_domain<D, T> d;
  for (int i = 0; i < D; ++i) {
    d.bounds.min[i] = static_cast<T>(lo);
    d.bounds.max[i] = static_cast<T>(hi + i);  // different periods per axis
    d.periodic[i] = (mask >> i) & 1u;
  }
  return d;
}

template <int D, class T>
std::vector<box<D, T>> random_boxes(std::mt19937_64& rng, const periodic_domain<D, T>& d, int n, double lo_size,
                                    double hi_size, double outside) {
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<box<D, T>> boxes;
  for (int k = 0; k < n; ++k) {
    box<D, T> b;
    const double e = lo_size * std::pow(hi_size / lo_size, u(rng));
    for (int i = 0; i < D; ++i) {
      const double L = double(d.bounds.max[i]) - double(d.bounds.min[i]);
      const double c = double(d.bounds.min[i]) + L * ((1 + 2 * outside) * u(rng) - outside);
      b.min[i] = static_cast<T>(c);
      b.max[i] = static_cast<T>(c + e * (0.5 + u(rng)));
      if (u(rng) < 0.05) b.max[i] = b.min[i];  // zero size on this axis
    }
    boxes.push_back(b);
  }
  return boxes;
}

template <class P>
class Periodic : public ::testing::Test {};
template <int D_, class T_>
struct params {
  static constexpr int D = D_;
  using T = T_;
};
using all_params = ::testing::Types<HHG_TEST_VARIANTS(params)>;
TYPED_TEST_SUITE(Periodic, all_params);

TYPED_TEST(Periodic, RandomScenesEveryAxisSubsetMatchBruteForce) {
  constexpr int D = TypeParam::D;
  using T = typename TypeParam::T;
  std::mt19937_64 rng(7);
  for (unsigned mask = 0; mask < (1u << D); ++mask) {
    const auto d = domain<D, T>(-3, 17, mask);
    std::size_t through_images = 0;
    through_images += expect_exact(d, random_boxes<D, T>(rng, d, 300, 0.05, 3, 0));      // inside
    through_images += expect_exact(d, random_boxes<D, T>(rng, d, 200, 1e-3, 1e1, 0.5));  // 4 decades, some outside
    through_images += expect_exact(d, random_boxes<D, T>(rng, d, 40, 5, 45, 0.2));       // larger than the domain
    if (mask != 0) {
      EXPECT_GT(through_images, 100u);  // the scenes do wrap
    } else {
      EXPECT_EQ(through_images, 0u);
    }
  }
}

TYPED_TEST(Periodic, TouchingThroughTheBoundaryAndPointsOnIt) {
  constexpr int D = TypeParam::D;
  using T = typename TypeParam::T;
  const auto d = domain<D, T>(0, 8, (1u << D) - 1);
  std::vector<box<D, T>> boxes;
  for (int k = 0; k < 8; ++k) {  // unit cubes along the diagonal, the last touching the first through hi
    box<D, T> b;
    for (int i = 0; i < D; ++i) {
      b.min[i] = static_cast<T>(k);
      b.max[i] = static_cast<T>(k + 1);
    }
    boxes.push_back(b);
  }
  box<D, T> at_lo{}, at_hi{};
  for (int i = 0; i < D; ++i) {
    at_lo.min[i] = at_lo.max[i] = d.bounds.min[i];
    at_hi.min[i] = at_hi.max[i] = d.bounds.max[i];  // the same point as at_lo through the image
  }
  boxes.push_back(at_lo);
  boxes.push_back(at_hi);
  boxes.push_back(d.bounds);  // exactly one period wide: touches its own images
  expect_exact(d, boxes);
  std::vector<periodic_pair<D>> got;
  hhg::periodic_pairs<D, T>(d, boxes, got);
  // The corner points are one point: at_lo is at_hi moved by -1 period on every axis.
  std::array<std::int32_t, D> ones;
  ones.fill(-1);
  EXPECT_NE(std::find(got.begin(), got.end(), periodic_pair<D>{8, 9, ones}), got.end());
}

TYPED_TEST(Periodic, FarFromTheOriginAndUnboundedOnOtherAxes) {
  constexpr int D = TypeParam::D;
  using T = typename TypeParam::T;
  std::mt19937_64 rng(11);
  const double off = std::is_same_v<T, float> ? 1e5 : 1e11;
  auto d = domain<D, T>(off, off + 64, 1u);  // only axis 0 periodic
  auto boxes = random_boxes<D, T>(rng, d, 300, 0.5, 8, 0.3);
  const T inf = std::numeric_limits<T>::infinity();
  box<D, T> slab = boxes[0];
  slab.min[D - 1] = -inf;
  slab.max[D - 1] = inf;
  boxes.push_back(slab);
  expect_exact(d, boxes);
}

TYPED_TEST(Periodic, BadInputThrowsAndReportsNothing) {
  constexpr int D = TypeParam::D;
  using T = typename TypeParam::T;
  auto d = domain<D, T>(0, 10, 1u);
  std::vector<box<D, T>> boxes(2);
  for (auto& b : boxes) b.max.fill(1);
  std::vector<periodic_pair<D>> out{periodic_pair<D>{}};
  auto code = [&] {
    try {
      hhg::periodic_pairs<D, T>(d, boxes, out);
    } catch (const hhg::error& e) {
      return static_cast<int>(e.code());
    }
    return -1;
  };
  EXPECT_EQ(code(), -1);
  EXPECT_EQ(out.size(), 1u);  // the two boxes overlap with shift 0
  boxes[1].max[0] = std::numeric_limits<T>::infinity();
  EXPECT_EQ(code(), static_cast<int>(hhg::errc::out_of_domain));
  EXPECT_TRUE(out.empty());
  boxes[1].max[0] = 1000;  // 100 periods wide
  EXPECT_EQ(code(), static_cast<int>(hhg::errc::out_of_domain));
  boxes[1].max[0] = 1;
  boxes[1].min[D - 1] = std::numeric_limits<T>::quiet_NaN();
  EXPECT_EQ(code(), static_cast<int>(hhg::errc::nan_coordinate));
  boxes[1].min[D - 1] = 2;
  EXPECT_EQ(code(), static_cast<int>(hhg::errc::inverted_box));
  boxes[1].min[D - 1] = 0;
  d.bounds.max[0] = d.bounds.min[0];  // zero period
  EXPECT_EQ(code(), static_cast<int>(hhg::errc::bad_config));
  d.bounds.max[0] = std::numeric_limits<T>::infinity();
  EXPECT_EQ(code(), static_cast<int>(hhg::errc::bad_config));
}

// A period near the largest double: the widening and the shift range
// overflowed (until stop 79: [-1.6e308, 0) refused every box with "more than
// 65536 images"; the MPI version returned no pairs for a period above ~8.7e304).
TEST(Periodic, DomainsNearTheLargestDouble) {
  const double top = std::numeric_limits<double>::max();
  for (const auto& [lo, hi] : {std::pair{0.0, top / 1.8}, std::pair{-top / 18, top / 18}, std::pair{-top / 1.1, 0.0}}) {
    SCOPED_TRACE(lo);
    periodic_domain<3, double> d;
    for (int i = 0; i < 3; ++i) {
      d.bounds.min[i] = lo;
      d.bounds.max[i] = hi;
      d.periodic[i] = true;
    }
    const double L = hi - lo;
    hhg::scenes::rng r(5);
    std::vector<box<3, double>> boxes(150);
    for (auto& b : boxes)
      for (int i = 0; i < 3; ++i) {
        b.min[i] = lo + L * r.uniform() * 0.999;
        b.max[i] = b.min[i] + L * 0.2 * r.uniform();  // (some cross the face at hi)
      }
    EXPECT_GT(expect_exact(d, boxes), 0u) << "pairs through the faces";
  }
}

// The review of stop 79's second case: a pair whose boxes lie two periods
// apart near the top of the range (a.max - b.min overflowed in the shift range
// of the exact test: the pair (0, 1, {3, 0}) was missing), and its mirror.
TEST(Periodic, ShiftRangesOfPairsNearTheLargestDouble) {
  for (const double sign : {1.0, -1.0}) {
    periodic_domain<2, double> d;
    d.bounds.min = {0, 0};
    d.bounds.max = {0x1p1022, 1};
    d.periodic = {true, false};
    std::vector<box<2, double>> boxes(2);
    boxes[0].min = {sign > 0 ? 0x1p1023 : -0x1.8p1023, 0};
    boxes[0].max = {sign > 0 ? 0x1.8p1023 : -0x1p1023, 1};
    boxes[1].min = boxes[1].max = {sign > 0 ? -0x1p1022 : 0x1p1022, 0};
    boxes[1].max[1] = 1;
    EXPECT_GT(expect_exact(d, boxes), 1u) << sign;
  }
}

}  // namespace
