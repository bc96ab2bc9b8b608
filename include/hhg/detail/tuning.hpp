// hhg/detail/tuning.hpp: the hash grid's internal thresholds and path
// counters (not public API: for tests and benchmarks, which force and count
// every path; see docs/hash_grids.md, "Paths").
#pragma once

#include <cstddef>
#include <cstdint>

namespace hhg::detail {

// Every threshold that chooses between paths, in one place. The defaults are
// the measured ones (docs/hash_grids.md, "Paths"); tests set them to force
// every path at small sizes (hash_grids::set_tuning).
struct tuning {
  // detection
  std::uint32_t flat_cell = 4;   // a cell of more objects is crowded: each object tested only against what it reaches
  std::size_t crowded_grid = 8;  // more objects per occupied cell: the grid takes the lookup walk
  std::size_t displaced_share = 4;  // more than 1/4 of an ordered grid's objects displaced: the lookup walk
  std::size_t searched_share = 2;   // > 1/2 of an ordered grid's cells in searched rows: lookup walk (0: never)
  std::size_t row_cells = 4;        // an ordered grid of fewer cells than this a row on average: lookup walk (0: never)
  std::size_t compact_min = 4096;   // a grid of fewer objects is never compacted
  std::size_t compact_ratio = 8;    // compacted when more than 1/8 of its objects were written out of order
  std::size_t chunk_cells = 2048;   // cells of a within-grid detection chunk
  std::size_t reserve_estimate_min = 32768;  // a first find_pairs over this many objects sizes its output
  std::size_t chunk_objects = 4096;          // finer-grid objects of an across-grid chunk
  std::size_t apart_index_min = 8;  // this many objects kept apart or more: paired through their index (apart.hpp)
  // update
  std::size_t batch_two_pass = 4096;      // a batch move of fewer objects goes one by one, in order
  std::size_t bulk_min = 256;             // a batch of fewer moves is never a bulk move (nor a bulk insert)
  std::size_t bulk_rows_min = 4096;       // a smaller one is only when the last detection found dense rows
  std::size_t bulk_changed_ratio = 1000;  // bulk move when >= 1/1000 of the last batch changed cell (docs: Batch moves)
  std::size_t chunk_moves = 16384;        // moves of a bulk-move chunk
  std::size_t merge_ratio =
      8;  // the bulk move merges the cell changes into the last order when <= 1/8 changed cell last batch (0: never)
  // levels
  int axis_scale_max_log2 = 5;  // a batch's cells may be up to 2^5 times shorter on some axes (0: cubes)
  int spread_max_log2 = 10;     // a batch's first level may get cells up to 2^10 times its objects' (0: never)
};

// How often each path ran (since construction or the last reset); tests
// assert that the path they are named after ran.
struct path_counters {
  std::uint64_t walk_ordered = 0, walk_unordered = 0, walk_displaced = 0, walk_across = 0;
  std::uint64_t walk_across_rows = 0;    // walks across grids into a coarser grid through its row index (across.hpp)
  std::uint64_t sparse_rows_lookup = 0;  // ordered grids on the lookup walk: cells in searched rows, or few a row
  std::uint64_t cells_flat = 0, cells_crowded = 0, rows_searched = 0;
  std::uint64_t cells_grouped = 0;  // crowded cells of the ordered walk, tested in groups of up to 4 objects
  std::uint64_t rows_uniform = 0;   // ordered walks whose rows were indexed over the grid's whole x range
  std::uint64_t compactions = 0;
  std::uint64_t batch_one_by_one = 0, batch_two_pass = 0, batch_bulk = 0, bulk_inserts = 0;
  std::uint64_t batch_merged = 0;      // bulk moves that merged the objects that changed cell into the last order
  std::uint64_t bulk_activations = 0;  // insert(span) into an empty structure: activated with no object, all in bulk
  std::uint64_t batch_in_place = 0;    // two-pass batches whose first pass ran in pool order (consecutive slots)
  std::uint64_t rebuilds = 0, grid_growths = 0;
  std::uint64_t parallel_detections = 0;
  std::uint64_t apart_index = 0;        // detections that paired the objects kept apart through their index
  std::uint64_t slots_retired = 0;      // slots never reused again: their generation would have wrapped
  std::uint64_t ladders_estimated = 0;  // batches whose ladder factor was chosen by estimate (config::adaptive_factor)
  std::uint64_t levels_spread = 0;      // batches whose first level got cells larger than its objects (spread_for)
  std::uint64_t spread_checks = 0;      // detections that sampled how crowded such a level's cells are (check_spread)
  std::uint64_t spread_undone = 0;      // such levels built again with cells of their objects' size (crowded)
  std::uint64_t axes_scaled = 0;   // batches whose cells got per-axis edges (levels.hpp, axis_scale_for), reshapes too
  std::uint64_t reshapes = 0;      // grids built again: the objects left the shape their scales were chosen for
  std::uint64_t shape_checks = 0;  // detections that sampled the objects' shape (a scale not 1; state.hpp, check_shape)
  std::uint64_t outputs_estimated = 0;  // find_pairs calls that sized their output from a sample (no earlier count)
  std::uint64_t settles = 0;  // slots' pool positions written after bulk moves that left them (state.hpp, settle)
};

}  // namespace hhg::detail
