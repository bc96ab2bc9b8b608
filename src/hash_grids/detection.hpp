// Detection: every overlapping pair of a hash_grids structure, once, in an
// order that does not depend on the executor.
//
// Implementation note. A detection is cut into chunks whose boundaries depend
// only on the structure (never on the number of workers), listed in a fixed
// order:
//   1. `loose`: the all-pairs list (before activation) and the objects kept
//      apart, against everything (one chunk; many apart objects go through
//      an index over their narrow axes, apart.hpp);
//   2. per live grid, finest first, the walk within the grid (walks.hpp):
//      `ordered` in runs of rows of about tune.chunk_cells cells, then its
//      `displaced` cells; or `unordered` in runs of tune.chunk_cells cells;
//   3. per pair of a finer and a coarser live grid, `across` (across.hpp) in
//      runs of tune.chunk_objects objects of the finer grid.
// First the walks are prepared (cells sorted, rows indexed, across keys
// sorted: one task per grid and per grid pair, run on the executor), then the
// chunks run. With one worker they run in order straight into the caller's
// sink; with more, each chunk fills its own buffer and the buffers are joined
// in chunk order. The pairs, and their order, are the same for every executor
// and worker count.
//
// Lasting state and scratch: detection reads the structure and writes only
// this scratch (walk preparations, chunk buffers, per-worker candidates and
// pair batches), which hash_grids keeps beside the state, reuses from call to
// call (no allocation in steady state) and does not copy. The only writes to
// the state happen before the walks: a pending rebuild (rebuild strategy) and
// the compaction of grids written too far out of order.
#pragma once

#include "hash_grids/across.hpp"
#include "hash_grids/apart.hpp"
#include "hash_grids/relayout.hpp"
#include "hash_grids/walks.hpp"

namespace hhg {
namespace detail {

template <int D, class T>
struct detection_scratch {
  using S = hash_grids_state<D, T>;
  using GW = grid_walks<D, T>;
  using AW = across_walk<D, T>;
  using W = detect_worker<D, T>;
  using grid = typename S::grid;
  using entry = typename S::entry;
  using cell_view = typename S::cell_view;
  using occupied_cell = typename S::occupied_cell;

  enum class kind : std::uint8_t { loose, ordered, displaced, unordered, across };
  struct chunk {
    kind k;
    std::uint32_t job;
    std::size_t begin, end;
  };
  // a pool of more than 2^32 bytes takes the unordered walk (the ordered one
  // addresses entries by 32-bit byte offsets)
  static constexpr std::size_t kMaxOrderedPool = std::numeric_limits<std::uint32_t>::max() / sizeof(entry);

  std::vector<typename GW::grid_job> gjobs;
  std::vector<typename AW::pair_job> pjobs;
  std::vector<chunk> chunks;
  std::vector<W> workers;
  std::vector<std::vector<handle_pair>> bufs;  // per chunk, with more than one worker
  std::vector<std::uint8_t> done;              // per chunk, with more than one worker: its buffer is full
  std::vector<std::pair<std::uint32_t, std::size_t>> row_parts;  // (grid job, part) of the rows being indexed

  std::size_t bytes() const {
    std::size_t b = sizeof(*this) + capacity_bytes(gjobs) + capacity_bytes(pjobs) + capacity_bytes(chunks) +
                    capacity_bytes(workers) + capacity_bytes(bufs) + capacity_bytes(done) + capacity_bytes(row_parts);
    for (const auto& j : gjobs) b += j.bytes();
    for (const auto& j : pjobs) b += j.bytes();
    for (const auto& w : workers) b += w.bytes();
    for (const auto& v : bufs) b += capacity_bytes(v);
    return b + apart_ix.bytes();
  }

