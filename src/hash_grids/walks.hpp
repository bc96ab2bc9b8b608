// The walks within one grid (Algorithm 4, first part): each occupied cell
// against itself and its forward neighbours (dz > 0, or dz == 0 and dy > 0,
// or dz == dy == 0 and dx > 0: 13 in 3D, 4 in 2D). They differ only in how
// they list a cell's neighbours:
//  - ordered: the pool is in code order (after a compaction or a bulk move),
//    so the window of a row's neighbour cells is one stretch of the pool;
//  - unordered: each neighbour is looked up in the cell table and its objects
//    gathered, filtered by their reach bits;
//  - displaced: the cells of an ordered grid written since its last layout
//    (above ordered_end), against all their neighbours.
// Each walk takes a range of the grid's cells (a chunk, detection.hpp) and a
// worker's scratch; the grid is only read.
#pragma once

#include "hash_grids/kernel.hpp"

namespace hhg {
namespace detail {

template <int D, class T>
struct grid_walks : grid_types<D, T> {
  using base = grid_types<D, T>;
  using base::axis_term;
  using base::kLocalBits;
  using base::kLocalMask;
  using base::lookup;
  using base::subsets_of;
  using typename base::cell_view;
  using typename base::entry;
  using typename base::grid;
  using typename base::occupied_cell;
  using typename base::query;
  using W = detect_worker<D, T>;
  static constexpr std::uint32_t kFlat = 4;  // the largest flat cell (test_cell is unrolled up to it)

  // The ordered walk. In a grid laid out in code order, the objects of a run
  // of consecutive cells lie in one stretch of the pool, from the block of
  // its first cell to the block of the next cell in code order (the gaps
  // hold sentinels). Each occupied row gets, over the x between
  // its first and last cell, the pool position of its first cell at x or
  // beyond (row_pos): a window is two reads, no search, no branch. A row
  // whose cells are far apart (more than 4 x between them on average) is
  // searched instead. When it costs at most 8 positions per cell, every
  // row gets them over the grid's whole x range instead (uniform): a
  // window is then two loads, not even clamped to the row (detection at
  // 10^5 equal cubes -15 %). The candidates of a cell are gathered, after the
  // cell's own objects, as byte offsets into the pool (sixteen at a time,
  // without branches; a pool of more than 2^32 bytes takes
  // detect_unordered), and each object of the cell is tested against what
  // follows it in one loop.
  struct row_info {
    std::uint32_t code;        // the cell code of x = 0 in the row
    std::uint32_t first, end;  // its cells in sorted order: [first, end)
    std::uint32_t xmin, xmax;  // the x of its first and last cell
    std::uint32_t pos;         // row_pos offset (npos: searched; uniform: the offset of x = xlo - 1)
  };
  // A part's rows, row_pos entries and cells in searched rows (count_part),
  // then where its rows and positions start (size_rows).
  struct part_span {
    std::size_t rows = 0, positions = 0, searched = 0;
    std::uint32_t xlo = npos, xhi = 0;  // the least xmin and the largest xmax of its rows
  };

  // One live grid's walk, prepared once per detection (detection.hpp).
  struct grid_job {
    std::uint32_t id = 0;
    bool ordered = false;  // the ordered walk (and displaced cells apart), else the unordered one
    cell_view cv{};        // the cells of the ordered or unordered walk, in code order
    cell_view all{};       // every occupied cell in code order (cv, unless displaced cells are apart)
    std::vector<std::uint32_t> order, order_tmp;  // cv's order when the occupied list is not sorted
    std::vector<std::uint32_t> kept;              // ordered grids with displaced cells: the others, in code order
    std::vector<std::uint32_t> displaced;         // the displaced cells (occupied indices)
    big_vector<row_info> rows;                    // ordered walk: the occupied rows
    big_vector<std::uint32_t> row_pos;            // ordered walk: per row and x, a pool position
    std::vector<part_span> parts;                 // rows and row_pos in parts (count_part, index_part)
    // Every row indexed over the same x, [xlo - 1, xlo - 1 + width) (size_rows):
    // a window is then a load, no clamp to the row's own x.
    bool uniform = false;
    std::uint32_t xlo = 0, width = 2;
    std::size_t bytes() const {
      return capacity_bytes(order) + capacity_bytes(order_tmp) + capacity_bytes(kept) + capacity_bytes(displaced) +
             capacity_bytes(rows) + capacity_bytes(row_pos) + capacity_bytes(parts);
    }
  };

