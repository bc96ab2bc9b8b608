// The closed overlap rule, end to end: boxes sharing only a face, an edge or a
// corner (or a point on a corner) are a pair; boxes one ulp apart are not.
// Checked with explicit expectations, not only against the oracle, for every
// method, at several positions and size ratios, below and above activation.
#include "support.hpp"

namespace hhg_test {
namespace {

template <class M>
class Touching : public ::testing::Test {};
TYPED_TEST_SUITE(Touching, method_types, method_names);

template <class M>
std::size_t pairs_between(const typename M::box_type& a, const typename M::box_type& b, std::size_t threshold,
                          bool filler) {
  constexpr int D = M::dimension;
  using T = typename M::scalar;
  config c;
  c.activation_threshold = threshold;
  M m = make_method<M>(c);
  const handle ha = m.insert(a);
  const handle hb = m.insert(b);
  if (filler) {  // far-away objects that push the count above the threshold
    for (int i = 0; i < 40; ++i) m.insert(cube<D, T>(-5000 - 3 * i, 1));
  }
  std::vector<handle_pair> out;
  m.find_pairs(out);
  std::size_t found = 0;
  for (const handle_pair& p : out) {
    const bool ab = (p.a == ha && p.b == hb) || (p.a == hb && p.b == ha);
    EXPECT_TRUE(hhg::overlaps(m.get(p.a), m.get(p.b))) << "reported a pair that does not overlap";
    found += ab;
  }
  validate(m);
  return found;
}

template <class M>
void expect_pair(const typename M::box_type& a, const typename M::box_type& b, bool expected, const std::string& what) {
  SCOPED_TRACE(what + ": " + show(a) + " and " + show(b));
  ASSERT_EQ(hhg::overlaps(a, b), expected) << "the test's expectation disagrees with hhg::overlaps";
  for (const std::size_t threshold : {std::size_t{0}, std::size_t{32}}) {
    for (const bool filler : {false, true}) {
      EXPECT_EQ(pairs_between<M>(a, b, threshold, filler), expected ? 1u : 0u)
          << "threshold " << threshold << (filler ? " with filler" : "");
      EXPECT_EQ(pairs_between<M>(b, a, threshold, filler), expected ? 1u : 0u)
          << "reversed insertion, threshold " << threshold << (filler ? " with filler" : "");
    }
  }
}

TYPED_TEST(Touching, FacesEdgesCornersTouchAndUlpGapsSeparate) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  using B = typename TypeParam::box_type;
  constexpr T inf = std::numeric_limits<T>::infinity();
  const bool single = std::is_same_v<T, float>;
  const double far = single ? 1e6 : 1e12;
  for (const double at : {0.0, -1000.0, 0.5, -0.75, 3.0, far, -far}) {
    for (const double size : {1.0, 0.001, 1000.0}) {
      for (const double other : {1.0, 1e-3, 1e3}) {
        const B a = cube<D, T>(at, size);
        const double s2 = size * other;
        // Touching on the first k axes (face: 1, edge: 2, corner: D), upward
        // (b starts at a.max) and downward (b ends at a.min).
        for (int k = 1; k <= D; ++k) {
          for (const bool up : {true, false}) {
            B b;
            for (std::size_t i = 0; i < static_cast<std::size_t>(D); ++i) {
              if (static_cast<int>(i) < k) {
                if (up) {
                  b.min[i] = a.max[i];
                  b.max[i] = static_cast<T>(static_cast<double>(a.max[i]) + s2);
                  if (b.max[i] < b.min[i]) b.max[i] = b.min[i];
                } else {
                  b.max[i] = a.min[i];
                  b.min[i] = static_cast<T>(static_cast<double>(a.min[i]) - s2);
                  if (b.min[i] > b.max[i]) b.min[i] = b.max[i];
                }
              } else {
                b.min[i] = a.min[i];
                b.max[i] = static_cast<T>(static_cast<double>(a.min[i]) + s2);
                if (b.max[i] < b.min[i]) b.max[i] = b.min[i];
              }
            }
            const std::string name = std::string(k == 1   ? "face"
                                                 : k == D ? "corner"
                                                          : "edge") +
                                     (up ? " above" : " below") + " at " + std::to_string(at) + " size " +
                                     std::to_string(size) + " ratio " + std::to_string(other);
            expect_pair<TypeParam>(a, b, true, name);
            // One ulp apart on the last touching axis.
            B gap = b;
            const auto i = static_cast<std::size_t>(k - 1);
            if (up) {
              gap.min[i] = std::nextafter(a.max[i], inf);
              if (gap.max[i] < gap.min[i]) gap.max[i] = gap.min[i];
            } else {
              gap.max[i] = std::nextafter(a.min[i], -inf);
              if (gap.min[i] > gap.max[i]) gap.min[i] = gap.max[i];
            }
            expect_pair<TypeParam>(a, gap, false, name + ", one ulp apart");
          }
        }
        // A point on the upper corner, and one ulp beyond it.
        B point;
        point.min = point.max = a.max;
        expect_pair<TypeParam>(a, point, true, "point on the corner at " + std::to_string(at));
        point.min[0] = point.max[0] = std::nextafter(a.max[0], inf);
        expect_pair<TypeParam>(a, point, false, "point one ulp beyond the corner at " + std::to_string(at));
      }
    }
  }
}

TYPED_TEST(Touching, PointsAndFlatBoxes) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  using B = typename TypeParam::box_type;
  const B point = cube<D, T>(2, 0);
  expect_pair<TypeParam>(point, point, true, "identical points");
  expect_pair<TypeParam>(point, cube<D, T>(2, 1), true, "point on the lower corner");
  expect_pair<TypeParam>(point, cube<D, T>(1, 1), true, "point on the upper corner");
  expect_pair<TypeParam>(point, cube<D, T>(-2, 8), true, "point inside");
  B flat = cube<D, T>(0, 2);
  flat.min[0] = flat.max[0] = 2;  // the plane x = 2 restricted to [0,2]^(D-1)
  expect_pair<TypeParam>(flat, cube<D, T>(2, 1), true, "flat box on a face");
  expect_pair<TypeParam>(flat, flat, true, "identical flat boxes");
  B beyond = flat;
  beyond.min[0] = beyond.max[0] = std::nextafter(T(2), T(3));
  expect_pair<TypeParam>(beyond, cube<D, T>(0, 2), false, "flat box one ulp beyond a face");
  expect_pair<TypeParam>(cube<D, T>(-0.0, 0), cube<D, T>(0.0, 0), true, "-0 and +0");
}

