// Static and moving scenes: hash_grids against the brute-force oracle, exactly.
//
// Every zoo scene at sizes around the activation threshold and beyond, for
// several configurations; the thesis scenario stepped with move(). Each
// failure message names the scene, n, seed and configuration.
#include <numeric>

#include "support.hpp"

namespace hhg_test {
namespace {

using hhg::scenes::thesis_params;
using hhg::scenes::zoo;

template <class M>
class Zoo : public ::testing::Test {};
TYPED_TEST_SUITE(Zoo, grid_types, method_names);

/// Inserts a zoo scene and checks; then permutes the boxes among the objects
/// with move() and checks; then removes every other object and checks.
template <class M>
void run_zoo(zoo z) {
  constexpr int D = M::dimension;
  using T = typename M::scalar;
  const std::size_t sizes[] = {0, 1, 2, 31, 32, 33, 100, 1000};
  for (const named_config& nc : test_configs()) {
    for (const std::size_t n : sizes) {
      for (const std::uint64_t seed : {1u, 7u}) {
        if (n >= 1000 && seed != 1) continue;
        SCOPED_TRACE("scene " + hhg::scenes::to_string(z) + " n=" + std::to_string(n) +
                     " seed=" + std::to_string(seed) + " config " + nc.name);
        const std::vector<box<D, T>> boxes = hhg::scenes::make_zoo_scene<D, T>(z, n, seed);
        ASSERT_EQ(boxes.size(), n);
        mirror<M> m(nc.c);
        for (const auto& b : boxes) m.insert(b);
        ASSERT_TRUE(m.check()) << "after inserting";
        ASSERT_TRUE(m.check(true)) << "for_each_pair";
        if constexpr (is_grids<M>) {
          const auto st = m.subject().stats();
          EXPECT_EQ(st.objects, n);
          EXPECT_EQ(st.pairs, m.expected().size());
        }
        // Object i takes the box of object (i * 7 + 3) mod n: moves across levels.
        for (std::size_t i = 0; i < n; ++i) m.move(i, boxes[(i * 7 + 3) % n]);
        ASSERT_TRUE(m.check()) << "after permuting the boxes with move()";
        for (std::size_t i = 0; i < n; i += 2) m.remove(i);
        ASSERT_TRUE(m.check()) << "after removing every other object";
        for (std::size_t i = 0; i < n; i += 2) m.insert(boxes[i]);
        ASSERT_TRUE(m.check()) << "after inserting them again";
      }
    }
  }
}

#define HHG_ZOO_TEST(scene) \
  TYPED_TEST(Zoo, scene) { run_zoo<TypeParam>(zoo::scene); }
HHG_ZOO_TEST(equal)
HHG_ZOO_TEST(varied12)
HHG_ZOO_TEST(log_uniform)
HHG_ZOO_TEST(negative)
HHG_ZOO_TEST(far_from_origin)
HHG_ZOO_TEST(touching)
HHG_ZOO_TEST(zero_size)
HHG_ZOO_TEST(duplicates)
HHG_ZOO_TEST(one_cell)
HHG_ZOO_TEST(elongated)
HHG_ZOO_TEST(unbounded)
HHG_ZOO_TEST(huge_among_small)
HHG_ZOO_TEST(mixed)
#undef HHG_ZOO_TEST

TEST(ZooList, CoversEveryScene) {
  // The HHG_ZOO_TEST list above must name every scene.
  EXPECT_EQ(hhg::scenes::all_zoo_scenes().size(), 13u);
}

// Larger scenes, default configuration, inserted in scene order and in reverse.
TYPED_TEST(Zoo, LargeScenes) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  for (const zoo z : {zoo::mixed, zoo::log_uniform, zoo::zero_size, zoo::unbounded}) {
    SCOPED_TRACE("scene " + hhg::scenes::to_string(z) + " n=5000 seed=3");
    const auto boxes = hhg::scenes::make_zoo_scene<D, T>(z, 5000, 3);
    mirror<TypeParam> forward;
    for (const auto& b : boxes) forward.insert(b);
    ASSERT_TRUE(forward.check());
    mirror<TypeParam> backward;
    for (auto it = boxes.rbegin(); it != boxes.rend(); ++it) backward.insert(*it);
    ASSERT_TRUE(backward.check());
  }
}

// Boxes whose size is within an ulp of a cell size (or of the lower bound of a
// level), placed within an ulp of cell boundaries, touching each other: the
// rounding of floor(coordinate / cell) must never put two touching boxes two
// cells apart. Cell sizes are read from stats(), so this aims at the real grid.
TYPED_TEST(Zoo, CellBoundaryStress) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  using B = typename TypeParam::box_type;
  constexpr T inf = std::numeric_limits<T>::infinity();
  for (const double f : {2.0, 3.0, 1.5}) {
    SCOPED_TRACE("hierarchy_factor " + std::to_string(f));
    config c;
    c.hierarchy_factor = f;
    c.activation_threshold = 0;
    mirror<TypeParam> m(c);
    // Create a few levels, then read their exact cell sizes.
    for (const double s : {0.3, 1.0, 3.0, 10.0}) m.insert(cube<D, T>(-1e5, s));
    std::vector<double> cells;
    for (const auto& g : m.subject().stats().grids) cells.push_back(g.cell_size);
    ASSERT_GE(cells.size(), 3u);
    hhg::scenes::rng r(99);
    for (const double cell : cells) {
      const T c_t = static_cast<T>(cell);
      const T lower = static_cast<T>(cell / f);
      const T sizes[] = {std::nextafter(c_t, T(0)),
                         std::nextafter(std::nextafter(c_t, T(0)), T(0)),
                         static_cast<T>(cell * (1 - 0x1p-12)),
                         static_cast<T>(cell * (1 - 0x1p-9)),
                         c_t,
                         lower,
                         std::nextafter(lower, inf),
                         std::nextafter(lower, T(0)),
                         static_cast<T>(cell * (1 - 0x1p-8))};
      const double ks[] = {0, 1, -1, 2, -2, 7, -7, 1000, -1001, 65536, -65537, 1048575, -1048577};
      for (const T s : sizes) {
        for (const double k : ks) {
          const T boundary = static_cast<T>(k * cell);
          for (const T start : {std::nextafter(boundary, -inf), boundary, std::nextafter(boundary, inf)}) {
            // A chain of three touching boxes along a random axis, the others shared.
            B a = cube<D, T>(0, 1);
            const auto axis = static_cast<std::size_t>(r.below(D));
            for (std::size_t i = 0; i < static_cast<std::size_t>(D); ++i) {
              a.min[i] = i == axis ? start : static_cast<T>(static_cast<double>(start) * 0.5);
              a.max[i] = a.min[i] + s;
            }
            B b = a;
            b.min[axis] = a.max[axis];
            b.max[axis] = b.min[axis] + s;
            B d = b;
            d.min[axis] = b.max[axis];
            d.max[axis] = d.min[axis] + s;
            m.insert(a);
            m.insert(b);
            m.insert(d);
          }
        }
      }
    }
    ASSERT_TRUE(m.check());
    // The same boxes reached by move(): every object takes its neighbour's box.
    const std::size_t n = m.ids();
    std::vector<B> boxes;
    for (std::size_t i = 0; i < n; ++i) boxes.push_back(m.box_of(i));
    for (std::size_t i = 0; i < n; ++i) m.move(i, boxes[(i + 3) % n]);
    ASSERT_TRUE(m.check());
  }
}

