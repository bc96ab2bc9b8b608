// Benchmark (not a test): the parallel batch queries of hash_grids and the
// parallel cell_list on 1 thread and on T threads, alternating round by
// round (which runs first alternates too) so both see the same machine load.
// Prints the medians and checks that both give identical results.
//   hhg_query_threads [N boxes] [box queries] [rays] [N points] [rounds] [T]
// Defaults: 10^6 boxes (thesis scene, equal cubes), 10^5 box queries, 10^4
// rays (finite, 20 cells long), 10^6 points (about 30 neighbours each), 5 rounds, T = 2.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "hhg/executor.hpp"
#include "hhg/hash_grids.hpp"
#include "hhg/neighbors.hpp"
#include "hhg/scenes.hpp"

namespace {
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}
using clk = std::chrono::steady_clock;
double ms_since(clk::time_point a) { return std::chrono::duration<double, std::milli>(clk::now() - a).count(); }
}  // namespace

int main(int argc, char** argv) {
  auto arg = [&](int i, std::size_t d) { return argc > i ? std::strtoull(argv[i], nullptr, 10) : d; };
  const std::size_t n = arg(1, 1000000), nq = arg(2, 100000), nr = arg(3, 10000), np = arg(4, 1000000);
  const std::size_t rounds = arg(5, 5);
  const auto threads = static_cast<unsigned>(arg(6, 2));
  hhg::scenes::thesis_params p;
  p.n = n;
  hhg::scenes::thesis_scenario<3, double> scene(p);
  using box3 = hhg::box<3, double>;
  const auto& boxes = scene.boxes();
  hhg::hash_grids<3, double> g;
  g.insert(std::span<const box3>(boxes));
  hhg::scenes::rng r(7);
  std::vector<box3> qs(nq);
  for (auto& q : qs) q = boxes[r.below(boxes.size())];  // each finds its box and its neighbours
  std::vector<hhg::ray<3, double>> rays(nr);
  const double edge = boxes[0].max[0] - boxes[0].min[0];
  for (auto& ray : rays) {
    const auto& b = boxes[r.below(boxes.size())];
    double len = 0;
    for (int i = 0; i < 3; ++i) {
      ray.origin[i] = b.min[i];
      ray.direction[i] = r.uniform(-1, 1);
      len += ray.direction[i] * ray.direction[i];
    }
    ray.max_t = 20 * edge / std::sqrt(len);
  }
  std::vector<std::array<double, 3>> pts(np);
  // density 30 / (4/3 pi): about 30 neighbours within r = 1
  const double side = std::cbrt(static_cast<double>(np) * 4.0 * 3.14159265358979 / 3.0 / 30.0);
  for (auto& q : pts)
    for (double& v : q) v = r.uniform(0, side);
  hhg::thread_pool pool(threads);
  std::vector<std::vector<hhg::handle>> ob[2];
  std::vector<std::vector<hhg::ray_hit>> orr[2];
  hhg::neighbor_list nl[2];
  std::vector<double> tq[2], tr[2], tb[2], tn[2];
  bool same = true;
  for (std::size_t round = 0; round < rounds; ++round)
    for (int k = 0; k < 2; ++k) {
      const int which = static_cast<int>((round + static_cast<std::size_t>(k)) % 2);  // 0: one thread, 1: T
      hhg::executor* e = which == 1 ? &pool : nullptr;
      g.set_executor(e);
      auto t0 = clk::now();
      g.overlapping(qs, ob[which]);
      tq[which].push_back(ms_since(t0));
      t0 = clk::now();
      g.ray_hits(rays, orr[which]);
      tr[which].push_back(ms_since(t0));
      hhg::cell_list<3, double> cl;
      cl.set_executor(e);
      t0 = clk::now();
      cl.build(pts, 1.0);
      tb[which].push_back(ms_since(t0));
      t0 = clk::now();
      cl.neighbors(nl[which]);
      tn[which].push_back(ms_since(t0));
      if (k == 1)
        same = same && ob[0] == ob[1] && orr[0] == orr[1] && nl[0].offsets == nl[1].offsets &&
               nl[0].indices == nl[1].indices;
    }
  std::size_t matches = 0, hits = 0;
  for (const auto& v : ob[0]) matches += v.size();
  for (const auto& v : orr[0]) hits += v.size();
  std::printf("boxes %zu, box queries %zu (%zu matches), rays %zu (%zu hits), points %zu (%zu neighbour entries)\n", n,
              nq, matches, nr, hits, np, nl[0].indices.size());
  std::printf("%-22s %10s %10s %8s\n", "median ms", "1 thread", (std::to_string(threads) + " threads").c_str(),
              "speed-up");
  auto row = [](const char* name, const std::vector<double>& a, const std::vector<double>& b) {
    std::printf("%-22s %10.1f %10.1f %8.2f\n", name, median(a), median(b), median(a) / median(b));
  };
  row("overlapping (batch)", tq[0], tq[1]);
  row("ray_hits (batch)", tr[0], tr[1]);
  row("cell_list build", tb[0], tb[1]);
  row("cell_list neighbors", tn[0], tn[1]);
  std::printf("identical results: %s\n", same ? "yes" : "NO");
  return same ? 0 : 1;
}
