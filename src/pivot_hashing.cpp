// Pivot-table hashing (see include/hhg/pivot_hashing.hpp).
//
// Implementation note.
//
// Placement. Objects are placed by the cell of their min corner,
// x = floor((v - origin) / cell), origin the scene's lower corner, computed as
// floor((v / 2 - origin / 2) / cell * 2): v - origin overflows when the scene
// spans more than the largest double (boxes near -1e308 and +1e308), and the
// cell coordinates were then infinite or NaN (pairs missed by the chunked
// table, a vector past max_size and an endless doubling of the cell in the
// dense one, until stop 79). Halving is exact above the subnormals, and below
// them off by far less than a cell (>= DBL_MIN); the steps stay monotone. The
// edge is the longest edge of the placed objects times (1 + 2^-20). Two
// overlapping objects then have min corners less than (1 - 2^-21) cells apart
// on every axis; subtraction, division and floor are monotone and their
// rounding errors are below 2^-22 cells while coordinates stay under 2^30
// cells (the cell is doubled until they do), so their cells differ by at most
// one per axis and the 13 (3D) / 4 (2D) forward neighbours of each cell find
// every pair once.
//
// Parallel construction (seed 004, section 2.1): counts with relaxed atomic
// increments (std::atomic_ref on plain arrays, so the pivot table can live in
// a std::vector), cell ranges from one shared atomic counter (so ranges are in
// no particular order), scatter with an atomic decrement of the cell's index,
// which leaves index = start of the range. Each cell's range is then sorted
// by object position: the content of the tables, and therefore the pairs and
// their order, are the same for any thread count and any timing.
//
// Chunked table (section 2.2): the cell grid is cut into pages of 4^D cells;
// a page exists only if an object is in it. Pages are found through an
// open-addressing directory keyed by page coordinates, built before the
// parallel count (the paper allocates pages with compare-and-swap during the
// count; building the directory first keeps the count loop identical for both
// variants and the page order deterministic).
#include "hhg/pivot_hashing.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <thread>

#include "hhg/error.hpp"

