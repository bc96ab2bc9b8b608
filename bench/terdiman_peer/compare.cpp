// compare: P. Terdiman's "box pruning revisited" v17 (CompleteBoxPruning) against
// hhg's one-shot pairs, on hhg's `terdiman` scene, in one process, call by call,
// so that bursts of load on a shared host hit both sides alike.
//
//   compare N REPS
//
// Built and run by scripts/terdiman_peer.sh, which compiles Terdiman's files
// from a checkout of github.com/Pierre-Terdiman/BoxPruning (none of his code
// is in this repository) with Stdafx.h, our stand-in for his precompiled header.
//
// The boxes are hhg::scenes' terdiman scene (seed 1) in double for hhg and
// rounded outward to float for his code (his AABB is float). For N <= 20000
// his pair count is checked against a brute-force count on the float boxes;
// a mismatch exits with 1. hhg's count is printed too: rounding outward can
// only add touching pairs to his side.
//
// Each repetition times, in an order alternating by repetition:
//   his     CompleteBoxPruning into a Container reset before the call, as in
//           his own benchmark; his radix sorter is fresh in every call (the
//           build script makes his `static` sorter a local one), as a one-shot
//           caller has it;
//   total   a new hash_grids<3, double> on one thread: insert(span) (the bulk
//           insert) + find_pairs into a new vector;
//   reused  the same, find_pairs into a vector reused across repetitions;
//   float   a new hash_grids<3, float> on his float boxes themselves (the
//           same data as his call: the pair counts must be equal, or the
//           program exits with 1), find_pairs into a new vector.
// Prints one line of key=value: medians and minima in ms, and the ratios
// hhg/his of the medians and of the minima.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <type_traits>
#include <vector>

#include "hhg/executor.hpp"
#include "hhg/hash_grids.hpp"
#include "hhg/scenes.hpp"

// last: Terdiman's headers (through our shim) define macros such as `null`
#include "Stdafx.h"

namespace {

using clock_type = std::chrono::steady_clock;

double ms_since(clock_type::time_point t) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double minimum(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }

float round_down(double v) {
  const float f = static_cast<float>(v);
  return static_cast<double>(f) > v ? std::nextafter(f, -INFINITY) : f;
}

float round_up(double v) {
  const float f = static_cast<float>(v);
  return static_cast<double>(f) < v ? std::nextafter(f, INFINITY) : f;
}

// closed on every axis, as his AABB::Intersect
std::size_t brute_force_pairs(const std::vector<AABB>& b, std::size_t n) {
  std::size_t pairs = 0;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i + 1; j < n; ++j) pairs += b[i].Intersect(b[j]);
  return pairs;
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t n = argc == 3 ? std::strtoull(argv[1], nullptr, 10) : 0;
  const std::size_t reps = argc == 3 ? std::strtoull(argv[2], nullptr, 10) : 0;
  if (n == 0 || n > 0xffffffffu || reps == 0) {
    std::fprintf(stderr, "usage: compare N REPS (N, REPS >= 1)\n");
    return 2;
  }
  const hhg::scenes::thesis_scenario<3, double> scene(hhg::scenes::named_scenario_params("terdiman", n, 1));
  const std::vector<hhg::box<3, double>> boxes(scene.boxes().begin(), scene.boxes().end());

  // one box more than n: his code loads the last box's mMax with a 4-float SIMD load
  std::vector<AABB> his_boxes(n + 1);
  for (std::size_t i = 0; i < n; ++i) {
    const hhg::box<3, double>& b = boxes[i];
    his_boxes[i].mMin = {round_down(b.min[0]), round_down(b.min[1]), round_down(b.min[2])};
    his_boxes[i].mMax = {round_up(b.max[0]), round_up(b.max[1]), round_up(b.max[2])};
  }
  his_boxes[n] = his_boxes[n - 1];
  const udword his_n = static_cast<udword>(n);
  std::vector<hhg::box<3, float>> float_boxes(n);
  for (std::size_t i = 0; i < n; ++i) {
    const AABB& b = his_boxes[i];
    float_boxes[i].min = {b.mMin.x, b.mMin.y, b.mMin.z};
    float_boxes[i].max = {b.mMax.x, b.mMax.y, b.mMax.z};
  }

  hhg::serial_executor one;
  Container his_pairs;
  std::vector<hhg::handle_pair> reused;
  std::vector<double> his, total, total_reused, total_float;
  std::size_t pairs_his = 0, pairs_hhg = 0, pairs_float = 0;
  const auto run_his = [&] {
    his_pairs.Reset();
    const auto t0 = clock_type::now();
    CompleteBoxPruning(his_n, his_boxes.data(), his_pairs);
    his.push_back(ms_since(t0));
    pairs_his = his_pairs.GetNbEntries() / 2;
  };
  // one one-shot: a new structure on one thread, insert(span), find_pairs into
  // `out` (a new vector, or one reused across repetitions); its time appended to `times`
  const auto one_shot = [&](const auto& bs, std::vector<hhg::handle_pair>& out, std::vector<double>& times) {
    using T = typename std::decay_t<decltype(bs)>::value_type::scalar;
    const auto t0 = clock_type::now();
    hhg::hash_grids<3, T> m;
    m.set_executor(&one);
    const std::vector<hhg::handle> hs = m.insert(std::span<const hhg::box<3, T>>(bs));
    m.find_pairs(out);
    times.push_back(ms_since(t0));
    return out.size();
  };
  const auto run_hhg = [&] {
    std::vector<hhg::handle_pair> fresh, fresh_float;
    pairs_hhg = one_shot(boxes, fresh, total);
    one_shot(boxes, reused, total_reused);
    pairs_float = one_shot(float_boxes, fresh_float, total_float);
  };
  for (std::size_t r = 0; r < reps; ++r) {
    if (r % 2 == 0) {
      run_his();
      run_hhg();
    } else {
      run_hhg();
      run_his();
    }
  }

  std::printf("n=%zu reps=%zu pairs_his=%zu pairs_hhg=%zu pairs_hhg_float=%zu", n, reps, pairs_his, pairs_hhg,
              pairs_float);
  int status = pairs_float == pairs_his ? 0 : 1;
  if (n <= 20000) {
    const std::size_t expected = brute_force_pairs(his_boxes, n);
    std::printf(" pairs_brute_float=%zu", expected);
    if (expected != pairs_his) status |= 2;
  }
  std::printf(
      " his_median_ms=%.3f his_min_ms=%.3f hhg_total_median_ms=%.3f hhg_total_min_ms=%.3f"
      " hhg_reused_median_ms=%.3f hhg_reused_min_ms=%.3f"
      " total_over_his_median=%.3f reused_over_his_median=%.3f total_over_his_min=%.3f reused_over_his_min=%.3f"
      " hhg_float_median_ms=%.3f hhg_float_min_ms=%.3f float_over_his_median=%.3f float_over_his_min=%.3f\n",
      median(his), minimum(his), median(total), minimum(total), median(total_reused), minimum(total_reused),
      median(total) / median(his), median(total_reused) / median(his), minimum(total) / minimum(his),
      minimum(total_reused) / minimum(his), median(total_float), minimum(total_float),
      median(total_float) / median(his), minimum(total_float) / minimum(his));
  if (status & 1) std::fprintf(stderr, "compare: hhg's pair count on his float boxes differs from his\n");
  if (status & 2) std::fprintf(stderr, "compare: his pair count differs from the brute force on the float boxes\n");
  if (status != 0) return 1;
  return 0;
}
