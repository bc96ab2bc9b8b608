// Implementation notes: the cell list of hhg/neighbors.hpp.
//
// Cell edge h = max(r / 2, max|coordinate| * 2^-30) * (1 + 2^-10). Two points
// with within(a, b, r) differ by at most r (1 + 2^-50) per axis, and the
// rounding of fl(x / h) is below 2^-21 cells, so their cell indices differ by
// at most two: the 5^D cells around a point's cell hold all its neighbours.
// Cell indices are shifted to start at 2 and the index box is padded by two
// cells on each side, so the key ((k_z * span_y) + k_y) * span_x + k_x of every
// neighbour cell is exact and distinct (no wrap at the edges). If the key
// range would not fit in 62 bits, h doubles until it does (fewer, larger
// cells: still correct).
//
// The points are sorted by (key, index). Cells adjacent on the x axis are
// adjacent in key order, so the (up to) five cells of a neighbour row are one
// contiguous run of points. The one-set walk visits cells in key order; the
// first key of each of the 5^(D-1) neighbour rows only grows, so each row
// keeps a cursor into the cell array that moves forward only. The lists come
// out unordered and are put in ascending order by one transposition pass
// (the relation is symmetric), not by sorting each list.
//
// Threads (an executor set): every parallel step writes only its own outputs
// and the results are put together in a fixed order, so nothing depends on
// the worker count. The sort by (key, index) is a total order (indices are
// distinct): blocks sorted in parallel, then merged pairwise, each merge cut
// into pieces at "merge path" split points; any correct sort gives the same
// array. The walk is cut into runs of cells of about piece points; a run
// starts its row cursors by binary search where the serial walk would have
// them, and writes its lists to a buffer of its own; list s is then read
// through a pointer. The transposition is cut by target: worker w owns the
// lists of a range of points and walks every source j in ascending order,
// appending j only to its own lists, so each list is ascending as in the
// serial pass. neighbors_of answers fixed pieces of queries into buffers of
// their own, joined in order.
#include "hhg/neighbors.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "hhg/error.hpp"

