// The lasting state of a hash_grids structure: its grids and their storage
// (blocks of a pool per grid, cells through a two-level table), the handle
// slots, the all-pairs list and the objects kept apart, and the operations
// that place one object (insert, move, remove) or all of them (activation,
// rebuild). Growth is in growth.hpp, compaction and the bulk move in relayout.hpp,
// detection in detection.hpp, validation in validation.cpp. Scratch (the
// batch moves') is marked not_copied: a copy of the structure starts without.
//
// Placement is computed once per object: effective_size (cells.hpp) picks the
// level (grid_for), cell_and_reach the cell code and the reach bits; add_to_grid
// commits them. Every path (insert, move, batch, rebuild, growth) goes through
// these two. See docs/hash_grids.md for the map of the parts.
#pragma once

#include <memory>
#include <span>

#include "hash_grids/cells.hpp"
#include "hash_grids/levels.hpp"
#include "hash_grids/parallel.hpp"

namespace hhg {
namespace detail {

// A member that a copy of its owner does not copy (scratch).
template <class X>
struct not_copied : X {
  not_copied() = default;
  not_copied(const not_copied&) : X() {}
  not_copied& operator=(const not_copied&) { return *this; }
  not_copied(not_copied&&) = default;
  not_copied& operator=(not_copied&&) = default;
};

// A fact about this structure that a copy does not take over (false in
// a copy, and in a structure assigned one): that a detection is running
// (a copy taken from the detection's callback is in no detection; copied,
// the flag made the copy refuse every change, for good), and that the
// bulk move's kept key list is current (not_copied scratch: empty in a
// copy, and an assigned structure's is still its old one).
struct not_copied_flag {
  bool on = false;
  not_copied_flag() = default;
  not_copied_flag(const not_copied_flag&) noexcept {}
  not_copied_flag& operator=(const not_copied_flag&) noexcept {
    on = false;
    return *this;
  }
  not_copied_flag(not_copied_flag&&) = default;
  not_copied_flag& operator=(not_copied_flag&&) = default;
  not_copied_flag& operator=(bool b) noexcept {
    on = b;
    return *this;
  }
  explicit operator bool() const { return on; }
};

template <int D, class T>
struct hash_grids_state : grid_types<D, T> {
  using base = grid_types<D, T>;
  using base::axis_term;
  using base::cell_and_reach;
  using base::cell_of;
  using base::code_bits;
  using base::coord;
  using base::encode;
  using base::fits;
  using base::install;
  using base::kBrickCells;
  using base::kLocalBits;
  using base::kLocalMask;
  using base::lookup;
  using base::q;
  using base::reach_of;
  using base::sentinel;
  using base::sort_cells;
  using base::subsets_of;
  using typename base::box_t;
  using typename base::cell_view;
  using typename base::entry;
  using typename base::grid;
  using typename base::layout;
  using typename base::occupied_cell;
  using typename base::query;
  using typename base::slot;

  config cfg;
  executor* exec = nullptr;           // not owned; nullptr: serial
  std::vector<grid> grids;            // by id
  std::vector<std::uint32_t> levels;  // grid ids, ascending cell size
  std::vector<entry> list;
  std::vector<entry> apart;
  big_vector<slot> slots;
  // The slots' pool positions (`at`) of grid objects may be out of date: the
  // last bulk move took a batch in slot order and did not write them (settle).
  bool positions_stale = false;
  std::uint32_t free_head = npos;
  std::uint32_t free_tail = npos;  // the free list's last slot; retired slots are its tail (release_slot)
  std::size_t count = 0;
  bool active = false;
  double anchor_hint = 0;    // the first level's cell size for activate, from a whole batch (plan_ladder); 0: none
  double anchor_spread = 1;  // its cells are anchor_spread times larger (objects far apart: levels.hpp, spread_for)
  bool spread = false;       // a level has cells larger than its objects' (spread_for): check_spread watches it
  // The ladder's factor at and above ladder_floor (a batch's, plan_ladder); below it cfg.hierarchy_factor.
  double ladder_f = cfg.hierarchy_factor;
  double ladder_floor = std::numeric_limits<double>::infinity();
  // The structure's per-axis scales (cells.hpp, effective_size): chosen for a
  // batch that activates an empty structure (plan_ladder), fixed while there
  // are grids, back to 1 with them (reset_ladder).
  typename base::scale_t axis_scale = base::unit_scale();
  bool rebuild_pending = false;
  int base_class = 0;
  not_copied_flag in_detection;  // a detection is running (its callback must not change the structure)
  tuning tune;                   // thresholds (tests may change them)
  path_counters paths;           // how often each path ran
  std::uint64_t box_tests = 0, cells_visited = 0, pairs = 0;  // of the last detection
  bool detected = false;  // a detection ran since construction or clear() (`pairs` holds its count)

