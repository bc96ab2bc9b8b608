// Implementation notes: hierarchical neighbour search (see
// include/hhg/hierarchical_neighbors.hpp).
//
// Search half-width w = max(r (1 + 2^-20), max|coordinate| 2^-30, 2^-1000).
// Two points with within(a, b, r) differ by at most r (1 + 2^-50) per axis,
// and fl(p +- w) is off from p +- w by less than 2^-22 w, so every neighbour
// of p lies in a cell that meets [fl(p - w), fl(p + w)] per axis: searching
// those cells loses nothing. The finest class c0 has 2^c0 >= w, so the range
// spans at most 3 cells per axis there (the 27 probe cells of the paper), and
// |coordinate| / 2^c0 <= 2^30 keeps cell coordinates small.
//
// Pruning is exact: a stored point flagged every coarser cell on its way
// down, and cell coordinates nest exactly (cell at class c + s = cell at
// class c shifted right by s), so a cell that holds a neighbour at class c0
// has flagged ancestors at every coarser class, all of which meet the search
// range. Keys are sums of 64-bit cell hashes as in eq. 4; the table compares
// class and coordinates too, so two cells whose keys collide stay apart.
#include "hhg/hierarchical_neighbors.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "hhg/error.hpp"
#include "power_of_two_cells.hpp"

