// The walk across grids (Algorithm 4, second part): every object of a finer
// grid against the cells of a coarser grid that can hold an overlapping
// object (at most 3 per axis). Prepared once per pair of live grids (keys:
// the coarser cell of each finer object's min corner, radix-sorted), then
// walked in chunks of keys; a group of objects sharing a coarser cell that a
// chunk boundary cuts is gathered by both chunks (correct, a little more work).
#pragma once

#include "hash_grids/kernel.hpp"

namespace hhg {
namespace detail {

template <int D, class T>
struct across_walk : grid_types<D, T> {
  using base = grid_types<D, T>;
  using base::axis_term;
  using base::cell_and_reach;
  using base::code_bits;
  using base::kLocalBits;
  using base::kLocalMask;
  using typename base::entry;
  using typename base::grid;
  using typename base::occupied_cell;
  using typename base::query;
  using W = detect_worker<D, T>;

  struct pair_job {
    std::uint32_t fine = 0, coarse = 0;   // grid ids
    big_vector<std::uint64_t> keys, tmp;  // (cell in the coarser grid, entry of the finer one); tmp: sort scratch
    big_vector<std::uint8_t> beyond;      // by pool position in the finer grid: the reach into the coarser grid
    std::size_t bytes() const { return capacity_bytes(keys) + capacity_bytes(tmp) + capacity_bytes(beyond); }
  };

  // Every object of grid live_levels[li] against the coarser grid
  // live_levels[lj] (Algorithm 4's second part). The objects are visited in
  // the order of the cell of h that holds their min corner, so the lookups
  // and blocks of h are read in h's memory order: walking the finer grid in
  // its own order jumps around h, because grids have different numbers of
  // cells per axis and so alias space differently (measured at 10^6 objects
  // with sizes over a factor 12, together with the shared gathering below:
  // detection 556 -> 370 ms). The scratch is 16 bytes per object of the
  // finer grid, kept for the next detection.
  // Two steps: the keys (prepare, one task per grid pair), then their sort
  // (sort, on every worker: detection.hpp runs it after the tasks).
  static void prepare(const grid& g, const grid& h, pair_job& j) {
    auto& across = j.keys;
    across.clear();
    if (across.capacity() < g.objects) across.reserve(g.objects + g.objects / 16);
    if (j.beyond.size() < g.pool.size()) resize_scratch(j.beyond, g.pool.size());
    for (const occupied_cell& oc : g.occupied)
      for (std::uint32_t k = 0; k < oc.count; ++k) {
        const std::uint32_t at = oc.block + k;
        std::uint32_t reach;
        const std::uint32_t code = cell_and_reach(h, g.pool[at].box(), reach);
        across.push_back(std::uint64_t{code} << 32 | at);
        j.beyond[at] = static_cast<std::uint8_t>(reach);
      }
  }
  static void sort(executor* exec, std::size_t chunk_items, const grid& h, pair_job& j) {
    parallel_radix_sort(exec, chunk_items, j.keys, j.tmp, code_bits(h),
                        [](std::uint64_t v) { return static_cast<std::uint32_t>(v >> 32); });
  }

