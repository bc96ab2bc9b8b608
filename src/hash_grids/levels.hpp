// The ladder of levels for a batch that activates the grids (insert of a
// span, all_pairs, `hhg pairs`): where it is anchored (anchor_cell) and,
// with config::adaptive_factor, how far apart its levels are (factor_for).
// Both read the batch only; activate() (state.hpp) builds the first level
// from them, and every later level follows the ladder (grid_for).
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <vector>

#include "hash_grids/cells.hpp"

namespace hhg {
namespace detail {

template <int D, class T>
struct level_choice {
  using types = grid_types<D, T>;
  using box_t = typename types::box_t;
  using scale_t = typename types::scale_t;

  // The first level's cell size: sqrt(2) times the typical mean edge of the
  // objects that share the top level (sizes within a factor f of the
  // largest), but above the largest. Equal cubes keep activate's sqrt(2)
  // times their size; when sizes spread below the largest, or boxes are not
  // cubes, cells sqrt(2) times the largest are about twice the typical
  // object. Measured at 10^5, one-shot first detection (box tests, ms),
  // sqrt(2) x largest against this: P. Terdiman's data 14.1 M, 27.5 -> 8.9 M,
  // 22.5; sizes x12 (`varied`) 2.9 M, 15.9 -> 1.9 M, 10.7; 10x1x1 boxes
  // 19.9 M, 28.7 -> 9.9 M, 14.2; equal cubes 5.8 -> 5.8. Typical: the median
  // over the sample of estimates (sample_step). 0 when no box is bounded with a
  // finite size.
  // effs[i]: effective_size(bs[i]) (infinite for a box not bounded).
  static double anchor_cell(double f, std::span<const box_t> bs, std::span<const double> effs, const scale_t& scale) {
    // The largest finite size, in four running maxima: one was a chain of
    // dependent maxsd, 1.6 % of Terdiman's 10^4 one-shot (perf). (An
    // effective size is never NaN: finite means below +inf.)
    constexpr double inf = std::numeric_limits<double>::infinity();
    auto finite = [&](std::size_t i) { return effs[i] < inf ? effs[i] : 0.0; };
    double t0 = 0, t1 = 0, t2 = 0, t3 = 0;
    std::size_t k = 0;
    for (; k + 4 <= effs.size(); k += 4) {
      t0 = std::max(t0, finite(k));
      t1 = std::max(t1, finite(k + 1));
      t2 = std::max(t2, finite(k + 2));
      t3 = std::max(t3, finite(k + 3));
    }
    for (; k < effs.size(); ++k) t0 = std::max(t0, finite(k));
    const double top = std::max(std::max(t0, t1), std::max(t2, t3));
    if (!(top > 0) || !std::isfinite(top * 2)) return 0;
    std::vector<double> near;  // the sampled mean edges of the objects within a factor f of the top
    const std::size_t step = sample_step(bs.size());
    for (std::size_t i = 0; i < bs.size(); i += step) {
      const double eff = effs[i];
      if (!std::isfinite(eff) || !(eff * f > top)) continue;
      double sum = 0, longest = 0;
      for (int a = 0; a < D; ++a) {
        const double e = (static_cast<double>(bs[i].max[a]) - static_cast<double>(bs[i].min[a])) * scale[a];
        sum += e;
        longest = std::max(longest, e);
      }
      // the mean edge, scaled as the effective size scales the longest (a cube: its effective size)
      near.push_back(longest > 0 ? eff * (sum / D / longest) : eff);
    }
    const double above = top * (1 + 1.0 / 64);  // (every object fits below it)
    if (near.empty()) return above;
    const auto mid = near.begin() + static_cast<std::ptrdiff_t>(near.size() / 2);
    std::nth_element(near.begin(), mid, near.end());
    const double c = std::max(*mid * std::sqrt(std::min(f, 2.0)), above);
    if (!std::isfinite(c) || c / f > top) return 0;  // (a factor below 1 + 1/64: activate's rule)
    return c;
  }