namespace hhg {

namespace {

// Cells per radius: the edge is about r / kM, so a neighbour is at most kM
// cells away on each axis; kM = 2 tests 42% fewer candidates than kM = 1
// (a (2.5 r)^3 instead of a (3 r)^3 search volume).
constexpr std::int64_t kM = 2;
constexpr int kW = 2 * static_cast<int>(kM) + 1;  // cells per row
constexpr int rows_of(int d) { return d == 2 ? kW : kW * kW; }

std::size_t pieces_of(std::size_t n, std::size_t piece) { return (n + piece - 1) / piece; }

// f(begin, end, worker) over [0, n) on e, or on the calling thread.
template <class F>
void in_ranges(executor* e, std::size_t n, std::size_t min_range, F&& f) {
  if (n == 0) return;
  if (e == nullptr || e->workers() <= 1 || n <= min_range) {
    f(std::size_t{0}, n, 0u);
    return;
  }
  e->parallel_for(n, min_range, f);
}

// f(k, begin, end) for each fixed piece k of [0, n): piece boundaries
// depend on n only.
template <class F>
void in_pieces(executor* e, std::size_t n, std::size_t piece, F&& f) {
  in_ranges(e, pieces_of(n, piece), 1, [&](std::size_t k0, std::size_t k1, unsigned) {
    for (std::size_t k = k0; k < k1; ++k) f(k, k * piece, std::min(n, (k + 1) * piece));
  });
}

// Sorts v ascending (a strict weak order with no equal elements, so the result
// is the only sorted permutation): sorted blocks, then rounds of pairwise
// merges, each merge cut into pieces at merge-path split points.
template <class V>
void parallel_sort(executor* e, std::vector<V>& v, std::size_t min_size) {
  const std::size_t n = v.size();
  const unsigned w = e ? e->workers() : 1;
  if (w <= 1 || n < std::max<std::size_t>(min_size, 2)) {
    std::sort(v.begin(), v.end());
    return;
  }
  std::size_t blocks = 1;
  while (blocks < w && blocks < 64) blocks *= 2;
  const std::size_t width0 = (n + blocks - 1) / blocks;
  in_ranges(e, blocks, 1, [&](std::size_t b0, std::size_t b1, unsigned) {
    for (std::size_t b = b0; b < b1; ++b) {
      const std::size_t lo = std::min(n, b * width0), hi = std::min(n, (b + 1) * width0);
      std::sort(v.begin() + static_cast<std::ptrdiff_t>(lo), v.begin() + static_cast<std::ptrdiff_t>(hi));
    }
  });
  std::vector<V> tmp(n);
  V* src = v.data();
  V* dst = tmp.data();
  for (std::size_t width = width0; width < n; width *= 2) {
    const std::size_t pairs = pieces_of(n, 2 * width);
    const std::size_t cuts = std::max<std::size_t>(1, (2 * static_cast<std::size_t>(w) + pairs - 1) / pairs);
    in_ranges(e, pairs * cuts, 1, [&](std::size_t t0, std::size_t t1, unsigned) {
      for (std::size_t t = t0; t < t1; ++t) {
        const std::size_t p = t / cuts, c = t % cuts;
        const std::size_t a0 = p * 2 * width, a1 = std::min(n, a0 + width), b1 = std::min(n, a1 + width);
        const V* A = src + a0;
        const V* B = src + a1;
        const std::size_t la = a1 - a0, lb = b1 - a1, len = la + lb;
        // the first d outputs take split(d) elements of A (ties: A first)
        auto split = [&](std::size_t d) {
          std::size_t lo = d > lb ? d - lb : 0, hi = std::min(d, la);
          while (lo < hi) {
            const std::size_t mid = lo + (hi - lo) / 2;
            if (B[d - mid - 1] < A[mid])
              hi = mid;
            else
              lo = mid + 1;
          }
          return lo;
        };
        const std::size_t d0 = len * c / cuts, d1 = len * (c + 1) / cuts;
        const std::size_t i0 = split(d0), i1 = split(d1);
        std::merge(A + i0, A + i1, B + (d0 - i0), B + (d1 - i1), dst + a0 + d0);
      }
    });
    std::swap(src, dst);
  }
  if (src != v.data()) v.swap(tmp);
}

inline std::int64_t floor_i64(double t) {
  const auto k = static_cast<std::int64_t>(t);
  return k - (t < static_cast<double>(k) ? 1 : 0);
}

template <int D, class T>
void check_points(const std::vector<std::array<T, D>>& pts, const char* what) {
  for (const auto& p : pts)
    for (int i = 0; i < D; ++i)
      if (!std::isfinite(p[static_cast<std::size_t>(i)]))
        throw error(errc::nan_coordinate, std::string("hhg: ") + what + ": coordinates must be finite");
}

}  // namespace

template <int D, class T>
std::int64_t cell_list<D, T>::key_of(const std::array<double, D>& p) const {
  std::int64_t key = 0;
  for (int i = D - 1; i >= 0; --i) {
    const auto a = static_cast<std::size_t>(i);
    key = key * span_[a] + (floor_i64(p[a] * inv_) - kmin_[a]);
  }
  return key;
}

template <int D, class T>
void cell_list<D, T>::build(const std::vector<point>& points, double r) {
  if (std::isnan(r) || !std::isfinite(r)) throw error(errc::nan_coordinate, "hhg: cell_list: radius must be finite");
  if (r < 0) throw error(errc::inverted_box, "hhg: cell_list: radius is negative");
  if (r > kMaxRadius) throw error(errc::bad_config, "hhg: cell_list: radius above 2^511 (r * r overflows)");
  if (points.size() >= std::numeric_limits<std::uint32_t>::max())
    throw error(errc::capacity, "hhg: cell_list: too many points");
  check_points<D, T>(points, "cell_list");
  const std::size_t n = points.size();
  const std::size_t piece = std::max<std::size_t>(1, tune_.piece);
  std::vector<std::array<double, D>> pts(n);
  std::vector<double> piece_mag(pieces_of(n, piece), 0.0);
  in_pieces(exec_, n, piece, [&](std::size_t k, std::size_t b, std::size_t e) {
    double m = 0;
    for (std::size_t j = b; j < e; ++j)
      for (std::size_t i = 0; i < static_cast<std::size_t>(D); ++i) {
        pts[j][i] = points[j][i];
        m = std::max(m, std::fabs(pts[j][i]));
      }
    piece_mag[k] = m;
  });
  r_ = r;
  double mag = 0;
  for (const double m : piece_mag) mag = std::max(mag, m);
  h_ = std::max({r / static_cast<double>(kM), mag * 0x1p-30, 0x1p-1000}) * (1 + 0x1p-10);
  sort_all(pts);
}

template <int D, class T>
void cell_list<D, T>::sort_all(const std::vector<std::array<double, D>>& pts) {
  const std::size_t n = pts.size();
  const std::size_t piece = std::max<std::size_t>(1, tune_.piece);
  const std::size_t np = pieces_of(n, piece);
  std::vector<std::array<std::int64_t, D>> piece_lo(np), piece_hi(np);
  for (;;) {
    inv_ = 1.0 / h_;
    in_pieces(exec_, n, piece, [&](std::size_t k, std::size_t b, std::size_t e) {
      std::array<std::int64_t, D> lo{}, hi{};
      for (std::size_t j = b; j < e; ++j)
        for (std::size_t i = 0; i < static_cast<std::size_t>(D); ++i) {
          const std::int64_t c = floor_i64(pts[j][i] * inv_);
          if (j == b || c < lo[i]) lo[i] = c;
          if (j == b || c > hi[i]) hi[i] = c;
        }
      piece_lo[k] = lo;
      piece_hi[k] = hi;
    });
    std::array<std::int64_t, D> lo{}, hi{};
    lo.fill(0);
    hi.fill(0);
    for (std::size_t k = 0; k < np; ++k)
      for (std::size_t i = 0; i < static_cast<std::size_t>(D); ++i) {
        if (k == 0 || piece_lo[k][i] < lo[i]) lo[i] = piece_lo[k][i];
        if (k == 0 || piece_hi[k][i] > hi[i]) hi[i] = piece_hi[k][i];
      }
    double cells = 1;
    for (std::size_t i = 0; i < static_cast<std::size_t>(D); ++i) {
      kmin_[i] = lo[i] - kM;
      span_[i] = hi[i] - lo[i] + 1 + 2 * kM;
      cells *= static_cast<double>(span_[i]);
    }
    if (cells < 0x1p62) break;
    h_ *= 2;
  }
  std::vector<std::pair<std::int64_t, std::uint32_t>> order(n);
  in_ranges(exec_, n, piece, [&](std::size_t b, std::size_t e, unsigned) {
    for (std::size_t j = b; j < e; ++j) order[j] = {key_of(pts[j]), static_cast<std::uint32_t>(j)};
  });
  parallel_sort(exec_, order, tune_.parallel_sort);
  xyz_.resize(n);
  index_.resize(n);
  where_.resize(n);
  point_key_.resize(n);
  // cells: the first points of cells counted per piece, then written in order
  std::vector<std::size_t> piece_cells(np + 1, 0);
  in_pieces(exec_, n, piece, [&](std::size_t k, std::size_t b, std::size_t e) {
    std::size_t starts = 0;
    for (std::size_t s = b; s < e; ++s) {
      xyz_[s] = pts[order[s].second];
      index_[s] = order[s].second;
      where_[order[s].second] = static_cast<std::uint32_t>(s);
      point_key_[s] = order[s].first;
      starts += (s == 0 || order[s].first != order[s - 1].first) ? 1 : 0;
    }
    piece_cells[k + 1] = starts;
  });
  for (std::size_t k = 0; k < np; ++k) piece_cells[k + 1] += piece_cells[k];
  cell_key_.resize(piece_cells[np]);
  cell_start_.resize(piece_cells[np] + 1);
  in_pieces(exec_, n, piece, [&](std::size_t k, std::size_t b, std::size_t e) {
    std::size_t c = piece_cells[k];
    for (std::size_t s = b; s < e; ++s)
      if (s == 0 || order[s].first != order[s - 1].first) {
        cell_key_[c] = order[s].first;
        cell_start_[c++] = static_cast<std::uint32_t>(s);
      }
  });
  cell_start_.back() = static_cast<std::uint32_t>(n);
}

template <int D, class T>
void cell_list<D, T>::neighbors(neighbor_list& out, bool ascending) const {
  const std::size_t n = xyz_.size();
  const std::size_t piece = std::max<std::size_t>(1, tune_.piece);
  constexpr int R = rows_of(D);
  std::array<std::int64_t, R> row_off{};
  for (int j = 0; j < R; ++j) {
    const std::int64_t dy = j % kW - kM, dz = D == 3 ? j / kW - kM : 0;
    row_off[static_cast<std::size_t>(j)] = dy * span_[0] + (D == 3 ? dz * span_[0] * span_[1] : 0);
  }
  const std::size_t cells = cell_key_.size();
  // Runs of cells of about `piece` points (boundaries depend on the points only).
  std::vector<std::size_t> run_cell{0};
  for (std::size_t k = 1; k * piece < n; ++k) {
    const auto it = std::lower_bound(cell_start_.begin(), cell_start_.end() - 1, static_cast<std::uint32_t>(k * piece));
    const auto c = static_cast<std::size_t>(it - cell_start_.begin());
    if (c > run_cell.back() && c < cells) run_cell.push_back(c);
  }
  run_cell.push_back(cells);
  const std::size_t runs = run_cell.size() - 1;
  // the list of sorted point s: first[s][0 .. count[s]), in its run's buffer
  std::vector<std::vector<std::uint32_t>> buffer(runs);
  std::vector<const std::uint32_t*> first(n);
  std::vector<std::uint32_t> count(n);
  // exact test (detail::within_filter); inline thresholds for the common case
  const detail::within_filter near(r_);
  const double accept = near.fast ? near.accept : -1.0;
  const double reject = near.fast ? near.reject : std::numeric_limits<double>::infinity();
  in_ranges(exec_, runs, 1, [&](std::size_t k0, std::size_t k1, unsigned) {
    for (std::size_t k = k0; k < k1; ++k) {
      const std::size_t c_first = run_cell[k], c_last = run_cell[k + 1];
      if (c_first == c_last) continue;
      std::vector<std::uint32_t>& sidx = buffer[k];
      sidx.resize((cell_start_[c_last] - cell_start_[c_first]) * 8 + 64);
      std::vector<std::size_t> soff(cell_start_[c_last] - cell_start_[c_first] + 1, 0);
      const std::uint32_t s_base = cell_start_[c_first];
      // the row cursors where the walk from cell 0 would have them at c_first
      std::array<std::size_t, R> cursor{};
      for (std::size_t j = 0; j < static_cast<std::size_t>(R); ++j)
        cursor[j] = static_cast<std::size_t>(
            std::lower_bound(cell_key_.begin(), cell_key_.end(), cell_key_[c_first] + row_off[j] - kM) -
            cell_key_.begin());
      std::size_t used = 0;
      for (std::size_t c = c_first; c < c_last; ++c) {
        const std::int64_t key = cell_key_[c];
        std::array<std::pair<std::uint32_t, std::uint32_t>, R> run{};
        for (std::size_t j = 0; j < static_cast<std::size_t>(R); ++j) {
          const std::int64_t lo = key + row_off[j] - kM;
          std::size_t& q = cursor[j];
          while (q < cells && cell_key_[q] < lo) ++q;
          std::size_t e = q;
          while (e < cells && cell_key_[e] <= lo + 2 * kM) ++e;
          run[j] = {cell_start_[q], cell_start_[e]};
        }
        // room for every candidate, so the append below is branch free
        std::size_t cand = 0;
        for (const auto& [b0, b1] : run) cand += b1 - b0;
        const std::size_t in_cell = cell_start_[c + 1] - cell_start_[c];
        if (sidx.size() < used + cand * in_cell) sidx.resize(std::max(2 * sidx.size(), used + cand * in_cell));
        std::uint32_t* w = sidx.data();
        for (std::uint32_t s = cell_start_[c]; s < cell_start_[c + 1]; ++s) {
          const auto& a = xyz_[s];
          const std::size_t start = used;
          bool band = false;  // some d2 in (accept, reject]: the exact test decides
          // squared distance, rounded (the filter's input)
          const auto dist2 = [&](std::uint32_t t) {
            double d2 = 0;
            for (std::size_t i = 0; i < static_cast<std::size_t>(D); ++i) {
              const double d = a[i] - xyz_[t][i];
              d2 += d * d;
            }
            return d2;
          };
          for (const auto& [b0, b1] : run)
            for (std::uint32_t t = b0; t < b1; ++t) {
              const double d2 = dist2(t);
              w[used] = index_[t];
              used += static_cast<std::size_t>((d2 <= accept) & (t != s));
              band |= (d2 > accept) & (d2 <= reject);
            }
          if (band) [[unlikely]] {  // again, with the exact test in the band (rare)
            used = start;
            for (const auto& [b0, b1] : run)
              for (std::uint32_t t = b0; t < b1; ++t) {
                w[used] = index_[t];
                used += static_cast<std::size_t>(near(a, xyz_[t], dist2(t)) & (t != s));
              }
          }
          soff[s - s_base + 1] = used;
        }
      }
      sidx.resize(used);
      for (std::uint32_t s = s_base; s < cell_start_[c_last]; ++s) {
        first[s] = sidx.data() + soff[s - s_base];
        count[s] = static_cast<std::uint32_t>(soff[s - s_base + 1] - soff[s - s_base]);
      }
    }
  });
  out.offsets.assign(n + 1, 0);
  in_ranges(exec_, n, piece, [&](std::size_t b, std::size_t e, unsigned) {
    for (std::size_t i = b; i < e; ++i) out.offsets[i + 1] = count[where_[i]];
  });
  for (std::size_t i = 0; i < n; ++i) out.offsets[i + 1] += out.offsets[i];
  const std::size_t total = out.offsets[n];
  out.indices.resize(total);
  if (!ascending) {  // lists in storage order: one block copy each
    in_ranges(exec_, n, piece, [&](std::size_t b, std::size_t e, unsigned) {
      for (std::size_t i = b; i < e; ++i) {
        const std::uint32_t s = where_[i];
        std::copy(first[s], first[s] + count[s], out.indices.begin() + static_cast<std::ptrdiff_t>(out.offsets[i]));
      }
    });
    return;
  }
  // Transpose instead of sorting each list: the relation is symmetric, so
  // walking j = 0, 1, ... and appending j to the list of each neighbour i of j
  // fills every list in ascending order. Part p of the targets (points
  // [lo_p, hi_p), about equal shares of the pairs) is filled by one walk over
  // every j that appends only to its own lists.
  const unsigned workers = exec_ && n >= tune_.parallel_transpose ? exec_->workers() : 1;
  std::vector<std::size_t> part{0};
  for (unsigned p = 1; p < workers; ++p) {
    const std::size_t goal = total / workers * p;
    const auto it = std::lower_bound(out.offsets.begin(), out.offsets.end() - 1, goal);
    part.push_back(std::max(part.back(), static_cast<std::size_t>(it - out.offsets.begin())));
  }
  part.push_back(n);
  in_ranges(exec_, workers, 1, [&](std::size_t p0, std::size_t p1, unsigned) {
    for (std::size_t p = p0; p < p1; ++p) {
      const std::size_t lo = part[p], hi = part[p + 1];
      if (lo == hi) continue;
      std::vector<std::size_t> fill(out.offsets.begin() + static_cast<std::ptrdiff_t>(lo),
                                    out.offsets.begin() + static_cast<std::ptrdiff_t>(hi));
      std::uint32_t* dst = out.indices.data();
      if (lo == 0 && hi == n) {
        for (std::size_t j = 0; j < n; ++j) {
          const std::uint32_t s = where_[j];
          for (const std::uint32_t* q = first[s]; q != first[s] + count[s]; ++q)
            dst[fill[*q]++] = static_cast<std::uint32_t>(j);
        }
        continue;
      }
      const std::size_t width = hi - lo;
      for (std::size_t j = 0; j < n; ++j) {
        const std::uint32_t s = where_[j];
        for (const std::uint32_t* q = first[s]; q != first[s] + count[s]; ++q) {
          const std::size_t t = *q - lo;  // wraps for *q < lo: then >= width
          if (t < width) dst[fill[t]++] = static_cast<std::uint32_t>(j);
        }
      }
    }
  });
}

template <int D, class T>
void cell_list<D, T>::neighbors_of(const std::vector<point>& queries, neighbor_list& out) const {
  check_points<D, T>(queries, "cell_list::neighbors_of");
  const std::size_t nq = queries.size();
  const std::size_t kQueries = std::max<std::size_t>(1, tune_.queries);  // queries per piece
  std::vector<std::vector<std::uint32_t>> found(pieces_of(nq, kQueries));
  out.offsets.assign(nq + 1, 0);
  const detail::within_filter near(r_);
  in_pieces(exec_, nq, kQueries, [&](std::size_t piece, std::size_t q0, std::size_t q1) {
    std::vector<std::uint32_t>& hits = found[piece];
    for (std::size_t qi = q0; qi < q1; ++qi) {
      std::array<double, D> p{};
      std::array<std::int64_t, D> lo{}, hi{};
      bool empty = xyz_.empty();
      for (std::size_t i = 0; i < static_cast<std::size_t>(D) && !empty; ++i) {
        p[i] = queries[qi][i];
        const double u = p[i] * inv_;
        // the occupied index range is [kmin + 1, kmin + span - 2]
        const double first = static_cast<double>(kmin_[i] + kM),
                     last = static_cast<double>(kmin_[i] + span_[i] - 1 - kM);
        if (!(u >= first - static_cast<double>(kM) - 1 && u <= last + static_cast<double>(kM) + 1)) {
          empty = true;
          break;
        }
        const std::int64_t k = floor_i64(u);
        lo[i] = std::max(k - kM, kmin_[i]);
        hi[i] = std::min(k + kM, kmin_[i] + span_[i] - 1);
        if (lo[i] > hi[i]) empty = true;
      }
      const std::size_t begin = hits.size();
      if (!empty) {
        auto row = [&](std::int64_t ky, std::int64_t kz) {
          std::int64_t base = (kz - (D == 3 ? kmin_[D - 1] : 0));
          base = D == 3 ? base * span_[1] + (ky - kmin_[1]) : (ky - kmin_[1]);
          base *= span_[0];
          const std::int64_t k0 = base + (lo[0] - kmin_[0]), k1 = base + (hi[0] - kmin_[0]);
          auto it = std::lower_bound(cell_key_.begin(), cell_key_.end(), k0);
          const auto c0 = static_cast<std::size_t>(it - cell_key_.begin());
          std::size_t c1 = c0;
          while (c1 < cell_key_.size() && cell_key_[c1] <= k1) ++c1;
          for (std::uint32_t t = cell_start_[c0]; t < cell_start_[c1]; ++t) {
            double d2 = 0;
            for (std::size_t i = 0; i < static_cast<std::size_t>(D); ++i) {
              const double d = p[i] - xyz_[t][i];
              d2 += d * d;
            }
            if (near(p, xyz_[t], d2)) hits.push_back(index_[t]);
          }
        };
        if constexpr (D == 2) {
          for (std::int64_t y = lo[1]; y <= hi[1]; ++y) row(y, 0);
        } else {
          for (std::int64_t z = lo[2]; z <= hi[2]; ++z)
            for (std::int64_t y = lo[1]; y <= hi[1]; ++y) row(y, z);
        }
      }
      std::sort(hits.begin() + static_cast<std::ptrdiff_t>(begin), hits.end());
      out.offsets[qi + 1] = hits.size() - begin;
    }
  });
  for (std::size_t q = 0; q < nq; ++q) out.offsets[q + 1] += out.offsets[q];
  out.indices.resize(out.offsets[nq]);
  in_pieces(exec_, nq, kQueries, [&](std::size_t piece, std::size_t q0, std::size_t) {
    std::copy(found[piece].begin(), found[piece].end(),
              out.indices.begin() + static_cast<std::ptrdiff_t>(out.offsets[q0]));
  });
}

template <int D, class T>
void cell_list<D, T>::move(const std::vector<std::uint32_t>& which, const std::vector<point>& where) {
  if (which.size() != where.size()) throw error(errc::bad_config, "hhg: cell_list::move: size mismatch");
  check_points<D, T>(where, "cell_list::move");
  for (const std::uint32_t i : which)
    if (i >= index_.size()) throw error(errc::invalid_handle, "hhg: cell_list::move: index out of range");
  bool same_cells = true;
  double mag = 0;
  for (const auto& w : where)
    for (const T v : w) mag = std::max(mag, std::fabs(static_cast<double>(v)));
  same_cells = mag * 0x1p-30 * (1 + 0x1p-10) <= h_;
  for (std::size_t j = 0; j < which.size() && same_cells; ++j) {
    std::array<double, D> p{};
    for (std::size_t i = 0; i < static_cast<std::size_t>(D); ++i) {
      p[i] = where[j][i];
      const std::int64_t k = floor_i64(p[i] * inv_);
      if (k < kmin_[i] + kM || k > kmin_[i] + span_[i] - 1 - kM) same_cells = false;
    }
    if (same_cells && key_of(p) != point_key_[where_[which[j]]]) same_cells = false;
  }
  if (same_cells) {  // O(moved): every point keeps its cell
    for (std::size_t j = 0; j < which.size(); ++j)
      for (std::size_t i = 0; i < static_cast<std::size_t>(D); ++i) xyz_[where_[which[j]]][i] = where[j][i];
    return;
  }
  std::vector<std::array<double, D>> pts(index_.size());
  for (std::size_t s = 0; s < index_.size(); ++s) pts[index_[s]] = xyz_[s];
  for (std::size_t j = 0; j < which.size(); ++j)
    for (std::size_t i = 0; i < static_cast<std::size_t>(D); ++i) pts[which[j]][i] = where[j][i];
  double m2 = 0;
  for (const auto& p : pts)
    for (const double v : p) m2 = std::max(m2, std::fabs(v));
  h_ = std::max({r_ / static_cast<double>(kM), m2 * 0x1p-30, 0x1p-1000}) * (1 + 0x1p-10);
  sort_all(pts);
}

template class cell_list<2, float>;
template class cell_list<2, double>;
template class cell_list<3, float>;
template class cell_list<3, double>;

}  // namespace hhg