  // Scratch of the batch moves (not copied with the structure; given back
  // after each batch, except the bulk move's keys: see hash_grids::move).
  struct deferred_move {
    std::uint32_t index;
    std::uint32_t key;
  };
  not_copied<std::vector<deferred_move>> deferred, deferred_tmp;  // two-pass batch: the moves set aside
  not_copied<std::vector<std::uint64_t>> pending;                 // one bit per slot: moved by this batch
  struct bulk_key {
    std::uint32_t code;
    std::uint32_t src;  // position in the batch, or n + old pool position of an object the batch does not move
  };
  struct regrid_move {  // an object the bulk move takes to another grid
    std::uint32_t index, grid;
  };
  not_copied<std::vector<regrid_move>> regrid;
  not_copied<std::vector<big_vector<bulk_key>>> bulk_keys;  // per grid id
  not_copied<big_vector<bulk_key>> bulk_tmp;
  not_copied<big_vector<std::uint8_t>> bulk_reach;  // bulk move: each moved object's reach bits, by batch position
  not_copied<std::vector<bulk_key>> changers, changers_tmp;  // bulk move, merge: the objects that changed cell
  not_copied<std::vector<std::uint64_t>> changer_bits;       // bulk move, merge: one bit per slot that changed cell
  not_copied<std::vector<entry>> tmp;                        // rebuild
  std::size_t last_batch_changed = 0, last_batch_size = 0;   // bulk move: objects that changed cell, moves
  // bulk_keys[0] lists every object of the only grid, (cell, slot), sorted
  // by cell and then slot: the order the last bulk move laid them out in
  // (set by a bulk move of every object in slot order; cleared by anything
  // that adds, removes or re-cells a grid object). The next such move then
  // merges the objects that changed cell into it instead of sorting all
  // (bulk_move, "merge"). validate() checks it.
  not_copied_flag keys_current;
  // The last detection found most grid objects in grids whose rows hold
  // tune.row_cells cells or more on average (the row walk's grids; counted
  // while the grids hold fewer than tune.bulk_rows_min objects): a batch
  // below bulk_rows_min takes the bulk move only then (bulk_move).
  bool rows_dense = false;

  explicit hash_grids_state(const config& c) : cfg(c), base_class(class_for(c.cell_capacity)) {}

  [[gnu::always_inline]] double effective_size(const box_t& b) const { return base::effective_size(b, axis_scale); }

  // ---- grids --------------------------------------------------------------------
  void init_grid(grid& g, double cell_size, double lower) {
    g.cell_size = cell_size;
    g.lower = lower;
    for (int i = 0; i < D; ++i) g.inv[i] = axis_scale[i] / cell_size;
    for (int i = 0; i < D; ++i) {
      g.bits[i] = static_cast<std::uint32_t>(std::countr_zero(cfg.initial_cells[i]));
      g.mask[i] = cfg.initial_cells[i] - 1;
    }
    g.dir.assign(static_cast<std::size_t>(g.cell_count() >> kLocalBits), 0);
    g.bricks.assign(kBrickCells, 0);  // the empty brick (dir 0)
    g.occupied.reserve(cfg.occupied_cells_capacity);
  }

  std::uint32_t new_grid(double cell_size, double lower, std::size_t level_pos) {
    if (grids.size() >= kMaxGrids)
      throw error(errc::capacity,
                  "hhg: more than 250 grid levels needed (sizes span too many decades "
                  "for this hierarchy factor)");
    // Everything that can fail first (out of memory leaves no half-made grid).
    grid g;
    init_grid(g, cell_size, lower);
    levels.reserve(levels.size() + 1);
    grids.reserve(grids.size() + 1);
    grids.push_back(std::move(g));
    keys_current = false;  // (a second grid: the keys are per grid; see bulk_move)
    const auto id = static_cast<std::uint32_t>(grids.size() - 1);
    levels.insert(levels.begin() + static_cast<std::ptrdiff_t>(level_pos), id);
    return id;
  }

  // Algorithm 3: the grid for an object of effective size `eff`, created if
  // needed. Each grid keeps the bounds [lower, cell_size) it was created with,
  // so placement and the checks in move() and validate() agree exactly even
  // when f is not a power of two. An all-zero box (eff 0) fits any grid.
  // The grid an object of effective size eff belongs in, if it exists; npos
  // if grid_for would create one.
  std::uint32_t existing_grid(double eff) const {
    if (levels.empty()) return npos;
    if (eff <= 0) return levels.front();
    for (std::uint32_t id : levels)
      if (fits(grids[id], eff)) return id;
    return npos;
  }

  std::uint32_t grid_for(double eff) {
    const double f = cfg.hierarchy_factor;
    if (levels.empty()) {
      // cells sqrt(2) times the object whatever f is (sqrt(f) for f < 2: the
      // object must fit, eff >= c / f); see activate
      const double c = eff > 0 ? eff * std::sqrt(std::min(f, 2.0)) : 1.0;
      return new_grid(c, c / f, 0);
    }
    if (eff <= 0) return levels.front();
    for (std::size_t i = 0; i < levels.size(); ++i) {
      const grid& g = grids[levels[i]];
      if (eff < g.cell_size) {
        if (eff >= g.lower) return levels[i];
        double prev = g.lower, x = g.lower;
        while (eff < x) {
          x = skip_steps(x, x > ladder_floor ? std::max(eff, ladder_floor) : eff, step_below(x));
          prev = x;
          x /= step_below(x);
        }
        return new_grid(prev, x, i);  // x <= eff < prev
      }
    }
    double prev = grids[levels.back()].cell_size, x = prev;
    while (eff >= x) {
      x = skip_steps(x, eff, f);
      prev = x;
      x *= f;
    }
    return new_grid(x, prev, levels.size());  // prev <= eff < x
  }