  // The per-axis scales (cells.hpp, effective_size) for a batch into an
  // empty structure: all 1 unless the objects are longer on some axes than
  // on others. Per axis the median edge m_i over a sample; axis i's
  // candidate is the power of two nearest max_j m_j / m_i, at most
  // 2^max_log2 (the most for m_i = 0). Of the 2^D choices (per axis its
  // candidate or 1), the one whose cells hold the fewest objects: an object's
  // level has cells about its longest scaled edge L, L^D / prod(scales) in
  // volume, so the choice's cost is the mean over the sample of that volume
  // over the object's own with all scales 1, or kLongerCost for an object
  // the choice makes longer (made_longer). Each object counts alike,
  // whatever its size: a choice that makes 1 in 64 of the objects longer
  // costs more than cubes. Chosen only when that mean is at most 1/2 (a
  // choice that hardly differs is not worth a shape the objects may leave).
  // 10x1x1 boxes along x get 1 x 8 x 8 (cells of 14 x 1.8 x 1.8 for 14^3:
  // 1/64); needles along x and along y get 1 x 1 x 8 (1/8; 1 x 8 x 8 makes
  // half of them longer: 32). max_log2 0: all 1.
  static scale_t axis_scale_for(std::span<const box_t> bs, std::span<const double> effs, int max_log2) {
    scale_t unit = types::unit_scale();
    if (max_log2 <= 0 || bs.empty()) return unit;
    const std::size_t step = std::max<std::size_t>(bs.size() / kScaleSample, 1);
    std::vector<std::array<double, D>> edges;  // of the sampled objects with a size (a point's cell is any)
    edges.reserve(std::min(bs.size(), kScaleSample + 1));
    for (std::size_t i = 0; i < bs.size(); i += step) {
      if (!std::isfinite(effs[i])) continue;  // (kept apart: no cell)
      std::array<double, D> e;
      double longest = 0;
      for (int a = 0; a < D; ++a) {
        e[a] = static_cast<double>(bs[i].max[a]) - static_cast<double>(bs[i].min[a]);
        longest = std::max(longest, e[a]);
      }
      if (longest > 0) edges.push_back(e);
    }
    if (edges.empty()) return unit;
    const auto mid = static_cast<std::ptrdiff_t>(edges.size() / 2);
    std::vector<double> v(edges.size());
    std::array<double, D> med;
    for (int a = 0; a < D; ++a) {
      for (std::size_t i = 0; i < edges.size(); ++i) v[i] = edges[i][a];
      std::nth_element(v.begin(), v.begin() + mid, v.end());
      med[a] = v[static_cast<std::size_t>(mid)];
    }
    const double top = *std::max_element(med.begin(), med.end());
    if (!(top > 0) || !std::isfinite(top)) return unit;
    scale_t cand;
    bool any = false;
    for (int a = 0; a < D; ++a) {
      const int k = med[a] > 0 ? std::min(static_cast<int>(std::lround(std::log2(top / med[a]))), max_log2) : max_log2;
      cand[a] = std::ldexp(1.0, k);
      any |= k > 0;
    }
    if (!any) return unit;
    // the mean volume ratio of the choice that scales the axes in m
    auto volume = [&](std::uint32_t m) {
      double product = 1, sum = 0;
      for (int a = 0; a < D; ++a) product *= (m >> a) & 1u ? cand[a] : 1.0;
      for (const std::array<double, D>& e : edges) {
        double longest = 0, scaled = 0;
        for (int a = 0; a < D; ++a) {
          longest = std::max(longest, e[a]);
          scaled = std::max(scaled, e[a] * ((m >> a) & 1u ? cand[a] : 1.0));
        }
        const double r = scaled / longest;
        sum += made_longer(scaled, longest) ? kLongerCost : (D == 3 ? r * r * r : r * r) / product;
      }
      return sum / static_cast<double>(edges.size());
    };
    double least = 1;  // (volume(0): every ratio 1)
    std::uint32_t best = 0;
    for (std::uint32_t m = 1; m < (1u << D); ++m)
      if (const double w = volume(m); w < least) {
        least = w;
        best = m;
      }
    if (!(least <= 0.5)) return unit;  // (not half or less)
    for (int a = 0; a < D; ++a) unit[a] = (best >> a) & 1u ? cand[a] : 1.0;
    return unit;
  }
  static constexpr std::size_t kScaleSample = 256;
  // An object the scales make longer than twice its longest edge: it rises
  // a level or more, and the finer objects search its coarser cells (f^D =
  // 64 times their own at f = 4: measured 10^5 needles along x, a tenth
  // turned to y, 14.5 -> 649 box tests per object). Counted at that cost.
  static bool made_longer(double scaled, double longest) { return scaled > 2 * longest; }
  static constexpr double kLongerCost = 64;

