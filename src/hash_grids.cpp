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
// class); a full block moves to the next class, a block at half of its
// capacity or less to the best-fitting class. A cell's objects are contiguous, removal
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
#include <memory>

#include "hash_grids/detection.hpp"
#include "hash_grids/region.hpp"

namespace hhg {

// ---- public interface ------------------------------------------------------------------

namespace {
[[noreturn]] void throw_moved_from(const char* op) {
  throw error(errc::moved_from, std::string("hhg: hash_grids::") + op + ": the structure was moved from");
}
[[noreturn]] void throw_reentrant(const char* op) {
  throw error(errc::reentrant_call, std::string("hhg: hash_grids::") + op +
                                        ": called from inside this structure's own for_each_pair callback "
                                        "(a detection is running: finish it first)");
}
[[noreturn]] void throw_in_query(const char* op) {
  throw error(errc::reentrant_call, std::string("hhg: hash_grids::") + op +
                                        ": called from inside a visitor of this structure's own query "
                                        "(the query is running: finish it first)");
}
}  // namespace

// Every non-const entry point starts here: the structure exists and is not in
// the middle of a detection (a for_each_pair callback changing it would
// corrupt the walk). (The calls that read the slots' pool positions settle
// them first: remove, move, a batch move off the bulk path, a rebuild;
// state.hpp, settle.)
template <int D, class T>
detail::hash_grids_state<D, T>& hash_grids<D, T>::writable(const char* op) {
  if (!s_) throw_moved_from(op);
  if (s_->in_detection.on) throw_reentrant(op);
  if (detail::query_marks != nullptr && detail::queried_on_this_thread(s_.get())) throw_in_query(op);
  return *s_;
}

template <int D, class T>
const detail::hash_grids_state<D, T>& hash_grids<D, T>::readable(const char* op) const {
  if (!s_) throw_moved_from(op);
  return *s_;
}

template <int D, class T>
hash_grids<D, T>::hash_grids(const config& c) {
  validate_config(c);
  s_ = std::make_unique<detail::hash_grids_state<D, T>>(c);
  x_ = std::make_unique<detail::detection_scratch<D, T>>();
}

template <int D, class T>
hash_grids<D, T>::~hash_grids() = default;

template <int D, class T>
hash_grids<D, T>::hash_grids(const hash_grids& o)
    : s_(std::make_unique<detail::hash_grids_state<D, T>>(o.readable("copy"))),
      x_(std::make_unique<detail::detection_scratch<D, T>>()) {}

template <int D, class T>
hash_grids<D, T>& hash_grids<D, T>::operator=(const hash_grids& o) {
  if (this != &o) {
    auto s = std::make_unique<detail::hash_grids_state<D, T>>(o.readable("operator="));
    if (s_ && s_->in_detection.on) throw_reentrant("operator=");
    if (s_ && detail::queried_on_this_thread(s_.get())) throw_in_query("operator=");
    s_ = std::move(s);
    if (!x_) x_ = std::make_unique<detail::detection_scratch<D, T>>();
  }
  return *this;
}

template <int D, class T>
hash_grids<D, T>::hash_grids(hash_grids&& o) noexcept = default;

template <int D, class T>
hash_grids<D, T>& hash_grids<D, T>::operator=(hash_grids&& o) noexcept {
  s_.swap(o.s_);
  x_.swap(o.x_);
  return *this;
}

template <int D, class T>
handle hash_grids<D, T>::insert(const box_type& b) {
  auto& s = writable("insert");
  detail::require_valid_box(b);
  using state = detail::hash_grids_state<D, T>;
  if (s.count + 1 > (std::size_t{1} << 32) - 2) throw error(errc::capacity, "hhg: too many objects");
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
  auto& s = writable("remove");
  if (!s.live(h)) detail::throw_invalid_handle("hash_grids::remove");
  s.settle_positions();
  s.prepare_unplace(h.index);
  s.unplace(h.index);
  s.release_slot(h.index);
  --s.count;
}

template <int D, class T>
void hash_grids<D, T>::move(handle h, const box_type& b) {
  auto& s = writable("move");
  if (!s.live(h)) detail::throw_invalid_handle("hash_grids::move");
  detail::require_valid_box(b);
  s.settle_positions();
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
      const double eff = s.effective_size(b);
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
  } else if (place == detail::kPlaceList && is_bounded(b) && !std::isinf(s.effective_size(b))) {
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
  auto& s = writable("move");
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
  // A bulk move keeps its keys for the next one (a time step follows a time
  // step): given back, they would be fresh memory to fault in and zero at
  // every step (equal cubes, 10^6 objects: 16 MB a step, ~10 % of one-thread
  // update time). Any other batch gives them back.
  if (bulk) return;
  s.release_bulk_scratch();
  s.settle_positions();
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
  if (n < s.tune.batch_two_pass || !s.active || s.cfg.strategy != update_strategy::incremental) {
    ++s.paths.batch_one_by_one;
    for (std::size_t i = 0; i < n; ++i) {
      prefetch(i);
      move_checked(hs[i], bs[i]);
    }
    return;
  }
  // Handles of consecutive slots (hs[i].index == hs[0].index + i: a
  // structure filled once and moved as a whole): each object's place in the
  // batch follows from its slot, so no handle is repeated and the boxes can
  // be read in the order of the grids' pools (the in-place first pass below).
  // (the first pass reads every grid object: only for a batch that moves
  // at least half of them)
  std::size_t grid_objects = 0;
  for (const auto& g : s.grids) grid_objects += g.objects;
  bool consecutive = !hs.empty() && 2 * hs.size() >= grid_objects;
  if (consecutive) {
    const std::uint32_t first = hs[0].index;
    for (std::size_t i = 0; i < hs.size(); ++i) consecutive &= hs[i].index - first == i;
  }
  // Two passes. The first stores the box of every object that keeps its cell
  // (the common case) and sets aside the others, which the second moves in
  // the order of their old cells: those moves then walk the cell tables and
  // the pool in memory order instead of jumping (a cell change touches the
  // old and the new cell's records and blocks). The result is the same as the
  // moves in order: an object set aside is marked `pending`, so a later move
  // of the same object in the batch is set aside too, behind it.
  auto& later = s.deferred;
  later.clear();
  if (consecutive) {
    // In place. The first pass walks each grid's cells and pools in their
    // order (the pool is in cell order after a layout) and reads each
    // object's new box from the batch (bs[index - first], fetched 16
    // objects ahead): an object that keeps its cell is written where it lies, a
    // sequential write, where the pass in batch order writes each entry at
    // a random place of the pool (and reads its slot). The others (a cell
    // or grid change, or not in a grid) are set aside as in the two-pass
    // path below.
    ++s.paths.batch_in_place;
    const std::uint32_t first = hs[0].index;
    for (std::uint32_t gid = 0; gid < s.grids.size(); ++gid) {
      auto& g = s.grids[gid];
      const auto* occ = g.occupied.data();
      auto* pool = g.pool.data();
      const std::size_t cells = g.occupied.size();
      // a cursor 16 objects ahead fetches their boxes (crowded cells too)
      std::size_t ka = 0;
      std::uint32_t ja = 0;
      auto fetch_ahead = [&] {
        while (ka < cells && ja >= occ[ka].count) {
          ++ka;
          ja = 0;
          if (ka + 16 < cells) __builtin_prefetch(pool + occ[ka + 16].block);
        }
        if (ka == cells) return;
        const std::uint32_t i = pool[occ[ka].block + ja++].id.index - first;
        if (i < n) {
          __builtin_prefetch(&bs[i]);
          __builtin_prefetch(reinterpret_cast<const char*>(&bs[i] + 1) - 1);
        }
      };
      for (int a = 0; a < 16; ++a) fetch_ahead();
      for (std::size_t k = 0; k < cells; ++k) {
        const auto& oc = occ[k];
        for (std::uint32_t j = 0; j < oc.count; ++j) {
          fetch_ahead();
          auto& e = pool[oc.block + j];
          const std::uint32_t i = e.id.index - first;
          if (i >= n) continue;  // not in the batch
          const box_type& b = bs[i];
          if (is_bounded(b) && s.fits(g, s.effective_size(b))) {
            std::uint32_t reach;
            if (state::cell_and_reach(g, b, reach) == oc.cell) {  // Algorithm 2: same cell, nothing moves
              e.set(b);
              e.set_reach(reach);
              continue;
            }
          }
          later.push_back({i, oc.cell});  // may throw: the boxes stored so far stay
        }
      }
    }
    for (const auto* v : {&s.list, &s.apart})
      for (const auto& e : *v)
        if (e.id.index - first < n) later.push_back({e.id.index - first, detail::npos});
  } else {
    ++s.paths.batch_two_pass;
    s.pending.assign((s.slots.size() + 63) / 64, 0);  // may throw: nothing changed yet
  }
  for (std::size_t i = 0; i < n && !consecutive; ++i) {
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
      if (!marked && is_bounded(b) && s.fits(g, s.effective_size(b))) {
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
      if (g != nullptr && is_bounded(b) && s.fits(*g, s.effective_size(b))) {  // else no cell (or no valid one)
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
        __builtin_prefetch(
            &g->bricks[(g->dir[code >> state::kLocalBits] << state::kLocalBits) | (code & state::kLocalMask)]);
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
  if (!readable("get").live(h)) detail::throw_invalid_handle("hash_grids::get");
  return s_->entry_of(h.index).box();
}

template <int D, class T>
bool hash_grids<D, T>::contains(handle h) const noexcept {
  return s_ && s_->live(h);
}

template <int D, class T>
std::size_t hash_grids<D, T>::size() const noexcept {
  return s_ ? s_->count : 0;
}

template <int D, class T>
void hash_grids<D, T>::update() {
  auto& s = writable("update");
  if (s.rebuild_pending) {
    s.settle_positions();
    s.rebuild();
    ++s.paths.rebuilds;
  }
}

// A detection marks the structure busy while it runs (a callback that changes
// it gets errc::reentrant_call), and always clears the mark.
namespace {
struct busy {
  bool& flag;
  explicit busy(bool& f) : flag(f) { flag = true; }
  ~busy() { flag = false; }
  busy(const busy&) = delete;
  busy& operator=(const busy&) = delete;
};
}  // namespace

// The pairs a first detection will find, estimated from a sample: one
// object of each of about kCells occupied cells spread evenly over the grids'
// cell lists, counted against its own level and the coarser ones
// (detail::search_region from its level up: the finer levels, whose cells
// are small beside it, would cost a scan each, as would the objects kept
// apart, whose pairs are not counted) and weighted by its cell's count. A
// pair within a level is seen from both of its objects, one across levels
// from its finer side only; scaled by the stride, that estimates the count
// (each cell is sampled with probability 1 / stride, and its objects alike).
// Fewer than kCells occupied cells: several objects of each, evenly spaced
// in the cell, about kCells in all (OutputReserve's clump, 3000 boxes in a
// few crowded cells, was estimated from one object a cell at 1.21 or 1.57
// times its pairs, with the order of the objects in their cells; now 1.03).
namespace {
template <int D, class T>
std::size_t sampled_pair_count(const detail::hash_grids_state<D, T>& s) {
  constexpr std::size_t kCells = 256;
  std::size_t cells = 0;
  for (const auto& g : s.grids) cells += g.occupied.size();
  const std::size_t stride = std::max<std::size_t>(1, cells / kCells);
  const std::size_t per_cell = std::max<std::size_t>(1, kCells / std::max<std::size_t>(cells, 1));
  double twice = 0;  // twice the pairs of the sample, weighted
  for (std::size_t li = 0; li < s.levels.size(); ++li) {
    const auto& g = s.grids[s.levels[li]];
    const auto* own_begin = g.pool.data();
    const auto* own_end = own_begin + g.pool.size();
    for (std::size_t c = 0; c < g.occupied.size(); c += stride) {
      const auto& oc = g.occupied[c];
      const std::size_t k = std::min<std::size_t>(oc.count, per_cell);
      for (std::size_t j = 0; j < k; ++j) {
        const auto& a = g.pool[oc.block + (c / stride + j * oc.count / k) % oc.count];
        std::array<double, D> lo{}, hi{};
        for (int i = 0; i < D; ++i) {
          lo[i] = a.min(i);
          hi[i] = a.max(i);
        }
        std::uint64_t within = 0, beyond = 0;
        detail::search_region<D, T>(
            s, lo, hi,
            [&](const auto& e) {
              for (int i = 0; i < D; ++i)
                if (e.max(i) < a.min(i) || a.max(i) < e.min(i)) return true;
              ++(&e >= own_begin && &e < own_end ? within : beyond);
              return true;
            },
            li, false);
        if (within > 0) --within;  // (a itself)
        twice += static_cast<double>(oc.count) / static_cast<double>(k) * static_cast<double>(within + 2 * beyond);
      }
    }
  }
  return static_cast<std::size_t>(twice / 2 * static_cast<double>(stride));
}
}  // namespace

// The output is reserved before the walks, because a vector that doubles its
// way to P pairs allocates, faults in and copies about 2P pairs' worth of
// fresh pages: at 10^6 equal cubes (2 * 10^6 pairs, a new vector) 90 -> 67
// ms for the detection and 22800 -> 9200 page faults, and it holds the old
// and the new array at once. After a detection its count + 1/8 is reserved
// (a caller that passes a new vector every step gains too); before the first
// one, over tune.reserve_estimate_min objects, the sampled estimate + 1/4.
// Reserved pages that are never written are never faulted in.
template <int D, class T>
void hash_grids<D, T>::find_pairs(std::vector<handle_pair>& out) {
  auto& s = writable("find_pairs");
  out.clear();
  s.check_shape();
  s.check_spread();
  std::size_t want = 0;
  if (s.detected) {
    want = static_cast<std::size_t>(s.pairs + s.pairs / 8);
  } else if (s.count >= s.tune.reserve_estimate_min && !s.rebuild_pending) {
    ++s.paths.outputs_estimated;
    const std::size_t e = sampled_pair_count(s);
    want = e + e / 4 + 1024;
  }
  if (want > out.capacity()) {
    out.reserve(want);
    detail::advise_huge(out.data(), out.capacity() * sizeof(handle_pair));  // (fresh memory, written by the walks)
  }
  busy mark(s.in_detection.on);
  x_->detect(s, out);
}

template <int D, class T>
void hash_grids<D, T>::for_each_pair(pair_callback f) {
  auto& s = writable("for_each_pair");
  s.check_shape();
  s.check_spread();
  busy mark(s.in_detection.on);
  x_->detect(s, f);
}

template <int D, class T>
void hash_grids<D, T>::clear() {
  auto& s = writable("clear");
  for (std::uint32_t i = 0; i < s.slots.size(); ++i)
    if (s.slots[i].place() != detail::kPlaceFree) s.release_slot(i);
  s.grids.clear();
  s.keys_current = false;
  s.levels.clear();
  s.list.clear();
  s.apart.clear();
  s.count = 0;
  s.active = false;
  s.reset_ladder();
  s.rebuild_pending = false;
  s.detected = false;
  s.positions_stale = false;
}

template <int D, class T>
const config& hash_grids<D, T>::settings() const {
  return readable("settings").cfg;
}

template <int D, class T>
void hash_grids<D, T>::set_executor(executor* e) {
  writable("set_executor").exec = e;
}

template <int D, class T>
executor* hash_grids<D, T>::get_executor() const {
  return readable("get_executor").exec;
}

template <int D, class T>
void hash_grids<D, T>::set_tuning(const detail::tuning& t) {
  writable("set_tuning").tune = t;
}

template <int D, class T>
const detail::tuning& hash_grids<D, T>::tuning() const {
  return readable("tuning").tune;
}

template <int D, class T>
const detail::path_counters& hash_grids<D, T>::path_counts() const {
  return readable("path_counts").paths;
}

template <int D, class T>
std::vector<handle> hash_grids<D, T>::insert(std::span<const box_type> bs) {
  auto& s = writable("insert");
  // Every box checked before anything changes, and its effective size (what
  // places it in a level) computed once, for the ladder and the bulk insert.
  detail::big_vector<double> eff_buffer;
  eff_buffer.resize(bs.size());  // (not zeroed: every one is written below)
  const std::span<double> effs(eff_buffer);
  for (std::size_t i = 0; i < bs.size(); ++i) {
    bool valid = true;  // min <= max on every axis (false for NaN too): check_box's none
    for (int a = 0; a < D; ++a) valid &= bs[i].min[a] <= bs[i].max[a];
    if (!valid) detail::require_valid_box(bs[i]);  // (throws, naming the problem)
    effs[i] = s.effective_size(bs[i]);
  }
  if (s.count + bs.size() > (std::size_t{1} << 32) - 2) throw error(errc::capacity, "hhg: too many objects");
  std::vector<handle> out;
  // Enough objects to activate the grids: into an empty structure, the grids
  // activated with no object and the whole batch laid out in one pass
  // (below); else the first ones one by one (up to activation), the rest laid
  // out in one pass (bulk_insert).
  std::size_t first = 0;
  bool activated_here = false;
  if (!s.active && s.count + bs.size() > s.cfg.activation_threshold) {
    first = s.cfg.activation_threshold + 1 - s.count;
    if (s.choose_axis_scale(bs, effs))  // (an empty structure: the cells' shape per axis, for the whole batch)
      for (std::size_t i = 0; i < bs.size(); ++i) effs[i] = s.effective_size(bs[i]);
    s.plan_ladder(bs, effs);  // the ladder anchored, and spaced, for the whole batch (used by the activation below)
  }
  out.reserve(bs.size());
  detail::advise_huge(out.data(), out.capacity() * sizeof(handle));  // (fresh memory, written below)
  try {
    // An empty structure activates at once, with no object: the whole batch
    // is laid out by the bulk insert (the first activation_threshold + 1 one
    // by one cost a second level of work: their grid reshaped and its
    // objects kept through the bulk move; callgrind: equal 10^3 one-shots -6.6 %, Terdiman 10^4 -1.1 %).
    if (first > 0 && s.count == 0 && bs.size() >= s.tune.bulk_min) {
      s.activate();
      activated_here = true;
      ++s.paths.bulk_activations;
      first = 0;
    }
    for (std::size_t i = 0; i < first; ++i) out.push_back(insert(bs[i]));
    if (first < bs.size()) {
      bool laid = false;
      try {
        laid = s.bulk_insert(bs.subspan(first), effs.subspan(first), out);  // (appends to out)
      } catch (const error& e) {
        // every grid level taken and the batch needs another: bulk_insert
        // changed nothing (out included); one by one, such objects are kept apart
        if (e.code() != errc::capacity || s.grids.size() < detail::kMaxGrids) throw;
      }
      if (!laid)
        for (std::size_t i = first; i < bs.size(); ++i) out.push_back(insert(bs[i]));
    }
  } catch (...) {
    for (auto it = out.rbegin(); it != out.rend(); ++it) remove(*it);
    if (activated_here) {  // as before the call: not active, no level
      s.grids.clear();
      s.levels.clear();
      s.active = false;
    }
    if (s.active) {
      s.anchor_hint = 0;
      s.anchor_spread = 1;
    } else
      s.reset_ladder();
    throw;
  }
  return out;
}

template <int D, class T>
statistics hash_grids<D, T>::stats() const {
  const auto& s = readable("stats");
  statistics st;
  st.objects = s.count;
  st.unbounded_objects = s.apart.size();
  st.list_objects = s.list.size();
  st.grids_active = s.active;
  for (std::uint32_t id : s.levels) {
    const auto& g = s.grids[id];
    grid_statistics gs;
    gs.cell_size = g.cell_size;
    for (int i = 0; i < D; ++i) gs.cell_edges[i] = g.cell_size / s.axis_scale[i];
    for (int i = 0; i < 3; ++i) gs.cells_per_axis[i] = i < D ? (1u << g.bits[i]) : 1u;
    gs.cell_count = g.cell_count();
    gs.objects = g.objects;
    gs.occupied_cells = g.occupied.size();
    gs.bytes = s.grid_bytes(g);
    st.grids.push_back(gs);
  }
  st.bytes = s.total_bytes() + (x_ ? x_->bytes() : 0);
  st.box_tests = s.box_tests;
  st.cells_visited = s.cells_visited;
  st.pairs = s.pairs;
  st.compactions = s.paths.compactions;
  return st;
}

template <int D, class T>
void hash_grids<D, T>::validate() const {
  readable("validate").validate();
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