  // x moved toward `to` by many steps of factor f at once, never reaching it
  // (down: still above it; up: still at most it), so that grid_for's walks
  // take a few steps whatever f is: with a factor near 1 they took
  // log(ratio) / log(f) steps (f = 1 + 1e-9, a box of size 1 then one of
  // 0.5: 7 * 10^8 divisions, 4 s; 1 + 1e-12: an hour). The jump stops
  // about two steps short and is halved while rounding would carry it past.
  static double skip_steps(double x, double to, double f) {
    const double steps = std::floor(std::abs(std::log(to) - std::log(x)) / std::log(f)) - 2;
    for (double k = steps; k > 16; k = std::floor(k / 2)) {
      const double y = to < x ? x / std::pow(f, k) : x * std::pow(f, k);
      if (to < x ? to < y : y <= to) return y;
    }
    return x;
  }

  // The grid for eff as grid_for, or npos when it would be a new level and
  // every level is taken (kMaxGrids): the object is then kept apart
  // (apart.hpp pairs it), so no finite input is refused for its level.
  std::uint32_t grid_or_apart(double eff) {
    if (grids.size() >= kMaxGrids) return existing_grid(eff);
    return grid_for(eff);
  }

  // ---- blocks ------------------------------------------------------------------
  // (a new block lies at or above ordered_end: free lists hold no block
  // below it, see free_block)
  std::uint32_t alloc_block(grid& g, int k) {
    auto& fl = g.free_blocks[k];
    if (!fl.empty()) {
      const std::uint32_t b = fl.back();
      fl.pop_back();
      return b;
    }
    const std::size_t start = g.pool.size();
    const std::size_t need = start + class_capacity(k);
    if (need > npos) throw error(errc::capacity, "hhg: a grid holds too many objects");
    reserve_for(g.pool, need);
    g.pool.resize(need, sentinel());
    return static_cast<std::uint32_t>(start);
  }

  void free_block(grid& g, std::uint32_t block, int k) {
    if (g.ordered && block < g.ordered_end) {  // a hole in the ordered part, until the next layout
      std::fill_n(g.pool.begin() + block, class_capacity(k), sentinel());
      return;
    }
    g.free_blocks[k].push_back(block);
  }

  void relocate(grid& g, occupied_cell& oc, int k) {
    const std::uint32_t nb = alloc_block(g, k);
    for (std::uint32_t j = 0; j < oc.count; ++j) {  // a few entries: a loop beats a memmove call
      g.pool[nb + j] = g.pool[oc.block + j];
      slots[g.pool[nb + j].id.index].at = nb + j;
    }
    free_block(g, oc.block, static_cast<int>(oc.klass));
    oc.block = nb;
    oc.klass = static_cast<std::uint32_t>(k);
    g.displaced += oc.count;
  }

  // ---- cells ---------------------------------------------------------------------
  std::uint32_t& cell_ref(grid& g, std::uint32_t code) {
    const std::uint32_t b = code >> kLocalBits;
    if (g.dir[b] == 0) {
      std::uint32_t id;
      if (!g.free_bricks.empty()) {
        id = g.free_bricks.back();
        g.free_bricks.pop_back();
      } else {
        id = static_cast<std::uint32_t>(g.brick_fill.size());
        g.brick_fill.push_back(0);
        g.bricks.resize(g.bricks.size() + kBrickCells, 0);
      }
      g.dir[b] = id + 1;
    }
    return g.bricks[(g.dir[b] << kLocalBits) | (code & kLocalMask)];
  }

  // ---- out of memory ---------------------------------------------------------
  // add_to_grid and remove_from_grid must not fail half-way: prepare_add and
  // prepare_remove reserve, beforehand, every capacity the operation can need
  // (a reservation changes nothing a user can observe), so the operation
  // itself never allocates. A free list is reserved before a block is
  // returned to it.
  // What a removal from a cell and/or an addition to a cell may need: the
  // block classes it takes (from a free list, else from the end of the pool),
  // the classes it returns to free lists, a brick, an occupied record.
  struct needs {
    std::array<int, 2> take{-1, -1}, give{-1, -1};
    bool new_brick = false, free_brick = false, new_cell = false;
    void add_take(int k) { take[take[0] < 0 ? 0 : 1] = k; }
    void add_give(int k) { give[give[0] < 0 ? 0 : 1] = k; }
  };
  void removal_needs(const grid& g, std::uint32_t code, needs& n) const;
  void addition_needs(const grid& g, std::uint32_t code, needs& n) const;
  // Reserves everything n lists, together: two takes of one class may need
  // two free blocks, two gives to one class two free-list places.
  void reserve(grid& g, const needs& n);
  void prepare_add(std::uint32_t gid, std::uint32_t code);
  void prepare_remove(std::uint32_t gid, std::uint32_t code);
  // Reserves what remove_from_grid(gid, from, .) followed by an add to cell
  // `to` of the same grid need together. prepare_remove and prepare_add one
  // after the other are not enough: both may count on the same free block,
  // both may grow the pool, and both may return a block to the same free list.
  void prepare_cell_change(std::uint32_t gid, std::uint32_t from, std::uint32_t to);

