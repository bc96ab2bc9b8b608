// Hierarchical hashing (see include/hhg/hierarchical_hashing.hpp).
//
// Implementation note. Classes and cells are those of multilevel hashing
// (spatial_hashing.cpp): cell coordinate floor(v * 2^-c), exact and monotone;
// cells of class c nest in cells of class c + 1. Why the pruning never loses
// a pair: let a (class ca) and b (class cb, ca <= cb < k) overlap and let m be
// the lower corner of their intersection. On each axis the cell of m at class
// cb is the cell of b's min or of b's max, and likewise of a's min or max; so
// some corner of b and some corner of a lie in the cell of m at class cb, and
// hence in the same cell at every coarser class k (nesting). b's corner flagged
// that class-k cell `has_children` when b was inserted, so a's corner is not
// dropped there and reaches class cb, where it finds b in the cell of m.
// Keys are sums of 64-bit hashes; cells that collide on a key are told apart
// by their stored class and coordinates, and a collision can only set
// `has_children` where it is not needed (less pruning, never a lost pair).
#include "hhg/hierarchical_hashing.hpp"

#include <algorithm>
#include <climits>
#include <cmath>

#include "power_of_two_cells.hpp"

namespace hhg {

namespace {

using detail::ceil_log2;
using detail::cell_coord;
using detail::class_cell_hash;

std::uint64_t slot_index(std::uint64_t key, std::size_t mask) { return (key ^ (key >> 29)) & mask; }

constexpr std::int32_t kApart = INT32_MIN;

}  // namespace

template <int D, class T>
typename hierarchical_hashing<D, T>::slot& hierarchical_hashing<D, T>::find_or_add(std::uint64_t key) {
  detail::grow_open_table(slots_, used_,
                          [](const slot& s, std::size_t m) { return static_cast<std::size_t>(slot_index(s.key, m)); });
  const std::size_t mask = slots_.size() - 1;
  std::size_t i = slot_index(key, mask);
  while (slots_[i].used && slots_[i].key != key) i = (i + 1) & mask;
  if (!slots_[i].used) {
    slots_[i] = {key, 0, 0, true, false};
    ++used_;
  }
  return slots_[i];
}

template <int D, class T>
const typename hierarchical_hashing<D, T>::slot* hierarchical_hashing<D, T>::find(std::uint64_t key) const {
  if (slots_.empty()) return nullptr;
  const std::size_t mask = slots_.size() - 1;
  for (std::size_t i = slot_index(key, mask);; i = (i + 1) & mask) {
    if (!slots_[i].used) return nullptr;
    if (slots_[i].key == key) return &slots_[i];
  }
}

template <int D, class T>
void hierarchical_hashing<D, T>::build() {
  const auto boxes = this->table_.boxes();
  const std::size_t n = boxes.size();
  level_of_.resize(n);
  lo_of_.resize(n);
  apart_.clear();
  classes_.clear();
  entries_.clear();
  std::fill(slots_.begin(), slots_.end(), slot{});
  used_ = 0;
  // classes (as multilevel hashing)
  std::int32_t lowest = INT32_MAX;
  for (std::size_t i = 0; i < n; ++i) {
    const auto& b = boxes[i];
    double edge = 0, mag = 0;
    for (int k = 0; k < D; ++k) {
      edge = std::max(edge, static_cast<double>(b.max[k]) - static_cast<double>(b.min[k]));
      mag = std::max({mag, std::fabs(static_cast<double>(b.min[k])), std::fabs(static_cast<double>(b.max[k]))});
    }
    if (!is_bounded(b) || !std::isfinite(edge) || !std::isfinite(mag)) {
      level_of_[i] = kApart;
      continue;
    }
    const std::int32_t need = mag > 0 ? std::ilogb(mag) + 1 - 52 : INT32_MIN + 1;
    if (edge > 0) {
      level_of_[i] = std::max(ceil_log2(edge), need);
      lowest = std::min(lowest, level_of_[i]);
    } else {
      level_of_[i] = need;  // a point: raised to the lowest class below
    }
  }
  const std::int32_t base = lowest == INT32_MAX ? 0 : lowest;
  for (std::size_t i = 0; i < n; ++i) {
    if (level_of_[i] == kApart) {
      apart_.push_back(static_cast<std::uint32_t>(i));
      continue;
    }
    double edge = 0;
    for (int k = 0; k < D; ++k)
      edge = std::max(edge, static_cast<double>(boxes[i].max[k]) - static_cast<double>(boxes[i].min[k]));
    if (edge == 0) level_of_[i] = std::max(level_of_[i], base);
    // max - min is rounded (16 + 1e-30 computes as 16): raise the class until
    // the box spans at most 2 cells per axis, which the corner hashing needs
    // (found by the fuzzer).
    for (bool fits = false; !fits;) {
      fits = true;
      for (int k = 0; k < D; ++k)
        fits &= cell_coord(static_cast<double>(boxes[i].max[k]), level_of_[i]) -
                    cell_coord(static_cast<double>(boxes[i].min[k]), level_of_[i]) <=
                1;
      if (!fits) ++level_of_[i];
    }
    classes_.push_back(level_of_[i]);
  }
  std::sort(classes_.begin(), classes_.end(), std::greater<>());
  classes_.erase(std::unique(classes_.begin(), classes_.end()), classes_.end());
  // top-down insertion of every corner (Listing 1)
  for (std::size_t i = 0; i < n; ++i) {
    const std::int32_t c = level_of_[i];
    if (c == kApart) continue;
    const auto& b = boxes[i];
    for (int k = 0; k < D; ++k) lo_of_[i][k] = cell_coord(static_cast<double>(b.min[k]), c);
    for (unsigned corner = 0; corner < (1u << D); ++corner) {
      std::array<double, D> p{};
      bool duplicate = false;  // a corner whose cell at class c an earlier corner had
      for (int k = 0; k < D; ++k) {
        const bool up = (corner >> k) & 1u;
        p[k] = static_cast<double>(up ? b.max[k] : b.min[k]);
        if (up && cell_coord(p[k], c) == lo_of_[i][k]) duplicate = true;
      }
      if (duplicate) continue;
      std::uint64_t key = 0;
      for (const std::int32_t level : classes_) {
        std::array<std::int64_t, D> cell{};
        for (int k = 0; k < D; ++k) cell[k] = cell_coord(p[k], level);
        key += class_cell_hash<D>(level, cell);
        if (level == c) {
          entries_.push_back({key, cell, c, static_cast<std::uint32_t>(i)});
          break;
        }
        find_or_add(key).has_children = true;
      }
    }
  }
  std::sort(entries_.begin(), entries_.end(),
            [](const entry& x, const entry& y) { return x.key < y.key || (x.key == y.key && x.object < y.object); });
  for (std::size_t e = 0; e < entries_.size();) {
    std::size_t f = e;
    while (f < entries_.size() && entries_[f].key == entries_[e].key) ++f;
    slot& s = find_or_add(entries_[e].key);
    s.begin = static_cast<std::uint32_t>(e);
    s.end = static_cast<std::uint32_t>(f);
    e = f;
  }
}

template <int D, class T>
void hierarchical_hashing<D, T>::for_each_pair(pair_callback f) {
  build();
  const auto boxes = this->table_.boxes();
  const auto ids = this->table_.ids();
  box_tests_ = cells_visited_ = 0;
  const std::size_t n = boxes.size();
  struct point {
    std::array<double, D> p;
    std::uint64_t key;
    bool live;
  };
  std::array<point, 1u << D> pts{};
  for (std::size_t a = 0; a < n; ++a) {
    const std::int32_t ca = level_of_[a];
    if (ca == kApart) continue;
    const auto& ba = boxes[a];
    for (unsigned corner = 0; corner < (1u << D); ++corner) {
      for (int k = 0; k < D; ++k) pts[corner].p[k] = static_cast<double>((corner >> k) & 1u ? ba.max[k] : ba.min[k]);
      pts[corner].key = 0;
      pts[corner].live = true;
    }
    for (const std::int32_t level : classes_) {
      if (level < ca) break;
      std::array<std::int64_t, D> lo{};
      for (int k = 0; k < D; ++k) lo[k] = cell_coord(static_cast<double>(ba.min[k]), level);
      bool any = false;
      for (unsigned corner = 0; corner < (1u << D); ++corner) {
        point& q = pts[corner];
        if (!q.live) continue;
        std::array<std::int64_t, D> cell{};
        bool first = true;  // the first corner (in corner order) of a's corners in this cell
        for (int k = 0; k < D; ++k) {
          cell[k] = cell_coord(q.p[k], level);
          if (((corner >> k) & 1u) && cell[k] == lo[k]) first = false;
        }
        q.key += class_cell_hash<D>(level, cell);
        any = true;
        if (!first) continue;  // the same cell as a lower corner: already looked at
        const slot* s = find(q.key);
        ++cells_visited_;
        if (s == nullptr) {
          q.live = false;
          continue;
        }
        for (std::uint32_t e = s->begin; e < s->end; ++e) {
          const entry& y = entries_[e];
          if (y.level != level || y.cell != cell) continue;  // a colliding cell
          const std::uint32_t b = y.object;
          if (b == a || (level == ca && b < a)) continue;  // same class: from the first of the two
          bool owner = true;
          for (int k = 0; k < D; ++k) owner &= std::max(lo[k], lo_of_[b][k]) == cell[k];
          if (!owner) continue;
          ++box_tests_;
          if (overlaps(ba, boxes[b])) f(ids[a], ids[b]);
        }
        if (!s->has_children) q.live = false;
      }
      // corners sharing a cell share its key and fate: propagate the first's liveness
      for (unsigned corner = 0; corner < (1u << D); ++corner) {
        unsigned first = 0;
        for (int k = 0; k < D; ++k)
          if (((corner >> k) & 1u) && cell_coord(pts[corner].p[k], level) != lo[k]) first |= 1u << k;
        pts[corner].live = pts[corner].live && pts[first].live;
      }
      if (!any) break;
    }
  }
  for (std::size_t i = 0; i < apart_.size(); ++i) {
    const std::uint32_t a = apart_[i];
    for (std::size_t j = i + 1; j < apart_.size(); ++j) {
      ++box_tests_;
      if (overlaps(boxes[a], boxes[apart_[j]])) f(ids[a], ids[apart_[j]]);
    }
    for (std::size_t b = 0; b < n; ++b) {
      if (level_of_[b] == kApart) continue;
      ++box_tests_;
      if (overlaps(boxes[a], boxes[b])) f(ids[a], ids[b]);
    }
  }
}

template <int D, class T>
void hierarchical_hashing<D, T>::find_pairs(std::vector<handle_pair>& out) {
  out.clear();
  for_each_pair([&out](handle a, handle b) { out.push_back({a, b}); });
}

template <int D, class T>
std::size_t hierarchical_hashing<D, T>::bytes() const noexcept {
  return this->table_.bytes() + level_of_.capacity() * 4 + lo_of_.capacity() * sizeof(std::array<std::int64_t, D>) +
         classes_.capacity() * 4 + entries_.capacity() * sizeof(entry) + slots_.capacity() * sizeof(slot) +
         apart_.capacity() * 4;
}

template class hierarchical_hashing<2, float>;
template class hierarchical_hashing<2, double>;
template class hierarchical_hashing<3, float>;
template class hierarchical_hashing<3, double>;

}  // namespace hhg
