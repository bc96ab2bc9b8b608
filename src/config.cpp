// Validation of hhg::config: every field against its documented range.
#include "hhg/config.hpp"

#include <cmath>
#include <string>

#include "hhg/error.hpp"

namespace hhg {

namespace {
[[noreturn]] void bad(const std::string& what) { throw error(errc::bad_config, "hhg: config: " + what); }
bool power_of_two(std::uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }
}  // namespace

void validate_config(const config& c) {
  if (!(c.hierarchy_factor > 1.0) || !std::isfinite(c.hierarchy_factor))
    bad("hierarchy_factor must be a finite number > 1, got " + std::to_string(c.hierarchy_factor));
  for (int i = 0; i < 3; ++i) {
    const std::uint32_t n = c.initial_cells[i];
    if (!power_of_two(n) || n < 4 || n > (1u << 15))
      bad("initial_cells[" + std::to_string(i) + "] must be a power of two in [4, 32768], got " + std::to_string(n));
  }
  if (c.minimal_grid_density < 1) bad("minimal_grid_density must be >= 1, got 0");
  if (c.cell_capacity < 1 || c.cell_capacity > (1u << 16))
    bad("cell_capacity must be in [1, 65536], got " + std::to_string(c.cell_capacity));
  if (c.growth != growth_rule::by_occupancy && c.growth != growth_rule::every_axis)
    bad("growth is not a known growth_rule");
  if (c.strategy != update_strategy::incremental && c.strategy != update_strategy::rebuild)
    bad("strategy is not a known update_strategy");
}

}  // namespace hhg