// Extreme but finite coordinates: the largest finite values, subnormal sizes,
// -0.0, boxes whose edge overflows to infinity when computed.
TYPED_TEST(Zoo, ExtremeFiniteCoordinates) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  using B = typename TypeParam::box_type;
  const T big = std::numeric_limits<T>::max();
  const T tiny = std::numeric_limits<T>::denorm_min();
  const T small = std::numeric_limits<T>::min();
  auto uniform = [](T lo, T hi) {
    B b;
    for (std::size_t i = 0; i < static_cast<std::size_t>(D); ++i) {
      b.min[i] = lo;
      b.max[i] = hi;
    }
    return b;
  };
  const std::vector<B> extremes = {
      uniform(-big, big),  // edge overflows to +inf
      uniform(big, big),   // a point at the largest coordinate
      uniform(-big, -big),        uniform(T(0), big),
      uniform(-big, T(0)),        uniform(big / 2, big),
      uniform(T(-0.0), T(0.0)),  // a point at -0 .. +0
      uniform(T(0.0), T(0.0)),    uniform(T(-0.0), T(-0.0)),
      uniform(T(0), tiny),  // subnormal size
      uniform(-tiny, T(0)),       uniform(tiny, 2 * tiny),
      uniform(T(0), small),       uniform(T(1), T(1) + std::numeric_limits<T>::epsilon()),
      uniform(T(-1e30), T(1e30)), uniform(T(1e30), T(1e30) + T(1e24)),
  };
  for (const config& c : {config{}, [] {
                            config x;
                            x.activation_threshold = 0;
                            return x;
                          }()}) {
    mirror<TypeParam> m(c);
    for (const B& b : extremes) m.insert(b);
    for (const auto& b : hhg::scenes::make_zoo_scene<D, T>(zoo::varied12, 60, 4)) m.insert(b);
    ASSERT_TRUE(m.check());
    // Everything moved onto an extreme box and back.
    for (std::size_t i = 0; i < m.ids(); i += 2) m.move(i, extremes[i % extremes.size()]);
    ASSERT_TRUE(m.check());
    for (std::size_t i = 0; i < extremes.size(); ++i) m.move(i, cube<D, T>(static_cast<double>(i), 1));
    ASSERT_TRUE(m.check());
  }
}

// --- the thesis scenario, moving ------------------------------------------------

template <class M>
class Thesis : public ::testing::Test {};
TYPED_TEST_SUITE(Thesis, grid_types, method_names);