namespace hhg {

namespace {

using detail::ceil_log2;
using detail::cell_coord;
using detail::class_cell_hash;

constexpr std::size_t kMaxLevels = 24;

template <int D, class T>
void check_points(const std::vector<std::array<T, D>>& pts, const char* what) {
  for (const auto& p : pts)
    for (const T v : p)
      if (!std::isfinite(v))
        throw error(errc::nan_coordinate,
                    std::string("hhg: hierarchical_neighbors: ") + what + ": coordinates must be finite");
}

std::size_t slot_of(std::uint64_t key, std::size_t mask) { return (key ^ (key >> 31)) & mask; }

}  // namespace

template <int D, class T>
hierarchical_neighbors<D, T>::hierarchical_neighbors(int level_step) : step_(level_step) {
  if (level_step < 1 || level_step > 16)
    throw error(errc::bad_config, "hhg: hierarchical_neighbors: level_step must be in [1, 16]");
}

template <int D, class T>
typename hierarchical_neighbors<D, T>::cell& hierarchical_neighbors<D, T>::find_or_add(
    std::uint64_t key, std::int32_t level, const std::array<std::int64_t, D>& at) {
  detail::grow_open_table(table_, used_, [](const cell& c, std::size_t m) { return slot_of(c.key, m); });
  const std::size_t mask = table_.size() - 1;
  std::size_t i = slot_of(key, mask);
  while (table_[i].used && !(table_[i].key == key && table_[i].level == level && table_[i].at == at))
    i = (i + 1) & mask;
  if (!table_[i].used) {
    table_[i] = cell{at, key, level, 0, true, false};
    ++used_;
  }
  return table_[i];
}

template <int D, class T>
const typename hierarchical_neighbors<D, T>::cell* hierarchical_neighbors<D, T>::find(
    std::uint64_t key, std::int32_t level, const std::array<std::int64_t, D>& at) const {
  if (table_.empty()) return nullptr;
  const std::size_t mask = table_.size() - 1;
  for (std::size_t i = slot_of(key, mask);; i = (i + 1) & mask) {
    const cell& c = table_[i];
    if (!c.used) return nullptr;
    if (c.key == key && c.level == level && c.at == at) return &c;
  }
}

template <int D, class T>
void hierarchical_neighbors<D, T>::prepare(const std::vector<point>& points, double r) {
  if (!std::isfinite(r)) throw error(errc::nan_coordinate, "hhg: hierarchical_neighbors: radius must be finite");
  if (r < 0) throw error(errc::inverted_box, "hhg: hierarchical_neighbors: radius is negative");
  if (r > kMaxRadius)
    throw error(errc::bad_config, "hhg: hierarchical_neighbors: radius above 2^511 (r * r overflows)");
  check_points<D, T>(points, "points");
  if (points.size() >= std::numeric_limits<std::uint32_t>::max())
    throw error(errc::capacity, "hhg: hierarchical_neighbors: too many points");
  const std::size_t n = points.size();
  std::vector<std::array<double, D>> pts(n);
  double mag = 0;
  std::array<double, D> lo, hi;
  lo.fill(std::numeric_limits<double>::infinity());
  hi.fill(-std::numeric_limits<double>::infinity());
  for (std::size_t i = 0; i < n; ++i)
    for (int k = 0; k < D; ++k) {
      const double v = static_cast<double>(points[i][static_cast<std::size_t>(k)]);
      pts[i][static_cast<std::size_t>(k)] = v;
      mag = std::max(mag, std::fabs(v));
      lo[static_cast<std::size_t>(k)] = std::min(lo[static_cast<std::size_t>(k)], v);
      hi[static_cast<std::size_t>(k)] = std::max(hi[static_cast<std::size_t>(k)], v);
    }
  const double reach = std::max({r * (1 + 0x1p-20), mag * 0x1p-30, 0x1p-1000});
  // classes: c0 (2^c0 >= reach), then every step_ up to the extent
  double extent = 0;
  for (int k = 0; k < D && n != 0; ++k)
    extent = std::max(extent, hi[static_cast<std::size_t>(k)] - lo[static_cast<std::size_t>(k)]);
  const std::int32_t c0 = ceil_log2(reach);
  // any top class >= c0 is correct; the extent's keeps the tree shallow
  const double span = extent + 2 * reach;
  const std::int32_t top = std::isfinite(span) && extent > reach ? ceil_log2(span) : c0;
  int step = step_;
  while (static_cast<std::size_t>((top - c0 + step - 1) / step) + 1 > kMaxLevels) ++step;
  std::vector<std::int32_t> levels;
  for (std::int32_t c = c0;; c += step) {
    levels.push_back(c);
    if (c >= top) break;
  }
  std::reverse(levels.begin(), levels.end());
  std::vector<std::uint32_t> next(n, 0);
  // nothing above allocates after a change: commit
  pts_.swap(pts);
  next_.swap(next);
  levels_.swap(levels);
  r_ = r;
  reach_ = reach;
  lo_ = lo;
  hi_ = hi;
  table_.clear();
  used_ = 0;
  cells_visited_ = 0;
  candidates_ = 0;
}

// Listing 1: top-down hashing of one point, flags on the way down.
template <int D, class T>
void hierarchical_neighbors<D, T>::insert(std::uint32_t i) {
  const auto& p = pts_[i];
  std::uint64_t key = 0;
  for (std::size_t l = 0; l < levels_.size(); ++l) {
    const std::int32_t c = levels_[l];
    std::array<std::int64_t, D> at{};
    for (int k = 0; k < D; ++k) at[static_cast<std::size_t>(k)] = cell_coord(p[static_cast<std::size_t>(k)], c);
    key += class_cell_hash<D>(c, at);
    cell& x = find_or_add(key, c, at);
    if (l + 1 == levels_.size()) {
      next_[i] = x.head;
      x.head = i + 1;
    } else {
      x.has_children = true;
    }
  }
}

// Listing 3's search (returns the cells looked up): the cells meeting [p - w, p + w] per axis, class by
// class from the top, below flagged cells only; visit(j) for every point j
// stored in a reached finest cell.
template <int D, class T>
template <class F>
std::uint64_t hierarchical_neighbors<D, T>::search(const std::array<double, D>& p, F&& visit) const {
  // outside the stored points' bounds by more than w: nothing can be near
  for (int k = 0; k < D; ++k) {
    const auto a = static_cast<std::size_t>(k);
    if (!(p[a] + reach_ >= lo_[a] && p[a] - reach_ <= hi_[a])) return 0;
  }
  std::array<double, D> from{}, to{};
  for (int k = 0; k < D; ++k) {
    // clamped: no point lies beyond the largest double
    constexpr double big = std::numeric_limits<double>::max();
    from[static_cast<std::size_t>(k)] = std::max(p[static_cast<std::size_t>(k)] - reach_, -big);
    to[static_cast<std::size_t>(k)] = std::min(p[static_cast<std::size_t>(k)] + reach_, big);
  }
  // at most 3^D live cells per class (the range spans <= 3 cells per axis
  // at the finest class, fewer above)
  std::array<live_cell, 27> buf_a{}, buf_b{};
  live_cell* cur = buf_a.data();
  live_cell* nxt = buf_b.data();
  std::size_t ncur = 1, nnxt = 0;
  cur[0] = live_cell{{}, 0};
  std::uint64_t visited = 0;
  for (std::size_t l = 0; l < levels_.size(); ++l) {
    const std::int32_t c = levels_[l];
    const bool finest = l + 1 == levels_.size();
    const int shift = l == 0 ? 0 : levels_[l - 1] - c;
    std::array<std::int64_t, D> rlo{}, rhi{};
    for (int k = 0; k < D; ++k) {
      rlo[static_cast<std::size_t>(k)] = cell_coord(from[static_cast<std::size_t>(k)], c);
      rhi[static_cast<std::size_t>(k)] = cell_coord(to[static_cast<std::size_t>(k)], c);
    }
    nnxt = 0;
    for (std::size_t q = 0; q < ncur; ++q) {
      const live_cell& parent = cur[q];
      // children of the parent that meet the range (at the top: the range)
      std::array<std::int64_t, D> clo = rlo, chi = rhi;
      if (l != 0)
        for (int k = 0; k < D; ++k) {
          const auto a = static_cast<std::size_t>(k);
          const std::int64_t first = parent.at[a] * (std::int64_t{1} << shift);
          clo[a] = std::max(clo[a], first);
          chi[a] = std::min(chi[a], first + (std::int64_t{1} << shift) - 1);
        }
      bool empty = false;
      for (int k = 0; k < D; ++k) empty |= clo[static_cast<std::size_t>(k)] > chi[static_cast<std::size_t>(k)];
      if (empty) continue;
      std::array<std::int64_t, D> at = clo;
      for (;;) {
        ++visited;
        const std::uint64_t key = parent.key + class_cell_hash<D>(c, at);
        if (const cell* x = find(key, c, at)) {
          if (finest) {
            for (std::uint32_t j = x->head; j != 0; j = next_[j - 1]) visit(j - 1);
          } else if (x->has_children) {
            nxt[nnxt++] = live_cell{at, key};
          }
        }
        int k = 0;
        for (; k < D; ++k) {
          const auto a = static_cast<std::size_t>(k);
          if (at[a] < chi[a]) {
            ++at[a];
            break;
          }
          at[a] = clo[a];
        }
        if (k == D) break;
      }
    }
    std::swap(cur, nxt);
    ncur = nnxt;
    if (ncur == 0) break;
  }
  return visited;
}

template <int D, class T>
void hierarchical_neighbors<D, T>::neighbors(const std::vector<point>& points, double r, neighbor_list& out) {
  prepare(points, r);
  const std::size_t n = pts_.size();
  // below: for point i, the neighbours j < i found by its own search
  std::vector<std::uint32_t> below;
  std::vector<std::size_t> below_start(n + 1, 0);
  std::vector<std::size_t> count(n, 0);
  std::uint64_t cand = 0;
  const detail::within_filter near(r_);  // within(), exact, with a fast path
  const auto close = [&](const std::array<double, D>& a, const std::array<double, D>& b) {
    double d2 = 0;
    for (std::size_t k = 0; k < static_cast<std::size_t>(D); ++k) {
      const double d = a[k] - b[k];
      d2 += d * d;
    }
    return near(a, b, d2);
  };
  for (std::size_t i = 0; i < n; ++i) {
    below_start[i] = below.size();
    cells_visited_ += search(pts_[i], [&](std::uint32_t j) {
      ++cand;
      if (close(pts_[i], pts_[j])) {
        below.push_back(j);
        ++count[j];
      }
    });
    std::sort(below.begin() + static_cast<std::ptrdiff_t>(below_start[i]), below.end());
    count[i] += below.size() - below_start[i];
    insert(static_cast<std::uint32_t>(i));
  }
  below_start[n] = below.size();
  candidates_ = cand;
  // lists: the neighbours below i (sorted), then those above i, which come
  // in ascending order when the searches are replayed in order
  out.offsets.assign(n + 1, 0);
  for (std::size_t i = 0; i < n; ++i) out.offsets[i + 1] = out.offsets[i] + count[i];
  out.indices.resize(out.offsets[n]);
  std::vector<std::size_t> fill(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t b = below_start[i], e = below_start[i + 1];
    std::copy(below.begin() + static_cast<std::ptrdiff_t>(b), below.begin() + static_cast<std::ptrdiff_t>(e),
              out.indices.begin() + static_cast<std::ptrdiff_t>(out.offsets[i]));
    fill[i] = out.offsets[i] + (e - b);
  }
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t e = below_start[i]; e < below_start[i + 1]; ++e)
      out.indices[fill[below[e]]++] = static_cast<std::uint32_t>(i);
}