  // The factor of the ladder anchored at c0 for this batch: f0 (the
  // configured hierarchy_factor) times the power of two, up to the one that
  // puts every object in one level, with the least estimated detection cost
  // on a sample of the batch, and the ladder's floor (the lower bound of its
  // finest level for the sampled sizes; finer levels go back to f0). The
  // cost per object of the batch, in ns, fitted to detection times at 10^6
  // (log-uniform sizes over 1..1000 with f = 4 .. 1024, sizes uniform over
  // 1..12 with f = 4 and 16, equal cubes; within 17 ms of each):
  //   148 x (objects times the coarser levels holding objects, per object:
  //          each such pair is a walk across grids)
  // + 1.35 x (pairs of objects sharing a cell of their level, per object:
  //          the tests within a grid; fewer levels put small objects in
  //          large cells, and a ladder that crowds them loses)
  // + 41 x (levels holding objects, beyond the first).
  // The shared pairs are counted on the sample and scaled by 1/p^2 for a
  // sample of p of the objects. Measured at 10^6, one thread, ms a step:
  // sizes log-uniform over 1..1000, f = 4 (5 levels) 460, chosen 1024 (one
  // level) 131; sizes uniform over 1..12, f = 4 (2 levels) 177, chosen 16
  // (one level) 126; equal cubes: one level either way.
  static constexpr std::size_t kSample = 4096, kSampleMin = 256;
  // The samples (here and in anchor_cell): every step-th object, an eighth
  // of the batch, at least kSampleMin and at most kSample objects. (The
  // anchor's median over up to 4096 objects was 1.7 % of the time of
  // Terdiman's 10^4 one-shot, in nth_element.)
  static std::size_t sample_step(std::size_t n) {
    const std::size_t want = std::clamp(n / 8, kSampleMin, kSample);
    return std::max<std::size_t>((n + want - 1) / want, 1);
  }
  // x rounded down to an integer, clamped to [-2^62, 2^62] (NaN: -2^62)
  static std::int64_t floor_clamped(double x) {
    x = !(x >= -0x1p62) ? -0x1p62 : x > 0x1p62 ? 0x1p62 : x;
    const auto c = static_cast<std::int64_t>(x);
    return c - (x < static_cast<double>(c));
  }
  // Sampled objects counted by cell (a 64-bit hash of the cell's
  // coordinates, `mix`): open addressing, at most half full.
  class cell_counts {
   public:
    explicit cell_counts(std::size_t items) {
      while ((std::size_t{1} << bits_) < 2 * items) ++bits_;
      table_.resize(std::size_t{1} << bits_);
    }
    static std::uint64_t mix(std::uint64_t h, std::int64_t coordinate) {
      h = (h ^ static_cast<std::uint64_t>(coordinate)) * 0xff51afd7ed558ccdull;
      return h ^ (h >> 32);
    }
    // (zeroed as bytes: std::fill with the struct failed a store forwarding per slot)
    void clear() { std::memset(table_.data(), 0, table_.size() * sizeof(counted)); }
    // One more object in cell h: the objects the cell held before it.
    std::uint32_t add(std::uint64_t h) {
      for (std::size_t k = h >> (64 - bits_);; k = (k + 1) & (table_.size() - 1)) {
        counted& slot = table_[k];
        if (slot.count == 0) {
          slot = {h, 1};
          return 0;
        }
        if (slot.key == h) return slot.count++;
      }
    }

   private:
    struct counted {
      std::uint64_t key;
      std::uint32_t count;  // 0: free
    };
    int bits_ = 1;
    std::vector<counted> table_;
  };

  static constexpr int kLadders = 64;
  static constexpr double kAcrossCost = 148, kCellPairCost = 1.35, kLevelCost = 41;

  struct estimate {
    double factor, floor;
    double across, cell_pairs;  // per object of the batch
    int levels, nonempty;
    double cost() const { return kAcrossCost * across + kCellPairCost * cell_pairs + kLevelCost * (nonempty - 1); }
  };

