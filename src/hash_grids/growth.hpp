// Growth (thesis section 3.4): a grid holding more than cells / density
// objects gets 2^D times the cells and rehashes its objects; which axes get
// them is config::growth (every_axis, or by_occupancy: where the objects
// spread, shape_for). Used by every insertion path and after a bulk move
// (relayout.hpp); the bulk insert sizes empty grids with the same rule.
#pragma once

#include "hash_grids/state.hpp"

namespace hhg {
namespace detail {

// Section 3.4: grow when objects > cells / density. Called before an object
// is added (`extra` = 1), so that a growth that runs out of memory fails the
// insert before anything changed. The cell count is multiplied by 2^D as
// often as needed at once (the thesis' steps, so every rule ends with the
// same count); which axes get the cells is config::growth (every_axis: each
// axis doubles; by_occupancy: shape_for, from the objects' extent per axis).
// by_occupancy also reshapes a grid, keeping its cell count, when called
// after a bulk move (`extra` = 0) and its occupied cells have collapsed
// (more than density objects per occupied cell) while the objects' extent
// says another shape would spread them over at least twice the cells: the
// shape chosen for a scene that then spreads along another axis follows it.
template <int D, class T>
void hash_grids_state<D, T>::maybe_grow(std::uint32_t gid, std::size_t extra) {
  grid& g = grids[gid];
  const std::uint64_t cells = g.cell_count();
  const bool by_occupancy = cfg.growth == growth_rule::by_occupancy;
  const bool over = g.objects + extra > cells / cfg.minimal_grid_density;
  if (!over) {
    // (reshape check: a crowded grid after a bulk move, by_occupancy only)
    if (!by_occupancy || extra != 0 || g.objects < kReshapeMin ||
        g.objects <= static_cast<std::size_t>(cfg.minimal_grid_density) * g.occupied.size())
      return;
  }
  std::uint32_t total = code_bits(g);
  while (g.objects + extra > (std::uint64_t{1} << total) / cfg.minimal_grid_density && total + D <= 31) total += D;
  if (over && total == code_bits(g)) return;  // codes are 32-bit: a grid stops growing at 2^31 cells
  std::array<std::uint32_t, D> bits = g.bits;
  if (by_occupancy) {
    // The extent of the objects of every stride-th occupied cell (read in
    // place): all of them for a growth; for the reshape check of a crowded
    // grid, which runs after every bulk move, about 2^12 cells (up to 4
    // objects each) first, and all of them only when that sample says a
    // reshape pays.
    auto measure = [&](std::size_t stride, std::uint32_t per_cell) {
      axis_extent ext;
      for (std::size_t c = 0; c < g.occupied.size(); c += stride) {
        const occupied_cell& oc = g.occupied[c];
        for (std::uint32_t j = 0; j < std::min(oc.count, per_cell); ++j)
          for (int i = 0; i < D; ++i)
            ext.add(i, floor_to_int(static_cast<double>(g.pool[oc.block + j].min(i)) * g.inv[i]));
      }
      return ext;
    };
    if (!over) {
      const axis_extent sample = measure(std::max<std::size_t>(1, g.occupied.size() >> 12), 4);
      if (!(spread_of(sample, shape_for(sample, total)) >= 2 * spread_of(sample, g.bits))) return;  // would not pay
    }
    const axis_extent ext = measure(1, std::numeric_limits<std::uint32_t>::max());
    bits = shape_for(ext, total);
    if (!over && !(spread_of(ext, bits) >= 2 * spread_of(ext, g.bits))) return;
  } else {
    for (int i = 0; i < D; ++i) bits[i] += (total - code_bits(g)) / D;
  }
  // (memory running out in reshape_grid leaves the grid as it was: the insert fails cleanly)
  std::vector<entry> all;  // growth is rare: a local buffer keeps no memory afterwards
  all.reserve(g.objects);
  gather(g, all);
  reshape_grid(gid, bits, all);
  paths.grid_growths += over;
}

// Gives grid gid `bits` cells per axis and adds its objects `all` (gathered
// from it) again. If memory runs out, the old grid is put back (and the
// slots pointed at it again), so the structure is exactly as before, and
// the error propagates.
template <int D, class T>
void hash_grids_state<D, T>::reshape_grid(std::uint32_t gid, const std::array<std::uint32_t, D>& bits,
                                          const std::vector<entry>& all) {
  grid& g = grids[gid];
  grid old = g;  // a copy: the fallback
  try {
    for (int i = 0; i < D; ++i) {
      g.bits[i] = bits[i];
      g.mask[i] = (1u << g.bits[i]) - 1;
    }
    reset_grid(g);
    for (const entry& e : all) {
      prepare_add(gid, cell_of(g, e));
      add_to_grid(gid, e);
    }
  } catch (const std::bad_alloc&) {
    grids[gid] = std::move(old);
    repoint_grid(gid);
    throw;
  }
}

// growth_rule::by_occupancy: the grid's shape from where its objects are.
// Cell sizes do not change with growth, only the cells per axis (the modulo
// of the hashing): objects whose cell coordinates on axis i differ by a
// multiple of the cells on i share cells. An axis along which the objects'
// min corners span E cells is covered by S = E + 1 cells (the + 1: an object
// reaches into the next cell); with 2^b cells on it, the objects take about
// min(2^b, S) distinct coordinates there, and more cells separate nothing.
// shape_for spends the `total` code bits so as to maximize the product of
// those counts (spread_of): every axis starts at 4 cells (the minimum:
// distinct neighbours), then each bit goes to the axis that gains the most
// (a factor 2 while 2^(b+1) <= S, less for the last, partial doubling, 1
// beyond), among axes within 1 % of the best to the one with the fewest
// cells, then the lower one. The log of each count is concave in b, so the
// greedy choice is the best product; bits that gain nothing anywhere go to
// the axis with the fewest cells (room for a later spread). Objects that
// fill a cube-like domain get the thesis' even shape; a channel along x gets
// its cells along x (the thesis' uneven domain at 10^6: 16384 x 32 x 32
// instead of 256^3); the product is never below the even shape's. One pass
// over the objects' min corners.
template <int D, class T>
std::array<std::uint32_t, D> hash_grids_state<D, T>::shape_for(const axis_extent& ext, std::uint32_t total) {
  constexpr std::uint32_t kMinBits = 2;
  std::array<double, D> span{};
  std::array<std::uint32_t, D> bits{};
  for (int i = 0; i < D; ++i) {
    span[i] = ext.lo[i] <= ext.hi[i] ? static_cast<double>(ext.hi[i] - ext.lo[i]) + 2 : 1;
    bits[i] = kMinBits;
  }
  for (std::uint32_t left = total > D * kMinBits ? total - D * kMinBits : 0; left > 0; --left) {
    std::array<double, D> gain{};
    double best = 0;
    for (int i = 0; i < D; ++i) {
      const double now = std::ldexp(1.0, static_cast<int>(bits[i]));
      gain[i] = std::min(2 * now, span[i]) / std::min(now, span[i]);
      best = std::max(best, gain[i]);
    }
    int pick = -1;
    for (int i = 0; i < D; ++i)
      if (gain[i] >= 0.99 * best && (pick < 0 || bits[i] < bits[pick])) pick = i;
    ++bits[pick];
  }
  return bits;
}

// The product over the axes of min(cells, S) (see shape_for): about how many
// distinct cells objects spread over the extent take with `bits` cells per axis.
template <int D, class T>
double hash_grids_state<D, T>::spread_of(const axis_extent& ext, const std::array<std::uint32_t, D>& bits) {
  double s = 1;
  for (int i = 0; i < D; ++i) {
    const double span = ext.lo[i] <= ext.hi[i] ? static_cast<double>(ext.hi[i] - ext.lo[i]) + 2 : 1;
    s *= std::min(span, std::ldexp(1.0, static_cast<int>(bits[i])));
  }
  return s;
}

template <int D, class T>
void hash_grids_state<D, T>::add_extent(const grid& g, const std::vector<entry>& all, axis_extent& ext) {
  for (const entry& e : all)
    for (int i = 0; i < D; ++i) ext.add(i, floor_to_int(static_cast<double>(e.min(i)) * g.inv[i]));
}

}  // namespace detail
}  // namespace hhg
