// The strong uniform-grid baseline (see include/hhg/uniform_grid.hpp).
//
// Implementation note.
//
// Exactness. An object is placed by the cell of its min corner,
// x = floor((v - origin) * (1 / cell)) + 1 (1: the padding), origin the lowest
// min corner. The cell edge is the longest object edge times (1 + 2^-20). Two
// overlapping objects have min corners at most one longest edge apart, i.e.
// at most (1 - 2^-20 + 2^-40) cells; subtraction, the reciprocal and the
// product each round by at most 2^-53 relatively, which is below 2^-22 cells
// while the scene spans fewer than 2^30 cells per axis (the cell is doubled
// until it does). Rounding is monotone, so the cells of two overlapping
// objects differ by at most one per axis, and the forward half of the 3^D
// neighbourhood finds every pair exactly once (the pairs of one cell from the
// lower position).
//
// Counting sort (the cost at 10^6: the random counter increments and the
// scatter, about 60 % of a detection of equal cubes; the tests are the rest).
// start_ first counts the objects per cell (shifted by one),
// becomes the exclusive prefix sum, is used as the scatter cursor (after which
// start_[c] is the end of cell c) and is shifted back by one cell.
//
// Neighbour ranges. Cell ids are x + X (y + Y z) with padding, so the cells
// (x-1, x, x+1) of one row are consecutive and their objects one range of the
// sorted boxes: a cell is tested against (its own objects after the current
// one, then cell x+1) and against the 3-cell ranges of the forward rows
// (dy, dz) in {(1, 0), (-1, 1), (0, 1), (1, 1)} in 3D, {(1)} in 2D.
#include "hhg/uniform_grid.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace hhg {

namespace {

constexpr std::uint32_t npos = std::numeric_limits<std::uint32_t>::max();
constexpr double kMaxCellsPerAxis = 1073741824.0;  // 2^30

}  // namespace

template <int D, class T>
std::size_t uniform_grid<D, T>::bytes() const noexcept {
  std::size_t b = this->table_.bytes() + cell_of_.capacity() * sizeof(std::uint32_t) +
                  start_.capacity() * sizeof(std::uint32_t) + id_.capacity() * sizeof(handle) +
                  apart_.capacity() * sizeof(std::uint32_t);
  b += sorted_.capacity() * sizeof(box<D, T>);
  return b;
}

template <int D, class T>
void uniform_grid<D, T>::build() {
  const auto boxes = this->table_.boxes();
  const auto ids = this->table_.ids();
  const std::size_t n = boxes.size();
  cell_of_.resize(n);
  apart_.clear();
  // 1. bounds of the min corners, the longest edge; unbounded objects apart
  std::array<double, D> lo, hi;
  lo.fill(std::numeric_limits<double>::infinity());
  hi.fill(-std::numeric_limits<double>::infinity());
  double max_edge = 0;
  std::size_t placed = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const box<D, T>& b = boxes[i];
    bool finite = true;
    double e = 0;
    for (int k = 0; k < D; ++k) {
      const double a = static_cast<double>(b.min[k]), z = static_cast<double>(b.max[k]);
      finite = finite && std::isfinite(a) && std::isfinite(z - a);
      e = std::max(e, z - a);
    }
    if (!finite) {
      cell_of_[i] = npos;
      apart_.push_back(static_cast<std::uint32_t>(i));
      continue;
    }
    cell_of_[i] = 0;
    ++placed;
    max_edge = std::max(max_edge, e);
    for (int k = 0; k < D; ++k) {
      lo[k] = std::min(lo[k], static_cast<double>(b.min[k]));
      hi[k] = std::max(hi[k], static_cast<double>(b.min[k]));
    }
  }
  start_.clear();
  sorted_.resize(placed);
  id_.resize(placed);
  cell_ = 0;
  if (placed == 0) return;
  // 2. the cell: the longest edge, doubled while the grid is too large
  // spans of the min corners (finite coordinates can still be more than
  // DBL_MAX apart: such a span counts as DBL_MAX)
  std::array<double, D> span;
  double extent = 0;
  for (int k = 0; k < D; ++k) {
    span[k] = hi[k] - lo[k];
    if (!std::isfinite(span[k])) span[k] = std::numeric_limits<double>::max();
    extent = std::max(extent, span[k]);
  }
  double cell = max_edge * (1 + 0x1p-20);
  if (cell == 0) {  // only points: about one per cell
    cell = extent / std::max(1.0, std::pow(static_cast<double>(placed), 1.0 / D));
    if (!(cell > 0)) cell = 1;
  }
  cell = std::max(cell, std::numeric_limits<double>::min());
  const double limit = std::min(std::max(4.0 * static_cast<double>(placed), 4096.0), 2147483648.0);
  for (;;) {
    bool ok = extent / cell < kMaxCellsPerAxis;
    if (ok) {
      double total = 1;
      for (int k = 0; k < D; ++k) {
        dims_[k] = static_cast<std::size_t>(std::floor(span[k] / cell)) + 3;  // + padding on both sides
        total *= static_cast<double>(dims_[k]);
      }
      ok = total <= limit;
    }
    if (ok) break;
    cell *= 2;
  }
  cell_ = cell;
  const double inv = 1 / cell;
  std::size_t cells = 1;
  for (int k = 0; k < D; ++k) cells *= dims_[k];
  // 3. cell of each object, counted
  std::array<double, D> top;  // the last interior cell coordinate, without padding
  for (int k = 0; k < D; ++k) top[k] = static_cast<double>(dims_[k] - 3);
  start_.assign(cells + 1, 0);
  for (std::size_t i = 0; i < n; ++i) {
    if (cell_of_[i] == npos) continue;
    std::size_t id = 0;
    for (int k = D - 1; k >= 0; --k) {
      // clamped before the conversion (an infinite difference): monotone, so
      // the cells of overlapping objects still differ by at most one
      const double v = std::min((static_cast<double>(boxes[i].min[k]) - lo[k]) * inv, top[k]);
      id = id * dims_[k] + static_cast<std::size_t>(v) + 1;
    }
    cell_of_[i] = static_cast<std::uint32_t>(id);
    ++start_[id + 1];
  }
  // 4. prefix sum, scatter in cell order, shift back
  for (std::size_t c = 0; c < cells; ++c) start_[c + 1] += start_[c];
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t c = cell_of_[i];
    if (c == npos) continue;
    const std::uint32_t p = start_[c]++;
    sorted_[p] = boxes[i];
    id_[p] = ids[i];
  }
  for (std::size_t c = cells; c > 0; --c) start_[c] = start_[c - 1];
  start_[0] = 0;
}