  // The rows of an ordered grid's walk, and row_pos; rows[0] is an empty
  // row. Built in parts of about `part` cells, each starting at a row's
  // first cell, so that the parts run on the executor (detection.hpp), in
  // two runs: count_part sizes part p, size_rows places the parts (running
  // sums) and sizes rows and row_pos, index_part writes part p in its place.
  // (Counted first rather than listed into buffers of each part and copied:
  // no second copy of row_pos, 4.3 bytes per object at 10^6 equal cubes.)
  static std::size_t row_start(const cell_view& cv, std::size_t k, std::uint32_t mx) {
    if (k == 0) return 0;
    while (k < cv.size && (cv.code(k) & ~mx) == (cv.code(k - 1) & ~mx)) ++k;
    return std::min(k, cv.size);
  }
  static std::size_t start_rows(grid_job& job, std::size_t part) {
    const std::size_t parts = std::max<std::size_t>((job.cv.size + part - 1) / part, 1);
    job.parts.assign(parts, {});
    return parts;
  }
  // fn(row) for each row of part p; row.pos is npos for a row whose cells are
  // far apart (more than 4 x between them on average: searched), else 0
  template <class Fn>
  static void for_rows(const grid& g, const cell_view& cv, std::size_t p, std::size_t part, Fn&& fn) {
    const std::size_t cells = cv.size;
    const std::uint32_t mx = g.mask[0];
    const std::size_t k0 = row_start(cv, std::min(cells, p * part), mx);
    const std::size_t k1 = row_start(cv, std::min(cells, (p + 1) * part), mx);
    for (std::size_t k = k0; k < k1;) {
      const std::uint32_t row = cv.code(k) & ~mx;
      std::size_t e = k + 1;
      while (e < cells && (cv.code(e) & ~mx) == row) ++e;
      row_info r{
          row, static_cast<std::uint32_t>(k), static_cast<std::uint32_t>(e), cv.code(k) & mx, cv.code(e - 1) & mx, 0};
      if (r.xmax - r.xmin > 4 * (e - k) + 16) r.pos = npos;
      fn(r);
      k = e;
    }
  }
  static void count_part(const grid& g, grid_job& job, std::size_t p, std::size_t part) {
    part_span n;
    for_rows(g, job.cv, p, part, [&](const row_info& r) {
      ++n.rows;
      n.xlo = std::min(n.xlo, r.xmin);
      n.xhi = std::max(n.xhi, r.xmax);
      if (r.pos == npos)
        n.searched += r.end - r.first;
      else
        n.positions += r.xmax - r.xmin + 2;
    });
    job.parts[p] = n;
  }
  static void size_rows(grid_job& job) {
    // Every row over the grid's x range (uniform) when that costs at most
    // 8 positions per cell: rows whose x ranges differ, or a few cells far
    // apart (searched otherwise), keep their own.
    std::size_t rows = 1;
    std::uint32_t xlo = npos, xhi = 0;
    for (const part_span& n : job.parts) {
      rows += n.rows;
      xlo = std::min(xlo, n.xlo);
      xhi = std::max(xhi, n.xhi);
    }
    const std::size_t width = rows > 1 ? std::size_t{xhi} - xlo + 4 : 2;
    job.uniform = rows > 1 && rows * width <= 8 * job.cv.size + 64 && rows * width < npos;
    job.xlo = job.uniform ? xlo : 0;
    job.width = job.uniform ? static_cast<std::uint32_t>(width) : 2;
    std::size_t nrows = 1, npos_ = job.width;  // the empty row and its positions first
    for (part_span& at : job.parts) {
      const part_span n = at;
      at.rows = nrows;
      at.positions = npos_;
      nrows += n.rows;
      npos_ += job.uniform ? n.rows * job.width : n.positions;
    }
    resize_scratch(job.rows, nrows);
    resize_scratch(job.row_pos, npos_);
    job.rows[0] = {npos, 0, 0, 0, 0, 0};
    std::fill_n(job.row_pos.begin(), job.width, 0u);
  }
  // Each row of part p, and over the x between its first and last cell (or,
  // uniform, over the grid's x range: searched rows too), the pool position
  // of its first cell at x or beyond.
  static void index_part(const grid& g, grid_job& job, std::size_t p, std::size_t part) {
    const cell_view& cv = job.cv;
    const std::uint32_t mx = g.mask[0];
    const std::uint32_t pool_end = g.ordered_end;
    auto start_of = [&](std::size_t c) { return c < cv.size ? cv.at(c).block : pool_end; };
    row_info* to = job.rows.data() + job.parts[p].rows;
    std::uint32_t* at = job.row_pos.data() + job.parts[p].positions;
    for_rows(g, cv, p, part, [&](row_info r) {
      if (job.uniform || r.pos != npos) {
        r.pos = static_cast<std::uint32_t>(at - job.row_pos.data());
        const std::int64_t x0 = job.uniform ? std::int64_t{job.xlo} - 1 : r.xmin;
        const std::int64_t x1 = job.uniform ? x0 + job.width : std::int64_t{r.xmax} + 2;
        // (filled by runs, cell by cell: the x up to a cell's own have it
        // first; per x, the search and start_of cost ~24 instructions,
        // 2.7 % of Terdiman's 10^4 one-shot, whose rows span 4 times their cells)
        std::int64_t x = x0;
        for (std::size_t c = r.first; c < r.end; ++c) {
          const occupied_cell& oc = cv.at(c);
          const std::int64_t cx = oc.cell & mx;
          for (; x <= cx; ++x) *at++ = oc.block;
        }
        for (const std::uint32_t end = start_of(r.end); x < x1; ++x) *at++ = end;
      }
      *to++ = r;
    });
  }