TYPED_TEST(Touching, UnboundedTouching) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  using B = typename TypeParam::box_type;
  constexpr T inf = std::numeric_limits<T>::infinity();
  B half = cube<D, T>(0, 0);
  for (std::size_t i = 0; i < static_cast<std::size_t>(D); ++i) {
    half.min[i] = -inf;
    half.max[i] = inf;
  }
  half.max[0] = 5;  // x <= 5
  expect_pair<TypeParam>(half, cube<D, T>(5, 1), true, "half-space touching a box");
  B next = cube<D, T>(5, 1);
  next.min[0] = std::nextafter(T(5), inf);
  expect_pair<TypeParam>(half, next, false, "half-space one ulp from a box");
  B plane = half;
  plane.min[0] = 5;
  expect_pair<TypeParam>(plane, half, true, "plane on the face of a half-space");
  expect_pair<TypeParam>(plane, cube<D, T>(4, 1), true, "plane touching a box");
  B at_inf = cube<D, T>(0, 1);
  at_inf.min[0] = at_inf.max[0] = inf;
  B ray = cube<D, T>(0, 1);
  ray.max[0] = inf;
  expect_pair<TypeParam>(at_inf, ray, true, "point at +inf on a ray to +inf");
  expect_pair<TypeParam>(at_inf, half, false, "point at +inf and a lower half-space");
  expect_pair<TypeParam>(at_inf, cube<D, T>(1e30, 1), false, "point at +inf and a finite box");
}

}  // namespace
}  // namespace hhg_test
