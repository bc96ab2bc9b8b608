// Relayout: the operations that write a grid's storage anew.
//
// - Growth (thesis section 3.4): growth.hpp.
// - Compaction: a grid whose objects were written out of cell order (new
//   cells, relocated blocks, cell changes) is laid out again in cell-code
//   order, which the ordered detection walk needs.
// - The bulk move: a batch that moves most objects lays the grids out anew
//   from the new boxes, in cell order, instead of moving object by object.
//   Its passes run in chunks on the executor (keys computed per chunk, a
//   parallel radix sort, the pools written per chunk).
#pragma once

#include "hash_grids/growth.hpp"

namespace hhg {
namespace detail {

// ---- compaction ------------------------------------------------------------------
// Rebuilds a grid's storage in cell-code order: the occupied list sorted by
// code, each cell's block (shrunk to the best-fitting class) laid out in that
// order in a fresh pool, bricks renumbered in code order. Detection then
// streams through memory instead of jumping: a cell's neighbours along x are
// adjacent, along y and z a fixed stride away. The cost is one pass over the
// objects (and one write per slot), paid when more than 1/tune.compact_ratio of
// a grid's objects (at least tune.compact_min) were written out of order since the last compaction.
// Between compactions an ordered grid keeps its order below ordered_end
// and walks the cells written since apart (detect_displaced), which costs
// more per cell and leaves holes in the pool: 1/8 balances the two
// (measured at 10^6 objects moving 1 % of their size a step, mean step
// over 60 steps: ratio 2: 220, 4: 190, 8: 173 ns per object; the
// unordered walk throughout: 196).
// Everything is allocated before anything changes: if an allocation fails,
// the grid is left as it was (compaction is only an optimization).

template <int D, class T>
void hash_grids_state<D, T>::compact(grid& g) {
  std::vector<std::uint32_t> order, order_tmp;
  try {
    if (!sort_cells(g, order, order_tmp)) {
      order.resize(g.occupied.size());
      for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<std::uint32_t>(i);
    }
  } catch (const std::bad_alloc&) {
    return;
  }
  const std::size_t cells = order.size();
  layout l;
  try {
    std::size_t total = 0, nbricks = 0;
    std::uint32_t last_brick = npos;
    for (std::size_t k = 0; k < cells; ++k) {
      const occupied_cell& oc = g.occupied[order[k]];
      total += class_capacity(std::max(base_class, class_for(oc.count)));
      if ((oc.cell >> kLocalBits) != last_brick) {
        last_brick = oc.cell >> kLocalBits;
        ++nbricks;
      }
    }
    if (total > npos) return;
    l.reserve(g.occupied.capacity(), total + total / 8, nbricks);
  } catch (const std::bad_alloc&) {
    return;
  }
  // nothing below allocates
  std::fill(g.dir.begin(), g.dir.end(), 0u);
  for (std::size_t k = 0; k < cells; ++k) {
    const occupied_cell& oc = g.occupied[order[k]];
    // The slots written below are scattered, and so are the blocks of the
    // cells that changed since the last compaction: fetch the blocks 32
    // cells ahead, the slots (whose handles are in the blocks) 16 ahead.
    if (k + 16 < cells) {
      const occupied_cell& ahead = g.occupied[order[k + 16]];
      for (std::uint32_t j = 0; j < ahead.count && j < 4; ++j)
        __builtin_prefetch(&slots[g.pool[ahead.block + j].id.index], 1);
    }
    if (k + 32 < cells) {
      const occupied_cell& ahead = g.occupied[order[k + 32]];
      __builtin_prefetch(g.pool.data() + ahead.block);
      __builtin_prefetch(reinterpret_cast<const char*>(g.pool.data() + ahead.block) + 64);
    }
    if (k + 48 < cells) __builtin_prefetch(&g.occupied[order[k + 48]]);
    const auto pos = static_cast<std::uint32_t>(l.pool.size());
    l.pool.insert(l.pool.end(), g.pool.begin() + oc.block, g.pool.begin() + oc.block + oc.count);
    for (std::uint32_t j = 0; j < oc.count; ++j) slots[l.pool[pos + j].id.index].at = pos + j;
    l.close_cell(g, oc.cell, pos, oc.count, std::max(base_class, class_for(oc.count)));
  }
  install(g, l);
  ++paths.compactions;
}

// ---- bulk move -------------------------------------------------------------------
// A batch that moves most of the grid objects at once (the usual time step
// of a simulation) is applied by laying the grids out anew instead of
// object by object: each object's cell is computed (a hash, as in
// Algorithm 2), the objects are radix-sorted by cell, and each grid's pool,
// occupied list and bricks are written in cell-code order, exactly the
// layout a compaction leaves. The result is the structure the moves one by
// one followed by a compaction would give.
//
// Three passes, each cut into chunks of tune.chunk_moves items that run on
// the executor (boundaries from the input alone, so the result is the same
// for any worker count):
//  1. every moved object's grid and cell code (into bulk_tmp, by batch
//     position) and its reach bits (bulk_reach), with the checks; per
//     chunk, the count per grid;
//  2. the keys scattered to their grid's key list (chunk offsets from the
//     counts) and each list radix-sorted by cell code (parallel_radix_sort);
//     one serial pass sizes the new storage and cuts the list into chunks at
//     cell boundaries;
//  3. per chunk, the new pool (the user's boxes read in cell order,
//     prefetched), the cell records, the bricks and the slots of its objects
//     (none for a batch in slot order: their grids and cells were written
//     after pass 1, in batch order, and their positions are left to settle,
//     state.hpp).
// Returns false, having changed nothing, when the batch does not qualify:
// grids not active, a rebuild pending, fewer than tune.bulk_min moves or
// fewer than half the grid objects, a handle twice, an invalid handle or box,
// an object not in a grid or leaving the grids (unbounded, too large, or of a
// size no grid exists for yet). Those batches take the object-by-object path,
// which checks and handles everything. Everything that can fail (memory)
// happens before anything changes.
template <int D, class T>
bool hash_grids_state<D, T>::bulk_move(std::span<const handle> hs, std::span<const box_t> bs, std::size_t& checked,
                                       const std::uint8_t* fresh_grids) {
  // fresh_grids: the objects are new (bulk_insert), object i for grid
  // fresh_grids[i] (bulk_insert found it, and checked the size, when it
  // counted the incoming objects per grid); their slots exist, but they are
  // in no grid yet; every grid they go to exists and is large enough.
  const bool fresh = fresh_grids != nullptr;
  const std::size_t n = hs.size();
  checked = 0;
  // (no grid: every object is kept apart, and pass 1 reads grids[0])
  if (!active || rebuild_pending || grids.empty() || n < tune.bulk_min || n + slots.size() >= npos) return false;
  std::size_t in_grids = 0;
  for (const grid& g : grids) {
    in_grids += g.objects;
    if (n + g.pool.size() >= npos) return false;  // (bulk_key::src)
  }
  if (!fresh && 2 * n < in_grids) return false;
  // When few objects changed cell in the last batch, moving them one by one
  // is cheaper (measured at 10^6 objects: 1 % of the size per step, one
  // by one 194 against 221 ns per object per step; 20 %, with ~10 % of the
  // objects changing cell, 256 against 214), as long as compaction puts the
  // grids back in order. Below tune.compact_min grid objects nothing does
  // but this layout (and a batch moved one by one does not count its
  // changes: once skipped, it was skipped for good), so it is not skipped
  // there: 1000 objects moving 1 % of their size a step (`coherent`), 300
  // steps, 391 -> 339 M instructions, update + detection 172-185 -> 144-155
  // us a step (the ordered walk every step instead of the lookup walk).
  if (!fresh && in_grids >= tune.compact_min && last_batch_changed * tune.bulk_changed_ratio < last_batch_size)
    return false;
  // A small batch pays for the layout only when its grids take the row walk
  // after it (rows of row_cells cells or more at the last detection): at
  // 1000 objects the step of equal cubes -35 %, sizes over x12 -19 %, but
  // of sparse objects (1-1.5 cells a row) +9 %, on the lookup walk either way.
  if (!fresh && n < tune.bulk_rows_min && !rows_dense) return false;
  const std::size_t ngrids = grids.size();
  const std::size_t chunk = std::max<std::size_t>(tune.chunk_moves, 1);
  const std::size_t nchunks = (n + chunk - 1) / chunk;

  // One grid: the keys go straight to their place in its key list (position
  // i), no scatter. (The objects the batch does not move follow them.)
  const bool one_grid = ngrids == 1;
  // The merge: the key list of the last bulk move is still the grid's
  // objects by (cell, slot) (keys_current: every object moved in slot order,
  // nothing added, removed or re-celled since) and few of them changed cell
  // then. If this batch is in slot order too, its sorted list is that list
  // with the objects that changed cell taken out and merged back in at
  // their new cells: pass 1 writes only those (into bulk_tmp, each chunk's
  // from its first position), and pass 2 merges them instead of sorting
  // every key (the same list the sort gives). Not in slot order after all:
  // pass 1 runs again the usual way.
  bool merge = one_grid && !fresh && keys_current && tune.merge_ratio != 0 && bulk_keys.size() == 1 &&
               bulk_keys[0].size() == n && grids[0].objects == n &&
               last_batch_changed * tune.merge_ratio <= last_batch_size;
  // From here the key list is being rewritten: current again only when
  // this move completes (below).
  keys_current = false;

  // ---- pass 1: grid and cell of every moved object (nothing changes) ----
  pending.assign((slots.size() + 63) / 64, 0);  // the slots the batch moves
  if (ngrids > 1 || merge) bulk_tmp.resize(n);
  if (one_grid && !merge) {
    bulk_keys.resize(1);
    bulk_keys[0].clear();
    bulk_keys[0].resize(grids[0].objects > n ? grids[0].objects : n);
  }
  bulk_reach.resize(n);
  std::vector<std::uint32_t> counts(nchunks * ngrids, 0);      // per chunk and grid: its moved objects that go there
  std::vector<std::uint32_t> moved_from(nchunks * ngrids, 0);  // per chunk and grid: its moved objects that were there
  std::vector<std::size_t> changed_in(nchunks, 0);
  std::vector<char> failed(nchunks, 0), slot_order(nchunks, 1);
  const std::uint32_t g0 = hs[0].generation;
  bulk_key* const key1 = bulk_tmp.data();
  bulk_key* direct = one_grid && !merge ? bulk_keys[0].data() : nullptr;
  // chunks on several workers share the words of `pending` (below)
  const bool shared = exec != nullptr && exec->workers() > 1 && nchunks > 1;
  // (Fresh: `fresh` at compile time; the checks and the old places of
  // moved objects compiled out of a bulk insert's pass. One: `one_grid`;
  // the grid's geometry in locals, the checks combined into one branch.
  // Merge: `merge`, with One and not Fresh; only the keys of the objects
  // that change cell are written, chunk c's from key1[c * chunk] on)
  auto pass1 = [&]<bool Fresh, bool One, bool Merge = false>(std::size_t c) {
    const std::size_t lo = c * chunk, hi = std::min(n, lo + chunk);
    // counted here, stored once (neighbouring chunks' counters share cache lines)
    std::array<std::uint32_t, kMaxGrids> cnt{}, from{};
    std::size_t changed = 0;
    bool in_order = true;
    // the captured values in registers (read through the closure, the
    // compiler reloads them after every store)
    bulk_key* const to_direct = direct;
    bulk_key* const to_key1 = key1;
    std::uint8_t* const to_reach = bulk_reach.data();
    const box_t* const boxes = bs.data();
    const handle* const handles = hs.data();
    const slot* const sl = slots.data();
    const std::size_t nsl = slots.size();
    // One grid: what placing reads of it, as locals. Read through grids[0],
    // it was loaded again for every object (the reach byte stored below may
    // alias anything), and two counters a grid were incremented in memory.
    struct geometry {
      std::array<double, D> inv;
      std::array<std::uint32_t, D> bits, mask;
    };
    const geometry g1{grids[0].inv, grids[0].bits, grids[0].mask};
    const double cell1 = grids[0].cell_size, lower1 = grids[0].lower;
    for (std::size_t i = lo; i < hi; ++i) {
      // the hardware prefetcher falls behind on the boxes, read in order
      // (measured at 10^6 objects: this loop 24 -> 13 ms); a prefetch
      // never faults, and bs.data() + n is a valid address
      const char* ahead = reinterpret_cast<const char*>(boxes + std::min(i + 32, n));
      __builtin_prefetch(ahead);
      __builtin_prefetch(ahead + sizeof(box_t) - 1);
      const handle h = handles[i];
      in_order &= h.index == i && h.generation == g0;
      const box_t& b = boxes[i];
      std::uint32_t gid = 0, place = 0, old_cell = 0;
      if constexpr (Fresh) {  // (insert(span) checked the new ones and found their grids)
        gid = fresh_grids[i];
      } else {
        if (h.index >= nsl) return void(failed[c] = 1);
        const slot s = sl[h.index];
        place = s.place();
        old_cell = s.cell;
        // live (a 24-bit generation, not 0, the slot's) and in a grid, the
        // box valid (false for NaN too) and bounded, and, with one grid, of
        // its size: one branch for all of them
        bool ok = (s.generation() == h.generation) & (h.generation != 0) & (One ? place == 0 : place < kMaxGrids);
        for (int a = 0; a < D; ++a) ok &= b.min[a] <= b.max[a];
        const double eff = this->effective_size(b);
        if constexpr (One)
          ok &= (eff < cell1) & ((eff >= lower1) | (eff <= 0));  // (fits; false for +inf)
        else
          ok &= !std::isinf(eff);  // (also every box with an infinite coordinate)
        if (!ok) return void(failed[c] = 1);
        gid = place;
        if constexpr (!One) {
          if (!this->fits(grids[gid], eff)) {
            gid = this->existing_grid(eff);
            if (gid == npos) return void(failed[c] = 1);  // a new level: one by one
          }
        }
      }
      // The reach bits here, where the box streams in, not in pass 3, where
      // it comes from a random place (10^6 objects, one process, two
      // structures stepped alternately, 6 pairs: update 8-15 % faster on
      // `varied` and `equal`, the step 3-7 %: docs/hash_grids.md, Batch moves).
      std::uint32_t reach;
      const std::uint32_t code = One ? this->template cell_and_reach_of<true>(g1, b, reach)
                                     : this->template cell_and_reach_of<true>(grids[gid], b, reach);
      to_reach[i] = static_cast<std::uint8_t>(reach);
      if constexpr (Merge) {  // (every key written, kept when it changed cell: no branch)
        to_key1[lo + changed] = {code, static_cast<std::uint32_t>(i)};
      }
      changed += Fresh || gid != place || code != old_cell;
      if constexpr (Merge) {
      } else if constexpr (One) {
        to_direct[i] = {code, static_cast<std::uint32_t>(i)};
      } else {
        ++cnt[gid];
        if constexpr (!Fresh) ++from[place];
        to_key1[i] = {code, gid};
      }
    }
    changed_in[c] = changed;
    slot_order[c] = in_order;
    if constexpr (One) {
      cnt[0] = static_cast<std::uint32_t>(hi - lo);
      from[0] = Fresh ? 0 : cnt[0];
    }
    std::copy_n(cnt.begin(), ngrids, counts.begin() + static_cast<std::ptrdiff_t>(c * ngrids));
    std::copy_n(from.begin(), ngrids, moved_from.begin() + static_cast<std::ptrdiff_t>(c * ngrids));
  };
  run_chunks(nchunks, [&](std::size_t c) {
    if (fresh)
      one_grid ? pass1.template operator()<true, true>(c) : pass1.template operator()<true, false>(c);
    else if (merge)
      pass1.template operator()<false, true, true>(c);
    else if (one_grid)
      pass1.template operator()<false, true>(c);
    else
      pass1.template operator()<false, false>(c);
  });
  for (std::size_t c = 0; c < nchunks; ++c)
    if (failed[c]) return false;
  bool in_slot_order = true;
  for (std::size_t c = 0; c < nchunks; ++c) in_slot_order &= slot_order[c] != 0;
  if (merge && !in_slot_order) {  // (the last list's slots are not this batch's positions)
    merge = false;
    bulk_keys[0].clear();
    bulk_keys[0].resize(n);
    direct = bulk_keys[0].data();
    run_chunks(nchunks, [&](std::size_t c) { pass1.template operator()<false, true>(c); });
  }
  // The moved slots' bits, and no handle twice (else: in order, one by one).
  // New objects (fresh) need neither: their slots are distinct (bulk_insert
  // made them) and no object of a grid is among them. In slot order
  // (handle i at position i, one generation: a batch over the objects as
  // inserted) no handle comes twice and the bits are the first n.
  // Otherwise every handle's bit is set and tested, atomically when chunks
  // run on several workers (a locked or per object costs ~3.5 ms a worker
  // at 10^6, so the usual batch does without).
  if (fresh) {
    // (no bit: pass 2 reads none of the batch's slots among a grid's objects)
  } else if (in_slot_order) {
    std::fill_n(pending.begin(), n / 64, ~std::uint64_t{0});
    if (n % 64 != 0) pending[n / 64] = (std::uint64_t{1} << (n % 64)) - 1;
  } else {
    run_chunks(nchunks, [&](std::size_t c) {
      for (std::size_t i = c * chunk, hi = std::min(n, i + chunk); i < hi; ++i) {
        const std::uint32_t idx = hs[i].index;
        const std::uint64_t bit = std::uint64_t{1} << (idx & 63);
        std::uint64_t& word = pending[idx >> 6];
        std::uint64_t was;
        if (shared) {
          was = std::atomic_ref<std::uint64_t>(word).fetch_or(bit, std::memory_order_relaxed);
        } else {
          was = word;
          word |= bit;
        }
        if (was & bit) return void(failed[c] = 1);
      }
    });
    for (std::size_t c = 0; c < nchunks; ++c)
      if (failed[c]) return false;
  }
  std::size_t changed = 0;
  std::vector<std::size_t> moved(ngrids, 0), arriving(ngrids, 0);
  for (std::size_t c = 0; c < nchunks; ++c) {
    changed += changed_in[c];
    for (std::size_t id = 0; id < ngrids; ++id) {
      moved[id] += moved_from[c * ngrids + id];
      arriving[id] += counts[c * ngrids + id];
    }
  }
  checked = n;
  // A batch in slot order leaves the objects' pool positions to settle()
  // (state.hpp): their grids and cells go into the slots here, in batch
  // order, and pass 3 writes no slot. From here until pass 3, a return or an
  // exception puts the old ones back (settle, from the pools, which only
  // pass 3 changes).
  const bool lazy = in_slot_order && !fresh;
  struct resettle {
    hash_grids_state* s;
    ~resettle() {
      if (s != nullptr) s->settle();
    }
  } undo{nullptr};
  if (lazy) {
    undo.s = this;
    if (merge) {  // (the others keep their cell, and grid 0)
      run_chunks(nchunks, [&](std::size_t c) {
        for (std::size_t k = c * chunk, end = k + changed_in[c]; k < end; ++k) slots[key1[k].src].cell = key1[k].code;
      });
    } else {
      run_chunks(nchunks, [&](std::size_t c) {
        for (std::size_t i = c * chunk, hi = std::min(n, i + chunk); i < hi; ++i) {
          slot& sl = slots[i];
          sl.cell = one_grid ? direct[i].code : key1[i].code;
          sl.set_place(one_grid ? 0u : key1[i].src);
        }
      });
    }
  }

  // ---- pass 2: the keys by grid, sorted by cell; the new storage sized ----
  // key lists: the moved objects that go to the grid (chunk c's at offset
  // off[c][id]), then the objects the batch does not move (they keep their
  // grid and cell and are copied from the old pool in pass 3)
  bulk_keys.resize(ngrids);
  std::vector<std::uint32_t> off(nchunks * ngrids);
  for (std::size_t id = 0; id < ngrids; ++id) {
    std::size_t stay = grids[id].objects - moved[id];
    if (!one_grid) bulk_keys[id].clear();
    bulk_keys[id].resize(arriving[id] + stay);
    std::uint32_t sum = 0;
    for (std::size_t c = 0; c < nchunks; ++c) {
      off[c * ngrids + id] = sum;
      sum += counts[c * ngrids + id];
    }
    if (stay == 0) continue;
    std::size_t w = arriving[id];
    const grid& g = grids[id];
    for (const occupied_cell& oc : g.occupied)
      for (std::uint32_t j = 0; j < oc.count; ++j) {
        const std::uint32_t idx = g.pool[oc.block + j].id.index;
        if (!((pending[idx >> 6] >> (idx & 63)) & 1u))
          bulk_keys[id][w++] = {oc.cell, static_cast<std::uint32_t>(n + oc.block + j)};
      }
  }
  if (!one_grid)
    run_chunks(nchunks, [&](std::size_t c) {
      const std::size_t lo = c * chunk, hi = std::min(n, lo + chunk);
      std::array<bulk_key*, kMaxGrids> to;  // (only the first ngrids are used)
      for (std::size_t id = 0; id < ngrids; ++id) to[id] = bulk_keys[id].data() + off[c * ngrids + id];
      for (std::size_t i = lo; i < hi; ++i) *to[key1[i].src]++ = {key1[i].code, static_cast<std::uint32_t>(i)};
    });
  struct plan {  // one grid's new storage and the cuts of its key list
    std::size_t pool_size = 0, cells = 0, bricks = 0;
    bool reuse = false, own_cells = false, own_bricks = false;
    struct cut {
      std::size_t key, w, cell, brick;  // where a chunk of pass 3 starts
    };
    std::vector<cut> cuts;
  };
  std::array<std::uint32_t, kSmallClass.size()> room_of;  // a cell's room by its objects (the usual counts)
  for (std::uint32_t c = 0; c < room_of.size(); ++c) room_of[c] = class_capacity(std::max(base_class, class_for(c)));
  std::vector<plan> plans(ngrids);
  std::vector<layout> layouts(ngrids);
  for (std::size_t id = 0; id < ngrids; ++id) {
    const grid& g = grids[id];
    auto& keys = bulk_keys[id];
    if (merge) {
      merge_changed(keys, changed_in, chunk, code_bits(g));
    } else {
      parallel_radix_sort(keys, bulk_tmp, code_bits(g), [](const bulk_key& k) { return k.code; });
    }
    // An odd number of sort passes leaves the list in the scratch's buffer,
    // which is sized for the largest grid: kept, every grid's list would come
    // to hold one (10^4 boxes of Terdiman's data, three levels: 16 bytes per
    // object more after a few batches). The list goes back into the small one.
    if (keys.capacity() > 2 * keys.size() + 1024 && bulk_tmp.capacity() >= keys.size()) {
      bulk_tmp.resize(keys.size());
      std::copy(keys.begin(), keys.end(), bulk_tmp.begin());
      keys.swap(bulk_tmp);
    }
    plan& pl = plans[id];
    // Pass 3's chunks start at the first brick at or after every multiple
    // of `chunk` keys, so that a chunk owns its bricks whole (their cells,
    // brick records and fill counts). Each chunk sizes its part here, in
    // parallel; the cuts are their running sums.
    const std::size_t m = keys.size();
    const std::size_t nr = std::max<std::size_t>((m + chunk - 1) / chunk, 1);
    const auto brick_start = [&](std::size_t k) {
      if (k == 0) return k;
      while (k < m && (keys[k].code >> kLocalBits) == (keys[k - 1].code >> kLocalBits)) ++k;
      return k;
    };
    pl.cuts.resize(nr + 1);
    run_chunks(nr, [&](std::size_t r) {
      const std::size_t k0 = brick_start(std::min(m, r * chunk)), k1 = brick_start(std::min(m, (r + 1) * chunk));
      // One step a key, without a branch on where a cell ends (a loop a
      // cell exited after 1-6 objects at random; 10^6 objects of `varied`,
      // 378 000 cells: 4.8-5.0 -> 3.1-3.3 ms): a cell's room is counted at
      // its last key, a brick at its first.
      std::size_t total = 0, cells = 0, nbricks = 0;
      std::uint32_t run = 0;
      for (std::size_t k = k0; k < k1; ++k) {
        const std::uint32_t code = keys[k].code;
        const std::uint32_t prev = k == k0 ? ~code : keys[k - 1].code;  // (k0 starts a brick)
        const std::uint32_t next = k + 1 == k1 ? ~code : keys[k + 1].code;
        const std::size_t last = next != code;
        ++run;
        std::uint32_t room = run < room_of.size() ? room_of[run] : 0;
        if (run >= room_of.size() && last) room = class_capacity(std::max(base_class, class_for(run)));  // (crowded)
        nbricks += (prev >> kLocalBits) != (code >> kLocalBits);
        cells += last;
        total += room & (0 - last);
        run &= static_cast<std::uint32_t>(last) - 1;  // (0 after a cell's last key)
      }
      pl.cuts[r] = {k0, total, cells, nbricks};
    });
    std::size_t total = 0, cells = 0, nbricks = 0;
    for (std::size_t r = 0; r < nr; ++r) {  // sizes -> starts
      const typename plan::cut size = pl.cuts[r];
      pl.cuts[r] = {size.key, total, cells, nbricks};
      total += size.w;
      cells += size.cell;
      nbricks += size.brick;
    }
    pl.cuts[nr] = {m, total, cells, nbricks};
    layouts[id].fill.assign(nbricks, 0);
    if (total > npos) return false;
    pl.pool_size = total;
    pl.cells = cells;
    pl.bricks = nbricks;
    // A grid whose objects all move is not read as a source: its own pool is
    // written in place (no fresh memory to fault in), unless it is far larger
    // than needed (the growth of crowded cells may have left one twice the size).
    pl.reuse = moved[id] == g.objects && g.pool.capacity() >= total && g.pool.capacity() <= total + total / 8;
    layout& l = layouts[id];
    if (!pl.reuse) l.pool.reserve(total + total / 16);
    // The occupied list and the bricks are rewritten in place too (swapped
    // into the layout in pass 3), unless far larger than needed: fresh ones
    // every batch cost page faults and zeroing (varied, 10^6 objects: 9 600
    // page faults a step, most of them here).
    const std::size_t words = (nbricks + 1) * kBrickCells;
    pl.own_cells = g.occupied.capacity() >= cells && g.occupied.capacity() <= 2 * cells + 1024;
    if (!pl.own_cells) l.occupied.reserve(cells + cells / 16);
    pl.own_bricks = g.bricks.capacity() >= words && g.bricks.capacity() <= 2 * words + 1024;
    if (!pl.own_bricks) l.bricks.reserve(words + words / 16);
  }

  // ---- pass 3: write the new storage (nothing below allocates) ----
  undo.s = nullptr;
  // The old pools are read for the objects the batch does not move, and stay
  // until all grids are written.
  for (std::size_t id = 0; id < ngrids; ++id) {
    grid& g = grids[id];
    layout& l = layouts[id];
    const plan& pl = plans[id];
    if (pl.reuse) l.pool.swap(g.pool);
    if (pl.own_cells) l.occupied.swap(g.occupied);
    if (pl.own_bricks) l.bricks.swap(g.bricks);
    // within the capacities reserved in pass 2; written below (the bricks
    // zeroed by their chunks, the empty brick here)
    l.pool.clear();
    l.pool.resize(pl.pool_size);
    l.occupied.resize(pl.cells);
    l.bricks.resize((pl.bricks + 1) * kBrickCells);
    std::fill_n(l.bricks.begin(), kBrickCells, 0u);
    std::fill(g.dir.begin(), g.dir.end(), 0u);
    const auto& keys = bulk_keys[id];
    const std::size_t m = keys.size();
    entry* const out = l.pool.data();
    const std::uint32_t gid = static_cast<std::uint32_t>(id);
    const std::uint8_t* const reach_of_moved = bulk_reach.data();
    run_chunks(pl.cuts.size() - 1, [&](std::size_t c) {
      std::size_t k = pl.cuts[c].key;
      const std::size_t kend = pl.cuts[c + 1].key;
      auto w = static_cast<std::uint32_t>(pl.cuts[c].w);
      std::size_t oi = pl.cuts[c].cell, brick = pl.cuts[c].brick;
      std::fill(l.bricks.begin() + static_cast<std::ptrdiff_t>((brick + 1) * kBrickCells),
                l.bricks.begin() + static_cast<std::ptrdiff_t>((pl.cuts[c + 1].brick + 1) * kBrickCells), 0u);
      while (k < kend) {
        const std::uint32_t code = keys[k].code;
        std::size_t e = k + 1;
        while (e < m && keys[e].code == code) ++e;
        const auto here = static_cast<std::uint32_t>(e - k);
        const int klass = std::max(base_class, class_for(here));
        const std::uint32_t block = w;
        if (k == 0 || (code >> kLocalBits) != (keys[k - 1].code >> kLocalBits))
          g.dir[code >> kLocalBits] = static_cast<std::uint32_t>(++brick);
        ++l.fill[brick - 1];
        for (; k < e; ++k, ++w) {
          // the handles, boxes and slots are scattered: fetched 16-32 objects ahead
          if (!in_slot_order && k + 32 < m && keys[k + 32].src < n) __builtin_prefetch(&hs[keys[k + 32].src]);
          if (k + 16 < m) {
            const std::uint32_t src = keys[k + 16].src;
            if (src < n) {
              __builtin_prefetch(&bs[src]);
              __builtin_prefetch(reinterpret_cast<const char*>(&bs[src] + 1) - 1);
              if (in_slot_order && !lazy) __builtin_prefetch(&slots[src], 1);
            }
          }
          const std::uint32_t src = keys[k].src;
          handle h;
          if (src < n) {
            h = in_slot_order ? handle{src, g0} : hs[src];
            entry en = entry::make(bs[src], h);
            en.set_reach(reach_of_moved[src]);
            out[w] = en;  // (plain stores: the pool then stays in cache for detection)
          } else {
            out[w] = g.pool[src - n];  // (not reused: some of its objects stay)
            h = out[w].user_handle();
          }
          if (!lazy) slots[h.index] = {h.generation << 8 | gid, code, w};
        }
        for (const std::uint32_t end = block + class_capacity(klass); w < end; ++w) out[w] = sentinel();  // free room
        l.bricks[(brick << kLocalBits) | (code & kLocalMask)] = static_cast<std::uint32_t>(oi + 1);
        l.occupied[oi++] = {code, block, here, static_cast<std::uint32_t>(klass)};
      }
    });
  }
  for (std::size_t id = 0; id < ngrids; ++id) {
    install(grids[id], layouts[id]);
    grids[id].objects = bulk_keys[id].size();
  }
  positions_stale = lazy;  // (otherwise pass 3 wrote every grid object's slot)
  // (every object of the one grid moved, in slot order: the list is by (cell, slot))
  keys_current = lazy && one_grid && bulk_keys[0].size() == n;
  if (fresh) {
    ++paths.bulk_inserts;
  } else {
    paths.batch_merged += merge;
    last_batch_changed = changed;
    last_batch_size = n;
    ++paths.batch_bulk;
  }
  // A grid that gained objects past its density grows now (section 3.4;
  // maybe_grow rehashes it). The moves are done: if memory runs out here,
  // the grid stays as it is, correct but denser, and grows at its next
  // insertion.
  for (std::size_t id = 0; id < ngrids; ++id) {
    try {
      for (std::uint64_t cells = 0; cells != grids[id].cell_count();) {
        cells = grids[id].cell_count();
        maybe_grow(static_cast<std::uint32_t>(id), 0);
      }
    } catch (const std::bad_alloc&) {
    }
  }
  return true;
}

// The sorted key list of a bulk move from the last one's (bulk_move, the
// merge): `keys` holds the last list, every object of the grid by (cell,
// slot); pass 1 left the keys of the objects that changed cell in bulk_tmp,
// chunk c's changed_in[c] from position c * chunk. Those are sorted (few)
// and merged with the others, which keep their cell and their order: the
// list a stable sort of all keys would give. Measured with a stand-alone
// copy, 10^6 keys: a sort of all 6.7-7.5 ms, the merge 1.5 ms when 0.5 % of
// the objects changed cell, 3.9 ms at 10 %, 8.5-9 ms at 25 % (so only below
// tune.merge_ratio). The result goes to `keys`; the last list to bulk_tmp.
template <int D, class T>
void hash_grids_state<D, T>::merge_changed(big_vector<bulk_key>& keys, std::span<const std::size_t> changed_in,
                                           std::size_t chunk, std::uint32_t bits) {
  const std::size_t n = keys.size();
  std::size_t m = 0;
  for (std::size_t c : changed_in) m += c;
  changers.resize(m);
  changer_bits.assign(n / 64 + 1, 0);
  for (std::size_t c = 0, w = 0; c < changed_in.size(); ++c) {
    std::copy_n(bulk_tmp.begin() + static_cast<std::ptrdiff_t>(c * chunk), changed_in[c],
                changers.begin() + static_cast<std::ptrdiff_t>(w));
    w += changed_in[c];
  }
  radix_sort(changers, changers_tmp, bits, [](const bulk_key& k) { return k.code; });
  for (const bulk_key& k : changers) changer_bits[k.src >> 6] |= std::uint64_t{1} << (k.src & 63);
  // (code, slot) as one number; the last changer followed by one above every key
  const auto order = [](const bulk_key& k) { return std::uint64_t{k.code} << 32 | k.src; };
  changers.push_back({~0u, ~0u});
  const bulk_key* next = changers.data();
  bulk_key* out = bulk_tmp.data();
  for (const bulk_key& k : keys) {
    if ((changer_bits[k.src >> 6] >> (k.src & 63)) & 1u) continue;  // (at its new cell)
    const std::uint64_t at = order(k);
    while (order(*next) < at) *out++ = *next++;
    *out++ = k;
  }
  while (next->src != ~0u) *out++ = *next++;
  keys.swap(bulk_tmp);
}

// ---- bulk insert -----------------------------------------------------------------
// Many new objects at once (a scene loaded, a one-shot query): their slots
// are made, then lay_out_new (below) places them. The handles are appended
// to `out`, in the order of `bs` (the caller's vector: no second one of 8
// bytes per object to fill and copy). Returns false, having changed
// nothing, when the structure is not active (the caller inserts one by one;
// activation happens there) or the batch is small. Memory running out: the
// new slots are given back, `out` is cut back to its size on entry, the
// levels made and growths done stay (they hold no object), and the error
// propagates.
template <int D, class T>
bool hash_grids_state<D, T>::bulk_insert(std::span<const box_t> bs, std::span<const double> effs,
                                         std::vector<handle>& out) {
  const std::size_t n = bs.size();
  if (!active || rebuild_pending || n < tune.bulk_min || n + slots.size() >= npos - 1) return false;
  const std::size_t first = out.size();  // the new handles go after the caller's
  out.reserve(first + n);
  const std::size_t slots_before = slots.size();
  const std::uint32_t free_before = free_head;
  std::vector<std::uint32_t> placed;  // the fallback's placed objects (undone on failure)
  try {
    reserve_for(slots, slots.size() + n);
    // The handles: slots from the free list while it has one, then new
    // slots appended at once (a fresh structure has none free).
    std::size_t from_list = 0;
    for (; from_list < n && free_head != npos && !retired(free_head); ++from_list) out.push_back(new_slot());
    if (from_list < n) {
      const std::size_t s0 = slots.size(), o0 = out.size();
      // (left as they are, then each slot written in the handles' loop:
      // resize with the slot as the value went through the stack per slot,
      // a failed store forwarding each, 5 % of Terdiman's 10^4 one-shot)
      slots.resize(s0 + (n - from_list));
      out.resize(o0 + (n - from_list));
      for (std::size_t k = 0; k < n - from_list; ++k) {
        slots[s0 + k] = {1u << 8 | kPlaceFree, 0, npos};
        out[o0 + k] = {static_cast<std::uint32_t>(s0 + k), 1u};
      }
    }
    lay_out_new(bs, effs, std::span<const handle>(out).subspan(first), placed);
  } catch (...) {
    release_bulk_scratch();
    for (std::size_t k = placed.size(); k-- > 0;) unplace(placed[k]);
    // nothing is placed now (bulk_move changes nothing before its last pass,
    // which cannot fail; the fallback's placements were undone above): give
    // the slots back, newest first
    for (std::size_t k = out.size(); k-- > first;) unnew_slot(out[k].index, out[k].index >= slots_before);
    free_head = free_before;
    out.resize(first);
    throw;
  }
  count += n;
  return true;
}

// Places objects whose slots exist but are in no grid, list or apart (new
// ones, or every object of a reshape): each object's grid level created
// where needed, each grid grown to its final size while it is still empty
// (or by maybe_grow when it is not), then the grids laid out with the
// objects by bulk_move's passes, in cell order, in parallel chunks: one
// pass over the objects instead of one hashed insertion each. Objects kept
// apart (unbounded) are placed one by one; so are all of them when bulk_move
// declines (fewer than bulk_min bounded ones, or a pool past 2^32 entries),
// their slot indices recorded in `placed`. On failure (memory) the objects
// not in `placed` are placed nowhere, and the error propagates.
template <int D, class T>
void hash_grids_state<D, T>::lay_out_new(std::span<const box_t> bs, std::span<const double> effs,
                                         std::span<const handle> handles_in, std::vector<std::uint32_t>& placed) {
  const std::size_t n = bs.size();
  std::vector<std::size_t> incoming;
  std::vector<handle> hs;
  std::vector<box_t> kept;  // the bounded boxes when some are not
  std::vector<std::size_t> apart_ones;
  constexpr std::uint8_t kNoGrid = 255;
  std::vector<std::uint8_t> gid_of;  // the grid of each object of bs (kNoGrid: apart; of `kept` below when some are)
  // Each object's grid, found once here (the incoming counts size the
  // grids below) and read by bulk_move's first pass. An all-zero box
  // (eff 0) fits every grid; grid_for gives it the finest, as one by one.
  static_assert(kMaxGrids < kNoGrid, "a grid id fits in gid_of's byte");
  gid_of.resize(n);
  std::uint32_t last_gid = npos;
  for (std::size_t i = 0; i < n; ++i) {
    const double eff = effs[i];  // (effective_size(bs[i]): infinite for a box not bounded)
    if (std::isinf(eff)) {
      apart_ones.push_back(i);
      gid_of[i] = kNoGrid;
      continue;
    }
    if (last_gid == npos || !(eff > 0) || !fits(grids[last_gid], eff)) last_gid = grid_for(eff);
    gid_of[i] = static_cast<std::uint8_t>(last_gid);
    if (incoming.size() < grids.size()) incoming.resize(grids.size(), 0);
    ++incoming[last_gid];
  }
  // Grow before the objects come: the cell count grows by the thesis'
  // steps (2^D) until the grid's objects and the incoming ones fit the
  // density. An empty grid has nothing to rehash. With
  // growth_rule::by_occupancy the shape follows the extent per axis of
  // the incoming objects and those already in the grid (shape_for; a
  // pass over a sample of the batch's min corners), and a grid that holds objects
  // (at least the activation's first ones) is rehashed to it (reshape_grid).
  const bool by_occupancy = cfg.growth == growth_rule::by_occupancy;
  auto total_for = [&](const grid& g, std::size_t objects) {
    std::uint32_t total = code_bits(g);
    while (objects > (std::uint64_t{1} << total) / cfg.minimal_grid_density && total + D <= 31) total += D;
    return total;
  };
  std::vector<axis_extent> extents;
  if (by_occupancy) {
    std::vector<std::uint8_t> wanted(incoming.size(), 0);
    bool any = false;
    for (std::size_t id = 0; id < incoming.size(); ++id)
      if (incoming[id] != 0 && total_for(grids[id], grids[id].objects + incoming[id]) != code_bits(grids[id]))
        wanted[id] = 1, any = true;
    // Every stride-th box, the levels' sample (sample_step: the extent,
    // not every object, is wanted; with 2^16, every box of P. Terdiman's
    // 10^5 was read, 1 ms of a 8.7 ms bulk insert; with 2^12, half of his
    // 10^4, 2.7 % of that one-shot), every box when a grid got fewer than
    // 64 of its incoming objects that way.
    auto measure = [&](std::size_t stride) {
      extents.assign(incoming.size(), axis_extent{});
      std::vector<std::size_t> seen(incoming.size(), 0);
      for (std::size_t i = 0; i < n; i += stride) {
        const box_t& b = bs[i];
        const std::uint32_t gid = gid_of[i];
        if (gid >= wanted.size() || !wanted[gid]) continue;  // (kept apart: kNoGrid)
        ++seen[gid];
        const grid& g = grids[gid];
        for (int a = 0; a < D; ++a) extents[gid].add(a, floor_to_int(static_cast<double>(b.min[a]) * g.inv[a]));
      }
      for (std::size_t id = 0; id < seen.size(); ++id)
        if (wanted[id] && seen[id] < std::min<std::size_t>(incoming[id], 64)) return false;
      return true;
    };
    if (any && !measure(level_choice<D, T>::sample_step(n))) measure(1);
  }
  for (std::size_t id = 0; id < incoming.size(); ++id) {
    if (incoming[id] == 0) continue;
    grid& g = grids[id];
    if (g.objects == 0 || by_occupancy) {
      const std::uint32_t total = total_for(g, g.objects + incoming[id]);
      if (total != code_bits(g)) {
        std::array<std::uint32_t, D> bits = g.bits;
        std::vector<entry> all;
        all.reserve(g.objects);
        gather(g, all);
        if (by_occupancy) {
          add_extent(g, all, extents[id]);
          bits = shape_for(extents[id], total);
        } else {
          for (int a = 0; a < D; ++a) bits[a] += (total - code_bits(g)) / D;
        }
        reshape_grid(static_cast<std::uint32_t>(id), bits, all);
      }
    } else {
      for (std::uint64_t cells = 0; cells != g.cell_count();) {
        cells = g.cell_count();
        maybe_grow(static_cast<std::uint32_t>(id), incoming[id]);
      }
    }
  }
  std::span<const box_t> bounded = bs;
  std::span<const handle> handles = handles_in;
  if (!apart_ones.empty()) {
    kept.reserve(n - apart_ones.size());
    hs.reserve(n - apart_ones.size());
    for (std::size_t i = 0, a = 0; i < n; ++i) {
      if (a < apart_ones.size() && apart_ones[a] == i) {
        ++a;
        continue;
      }
      gid_of[kept.size()] = gid_of[i];
      kept.push_back(bs[i]);
      hs.push_back(handles_in[i]);
    }
    bounded = kept;
    handles = hs;
    reserve_for(apart, apart.size() + apart_ones.size());
  }
  std::size_t checked = 0;
  const bool laid = bounded.empty() || bulk_move(handles, bounded, checked, gid_of.data());
  release_bulk_scratch();
  if (!laid) {  // (fewer bounded objects than bulk_min, or a pool past 2^32 entries): one by one
    for (std::size_t i = 0, a = 0; i < n; ++i) {
      if (a < apart_ones.size() && apart_ones[a] == i) {
        ++a;
        continue;
      }
      placed.reserve(n);
      place(entry::make(bs[i], handles_in[i]));
      placed.push_back(handles_in[i].index);
    }
  }
  for (std::size_t i : apart_ones) push_list(apart, kPlaceApart, entry::make(bs[i], handles_in[i]));
}

}  // namespace detail
}  // namespace hhg