  template <class Sink>
  static void walk(const grid& g, const grid& h, pair_job& job, std::size_t k0, std::size_t k1, W& w, Sink& sink) {
    // Objects whose min corner is in the same cell b of h (a group) share
    // the cells of h they can meet: per axis b - 1 and b, and b + 1 for an
    // object whose box reaches into it (its beyond mask). The cells are
    // looked up and gathered once per group, in segments by the axes on which
    // they lie at b + 1 (segment v: exactly the axes in v), only for the
    // segments some object of the group reaches, with the reach filter (an
    // object of h in cell b - 1 on an axis must reach into the next cell on
    // it). Each object is tested against the segments its own mask allows:
    // segment 0 (cells b - 1 .. b) always. Visiting the b + 1 cells object by
    // object instead, as before, looked each of them up again for every
    // object reaching it and waited for each lookup in turn.
    constexpr std::uint32_t kSubsets = 1u << D;
    const big_vector<std::uint64_t>& across = job.keys;
    constexpr std::uint32_t kAll = kSubsets - 1;
    const entry* pool = g.pool.data();
    const occupied_cell* occ = h.occupied.data();
    const entry* hpool = h.pool.data();
    const std::uint32_t* dir = h.dir.data();
    const std::uint32_t* bricks = h.bricks.data();
    std::array<std::uint32_t, D> am{};  // the code bits of each axis
    for (int i = 0; i < D; ++i) am[i] = axis_term(h, i, h.mask[i]);
    const std::size_t n = k1;  // (a group is cut at the chunk's end: the next chunk takes the rest)
    const std::uint8_t* beyond = job.beyond.data();  // by pool position in g (computed with the keys)
    for (std::size_t k = k0; k < n;) {
      const std::uint32_t base = static_cast<std::uint32_t>(across[k] >> 32);
      std::size_t end = k + 1;
      while (end < n && static_cast<std::uint32_t>(across[end] >> 32) == base) ++end;
      std::uint32_t group_mask = 0;  // (the beyond mask is an object's reach in h: its min corner is in b)
      for (std::size_t j = k; j < end; ++j) group_mask |= beyond[static_cast<std::uint32_t>(across[j])];
      // per axis the code terms of cells b - 1, b, b + 1 (dilated arithmetic, see detect_grid)
      std::array<std::array<std::uint32_t, 3>, D> term;
      for (int i = 0; i < D; ++i) {
        const std::uint32_t t1 = base & am[i];
        term[i] = {(t1 - 1) & am[i], t1, ((t1 | ~am[i]) + 1) & am[i]};
      }
      constexpr std::uint32_t kMaxCells = D == 3 ? 27 : 9;
      std::array<std::uint32_t, kMaxCells> first, counts, need;
      std::array<std::uint32_t, kSubsets + 1>
          cell_start{};  // the cells of segment v: [cell_start[v], cell_start[v + 1])
      std::uint32_t cells = 0, total = 0, visited = 0;
      for (std::uint32_t v = 0; v < kSubsets; ++v) {  // v: the axes at b + 1
        cell_start[v] = cells;
        if ((v & ~group_mask) != 0) continue;
        for (std::uint32_t c = 0; c < kSubsets; ++c) {  // c: of the other axes, those at b (not b - 1)
          if ((c & v) != 0) continue;
          std::uint32_t code = 0;
          for (int i = 0; i < D; ++i) code |= term[i][(v >> i) & 1u ? 2 : (c >> i) & 1u];
          const std::uint32_t r = bricks[(dir[code >> kLocalBits] << kLocalBits) | (code & kLocalMask)];
          const std::uint32_t hit = r != 0;
          const occupied_cell& nb = occ[r - hit];  // occ[0] when empty, masked
          counts[cells] = nb.count & (0u - hit);
          first[cells] = nb.block;
          need[cells] = ~(v | c) & kAll;
          total += counts[cells];
          visited += hit;
          ++cells;
        }
      }
      cell_start[kSubsets] = cells;
      w.cells_visited += visited;
      if (end - k == 1) {  // one object: tested in place, nothing to share
        if (k + 8 < n) __builtin_prefetch(pool + static_cast<std::uint32_t>(across[k + 8]));
        const entry& a = pool[static_cast<std::uint32_t>(across[k])];
        const query qa(a);
        w.box_tests += total;
        for (std::uint32_t cell = 0; cell < cells; ++cell) {
          const entry* src = hpool + first[cell];
          const std::uint32_t nd = need[cell];
          for (std::uint32_t j = 0; j < counts[cell]; ++j)
            if (qa.hits(src[j]) && (src[j].reach() & nd) == nd) [[unlikely]]
              sink(a.user_handle(), src[j].user_handle());
        }
        k = end;
        continue;
      }
      std::array<std::uint32_t, kSubsets + 1> start{};  // the candidates of segment v: [start[v], start[v + 1])
      if (total != 0) {
        if (w.cand.size() < total) w.cand.resize(std::max<std::size_t>(total, 2 * w.cand.size()));
        entry* out = w.cand.data();
        for (std::uint32_t v = 0; v < kSubsets; ++v) {
          start[v] = static_cast<std::uint32_t>(out - w.cand.data());
          for (std::uint32_t cell = cell_start[v]; cell < cell_start[v + 1]; ++cell) {
            const entry* src = hpool + first[cell];
            const std::uint32_t nd = need[cell];
            for (std::uint32_t j = 0; j < counts[cell]; ++j) {
              *out = src[j];
              out += (src[j].reach() & nd) == nd;
            }
          }
        }
        start[kSubsets] = static_cast<std::uint32_t>(out - w.cand.data());
      }
      const entry* cs = w.cand.data();
      for (std::size_t j = k; j < end; ++j) {
        if (j + 8 < n) __builtin_prefetch(pool + static_cast<std::uint32_t>(across[j + 8]));
        if (total == 0) continue;
        const entry& a = pool[static_cast<std::uint32_t>(across[j])];
        const std::uint32_t m = beyond[static_cast<std::uint32_t>(across[j])];
        const query qa(a);
        for (std::uint32_t v = 0; v < kSubsets; ++v) {
          if ((v & ~m) != 0) continue;
          const std::uint32_t lo = start[v], hi = start[v + 1];
          w.box_tests += hi - lo;
          for (std::uint32_t t = lo; t < hi; ++t)
            if (qa.hits(cs[t])) [[unlikely]]
              sink(a.user_handle(), cs[t].user_handle());
        }
      }
      k = end;
    }
  }
};

}  // namespace detail
}  // namespace hhg