  // Everything before the walks: pending rebuild, compactions, the jobs,
  // their preparation and the chunk list.
  void prepare(S& s) {
    if (s.rebuild_pending) {
      s.rebuild();
      ++s.paths.rebuilds;
    }
    const tuning& tu = s.tune;
    for (grid& g : s.grids)
      if (g.objects >= tu.compact_min && g.displaced * tu.compact_ratio > g.objects) s.compact(g);
    std::size_t live = 0;
    for (std::uint32_t id : s.levels) live += s.grids[id].objects != 0;
    gjobs.resize(live);
    pjobs.resize(live * (live - (live > 0 ? 1 : 0)) / 2);
    std::size_t gi = 0;
    for (std::uint32_t id : s.levels)
      if (s.grids[id].objects != 0) gjobs[gi++].id = id;
    std::size_t pi = 0;
    for (std::size_t a = 0; a + 1 < live; ++a)
      for (std::size_t b = a + 1; b < live; ++b) {
        pjobs[pi].fine = gjobs[a].id;
        pjobs[pi].coarse = gjobs[b].id;
        pjobs[pi++].coarse_job = static_cast<std::uint32_t>(b);
      }
    s.run_chunks(gjobs.size() + pjobs.size(), [&](std::size_t t) {
      if (t < gjobs.size()) {
        prepare_grid(s, gjobs[t]);
      } else {
        auto& pj = pjobs[t - gjobs.size()];
        AW::prepare(s.grids[pj.fine], s.grids[pj.coarse], pj);
      }
    });
    for (auto& pj : pjobs) AW::sort(s.exec, tu.chunk_moves, s.grids[pj.coarse], pj);  // each on every worker
    // the ordered grids' rows, in parts of every grid: counted in one run,
    // placed, and written in another (walks.hpp)
    const std::size_t part = 8 * std::max<std::size_t>(tu.chunk_cells, 1);
    row_parts.clear();
    for (std::uint32_t j = 0; j < gjobs.size(); ++j)
      if (gjobs[j].ordered)
        for (std::size_t p = 0, np = GW::start_rows(gjobs[j], part); p < np; ++p) row_parts.push_back({j, p});
    s.run_chunks(row_parts.size(), [&](std::size_t t) {
      auto& gj = gjobs[row_parts[t].first];
      GW::count_part(s.grids[gj.id], gj, row_parts[t].second, part);
    });
    // A grid whose cells lie mostly in searched rows takes the lookup walk
    // instead: objects spread thin over the hashed grid leave a few cells
    // in each row, and the row walk's 14 row searches a cell cost more than
    // 13 lookups (10^6 objects of `sparse`, 15 cells in a row of 256:
    // detection 116 -> 57 ms; the rows are only counted by then). So does a
    // grid whose rows hold fewer than tu.row_cells cells on average: the row
    // walk's cost per row (four neighbour rows found, the row's positions)
    // is then paid for one or two cells (detection alone, 3000 objects of
    // `sparse`, 3.0 cells a row: 375 -> 285 us; 1000 equal cubes, 6.8 cells
    // a row, stay faster on the row walk: 44 against 66 us).
    // (A grid with displaced cells has only the others in rows: the rule
    // reads their rows, and the lookup walk takes every cell.)
    for (auto& gj : gjobs) {
      if (!gj.ordered) continue;
      std::size_t searched = 0, rows = 0;
      for (const auto& n : gj.parts) {
        searched += n.searched;
        rows += n.rows;
      }
      const bool sparse_rows =
          tu.searched_share != 0 && gj.displaced.empty() && searched * tu.searched_share > gj.cv.size;
      if (sparse_rows || rows * tu.row_cells > gj.cv.size) {
        gj.ordered = false;
        gj.cv = gj.all;
        gj.kept.clear();
        gj.displaced.clear();
        s.grids[gj.id].sparse_rows = true;
        ++s.paths.sparse_rows_lookup;
      }
    }
    // For the bulk move of a small batch (state.hpp, rows_dense): the rows
    // of every grid's cells in their order, while the grids are small.
    std::size_t in_grids = 0, in_dense = 0;
    for (const auto& gj : gjobs) in_grids += s.grids[gj.id].objects;
    if (in_grids < tu.bulk_rows_min) {
      for (const auto& gj : gjobs) {
        const std::uint32_t row_bits = ~s.grids[gj.id].mask[0];
        std::size_t rows = 0;
        for (std::size_t k = 0; k < gj.cv.size; ++k)
          rows += k == 0 || (gj.cv.code(k) & row_bits) != (gj.cv.code(k - 1) & row_bits);
        if (rows * tu.row_cells <= gj.cv.size) in_dense += s.grids[gj.id].objects;
      }
    }
    s.rows_dense = in_grids != 0 && 2 * in_dense >= in_grids;
    for (auto& gj : gjobs)
      if (gj.ordered) GW::size_rows(gj);
    s.run_chunks(row_parts.size(), [&](std::size_t t) {
      auto& gj = gjobs[row_parts[t].first];
      if (gj.ordered) GW::index_part(s.grids[gj.id], gj, row_parts[t].second, part);
    });
    // the chunks, in the order of the pairs
    chunks.clear();
    if (!s.list.empty() || !s.apart.empty()) chunks.push_back({kind::loose, 0, 0, 0});
    if (!s.apart.empty() && s.apart.size() >= tu.apart_index_min) ++s.paths.apart_index;
    const std::size_t per = std::max<std::size_t>(tu.chunk_cells, 1);
    for (std::size_t j = 0; j < gjobs.size(); ++j) {
      const auto& gj = gjobs[j];
      const auto jj = static_cast<std::uint32_t>(j);
      if (gj.ordered) {
        ++s.paths.walk_ordered;
        s.paths.rows_uniform += gj.uniform;
        for (const auto& r : gj.rows) s.paths.rows_searched += r.pos == npos && r.code != npos;
        std::size_t start = 1, cells = 0;
        for (std::size_t r = 1; r < gj.rows.size(); ++r) {
          cells += gj.rows[r].end - gj.rows[r].first;
          if (cells >= per || r + 1 == gj.rows.size()) {
            chunks.push_back({kind::ordered, jj, start, r + 1});
            start = r + 1;
            cells = 0;
          }
        }
        if (!gj.displaced.empty()) ++s.paths.walk_displaced;
        for (std::size_t c = 0; c < gj.displaced.size(); c += per)
          chunks.push_back({kind::displaced, jj, c, std::min(gj.displaced.size(), c + per)});
      } else {
        ++s.paths.walk_unordered;
        for (std::size_t c = 0; c < gj.cv.size; c += per)
          chunks.push_back({kind::unordered, jj, c, std::min(gj.cv.size, c + per)});
      }
    }
    const std::size_t per_obj = std::max<std::size_t>(tu.chunk_objects, 1);
    for (std::size_t j = 0; j < pjobs.size(); ++j) {
      ++s.paths.walk_across;
      const auto& hj = gjobs[pjobs[j].coarse_job];
      pjobs[j].rows = hj.ordered && hj.displaced.empty();  // (its row index covers every cell)
      s.paths.walk_across_rows += pjobs[j].rows;
      const std::size_t n = pjobs[j].keys.size();
      for (std::size_t c = 0; c < n; c += per_obj)
        chunks.push_back({kind::across, static_cast<std::uint32_t>(j), c, std::min(n, c + per_obj)});
    }
  }

