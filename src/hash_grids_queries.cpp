// Implementation notes: queries on the hierarchical hash grid.
//
// Where a match can be. A grid object sits in the cell of its min corner,
// k_i = floor(fl(min_i * inv)), and is smaller than a cell, so its max corner
// is in cell k_i or k_i + 1 (the reach bit; hash_grids.cpp guarantees it). As
// v -> fl(v * inv) is monotone, an object overlapping the closed box [lo, hi]
// has k_i in [floor(lo_i * inv) - 1, floor(hi_i * inv)] on every axis: the
// query box's cell range widened by one cell downwards (the level's reach).
// The range is exact for any coordinates, so region queries need no guard
// band. A range of at most n_i consecutive indices per axis maps to distinct
// hashed cells (n_i cells per axis), so no object is seen twice. When the
// range has more cells than the level has occupied cells (or the range is
// infinite or wraps), the occupied cells are scanned instead. Every candidate
// gets the exact predicate of hhg/queries.hpp, so results equal brute force.
//
// Spheres search the box [c - r', c + r'] with r' slightly larger than r (a
// box meeting the sphere is within r of c on every axis; the margin covers the
// rounding of c +- r), then apply the exact box_meets_sphere. nearest() grows
// a cube of half width w until it holds k boxes within w (counted exactly),
// then orders the candidates exactly (compare_box_distance, ties by index).
//
// Rays. Per level, the walk goes along the dominant axis a (largest
// |direction|) column by column: column m holds the cells whose index on axis
// a is m. Objects of column m lie in the slab [m c, (m + 2) c] on axis a; the
// ray is in that slab for t in [ta, tb], where its other coordinates span an
// interval; that interval's cell range, widened by one cell downwards (reach)
// and by a rounding margin, is searched. Consecutive columns are distinct
// indices, so no cell is visited twice. This is the 3D-DDA of Amanatides and
// Woo with a one-cell-wide "fat" footprint, organised by columns so that
// rounding can only widen the footprint, never skip a cell at a corner. A
// walk is limited to about twice the level's occupied cells and to less than
// one turn around the hashed grid; a longer (or infinite) ray walks whole
// columns up to there, and the rest of the level is then scanned, skipping
// objects whose unwrapped column was walked (the walk in turn skips objects
// of other unwrapped columns that share a visited hashed cell), so every
// object is tested once. The closest-hit query keeps the candidates of the walk in a
// heap by entry parameter and hands them to the exact test once the walk is
// past them, so the walk stops as soon as it is beyond the shortened ray.
#include <queue>

#include "hash_grids/region.hpp"

