// Benchmark (not a test): two (scenario, method) lanes stepped alternately in
// one process, so that both see the same machine phase. On a host whose speed
// changes every few seconds, two separate runs compare two phases, not two
// scenes; here every step of A is timed next to a step of B (which one goes
// first alternates). Prints each lane's medians (update, detection, step),
// the ratio of the step medians, the median of the per-step ratios, and how
// many steps A was the faster. The issue-19 targets this checks:
//   hhg_paired 1000000 16 coherent equal      (coherent <= 1x equal cubes)
//   hhg_paired 1000000 16 varied varied:grid  (varied <= 0.5x the strong grid)
// and a second build of the hash grid against this one (method hhg-other,
// built with HHG_BENCH_OTHER_FLAGS, default -march=native; bench/other_build):
//   hhg_paired 1000000 10 varied:hhg-other varied
// Usage: hhg_paired [N] [steps] [A] [B] [seed]; a lane is scenario[:method]
// (method default hhg; names as in `hhg bench`). When both lanes have the same
// scenario, their pair counts must agree every step (exit 1 if not).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/batch.hpp"
#ifdef HHG_OTHER_BUILD
#include "other_build.hpp"
#endif
#include "hhg/methods.hpp"
#include "hhg/scenes.hpp"

namespace {

using box3 = hhg::box<3, double>;
using clk = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

double ms(clk::time_point a, clk::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); }

struct lane {
  std::string scenario, method;
  std::vector<double> update, detect, step;
  virtual ~lane() = default;
  virtual void move_scene() = 0;
  /// One timed step (update + detection); returns the number of pairs.
  virtual std::size_t timed_step(bool keep) = 0;
};

template <class M>
struct method_lane final : lane {
  hhg::scenes::thesis_scenario<3, double> scene;
  M m;
  std::vector<hhg::handle> hs;
  std::vector<hhg::handle_pair> pairs;
  method_lane(const std::string& s, std::size_t n, std::uint64_t seed)
      : scene(hhg::scenes::named_scenario_params(s, n, seed)) {
    scenario = s;
    method = std::string(M::method_name);
    hs = hhg::insert_all(m, std::span<const box3>(scene.boxes()));
    if (hhg::scenes::find_named_scenario(s).huge_statics)
      for (const box3& b : hhg::scenes::huge_static_boxes(scene, seed)) m.insert(b);
    m.find_pairs(pairs);
  }
  void move_scene() override { scene.step(); }
  std::size_t timed_step(bool keep) override {
    const auto a = clk::now();
    hhg::bench::move_boxes(m, hs, scene.boxes());
    m.update();
    const auto b = clk::now();
    m.find_pairs(pairs);
    const auto c = clk::now();
    if (keep) {
      update.push_back(ms(a, b));
      detect.push_back(ms(b, c));
      step.push_back(ms(a, c));
    }
    return pairs.size();
  }
};

#ifdef HHG_OTHER_BUILD
// The hash grid of the second build (bench/other_build): the same steps as
// method_lane's for hhg, through the other build's plain interface.
struct other_lane final : lane {
  hhg::scenes::thesis_scenario<3, double> scene;
  other_build::grid* g = nullptr;
  other_lane(const std::string& s, std::size_t n, std::uint64_t seed)
      : scene(hhg::scenes::named_scenario_params(s, n, seed)) {
    scenario = s;
    method = "hhg-other";
    const std::vector<box3> huge = hhg::scenes::find_named_scenario(s).huge_statics
                                       ? hhg::scenes::huge_static_boxes(scene, seed)
                                       : std::vector<box3>{};
    g = other_build::create(raw(scene.boxes().data()), scene.boxes().size(), raw(huge.data()), huge.size());
  }
  ~other_lane() override { other_build::destroy(g); }
  other_lane(const other_lane&) = delete;
  other_lane& operator=(const other_lane&) = delete;
  static const double* raw(const box3* b) { return reinterpret_cast<const double*>(b); }
  void move_scene() override { scene.step(); }
  std::size_t timed_step(bool keep) override {
    double u = 0, d = 0;
    const std::size_t pairs = other_build::step(g, raw(scene.boxes().data()), scene.boxes().size(), &u, &d);
    if (keep) {
      update.push_back(u);
      detect.push_back(d);
      step.push_back(u + d);
    }
    return pairs;
  }
};
#endif

std::unique_ptr<lane> make_lane(const std::string& spec, std::size_t n, std::uint64_t seed) {
  const std::size_t colon = spec.find(':');
  const std::string s = spec.substr(0, colon);
  const std::string method = colon == std::string::npos ? "hhg" : spec.substr(colon + 1);
  hhg::scenes::find_named_scenario(s);  // (throws, naming the scenarios, before any work)
  if (method == "hhg-other") {
#ifdef HHG_OTHER_BUILD
    std::printf("hhg-other: the hash grid built with %s\n", other_build::flags());
    return std::make_unique<other_lane>(s, n, seed);
#else
    throw std::invalid_argument("hhg-other: this hhg_paired has no second build (HHG_BENCH_OTHER_FLAGS was empty)");
#endif
  }
  return hhg::all_methods::with<3, double>(method, [&]<class M>(std::type_identity<M>) -> std::unique_ptr<lane> {
    return std::make_unique<method_lane<M>>(s, n, seed);
  });
}

}  // namespace

int main(int argc, char** argv) try {
  const std::size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1000000;
  const std::size_t steps = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 16;
  const std::uint64_t seed = argc > 5 ? std::strtoull(argv[5], nullptr, 10) : 1;
  if (n == 0 || steps == 0) throw std::invalid_argument("N and steps must be positive integers");
  std::unique_ptr<lane> a = make_lane(argc > 3 ? argv[3] : "coherent", n, seed);
  std::unique_ptr<lane> b = make_lane(argc > 4 ? argv[4] : "equal", n, seed);
  const bool same_scene = a->scenario == b->scenario;
  bool agree = true;
  std::size_t a_faster = 0;
  std::vector<double> ratios;
  for (std::size_t s = 0; s < steps + 2; ++s) {  // (the first 2 steps are not kept)
    a->move_scene();
    b->move_scene();
    const bool keep = s >= 2;
    std::size_t pa = 0, pb = 0;
    if (s % 2 == 0) {
      pa = a->timed_step(keep);
      pb = b->timed_step(keep);
    } else {
      pb = b->timed_step(keep);
      pa = a->timed_step(keep);
    }
    if (same_scene && pa != pb) {
      std::fprintf(stderr, "step %zu: %s finds %zu pairs, %s %zu\n", s, a->method.c_str(), pa, b->method.c_str(), pb);
      agree = false;
    }
    if (keep) {
      ratios.push_back(a->step.back() / b->step.back());
      a_faster += a->step.back() < b->step.back();
    }
  }
  for (const lane* l : {a.get(), b.get()})
    std::printf("%-12s %-9s update %7.1f  detect %7.1f  step %7.1f ms  (%.0f ns/object)\n", l->scenario.c_str(),
                l->method.c_str(), median(l->update), median(l->detect), median(l->step),
                median(l->step) * 1e6 / static_cast<double>(n));
  std::printf("A/B: ratio of step medians %.3f, median of step ratios %.3f, A faster in %zu of %zu steps (N=%zu)\n",
              median(a->step) / median(b->step), median(ratios), a_faster, ratios.size(), n);
  return agree ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "hhg_paired: %s\n", e.what());
  return 2;
}
