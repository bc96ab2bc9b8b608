// Implementation notes: the hierarchical hash grid.
//
// Placement. An object's "effective size" is its longest edge, raised to
// max|coordinate| * 2^-q (q = 22 for float, 40 for double: the precision
// limit) and multiplied by (1 + 2^-9). The object goes to the grid with
// cell / f <= effective size < cell (Algorithm 3; grids created lazily, kept
// sorted by cell size in `levels`). The raise keeps |coordinate| / cell below
// 2^q, so cell indices are exact enough; the 2^-9 guard band absorbs the
// rounding of floor(coordinate * inverse cell size), so two overlapping
// objects always land in cells at most one apart (docs/hash_grids.md).
// Objects with an infinite coordinate (or absurdly large ones) live in the
// `apart` list and are tested against everything. Until more than
// activation_threshold objects are stored, bounded objects live in `list` and
// detection is all-pairs.
//
// Hashing. Cell coordinate k = floor(v / cell) & (n - 1) per axis (n a power of
// two >= 4, so negative coordinates wrap correctly and the 26 neighbours of a
// cell are distinct). The cell "code" is row-major, x | y << bits_x |
// z << (bits_x + bits_y), so a row along x is a run of codes. Cells are
// addressed through a two-level table over the code: bricks of 4^D
// consecutive codes; `dir` has one entry per brick (0 = no cell of the brick
// is occupied) and each allocated brick stores, per cell, the occupied-list
// index + 1 (0 = empty). Neighbour codes come from the cell's code by adding
// or subtracting one within each axis' bits (no offset arrays, no hash
// evaluation).
//
//   object --eff size--> grid --floor*inv & mask--> (x,y,z) --> code
//   code >> 2D --dir--> brick --code & (4^D-1)--> occupied index --> block
//
// Storage. Each occupied cell owns one block of a per-grid pool of entries
// (box + handle), with capacities 1,2,3,4,6,8,12,16,... (free lists per
// class); a full block moves to the next class, a block at a quarter of its
// capacity to the previous one. A cell's objects are contiguous, removal
// swaps with the cell's last object: O(1). The occupied list is a dense array
// with swap-removal. A slot table maps handles to (grid, cell code, position
// in block).
//
// Detection. Per grid (finest first), the occupied cells in code order, each
// against itself and its 13 (3D) / 4 (2D) forward neighbours. A grid whose
// pool is in code order (after a compaction or a bulk move) is walked row by
// row, each window of neighbour cells one stretch of the pool (sentinels in
// the gaps); otherwise each neighbour is looked up and its objects gathered
// into one candidate list, filtered by reach bits. Then, per pair of a finer and a coarser grid, every object of
// the finer one against the cells of the coarser one that can hold an
// overlapping object (at most 3 per axis), visited in the coarser grid's
// cell order (docs/hash_grids.md, Detection).
#include "hash_grids_state.hpp"

