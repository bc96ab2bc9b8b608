// Benchmark (not a test): the thesis scenario stepped with the hash grid on
// 1 thread and on T threads, alternating step by step on the same boxes, so
// both see the same machine load. Prints per-phase medians (update,
// detection) and the speed-up, and checks that both give the same pairs in
// the same order every step.
//   hhg_step_threads [N] [steps] [scenario: equal|varied|elongated|coherent|sparse|uneven] [T]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "hhg/executor.hpp"
#include "hhg/hash_grids.hpp"
#include "hhg/scenes.hpp"

namespace {
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}
}  // namespace

int main(int argc, char** argv) {
  const std::size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1000000;
  const std::size_t steps = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 20;
  const std::string scenario = argc > 3 ? argv[3] : "equal";
  const unsigned threads = argc > 4 ? static_cast<unsigned>(std::strtoul(argv[4], nullptr, 10)) : 2;
  hhg::scenes::thesis_params p;
  p.n = n;
  if (scenario == "varied")
    p.size_max = 12;
  else if (scenario == "elongated")
    p.elongation = 10;
  else if (scenario == "coherent")
    p.max_speed_fraction = 0.01;
  else if (scenario == "sparse")
    p.pairs_per_object = 0.001;
  else if (scenario == "uneven")
    p.domain_aspect = 1024;
  hhg::scenes::thesis_scenario<3, double> scene(p);
  using box3 = hhg::box<3, double>;
  hhg::thread_pool pool(threads);
  hhg::hash_grids<3, double> one, many;
  many.set_executor(&pool);
  const std::vector<hhg::handle> h1 = one.insert(std::span<const box3>(scene.boxes()));
  const std::vector<hhg::handle> h2 = many.insert(std::span<const box3>(scene.boxes()));
  std::vector<hhg::handle_pair> p1, p2;
  std::vector<double> u1, d1, u2, d2;
  using clk = std::chrono::steady_clock;
  auto ms = [](clk::time_point a, clk::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  };
  bool same = true;
  for (std::size_t s = 0; s < steps + 2; ++s) {
    scene.step();
    const auto& bs = scene.boxes();
    for (int k = 0; k < 2; ++k) {  // alternate which runs first
      const bool first_one = (s + k) % 2 == 0;
      auto& g = first_one ? one : many;
      auto& hs = first_one ? h1 : h2;
      auto& out = first_one ? p1 : p2;
      const auto t0 = clk::now();
      g.move(std::span<const hhg::handle>(hs), std::span<const box3>(bs));
      const auto t1 = clk::now();
      g.find_pairs(out);
      const auto t2 = clk::now();
      if (s >= 2) {
        (first_one ? u1 : u2).push_back(ms(t0, t1));
        (first_one ? d1 : d2).push_back(ms(t1, t2));
      }
    }
    same = same && p1 == p2;
  }
  const double s1 = median(u1) + median(d1), s2 = median(u2) + median(d2);
  std::printf(
      "%s N=%zu steps=%zu: 1 thread update %.1f detect %.1f step %.1f ms (%.0f ns/object) | %u threads update %.1f "
      "detect %.1f step %.1f ms (%.0f ns/object) | speed-up %.2f (update %.2f, detect %.2f) | pairs %zu %s\n",
      scenario.c_str(), n, steps, median(u1), median(d1), s1, s1 * 1e6 / static_cast<double>(n), threads, median(u2),
      median(d2), s2, s2 * 1e6 / static_cast<double>(n), s1 / s2, median(u1) / median(u2), median(d1) / median(d2),
      p1.size(), same ? "same pairs, same order" : "PAIRS DIFFER");
  return same ? 0 : 1;
}