  // (effs as for anchor_cell) One estimate per factor f0 * 2^k, k < kLadders,
  // finest first, up to the one that puts every sampled object in one level; empty
  // when there is nothing to choose (the configured factor already puts
  // every sampled object in one level). The shared cells are counted only
  // for a ladder that can still win, coarsest first: a ladder whose other
  // terms alone cost more than one already counted keeps cell_pairs = +inf
  // (pairs are never negative, so the choice is the exhaustive one). On the
  // benchmark's scenes only the one-level ladder is counted; the rest costs
  // one logarithm a sampled object and a few instructions a factor, so a
  // batch of any size can afford the estimate.
  static std::vector<estimate> estimates(double f0, double c0, std::span<const box_t> bs, std::span<const double> effs,
                                         const scale_t& scale) {
    std::vector<estimate> out;
    if (!(c0 > 0) || bs.empty()) return out;
    struct point {
      double depth;              // log2(c0 / size): how far below the anchor (+inf: no size)
      std::array<double, D> lo;  // the lower corner in units of c0
    };
    const std::size_t step = sample_step(bs.size());
    std::vector<point> sample;
    sample.reserve(bs.size() / step + 1);
    double smallest = c0;
    for (std::size_t i = 0; i < bs.size(); i += step) {
      const double eff = effs[i];
      if (!std::isfinite(eff)) continue;  // (also a box not bounded: kept apart, no level)
      point p{eff > 0 ? std::log2(c0 / eff) : std::numeric_limits<double>::infinity(), {}};
      for (int a = 0; a < D; ++a) p.lo[a] = static_cast<double>(bs[i].min[a]) * scale[a] / c0;
      sample.push_back(p);
      if (eff > 0) smallest = std::min(smallest, eff);
    }
    if (sample.empty()) return out;
    const double n = static_cast<double>(sample.size());
    const double p = n / static_cast<double>(bs.size());
    // level i holds [c0 / f^(i+1), c0 / f^i): the first i with depth <= (i + 1) log2(f)
    auto level_of = [](const point& pt, double log2f, int levels) {
      const double q = std::min(pt.depth / log2f, 64.0);
      const int t = static_cast<int>(q);
      return std::clamp(q > t ? t : t - 1, 0, levels - 1);
    };
    std::vector<std::size_t> per_level;
    // (at most kLadders of them: sizes over more octaves than a double spans
    // never reach one level, and f0 * 2^63 is already a ladder of no use)
    double f = f0;
    for (int k = 0; k < kLadders && std::isfinite(f); ++k, f *= 2) {
      int levels = 1;
      double floor = c0 / f;  // (divided as grid_for divides it)
      while (smallest < floor && levels < 64) {
        floor /= f;
        ++levels;
      }
      if (levels == 1 && out.empty()) return out;
      per_level.assign(static_cast<std::size_t>(levels), 0);
      const double log2f = std::log2(f);
      for (const point& pt : sample) ++per_level[static_cast<std::size_t>(level_of(pt, log2f, levels))];
      double across = 0;  // objects times the coarser levels holding objects
      int nonempty = 0;
      for (std::size_t m : per_level) {
        across += static_cast<double>(m) * nonempty;
        nonempty += m != 0;
      }
      out.push_back({f, floor, across / n, std::numeric_limits<double>::infinity(), levels, nonempty});
      if (levels == 1) break;
    }
    cell_counts table(sample.size());  // the shared cells
    double least = std::numeric_limits<double>::infinity();
    for (auto e = out.rbegin(); e != out.rend(); ++e) {
      if (kAcrossCost * e->across + kLevelCost * (e->nonempty - 1) >= least) continue;  // cannot win
      std::array<double, 64> level_scale;  // f^i: level i's cell in units of c0 is 1 / f^i
      level_scale[0] = 1;
      for (std::size_t i = 1; i < static_cast<std::size_t>(e->levels); ++i)
        level_scale[i] = level_scale[i - 1] * e->factor;
      table.clear();
      double shared = 0;  // pairs of sampled objects in one cell of one level
      const double log2f = std::log2(e->factor);
      for (const point& pt : sample) {
        const int i = level_of(pt, log2f, e->levels);
        std::uint64_t h = static_cast<std::uint64_t>(i) * 0x9E3779B97F4A7C15ull;
        for (int a = 0; a < D; ++a)  // (f^i may overflow: inf or NaN, clamped)
          h = cell_counts::mix(h, floor_clamped(pt.lo[a] * level_scale[static_cast<std::size_t>(i)]));
        shared += table.add(h);
      }
      e->cell_pairs = shared / (p * n);
      least = std::min(least, e->cost());
    }
    return out;
  }