namespace hhg {
namespace detail {

template <int D, class T>
void hash_grids_state<D, T>::validate() const {
  std::size_t live_count = 0;
  for (std::size_t i = 0; i < slots.size(); ++i) {
    const slot& s = slots[i];
    if (s.place() == kPlaceFree) continue;
    ++live_count;
    const entry* e = nullptr;
    if (s.place() == kPlaceList || s.place() == kPlaceApart) {
      const auto& v = s.place() == kPlaceList ? list : apart;
      if (s.at >= v.size()) broken("slot " + std::to_string(i) + " points past its list");
      e = &v[s.at];
    } else {
      if (s.place() >= grids.size()) broken("slot " + std::to_string(i) + " names a missing grid");
      const grid& g = grids[s.place()];
      if ((s.cell >> kLocalBits) >= g.dir.size()) broken("slot cell code out of range");
      const std::uint32_t r = lookup(g, s.cell);
      if (r == 0 || r > g.occupied.size()) broken("slot " + std::to_string(i) + " names an empty cell");
      const occupied_cell& oc = g.occupied[r - 1];
      if (s.at < oc.block || s.at >= oc.block + oc.count) broken("slot position outside its cell's block");
      e = &g.pool[s.at];
      if (!rebuild_pending) {
        if (cell_of(g, *e) != s.cell) broken("object " + std::to_string(i) + " is not in the cell of its box");
        if (e->reach() != reach_of(g, e->box())) broken("object " + std::to_string(i) + " has stale reach bits");
        const double eff = effective_size(e->box());
        if (!(eff < g.cell_size)) broken("object " + std::to_string(i) + " is larger than its grid's cells");
        if (!fits(g, eff)) {
          // allowed only for objects whose level would be finer than every grid
          // (effective size 0); otherwise the object is in the wrong grid
          broken("object " + std::to_string(i) + " is in a grid of the wrong size class");
        }
      }
    }
    if (e->id.index != i || e->user_handle().generation != s.generation())
      broken("entry does not point back to its slot");
    if (!is_bounded(e->box()) && s.place() != kPlaceApart) broken("unbounded object outside the apart list");
    if (s.place() == kPlaceList && active) broken("all-pairs list used after activation");
  }
  if (live_count != count) broken("object count differs from live slots");
  std::size_t free_count = 0;
  for (std::uint32_t f = free_head; f != npos; f = slots[f].at) {
    if (f >= slots.size() || slots[f].place() != kPlaceFree) broken("free list corrupt");
    if (++free_count > slots.size()) broken("free list has a cycle");
  }
  if (free_count + live_count != slots.size()) broken("free slots are lost");
  std::size_t grid_objects = 0;
  for (std::size_t li = 0; li < levels.size(); ++li) {
    if (li > 0 && !(grids[levels[li - 1]].cell_size < grids[levels[li]].cell_size))
      broken("grid levels are not in ascending cell size");
  }
  if (levels.size() != grids.size()) broken("a grid is missing from the level list");
  for (std::size_t gi = 0; gi < grids.size(); ++gi) {
    const grid& g = grids[gi];
    std::size_t objs = 0;
    std::vector<std::uint32_t> fill(g.brick_fill.size(), 0);
    std::vector<std::uint8_t> used(g.pool.size(), 0);
    for (std::size_t oi = 0; oi < g.occupied.size(); ++oi) {
      const occupied_cell& oc = g.occupied[oi];
      if (oc.count == 0) broken("an occupied cell is empty");
      if (oc.count > class_capacity(static_cast<int>(oc.klass))) broken("a cell overflows its block");
      if (oc.block + class_capacity(static_cast<int>(oc.klass)) > g.pool.size()) broken("block past pool end");
      if (lookup(g, oc.cell) != oi + 1) broken("cell table does not map an occupied cell back");
      ++fill[g.dir[oc.cell >> kLocalBits] - 1];
      for (std::uint32_t k = 0; k < class_capacity(static_cast<int>(oc.klass)); ++k) {
        if (used[oc.block + k]++) broken("two blocks overlap");
      }
      for (std::uint32_t k = 0; k < oc.count; ++k) {
        const entry& e = g.pool[oc.block + k];
        const slot& s = slots[e.id.index];
        if (s.place() != gi || s.cell != oc.cell || s.at != oc.block + k) broken("slot does not point at its entry");
      }
      objs += oc.count;
    }
    if (!g.ordered && g.ordered_end != 0) broken("an unordered grid has an ordered part");
    if (g.ordered_end > g.pool.size()) broken("the ordered part ends past the pool");
    for (int k = 0; k < kClasses; ++k)
      for (std::uint32_t b : g.free_blocks[k]) {
        if (b < g.ordered_end) broken("a free block lies in the ordered part (it would be reused out of order)");
        for (std::uint32_t j = 0; j < class_capacity(k); ++j)
          if (b + j >= g.pool.size() || used[b + j]++) broken("a free block overlaps a used one");
      }
    for (std::size_t k = g.ordered_end; k < used.size(); ++k)  // (holes below ordered_end are sentinels, checked below)
      if (!used[k]) broken("pool space is lost (neither used nor free)");
    if (objs != g.objects) broken("grid object count is wrong");
    if (g.ordered) {  // below ordered_end: blocks in code order, every other entry a sentinel (detect_ordered relies on it)
      std::vector<const occupied_cell*> by_code;
      for (const occupied_cell& oc : g.occupied)
        if (oc.block < g.ordered_end) by_code.push_back(&oc);
      std::sort(by_code.begin(), by_code.end(), [](auto* a, auto* b) { return a->cell < b->cell; });
      for (std::size_t k = 1; k < by_code.size(); ++k)
        if (by_code[k]->block <= by_code[k - 1]->block) broken("an ordered pool is out of code order");
      std::vector<std::uint8_t> live(g.ordered_end, 0);
      for (const occupied_cell* oc : by_code) {
        if (oc->block + class_capacity(static_cast<int>(oc->klass)) > g.ordered_end) broken("a block straddles the end of the ordered part");
        std::fill_n(live.begin() + oc->block, oc->count, 1);
      }
      for (std::size_t k = 0; k < live.size(); ++k)
        if (!live[k] && !std::all_of(g.pool[k].p.begin(), g.pool[k].p.end(), [](T v) { return v == std::numeric_limits<T>::infinity(); }))
          broken("an ordered pool holds a stale entry outside the blocks");
    }
    grid_objects += objs;
    std::size_t cells_in_bricks = 0;
    for (std::size_t b = 0; b < g.dir.size(); ++b) {
      if (g.dir[b] == 0) continue;
      const std::uint32_t id = g.dir[b] - 1;
      if (fill[id] == 0 || fill[id] != g.brick_fill[id]) broken("brick fill count is wrong");
      cells_in_bricks += fill[id];
    }
    if (cells_in_bricks != g.occupied.size()) broken("occupied cells outside allocated bricks");
    for (std::uint32_t id : g.free_bricks) {
      if (g.brick_fill[id] != 0) broken("a free brick is in use");
      for (std::uint32_t k = 0; k < kBrickCells; ++k)
        if (g.bricks[((id + 1) << kLocalBits) | k] != 0) broken("a free brick holds cells");
    }
    if (g.bricks.size() != (g.brick_fill.size() + 1) * kBrickCells) broken("brick storage has the wrong size");
    for (std::uint32_t k = 0; k < kBrickCells; ++k)
      if (g.bricks[k] != 0) broken("the empty brick holds cells");
    if (g.free_bricks.size() + std::count_if(g.dir.begin(), g.dir.end(), [](std::uint32_t d) { return d != 0; }) !=
        g.brick_fill.size())
      broken("bricks are lost");
    if (g.objects > 0 && g.objects > g.cell_count() / cfg.minimal_grid_density) {
      std::uint32_t total = 0;
      for (int i = 0; i < D; ++i) total += g.bits[i];
      if (total + D <= 31) broken("a grid is fuller than the minimal grid density allows");
    }
  }
  if (grid_objects + list.size() + apart.size() != count) broken("objects are lost");
  if (!active && grid_objects != 0) broken("grid objects before activation");
}

}  // namespace detail

// ---- public interface ------------------------------------------------------------------

template <int D, class T>
hash_grids<D, T>::hash_grids(const config& c) {
  validate_config(c);
  s_ = std::make_unique<detail::hash_grids_state<D, T>>(c);
}

template <int D, class T>
hash_grids<D, T>::~hash_grids() = default;

template <int D, class T>
hash_grids<D, T>::hash_grids(const hash_grids& o)
    : s_(std::make_unique<detail::hash_grids_state<D, T>>(*o.s_)) {}

template <int D, class T>
hash_grids<D, T>& hash_grids<D, T>::operator=(const hash_grids& o) {
  if (this != &o) s_ = std::make_unique<detail::hash_grids_state<D, T>>(*o.s_);
  return *this;
}

template <int D, class T>
hash_grids<D, T>::hash_grids(hash_grids&& o) noexcept = default;

template <int D, class T>
hash_grids<D, T>& hash_grids<D, T>::operator=(hash_grids&& o) noexcept {
  s_.swap(o.s_);
  return *this;
}

template <int D, class T>
handle hash_grids<D, T>::insert(const box_type& b) {
  detail::require_valid_box(b);
  auto& s = *s_;
  using state = detail::hash_grids_state<D, T>;
  if (s.count + 1 > (std::size_t{1} << 32) - 2) throw error(errc::capacity, "hhg: too many objects");
  s.settle();
  const std::size_t slot_count = s.slots.size();
  const handle h = s.new_slot();
  try {
    s.place(state::entry::make(b, h));
  } catch (...) {
    s.unnew_slot(h.index, s.slots.size() != slot_count);
    throw;
  }
  ++s.count;
  if (!s.active && s.count > s.cfg.activation_threshold) {
    try {
      s.activate();
    } catch (...) {  // activation rolled back: undo the insert too
      s.unplace(h.index);
      s.unnew_slot(h.index, s.slots.size() != slot_count);
      --s.count;
      throw;
    }
  }
  return h;
}

template <int D, class T>
void hash_grids<D, T>::remove(handle h) {
  auto& s = *s_;
  if (!s.live(h)) detail::throw_invalid_handle("hash_grids::remove");
  s.settle();
  s.prepare_unplace(h.index);
  s.unplace(h.index);
  s.release_slot(h.index);
  --s.count;
}

template <int D, class T>
void hash_grids<D, T>::move(handle h, const box_type& b) {
  if (!s_->live(h)) detail::throw_invalid_handle("hash_grids::move");
  detail::require_valid_box(b);
  s_->settle();
  move_checked(h, b);
}

// The update phase for one object whose handle and box were checked.
template <int D, class T>
void hash_grids<D, T>::move_checked(handle h, const box_type& b) {
  auto& s = *s_;
  using state = detail::hash_grids_state<D, T>;
  const auto sl = s.slots[h.index];
  const std::uint32_t place = sl.place();
  if (place < detail::kMaxGrids) {
    auto& g = s.grids[place];
    if (is_bounded(b)) {
      const double eff = state::effective_size(b);
      if (s.cfg.strategy == update_strategy::rebuild && !std::isinf(eff)) {
        s.find(h.index).set(b);  // reinserted by the next update()
        s.rebuild_pending = true;
        return;
      }
      if (s.fits(g, eff)) {
        std::uint32_t reach;
        const std::uint32_t code = state::cell_and_reach(g, b, reach);
        if (code == sl.cell) {  // Algorithm 2: same cell, nothing moves
          auto& e = g.pool[sl.at];
          e.set(b);
          e.set_reach(reach);
          return;
        }
        s.prepare_cell_change(place, sl.cell, code);  // reserve first: nothing below can fail
        s.remove_from_grid(place, sl.cell, sl.at);
        s.add_to_grid(place, state::entry::make(b, h));
        return;
      }
    }
  } else if (place == detail::kPlaceList && is_bounded(b) && !std::isinf(state::effective_size(b))) {
    s.list[sl.at].set(b);
    return;
  }
  // change of grid or of list: remove, then place (a new grid may be
  // created); everything both need is reserved first
  const auto e = state::entry::make(b, h);
  s.prepare_unplace(h.index);
  s.prepare_place(e);
  s.unplace(h.index);
  s.place(e);
}

template <int D, class T>
void hash_grids<D, T>::move(std::span<const handle> hs, std::span<const box_type> bs) {
  auto& s = *s_;
  using state = detail::hash_grids_state<D, T>;
  if (hs.size() != bs.size())
    throw error(errc::bad_config, "hhg: hash_grids::move: " + std::to_string(hs.size()) + " handles but " +
                                      std::to_string(bs.size()) + " boxes");
  // Most of the grid objects at once: lay the grids out anew, in cell order
  // (see bulk_move); otherwise object by object, below. bulk_move validates
  // the handles and boxes it reads (hs[0, checked)); the rest are validated
  // here, in order, before anything changes.
  bool bulk = false;
  std::size_t checked = 0;
  try {
    bulk = s.bulk_move(hs, bs, checked);
  } catch (...) {  // out of memory before anything changed
    s.release_bulk_scratch();
    throw;
  }
  s.release_bulk_scratch();
  if (bulk) return;
  s.settle();
  for (std::size_t i = checked; i < hs.size(); ++i) {
    if (!s.live(hs[i])) detail::throw_invalid_handle("hash_grids::move (batch)");
    detail::require_valid_box(bs[i]);
  }
  // With the objects stored by cell and the handles in the user's order, each
  // move touches a random entry: fetch the slots and entries a few moves ahead
  // so the misses overlap instead of following one another.
  constexpr std::size_t kSlotAhead = 16, kEntryAhead = 8;
  const std::size_t n = hs.size();
  auto prefetch = [&](std::size_t i) {
    if (i + kSlotAhead < n) __builtin_prefetch(&s.slots[hs[i + kSlotAhead].index]);
    if (i + kEntryAhead < n) {
      const auto& ahead = s.slots[hs[i + kEntryAhead].index];
      if (ahead.place() < detail::kMaxGrids) {
        const auto& g = s.grids[ahead.place()];
        if (ahead.at < g.pool.size()) {  // an entry may straddle two cache lines
          const char* e = reinterpret_cast<const char*>(g.pool.data() + ahead.at);
          __builtin_prefetch(e, 1);
          __builtin_prefetch(e + sizeof(*g.pool.data()) - 1, 1);
        }
      }
    }
  };
  constexpr std::size_t kTwoPass = 4096;
  if (n < kTwoPass || !s.active || s.cfg.strategy != update_strategy::incremental) {
    for (std::size_t i = 0; i < n; ++i) {
      prefetch(i);
      move_checked(hs[i], bs[i]);
    }
    return;
  }
  // Two passes. The first stores the box of every object that keeps its cell
  // (the common case) and sets aside the others, which the second moves in
  // the order of their old cells: those moves then walk the cell tables and
  // the pool in memory order instead of jumping (a cell change touches the
  // old and the new cell's records and blocks). The result is the same as the
  // moves in order: an object set aside is marked `pending`, so a later move
  // of the same object in the batch is set aside too, behind it.
  s.pending.assign((s.slots.size() + 63) / 64, 0);  // may throw: nothing changed yet
  auto& later = s.deferred;
  later.clear();
  for (std::size_t i = 0; i < n; ++i) {
    prefetch(i);
    const handle h = hs[i];
    const box_type& b = bs[i];
    const auto sl = s.slots[h.index];
    const std::uint32_t place = sl.place();
    std::uint32_t key = detail::npos;  // not in a grid: moved last
    const bool marked = (s.pending[h.index >> 6] >> (h.index & 63)) & 1u;
    if (place < detail::kMaxGrids) {
      key = sl.cell;
      auto& g = s.grids[place];
      if (!marked && is_bounded(b) && s.fits(g, state::effective_size(b))) {
        std::uint32_t reach;
        if (state::cell_and_reach(g, b, reach) == sl.cell) {  // Algorithm 2: same cell, nothing moves
          auto& e = g.pool[sl.at];
          e.set(b);
          e.set_reach(reach);
          continue;
        }
      }
    }
    later.push_back({static_cast<std::uint32_t>(i), key});  // may throw: the boxes stored so far stay
    s.pending[h.index >> 6] |= std::uint64_t{1} << (h.index & 63);
  }
  s.sort_deferred();
  const std::size_t m = later.size();
  s.last_batch_changed = m;  // (the bulk path's next choice)
  s.last_batch_size = n;
  // A cell change reads the new cell's directory entry, brick and record,
  // each known only once the one before is loaded: they are fetched in
  // stages, 8, 4 and 2 moves ahead (the slot and box 16 ahead).
  std::array<std::uint32_t, 16> code_ahead;  // new cell of move k, from stage 8 on (npos: none)
  code_ahead.fill(detail::npos);
  auto grid_of = [&](std::size_t k) -> const typename state::grid* {
    const auto& sl = s.slots[hs[later[k].index].index];
    return sl.place() < detail::kMaxGrids ? &s.grids[sl.place()] : nullptr;
  };
  for (std::size_t k = 0; k < m; ++k) {
    if (k + kSlotAhead < m) {
      const std::uint32_t i = later[k + kSlotAhead].index;
      __builtin_prefetch(&s.slots[hs[i].index]);
      __builtin_prefetch(&bs[i]);
      __builtin_prefetch(reinterpret_cast<const char*>(&bs[i] + 1) - 1);
    }
    if (k + 8 < m) {
      const auto* g = grid_of(k + 8);
      std::uint32_t code = detail::npos;
      const box_type& b = bs[later[k + 8].index];
      if (g != nullptr && is_bounded(b) && s.fits(*g, state::effective_size(b))) {  // else no cell (or no valid one)
        code = state::cell_of(*g, b);
        __builtin_prefetch(&g->dir[code >> state::kLocalBits]);
      }
      code_ahead[(k + 8) % 16] = code;
    }
    // (a handle that comes twice in the batch may have changed grid since
    // its code was computed: the code is checked against the grid again)
    if (k + 4 < m && code_ahead[(k + 4) % 16] != detail::npos) {
      const auto* g = grid_of(k + 4);
      const std::uint32_t code = code_ahead[(k + 4) % 16];
      if (g != nullptr && (code >> state::kLocalBits) < g->dir.size())
        __builtin_prefetch(&g->bricks[(g->dir[code >> state::kLocalBits] << state::kLocalBits) | (code & state::kLocalMask)]);
    }
    if (k + 2 < m && code_ahead[(k + 2) % 16] != detail::npos) {
      const auto* g = grid_of(k + 2);
      const std::uint32_t code = code_ahead[(k + 2) % 16];
      if (g != nullptr && (code >> state::kLocalBits) < g->dir.size()) {
        const std::uint32_t r = state::lookup(*g, code);
        if (r != 0) __builtin_prefetch(&g->occupied[r - 1]);
      }
    }
    const std::uint32_t i = later[k].index;
    move_checked(hs[i], bs[i]);
  }
  // The scratch is a few bytes per moved object: give it back rather than
  // hold it between steps (memory is budgeted per object).
  s.release_batch_scratch();
}

template <int D, class T>
typename hash_grids<D, T>::box_type hash_grids<D, T>::get(handle h) const {
  if (!s_->live(h)) detail::throw_invalid_handle("hash_grids::get");
  s_->settle();  // (safe with concurrent const calls)
  return s_->find(h.index).box();
}

template <int D, class T>
bool hash_grids<D, T>::contains(handle h) const noexcept {
  return s_->live(h);
}

template <int D, class T>
std::size_t hash_grids<D, T>::size() const noexcept {
  return s_->count;
}

template <int D, class T>
void hash_grids<D, T>::update() {
  if (s_->rebuild_pending) {
    s_->settle();
    s_->rebuild();
  }
}

template <int D, class T>
void hash_grids<D, T>::find_pairs(std::vector<handle_pair>& out) {
  out.clear();
  struct {  // pairs one at a time, or a batch at once (detect_ordered)
    std::vector<handle_pair>& out;
    void operator()(handle a, handle b) { out.push_back({a, b}); }
    void append(const handle_pair* p, std::size_t k) { out.insert(out.end(), p, p + k); }
  } sink{out};
  s_->detect(sink);
  s_->pairs = out.size();
}

template <int D, class T>
void hash_grids<D, T>::for_each_pair(pair_callback f) {
  std::uint64_t n = 0;
  auto sink = [&f, &n](handle a, handle b) {
    ++n;
    f(a, b);
  };
  s_->detect(sink);
  s_->pairs = n;
}

template <int D, class T>
void hash_grids<D, T>::clear() {
  auto& s = *s_;
  for (std::uint32_t i = 0; i < s.slots.size(); ++i)
    if (s.slots[i].place() != detail::kPlaceFree) s.release_slot(i);
  s.grids.clear();
  s.levels.clear();
  s.list.clear();
  s.apart.clear();
  s.count = 0;
  s.active = false;
  s.rebuild_pending = false;
  s.stale_slots.on.store(false);
}

template <int D, class T>
const config& hash_grids<D, T>::settings() const noexcept {
  return s_->cfg;
}

template <int D, class T>
void hash_grids<D, T>::set_executor(executor* e) noexcept {
  s_->exec = e;
}

template <int D, class T>
executor* hash_grids<D, T>::get_executor() const noexcept {
  return s_->exec;
}

template <int D, class T>
std::vector<handle> hash_grids<D, T>::insert(std::span<const box_type> bs) {
  for (const box_type& b : bs) detail::require_valid_box(b);
  std::vector<handle> out;
  out.reserve(bs.size());
  try {
    for (const box_type& b : bs) out.push_back(insert(b));
  } catch (...) {
    for (auto it = out.rbegin(); it != out.rend(); ++it) remove(*it);
    throw;
  }
  return out;
}

template <int D, class T>
statistics hash_grids<D, T>::stats() const {
  const auto& s = *s_;
  statistics st;
  st.objects = s.count;
  st.unbounded_objects = s.apart.size();
  st.list_objects = s.list.size();
  st.grids_active = s.active;
  for (std::uint32_t id : s.levels) {
    const auto& g = s.grids[id];
    grid_statistics gs;
    gs.cell_size = g.cell_size;
    for (int i = 0; i < 3; ++i) gs.cells_per_axis[i] = i < D ? (1u << g.bits[i]) : 1u;
    gs.cell_count = g.cell_count();
    gs.objects = g.objects;
    gs.occupied_cells = g.occupied.size();
    gs.bytes = s.grid_bytes(g);
    st.grids.push_back(gs);
  }
  st.bytes = s.total_bytes();
  st.box_tests = s.box_tests;
  st.cells_visited = s.cells_visited;
  st.pairs = s.pairs;
  st.compactions = s.compactions;
  return st;
}

template <int D, class T>
void hash_grids<D, T>::validate() const {
  s_->settle();
  s_->validate();
}

template <int D, class T>
double hash_grids<D, T>::precision_limit() noexcept {
  return std::ldexp(1.0, detail::hash_grids_state<D, T>::q);
}

template class hash_grids<2, float>;
template class hash_grids<2, double>;
template class hash_grids<3, float>;
template class hash_grids<3, double>;

}  // namespace hhg