template <int D, class T>
void hierarchical_neighbors<D, T>::build(const std::vector<point>& points, double r) {
  prepare(points, r);
  for (std::size_t i = 0; i < pts_.size(); ++i) insert(static_cast<std::uint32_t>(i));
}

template <int D, class T>
void hierarchical_neighbors<D, T>::neighbors_of(const std::vector<point>& queries, neighbor_list& out) const {
  check_points<D, T>(queries, "queries");
  out.offsets.assign(queries.size() + 1, 0);
  out.indices.clear();
  const detail::within_filter near(r_);
  for (std::size_t i = 0; i < queries.size(); ++i) {
    std::array<double, D> q{};
    for (int k = 0; k < D; ++k)
      q[static_cast<std::size_t>(k)] = static_cast<double>(queries[i][static_cast<std::size_t>(k)]);
    const std::size_t start = out.indices.size();
    search(q, [&](std::uint32_t j) {
      double d2 = 0;
      for (std::size_t k = 0; k < static_cast<std::size_t>(D); ++k) {
        const double d = q[k] - pts_[j][k];
        d2 += d * d;
      }
      if (near(q, pts_[j], d2)) out.indices.push_back(j);
    });
    std::sort(out.indices.begin() + static_cast<std::ptrdiff_t>(start), out.indices.end());
    out.offsets[i + 1] = out.indices.size();
  }
}

template <int D, class T>
std::size_t hierarchical_neighbors<D, T>::bytes() const noexcept {
  return pts_.capacity() * sizeof(std::array<double, D>) + next_.capacity() * 4 + table_.capacity() * sizeof(cell) +
         levels_.capacity() * 4;
}

template class hierarchical_neighbors<2, float>;
template class hierarchical_neighbors<2, double>;
template class hierarchical_neighbors<3, float>;
template class hierarchical_neighbors<3, double>;

}  // namespace hhg
