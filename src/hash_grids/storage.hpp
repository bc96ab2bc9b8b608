// Storage operations of hash_grids_state (declared in state.hpp, which
// includes this file after the class): what adding an object to a cell or
// removing it may need and its reservation beforehand (so that the operation
// itself never allocates: out of memory fails before anything changes), and
// the addition and removal themselves (blocks, bricks, occupied records).
#pragma once

#include "hash_grids/state.hpp"

namespace hhg {
namespace detail {

template <int D, class T>
void hash_grids_state<D, T>::removal_needs(const grid& g, std::uint32_t code, needs& n) const {
  const occupied_cell& oc = g.occupied[lookup(g, code) - 1];
  n.add_give(static_cast<int>(oc.klass));  // the cell's block, emptied or relocated
  if (oc.count == 1) {
    n.free_brick = true;
  } else if (shrinks(g, oc, oc.count - 1)) {
    n.add_take(std::max(base_class, class_for(oc.count - 1)));
  }
}

template <int D, class T>
void hash_grids_state<D, T>::addition_needs(const grid& g, std::uint32_t code, needs& n) const {
  if (g.dir[code >> kLocalBits] == 0) n.new_brick = true;
  const std::uint32_t r = lookup(g, code);
  if (r == 0) {
    n.new_cell = true;
    n.add_take(base_class);
  } else {
    const occupied_cell& oc = g.occupied[r - 1];
    if (oc.count == class_capacity(static_cast<int>(oc.klass)) && oc.klass + 1 < static_cast<std::uint32_t>(kClasses)) {
      n.add_take(static_cast<int>(oc.klass) + 1);
      n.add_give(static_cast<int>(oc.klass));
    }
  }
}

template <int D, class T>
void hash_grids_state<D, T>::reserve(grid& g, const needs& n) {
  if (n.new_brick && g.free_bricks.empty()) {
    reserve_for(g.bricks, g.bricks.size() + kBrickCells);
    reserve_for(g.brick_fill, g.brick_fill.size() + 1);
  }
  if (n.free_brick) reserve_for(g.free_bricks, g.free_bricks.size() + 1);
  if (n.new_cell) reserve_for(g.occupied, g.occupied.size() + 1);
  std::size_t pool_extra = 0;
  for (int i = 0; i < 2; ++i) {
    const int k = n.take[i];
    if (k < 0) continue;
    const std::size_t earlier = i == 1 && n.take[0] == k ? 1 : 0;  // free blocks the first take uses
    if (g.free_blocks[k].size() <= earlier) pool_extra += class_capacity(k);
  }
  if (pool_extra != 0) reserve_for(g.pool, g.pool.size() + pool_extra);
  for (int i = 0; i < 2; ++i) {
    const int k = n.give[i];
    if (k < 0) continue;
    const std::size_t both = n.give[0] == n.give[1] ? 2 : 1;
    reserve_for(g.free_blocks[k], g.free_blocks[k].size() + both);
  }
}

template <int D, class T>
void hash_grids_state<D, T>::prepare_add(std::uint32_t gid, std::uint32_t code) {
  needs n;
  addition_needs(grids[gid], code, n);
  reserve(grids[gid], n);
}

template <int D, class T>
void hash_grids_state<D, T>::prepare_remove(std::uint32_t gid, std::uint32_t code) {
  needs n;
  removal_needs(grids[gid], code, n);
  reserve(grids[gid], n);
}

template <int D, class T>
void hash_grids_state<D, T>::prepare_cell_change(std::uint32_t gid, std::uint32_t from, std::uint32_t to) {
  needs n;
  removal_needs(grids[gid], from, n);
  addition_needs(grids[gid], to, n);
  reserve(grids[gid], n);
}

template <int D, class T>
bool hash_grids_state<D, T>::shrinks(const grid& g, const occupied_cell& oc, std::uint32_t left) const {
  return static_cast<int>(oc.klass) > base_class && 2 * left <= class_capacity(static_cast<int>(oc.klass)) &&
         !(g.ordered && oc.block < g.ordered_end);
}

template <int D, class T>
void hash_grids_state<D, T>::add_to_grid(std::uint32_t gid, const entry& e) {
  grid& g = grids[gid];
  std::uint32_t reach;
  const std::uint32_t code = cell_and_reach(g, e.box(), reach);
  std::uint32_t& ref = cell_ref(g, code);
  if (ref == 0) {
    const std::uint32_t block = alloc_block(g, base_class);
    reserve_for(g.occupied, g.occupied.size() + 1);
    g.occupied.push_back({code, block, 0, static_cast<std::uint32_t>(base_class)});
    ref = static_cast<std::uint32_t>(g.occupied.size());
    ++g.brick_fill[g.dir[code >> kLocalBits] - 1];
  }
  occupied_cell& oc = g.occupied[ref - 1];
  if (oc.count == class_capacity(static_cast<int>(oc.klass))) {
    if (oc.klass + 1 >= static_cast<std::uint32_t>(kClasses))
      throw error(errc::capacity, "hhg: too many objects in one cell");
    relocate(g, oc, static_cast<int>(oc.klass) + 1);
  }
  g.pool[oc.block + oc.count] = e;
  g.pool[oc.block + oc.count].set_reach(reach);
  // (an object written into the room of a block in the ordered part is in
  // cell order: only what lands above ordered_end counts toward compaction)
  g.displaced += !g.ordered || oc.block >= g.ordered_end;
  slot& s = slots[e.id.index];
  s.cell = code;
  s.at = oc.block + oc.count;
  s.set_place(gid);
  ++oc.count;
  ++g.objects;
  keys_current = false;
}

template <int D, class T>
void hash_grids_state<D, T>::remove_from_grid(std::uint32_t gid, std::uint32_t code, std::uint32_t at) {
  grid& g = grids[gid];
  std::uint32_t& ref = cell_ref(g, code);
  const std::uint32_t oi = ref - 1;
  occupied_cell& oc = g.occupied[oi];
  const std::uint32_t last = oc.block + oc.count - 1;
  if (at != last) {
    g.pool[at] = g.pool[last];
    slots[g.pool[at].id.index].at = at;
  }
  g.pool[last] = sentinel();
  --oc.count;
  --g.objects;
  keys_current = false;
  if (oc.count == 0) {
    free_block(g, oc.block, static_cast<int>(oc.klass));
    ref = 0;
    const std::uint32_t brick = g.dir[code >> kLocalBits] - 1;
    if (--g.brick_fill[brick] == 0) {
      g.dir[code >> kLocalBits] = 0;
      g.free_bricks.push_back(brick);
    }
    if (oi + 1 != g.occupied.size()) {
      g.occupied[oi] = g.occupied.back();
      cell_ref(g, g.occupied[oi].cell) = oi + 1;
    }
    g.occupied.pop_back();
  } else if (shrinks(g, oc, oc.count)) {
    relocate(g, oc, std::max(base_class, class_for(oc.count)));  // at most half full: best fit
  }
}

template <int D, class T>
void hash_grids_state<D, T>::reset_grid(grid& g) {
  g.dir.assign(static_cast<std::size_t>(g.cell_count() >> kLocalBits), 0);
  g.bricks.assign(kBrickCells, 0);  // the empty brick (dir 0)
  g.brick_fill.clear();
  g.free_bricks.clear();
  g.occupied.clear();
  g.pool.clear();
  for (auto& fl : g.free_blocks) fl.clear();
  g.objects = 0;
  keys_current = false;
  g.displaced = 0;
  g.ordered = false;
  g.ordered_end = 0;
  g.sparse_rows = false;
}

}  // namespace detail
}  // namespace hhg