  // Whether a cell left with `left` objects moves to a smaller block (at most
  // half full: best fit). A block in the ordered part of the pool keeps its
  // place and its room: moved, the cell would be displaced (walked apart by
  // detection until the next compaction), and the room it keeps takes the
  // next object that enters the cell in place. Under slow motion (objects
  // leave and enter neighbouring cells) this halves the cells written out of
  // order (docs/hash_grids.md, Update strategies).
  bool shrinks(const grid& g, const occupied_cell& oc, std::uint32_t left) const;

  // Adds entry e to grid gid (slot table updated). No growth check.
  void add_to_grid(std::uint32_t gid, const entry& e);

  void remove_from_grid(std::uint32_t gid, std::uint32_t code, std::uint32_t at);

  void reset_grid(grid& g);

  // ---- slots -------------------------------------------------------------------
  bool live(handle h) const {
    return h.generation != 0 && h.index < slots.size() && slots[h.index].place() != kPlaceFree &&
           slots[h.index].generation() == h.generation;
  }

  // A handle's generation has 24 bits (the entry keeps reach bits above it).
  // A slot whose generation would wrap is retired instead of reused, so a
  // stale handle never names a live object again: retired slots are kept at
  // the tail of the free list (validate counts them as free) and new_slot
  // never takes one.
  static constexpr std::uint32_t kLastGeneration = (1u << 24) - 1;
  bool retired(std::uint32_t index) const { return slots[index].generation() == kLastGeneration; }

  handle new_slot() {
    std::uint32_t index;
    if (free_head != npos && !retired(free_head)) {
      index = free_head;
      free_head = slots[index].at;
      if (free_head == npos) free_tail = npos;
    } else {
      if (slots.size() >= npos - 1) throw error(errc::capacity, "hhg: too many objects (2^32 - 1)");
      reserve_for(slots, slots.size() + 1);
      slots.push_back({1u << 8 | kPlaceFree, 0, npos});
      index = static_cast<std::uint32_t>(slots.size() - 1);
    }
    return {index, slots[index].generation()};
  }

  // Undoes new_slot exactly (same generation for the next insert), for an
  // insert that failed. The slot may have been placed and unplaced since
  // (an activation that failed): it is marked free again, else it stayed
  // "live" while on the free list, and a clear() linked it in a second
  // time (a cycle: one slot handed out to two objects).
  void unnew_slot(std::uint32_t index, bool pushed) {
    if (pushed) {
      slots.pop_back();
    } else {
      slots[index].set_place(kPlaceFree);
      slots[index].at = free_head;
      free_head = index;
      if (free_tail == npos) free_tail = index;
    }
  }

  void release_slot(std::uint32_t index) {
    slot& s = slots[index];
    s.set_place(kPlaceFree);
    if (s.generation() + 1 >= kLastGeneration) {  // retired: the generation stays, the slot is never taken again
      s.tag = kLastGeneration << 8 | kPlaceFree;
      s.at = npos;
      if (free_tail == npos)
        free_head = index;
      else
        slots[free_tail].at = index;
      free_tail = index;
      ++paths.slots_retired;
      return;
    }
    s.next_generation();
    s.at = free_head;
    free_head = index;
    if (free_tail == npos) free_tail = index;
  }

  // ---- placing and unplacing objects ---------------------------------------------
  void push_list(std::vector<entry>& v, std::uint32_t place, const entry& e) {
    v.push_back(e);
    slot& s = slots[e.id.index];
    s.at = static_cast<std::uint32_t>(v.size() - 1);
    s.set_place(place);
  }

  void erase_list(std::vector<entry>& v, std::uint32_t pos) {
    if (pos + 1 != v.size()) {
      v[pos] = v.back();
      slots[v[pos].id.index].at = pos;
    }
    v.pop_back();
  }

  // Stores e where it belongs (grid, list or apart).
  void place(const entry& e) {
    const box_t b = e.box();
    const double eff = effective_size(b);
    if (!is_bounded(b) || std::isinf(eff)) {
      push_list(apart, kPlaceApart, e);
    } else if (!active) {
      push_list(list, kPlaceList, e);
    } else {
      const std::uint32_t gid = grid_or_apart(eff);
      if (gid == npos) return push_list(apart, kPlaceApart, e);
      maybe_grow(gid, 1);
      prepare_add(gid, cell_of(grids[gid], e));
      add_to_grid(gid, e);
    }
  }

  // Reserves what place(e) will need, so that it cannot fail after an
  // unplace (a move to another grid); may create e's grid level.
  void prepare_place(const entry& e) {
    const box_t b = e.box();
    const double eff = effective_size(b);
    if (!is_bounded(b) || std::isinf(eff)) {
      reserve_for(apart, apart.size() + 1);
    } else if (!active) {
      reserve_for(list, list.size() + 1);
    } else {
      const std::uint32_t gid = grid_or_apart(eff);
      if (gid == npos) return reserve_for(apart, apart.size() + 1);
      maybe_grow(gid, 1);
      prepare_add(gid, cell_of(grids[gid], e));
    }
  }
  void prepare_unplace(std::uint32_t index) {
    const slot& sl = slots[index];
    if (sl.place() < kMaxGrids) prepare_remove(sl.place(), sl.cell);
  }

