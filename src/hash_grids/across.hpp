// The walk across grids (Algorithm 4, second part): every object of a finer
// grid against the cells of a coarser grid that can hold an overlapping
// object (at most 3 per axis). Prepared once per pair of live grids (keys:
// the coarser cell of each finer object's min corner, radix-sorted), then
// walked in chunks of keys; a group of objects sharing a coarser cell that a
// chunk boundary cuts is gathered by both chunks (correct, a little more work).
// Two walks: through the coarser grid's row index when it takes the ordered
// walk with no displaced cells (walk_rows), else with lookups of its cells
// (walk). Both find every pair once, in key order.
#pragma once

#include "hash_grids/walks.hpp"

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

  using GW = grid_walks<D, T>;
  using grid_job = typename GW::grid_job;
  using row_info = typename GW::row_info;

  struct pair_job {
    std::uint32_t fine = 0, coarse = 0;   // grid ids
    std::uint32_t coarse_job = 0;         // the coarser grid's walk (detection.hpp's grid jobs)
    bool rows = false;                    // walked through the coarser grid's rows (walk_rows), else walk
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

  // The walk across into a coarser grid laid out in code order, with no
  // displaced cells (its row index, walks.hpp, covers all of its cells): a
  // group's cells of h in one row of h (x = b - 1 .. b + 1) are one stretch
  // of h's pool (gaps hold sentinels), found with two reads of the row's
  // positions, and the rows of consecutive groups are the same until the
  // group's row changes (b's y or z). Each object of the finer grid is
  // tested against the stretches its reach allows (x + 1 and the rows at
  // y + 1 or z + 1 only when it reaches them), the objects of h without a
  // reach filter (the box test rejects them).
  template <bool Uniform, class Sink>
  static void walk_rows(const grid& g, const grid& h, const grid_job& hj, const pair_job& job, std::size_t k0,
                        std::size_t k1, W& w, Sink& sink) {
    constexpr std::uint32_t X = 1, Y = 2, Z = 4;
    constexpr int kRows = D == 3 ? 9 : 3;  // the rows at y - 1 .. y + 1 (and z - 1 .. z + 1)
    const big_vector<std::uint64_t>& across = job.keys;
    const std::uint8_t* beyond = job.beyond.data();
    const entry* pool = g.pool.data();
    const entry* hpool = h.pool.data();
    const big_vector<row_info>& rows = hj.rows;
    const std::uint32_t* row_pos = hj.row_pos.data();
    const std::uint32_t mx = h.mask[0], bx = h.bits[0], my = h.mask[1], by = h.bits[1];
    const std::uint32_t mz = D == 3 ? h.mask[D - 1] : 0;
    const std::int64_t x0 = std::int64_t{hj.xlo} - 1, xw = std::int64_t{hj.width} - 1;  // (uniform)
    std::array<std::size_t, kRows> hint{}, row_hint{};
    std::array<const row_info*, kRows> nb{};
    std::uint32_t row = npos;  // the row of the group before (npos: none yet)
    auto pos = [&](int t, std::int64_t v) -> std::uint32_t {
      if constexpr (Uniform) {
        return row_pos[nb[t]->pos + static_cast<std::size_t>(std::clamp<std::int64_t>(v - x0, 0, xw))];
      } else {
        return GW::position(h, hj, *nb[t], v, row_hint[t]);
      }
    };
    // A row's cells x - 1 .. x of h are the pool stretch [lo, mid), x + 1
    // [mid, hi): an object of g meets those of x + 1 only when it reaches X,
    // and the row only when it reaches `need` (y + 1 or z + 1).
    struct window {
      std::uint32_t lo, mid, hi, need;
    };
    std::array<window, 2 * kRows> win;
    w.start_found();
    for (std::size_t k = k0; k < k1;) {
      const std::uint32_t base = static_cast<std::uint32_t>(across[k] >> 32);
      std::size_t end = k + 1;
      std::uint32_t group_mask = beyond[static_cast<std::uint32_t>(across[k])];
      for (; end < k1 && static_cast<std::uint32_t>(across[end] >> 32) == base; ++end)
        group_mask |= beyond[static_cast<std::uint32_t>(across[end])];
      if ((base & ~mx) != row) {  // a new row: its neighbour rows
        row = base & ~mx;
        const std::uint32_t y = (base >> bx) & my, z = D == 3 ? (base >> (bx + by)) & mz : 0;
        for (int t = 0; t < kRows; ++t) {
          const std::uint32_t ny = (y + static_cast<std::uint32_t>(t % 3 - 1)) & my;
          const std::uint32_t nz = (z + static_cast<std::uint32_t>(t / 3 - 1)) & mz;
          const std::uint32_t code = ny << bx | (D == 3 ? nz << (bx + by) : 0);
          hint[t] = GW::seek_row(rows, hint[t], code);
          nb[t] = hint[t] < rows.size() && rows[hint[t]].code == code ? &rows[hint[t]] : &rows[0];
        }
      }
      // x - 1 wraps to mx at x = 0, x + 1 to 0 at x = mx: a window of its own
      const std::int64_t x = base & mx;
      const bool plus_x = (group_mask & X) != 0;
      std::size_t nw = 0;
      for (int t = 0; t < kRows; ++t) {
        const std::uint32_t need = (t % 3 == 2 ? Y : 0) | (t / 3 == 2 ? Z : 0);
        if ((need & ~group_mask) != 0 || nb[t]->code == npos) continue;
        const std::uint32_t mid = pos(t, x + 1);
        win[nw++] = {pos(t, x - 1), mid, plus_x && x != mx ? pos(t, x + 2) : mid, need};
        if (x == 0) {
          const std::uint32_t b = pos(t, std::int64_t{mx} + 1);
          win[nw++] = {pos(t, mx), b, b, need};
        }
        if (plus_x && x == mx) {
          const std::uint32_t a = pos(t, 0);
          win[nw++] = {a, a, pos(t, 1), need};
        }
      }
      std::uint32_t visited = 0;
      for (std::size_t v = 0; v < nw; ++v) visited += (win[v].mid > win[v].lo) + (win[v].hi > win[v].mid);
      w.cells_visited += visited;
      // Each object of the group against each window's stretch, in place.
      // (Groups of 4 or more objects gathered the candidates once with the
      // reach filter instead, as the lookup walk does: 2.2 times fewer box
      // tests at 3 * 10^5 `log-uniform` with factor 4, but no faster, 56.6
      // against 56.0 ms; with every group of 2 or more, 59-61 ms, and
      // `varied` two levels 33 against 28 ms.)
      for (std::size_t j = k; j < end; ++j) {
        if (j + 8 < k1) __builtin_prefetch(pool + static_cast<std::uint32_t>(across[j + 8]));
        const auto at = static_cast<std::uint32_t>(across[j]);
        const std::uint32_t m = beyond[at];
        const bool reaches_x = (m & X) != 0;
        std::size_t total = 0;
        for (std::size_t v = 0; v < nw; ++v)
          total += (win[v].need & ~m) != 0 ? 0 : (reaches_x ? win[v].hi : win[v].mid) - win[v].lo;
        if (total == 0) continue;
        const entry& a = pool[at];
        w.box_tests += total;
        handle_pair* const fb = w.found_room(sink, total);
        char* to = reinterpret_cast<char*>(fb + w.found_fill);
        const query qa(a);
        const std::uint64_t aid = W::id_word(a);
        for (std::size_t v = 0; v < nw; ++v) {
          if ((win[v].need & ~m) != 0) continue;
          for (std::uint32_t t = win[v].lo, e = reaches_x ? win[v].hi : win[v].mid; t < e; ++t) {
            const std::size_t hit = qa.hit_bytes(hpool[t]);  // (read before the pair is written)
            W::put_pair(to, aid, W::id_word(hpool[t]));
            to += hit;
          }
        }
        w.found_fill = static_cast<std::size_t>(reinterpret_cast<handle_pair*>(to) - fb);
      }
      k = end;
    }
    w.flush_found(sink);
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
