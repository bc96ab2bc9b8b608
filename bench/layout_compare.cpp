// bench/layout_compare.cpp: hhg's memory layout against the thesis' literal
// one (bench/literal_hash_grids.hpp) on the thesis scenario, one layout per
// process so neither sees the other's memory.
//
//   hhg_layout_compare LAYOUT N STEPS SIZE_MAX
//   LAYOUT: hhg | literal;  SIZE_MAX: 1 (equal cubes) or 12 (sizes varied 12x)
//
// Prints one line: layout n steps setup_ms update_ms_median detect_ms_median
// step_ns_per_object pairs_median bytes_per_object peak_rss_mb
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "hhg/hash_grids.hpp"
#include "hhg/scenes.hpp"
#include "literal_hash_grids.hpp"

namespace {

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

double peak_rss_mb() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::atof(line.c_str() + 6) / 1024.0;
  return 0;
}

template <class Structure, class Handle>
void run(const char* name, Structure& s, std::size_t n, int steps, double size_max) {
  hhg::scenes::thesis_params p;
  p.n = n;
  p.size_max = size_max;
  hhg::scenes::thesis_scenario<3, double> scene(p);
  std::vector<Handle> h(n);
  const double t0 = now_ms();
  for (std::size_t i = 0; i < n; ++i) h[i] = s.insert(scene.boxes()[i]);
  const double setup = now_ms() - t0;
  std::vector<double> upd, det, pairs;
  auto out = s.make_buffer();
  for (int step = 0; step < steps; ++step) {
    scene.step();
    const double a = now_ms();
    for (std::size_t i = 0; i < n; ++i) s.move(h[i], scene.boxes()[i]);
    const double b = now_ms();
    s.pairs(out);
    const double c = now_ms();
    if (step >= 2) {  // warm-up
      upd.push_back(b - a);
      det.push_back(c - b);
      pairs.push_back(static_cast<double>(out.size()));
    }
  }
  const double u = median(upd), d = median(det);
  std::printf("%s %zu %d %.1f %.2f %.2f %.1f %.0f %.1f %.1f\n", name, n, steps, setup, u, d,
              (u + d) * 1e6 / static_cast<double>(n), median(pairs),
              static_cast<double>(s.bytes()) / static_cast<double>(n), peak_rss_mb());
}

struct hhg_adapter {
  hhg::hash_grids<3, double> g;
  hhg::handle insert(const hhg::box<3, double>& b) { return g.insert(b); }
  void move(hhg::handle h, const hhg::box<3, double>& b) { g.move(h, b); }
  std::vector<hhg::handle_pair> make_buffer() { return {}; }
  void pairs(std::vector<hhg::handle_pair>& out) { g.find_pairs(out); }
  std::size_t bytes() const { return g.stats().bytes; }
};

struct literal_adapter {
  hhg::bench::literal_hash_grids g;
  std::uint32_t insert(const hhg::box<3, double>& b) { return g.insert(b); }
  void move(std::uint32_t h, const hhg::box<3, double>& b) { g.move(h, b); }
  std::vector<std::pair<std::uint32_t, std::uint32_t>> make_buffer() { return {}; }
  void pairs(std::vector<std::pair<std::uint32_t, std::uint32_t>>& out) { g.find_pairs(out); }
  std::size_t bytes() const { return g.bytes(); }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s hhg|literal N STEPS SIZE_MAX\n", argv[0]);
    return 2;
  }
  const std::string layout = argv[1];
  const auto n = static_cast<std::size_t>(std::atoll(argv[2]));
  const int steps = std::atoi(argv[3]);
  const double size_max = std::atof(argv[4]);
  if (layout == "hhg") {
    hhg_adapter s;
    run<hhg_adapter, hhg::handle>("hhg", s, n, steps, size_max);
  } else if (layout == "literal") {
    literal_adapter s;
    run<literal_adapter, std::uint32_t>("literal", s, n, steps, size_max);
  } else {
    std::fprintf(stderr, "unknown layout %s\n", layout.c_str());
    return 2;
  }
  return 0;
}