namespace hhg::detail {

namespace {

constexpr std::uint32_t npos = std::numeric_limits<std::uint32_t>::max();
constexpr double kMaxCellsPerAxis = 1073741824.0;  // 2^30
constexpr std::size_t kSerialBelow = 2048;         // smaller jobs run on the calling thread

template <std::size_t D>
std::uint64_t mix(const std::array<std::int64_t, D>& k) {
  std::uint64_t x = 0x9E3779B97F4A7C15ull;
  for (std::size_t i = 0; i < D; ++i) {
    x ^= static_cast<std::uint64_t>(k[i]) + 0x9E3779B97F4A7C15ull + (x << 6) + (x >> 2);
  }
  x ^= x >> 31;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 29;
  return x;
}

}  // namespace

template <int D, class T>
pivot_base<D, T>::pivot_base(bool chunked, unsigned threads) : chunked_(chunked), threads_(1) {
  set_threads(threads);
}

template <int D, class T>
void pivot_base<D, T>::set_threads(unsigned n) noexcept {
  if (n == 0) n = std::max(1u, std::thread::hardware_concurrency());
  threads_ = std::min(n, 256u);
}

template <int D, class T>
template <class F>
void pivot_base<D, T>::parallel(std::size_t n, F&& f) {
  const std::size_t k = n < kSerialBelow ? 1 : std::min<std::size_t>(threads_, n);
  if (k <= 1) {
    f(std::size_t{0}, n, std::size_t{0});
    return;
  }
  std::vector<std::thread> pool;
  pool.reserve(k - 1);
  for (std::size_t t = 1; t < k; ++t) pool.emplace_back([&, t] { f(n * t / k, n * (t + 1) / k, t); });
  f(std::size_t{0}, n / k, std::size_t{0});
  for (auto& th : pool) th.join();
}

template <int D, class T>
std::uint32_t pivot_base<D, T>::page_of(const std::array<std::int64_t, D>& page) const noexcept {
  if (dir_.empty()) return 0;
  const std::size_t mask = dir_.size() - 1;
  for (std::size_t i = mix<D>(page) & mask;; i = (i + 1) & mask) {
    const std::uint32_t p = dir_[i];
    if (p == 0) return 0;
    if (page_key_[p - 1] == page) return p;
  }
}

template <int D, class T>
std::uint32_t pivot_base<D, T>::add_page(const std::array<std::int64_t, D>& page) {
  if (2 * (page_key_.size() + 1) > dir_.size()) {  // grow and rehash
    dir_.assign(std::max<std::size_t>(64, dir_.size() * 2), 0);
    const std::size_t mask = dir_.size() - 1;
    for (std::uint32_t p = 0; p < page_key_.size(); ++p) {
      std::size_t i = mix<D>(page_key_[p]) & mask;
      while (dir_[i] != 0) i = (i + 1) & mask;
      dir_[i] = p + 1;
    }
  }
  const std::size_t mask = dir_.size() - 1;
  std::size_t i = mix<D>(page) & mask;
  while (dir_[i] != 0) {
    if (page_key_[dir_[i] - 1] == page) return dir_[i];
    i = (i + 1) & mask;
  }
  page_key_.push_back(page);
  dir_[i] = static_cast<std::uint32_t>(page_key_.size());
  return dir_[i];
}

template <int D, class T>
std::uint32_t pivot_base<D, T>::cell_id(const std::array<std::int64_t, D>& c) const noexcept {
  if (!chunked_) {
    std::uint64_t id = 0;
    for (int k = D - 1; k >= 0; --k) {
      if (c[k] < 0 || c[k] >= dims_[k]) return 0;
      id = id * static_cast<std::uint64_t>(dims_[k]) + static_cast<std::uint64_t>(c[k]);
    }
    return static_cast<std::uint32_t>(id) + 1;
  }
  std::array<std::int64_t, D> page{};
  std::uint32_t local = 0;
  for (int k = 0; k < D; ++k) {
    if (c[k] < 0) return 0;
    page[k] = c[k] >> kPageBits;
    local |= static_cast<std::uint32_t>(c[k] & ((1 << kPageBits) - 1)) << (kPageBits * k);
  }
  const std::uint32_t p = page_of(page);
  return p == 0 ? 0 : ((p - 1) * kPageCells | local) + 1;
}

template <int D, class T>
std::array<std::int64_t, D> pivot_base<D, T>::coords_of(std::uint32_t id) const noexcept {
  std::array<std::int64_t, D> c{};
  if (!chunked_) {
    std::uint64_t rest = id;
    for (int k = 0; k < D; ++k) {
      c[k] = static_cast<std::int64_t>(rest % static_cast<std::uint64_t>(dims_[k]));
      rest /= static_cast<std::uint64_t>(dims_[k]);
    }
    return c;
  }
  const auto& page = page_key_[id / kPageCells];
  const std::uint32_t local = id % kPageCells;
  for (int k = 0; k < D; ++k)
    c[k] = (page[k] << kPageBits) | static_cast<std::int64_t>((local >> (kPageBits * k)) & ((1u << kPageBits) - 1));
  return c;
}

template <int D, class T>
void pivot_base<D, T>::build() {
  const auto boxes = this->table_.boxes();
  const std::size_t n = boxes.size();
  cell_of_.assign(n, npos);
  coords_.resize(n);
  apart_.clear();
  page_key_.clear();
  std::fill(dir_.begin(), dir_.end(), 0u);
  // 1. edges; objects kept apart
  edges_.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    double e = 0;
    for (int k = 0; k < D; ++k)
      e = std::max(e, static_cast<double>(boxes[i].max[k]) - static_cast<double>(boxes[i].min[k]));
    edges_[i] = is_bounded(boxes[i]) && std::isfinite(e) ? e : std::numeric_limits<double>::infinity();
  }
  constexpr double inf = std::numeric_limits<double>::infinity();
  double big = std::numeric_limits<double>::max();  // edges are finite here or +inf (apart)
  if (n > 0) {
    std::vector<double>& tmp = edge_scratch_;
    tmp.assign(edges_.begin(), edges_.end());
    std::nth_element(tmp.begin(), tmp.begin() + static_cast<std::ptrdiff_t>(n / 2), tmp.end());
    const double median = tmp[n / 2];
    if (median > 0 && std::isfinite(median)) big = 8 * median;
  }
  // placed in a cell: a finite edge up to big (8 * median overflows to +inf
  // for edges near the largest double: unbounded objects, whose edge is +inf,
  // were then placed, with -inf corners)
  const auto placed_edge = [&](double e) { return e <= big && e < inf; };
  std::array<double, D> lo, hi;
  lo.fill(std::numeric_limits<double>::infinity());
  hi.fill(-std::numeric_limits<double>::infinity());
  double max_edge = 0;
  std::size_t placed = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!placed_edge(edges_[i])) continue;  // unbounded, infinite edge or big: apart
    ++placed;
    max_edge = std::max(max_edge, edges_[i]);
    for (int k = 0; k < D; ++k) {
      lo[k] = std::min(lo[k], static_cast<double>(boxes[i].min[k]));
      hi[k] = std::max(hi[k], static_cast<double>(boxes[i].min[k]));
    }
  }
  for (std::size_t i = 0; i < n; ++i)
    if (!placed_edge(edges_[i])) apart_.push_back(static_cast<std::uint32_t>(i));
  count_.clear();
  index_.clear();
  data_.clear();
  if (placed == 0) return;
  // 2. cell size and grid (placement: the note above; half the extent never overflows)
  double half_extent = 0;
  for (int k = 0; k < D; ++k) half_extent = std::max(half_extent, hi[k] * 0.5 - lo[k] * 0.5);
  double cell = max_edge * (1 + 0x1p-20);  // (+inf for an edge near the largest double: one cell)
  if (cell == 0) {                         // only points: about one per cell
    cell = half_extent / std::max(1.0, std::pow(static_cast<double>(placed), 1.0 / D)) * 2;
    if (!(cell > 0)) cell = 1;
  }
  cell = std::max(cell, std::numeric_limits<double>::min());
  const auto cells_from = [&](double v, double origin) { return (v * 0.5 - origin * 0.5) / cell * 2; };
  const double limit = std::max(8.0 * static_cast<double>(placed), 4096.0);
  for (;;) {
    bool ok = half_extent / cell < kMaxCellsPerAxis / 2;
    if (ok) {
      double total = 1;
      for (int k = 0; k < D; ++k) {
        dims_[k] = static_cast<std::int64_t>(std::floor(cells_from(hi[k], lo[k]))) + 1;
        total *= static_cast<double>(dims_[k]);
      }
      ok = chunked_ || total <= limit;
    }
    if (ok) break;
    cell *= 2;
  }
  cell_ = cell;
  origin_ = lo;
  // 3. cells of the objects
  std::size_t cells;
  for (std::size_t i = 0; i < n; ++i) {
    if (!placed_edge(edges_[i])) continue;
    for (int k = 0; k < D; ++k)
      coords_[i][k] = static_cast<std::int64_t>(std::floor(cells_from(static_cast<double>(boxes[i].min[k]), lo[k])));
  }
  if (chunked_) {
    for (std::size_t i = 0; i < n; ++i) {
      if (!placed_edge(edges_[i])) continue;
      std::array<std::int64_t, D> page{};
      std::uint32_t local = 0;
      for (int k = 0; k < D; ++k) {
        page[k] = coords_[i][k] >> kPageBits;
        local |= static_cast<std::uint32_t>(coords_[i][k] & ((1 << kPageBits) - 1)) << (kPageBits * k);
      }
      const std::uint32_t p = add_page(page);
      cell_of_[i] = (p - 1) * kPageCells | local;
    }
    cells = page_key_.size() * kPageCells;
  } else {
    cells = 1;
    for (int k = 0; k < D; ++k) cells *= static_cast<std::size_t>(dims_[k]);
    for (std::size_t i = 0; i < n; ++i)
      if (placed_edge(edges_[i])) cell_of_[i] = cell_id(coords_[i]) - 1;
  }
  // 4. pivots: count, offsets, scatter (parallel, atomic)
  count_.assign(cells, 0);
  index_.assign(cells, 0);
  data_.resize(placed);
  parallel(n, [&](std::size_t a, std::size_t b, std::size_t) {
    for (std::size_t i = a; i < b; ++i)
      if (cell_of_[i] != npos)
        std::atomic_ref<std::uint32_t>(count_[cell_of_[i]]).fetch_add(1, std::memory_order_relaxed);
  });
  std::atomic<std::uint32_t> next{0};
  parallel(cells, [&](std::size_t a, std::size_t b, std::size_t) {
    for (std::size_t c = a; c < b; ++c) {
      const std::uint32_t k = count_[c];
      if (k != 0) index_[c] = next.fetch_add(k, std::memory_order_relaxed) + k;
    }
  });
  parallel(n, [&](std::size_t a, std::size_t b, std::size_t) {
    for (std::size_t i = a; i < b; ++i) {
      if (cell_of_[i] == npos) continue;
      const std::uint32_t at =
          std::atomic_ref<std::uint32_t>(index_[cell_of_[i]]).fetch_sub(1, std::memory_order_relaxed) - 1;
      data_[at] = static_cast<std::uint32_t>(i);
    }
  });
  parallel(cells, [&](std::size_t a, std::size_t b, std::size_t) {
    for (std::size_t c = a; c < b; ++c)
      if (count_[c] > 1) std::sort(data_.begin() + index_[c], data_.begin() + index_[c] + count_[c]);
  });
}