  // The pool position of row r's first cell at x >= v (v may lie outside
  // the row's x), in a grid whose rows are not uniform. A searched row is
  // searched from `hint`, the cell found last in it: the x asked for in a
  // row rise with the cells of a walk, so each search moves a step or two;
  // from the row's start, rows of a sparse grid cost a scan of the row per
  // neighbour (189 -> 126 ms detection at 10^6 objects of the sparse
  // scenario).
  static std::uint32_t position(const grid& g, const grid_job& job, const row_info& r, std::int64_t v,
                                std::size_t& hint) {
    if (r.pos != npos) {
      const std::int64_t i = std::clamp<std::int64_t>(v - r.xmin, 0, std::int64_t{r.xmax} - r.xmin + 1);
      return job.row_pos[r.pos + static_cast<std::size_t>(i)];
    }
    const cell_view& cv = job.cv;
    const std::uint32_t mx = g.mask[0];
    std::size_t c = hint >= r.first && hint <= r.end ? hint : r.first;
    while (c > r.first && static_cast<std::int64_t>(cv.code(c - 1) & mx) >= v) --c;
    while (c < r.end && static_cast<std::int64_t>(cv.code(c) & mx) < v) ++c;
    hint = c;
    return c < cv.size ? cv.at(c).block : g.ordered_end;  // (the cells of cv lie below ordered_end)
  }

  // The first row at index >= from with code >= key (galloping from
  // `from`, the row found last for a key no larger; from 1 otherwise).
  static std::size_t seek_row(const big_vector<row_info>& rows, std::size_t from, std::uint32_t key) {
    const std::size_t nrows = rows.size();
    if (from < 1 || from > nrows || (from > 1 && rows[from - 1].code >= key)) from = 1;
    std::size_t lo = from, hi = from, step = 1;
    while (hi < nrows && rows[hi].code < key) {
      lo = hi + 1;
      hi += step;
      step *= 2;
    }
    if (hi > nrows) hi = nrows;
    return static_cast<std::size_t>(std::partition_point(rows.begin() + static_cast<std::ptrdiff_t>(lo),
                                                         rows.begin() + static_cast<std::ptrdiff_t>(hi),
                                                         [&](const row_info& r) { return r.code < key; }) -
                                    rows.begin());
  }