  void unplace(std::uint32_t index) {
    const slot s = slots[index];
    switch (s.place()) {
      case kPlaceList: erase_list(list, s.at); break;
      case kPlaceApart: erase_list(apart, s.at); break;
      default: remove_from_grid(s.place(), s.cell, s.at);
    }
  }

  // A live object's entry (entry_of, below, for writing).
  entry& find(std::uint32_t index) { return const_cast<entry&>(std::as_const(*this).entry_of(index)); }

  // ---- positions after a bulk move -------------------------------------------------
  // A bulk move of a batch in slot order (handle i at position i: the time
  // step of a simulation) writes each object's grid and cell into its slot
  // in batch order, a sequential write, but not its new pool position, which
  // would be a write at a random place per object (relayout.hpp, bulk_move;
  // `hhg run --n 1000000 --threads 1`, five runs alternating with the build
  // before, medians: update 78.9 -> 65.7 ms and step 142.8 -> 127.8 for
  // `equal`, update 71.5 -> 60.1 and step 142.4 -> 129.1 for `varied`, on a
  // slow hour; detection unchanged). positions_stale
  // then says that the `at` of grid objects may be wrong. settle() writes
  // every grid object's grid, cell and position from the pools; every
  // non-const call that may read a position starts with it (writable), the
  // batch move when it does not take the bulk path, and the shape check
  // before a detection. Const calls stay read-only: entry_of finds a grid
  // object in its cell's block while the positions are stale.
  void settle() {
    for (std::uint32_t id = 0; id < grids.size(); ++id) repoint_grid(id);
    positions_stale = false;
    ++paths.settles;
  }
  // Points the slots of grid gid's objects at their cells and positions.
  void repoint_grid(std::uint32_t gid) {
    const grid& g = grids[gid];
    for (const occupied_cell& oc : g.occupied)
      for (std::uint32_t j = 0; j < oc.count; ++j) {
        // (the slots are scattered: fetched 16 entries ahead, sentinels of free room included)
        const std::uint32_t ahead = oc.block + j + 16;
        if (ahead < g.pool.size() && g.pool[ahead].id.index < slots.size())
          __builtin_prefetch(&slots[g.pool[ahead].id.index], 1);
        slot& sl = slots[g.pool[oc.block + j].id.index];
        sl.set_place(gid);
        sl.cell = oc.cell;
        sl.at = oc.block + j;
      }
  }
  void settle_positions() {
    if (positions_stale) settle();
  }
  // The entry of a live object, without writing (const calls).
  const entry& entry_of(std::uint32_t index) const {
    const slot& s = slots[index];
    switch (s.place()) {
      case kPlaceList: return list[s.at];
      case kPlaceApart: return apart[s.at];
      default: break;
    }
    const grid& g = grids[s.place()];
    if (!positions_stale) return g.pool[s.at];
    const occupied_cell& oc = g.occupied[lookup(g, s.cell) - 1];  // (its cell holds it)
    std::uint32_t k = oc.block;
    while (g.pool[k].id.index != index) ++k;
    return g.pool[k];
  }

  // Points the slots of every entry of list v (the all-pairs list or the
  // objects kept apart) at their positions in it.
  void repoint(const std::vector<entry>& v, std::uint32_t place) {
    for (std::uint32_t i = 0; i < v.size(); ++i) {
      slot& sl = slots[v[i].id.index];
      sl.set_place(place);
      sl.at = i;
    }
  }