template <int D, class T>
void pivot_base<D, T>::detect_range(std::size_t first, std::size_t last, std::vector<handle_pair>& out,
                                    std::uint64_t& tests) const {
  const auto boxes = this->table_.boxes();
  const auto ids = this->table_.ids();
  for (std::size_t c = first; c < last; ++c) {
    const std::uint32_t n = count_[c];
    if (n == 0) continue;
    const std::uint32_t* own = data_.data() + index_[c];
    for (std::uint32_t i = 0; i + 1 < n; ++i)
      for (std::uint32_t j = i + 1; j < n; ++j) {
        ++tests;
        if (overlaps(boxes[own[i]], boxes[own[j]])) out.push_back({ids[own[i]], ids[own[j]]});
      }
    const auto at = coords_of(static_cast<std::uint32_t>(c));
    // forward half of the 3^D - 1 neighbours: the first non-zero offset is +1
    std::array<int, D> d{};
    d.fill(-1);
    for (;;) {
      int first_nonzero = 0;
      for (int k = D - 1; k >= 0; --k)
        if (d[k] != 0) {
          first_nonzero = d[k];
          break;
        }
      if (first_nonzero > 0) {
        std::array<std::int64_t, D> q{};
        for (int k = 0; k < D; ++k) q[k] = at[k] + d[k];
        const std::uint32_t id = cell_id(q);
        if (id != 0 && count_[id - 1] != 0) {
          const std::uint32_t m = count_[id - 1];
          const std::uint32_t* other = data_.data() + index_[id - 1];
          for (std::uint32_t i = 0; i < n; ++i)
            for (std::uint32_t j = 0; j < m; ++j) {
              ++tests;
              if (overlaps(boxes[own[i]], boxes[other[j]])) out.push_back({ids[own[i]], ids[other[j]]});
            }
        }
      }
      int k = 0;
      for (; k < D; ++k) {
        if (d[k] < 1) {
          ++d[k];
          break;
        }
        d[k] = -1;
      }
      if (k == D) break;
    }
  }
}

