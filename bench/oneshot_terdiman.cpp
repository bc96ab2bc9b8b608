// hhg_oneshot_terdiman: one-shot pairs of hash_grids in one process, repeated
// (issue 19). Each repetition builds a new hash_grids<3, double> on one
// thread, inserts P. Terdiman's boxes in one batch (insert(span): the bulk
// insert) and runs one find_pairs; the memory of the previous repetition is
// reused by the allocator, as in a program that calls it in a loop (the way
// Terdiman's own timings are taken). `hhg bench --scenario terdiman` times
// the same one-shot in a fresh process instead (scripts/oneshot_terdiman.sh).
//
//   hhg_oneshot_terdiman [N [REPS [SEED]]]      (defaults 100000, 21, 1)
//
// Prints the medians of the insert, the detection (into a new vector: its
// pages are faulted in, as a one-shot caller pays them), the total, and the
// detection into a vector reused from the previous repetition.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <span>
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

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 100000;
  const std::size_t reps = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 21;
  const std::uint64_t seed = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 1;
  if (n == 0 || reps == 0) {
    std::fprintf(stderr, "usage: hhg_oneshot_terdiman [N [REPS [SEED]]] (N, REPS >= 1)\n");
    return 2;
  }
  const hhg::scenes::thesis_scenario<3, double> scene(hhg::scenes::named_scenario_params("terdiman", n, seed));
  const std::vector<hhg::box<3, double>> boxes(scene.boxes().begin(), scene.boxes().end());
  hhg::serial_executor one;
  std::vector<double> insert, detect, total, detect_reused;
  std::vector<hhg::handle_pair> reused;
  std::size_t pairs = 0;
  std::uint64_t tests = 0;
  for (std::size_t r = 0; r < reps; ++r) {
    {  // the one-shot: a new structure, a new output vector
      const auto t0 = std::chrono::steady_clock::now();
      hhg::hash_grids<3, double> m;
      m.set_executor(&one);
      const std::vector<hhg::handle> hs = m.insert(std::span<const hhg::box<3, double>>(boxes));
      const double a = ms_since(t0);
      const auto t1 = std::chrono::steady_clock::now();
      std::vector<hhg::handle_pair> out;
      m.find_pairs(out);
      const double b = ms_since(t1);
      insert.push_back(a);
      detect.push_back(b);
      total.push_back(a + b);
      pairs = out.size();
      tests = m.stats().box_tests;
    }
    {  // the same, detecting into a vector whose pages are already in
      hhg::hash_grids<3, double> m;
      m.set_executor(&one);
      const std::vector<hhg::handle> hs = m.insert(std::span<const hhg::box<3, double>>(boxes));
      const auto t1 = std::chrono::steady_clock::now();
      m.find_pairs(reused);
      detect_reused.push_back(ms_since(t1));
    }
  }
  std::printf(
      "n %zu pairs %zu box tests %llu, medians of %zu: insert %.3f ms, detect %.3f ms, total %.3f ms; detect into a "
      "reused vector %.3f ms (insert + that %.3f ms)\n",
      n, pairs, static_cast<unsigned long long>(tests), reps, median(insert), median(detect), median(total),
      median(detect_reused), median(insert) + median(detect_reused));
  return 0;
}