  // Which walk a grid takes, and what it needs (see walks.hpp).
  static void prepare_grid(const S& s, typename GW::grid_job& j) {
    const grid& g = s.grids[j.id];
    const tuning& tu = s.tune;
    const std::size_t n = g.occupied.size();
    j.cv = {g.occupied.data(), S::sort_cells(g, j.order, j.order_tmp) ? j.order.data() : nullptr, n};
    j.all = j.cv;
    j.kept.clear();
    j.displaced.clear();
    // crowded grids take the lookup walk: it filters each candidate by its
    // reach too, where the ordered walk tests whole stretches (measured with
    // 10x1x1 boxes, 125 objects a cell: 288 against 210 tests per object)
    j.ordered = g.ordered && !g.sparse_rows && g.pool.size() <= kMaxOrderedPool && g.objects <= tu.crowded_grid * n;
    if (j.ordered && g.pool.size() > g.ordered_end) {  // some block may lie above the ordered part: split the cells
      std::size_t outside = 0;
      for (std::size_t k = 0; k < n; ++k) {
        const occupied_cell& oc = j.cv.at(k);
        const auto oi = static_cast<std::uint32_t>(&oc - j.cv.occ);
        if (oc.block < g.ordered_end) {
          j.kept.push_back(oi);
        } else {
          j.displaced.push_back(oi);
          outside += oc.count;
        }
      }
      // many displaced objects: the lookup walk over all cells (half the
      // neighbours each) costs less than the displaced walk (all of them)
      if (outside * tu.displaced_share > g.objects) {
        j.ordered = false;
        j.kept.clear();
        j.displaced.clear();
      } else if (!j.displaced.empty()) {
        j.cv = {j.cv.occ, j.kept.data(), j.kept.size()};
      }
    }
  }