template <int D, class T>
void pivot_base<D, T>::for_each_pair(pair_callback f) {
  build();
  const auto boxes = this->table_.boxes();
  const auto ids = this->table_.ids();
  out_.resize(threads_);
  tests_.assign(threads_, 0);
  for (auto& o : out_) o.clear();
  parallel(count_.size(), [&](std::size_t a, std::size_t b, std::size_t t) { detect_range(a, b, out_[t], tests_[t]); });
  box_tests_ = 0;
  for (std::size_t t = 0; t < out_.size(); ++t) {
    box_tests_ += tests_[t];
    for (const handle_pair& p : out_[t]) f(p.a, p.b);
  }
  // objects kept apart: against each other and everything placed
  for (std::size_t i = 0; i < apart_.size(); ++i) {
    const std::uint32_t a = apart_[i];
    for (std::size_t j = i + 1; j < apart_.size(); ++j) {
      ++box_tests_;
      if (overlaps(boxes[a], boxes[apart_[j]])) f(ids[a], ids[apart_[j]]);
    }
    for (std::size_t b = 0; b < boxes.size(); ++b) {
      if (cell_of_[b] == npos) continue;
      ++box_tests_;
      if (overlaps(boxes[a], boxes[b])) f(ids[a], ids[b]);
    }
  }
}

template <int D, class T>
void pivot_base<D, T>::find_pairs(std::vector<handle_pair>& out) {
  out.clear();
  for_each_pair([&out](handle a, handle b) { out.push_back({a, b}); });
}

template <int D, class T>
std::size_t pivot_base<D, T>::bytes() const noexcept {
  std::size_t b = this->table_.bytes() + coords_.capacity() * sizeof(std::array<std::int64_t, D>) +
                  (cell_of_.capacity() + count_.capacity() + index_.capacity() + data_.capacity() + apart_.capacity() +
                   dir_.capacity()) *
                      sizeof(std::uint32_t) +
                  (edges_.capacity() + edge_scratch_.capacity()) * sizeof(double) +
                  page_key_.capacity() * sizeof(std::array<std::int64_t, D>) + tests_.capacity() * 8;
  for (const auto& o : out_) b += o.capacity() * sizeof(handle_pair);
  return b;
}

template class pivot_base<2, float>;
template class pivot_base<2, double>;
template class pivot_base<3, float>;
template class pivot_base<3, double>;

}  // namespace hhg::detail