  // Objects far apart (issue 19's `sparse`: tiny boxes some 16 sizes
  // apart). Cells of about the objects' size leave one object in nearly
  // every occupied cell, and the grid's table aliases the wide domain, so
  // each object pays a cell visit of 13 lookups, most of them cache misses,
  // for almost no tests. Such a level's cells are better made larger than
  // its objects: the anchor level's cell (c0, its objects those of the
  // sample in [lower, c0)) times m = 2^k, the largest k <= max_log2 with
  // which an object shares its cell with at most kSpreadShare others on
  // average. That share is estimated from the sample: pairs of sampled
  // objects in one cell, over the sampling rate squared (cells of c0 2^k
  // nest, so the shares rise with k and the search stops at the first one
  // too large). The sample's positions are jittered within each stride, so
  // that a batch in a regular order is not sampled in step with it.
  // Returns 1 when the cells should stay, or when fewer than
  // kSpreadSampleMin of the sample are the level's. Measured at 10^6 `sparse`, one
  // thread, ns per object a step (cell in sizes; the share): 1.4 (0.0007)
  // 124-125, 16 (1.0) 85-95, 24 (3.4) 67, 32 (8.2) 71-72, 48 (27) 78; the
  // strong grid 102-104. Equal cubes share 1.4 at their cells of 1.4 sizes
  // and ~11 at twice that, sizes over x12 ~2.4 and ~19: both stay.
  static constexpr double kSpreadShare = 4;
  static constexpr std::size_t kSpreadSampleMin = 64;
  static double spread_for(double c0, double lower, std::span<const box_t> bs, std::span<const double> effs,
                           const scale_t& scale, int max_log2) {
    if (!(c0 > 0) || bs.empty() || max_log2 <= 0) return 1;
    const std::size_t step = sample_step(bs.size());
    std::vector<std::array<std::int64_t, D>> cells;  // the sampled objects' cells at c0
    cells.reserve(bs.size() / step + 1);
    std::uint64_t jitter = 0x243F6A8885A308D3ull;
    for (std::size_t s = 0; s < bs.size(); s += step) {
      jitter = jitter * 6364136223846793005ull + 1442695040888963407ull;
      const std::size_t i = std::min(bs.size() - 1, s + static_cast<std::size_t>((jitter >> 33) % step));
      const double eff = effs[i];
      if (!(eff >= lower && eff < c0)) continue;  // (another level's, a point's, or kept apart)
      std::array<std::int64_t, D> c;
      for (int a = 0; a < D; ++a) c[a] = floor_clamped(static_cast<double>(bs[i].min[a]) * scale[a] / c0);
      cells.push_back(c);
    }
    if (cells.size() < kSpreadSampleMin) return 1;  // (too few to tell the level's objects far apart)
    cell_counts table(cells.size());
    // per object, the others in its cell: 2 * pairs / objects, pairs
    // shared * step^2 and objects |cells| * step; at most kSpreadShare when
    // shared is at most `most` (a pass stops as soon as it is past it)
    const double most = kSpreadShare * static_cast<double>(cells.size()) / (2 * static_cast<double>(step));
    double m = 1;
    for (int k = 1; k <= max_log2 && std::isfinite(c0 * m * 2); ++k) {
      table.clear();
      double shared = 0;  // pairs of sampled objects in one cell of c0 2^k
      for (const auto& c : cells) {
        if (shared > most) break;
        std::uint64_t h = 0x9E3779B97F4A7C15ull;
        for (int a = 0; a < D; ++a) h = cell_counts::mix(h, c[a] >> k);  // (>>: rounded down)
        shared += table.add(h);
      }
      if (shared > most) break;
      m *= 2;
    }
    return m;
  }

  struct ladder {
    double factor, floor;
  };
  // The cheapest estimate's factor and floor ({f0, +inf}: nothing to choose).
  static ladder factor_for(double f0, double c0, std::span<const box_t> bs, std::span<const double> effs,
                           const scale_t& scale) {
    ladder best{f0, std::numeric_limits<double>::infinity()};
    double least = std::numeric_limits<double>::infinity();
    for (const estimate& e : estimates(f0, c0, bs, effs, scale))
      if (e.cost() < least) {
        least = e.cost();
        best = {e.factor, e.floor};
      }
    return best;
  }
};

}  // namespace detail
}  // namespace hhg