  // The ladder for a batch that activates the grids (the batch is known
  // whole; the objects present at activation are only a sample, and a larger
  // object of the batch would make a level f times coarser): the first
  // level's cell size (anchor_hint, used by activate) and, with
  // cfg.adaptive_factor, the factor of the levels the batch spans
  // (levels.hpp).
  // (effs: the boxes' effective sizes)
  void plan_ladder(std::span<const box_t> bs, std::span<const double> effs) {
    using L = level_choice<D, T>;
    anchor_hint = L::anchor_cell(cfg.hierarchy_factor, bs, effs, axis_scale);
    anchor_spread = 1;
    if (!(anchor_hint > 0)) return;
    if (cfg.adaptive_factor) {
      const auto [f, floor] = L::factor_for(cfg.hierarchy_factor, anchor_hint, bs, effs, axis_scale);
      ++paths.ladders_estimated;
      ladder_f = f;
      ladder_floor = floor;
    }
    anchor_spread =
        L::spread_for(anchor_hint, anchor_hint / step_below(anchor_hint), bs, effs, axis_scale, tune.spread_max_log2);
    paths.levels_spread += anchor_spread > 1;
  }
  // The per-axis scales for a batch into an empty structure (levels.hpp,
  // axis_scale_for); true when they changed: the batch's effective sizes
  // (effs, computed with the old ones) must be computed again.
  bool choose_axis_scale(std::span<const box_t> bs, std::span<const double> effs) {
    if (count != 0 || !grids.empty()) return false;
    const auto chosen = level_choice<D, T>::axis_scale_for(bs, effs, tune.axis_scale_max_log2);
    if (chosen == axis_scale) return false;
    axis_scale = chosen;
    if (chosen != base::unit_scale()) ++paths.axes_scaled;
    return true;
  }
  // The objects no longer have the shape the scales were chosen for: the
  // scales chosen again from the objects as they are now and, if that
  // changes them, every grid built again (reshape). A scale that fits
  // needles along x makes a needle turned to y 8 times longer: it goes to a
  // coarser level, whose cells every needle along x then searches (10^5
  // needles, a tenth turned: 14.5 -> 649 box tests per object, detection
  // 12x slower than cube cells; all turned, 2 * 10^5: 15 ms -> 1.5 s). The
  // check, before every detection while a scale is not 1: a sample of the
  // objects (every step-th slot, an eighth of them, kShapeSampleMin to
  // kShapeSample), counting those the scales make longer
  // (level_choice::made_longer); more than 1 in 64, and the scales are
  // chosen again (a choice that makes that many longer costs more than
  // cubes, so it is not chosen again). The count reads the boxes in place
  // and allocates nothing; the sample is copied only for a new choice.
  static constexpr std::size_t kShapeSample = 1024, kShapeSampleMin = 256;
  void check_shape() {
    if (axis_scale == base::unit_scale() || rebuild_pending) return;
    ++paths.shape_checks;
    const std::size_t want = std::clamp<std::size_t>(slots.size() / 8, kShapeSampleMin, kShapeSample);
    const std::size_t step = std::max<std::size_t>(slots.size() / want, 1);
    auto sampled = [&](auto&& each) {
      for (std::size_t i = 0; i < slots.size(); i += step)
        if (slots[i].place() < kMaxGrids) each(entry_of(static_cast<std::uint32_t>(i)));  // (in a grid)
    };
    std::size_t longer = 0, seen = 0;
    sampled([&](const entry& e) {
      double longest = 0, scaled = 0;
      for (int a = 0; a < D; ++a) {
        const double edge = static_cast<double>(e.max(a)) - static_cast<double>(e.min(a));
        longest = std::max(longest, edge);
        scaled = std::max(scaled, edge * axis_scale[a]);
      }
      longer += level_choice<D, T>::made_longer(scaled, longest);
      ++seen;
    });
    if (longer * 64 <= seen) return;
    std::vector<box_t> sample;
    sample.reserve(seen);
    sampled([&](const entry& e) { sample.push_back(e.box()); });
    std::vector<double> effs(sample.size());
    for (std::size_t i = 0; i < sample.size(); ++i) effs[i] = base::effective_size(sample[i], base::unit_scale());
    const auto chosen = level_choice<D, T>::axis_scale_for(sample, effs, tune.axis_scale_max_log2);
    if (chosen != axis_scale) reshape(chosen);
  }
  // A level whose cells a batch made larger for objects far apart
  // (spread_for), whose objects have since come together (particles
  // settling into a pile): its cells crowd, and the box tests grow with the
  // square of their objects. Before every detection while such a level
  // exists, a sample of kSpreadSample objects (every step-th slot) reads
  // the count of each one's cell; when they share it with more than
  // kSpreadCrowded others on average (the batch chose at most 4), every grid
  // is built again with cells of its objects' size (reshape), for good. A
  // pile that holds a tenth of the objects, each sharing its cell with
  // hundreds, is missed by 64 samples once in a thousand detections; the
  // check costs 64 lookups (a few microseconds at 10^6 objects, where a
  // step of `sparse` takes ~70 ms).
  static constexpr double kSpreadCrowded = 16;
  static constexpr std::size_t kSpreadSample = 64;
  void check_spread() {
    if (!spread || rebuild_pending) return;
    ++paths.spread_checks;
    const std::size_t step = std::max<std::size_t>(slots.size() / kSpreadSample, 1);
    double others = 0;
    std::size_t seen = 0;
    for (std::size_t i = 0; i < slots.size(); i += step) {
      const slot& sl = slots[i];
      if (sl.place() >= kMaxGrids) continue;  // (in no grid)
      const grid& g = grids[sl.place()];
      const std::uint32_t r = base::lookup(g, sl.cell);
      if (r == 0) continue;  // (cannot happen: its cell holds it)
      others += g.occupied[r - 1].count - 1.0;
      ++seen;
    }
    if (seen == 0 || others <= kSpreadCrowded * static_cast<double>(seen)) return;
    spread = false;
    ++paths.spread_undone;
    reshape(axis_scale);
  }
  // Every grid built again under other scales (check_shape), anchored at the
  // largest object as activate() does, and laid out in one pass as a bulk
  // insert (lay_out_new; 2 * 10^5 needles, all turned: ~70 ms one by one,
  // ~17 ms so). Out of memory part-way: the objects not yet placed join the ones
  // kept apart (paired with everything: pairs stay exact), as in rebuild().
  void reshape(const typename base::scale_t& scale) {
    std::size_t total = 0;
    for (const grid& g : grids) total += g.objects;
    std::vector<box_t> bs;
    std::vector<handle> hs;
    reserve_for(bs, total);
    reserve_for(hs, total);
    reserve_for(apart, apart.size() + total);  // (for a failure below: pushed without allocating)
    const auto eff_buffer = std::make_unique_for_overwrite<double[]>(total);
    for (const grid& g : grids)
      for (const occupied_cell& oc : g.occupied)
        for (std::uint32_t j = 0; j < oc.count; ++j) {
          const entry& e = g.pool[oc.block + j];
          bs.push_back(e.box());
          hs.push_back(e.user_handle());
        }
    grids.clear();
    levels.clear();
    axis_scale = scale;
    if (scale != base::unit_scale()) ++paths.axes_scaled;
    ++paths.reshapes;
    const std::span<double> effs(eff_buffer.get(), total);
    double top = 0;
    for (std::size_t i = 0; i < total; ++i) {
      effs[i] = effective_size(bs[i]);
      slots[hs[i].index].set_place(kPlaceFree);  // (in no grid: placing sets it)
      if (std::isfinite(effs[i])) top = std::max(top, effs[i]);
    }
    std::vector<std::uint32_t> placed;  // (objects placed one by one when the layout declines)
    auto unplaced = [&](auto&& each) {
      for (std::size_t i = 0; i < total; ++i)
        if (slots[hs[i].index].place() == kPlaceFree) each(entry::make(bs[i], hs[i]));
    };
    try {
      try {
        if (top > 0) grid_for(top);
        lay_out_new(bs, effs, hs, placed);
      } catch (const error& e) {
        // every grid level taken and an object needs another: one by one,
        // such objects are kept apart (place)
        if (e.code() != errc::capacity) throw;
        release_bulk_scratch();
        unplaced([&](const entry& en) { place(en); });
      }
    } catch (...) {
      release_bulk_scratch();
      unplaced([&](const entry& en) { push_list(apart, kPlaceApart, en); });
      throw;
    }
  }

