// hhg/stats.hpp: statistics a user can read from a structure.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace hhg {

/// One grid level of the hierarchy.
struct grid_statistics {
  /// The size class: objects whose longest edge (scaled, see cell_edges) is
  /// below it. The edge of a cell on every axis unless cell_edges differ.
  double cell_size = 0;
  /// Edge length of a cell per axis ([2] = 0 in 2D): cell_size on every axis,
  /// unless the batch that activated the grids held objects longer on some
  /// axes than on others (10x1x1 boxes along x: 1 x 8 x 8 shorter cells on
  /// y and z, docs/hash_grids.md, Levels).
  std::array<double, 3> cell_edges{};
  std::array<std::uint32_t, 3> cells_per_axis{};  ///< power of two each; [2] = 1 in 2D
  std::uint64_t cell_count = 0;                   ///< product of cells_per_axis
  std::size_t objects = 0;                        ///< objects assigned to this grid
  std::size_t occupied_cells = 0;                 ///< cells holding at least one object
  std::size_t bytes = 0;                          ///< memory held by this grid
};

struct statistics {
  std::size_t objects = 0;  ///< all objects
  /// objects kept apart (hash grid): an infinite coordinate, too large for
  /// any level, or past the last free level
  std::size_t unbounded_objects = 0;
  std::size_t list_objects = 0;        ///< bounded objects in the all-pairs list (grids inactive)
  bool grids_active = false;           ///< the activation threshold was exceeded
  std::vector<grid_statistics> grids;  ///< ascending cell size
  std::size_t bytes = 0;               ///< all memory held by the structure (capacities)
  std::uint64_t box_tests = 0;         ///< box overlap tests done by the last detection
  std::uint64_t cells_visited = 0;     ///< occupied cells looked at by the last detection
  std::uint64_t pairs = 0;             ///< pairs reported by the last detection
  std::uint64_t compactions = 0;       ///< grid storage rebuilds in cell order so far (hash_grids.md, Compaction)
};

}  // namespace hhg
