// Every method against brute force on scenes at the ends of the floating-point
// range: boxes near -max and +max of the scalar (so the scene's extent, and a
// box's edge, overflow to +inf when computed in it; float boxes computed in
// double do not overflow, but run too), boxes spanning nearly the whole
// range, small boxes far out, touching boxes and points out there, unbounded
// boxes among them. Until stop 79 the pivot-table methods failed here: the
// chunked table missed pairs silently, the dense one threw "vector larger than
// max_size()" or looped for ever (three boxes in 2D). The zoo scenes stop at
// 1e12 (far_from_origin); these go to the end.
#include <limits>
#include <type_traits>

#include "hhg/methods.hpp"
#include "hhg/scenes.hpp"
#include "support.hpp"

namespace hhg_test {
namespace {

template <int D, class T>
using boxes_of = std::vector<hhg::box<D, T>>;

/// A box from per-axis ranges given in double (rounded to T: monotone, so
/// min <= max stays).
template <int D, class T>
hhg::box<D, T> make_box(const std::array<double, D>& lo, const std::array<double, D>& hi) {
  hhg::box<D, T> b;
  for (int k = 0; k < D; ++k) {
    b.min[k] = static_cast<T>(lo[k]);
    b.max[k] = static_cast<T>(hi[k]);
  }
  return b;
}

/// The scenes the review of stop 79 found (written for D = 2 and 3), then
/// random ones.
template <int D, class T>
std::vector<std::pair<std::string, boxes_of<D, T>>> extreme_scenes() {
  constexpr double M = std::numeric_limits<T>::max();
  constexpr double inf = std::numeric_limits<double>::infinity();
  std::vector<std::pair<std::string, boxes_of<D, T>>> out;
  auto at = [](double a, double b, double c) {  // a point's coordinates, D of them
    std::array<double, D> v{};
    v[0] = a;
    v[1] = b;
    if constexpr (D == 3) v[2] = c;
    return v;
  };
  // the chunked table's silent miss: the min corners span past +-max/2 on y;
  // boxes 0 and 2 overlap
  out.push_back(
      {"min corners span more than max",
       {make_box<D, T>(at(0, M / 1.8, 0), at(0, M / 1.8, M / 1.8)),
        make_box<D, T>(at(0, -M / 1.8, 0), at(0, -M / 1.8, 0)), make_box<D, T>(at(0, 0, 1), at(1, M / 1.8, M / 1.8))}});
  // the dense table's endless loop: large edges (8 * median overflows) and an
  // unbounded box among them
  out.push_back({"median edge near max, one unbounded",
                 {make_box<D, T>(at(-M / 1.8, -M / 1.06, -M / 1.06), at(0, 0, 0)),
                  make_box<D, T>(at(M / 1.8e8, -1e15, -1e15), at(M / 1.8, 1, 1)),
                  make_box<D, T>(at(-inf, -inf, -inf), at(0, 0, 0))}});
  hhg::scenes::rng r(79);
  for (int round = 0; round < 3; ++round) {
    boxes_of<D, T> bs;
    for (int i = 0; i < 300; ++i) {
      std::array<double, D> lo{}, hi{};
      const auto kind = r.below(8);
      for (int k = 0; k < D; ++k) {
        const double side = r.below(2) ? 1.0 : -1.0;
        if (kind == 0) {  // small (relative to its place) near +-max
          const double c = side * M * r.uniform(0.5, 1.0);
          const double s = M * r.uniform(0, 1e-3);
          lo[k] = std::max(-M, c - s);
          hi[k] = std::min(M, c + s);
        } else if (kind == 1) {  // nearly everything: the edge overflows
          lo[k] = -M * r.uniform(0.5, 1.0);
          hi[k] = M * r.uniform(0.5, 1.0);
        } else if (kind == 2) {  // a unit box near the origin
          lo[k] = r.uniform(-10, 10);
          hi[k] = lo[k] + 1;
        } else if (kind == 3) {  // from far out to near the origin
          lo[k] = side < 0 ? -M * r.uniform(0.5, 1.0) : r.uniform(-10, 10);
          hi[k] = side < 0 ? r.uniform(-10, 10) : M * r.uniform(0.5, 1.0);
        } else if (kind == 4) {  // a point at +-max, or at +-max / 2
          lo[k] = hi[k] = side * M / (r.below(2) ? 1.0 : 2.0);
        } else if (kind == 5 && !bs.empty()) {  // touching an earlier box: its max is our min
          const auto& o = bs[r.below(bs.size())];
          lo[k] = std::min(static_cast<double>(o.max[k]), M);  // (an unbounded max: at max)
          hi[k] = std::min(M, lo[k] + M * r.uniform(0, 0.1));
        } else if (kind == 6) {  // unbounded on this axis, now and then
          lo[k] = r.below(4) == 0 ? -inf : -M * r.uniform(0, 1.0);
          hi[k] = r.below(4) == 0 ? inf : M * r.uniform(0, 1.0);
        } else {  // anywhere, any size
          const double a = side * M * r.uniform(0, 1.0), b = (r.below(2) ? 1.0 : -1.0) * M * r.uniform(0, 1.0);
          lo[k] = std::min(a, b);
          hi[k] = std::max(a, b);
        }
      }
      bs.push_back(make_box<D, T>(lo, hi));
    }
    out.push_back({"random " + std::to_string(round), std::move(bs)});
  }
  return out;
}

template <int D, class T>
void check_every_method() {
  for (const auto& named : extreme_scenes<D, T>()) {
    const std::string& scene = named.first;  // (not structured bindings: clang 14 cannot capture them)
    const boxes_of<D, T>& bs = named.second;
    hhg::brute_force<D, T> bf;
    const auto want = hhg::all_pairs(bf, std::span<const hhg::box<D, T>>(bs));
    for (const std::string_view name : hhg::all_methods::names()) {
      SCOPED_TRACE(std::string(name) + ", " + scene + ", D=" + std::to_string(D) +
                   (std::is_same_v<T, float> ? " float" : " double"));
      hhg::all_methods::with<D, T>(name, [&]<class M>(std::type_identity<M>) {
        M one = make_method<M>();
        try {  // (a method that throws fails here, and the others still run)
          EXPECT_EQ(hhg::all_pairs(one, std::span<const hhg::box<D, T>>(bs)), want) << "one shot";
        } catch (const std::exception& e) {
          ADD_FAILURE() << "one shot threw: " << e.what();
          return;
        }
        // and as a dynamic structure: inserted one by one, every box moved onto
        // another's, every other one removed
        try {
          mirror<M> m;
          for (const auto& b : bs) m.insert(b);
          ASSERT_TRUE(m.check());
          for (std::size_t i = 0; i < bs.size(); ++i) m.move(i, bs[(i * 7 + 3) % bs.size()]);
          ASSERT_TRUE(m.check());
          for (std::size_t i = 0; i < bs.size(); i += 2) m.remove(i);
          ASSERT_TRUE(m.check(true));
        } catch (const std::exception& e) {
          ADD_FAILURE() << "the dynamic structure threw: " << e.what();
        }
      });
    }
  }
}

TEST(ExtremeCoordinates, EveryMethodAgreesWithBruteForce2DFloat) { check_every_method<2, float>(); }
TEST(ExtremeCoordinates, EveryMethodAgreesWithBruteForce2DDouble) { check_every_method<2, double>(); }
TEST(ExtremeCoordinates, EveryMethodAgreesWithBruteForce3DFloat) { check_every_method<3, float>(); }
TEST(ExtremeCoordinates, EveryMethodAgreesWithBruteForce3DDouble) { check_every_method<3, double>(); }

// The scenes above do what they are for: some min corners span more than the
// largest value (their difference overflows), and some pairs exist.
TEST(ExtremeCoordinates, ScenesOverflowTheExtent) {
  const auto scenes = extreme_scenes<3, double>();
  for (const auto& [scene, bs] : scenes) {
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (const auto& b : bs) {
      lo = std::min(lo, b.min[1]);
      hi = std::max(hi, b.min[1]);
    }
    EXPECT_EQ(hi - lo, std::numeric_limits<double>::infinity()) << scene;
    hhg::brute_force<3, double> bf;
    EXPECT_FALSE(hhg::all_pairs(bf, std::span<const hhg::box<3, double>>(bs)).empty()) << scene;
  }
}

}  // namespace
}  // namespace hhg_test
