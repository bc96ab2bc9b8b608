// hhg/config.hpp: run-time configuration of the hierarchical hash grid.
//
// Every constant of the thesis (Schornbaum 2009, section 3) and of waLBerla's
// HashGrids is a field here. Behavioural constants keep the thesis defaults, except the hierarchy factor
// (see hierarchy_factor).
// The two storage-capacity hints (cellVectorSize, occupiedCellsVectorSize) are
// kept as settings but hhg's default cell capacity differs from the thesis:
// see docs/hash_grids.md, "Memory layout".
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace hhg {

/// How the structure follows moving objects (thesis section 2.6, Fig. 25).
enum class update_strategy {
  /// Algorithm 2: a moved object is rehashed; it changes cell or grid only if
  /// it must. An object that stays in its cell costs a hash and a compare.
  incremental,
  /// The naive alternative: every update() clears all cells and reinserts all
  /// objects. Kept so the benchmark can compare the two.
  rebuild,
};

/// Which axes get a growing grid's cells (thesis section 3.4; docs/hash_grids.md, Growth).
/// Both rules reach the same cell count (cells / objects >= minimal_grid_density).
enum class growth_rule {
  /// The thesis: every axis doubles.
  every_axis,
  /// Default. The cells per axis follow the objects' extent per axis: an axis
  /// gets about as many cells as the objects' min corners span on it (more
  /// separate nothing under the modulo mapping), the rest go evenly. Objects
  /// that fill a cube-like domain get every_axis' shape; a domain 1024 times
  /// longer in x (the thesis' uneven scene) gets its cells along x (3.3x faster
  /// steps at 10^6). A grid whose objects later crowd few cells is
  /// reshaped (same cell count) after a bulk move.
  by_occupancy,
};

struct config {
  /// Ratio of the cell sizes of two successive grid levels (thesis f_hierarchy,
  /// waLBerla hierarchyFactor). Must be > 1 and finite. Default 4, where the
  /// thesis uses 2: each level costs every finer object a walk through its
  /// cells, and at 10^6 objects fewer levels win (sizes uniform over a factor
  /// 12: 369 -> 230 ms a step; log-uniform over 1 to 1000: 889 -> 532 ms;
  /// equal sizes: one level either way). With adaptive_factor, the smallest
  /// ratio: a batch may get a larger one. docs/hash_grids.md, Levels.
  double hierarchy_factor = 4.0;

  /// Default true. When one insert of a span of boxes activates the grids
  /// (takes the structure past activation_threshold objects; all_pairs and
  /// `hhg pairs` do), the levels that the batch's sizes span are
  /// hierarchy_factor times a power of two apart: the
  /// one with the least detection cost estimated on a sample of the batch
  /// (an object pays a walk per coarser level; objects sharing a cell pay a
  /// test per pair). Sizes uniform over 1 to 12 then share one level (177 ->
  /// 126 ms a step at 10^6), sizes log-uniform over 1 to 1000 too (460 ->
  /// 131 ms), while small objects that would crowd a large object's cells
  /// keep their own level. Levels created later for sizes outside the
  /// batch's range are hierarchy_factor apart. Objects inserted one by one,
  /// or false: always hierarchy_factor.
  bool adaptive_factor = true;

  /// Number of cells per axis of a newly created grid (waLBerla x/y/zCellCount).
  /// Each must be a power of two, at least 4 (so every cell has distinct
  /// neighbours under the modulo mapping) and at most 2^15. In 2D the third
  /// value is not used, but validate_config checks all three values (leave it
  /// at a valid value such as the default). Default 16 x 16 x 16.
  std::array<std::uint32_t, 3> initial_cells = {16, 16, 16};

  /// A grid grows (its cell count is multiplied by 2^D, objects are rehashed)
  /// when it holds more objects than cells / minimal_grid_density (waLBerla
  /// minimalGridDensity). Must be >= 1. Default 8.
  std::uint32_t minimal_grid_density = 8;

  /// Which axes get a growing grid's cells. Default growth_rule::by_occupancy.
  growth_rule growth = growth_rule::by_occupancy;

  /// While the structure holds at most this many objects, detection is the
  /// all-pairs test over a flat list; above it the grids are built and used
  /// from then on (irrevocably; waLBerla gridActivationThreshold). Any value
  /// (SIZE_MAX: never use grids). Default 32.
  std::size_t activation_threshold = 32;

  /// Initial object capacity of a cell (waLBerla cellVectorSize, thesis 16).
  /// hhg stores a cell's objects in a block of a per-grid pool whose
  /// capacities step through 1, 2, 3, 4, 6, 8, 12, 16, 24, ... (factors 1.33
  /// to 1.5; a full block moves up one step), so a large reservation only
  /// costs memory; default 1. Must be >= 1 and <= 2^16. Rounded up to the next
  /// capacity of that ladder.
  std::uint32_t cell_capacity = 1;

  /// Initial capacity of each grid's list of occupied cells (waLBerla
  /// occupiedCellsVectorSize). Any value. Default 256.
  std::uint32_t occupied_cells_capacity = 256;

  /// See update_strategy. Default incremental (Algorithm 2).
  update_strategy strategy = update_strategy::incremental;
};

/// Throws hhg::error(errc::bad_config) naming the first bad field.
void validate_config(const config& c);

}  // namespace hhg
