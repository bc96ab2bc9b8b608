// Uniform and multilevel spatial hashing (see include/hhg/spatial_hashing.hpp).
//
// Implementation note.
//
// Cells. A class c has cells of edge 2^c; the cell coordinate of v is
// floor(v * 2^-c), computed with ldexp, which is exact (a power-of-two
// scaling) and monotone, so for two boxes the cell ranges overlap whenever the
// boxes do, and the cell of max(a.min, b.min) is max(cell(a.min), cell(b.min)).
// A class is only used where |v| * 2^-c < 2^52, so cell coordinates are exact
// integers: multilevel raises an object's class to satisfy it (bigger cells
// are always correct), uniform keeps such objects apart.
//
// Table. Entries (class, cell coordinates, object) are hashed (Teschner's XOR
// of coordinates times large primes, then a multiplicative mix) into 2^b
// buckets, b chosen so there are about two buckets per entry, and ordered by
// bucket with a counting sort (count, prefix sums, scatter). A bucket may hold
// several cells (hash collisions); entries are compared by class and
// coordinates, so collisions cost time, never correctness.
//
// Each pair once. Two objects of one class that overlap share every cell of
// the intersection of their cell ranges; the pair is reported only from the
// first of them, cell max(lo_a, lo_b) per axis. An object of class ca looks,
// in every class L > ca, at the cells its box overlaps (at most 2 per axis,
// its box being smaller than those cells) and takes a partner b of class L
// only in the cell max(lo_a at L, lo_b) per axis: again exactly one cell.
#include "hhg/spatial_hashing.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "hhg/error.hpp"
#include "power_of_two_cells.hpp"

