// The objects kept apart (unbounded ones, ones too large for any level, ones
// that found no free level) paired with everything else, without testing
// each of them against every object.
//
// Implementation note. Each apart object is filed under one axis on which it
// is narrow: an axis where both its ends are finite (the narrowest such one),
// else one with a finite end, else axis 0. Per axis, its objects are sorted
// by min (ties by position in the apart list) and a max-tree is built over
// their maxes (a complete binary tree: each node holds the largest max below
// it). The objects of an axis whose interval meets [lo, hi] on that axis are
// the objects at sorted position < first min > hi whose max >= lo: a descent
// that skips every node starting past hi (mins are sorted) or whose largest
// max is below lo, in O(log n + k log n) for k reported. Every candidate then
// gets the exact closed test (query::hits), so the pairs are exactly those
// of the test against everything. An object with no finite end on any axis
// is a candidate of every query: what it costs is its pairs.
//
// The index lives in the detection scratch and is rebuilt by every detection
// that uses it (O(A log A) for A apart objects); below
// tuning::apart_index_min apart objects the direct test against everything
// is cheaper and runs instead. Output order is fixed by the structure:
// apart against apart in apart-list order, then every other object in the
// order the caller visits them, candidates by axis then sorted position.
#pragma once

#include "hash_grids/state.hpp"

namespace hhg {
namespace detail {

template <int D, class T>
struct apart_index {
  using entry = typename grid_types<D, T>::entry;

  struct item {
    T lo, hi;
    std::uint32_t pos;  // in the apart list
  };
  struct axis_index {
    std::vector<item> items;  // sorted by lo, then pos
    std::vector<T> top;       // max-tree: node k (root 1) over leaves [leaves, 2 * leaves)
    std::size_t leaves = 0;
  };
  std::array<axis_index, D> axes;
  std::vector<std::uint32_t> axis_of;  // per apart position

  std::size_t bytes() const {
    std::size_t b = capacity_bytes(axis_of);
    for (const auto& a : axes) b += capacity_bytes(a.items) + capacity_bytes(a.top);
    return b;
  }

  static int axis_for(const entry& e) {
    int best = -1, half = -1;
    double width = 0;
    for (int i = 0; i < D; ++i) {
      const T lo = e.min(i), hi = e.max(i);
      const bool flo = std::isfinite(lo), fhi = std::isfinite(hi);
      if (flo && fhi) {
        const double w = static_cast<double>(hi) - static_cast<double>(lo);
        if (best < 0 || w < width) {
          best = i;
          width = w;
        }
      } else if ((flo || fhi) && half < 0) {
        half = i;
      }
    }
    return best >= 0 ? best : half >= 0 ? half : 0;
  }

  void build(const std::vector<entry>& apart) {
    for (auto& a : axes) a.items.clear();
    axis_of.resize(apart.size());
    for (std::size_t p = 0; p < apart.size(); ++p) {
      const int k = axis_for(apart[p]);
      axis_of[p] = static_cast<std::uint32_t>(k);
      axes[k].items.push_back({apart[p].min(k), apart[p].max(k), static_cast<std::uint32_t>(p)});
    }
    for (auto& a : axes) {
      std::sort(a.items.begin(), a.items.end(),
                [](const item& x, const item& y) { return x.lo < y.lo || (x.lo == y.lo && x.pos < y.pos); });
      const std::size_t n = a.items.size();
      std::size_t m = 1;
      while (m < n) m *= 2;
      a.leaves = m;
      a.top.assign(2 * m, -std::numeric_limits<T>::infinity());
      for (std::size_t i = 0; i < n; ++i) a.top[m + i] = a.items[i].hi;
      for (std::size_t k = m; k-- > 1;) a.top[k] = std::max(a.top[2 * k], a.top[2 * k + 1]);
    }
  }

  // f(pos) for every apart object filed under `axis` whose interval on it
  // meets [lo, hi], in sorted order.
  template <class F>
  static void candidates(const axis_index& a, T lo, T hi, F&& f) {
    const std::size_t n = a.items.size();
    if (n == 0) return;
    // (node, first leaf, width); depth <= 32, so the stack holds at most 33
    std::array<std::size_t, 3 * 66> st;
    std::size_t sp = 0;
    auto push = [&](std::size_t node, std::size_t first, std::size_t width) {
      st[sp++] = node;
      st[sp++] = first;
      st[sp++] = width;
    };
    push(1, 0, a.leaves);
    while (sp != 0) {
      const std::size_t width = st[--sp], first = st[--sp], node = st[--sp];
      if (first >= n || a.items[first].lo > hi || a.top[node] < lo) continue;
      if (width == 1) {
        f(a.items[first].pos);
        continue;
      }
      const std::size_t h = width / 2;
      push(2 * node + 1, first + h, h);  // right first: the left one comes out first
      push(2 * node, first, h);
    }
  }

  // Every pair among the apart objects: sink(apart[i], apart[j]) for i < j.
  template <class Sink>
  std::uint64_t pairs_among(const std::vector<entry>& apart, Sink& sink) const {
    std::uint64_t tests = 0;
    for (std::size_t i = 0; i < apart.size(); ++i) {
      const entry& a = apart[i];
      const typename grid_types<D, T>::query qa(a);
      for (int k = 0; k < D; ++k)
        candidates(axes[k], a.min(k), a.max(k), [&](std::uint32_t j) {
          if (j <= i) return;
          ++tests;
          if (qa.hits(apart[j])) sink(a.user_handle(), apart[j].user_handle());
        });
    }
    return tests;
  }

  // Every apart object that overlaps entry o: sink(apart object, o).
  template <class Sink>
  std::uint64_t pairs_with(const std::vector<entry>& apart, const entry& o, Sink& sink) const {
    std::uint64_t tests = 0;
    const typename grid_types<D, T>::query qo(o);
    for (int k = 0; k < D; ++k)
      candidates(axes[k], o.min(k), o.max(k), [&](std::uint32_t j) {
        ++tests;
        if (qo.hits(apart[j])) sink(apart[j].user_handle(), o.user_handle());
      });
    return tests;
  }
};

}  // namespace detail
}  // namespace hhg