  template <class Sink>
  void run_chunk(const S& s, std::size_t ci, W& w, Sink& sink) {
    const chunk& c = chunks[ci];
    const std::uint32_t flat = std::min<std::uint32_t>(s.tune.flat_cell, GW::kFlat);
    switch (c.k) {
      case kind::loose: return loose(s, w, sink);
      case kind::ordered: {
        const auto& j = gjobs[c.job];
        if (j.uniform) return GW::template ordered<true>(s.grids[j.id], j, c.begin, c.end, flat, w, sink);
        return GW::template ordered<false>(s.grids[j.id], j, c.begin, c.end, flat, w, sink);
      }
      case kind::displaced: {
        const auto& j = gjobs[c.job];
        return GW::displaced(s.grids[j.id], j, c.begin, c.end, w, sink);
      }
      case kind::unordered: {
        const auto& j = gjobs[c.job];
        return GW::unordered(s.grids[j.id], j, c.begin, c.end, flat, w, sink);
      }
      case kind::across: {
        auto& j = pjobs[c.job];
        const auto& hj = gjobs[j.coarse_job];
        if (j.rows) {
          if (hj.uniform)
            return AW::template walk_rows<true>(s.grids[j.fine], s.grids[j.coarse], hj, j, c.begin, c.end, w, sink);
          return AW::template walk_rows<false>(s.grids[j.fine], s.grids[j.coarse], hj, j, c.begin, c.end, w, sink);
        }
        return AW::walk(s.grids[j.fine], s.grids[j.coarse], j, c.begin, c.end, w, sink);
      }
    }
  }

  // The all-pairs list (before activation), and the objects kept apart
  // against everything: directly when they are few, else through an index
  // over their narrow axes (apart.hpp), rebuilt here (this chunk is one).
  template <class Sink>
  void loose(const S& s, W& w, Sink& sink) {
    const auto& list = s.list;
    const auto& apart = s.apart;
    for (std::size_t i = 0; i < list.size(); ++i)
      w.test_against(list[i], list.data() + i + 1, static_cast<std::uint32_t>(list.size() - i - 1), sink);
    if (apart.empty()) return;
    if (apart.size() < s.tune.apart_index_min) {  // few: each other object against all of them, in one pass
      for (std::size_t i = 0; i < apart.size(); ++i)
        w.test_against(apart[i], apart.data() + i + 1, static_cast<std::uint32_t>(apart.size() - i - 1), sink);
      std::uint64_t others = list.size();
      const auto against_all = [&](const entry& o) {
        const typename S::query qo(o);
        for (const entry& a : apart)
          if (qo.hits(a)) [[unlikely]]
            sink(a.user_handle(), o.user_handle());
      };
      for (const entry& o : list) against_all(o);
      for (const grid& g : s.grids) {
        others += g.objects;
        for (const occupied_cell& oc : g.occupied)
          for (std::uint32_t k = 0; k < oc.count; ++k) against_all(g.pool[oc.block + k]);
      }
      w.box_tests += others * apart.size();
      return;
    }
    apart_ix.build(apart);
    std::uint64_t tests = apart_ix.pairs_among(apart, sink);
    for (const entry& o : list) tests += apart_ix.pairs_with(apart, o, sink);
    for (const grid& g : s.grids)
      for (const occupied_cell& oc : g.occupied)
        for (std::uint32_t k = 0; k < oc.count; ++k) tests += apart_ix.pairs_with(apart, g.pool[oc.block + k], sink);
    w.box_tests += tests;
  }
  apart_index<D, T> apart_ix;  // loose's index of the objects kept apart (scratch)