  // The ratio between the level whose lower bound is x and the next finer one.
  double step_below(double x) const { return x > ladder_floor ? ladder_f : cfg.hierarchy_factor; }
  void reset_ladder() {
    anchor_hint = 0;
    anchor_spread = 1;
    spread = false;
    ladder_f = cfg.hierarchy_factor;
    ladder_floor = std::numeric_limits<double>::infinity();
    axis_scale = base::unit_scale();
  }

  // Out of memory half-way: every grid is dropped and the list restored,
  // exactly as before (nothing here allocates), and the error is rethrown.
  void activate() {
    active = true;
    std::vector<entry> all;
    all.swap(list);  // releases the list's memory
    try {
      // The ladder of levels is anchored at the largest object present (its
      // level's cells sqrt(2) times its size), not at whichever object came
      // first: a ladder anchored at random leaves the largest objects, by
      // chance, in cells up to f sqrt(2) times their size (measured at 10^6,
      // sizes uniform over a factor 12, f = 4: 188 to 264 ms a step with the
      // ladder's phase; anchored at the top: 230 ms). See docs/hash_grids.md.
      double top = 0;
      for (const entry& e : all) {
        const box_t b = e.box();
        const double eff = is_bounded(b) ? effective_size(b) : 0;
        if (std::isfinite(eff)) top = std::max(top, eff);
      }
      const double hint = std::exchange(anchor_hint, 0.0);
      const double widen = std::exchange(anchor_spread, 1.0);
      if (hint > top && levels.empty()) {  // a batch's anchor (plan_ladder): every object present fits below it
        new_grid(hint * widen, hint / step_below(hint), 0);  // (its lower bound as without the spread)
        spread = widen > 1;
      } else if (top > 0) {
        grid_for(top);
      }
      for (const entry& e : all) place(e);
    } catch (...) {
      grids.clear();
      levels.clear();
      reset_ladder();
      active = false;
      list.swap(all);
      repoint(list, kPlaceList);
      throw;
    }
  }

  // Rebuild strategy: clear every cell, reinsert every grid object.
  // Out of memory part-way: the objects not yet placed join the unbounded ones
  // (tested against everything: pairs stay exact), rebuild_pending stays set,
  // and the next rebuild places them in the grids again. Nothing is lost: the
  // scratch vector is reserved for all objects before anything changes, and
  // on failure becomes the apart list (no allocation).
  bool belongs_in_grid(const entry& e) const {
    const box_t b = e.box();
    return is_bounded(b) && !std::isinf(effective_size(b));
  }
  void rebuild() {
    std::size_t total = 0;
    for (const grid& g : grids) total += g.objects;
    tmp.clear();
    reserve_for(tmp, total + apart.size());
    // nothing below allocates until place()
    for (grid& g : grids) gather(g, tmp);
    for (std::size_t i = apart.size(); i-- > 0;) {
      if (!belongs_in_grid(apart[i])) continue;
      tmp.push_back(apart[i]);
      erase_list(apart, static_cast<std::uint32_t>(i));
    }
    for (grid& g : grids) reset_grid(g);
    std::size_t i = 0;
    try {
      for (; i < tmp.size(); ++i) place(tmp[i]);  // place is all or nothing
    } catch (...) {
      tmp.erase(tmp.begin(), tmp.begin() + static_cast<std::ptrdiff_t>(i));  // the placed ones
      tmp.insert(tmp.end(), apart.begin(), apart.end());
      apart.swap(tmp);
      repoint(apart, kPlaceApart);
      throw;
    }
    rebuild_pending = false;
  }

  void release_batch_scratch() noexcept {
    std::vector<deferred_move>().swap(deferred);
    std::vector<deferred_move>().swap(deferred_tmp);
    std::vector<std::uint64_t>().swap(pending);
  }
  void release_bulk_scratch() noexcept {
    keys_current = false;
    std::vector<big_vector<bulk_key>>().swap(bulk_keys);
    big_vector<bulk_key>().swap(bulk_tmp);
    big_vector<std::uint8_t>().swap(bulk_reach);
    std::vector<bulk_key>().swap(changers);
    std::vector<bulk_key>().swap(changers_tmp);
    std::vector<std::uint64_t>().swap(changer_bits);
    std::vector<std::uint64_t>().swap(pending);
    std::vector<regrid_move>().swap(regrid);
  }

