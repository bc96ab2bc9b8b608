// bench/harness/dbvt_loop.cpp: `hhg_dbvt_loop`, a minimal standalone loop of
// Bullet's btDbvtBroadphase on the harness' scenes, to cross-check what
// `hhg_bench` measures for its Bullet peers (issue 19). No fork, no exact
// filter, no pair list: the thesis scenario (scenes::named_scenario_params),
// its boxes rounded outward to float as the peer does, and per step what a
// Bullet world does: setAabb for every object, one calculateOverlappingPairs.
//
//   hhg_dbvt_loop MODE N STEPS [SCENARIO [SEED]]
//   MODE: default | deferred (m_deferedcollide) | twice (a second
//         calculateOverlappingPairs per step: what the peer did before) |
//         hhg (hhg::hash_grids, one thread: batch move + find_pairs, as the
//         harness' hhg row), for a CPU-time comparison on a loaded machine
//
// Prints the median and mean step time (ms, wall clock as the harness) and the
// median thread CPU time over the steps after 2 warm-up steps, and the cache
// size of the last step.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include <btBulletCollisionCommon.h>

#include "hhg/hash_grids.hpp"
#include "hhg/scenes.hpp"

namespace {

btVector3 lo(const hhg::box<3, double>& b) {
  return {std::nextafter(static_cast<float>(b.min[0]), -INFINITY),
          std::nextafter(static_cast<float>(b.min[1]), -INFINITY),
          std::nextafter(static_cast<float>(b.min[2]), -INFINITY)};
}
btVector3 hi(const hhg::box<3, double>& b) {
  return {std::nextafter(static_cast<float>(b.max[0]), INFINITY),
          std::nextafter(static_cast<float>(b.max[1]), INFINITY),
          std::nextafter(static_cast<float>(b.max[2]), INFINITY)};
}

double cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) * 1e-6;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: hhg_dbvt_loop default|deferred|twice N STEPS [SCENARIO [SEED]]\n");
    return 2;
  }
  const std::string mode = argv[1];
  if (mode != "default" && mode != "deferred" && mode != "twice" && mode != "hhg") {
    std::fprintf(stderr, "hhg_dbvt_loop: unknown mode '%s'\n", mode.c_str());
    return 2;
  }
  const std::size_t n = std::strtoull(argv[2], nullptr, 10);
  const std::size_t steps = std::strtoull(argv[3], nullptr, 10);
  const std::string scenario = argc > 4 ? argv[4] : "equal";
  const std::uint64_t seed = argc > 5 ? std::strtoull(argv[5], nullptr, 10) : 1;
  hhg::scenes::thesis_scenario<3, double> scene(hhg::scenes::named_scenario_params(scenario, n, seed));

  using clock = std::chrono::steady_clock;
  std::vector<double> times, cpu;
  auto report = [&](const char* what, long long pairs) {
    double mean = 0;
    for (const double t : times) mean += t / static_cast<double>(times.size());
    std::printf("%s %s %s n=%zu steps=%zu: step median %.3f ms, mean %.3f ms, cpu median %.3f ms, %s %lld pairs\n",
                mode == "hhg" ? "hhg" : "dbvt", mode.c_str(), scenario.c_str(), n, steps, median(times), mean,
                median(cpu), what, pairs);
  };
  if (mode == "hhg") {
    hhg::hash_grids<3, double> g;  // serial: no executor
    const std::vector<hhg::handle> hs = g.insert(std::span<const hhg::box<3, double>>(scene.boxes()));
    std::vector<hhg::handle_pair> pairs;
    g.find_pairs(pairs);
    for (std::size_t s = 1; s <= steps; ++s) {
      scene.step();
      const double c0 = cpu_ms();
      const auto t0 = clock::now();
      g.move(std::span<const hhg::handle>(hs), std::span<const hhg::box<3, double>>(scene.boxes()));
      g.find_pairs(pairs);
      const auto t1 = clock::now();
      const double c1 = cpu_ms();
      if (s > 2 || steps <= 2) {
        times.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
        cpu.push_back(c1 - c0);
      }
    }
    report("exact", static_cast<long long>(pairs.size()));
    return 0;
  }

  btDbvtBroadphase bp;
  bp.m_deferedcollide = mode == "deferred";
  std::vector<btBroadphaseProxy*> proxies;
  proxies.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto& b = scene.boxes()[i];
    proxies.push_back(bp.createProxy(lo(b), hi(b), BOX_SHAPE_PROXYTYPE, reinterpret_cast<void*>(i), 1, -1, nullptr));
  }
  bp.calculateOverlappingPairs(nullptr);

  for (std::size_t s = 1; s <= steps; ++s) {
    scene.step();
    const double c0 = cpu_ms();
    const auto t0 = clock::now();
    for (std::size_t i = 0; i < n; ++i) bp.setAabb(proxies[i], lo(scene.boxes()[i]), hi(scene.boxes()[i]), nullptr);
    bp.calculateOverlappingPairs(nullptr);
    if (mode == "twice") bp.calculateOverlappingPairs(nullptr);
    const auto t1 = clock::now();
    const double c1 = cpu_ms();
    if (s > 2 || steps <= 2) {
      times.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      cpu.push_back(c1 - c0);
    }
  }
  report("cache", bp.getOverlappingPairCache()->getNumOverlappingPairs());
  for (btBroadphaseProxy* p : proxies) bp.destroyProxy(p, nullptr);
  return 0;
}