  template <bool Uniform, class Sink>
  static void ordered(const grid& g, const grid_job& job, std::size_t r0, std::size_t r1, std::uint32_t flat, W& w,
                      Sink& sink) {
    const entry* pool = g.pool.data();
    const cell_view& cv = job.cv;
    const std::uint32_t mx = g.mask[0], bx = g.bits[0], my = g.mask[1], by = g.bits[1];
    const std::uint32_t mz = D == 3 ? g.mask[D - 1] : 0;
    const big_vector<row_info>& rows = job.rows;
    const big_vector<std::uint32_t>& row_pos = job.row_pos;
    // the pool position of the first cell at x >= v (v may be -1 or past
    // the row's end) in row r (position)
    const std::int64_t x0 = std::int64_t{job.xlo} - 1;  // (uniform: row_pos[r.pos] is x0's)
    auto pos = [&](const row_info& r, std::int64_t v, std::size_t& hint) -> std::uint32_t {
      if constexpr (Uniform) {
        static_cast<void>(hint);
        return row_pos[r.pos + static_cast<std::size_t>(v - x0)];
      } else {
        return position(g, job, r, v, hint);
      }
    };
    constexpr std::uint32_t X = 1, Y = 2, Z = 4;
    constexpr int kRows = D == 3 ? 4 : 1;
    constexpr std::array<int, kRows> dy = [] {
      if constexpr (D == 3)
        return std::array<int, kRows>{1, -1, 0, 1};
      else
        return std::array<int, kRows>{1};
    }();
    constexpr std::array<int, kRows> dz = [] {
      if constexpr (D == 3)
        return std::array<int, kRows>{0, 1, 1, 1};
      else
        return std::array<int, kRows>{0};
    }();
    constexpr std::array<std::uint32_t, kRows> row_need = [] {
      if constexpr (D == 3)
        return std::array<std::uint32_t, kRows>{Y, Z, Z, Y | Z};
      else
        return std::array<std::uint32_t, kRows>{Y};
    }();
    std::array<std::size_t, kRows> hint{}, row_hint{};
    std::size_t own_hint = 0;
    std::array<const row_info*, kRows> nb{};
    // uniform: the rows' row_pos offsets, in registers for the row's cells
    // (a window is then row_pos[offset + x - x0 + c], one load; loading
    // each pos from its row_info cost ~2 % of Terdiman's 10^4 one-shot)
    std::array<std::size_t, kRows> nb_pos{};
    if (w.gathered.size() < 256 + 8 * kFlat) w.gathered.resize(256 + 8 * kFlat);
    w.start_found();
    const std::size_t nrows = rows.size();
    for (std::size_t ri = r0; ri < r1; ++ri) {
      const row_info& R = rows[ri];
      const std::uint32_t y = (R.code >> bx) & my, z = D == 3 ? (R.code >> (bx + by)) & mz : 0;
      for (int t = 0; t < kRows; ++t) {
        const std::uint32_t ny = (y + static_cast<std::uint32_t>(dy[t])) & my;
        const std::uint32_t nz = (z + static_cast<std::uint32_t>(dz[t])) & mz;
        const std::uint32_t code = ny << bx | (D == 3 ? nz << (bx + by) : 0);
        hint[t] = seek_row(rows, hint[t], code);
        nb[t] = hint[t] < nrows && rows[hint[t]].code == code ? &rows[hint[t]] : &rows[0];
        nb_pos[t] = nb[t]->pos;
      }
      for (std::size_t kk = R.first; kk < R.end; ++kk) {
        const std::int64_t x = cv.code(kk) & mx;
        const occupied_cell& oc = cv.at(kk);
        const entry* cell = pool + oc.block;
        const std::uint32_t n = oc.count;
        ++w.cells_visited;
        // bit m: some object of the cell reaches the axes m (a flat cell's
        // one group; a crowded cell's groups have their own)
        std::uint32_t own = 0;
        if (n <= flat)
          for (std::uint32_t i = 0; i < n; ++i) own |= subsets_of(cell[i].reach());
        // the candidates: stretches of the pool, each with the reach it
        // needs of this cell's object (x + 1 needs X)
        struct span {
          std::uint32_t lo, hi, need;
        };
        std::array<span, 1 + 4 * kRows> sp;
        std::size_t ns = 0;
        // x + 1 wraps to 0 at x = mx (uniform: no row has a cell at 0 unless xlo is 0)
        const bool wraps = x == mx && (!Uniform || job.xlo == 0);
        const auto xi = static_cast<std::size_t>(x - x0);  // (uniform: x's index in a row's positions)
        if (x != mx) {
          if constexpr (Uniform)
            sp[ns++] = {row_pos[R.pos + xi + 1], row_pos[R.pos + xi + 2], X};
          else
            sp[ns++] = {pos(R, x + 1, own_hint), pos(R, x + 2, own_hint), X};
        } else if (wraps) {
          sp[ns++] = {pos(R, 0, own_hint), pos(R, 1, own_hint), X};
        }
        for (int t = 0; t < kRows; ++t) {
          const row_info& N = *nb[t];
          std::size_t& ht = row_hint[t];
          std::uint32_t lo, mid, hi;
          if constexpr (Uniform) {
            const std::uint32_t* at = row_pos.data() + nb_pos[t] + xi;
            lo = at[-1], mid = at[1], hi = at[2];
          } else {
            lo = pos(N, x - 1, ht), mid = pos(N, x + 1, ht), hi = pos(N, x + 2, ht);
          }
          if (n > flat) {
            sp[ns++] = {lo, mid, row_need[t]};
            sp[ns++] = {mid, hi, row_need[t] | X};
          } else {  // one stretch: to x + 1 when some object reaches it
            sp[ns++] = {lo, (own >> (row_need[t] | X)) & 1u ? hi : mid, row_need[t]};
          }
          if (x == 0 && N.xmax == mx && N.code != npos)
            sp[ns++] = {pos(N, mx, ht), pos(N, mx + 1, ht), row_need[t]};         // x - 1 wraps
          if (wraps) sp[ns++] = {pos(N, 0, ht), pos(N, 1, ht), row_need[t] | X};  // x + 1 wraps
        }
        // Objects cell[first, first + m) (m <= kFlat; `reach`: bit m set when one of
        // them reaches the axes m) against each other, the `later` objects
        // after them in the cell and the stretches one of them reaches:
        // gathered as byte offsets into the pool (sixteen at a time, no
        // branches), after room for the group's own objects (test_cell reads
        // those from the cell); then one loop tests them all (test_cell).
        // (the room checked once a group, not once a stretch, against every
        // stretch, reached or not: a bound. Until stop 77 the reached
        // lengths went into an array first, a loop that g++ 12 vectorizes
        // with AVX2 (-march=native: a variable shift per lane), and the
        // walk then read them back one by one: detection of 10^6 equal
        // cubes 1.6-1.8x slower than the SSE2 build in this host's fast
        // phases; docs/hash_grids.md, Ordered walk.)
        auto test_group = [&](std::uint32_t first, std::uint32_t m, std::uint32_t reach, std::uint32_t later) {
          std::size_t room = m + later + 16;  // (+ 16: gather_offsets writes 16 from where it starts)
          for (std::size_t s = 0; s < ns; ++s) room += sp[s].hi - sp[s].lo;
          if (room > w.gathered.size()) [[unlikely]]
            w.gathered.resize(2 * room);
          std::uint32_t* out = w.gathered.data() + m;
          if (later > 0) W::gather_offsets(out, oc.block + first + m, later);
          for (std::size_t s = 0; s < ns; ++s)
            W::gather_offsets(out, sp[s].lo, (sp[s].hi - sp[s].lo) & (0u - ((reach >> sp[s].need) & 1u)));
          const auto total = static_cast<std::uint32_t>(out - w.gathered.data());
          // every test writes its pair to found, and a hit keeps it: no
          // branch on the outcome
          handle_pair* const fb = w.found_room(sink, static_cast<std::size_t>(m) * total);
          char* to = reinterpret_cast<char*>(fb + w.found_fill);
          const char* base = reinterpret_cast<const char*>(pool);
          const entry* group = cell + first;
          w.box_tests += static_cast<std::uint64_t>(m) * (total - m) + m * (m - 1) / 2;
          switch (m) {
            case 1: to = W::template test_cell<1>(group, base, w.gathered.data(), total, to); break;
            case 2: to = W::template test_cell<2>(group, base, w.gathered.data(), total, to); break;
            case 3: to = W::template test_cell<3>(group, base, w.gathered.data(), total, to); break;
            default: to = W::template test_cell<kFlat>(group, base, w.gathered.data(), total, to); break;
          }
          w.found_fill = static_cast<std::size_t>(reinterpret_cast<handle_pair*>(to) - fb);
        };
        if (n > flat) {
          // A crowded cell: in groups of kFlat objects, each group tested
          // like a flat cell against the objects after it in the cell and
          // the stretches one of its objects reaches. Until stop 51 each
          // object was tested alone against the stretches its own reach
          // allows (fewer tests: 22.8 against 25.5 a box at 10^6 `varied`,
          // where 22 % of the objects lie in cells of 5 or more), one call
          // and one loop exit per object and stretch: detection 56-60 ->
          // 50 ms there, equal cubes 42-50 -> 39-42 (docs/hash_grids.md).
          for (std::uint32_t first = 0; first < n; first += kFlat) {
            const std::uint32_t m = std::min(kFlat, n - first);
            std::uint32_t reach = 0;
            for (std::uint32_t i = first; i < first + m; ++i) reach |= subsets_of(cell[i].reach());
            test_group(first, m, reach, n - first - m);
          }
          ++w.cells_crowded;
          ++w.cells_grouped;
          continue;
        }
        ++w.cells_flat;
        // The usual 1-4 objects: one group.
        test_group(0, n, own, 0);
      }
    }
    w.flush_found(sink);
  }