template <int D, class T>
template <class Emit>
void uniform_grid<D, T>::detect(Emit&& emit) {
  build();
  std::uint64_t tests = 0;
  if (!start_.empty()) {
    const std::size_t cells = start_.size() - 1;
    const std::ptrdiff_t x = 1, y = static_cast<std::ptrdiff_t>(dims_[0]);
    // the first cell of each forward row of three cells, relative to the cell
    std::array<std::ptrdiff_t, D == 3 ? 4 : 1> rows{};
    if constexpr (D == 3) {
      const std::ptrdiff_t z = y * static_cast<std::ptrdiff_t>(dims_[1]);
      rows = {y - x, z - y - x, z - x, z + y - x};
    } else {
      rows = {y - x};
    }
    const std::uint32_t* start = start_.data();
    const box<D, T>* bx = sorted_.data();
    const handle* id = id_.data();
    auto test_range = [&](std::uint32_t p, std::uint32_t from, std::uint32_t to) {
      const box<D, T> a = bx[p];
      tests += to - from;
      for (std::uint32_t q = from; q < to; ++q) {
        const box<D, T>& o = bx[q];
        // (int, not bool: one branch-free test of every axis)
        int hit = int{o.min[0] <= a.max[0]} & int{o.max[0] >= a.min[0]} & int{o.min[1] <= a.max[1]} &
                  int{o.max[1] >= a.min[1]};
        if constexpr (D == 3) hit &= int{o.min[2] <= a.max[2]} & int{o.max[2] >= a.min[2]};
        if (hit) emit(id[p], id[q]);
      }
    };
    for (std::size_t c = 0; c < cells; ++c) {
      const std::uint32_t s = start[c], e = start[c + 1];
      if (s == e) continue;
      const std::uint32_t next_end = start[c + 2];  // padding: c + 2 <= cells for an occupied cell
      for (std::uint32_t p = s; p < e; ++p) test_range(p, p + 1, next_end);
      for (const std::ptrdiff_t r : rows) {
        const std::uint32_t from = start[static_cast<std::ptrdiff_t>(c) + r];
        const std::uint32_t to = start[static_cast<std::ptrdiff_t>(c) + r + 3];
        if (from == to) continue;
        for (std::uint32_t p = s; p < e; ++p) test_range(p, from, to);
      }
    }
  }
  // objects kept apart: against every other object, each pair once
  if (!apart_.empty()) {
    const auto boxes = this->table_.boxes();
    const auto ids = this->table_.ids();
    for (const std::uint32_t a : apart_) {
      for (std::size_t j = 0; j < boxes.size(); ++j) {
        if (cell_of_[j] == npos && j <= a) continue;
        ++tests;
        if (overlaps(boxes[a], boxes[j])) emit(ids[a], ids[j]);
      }
    }
  }
  box_tests_ = tests;
}

template <int D, class T>
void uniform_grid<D, T>::find_pairs(std::vector<handle_pair>& out) {
  out.clear();
  detect([&out](handle a, handle b) { out.push_back({a, b}); });
}

template <int D, class T>
void uniform_grid<D, T>::for_each_pair(pair_callback f) {
  detect([&f](handle a, handle b) { f(a, b); });
}

template class uniform_grid<2, float>;
template class uniform_grid<2, double>;
template class uniform_grid<3, float>;
template class uniform_grid<3, double>;

}  // namespace hhg
