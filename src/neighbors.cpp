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
  std::vector<std::array<double, D>> pts(points.size());
  for (std::size_t j = 0; j < points.size(); ++j)
    for (std::size_t i = 0; i < static_cast<std::size_t>(D); ++i) pts[j][i] = points[j][i];
  r_ = r;
  double mag = 0;
  for (const auto& p : pts)
    for (const double v : p) mag = std::max(mag, std::fabs(v));
  h_ = std::max({r / static_cast<double>(kM), mag * 0x1p-30, 0x1p-1000}) * (1 + 0x1p-10);
  sort_all(pts);
}

template <int D, class T>
void cell_list<D, T>::sort_all(const std::vector<std::array<double, D>>& pts) {
  const std::size_t n = pts.size();
  for (;;) {
    inv_ = 1.0 / h_;
    std::array<std::int64_t, D> lo{}, hi{};
    lo.fill(0);
    hi.fill(0);
    for (std::size_t j = 0; j < n; ++j)
      for (std::size_t i = 0; i < static_cast<std::size_t>(D); ++i) {
        const std::int64_t k = floor_i64(pts[j][i] * inv_);
        if (j == 0 || k < lo[i]) lo[i] = k;
        if (j == 0 || k > hi[i]) hi[i] = k;
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
  for (std::size_t j = 0; j < n; ++j) order[j] = {key_of(pts[j]), static_cast<std::uint32_t>(j)};
  std::sort(order.begin(), order.end());
  xyz_.resize(n);
  index_.resize(n);
  where_.resize(n);
  point_key_.resize(n);
  cell_key_.clear();
  cell_start_.clear();
  for (std::size_t s = 0; s < n; ++s) {
    xyz_[s] = pts[order[s].second];
    index_[s] = order[s].second;
    where_[order[s].second] = static_cast<std::uint32_t>(s);
    point_key_[s] = order[s].first;
    if (s == 0 || order[s].first != order[s - 1].first) {
      cell_key_.push_back(order[s].first);
      cell_start_.push_back(static_cast<std::uint32_t>(s));
    }
  }
  cell_start_.push_back(static_cast<std::uint32_t>(n));
}

template <int D, class T>
void cell_list<D, T>::neighbors(neighbor_list& out, bool ascending) const {
  const std::size_t n = xyz_.size();
  constexpr int R = rows_of(D);
  std::array<std::int64_t, R> row_off{};
  for (int j = 0; j < R; ++j) {
    const std::int64_t dy = j % kW - kM, dz = D == 3 ? j / kW - kM : 0;
    row_off[static_cast<std::size_t>(j)] = dy * span_[0] + (D == 3 ? dz * span_[0] * span_[1] : 0);
  }
  std::array<std::size_t, R> cursor{};
  // lists in sorted order first, then reordered to the original indices
  std::vector<std::size_t> soff(n + 1, 0);
  std::vector<std::uint32_t> sidx(n * 8 + 64);
  std::size_t used = 0;
  // exact test (detail::within_filter); inline thresholds for the common case
  const detail::within_filter near(r_);
  const double accept = near.fast ? near.accept : -1.0;
  const double reject = near.fast ? near.reject : std::numeric_limits<double>::infinity();
  const std::size_t cells = cell_key_.size();
  for (std::size_t c = 0; c < cells; ++c) {
    const std::int64_t key = cell_key_[c];
    std::array<std::pair<std::uint32_t, std::uint32_t>, R> run{};
    for (std::size_t j = 0; j < static_cast<std::size_t>(R); ++j) {
      const std::int64_t first = key + row_off[j] - kM;
      std::size_t& q = cursor[j];
      while (q < cells && cell_key_[q] < first) ++q;
      std::size_t e = q;
      while (e < cells && cell_key_[e] <= first + 2 * kM) ++e;
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
      for (const auto& [b0, b1] : run)
        for (std::uint32_t t = b0; t < b1; ++t) {
          double d2 = 0;
          for (std::size_t i = 0; i < static_cast<std::size_t>(D); ++i) {
            const double d = a[i] - xyz_[t][i];
            d2 += d * d;
          }
          w[used] = index_[t];
          used += static_cast<std::size_t>((d2 <= accept) & (t != s));
          band |= (d2 > accept) & (d2 <= reject);
        }
      if (band) [[unlikely]] {  // again, with the exact test in the band (rare)
        used = start;
        for (const auto& [b0, b1] : run)
          for (std::uint32_t t = b0; t < b1; ++t) {
            double d2 = 0;
            for (std::size_t i = 0; i < static_cast<std::size_t>(D); ++i) {
              const double d = a[i] - xyz_[t][i];
              d2 += d * d;
            }
            w[used] = index_[t];
            used += static_cast<std::size_t>(near(a, xyz_[t], d2) & (t != s));
          }
      }
      soff[s + 1] = used;
    }
  }
  out.offsets.assign(n + 1, 0);
  for (std::size_t i = 0; i < n; ++i) out.offsets[i + 1] = out.offsets[i] + (soff[where_[i] + 1] - soff[where_[i]]);
  // Transpose instead of sorting each list: the relation is symmetric, so
  // walking j = 0, 1, ... and appending j to the list of each neighbour i of j
  // fills every list in ascending order.
  out.indices.resize(used);
  if (!ascending) {  // lists in storage order: one block copy each
    for (std::size_t i = 0; i < n; ++i)
      std::copy(sidx.begin() + static_cast<std::ptrdiff_t>(soff[where_[i]]),
                sidx.begin() + static_cast<std::ptrdiff_t>(soff[where_[i] + 1]),
                out.indices.begin() + static_cast<std::ptrdiff_t>(out.offsets[i]));
    return;
  }
  std::vector<std::size_t> fill(out.offsets.begin(), out.offsets.end() - 1);
  for (std::size_t j = 0; j < n; ++j) {
    const std::uint32_t s = where_[j];
    for (std::size_t k = soff[s]; k < soff[s + 1]; ++k) out.indices[fill[sidx[k]]++] = static_cast<std::uint32_t>(j);
  }
}

template <int D, class T>
void cell_list<D, T>::neighbors_of(const std::vector<point>& queries, neighbor_list& out) const {
  check_points<D, T>(queries, "cell_list::neighbors_of");
  out.offsets.assign(queries.size() + 1, 0);
  out.indices.clear();
  const detail::within_filter near(r_);
  for (std::size_t qi = 0; qi < queries.size(); ++qi) {
    std::array<double, D> p{};
    std::array<std::int64_t, D> lo{}, hi{};
    bool empty = xyz_.empty();
    for (std::size_t i = 0; i < static_cast<std::size_t>(D) && !empty; ++i) {
      p[i] = queries[qi][i];
      const double u = p[i] * inv_;
      // the occupied index range is [kmin + 1, kmin + span - 2]
      const double first = static_cast<double>(kmin_[i] + kM), last = static_cast<double>(kmin_[i] + span_[i] - 1 - kM);
      if (!(u >= first - static_cast<double>(kM) - 1 && u <= last + static_cast<double>(kM) + 1)) {
        empty = true;
        break;
      }
      const std::int64_t k = floor_i64(u);
      lo[i] = std::max(k - kM, kmin_[i]);
      hi[i] = std::min(k + kM, kmin_[i] + span_[i] - 1);
      if (lo[i] > hi[i]) empty = true;
    }
    const std::size_t begin = out.indices.size();
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
          if (near(p, xyz_[t], d2)) out.indices.push_back(index_[t]);
        }
      };
      if constexpr (D == 2) {
        for (std::int64_t y = lo[1]; y <= hi[1]; ++y) row(y, 0);
      } else {
        for (std::int64_t z = lo[2]; z <= hi[2]; ++z)
          for (std::int64_t y = lo[1]; y <= hi[1]; ++y) row(y, z);
      }
    }
    std::sort(out.indices.begin() + static_cast<std::ptrdiff_t>(begin), out.indices.end());
    out.offsets[qi + 1] = out.indices.size();
  }
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