  // detect_ordered's tests for a cell of N objects (cell[0, N); ix[0, N)
  // is not read): among themselves, then against the candidates ix[N,
  // total), each loaded once and tested against the N objects, whose
  // queries stay in registers. One loop a cell, where a loop per object
  // ended in a mispredicted branch per object. Every test writes its pair
  // at `to`; a hit advances `to` past it. Returns the new `to`.
  // The displaced cells of an ordered grid (see grid::ordered): the ordered
  // walk never sees their objects, so each is tested against itself and all
  // of its neighbours (3^D - 1), except that of two displaced neighbours only
  // the one with the smaller code tests the other. Grids have at least 4
  // cells per axis, so the neighbours are distinct cells. The reach filter
  // of detect_unordered applies: toward a neighbour at offset d, a must
  // reach on the axes where d = +1 and b on those where d = -1.
  template <class Sink>
  static void displaced(const grid& g, const grid_job& job, std::size_t c0, std::size_t c1, W& w, Sink& sink) {
    const entry* pool = g.pool.data();
    const occupied_cell* occ = g.occupied.data();
    const std::uint32_t mx = axis_term(g, 0, g.mask[0]), my = axis_term(g, 1, g.mask[1]),
                        mz = D == 3 ? axis_term(g, D - 1, g.mask[D - 1]) : 0;
    constexpr int kNb = D == 3 ? 27 : 9;
    // The displaced cells are few and far apart: every neighbour lookup
    // (directory, brick, record, block) is a cache miss of its own. They are
    // done kAhead cells before the cell is tested, without branches, and
    // the neighbours' blocks fetched then, so that the misses of several
    // cells overlap (as in the unordered walk's ring).
    constexpr std::size_t kAhead = 6;
    struct looked {
      std::array<std::uint32_t, kNb> block, count;  // count 0: empty, the cell itself, or tested from there
    };
    std::array<looked, kAhead> ring;
    auto look = [&](std::size_t c, looked& out) {
      const occupied_cell& oc = occ[job.displaced[c]];
      __builtin_prefetch(pool + oc.block);
      // neighbour codes in dilated arithmetic, as in detect_unordered
      const std::uint32_t code = oc.cell;
      const std::uint32_t x1 = code & mx, y1 = code & my, z1 = code & mz;
      const std::array<std::uint32_t, 3> xs{(x1 - 1) & mx, x1, ((x1 | ~mx) + 1) & mx};
      const std::array<std::uint32_t, 3> ys{(y1 - 1) & my, y1, ((y1 | ~my) + 1) & my};
      const std::array<std::uint32_t, 3> zs{(z1 - 1) & mz, z1, ((z1 | ~mz) + 1) & mz};
      for (int t3 = 0; t3 < kNb; ++t3) {
        const std::uint32_t nc = xs[t3 % 3] | ys[(t3 / 3) % 3] | (D == 3 ? zs[t3 / 9] : 0);
        const std::uint32_t r = lookup(g, nc);
        const std::uint32_t hit = r != 0;
        const occupied_cell& nb = occ[r - hit];  // occ[0] when empty, masked
        // of two displaced neighbours, the one with the smaller code tests
        // the other (and the cell itself has the same code)
        const bool skip = nb.block >= g.ordered_end && nb.cell <= code;
        out.count[t3] = nb.count & (0u - (hit & static_cast<std::uint32_t>(!skip)));
        out.block[t3] = nb.block;
        __builtin_prefetch(pool + nb.block);
      }
    };
    for (std::size_t c = c0; c < c0 + kAhead && c < c1; ++c) look(c, ring[c % kAhead]);
    for (std::size_t c = c0; c < c1; ++c) {
      if (c + kAhead + 4 < c1) __builtin_prefetch(&occ[job.displaced[c + kAhead + 4]]);
      const looked lk = ring[c % kAhead];
      if (c + kAhead < c1) look(c + kAhead, ring[c % kAhead]);
      const std::uint32_t di = job.displaced[c];
      const occupied_cell& oc = occ[di];
      const entry* cell = pool + oc.block;
      ++w.cells_visited;
      for (std::uint32_t i = 0; i < oc.count; ++i) w.test_against(cell[i], cell + i + 1, oc.count - i - 1, sink);
      for (int t3 = 0; t3 < kNb; ++t3) {
        const std::uint32_t count = lk.count[t3];
        if (count == 0) continue;
        std::uint32_t need_own = 0, need_nb = 0;
        for (int a = 0, t = t3; a < D; ++a, t /= 3) {
          need_own |= static_cast<std::uint32_t>(t % 3 == 2) << a;
          need_nb |= static_cast<std::uint32_t>(t % 3 == 0) << a;
        }
        const entry* others = pool + lk.block[t3];
        for (std::uint32_t i = 0; i < oc.count; ++i) {
          if ((cell[i].reach() & need_own) != need_own) continue;
          if (need_nb == 0) {
            w.test_against(cell[i], others, count, sink);
            continue;
          }
          const query qa(cell[i]);
          for (std::uint32_t j = 0; j < count; ++j) {
            if ((others[j].reach() & need_nb) != need_nb) continue;
            ++w.box_tests;
            if (qa.hits(others[j])) [[unlikely]]
              sink(cell[i].user_handle(), others[j].user_handle());
          }
        }
      }
    }
  }

