// Compiled with -Dhhg=hhg_other and HHG_BENCH_OTHER_FLAGS (see other_build.hpp).
#include "other_build.hpp"

#include <chrono>
#include <memory>
#include <span>
#include <vector>

#include "hhg/hash_grids.hpp"

namespace other_build {

using box3 = hhg::box<3, double>;
static_assert(sizeof(box3) == 6 * sizeof(double));

struct grid {
  hhg::hash_grids<3, double> g;
  std::vector<hhg::handle> hs;
  std::vector<hhg::handle_pair> pairs;
};

grid* create(const double* boxes, std::size_t n, const double* more, std::size_t k) {
  auto s = std::make_unique<grid>();  // (freed if an insert throws)
  s->hs = s->g.insert(std::span<const box3>(reinterpret_cast<const box3*>(boxes), n));
  for (std::size_t i = 0; i < k; ++i) s->g.insert(reinterpret_cast<const box3*>(more)[i]);
  s->g.find_pairs(s->pairs);
  return s.release();
}

std::size_t step(grid* s, const double* boxes, std::size_t n, double* update_ms, double* detect_ms) {
  using clk = std::chrono::steady_clock;
  const auto a = clk::now();
  s->g.move(std::span<const hhg::handle>(s->hs), std::span<const box3>(reinterpret_cast<const box3*>(boxes), n));
  s->g.update();  // (as hhg_paired's other lanes: a no-op for the default strategy)
  const auto b = clk::now();
  s->g.find_pairs(s->pairs);
  const auto c = clk::now();
  *update_ms = std::chrono::duration<double, std::milli>(b - a).count();
  *detect_ms = std::chrono::duration<double, std::milli>(c - b).count();
  return s->pairs.size();
}

void destroy(grid* s) noexcept { delete s; }

const char* flags() noexcept { return HHG_OTHER_FLAGS; }

}  // namespace other_build