template <class M>
void run_thesis(const thesis_params& p, const config& c, int steps) {
  constexpr int D = M::dimension;
  using T = typename M::scalar;
  SCOPED_TRACE("thesis n=" + std::to_string(p.n) + " sizes " + std::to_string(p.size_min) + ".." +
               std::to_string(p.size_max) + " elongation " + std::to_string(p.elongation) + " aspect " +
               std::to_string(p.domain_aspect) + " speed " + std::to_string(p.max_speed_fraction) + " seed " +
               std::to_string(p.seed));
  hhg::scenes::thesis_scenario<D, T> scene(p);
  mirror<M> m(c);
  for (const auto& b : scene.boxes()) m.insert(b);
  ASSERT_TRUE(m.check()) << "initial";
  for (int k = 0; k < steps; ++k) {
    scene.step();
    for (std::size_t i = 0; i < p.n; ++i) m.move(i, scene.boxes()[i]);
    ASSERT_TRUE(m.check(k % 2 == 1)) << "after step " << k + 1;
  }
}

TYPED_TEST(Thesis, EqualSizes) {
  thesis_params p;
  p.n = 3000;
  run_thesis<TypeParam>(p, {}, 6);
}

TYPED_TEST(Thesis, VariedSizes12) {
  thesis_params p;
  p.n = 3000;
  p.size_max = 12;
  p.seed = 2;
  run_thesis<TypeParam>(p, {}, 6);
}

TYPED_TEST(Thesis, ElongatedUnevenDomain) {
  thesis_params p;
  p.n = 3000;
  p.elongation = 10;
  p.domain_aspect = 1024;
  p.seed = 3;
  run_thesis<TypeParam>(p, {}, 6);
}

TYPED_TEST(Thesis, UnevenDomain) {
  thesis_params p;
  p.n = 3000;
  p.size_max = 12;
  p.domain_aspect = 1024;
  p.seed = 9;
  run_thesis<TypeParam>(p, {}, 6);
}

TYPED_TEST(Thesis, HighCoherence) {
  thesis_params p;
  p.n = 3000;
  p.size_max = 12;
  p.max_speed_fraction = 0.01;
  p.seed = 4;
  run_thesis<TypeParam>(p, {}, 10);
}

TYPED_TEST(Thesis, FastObjects) {
  thesis_params p;
  p.n = 2000;
  p.size_max = 12;
  p.max_speed_fraction = 3;
  p.seed = 5;
  run_thesis<TypeParam>(p, {}, 6);
}

TYPED_TEST(Thesis, RebuildStrategy) {
  thesis_params p;
  p.n = 2000;
  p.size_max = 12;
  p.seed = 6;
  config c;
  c.strategy = hhg::update_strategy::rebuild;
  run_thesis<TypeParam>(p, c, 6);
}

TYPED_TEST(Thesis, SmallGridsThatGrow) {
  thesis_params p;
  p.n = 3000;
  p.seed = 7;
  config c;
  c.initial_cells = {4, 4, 4};
  c.minimal_grid_density = 1;
  c.activation_threshold = 0;
  run_thesis<TypeParam>(p, c, 4);
}

TYPED_TEST(Thesis, OtherHierarchyFactors) {
  thesis_params p;
  p.n = 1500;
  p.size_max = 12;
  p.seed = 8;
  for (const double f : {1.5, 3.0, 4.0, 10.0}) {
    SCOPED_TRACE("hierarchy_factor " + std::to_string(f));
    config c;
    c.hierarchy_factor = f;
    run_thesis<TypeParam>(p, c, 3);
  }
}

// --- the oracle itself ------------------------------------------------------------

template <class M>
class Oracle : public ::testing::Test {};
using oracle_types = ::testing::Types<HHG_TEST_VARIANTS(brute_force)>;
TYPED_TEST_SUITE(Oracle, oracle_types, method_names);

// brute_force against a plain double loop over the boxes by insertion order.
TYPED_TEST(Oracle, MatchesNestedLoop) {
  constexpr int D = TypeParam::dimension;
  using T = typename TypeParam::scalar;
  for (const zoo z : hhg::scenes::all_zoo_scenes()) {
    SCOPED_TRACE("scene " + hhg::scenes::to_string(z) + " n=300 seed=5");
    const auto boxes = hhg::scenes::make_zoo_scene<D, T>(z, 300, 5);
    TypeParam bf;
    std::vector<handle> handles;
    for (const auto& b : boxes) handles.push_back(bf.insert(b));
    std::vector<handle_pair> want;
    for (std::size_t i = 0; i < boxes.size(); ++i) {
      for (std::size_t j = i + 1; j < boxes.size(); ++j) {
        bool overlap = true;
        for (int k = 0; k < D; ++k) {
          const auto a = static_cast<std::size_t>(k);
          overlap = overlap && !(boxes[i].max[a] < boxes[j].min[a]) && !(boxes[j].max[a] < boxes[i].min[a]);
        }
        if (overlap) want.push_back({handles[i], handles[j]});
      }
    }
    std::vector<handle_pair> got;
    bf.find_pairs(got);
    hhg::canonicalize(got);
    hhg::canonicalize(want);
    EXPECT_EQ(got, want);
    EXPECT_FALSE(want.empty());
  }
}

}  // namespace
}  // namespace hhg_test