namespace hhg {
namespace detail {
namespace {

template <int D, class T>
using state_t = hash_grids_state<D, T>;

template <int D, class T>
void check_query_box(const box<D, T>& q) {
  require_valid_box(q);
}

template <int D, class T>
void check_point(const std::array<T, D>& p) {
  for (int i = 0; i < D; ++i)
    if (std::isnan(p[i])) throw error(errc::nan_coordinate, "hhg: query point coordinate is NaN");
}

template <int D, class T>
void check_ray(const ray<D, T>& r) {
  for (int i = 0; i < D; ++i)
    if (!std::isfinite(r.origin[i]) || !std::isfinite(r.direction[i]))
      throw error(errc::nan_coordinate, "hhg: ray origin and direction must be finite");
  if (std::isnan(r.max_t)) throw error(errc::nan_coordinate, "hhg: ray max_t is NaN");
  if (r.max_t < 0) throw error(errc::inverted_box, "hhg: ray max_t is negative");
}

// The entries of level g that the ray can cross, column by column (see the
// notes). on_column(t) is called before each column with a lower bound of the
// entry parameter of its objects; returning false stops the walk (returns
// true: not an early stop of the visitor). on_entry(e) as in search_region.
template <int D, class T, class C, class F>
bool walk_ray(const state_t<D, T>& s, const typename state_t<D, T>::grid& g, const ray<D, T>& r, C&& on_column,
              F&& on_entry) {
  using S = state_t<D, T>;
  int a = 0;
  for (int i = 1; i < D; ++i)
    if (std::fabs(static_cast<double>(r.direction[i])) > std::fabs(static_cast<double>(r.direction[a]))) a = i;
  const double da = r.direction[a];
  const double t1 = r.max_t;
  const auto full_scan = [&]() {
    if (!on_column(0.0)) return true;
    return scan_grid<D, T>(g, on_entry);
  };
  if (s.rebuild_pending || da == 0) return full_scan();
  std::array<double, D> edge{};  // the cells' edge per axis (exact: cell_size over a power of two)
  for (int i = 0; i < D; ++i) edge[i] = g.cell_size / s.axis_scale[i];
  const double c = edge[a];
  // The longest walk: no wrap around the hashed grid on any axis, and about
  // 2 * (occupied cells) cell visits. A longer ray (an infinite one too) is
  // walked up to there; the rest of the level is scanned afterwards, skipping
  // the walked columns, unless the closest-hit search is already done.
  double tlim =
      std::max(4.0, (2.0 * static_cast<double>(g.occupied.size()) + 64) / (D == 3 ? 16.0 : 4.0)) * c / std::fabs(da);
  for (int i = 0; i < D; ++i) {
    const double di = std::fabs(static_cast<double>(r.direction[i]));
    if (di != 0) tlim = std::min(tlim, (static_cast<double>(g.mask[i]) + 1 - 6) * edge[i] / di);
  }
  if (!(tlim > 0)) return full_scan();
  const bool partial = !(t1 <= tlim);
  const double t1w = partial ? tlim : t1;
  std::array<double, D> p0{}, p1{};
  double mag = 0;  // the largest coordinate of the walk, in cells
  for (int i = 0; i < D; ++i) {
    p0[i] = r.origin[i];
    p1[i] = static_cast<double>(r.origin[i]) + t1w * static_cast<double>(r.direction[i]);
    mag = std::max(mag, std::max(std::fabs(p0[i]), std::fabs(p1[i])) * g.inv[i]);
    if (!(mag <= kHuge)) return full_scan();
  }
  // rounding margin in cells (generous: see the notes)
  const double eps = 0x1p-20 + mag * 0x1p-30;
  std::array<std::int64_t, D> glo{}, ghi{};
  for (int i = 0; i < D; ++i) {
    glo[i] = floor_to_int(std::min(p0[i], p1[i]) * g.inv[i] - eps) - 1;
    ghi[i] = floor_to_int(std::max(p0[i], p1[i]) * g.inv[i] + eps);
    if (ghi[i] - glo[i] + 1 > std::int64_t{g.mask[i]} + 1) return full_scan();
  }
  const std::int64_t step = da > 0 ? 1 : -1;
  const std::int64_t first = da > 0 ? glo[a] : ghi[a], last = da > 0 ? ghi[a] : glo[a];
  const double o_a = r.origin[a];
  const double tpad = t1w * 0x1p-30 + c / std::fabs(da) * 0x1p-20;
  // unwrapped column of an object (its min corner's cell index on axis a)
  const auto column_of = [&](const typename S::entry& e) {
    return floor_to_int(static_cast<double>(e.min(a)) * g.inv[a]);
  };
  std::int64_t m_stop = last + step;
  std::array<std::uint32_t, D> cc{};
  for (std::int64_t m = first;; m += step) {
    double ta = (static_cast<double>(m) * c - o_a) / da;
    double tb = (static_cast<double>(m + 2) * c - o_a) / da;
    if (ta > tb) std::swap(ta, tb);
    if (partial && tb + tpad > t1w) {  // this column reaches past the walk
      m_stop = m;
      break;
    }
    ta = std::max(0.0, ta - tpad);
    tb = std::min(t1w, tb + tpad);
    if (ta <= tb) {
      if (!on_column(ta)) return true;
      std::array<std::int64_t, D> lo{}, hi{};
      for (int i = 0; i < D; ++i) {
        if (i == a) {
          lo[i] = hi[i] = m;
          continue;
        }
        const double u = static_cast<double>(r.origin[i]) + ta * static_cast<double>(r.direction[i]);
        const double v = static_cast<double>(r.origin[i]) + tb * static_cast<double>(r.direction[i]);
        lo[i] = std::max(glo[i], floor_to_int(std::min(u, v) * g.inv[i] - eps) - 1);
        hi[i] = std::min(ghi[i], floor_to_int(std::max(u, v) * g.inv[i] + eps));
      }
      auto visit = [&]() {
        const std::uint32_t rr = S::lookup(g, S::encode(g, cc));
        if (rr == 0) return true;
        const auto& oc = g.occupied[rr - 1];
        const auto* e = g.pool.data() + oc.block;
        for (std::uint32_t j = 0; j < oc.count; ++j) {
          // a partial walk leaves objects of other unwrapped columns that
          // share the hashed cell to the scan of the rest
          if (partial && column_of(e[j]) != m) continue;
          if (!on_entry(e[j])) return false;
        }
        return true;
      };
      if constexpr (D == 2) {
        for (std::int64_t y = lo[1]; y <= hi[1]; ++y) {
          cc[1] = static_cast<std::uint32_t>(y) & g.mask[1];
          for (std::int64_t x = lo[0]; x <= hi[0]; ++x) {
            cc[0] = static_cast<std::uint32_t>(x) & g.mask[0];
            if (!visit()) return false;
          }
        }
      } else {
        for (std::int64_t z = lo[2]; z <= hi[2]; ++z) {
          cc[2] = static_cast<std::uint32_t>(z) & g.mask[2];
          for (std::int64_t y = lo[1]; y <= hi[1]; ++y) {
            cc[1] = static_cast<std::uint32_t>(y) & g.mask[1];
            for (std::int64_t x = lo[0]; x <= hi[0]; ++x) {
              cc[0] = static_cast<std::uint32_t>(x) & g.mask[0];
              if (!visit()) return false;
            }
          }
        }
      }
    }
    if (m == last) break;
  }
  if (!partial) return true;
  // the rest of the level: objects whose column was not walked
  const double t_rest = std::max(
      0.0,
      std::min((static_cast<double>(m_stop) * c - o_a) / da, (static_cast<double>(m_stop + 2) * c - o_a) / da) - tpad);
  if (!on_column(t_rest)) return true;
  const std::int64_t walked = (m_stop - first) * step;
  return scan_grid<D, T>(g, [&](const typename S::entry& e) {
    const std::int64_t rel = (column_of(e) - first) * step;
    if (rel >= 0 && rel < walked) return true;
    return on_entry(e);
  });
}

// Every ray candidate: on_column / on_entry per region (apart, list, levels).
// on_region_end() is called after each region.
// The walk runs on the ray scaled to a direction whose largest component is
// in [1, 2) (a power of two: the path is the same), so that its cell and
// parameter arithmetic neither overflows nor underflows for directions of any
// length; its parameter bounds are scaled back for on_column. The walk only
// chooses candidates: every candidate is decided on the caller's ray.
template <int D, class T, class C, class F, class E>
bool ray_regions(const state_t<D, T>& s, const ray<D, T>& user_ray, C&& on_column_user, F&& on_entry,
                 E&& on_region_end) {
  ray<D, T> r = user_ray;
  int k = 0;
  {
    double big = 0;
    for (int i = 0; i < D; ++i) big = std::max(big, std::fabs(static_cast<double>(r.direction[i])));
    if (big > 0) {
      k = std::ilogb(big);
      for (int i = 0; i < D; ++i) r.direction[i] = std::ldexp(r.direction[i], -k);
      r.max_t = std::ldexp(r.max_t, k);  // +inf on overflow: a longer walk, still a superset
    }
  }
  const bool by_mul = k >= -1000 && k <= 1000;  // t * 2^-k: the same rounding as ldexp
  const double back = by_mul ? std::ldexp(1.0, -k) : 1.0;
  const auto on_column = [&](double t) { return on_column_user(by_mul ? t * back : std::ldexp(t, -k)); };
  bool zero = true;
  for (int i = 0; i < D; ++i) zero = zero && r.direction[i] == 0;
  if (zero) {  // a point: the boxes containing the origin
    std::array<double, D> p{};
    for (int i = 0; i < D; ++i) p[i] = r.origin[i];
    if (!on_column(0.0)) return true;
    const bool go = search_region<D, T>(s, p, p, on_entry);
    on_region_end();
    return go;
  }
  if (on_column(0.0)) {
    if (!scan_vector(s.apart, on_entry)) return false;
    if (!scan_vector(s.list, on_entry)) return false;
  }
  on_region_end();
  for (const std::uint32_t id : s.levels) {
    const auto& g = s.grids[id];
    if (g.objects == 0) continue;
    if (!walk_ray<D, T>(s, g, r, on_column, on_entry)) return false;
    on_region_end();
  }
  return true;
}

// A query whose visitor is the user's marks the structure as queried on
// this thread while it runs: the visitor may not change the structure
// (hash_grids::writable refuses with errc::reentrant_call). The mark is a
// node on this stack in a thread-local list, so concurrent queries from
// other threads are not affected.
struct visiting {
  query_mark m;
  explicit visiting(const void* s) : m{s, query_marks} { query_marks = &m; }
  ~visiting() { query_marks = m.prev; }
  visiting(const visiting&) = delete;
  visiting& operator=(const visiting&) = delete;
};

struct by_entry {
  bool operator()(const ray_hit& x, const ray_hit& y) const {
    return x.t > y.t || (x.t == y.t && x.id.index > y.id.index);
  }
};

// The closest-hit engine: exact(handle, entry_t, max_t) -> t or negative;
// better(t, h, best) decides replacement.
template <int D, class T, class X>
ray_hit closest_impl(const state_t<D, T>& s, const ray<D, T>& r, X&& exact, bool ties_by_index) {
  ray_hit best{};
  double cur = r.max_t;
  std::priority_queue<ray_hit, std::vector<ray_hit>, by_entry> heap;
  auto drain_to = [&](double t) {
    while (!heap.empty() && heap.top().t <= t) {
      const ray_hit c = heap.top();
      heap.pop();
      if (c.t > cur) continue;
      const double th = exact(c.id, c.t, cur);
      if (th < 0 || th > cur) continue;
      if (!best.id || th < cur || (ties_by_index && th == cur && c.id.index < best.id.index)) {
        best = {c.id, th};
        cur = th;
      }
    }
  };
  auto on_column = [&](double t) {
    drain_to(t);
    return t <= cur;
  };
  auto on_entry = [&](const typename state_t<D, T>::entry& e) {
    const double t = ray_box_entry(r, e.box());
    if (t >= 0 && t <= cur) heap.push({e.user_handle(), t});
    return true;
  };
  auto on_end = [&]() { drain_to(std::numeric_limits<double>::infinity()); };
  ray_regions<D, T>(s, r, on_column, on_entry, on_end);
  return best;
}

}  // namespace
}  // namespace detail

// ---- region queries -------------------------------------------------------------

template <int D, class T>
bool hash_grids<D, T>::for_each_overlapping(const box_type& q, object_visitor v) const {
  const auto& s = readable("for_each_overlapping");
  detail::check_query_box(q);
  std::array<double, D> lo{}, hi{};
  for (int i = 0; i < D; ++i) {
    lo[i] = q.min[i];
    hi[i] = q.max[i];
  }
  const detail::visiting mark(&s);
  return detail::search_region<D, T>(s, lo, hi, [&](const auto& e) {
    for (int i = 0; i < D; ++i)
      if (e.max(i) < q.min[i] || q.max[i] < e.min(i)) return true;
    return v(e.user_handle());
  });
}

namespace detail {
// Runs fill, which appends to out, and leaves in out only what it appended.
// out is untouched when fill throws: bad input is found before anything is
// appended, and what was appended before an out-of-memory is dropped. (Until
// stop 79 the query forms below cleared out first, so a rejected query emptied
// the caller's earlier results: "bad query input has no effect".)
template <class V, class F>
void replace_with(std::vector<V>& out, F&& fill) {
  const std::size_t old = out.size();
  try {
    fill();
  } catch (...) {
    out.resize(old);
    throw;
  }
  out.erase(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(old));
}
}  // namespace detail

template <int D, class T>
void hash_grids<D, T>::overlapping(const box_type& q, std::vector<handle>& out) const {
  detail::replace_with(out, [&] {
    for_each_overlapping(q, [&](handle h) {
      out.push_back(h);
      return true;
    });
  });
}

template <int D, class T>
std::vector<handle> hash_grids<D, T>::overlapping(const box_type& q) const {
  std::vector<handle> out;
  overlapping(q, out);
  return out;
}

template <int D, class T>
bool hash_grids<D, T>::for_each_containing(const std::array<T, D>& p, object_visitor v) const {
  detail::check_point<D, T>(p);
  box_type q;
  q.min = p;
  q.max = p;
  return for_each_overlapping(q, v);
}

template <int D, class T>
void hash_grids<D, T>::containing(const std::array<T, D>& p, std::vector<handle>& out) const {
  detail::replace_with(out, [&] {
    for_each_containing(p, [&](handle h) {
      out.push_back(h);
      return true;
    });
  });
}

template <int D, class T>
bool hash_grids<D, T>::for_each_in_sphere(const std::array<T, D>& center, double radius, object_visitor v) const {
  const auto& s = readable("for_each_in_sphere");
  detail::check_point<D, T>(center);
  if (std::isnan(radius)) throw error(errc::nan_coordinate, "hhg: sphere radius is NaN");
  if (radius < 0) throw error(errc::inverted_box, "hhg: sphere radius is negative");
  std::array<double, D> lo{}, hi{};
  for (int i = 0; i < D; ++i) {
    const double c = center[i];
    const double pad = radius * (1 + 0x1p-30) + std::fabs(c) * 0x1p-50;
    lo[i] = c - pad;
    hi[i] = c + pad;
  }
  const detail::visiting mark(&s);
  return detail::search_region<D, T>(s, lo, hi, [&](const auto& e) {
    if (!box_meets_sphere(e.box(), center, radius)) return true;
    return v(e.user_handle());
  });
}

template <int D, class T>
void hash_grids<D, T>::in_sphere(const std::array<T, D>& center, double radius, std::vector<handle>& out) const {
  detail::replace_with(out, [&] {
    for_each_in_sphere(center, radius, [&](handle h) {
      out.push_back(h);
      return true;
    });
  });
}

// ---- rays -----------------------------------------------------------------------

template <int D, class T>
bool hash_grids<D, T>::for_each_ray_hit(const ray<D, T>& r, ray_visitor v) const {
  const auto& s = readable("for_each_ray_hit");
  detail::check_ray(r);
  const detail::visiting mark(&s);
  return detail::ray_regions<D, T>(
      s, r, [](double) { return true; },
      [&](const auto& e) {
        const double t = ray_box_entry(r, e.box());
        if (t < 0) return true;
        return v(e.user_handle(), t);
      },
      [] {});
}

template <int D, class T>
void hash_grids<D, T>::ray_hits(const ray<D, T>& r, std::vector<ray_hit>& out) const {
  detail::replace_with(out, [&] {
    for_each_ray_hit(r, [&](handle h, double t) {
      out.push_back({h, t});
      return true;
    });
  });
  std::sort(out.begin(), out.end(),
            [](const ray_hit& x, const ray_hit& y) { return x.t < y.t || (x.t == y.t && x.id.index < y.id.index); });
}

template <int D, class T>
ray_hit hash_grids<D, T>::first_ray_hit(const ray<D, T>& r) const {
  const auto& s = readable("first_ray_hit");
  detail::check_ray(r);
  return detail::closest_impl<D, T>(
      s, r, [](handle, double t, double) { return t; }, true);
}

template <int D, class T>
ray_hit hash_grids<D, T>::any_ray_hit(const ray<D, T>& r) const {
  ray_hit found{};
  for_each_ray_hit(r, [&](handle h, double t) {
    found = {h, t};
    return false;
  });
  return found;
}

template <int D, class T>
ray_hit hash_grids<D, T>::closest_ray_hit(const ray<D, T>& r, exact_ray_test exact) const {
  const auto& s = readable("closest_ray_hit");
  detail::check_ray(r);
  const detail::visiting mark(&s);
  return detail::closest_impl<D, T>(
      s, r, [&](handle h, double, double max_t) { return exact(h, max_t); }, false);
}

// ---- nearest --------------------------------------------------------------------

template <int D, class T>
void hash_grids<D, T>::nearest(const std::array<T, D>& p, std::size_t k, std::vector<handle>& out) const {
  readable("nearest");
  detail::check_point<D, T>(p);
  for (int i = 0; i < D; ++i)
    if (!std::isfinite(p[i])) throw error(errc::nan_coordinate, "hhg: nearest: point must be finite");
  out.clear();
  if (k == 0 || s_->count == 0) return;
  const bool all = k >= s_->count;  // one pass over everything
  std::vector<std::pair<box_type, handle>> cand;
  double w = all ? std::numeric_limits<double>::infinity() : 1.0;
  for (const std::uint32_t id : s_->levels)
    if (!all && s_->grids[id].objects != 0) {
      w = s_->grids[id].cell_size;
      break;
    }
  for (;;) {
    cand.clear();
    std::array<double, D> lo{}, hi{};
    for (int i = 0; i < D; ++i) {
      const double c = p[i];
      const double pad = w * (1 + 0x1p-30) + std::fabs(c) * 0x1p-50;
      lo[i] = c - pad;
      hi[i] = c + pad;
    }
    std::size_t within = 0;
    detail::search_region<D, T>(*s_, lo, hi, [&](const auto& e) {
      const box_type b = e.box();
      cand.push_back({b, e.user_handle()});
      // exact: sum_i d_i^2 <= w^2 (the cube holds every box within w)
      within += box_meets_sphere(b, p, w) ? 1 : 0;
      return true;
    });
    if (within >= k || cand.size() == s_->count || !std::isfinite(w)) {
      // every object at distance <= w is a candidate, so the k nearest (with
      // ties) are among them; the order is exact (compare_box_distance)
      const auto less = [&](const std::pair<box_type, handle>& x, const std::pair<box_type, handle>& y) {
        const int c = compare_box_distance(x.first, y.first, p);
        return c < 0 || (c == 0 && x.second.index < y.second.index);
      };
      const std::size_t n = std::min(k, cand.size());
      std::partial_sort(cand.begin(), cand.begin() + static_cast<std::ptrdiff_t>(n), cand.end(), less);
      for (std::size_t i = 0; i < n; ++i) out.push_back(cand[i].second);
      return;
    }
    w *= 2;
  }
}

// ---- batches --------------------------------------------------------------------

// Every query is checked first (bad input: an error, `out` untouched), then
// the queries are answered on the executor in ranges; each answer is written
// to its own out[i] by the query code of the single forms, so the lists are
// those of the serial loop for any executor and worker count.
namespace detail {
namespace {
template <class F>
void run_batch(executor* e, std::size_t n, F&& one) {
  constexpr std::size_t kMinRange = 16;  // a range amortizes the hand-out
  if (e == nullptr || e->workers() <= 1 || n < 2 * kMinRange) {
    for (std::size_t i = 0; i < n; ++i) one(i);
    return;
  }
  e->parallel_for(n, kMinRange, [&](std::size_t b, std::size_t en, unsigned) {
    for (std::size_t i = b; i < en; ++i) one(i);
  });
}
}  // namespace
}  // namespace detail

template <int D, class T>
void hash_grids<D, T>::overlapping(const std::vector<box_type>& queries, std::vector<std::vector<handle>>& out) const {
  for (const auto& q : queries) detail::check_query_box(q);
  out.resize(queries.size());
  detail::run_batch(get_executor(), queries.size(), [&](std::size_t i) { overlapping(queries[i], out[i]); });
}

template <int D, class T>
void hash_grids<D, T>::ray_hits(const std::vector<ray<D, T>>& rays, std::vector<std::vector<ray_hit>>& out) const {
  for (const auto& r : rays) detail::check_ray(r);
  out.resize(rays.size());
  detail::run_batch(get_executor(), rays.size(), [&](std::size_t i) { ray_hits(rays[i], out[i]); });
}

// Member by member: hash_grids.cpp instantiates the class itself.
#define HHG_QUERIES_INSTANTIATE(D, T)                                                                                 \
  template bool hash_grids<D, T>::for_each_overlapping(const box_type&, object_visitor) const;                        \
  template void hash_grids<D, T>::overlapping(const box_type&, std::vector<handle>&) const;                           \
  template std::vector<handle> hash_grids<D, T>::overlapping(const box_type&) const;                                  \
  template bool hash_grids<D, T>::for_each_containing(const std::array<T, D>&, object_visitor) const;                 \
  template void hash_grids<D, T>::containing(const std::array<T, D>&, std::vector<handle>&) const;                    \
  template bool hash_grids<D, T>::for_each_in_sphere(const std::array<T, D>&, double, object_visitor) const;          \
  template void hash_grids<D, T>::in_sphere(const std::array<T, D>&, double, std::vector<handle>&) const;             \
  template bool hash_grids<D, T>::for_each_ray_hit(const ray<D, T>&, ray_visitor) const;                              \
  template void hash_grids<D, T>::ray_hits(const ray<D, T>&, std::vector<ray_hit>&) const;                            \
  template ray_hit hash_grids<D, T>::first_ray_hit(const ray<D, T>&) const;                                           \
  template ray_hit hash_grids<D, T>::any_ray_hit(const ray<D, T>&) const;                                             \
  template ray_hit hash_grids<D, T>::closest_ray_hit(const ray<D, T>&, exact_ray_test) const;                         \
  template void hash_grids<D, T>::nearest(const std::array<T, D>&, std::size_t, std::vector<handle>&) const;          \
  template void hash_grids<D, T>::overlapping(const std::vector<box_type>&, std::vector<std::vector<handle>>&) const; \
  template void hash_grids<D, T>::ray_hits(const std::vector<ray<D, T>>&, std::vector<std::vector<ray_hit>>&) const;

HHG_QUERIES_INSTANTIATE(2, float)
HHG_QUERIES_INSTANTIATE(2, double)
HHG_QUERIES_INSTANTIATE(3, float)
HHG_QUERIES_INSTANTIATE(3, double)
#undef HHG_QUERIES_INSTANTIATE

}  // namespace hhg