namespace hhg {
namespace detail {

namespace {

template <std::size_t D>
std::uint32_t hash_cell(std::int32_t level, const std::array<std::int64_t, D>& c, unsigned bits) {
  constexpr std::uint64_t primes[3] = {73856093u, 19349663u, 83492791u};
  std::uint64_t x = static_cast<std::uint64_t>(static_cast<std::int64_t>(level)) * 0x9E3779B97F4A7C15ull;
  for (std::size_t k = 0; k < D; ++k) x ^= static_cast<std::uint64_t>(c[k]) * primes[k];
  x ^= x >> 31;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 29;
  return static_cast<std::uint32_t>(x >> (64 - bits));
}

}  // namespace

template <int D, class T>
void cell_hash<D, T>::build(std::span<const box<D, T>> boxes, bool uniform, std::int32_t uniform_level,
                            std::uint64_t max_cells) {
  const std::size_t n = boxes.size();
  level_of.resize(n);
  lo_of.resize(n);
  apart.clear();
  entries.clear();
  levels.clear();
  // 1. classes
  std::int32_t lowest = INT32_MAX;
  std::vector<std::int32_t>& lv = level_of;
  for (std::size_t i = 0; i < n; ++i) {
    const box<D, T>& b = boxes[i];
    double edge = 0, mag = 0;
    for (int k = 0; k < D; ++k) {
      edge = std::max(edge, static_cast<double>(b.max[k]) - static_cast<double>(b.min[k]));
      mag = std::max({mag, std::fabs(static_cast<double>(b.min[k])), std::fabs(static_cast<double>(b.max[k]))});
    }
    if (!is_bounded(b) || !std::isfinite(edge) || !std::isfinite(mag)) {
      lv[i] = kApart;
      continue;
    }
    // precision: |v| * 2^-c < 2^52 needs c >= e - 52 where mag < 2^e
    const std::int32_t need = mag > 0 ? std::ilogb(mag) + 1 - 52 : INT32_MIN + 1;
    std::int32_t c;
    if (uniform) {
      c = uniform_level;
      if (c < need) {
        lv[i] = kApart;
        continue;
      }
    } else if (edge > 0) {
      c = std::max(ceil_log2(edge), need);
      lowest = std::min(lowest, c);
    } else {
      c = INT32_MIN + 1;  // a point: resolved below
      c = std::max(c, need);
    }
    lv[i] = c;
  }
  if (!uniform) {
    // points go to the lowest class in use (or class 0), raised for precision
    const std::int32_t base = lowest == INT32_MAX ? 0 : lowest;
    for (std::size_t i = 0; i < n; ++i) {
      if (lv[i] == kApart) continue;
      double edge = 0;
      for (int k = 0; k < D; ++k)
        edge = std::max(edge, static_cast<double>(boxes[i].max[k]) - static_cast<double>(boxes[i].min[k]));
      if (edge == 0) lv[i] = std::max(lv[i], base);
      // max - min is rounded: a box of edge 16 + 1e-30 computes as 16 and
      // would span 3 cells of size 16. Raise the class until the box spans
      // at most 2 cells per axis (found by the fuzzer).
      for (bool fits = false; !fits;) {
        fits = true;
        for (int k = 0; k < D; ++k)
          fits &= cell_coord(static_cast<double>(boxes[i].max[k]), lv[i]) -
                      cell_coord(static_cast<double>(boxes[i].min[k]), lv[i]) <=
                  1;
        if (!fits) ++lv[i];
      }
    }
  }
  // 2. entries: every cell of the box at its class
  for (std::size_t i = 0; i < n; ++i) {
    if (lv[i] == kApart) {
      apart.push_back(static_cast<std::uint32_t>(i));
      continue;
    }
    const box<D, T>& b = boxes[i];
    std::array<std::int64_t, D> lo{}, hi{};
    std::uint64_t count = 1;
    for (int k = 0; k < D; ++k) {
      lo[k] = cell_coord(static_cast<double>(b.min[k]), lv[i]);
      hi[k] = cell_coord(static_cast<double>(b.max[k]), lv[i]);
      const auto span = static_cast<std::uint64_t>(hi[k] - lo[k]) + 1;
      count = span > max_cells ? max_cells + 1 : count * span;
      if (count > max_cells) break;
    }
    if (count > max_cells) {
      lv[i] = kApart;
      apart.push_back(static_cast<std::uint32_t>(i));
      continue;
    }
    lo_of[i] = lo;
    entry e{lo, static_cast<std::uint32_t>(i), lv[i]};
    for (;;) {
      entries.push_back(e);
      int k = 0;
      for (; k < D; ++k) {
        if (e.cell[k] < hi[k]) {
          ++e.cell[k];
          break;
        }
        e.cell[k] = lo[k];
      }
      if (k == D) break;
    }
    levels.push_back(lv[i]);
  }
  std::sort(levels.begin(), levels.end());
  levels.erase(std::unique(levels.begin(), levels.end()), levels.end());
  // 3. counting sort by bucket
  const std::size_t m = entries.size();
  bits = 4;
  while ((std::size_t{1} << bits) < 2 * m && bits < 31) ++bits;
  const std::size_t buckets = std::size_t{1} << bits;
  bucket_start.assign(buckets + 1, 0);
  hash_of.resize(m);
  for (std::size_t i = 0; i < m; ++i) {
    hash_of[i] = hash_cell<D>(entries[i].level, entries[i].cell, bits);
    ++bucket_start[hash_of[i] + 1];
  }
  for (std::size_t b = 0; b < buckets; ++b) bucket_start[b + 1] += bucket_start[b];
  sorted.resize(m);
  // scatter (stable: entries keep object order within a bucket)
  cursor.assign(bucket_start.begin(), bucket_start.end() - 1);
  for (std::size_t i = 0; i < m; ++i) sorted[cursor[hash_of[i]]++] = entries[i];
}

template <int D, class T>
void cell_hash<D, T>::pairs(std::span<const box<D, T>> boxes, std::span<const handle> ids, pair_callback f) {
  box_tests = 0;
  const std::size_t buckets = bucket_start.empty() ? 0 : bucket_start.size() - 1;
  // pairs of one class, from their owner cell
  for (std::size_t b = 0; b < buckets; ++b) {
    const std::uint32_t s = bucket_start[b], e = bucket_start[b + 1];
    for (std::uint32_t i = s; i + 1 < e; ++i) {
      const entry& x = sorted[i];
      for (std::uint32_t j = i + 1; j < e; ++j) {
        const entry& y = sorted[j];
        if (y.level != x.level || y.cell != x.cell) continue;
        bool owner = true;
        for (int k = 0; k < D; ++k) owner &= std::max(lo_of[x.object][k], lo_of[y.object][k]) == x.cell[k];
        if (!owner) continue;
        ++box_tests;
        if (overlaps(boxes[x.object], boxes[y.object])) f(ids[x.object], ids[y.object]);
      }
    }
  }
  // pairs of different classes: the finer object looks up the coarser cells
  if (levels.size() > 1) {
    const std::size_t n = boxes.size();
    for (std::size_t a = 0; a < n; ++a) {
      const std::int32_t ca = level_of[a];
      if (ca == kApart) continue;
      const box<D, T>& ba = boxes[a];
      for (auto it = std::upper_bound(levels.begin(), levels.end(), ca); it != levels.end(); ++it) {
        const std::int32_t L = *it;
        std::array<std::int64_t, D> lo{}, hi{};
        for (int k = 0; k < D; ++k) {
          lo[k] = cell_coord(static_cast<double>(ba.min[k]), L);
          hi[k] = cell_coord(static_cast<double>(ba.max[k]), L);
        }
        std::array<std::int64_t, D> c = lo;
        for (;;) {
          const std::uint32_t h = hash_cell<D>(L, c, bits);
          for (std::uint32_t j = bucket_start[h]; j < bucket_start[h + 1]; ++j) {
            const entry& y = sorted[j];
            if (y.level != L || y.cell != c) continue;
            bool owner = true;
            for (int k = 0; k < D; ++k) owner &= std::max(lo[k], lo_of[y.object][k]) == c[k];
            if (!owner) continue;
            ++box_tests;
            if (overlaps(ba, boxes[y.object])) f(ids[a], ids[y.object]);
          }
          int k = 0;
          for (; k < D; ++k) {
            if (c[k] < hi[k]) {
              ++c[k];
              break;
            }
            c[k] = lo[k];
          }
          if (k == D) break;
        }
      }
    }
  }
  // objects kept apart: against each other and everything else
  for (std::size_t i = 0; i < apart.size(); ++i) {
    const std::uint32_t a = apart[i];
    for (std::size_t j = i + 1; j < apart.size(); ++j) {
      ++box_tests;
      if (overlaps(boxes[a], boxes[apart[j]])) f(ids[a], ids[apart[j]]);
    }
    for (std::size_t b = 0; b < boxes.size(); ++b) {
      if (level_of[b] == kApart) continue;
      ++box_tests;
      if (overlaps(boxes[a], boxes[b])) f(ids[a], ids[b]);
    }
  }
}

template <int D, class T>
std::size_t cell_hash<D, T>::bytes() const noexcept {
  return (entries.capacity() + sorted.capacity()) * sizeof(entry) +
         (hash_of.capacity() + bucket_start.capacity() + cursor.capacity() + apart.capacity()) * sizeof(std::uint32_t) +
         (level_of.capacity() + levels.capacity()) * sizeof(std::int32_t) +
         lo_of.capacity() * sizeof(std::array<std::int64_t, D>);
}

}  // namespace detail

// ---------------------------------------------------------------- uniform

template <int D, class T>
uniform_hashing<D, T>::uniform_hashing(double cell_size, std::uint64_t max_cells)
    : cell_size_(cell_size), max_cells_(max_cells) {
  if (!(cell_size >= 0) || !std::isfinite(cell_size))
    throw error(errc::bad_config, "hhg: uniform_hashing: cell size must be finite and >= 0 (0: automatic)");
  if (max_cells < 1) throw error(errc::bad_config, "hhg: uniform_hashing: max_cells must be >= 1");
}

template <int D, class T>
void uniform_hashing<D, T>::for_each_pair(pair_callback f) {
  const auto boxes = this->table_.boxes();
  double size = cell_size_;
  if (size == 0) {  // mean longest edge of the bounded boxes
    double sum = 0;
    std::size_t count = 0;
    for (const auto& b : boxes) {
      if (!is_bounded(b)) continue;
      double edge = 0;
      for (int k = 0; k < D; ++k) edge = std::max(edge, static_cast<double>(b.max[k]) - static_cast<double>(b.min[k]));
      if (!std::isfinite(edge)) continue;
      sum += edge;
      ++count;
    }
    size = count > 0 && sum > 0 && std::isfinite(sum) ? sum / static_cast<double>(count) : 1.0;
  }
  const std::int32_t level = detail::ceil_log2(size);
  last_cell_ = std::ldexp(1.0, level);
  hash_.build(boxes, true, level, max_cells_);
  hash_.pairs(boxes, this->table_.ids(), f);
}

template <int D, class T>
void uniform_hashing<D, T>::find_pairs(std::vector<handle_pair>& out) {
  out.clear();
  for_each_pair([&out](handle a, handle b) { out.push_back({a, b}); });
}

// ---------------------------------------------------------------- multilevel

template <int D, class T>
void multilevel_hashing<D, T>::for_each_pair(pair_callback f) {
  const auto boxes = this->table_.boxes();
  hash_.build(boxes, false, 0, std::numeric_limits<std::uint64_t>::max());
  hash_.pairs(boxes, this->table_.ids(), f);
}

template <int D, class T>
void multilevel_hashing<D, T>::find_pairs(std::vector<handle_pair>& out) {
  out.clear();
  for_each_pair([&out](handle a, handle b) { out.push_back({a, b}); });
}

template struct detail::cell_hash<2, float>;
template struct detail::cell_hash<2, double>;
template struct detail::cell_hash<3, float>;
template struct detail::cell_hash<3, double>;
template class uniform_hashing<2, float>;
template class uniform_hashing<2, double>;
template class uniform_hashing<3, float>;
template class uniform_hashing<3, double>;
template class multilevel_hashing<2, float>;
template class multilevel_hashing<2, double>;
template class multilevel_hashing<3, float>;
template class multilevel_hashing<3, double>;

}  // namespace hhg
