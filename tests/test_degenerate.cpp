// Degenerate loads (issue 5, item 6): everything in one cell; 10^4 coincident
// boxes (every pair overlaps); an object travelling to 10^12 and back; long
// insert/remove churn with the memory measured before and after. Pair counts
// are exact (checked against n(n-1)/2 or brute force), validate() passes, and
// memory does not grow without bound. Sizes are smaller under sanitizers.
#include <cstdint>

#include "support.hpp"

namespace hhg_test {
namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr std::size_t kCoincident = 3000;
constexpr std::size_t kChurn = 200000;
#else
constexpr std::size_t kCoincident = 10000;
constexpr std::size_t kChurn = 10000000;
#endif

TEST(Degenerate, CoincidentBoxesEveryPairOnce) {
  hash_grids<3, double> g;
  for (std::size_t i = 0; i < kCoincident; ++i) g.insert({{1, 1, 1}, {2, 2, 2}});
  std::uint64_t count = 0, bad = 0;
  g.for_each_pair([&](handle a, handle b) {
    ++count;
    bad += a == b;
  });
  EXPECT_EQ(count, kCoincident * (kCoincident - 1) / 2);
  EXPECT_EQ(bad, 0u);
  g.validate();
}

TEST(Degenerate, EverythingInOneCellMatchesBruteForce) {
  mirror<hash_grids<3, float>> m;
  hhg::scenes::rng r(12);
  for (int i = 0; i < 1500; ++i) {  // tiny boxes packed in a region smaller than one cell
    const double x = r.uniform(0, 0.01), y = r.uniform(0, 0.01), z = r.uniform(0, 0.01), s = r.uniform(0, 0.002);
    m.insert({{static_cast<float>(x), static_cast<float>(y), static_cast<float>(z)},
              {static_cast<float>(x + s), static_cast<float>(y + s), static_cast<float>(z + s)}});
  }
  m.insert({{0, 0, 0}, {1, 1, 1}});  // one large box over all of them
  ASSERT_TRUE(m.check());
}

TEST(Degenerate, TripToFarAwayAndBack) {
  mirror<hash_grids<3, double>> m;
  hhg::scenes::thesis_params p;
  p.n = 2000;
  hhg::scenes::thesis_scenario<3, double> scene(p);
  for (const auto& b : scene.boxes()) m.insert(b);
  const std::size_t traveller = 0;
  const auto home = m.box_of(traveller);
  ASSERT_TRUE(m.check());
  const std::size_t bytes_before = m.subject().bytes();
  for (double x = 1; x <= 1e12; x *= 10) {  // out, one decade a step, and back
    auto b = home;
    for (int k = 0; k < 3; ++k) {
      b.min[k] += x;
      b.max[k] += x;
    }
    m.move(traveller, b);
    ASSERT_TRUE(m.check()) << "at " << x;
  }
  m.move(traveller, home);
  ASSERT_TRUE(m.check());
  for (int round = 0; round < 3; ++round) {  // the trip again: memory must not keep growing
    for (double x = 1; x <= 1e12; x *= 10) {
      auto b = home;
      b.min[0] += x;
      b.max[0] += x;
      m.move(traveller, b);
      std::vector<handle_pair> out;
      m.subject().find_pairs(out);
    }
    m.move(traveller, home);
  }
  ASSERT_TRUE(m.check());
  EXPECT_LT(m.subject().bytes(), 3 * bytes_before) << "a round trip to 1e12 leaves grids behind, not growth";
}

TEST(Degenerate, ChurnKeepsMemoryBounded) {
  hash_grids<3, double> g;
  hhg::scenes::rng r(99);
  std::vector<handle> live;
  auto random_box = [&] {
    const double x = r.uniform(-100, 100), y = r.uniform(-100, 100), z = r.uniform(-100, 100),
                 s = std::pow(10.0, r.uniform(-2, 1));
    return box<3, double>{{x, y, z}, {x + s, y + s, z + s}};
  };
  for (int i = 0; i < 5000; ++i) live.push_back(g.insert(random_box()));
  std::vector<handle_pair> out;
  g.find_pairs(out);
  // warm up: one full turnover, so every structure has reached its working size
  for (std::size_t op = 0; op < 20000; ++op) {
    const std::size_t i = r.below(live.size());
    g.remove(live[i]);
    live[i] = g.insert(random_box());
  }
  g.find_pairs(out);
  const std::size_t before = g.bytes();
  for (std::size_t op = 0; op < kChurn / 2; ++op) {  // remove + insert: two operations
    const std::size_t i = r.below(live.size());
    g.remove(live[i]);
    live[i] = g.insert(random_box());
    if (op % 100000 == 0) g.find_pairs(out);
  }
  g.find_pairs(out);
  g.validate();
  const std::size_t after = g.bytes();
  RecordProperty("bytes_before", static_cast<int>(before));
  RecordProperty("bytes_after", static_cast<int>(after));
  EXPECT_LT(after, before + before / 2) << "memory after " << kChurn << " operations: " << before << " -> " << after;
  EXPECT_EQ(g.size(), 5000u);
}

}  // namespace
}  // namespace hhg_test