  struct buffer_sink {
    static constexpr bool in_flight = true;
    std::vector<handle_pair>& v;
    void operator()(handle a, handle b) { v.push_back({a, b}); }
    void append(const handle_pair* p, std::size_t k) { v.insert(v.end(), p, p + k); }
  };

  std::size_t worker_count(const S& s) const { return s.exec != nullptr ? std::max(1u, s.exec->workers()) : 1; }

  // Runs every chunk, its pairs into `sink` in chunk order. With one worker
  // in order, straight into the sink. With more, the chunks are handed out
  // in order; each fills its own buffer, except that worker 0 writes a
  // chunk straight into the sink when every chunk before it is in already.
  // Worker 0 also appends the buffers of finished chunks, in order, between
  // its own chunks (it alone writes to the sink), so that joining overlaps
  // the other workers' walks; what is left is appended at the end. (A sink
  // that calls the user, for_each_pair, gets everything at the end, on the
  // calling thread.)
  template <class Sink>
  void run(S& s, Sink& sink) {
    s.box_tests = s.cells_visited = 0;
    prepare(s);
    const std::size_t nw = worker_count(s);
    const std::size_t nc = chunks.size();
    workers.resize(nw);
    for (W& w : workers) w.reset_counters();
    if (nw == 1 || nc < 2) {
      for (std::size_t c = 0; c < nc; ++c) run_chunk(s, c, workers[0], sink);
    } else {
      ++s.paths.parallel_detections;
      if (bufs.size() < nc) bufs.resize(nc);
      for (std::size_t c = 0; c < nc; ++c) bufs[c].clear();
      done.assign(nc, 0);
      std::size_t joined = 0;  // chunks in the sink (worker 0 only)
      const auto join = [&] {
        while (joined < nc && std::atomic_ref<std::uint8_t>(done[joined]).load(std::memory_order_acquire)) {
          sink.append(bufs[joined].data(), bufs[joined].size());
          ++joined;
        }
      };
      s.exec->parallel_for(nc, 1, [&](std::size_t b, std::size_t e, unsigned wk) {
        for (std::size_t c = b; c < e; ++c) {
          if (Sink::in_flight && wk == 0 && c == joined) {
            run_chunk(s, c, workers[0], sink);
            ++joined;
          } else {
            buffer_sink bs{bufs[c]};
            run_chunk(s, c, workers[wk], bs);
            std::atomic_ref<std::uint8_t>(done[c]).store(1, std::memory_order_release);
          }
          if (Sink::in_flight && wk == 0) join();
        }
      });
      for (; joined < nc; ++joined) sink.append(bufs[joined].data(), bufs[joined].size());
    }
    for (const W& w : workers) {
      s.box_tests += w.box_tests;
      s.cells_visited += w.cells_visited;
      s.paths.cells_flat += w.cells_flat;
      s.paths.cells_crowded += w.cells_crowded;
      s.paths.cells_grouped += w.cells_grouped;
    }
  }

  // find_pairs: clears `out` and appends every pair.
  void detect(S& s, std::vector<handle_pair>& out) {
    out.clear();
    buffer_sink sink{out};
    run(s, sink);
    s.pairs = out.size();
    s.detected = true;
  }

  // for_each_pair: every pair to f, on the calling thread, in the same order.
  struct callback_sink {
    static constexpr bool in_flight = false;
    pair_callback& f;
    std::uint64_t n = 0;
    void operator()(handle a, handle b) {
      ++n;
      f(a, b);
    }
    void append(const handle_pair* p, std::size_t k) {
      for (std::size_t i = 0; i < k; ++i) (*this)(p[i].a, p[i].b);
    }
  };
  void detect(S& s, pair_callback f) {
    callback_sink sink{f};
    run(s, sink);
    s.pairs = sink.n;
    s.detected = true;
  }
};

}  // namespace detail
}  // namespace hhg