  // detect_grid for a grid whose pool is not in code order: the walk goes
  // through the occupied cells in code order and looks up each cell's
  // forward neighbours.
  template <class Sink>
  static void unordered(const grid& g, const grid_job& job, std::size_t c0, std::size_t c1, std::uint32_t flat, W& w,
                        Sink& sink) {
    w.start_found();
    const entry* pool = g.pool.data();
    const occupied_cell* occ = g.occupied.data();
    const cell_view& cv = job.cv;
    constexpr int kForward = D == 3 ? 13 : 4;
    // Reach filter: an object b of the neighbour at offset d can overlap an
    // object a of this cell only if a reaches into the next cell on every
    // axis where d = +1 and b does on every axis where d = -1 (both boxes
    // are smaller than a cell, and cells are computed monotonically from
    // the coordinates). need_own[t] / need_nb[t]: the reach offset t needs.
    constexpr std::uint8_t X = 1, Y = 2, Z = 4;
    constexpr auto need_own = [] {
      if constexpr (D == 2)
        return std::array<std::uint8_t, 4>{X, Y, Y, X | Y};
      else
        return std::array<std::uint8_t, 13>{X, Y, Y, X | Y, Z, Z, Z, Z, Z | X, Z | X, Z | Y, Z | Y, Z | X | Y};
    }();
    // offsets with the same need_own are adjacent: group k is [groups[k], groups[k + 1])
    constexpr auto groups = [] {
      if constexpr (D == 2)
        return std::array<std::uint8_t, 4>{0, 1, 3, 4};
      else
        return std::array<std::uint8_t, 8>{0, 1, 3, 4, 8, 10, 12, 13};
    }();
    constexpr auto need_nb = [] {
      if constexpr (D == 2)
        return std::array<std::uint8_t, 4>{0, X, 0, 0};
      else
        return std::array<std::uint8_t, 13>{0, X, 0, 0, X | Y, Y, X, 0, Y, 0, X, 0, 0};
    }();
    // the code bits of each axis (see the neighbour codes below)
    const std::uint32_t mx = axis_term(g, 0, g.mask[0]), my = axis_term(g, 1, g.mask[1]),
                        mz = D == 3 ? axis_term(g, D - 1, g.mask[D - 1]) : 0;
    const std::uint32_t* dir = g.dir.data();
    const std::uint32_t* bricks = g.bricks.data();
    // The lookups of a cell's forward neighbours (see below) are done kAhead
    // cells before the cell is tested, and their blocks fetched then: the
    // neighbours one brick up in z are a whole layer of bricks away in the
    // pool, and waiting for them was a sixth of the walk.
    constexpr std::size_t kAhead = 8;
    struct looked {
      std::array<std::uint32_t, kForward> first, counts;
      std::uint32_t visited;
    };
    std::array<looked, kAhead> ring;
    auto look = [&](std::size_t k, looked& out) {
      // The forward half of the neighbourhood: dz > 0, or dz == 0 and dy > 0,
      // or dz == dy == 0 and dx > 0. A code is a sum of independent per-axis
      // terms (disjoint bit fields), so the neighbour codes are sums of terms
      // computed once per cell.
      // Each axis owns fixed bits of the code, in order of significance, so a
      // neighbour's part of the code is the cell's part plus or minus one in
      // "dilated" arithmetic: the carry runs through the other axes' bits when
      // they are set to one first. Wrap-around modulo the cells per axis is the
      // mask. No decoding, no offset table.
      const std::uint32_t code = cv.code(k);
      const std::uint32_t x1 = code & mx, y1 = code & my;
      const std::uint32_t x0 = (x1 - 1) & mx, x2 = ((x1 | ~mx) + 1) & mx;
      const std::uint32_t y0 = (y1 - 1) & my, y2 = ((y1 | ~my) + 1) & my;
      std::array<std::uint32_t, kForward> codes;
      if constexpr (D == 2) {
        codes = {x2 | y1, x0 | y2, x1 | y2, x2 | y2};
      } else {
        const std::uint32_t z1 = code & mz, z2 = ((z1 | ~mz) + 1) & mz;
        codes = {x2 | y1 | z1, x0 | y2 | z1, x1 | y2 | z1, x2 | y2 | z1, x0 | y0 | z2, x1 | y0 | z2, x0 | y1 | z2,
                 x1 | y1 | z2, x2 | y0 | z2, x2 | y1 | z2, x0 | y2 | z2, x1 | y2 | z2, x2 | y2 | z2};
      }
      // Lookups have no branches: an empty cell reads as count 0.
      std::uint32_t visited = 0;
      for (int t = 0; t < kForward; ++t) {
        const std::uint32_t r = bricks[(dir[codes[t] >> kLocalBits] << kLocalBits) | (codes[t] & kLocalMask)];
        const std::uint32_t hit = r != 0;
        const occupied_cell& nb = occ[r - hit];  // occ[0] when empty, masked
        out.counts[t] = nb.count & (0u - hit);
        out.first[t] = nb.block;
        __builtin_prefetch(pool + nb.block);
        visited += hit;
      }
      out.visited = visited;
    };
    for (std::size_t k = c0; k < c0 + kAhead && k < c1; ++k) look(k, ring[k % kAhead]);
    for (std::size_t k = c0; k < c1; ++k) {
      // The walk is spatially sorted but blocks may sit anywhere in the pool
      // (until the next compaction): fetch records and blocks a little ahead.
      if (k + kAhead + 8 < c1) __builtin_prefetch(&cv.at(k + kAhead + 8));
      const occupied_cell& oc = cv.at(k);
      const entry* cell = pool + oc.block;
      const std::uint32_t n = oc.count;
      ++w.cells_visited;
      // pairs inside the cell
      for (std::uint32_t i = 0; i + 1 < n; ++i) w.test_flat(cell + i, 1, cell + i + 1, n - i - 1, sink);
      // Gather the objects of the neighbours into one contiguous candidate
      // list, then test each object of the cell against all of it. A
      // neighbour that no object of this cell reaches counts 0, and a
      // neighbour's object without the reach it needs is overwritten by the
      // next one: at 1-3 objects per cell, branch mispredictions, more than
      // box tests, were the cost of the walk.
      looked& lk = ring[k % kAhead];
      std::uint32_t own_reach = 0;  // bit m: some object of the cell reaches the axes m
      for (std::uint32_t i = 0; i < n; ++i) own_reach |= subsets_of(cell[i].reach());
      std::array<std::uint32_t, kForward> first, counts;
      std::uint32_t total = 0;
      for (int t = 0; t < kForward; ++t) {
        counts[t] = lk.counts[t] & (0u - ((own_reach >> need_own[t]) & 1u));
        first[t] = lk.first[t];
        total += counts[t];
      }
      w.cells_visited += lk.visited;
      if (k + kAhead < c1) look(k + kAhead, lk);
      if (total != 0) {
        if (w.cand.size() < total) w.cand.resize(std::max<std::size_t>(total, 2 * w.cand.size()));
        entry* out = w.cand.data();
        std::array<std::uint32_t, kForward + 1> start;  // offset t's candidates: [start[t], start[t + 1])
        for (int t = 0; t < kForward; ++t) {
          start[t] = static_cast<std::uint32_t>(out - w.cand.data());
          const entry* src = pool + first[t];
          const std::uint32_t need = need_nb[t];
          for (std::uint32_t j = 0; j < counts[t]; ++j) {
            *out = src[j];
            out += (src[j].reach() & need) == need;
          }
        }
        total = static_cast<std::uint32_t>(out - w.cand.data());
        start[kForward] = total;
        const entry* cs = w.cand.data();
        if (n <= flat) {  // the usual 1-3 objects: one loop over all candidates
          ++w.cells_flat;
          w.test_flat(cell, n, cs, total, sink);
        } else {  // a crowded cell: each object only against the offsets it reaches
          ++w.cells_crowded;
          for (std::uint32_t i = 0; i < n; ++i) {
            const std::uint32_t reach = cell[i].reach();
            for (std::size_t gi = 0; gi + 1 < groups.size(); ++gi) {
              const std::uint32_t need = need_own[groups[gi]];
              if ((reach & need) != need) continue;
              const std::uint32_t lo = start[groups[gi]], hi = start[groups[gi + 1]];
              w.test_flat(cell + i, 1, cs + lo, hi - lo, sink);
            }
          }
        }
      }
    }
    w.flush_found(sink);
  }
};

}  // namespace detail
}  // namespace hhg
