// Validation: every invariant of a hash_grids structure, checked on demand
// (hash_grids::validate; tests and debug builds). Read-only.
#include "hash_grids/state.hpp"

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
      if (positions_stale) {  // (settle: the slot names its grid and cell; the position is found there)
        for (std::uint32_t k = oc.block; k < oc.block + oc.count && e == nullptr; ++k)
          if (g.pool[k].id.index == i) e = &g.pool[k];
        if (e == nullptr) broken("object " + std::to_string(i) + " is not in the cell its slot names");
      } else {
        if (s.at < oc.block || s.at >= oc.block + oc.count) broken("slot position outside its cell's block");
        e = &g.pool[s.at];
      }
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
        if (s.place() != gi || s.cell != oc.cell || (!positions_stale && s.at != oc.block + k))
          broken("slot does not point at its entry");
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
        if (oc->block + class_capacity(static_cast<int>(oc->klass)) > g.ordered_end)
          broken("a block straddles the end of the ordered part");
        std::fill_n(live.begin() + oc->block, oc->count, 1);
      }
      for (std::size_t k = 0; k < live.size(); ++k)
        if (!live[k] && !std::all_of(g.pool[k].p.begin(), g.pool[k].p.end(),
                                     [](T v) { return v == std::numeric_limits<T>::infinity(); }))
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
  if (keys_current) {  // (bulk_move's merge: the last key list is the only grid's objects by (cell, slot))
    if (grids.size() != 1 || bulk_keys.size() != 1 || bulk_keys[0].size() != grids[0].objects)
      broken("the current key list does not list the grid's objects");
    const auto& keys = bulk_keys[0];
    for (std::size_t k = 0; k < keys.size(); ++k) {
      const bulk_key& key = keys[k];
      if (key.src >= slots.size() || slots[key.src].place() != 0 || slots[key.src].cell != key.code)
        broken("the current key list names an object out of its cell");
      if (k > 0 && (keys[k - 1].code > key.code || (keys[k - 1].code == key.code && keys[k - 1].src >= key.src)))
        broken("the current key list is out of order");
    }
  }
  if (!active && grid_objects != 0) broken("grid objects before activation");
}

template void hash_grids_state<2, float>::validate() const;
template void hash_grids_state<2, double>::validate() const;
template void hash_grids_state<3, float>::validate() const;
template void hash_grids_state<3, double>::validate() const;

}  // namespace detail
}  // namespace hhg