  // Stable radix sort of `deferred` by key (old cell code).
  void sort_deferred() {
    if (deferred.size() < 2) return;
    radix_sort(deferred, deferred_tmp, 32, [](const deferred_move& d) { return d.key; });
  }

  // ---- accounting ------------------------------------------------------------------
  std::size_t grid_bytes(const grid& g) const {
    std::size_t b = sizeof(grid) + capacity_bytes(g.dir) + capacity_bytes(g.bricks) + capacity_bytes(g.brick_fill) +
                    capacity_bytes(g.free_bricks) + capacity_bytes(g.occupied) + capacity_bytes(g.pool);
    for (const auto& fl : g.free_blocks) b += capacity_bytes(fl);
    return b;
  }

  std::size_t total_bytes() const {
    std::size_t b = sizeof(*this) + capacity_bytes(grids) + capacity_bytes(levels) + capacity_bytes(list) +
                    capacity_bytes(apart) + capacity_bytes(slots) + capacity_bytes(tmp) + capacity_bytes(deferred) +
                    capacity_bytes(deferred_tmp) + capacity_bytes(pending) + capacity_bytes(regrid) +
                    capacity_bytes(bulk_keys) + capacity_bytes(bulk_tmp) + capacity_bytes(bulk_reach) +
                    capacity_bytes(changers) + capacity_bytes(changers_tmp) + capacity_bytes(changer_bits);
    for (const auto& k : bulk_keys) b += capacity_bytes(k);
    for (const grid& g : grids) b += grid_bytes(g) - sizeof(grid);
    return b;
  }

  void gather(const grid& g, std::vector<entry>& out) const {
    for (const occupied_cell& oc : g.occupied)
      out.insert(out.end(), g.pool.begin() + oc.block, g.pool.begin() + oc.block + oc.count);
  }

  // ---- chunks of work on the executor (parallel.hpp) -------------------------------
  template <class F>
  void run_chunks(std::size_t chunks, F&& fn) {
    detail::run_chunks(exec, chunks, fn);
  }
  template <class V, class W, class Key>
  void parallel_radix_sort(V& v, W& scratch, std::uint32_t bits, Key key) {
    detail::parallel_radix_sort(exec, tune.chunk_moves, v, scratch, bits, key);
  }

  // ---- growth and relayout (relayout.hpp) -------------------------------------------
  void maybe_grow(std::uint32_t gid, std::size_t extra);
  // growth_rule::by_occupancy's shape (relayout.hpp): the objects' min-corner
  // cell coordinates' range per axis, the cells per axis for a total of code bits
  struct axis_extent {
    std::array<std::int64_t, D> lo, hi;
    axis_extent() {
      lo.fill(std::numeric_limits<std::int64_t>::max());
      hi.fill(std::numeric_limits<std::int64_t>::min());
    }
    void add(int i, std::int64_t c) {
      lo[i] = std::min(lo[i], c);
      hi[i] = std::max(hi[i], c);
    }
  };
  static constexpr std::size_t kReshapeMin = 4096;  // a grid with fewer objects is never reshaped
  static void add_extent(const grid& g, const std::vector<entry>& all, axis_extent& ext);
  void reshape_grid(std::uint32_t gid, const std::array<std::uint32_t, D>& bits, const std::vector<entry>& all);
  static std::array<std::uint32_t, D> shape_for(const axis_extent& ext, std::uint32_t total);
  static double spread_of(const axis_extent& ext, const std::array<std::uint32_t, D>& bits);
  void compact(grid& g);
  bool bulk_move(std::span<const handle> hs, std::span<const box_t> bs, std::size_t& checked,
                 const std::uint8_t* fresh_grids = nullptr);
  bool bulk_insert(std::span<const box_t> bs, std::span<const double> effs, std::vector<handle>& out);
  void merge_changed(big_vector<bulk_key>& keys, std::span<const std::size_t> changed_in, std::size_t chunk,
                     std::uint32_t bits);
  void lay_out_new(std::span<const box_t> bs, std::span<const double> effs, std::span<const handle> handles,
                   std::vector<std::uint32_t>& placed);

  [[noreturn]] static void broken(const std::string& what) {
    throw std::logic_error("hhg: hash_grids invariant broken: " + what);
  }

  void validate() const;
};

// The structures whose queries run on this thread, innermost first (a list
// of marks on the queries' stacks): a query's visitor must not change the
// structure it visits, and hash_grids' non-const calls check this list
// (reentrant_call). Per thread, so concurrent const queries on other threads
// neither see nor disturb each other.
struct query_mark {
  const void* state;
  const query_mark* prev;
};
inline thread_local const query_mark* query_marks = nullptr;
inline bool queried_on_this_thread(const void* state) {
  for (const query_mark* m = query_marks; m != nullptr; m = m->prev)
    if (m->state == state) return true;
  return false;
}

}  // namespace detail
}  // namespace hhg

#include "hash_grids/storage.hpp"  // (the definitions of the storage operations declared above)
