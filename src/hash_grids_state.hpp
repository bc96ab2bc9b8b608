// Internal header (not installed): the state of hhg::hash_grids, shared by
// the translation units that implement it (hash_grids.cpp: update and
// detection; hash_grids_queries.cpp: queries). See hash_grids.cpp for the
// implementation notes.
#pragma once
#include "hhg/hash_grids.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "big_allocator.hpp"
#include "hhg/detail/checks.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace hhg {
namespace detail {

namespace hg {

constexpr std::uint32_t npos = std::numeric_limits<std::uint32_t>::max();
constexpr std::uint32_t kPlaceList = 251;
constexpr std::uint32_t kPlaceApart = 252;
constexpr std::uint32_t kPlaceFree = 255;
constexpr std::uint32_t kMaxGrids = 250;
constexpr int kClasses = 52;

// Block capacities: 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, ...
constexpr std::uint32_t class_capacity(int k) {
  if (k == 0) return 1;
  if (k % 2 == 1) return 1u << ((k + 1) / 2);
  return 3u << ((k - 2) / 2);
}
static_assert(class_capacity(1) == 2 && class_capacity(2) == 3 && class_capacity(3) == 4 &&
                  class_capacity(4) == 6 && class_capacity(5) == 8 && class_capacity(6) == 12,
              "block classes grow by factors 1.33..1.5");
static_assert(class_capacity(kClasses - 1) >= (1u << 26), "the largest block holds a crowded cell");

constexpr int class_search(std::uint32_t n) {
  int k = 0;
  while (class_capacity(k) < n) ++k;
  return k;
}
// The smallest class that holds n objects (a table for the usual counts).
inline constexpr std::array<std::uint8_t, 64> kSmallClass = [] {
  std::array<std::uint8_t, 64> t{};
  for (std::uint32_t n = 0; n < t.size(); ++n) t[n] = static_cast<std::uint8_t>(class_search(n));
  return t;
}();
inline int class_for(std::uint32_t n) { return n < kSmallClass.size() ? kSmallClass[n] : class_search(n); }

inline std::int64_t floor_to_int(double t) {
  const auto k = static_cast<std::int64_t>(t);
  return k - (t < static_cast<double>(k) ? 1 : 0);
}

template <class V>
inline std::size_t capacity_bytes(const V& v) {
  return v.capacity() * sizeof(typename V::value_type);
}

// Grows a vector's capacity by 1.125x (not 2x) to bound the slack of the big
// arrays (pool, slots) to 12.5%; amortized O(1) still (each element is copied
// at most 8 times on average).
template <class V>
inline void reserve_for(V& v, std::size_t needed) {
  if (needed <= v.capacity()) return;
  std::size_t c = v.capacity() + v.capacity() / 8 + 16;
  v.reserve(std::max(c, needed));
}

// Stable LSD radix sort of v by key(x), of which the low `bits` bits count,
// 11 bits a pass; tmp is scratch (resized, kept by the caller for reuse).
template <class V, class Key, std::uint32_t kDigit = 11>
void radix_sort(V& v, V& tmp, std::uint32_t bits, Key key) {
  constexpr std::uint32_t kMask = (1u << kDigit) - 1;
  constexpr std::uint32_t kMaxDigits = (32 + kDigit - 1) / kDigit;
  const std::uint32_t digits = (std::min(bits, 32u) + kDigit - 1) / kDigit;
  tmp.resize(v.size());
  if (v.size() < 2) return;
  // the counts of every digit in one read (the keys do not change between passes)
  std::array<std::array<std::uint32_t, 1u << kDigit>, kMaxDigits> counts;
  for (std::uint32_t d = 0; d < digits; ++d) counts[d].fill(0);
  for (const auto& x : v) {
    const std::uint32_t k = key(x);
    for (std::uint32_t d = 0; d < digits; ++d) ++counts[d][(k >> (d * kDigit)) & kMask];
  }
  for (std::uint32_t d = 0; d < digits; ++d) {
    auto& c = counts[d];
    if (c[(key(v.front()) >> (d * kDigit)) & kMask] == v.size()) continue;  // one value: nothing moves
    std::uint32_t sum = 0;
    for (auto& x : c) {
      const std::uint32_t n = x;
      x = sum;
      sum += n;
    }
    const std::uint32_t shift = d * kDigit;
    for (const auto& x : v) tmp[c[(key(x) >> shift) & kMask]++] = x;
    v.swap(tmp);
  }
}

}  // namespace hg
using namespace hg;  // NOLINT: the constants and helpers above are used unqualified

template <int D, class T>
struct hash_grids_state {
  using box_t = box<D, T>;
  static constexpr std::uint32_t kLocalBits = 2 * D;
  static constexpr std::uint32_t kBrickCells = 1u << kLocalBits;
  static constexpr std::uint32_t kLocalMask = kBrickCells - 1;
  static constexpr int q = std::is_same_v<T, float> ? 22 : 40;

  // A stored object. The box is kept as p = (-max_0..-max_{D-1}, min_0..min_{D-1}):
  // with q = (-min, max) of another object, the closed overlap test is the
  // single element-wise comparison p <= q over 2D lanes (see query), which
  // SIMD does in a few instructions. Negation is exact, so the test is exact.
  struct entry {
    std::array<T, 2 * D> p;
    handle id;
    T min(int i) const { return p[D + i]; }
    T max(int i) const { return -p[i]; }
    // Grid entries keep, in the top 8 bits of id.generation (generations are
    // 24-bit), which axes the box reaches into the next cell on: bit i set
    // when floor(max_i / cell) != floor(min_i / cell). Detection skips a
    // neighbour cell that no object can reach (see detect_grid).
    std::uint32_t reach() const { return id.generation >> 24; }
    void set_reach(std::uint32_t r) { id.generation = (id.generation & 0xFFFFFFu) | r << 24; }
    handle user_handle() const { return {id.index, id.generation & 0xFFFFFFu}; }
    box_t box() const {
      box_t b;
      for (int i = 0; i < D; ++i) {
        b.min[i] = min(i);
        b.max[i] = max(i);
      }
      return b;
    }
    void set(const box_t& b) {
      for (int i = 0; i < D; ++i) {
        p[i] = -b.max[i];
        p[D + i] = b.min[i];
      }
    }
    static entry make(const box_t& b, handle h) {
      entry e;
      e.set(b);
      e.id = h;
      return e;
    }
  };

  // An entry that overlaps no object of a grid (those are bounded): the
  // free room of the blocks in an ordered pool (see grid::ordered).
  static entry sentinel() {
    entry e;
    e.p.fill(std::numeric_limits<T>::infinity());
    e.id = handle{};
    return e;
  }

  // One object's side of the overlap test, prepared once and compared with
  // many stored entries.
  struct query {
    alignas(16) std::array<T, 2 * D> q;
    query() = default;
    explicit query(const entry& a) {
      for (int i = 0; i < D; ++i) {
        q[i] = -a.p[D + i];  // -min
        q[D + i] = -a.p[i];  // max
      }
    }
    bool hits(const entry& b) const {
#if defined(__SSE2__)
      if constexpr (std::is_same_v<T, double>) {
        __m128d r = _mm_cmple_pd(_mm_loadu_pd(b.p.data()), _mm_load_pd(q.data()));
        r = _mm_and_pd(r, _mm_cmple_pd(_mm_loadu_pd(b.p.data() + 2), _mm_load_pd(q.data() + 2)));
        if constexpr (D == 3) r = _mm_and_pd(r, _mm_cmple_pd(_mm_loadu_pd(b.p.data() + 4), _mm_load_pd(q.data() + 4)));
        return _mm_movemask_pd(r) == 3;
      } else if constexpr (D == 2) {
        return _mm_movemask_ps(_mm_cmple_ps(_mm_loadu_ps(b.p.data()), _mm_load_ps(q.data()))) == 15;
      } else {  // 6 floats: lanes 0-3 and 2-5
        const __m128 r0 = _mm_cmple_ps(_mm_loadu_ps(b.p.data()), _mm_loadu_ps(q.data()));
        const __m128 r1 = _mm_cmple_ps(_mm_loadu_ps(b.p.data() + 2), _mm_loadu_ps(q.data() + 2));
        return _mm_movemask_ps(_mm_and_ps(r0, r1)) == 15;
      }
#else
      bool r = true;
      for (int k = 0; k < 2 * D; ++k) r &= b.p[k] <= q[k];
      return r;
#endif
    }
    // hits as 0 or sizeof(handle_pair), for advancing an output pointer
    // without a branch (in two instructions from the SSE mask)
    std::size_t hit_bytes(const entry& b) const {
      static_assert(sizeof(handle_pair) == 16);
#if defined(__SSE2__)
      if constexpr (std::is_same_v<T, double>) {
        __m128d r = _mm_cmple_pd(_mm_loadu_pd(b.p.data()), _mm_load_pd(q.data()));
        r = _mm_and_pd(r, _mm_cmple_pd(_mm_loadu_pd(b.p.data() + 2), _mm_load_pd(q.data() + 2)));
        if constexpr (D == 3) r = _mm_and_pd(r, _mm_cmple_pd(_mm_loadu_pd(b.p.data() + 4), _mm_load_pd(q.data() + 4)));
        const auto m = static_cast<std::size_t>(_mm_movemask_pd(r));  // 3: a hit
        return ((m + 1) << 2) & 16;
      } else if constexpr (D == 2) {
        const auto m = static_cast<std::size_t>(_mm_movemask_ps(_mm_cmple_ps(_mm_loadu_ps(b.p.data()), _mm_load_ps(q.data()))));
        return (m + 1) & 16;  // 15: a hit
      } else {
        const __m128 r0 = _mm_cmple_ps(_mm_loadu_ps(b.p.data()), _mm_loadu_ps(q.data()));
        const __m128 r1 = _mm_cmple_ps(_mm_loadu_ps(b.p.data() + 2), _mm_loadu_ps(q.data() + 2));
        const auto m = static_cast<std::size_t>(_mm_movemask_ps(_mm_and_ps(r0, r1)));
        return (m + 1) & 16;
      }
#else
      return hits(b) ? 16 : 0;
#endif
    }
  };
  // Where an object is, in 12 bytes. tag: the generation (24 bits, 1..2^24-1,
  // wrapping) above the place (8 bits: a grid id, kPlaceList, kPlaceApart or
  // kPlaceFree). at: the entry's index in its grid's pool (so a move that keeps
  // the cell writes the box without any lookup), its position in the list or
  // apart vector, or the next free slot. cell: the cell code (grid objects).
  struct slot {
    std::uint32_t tag;
    std::uint32_t cell;
    std::uint32_t at;
    std::uint32_t place() const { return tag & 0xFFu; }
    std::uint32_t generation() const { return tag >> 8; }
    void set_place(std::uint32_t p) { tag = (tag & ~0xFFu) | p; }
    void next_generation() {
      const std::uint32_t g = generation() + 1 == (1u << 24) ? 1 : generation() + 1;
      tag = g << 8 | place();
    }
  };
  static_assert(sizeof(slot) == 12, "a slot is 12 bytes");
  static_assert(sizeof(handle) == 8 && sizeof(handle_pair) == 16, "a handle is one word, a pair two");
  struct occupied_cell {
    std::uint32_t cell;   // code
    std::uint32_t block;  // first entry in pool
    std::uint32_t count;
    std::uint32_t klass;  // block capacity class
  };
  struct grid {
    double cell_size = 0;
    double lower = 0;  // objects of effective size in [lower, cell_size) belong here
    double inv = 0;
    std::array<std::uint32_t, D> bits{};
    std::array<std::uint32_t, D> mask{};
    std::vector<std::uint32_t> dir;
    std::vector<std::uint32_t> bricks;  // brick id k at (k + 1) << kLocalBits; [0, 4^D): the empty brick
    std::vector<std::uint32_t> brick_fill;
    std::vector<std::uint32_t> free_bricks;
    std::vector<occupied_cell> occupied;
    big_vector<entry> pool;
    std::array<std::vector<std::uint32_t>, kClasses> free_blocks;
    std::size_t objects = 0;
    // Entries written out of cell order since the last compaction (new
    // cells, relocated blocks, objects that changed cell).
    std::size_t displaced = 0;
    // The pool is in code order up to ordered_end: the blocks that start
    // below ordered_end, taken in code order, lie at increasing positions,
    // and every other entry below ordered_end is a sentinel. Set by install
    // (ordered_end = the pool's size), kept by removals (a sentinel is
    // written where an entry left, and a block freed below ordered_end is
    // filled with sentinels instead of being reused); blocks allocated
    // later lie at or above ordered_end, and their cells are "displaced"
    // (detect_grid walks them apart). Cleared by reset_grid.
    bool ordered = false;
    std::uint32_t ordered_end = 0;

    std::uint64_t cell_count() const {
      std::uint32_t s = 0;
      for (int i = 0; i < D; ++i) s += bits[i];
      return std::uint64_t{1} << s;
    }
  };

  config cfg;
  executor* exec = nullptr;  // not owned; nullptr: serial
  std::vector<grid> grids;            // by id
  std::vector<std::uint32_t> levels;  // grid ids, ascending cell size
  std::vector<entry> list;
  std::vector<entry> apart;
  std::vector<slot> slots;
  std::uint32_t free_head = npos;
  std::size_t count = 0;
  bool active = false;
  bool rebuild_pending = false;
  int base_class = 0;

  // detect_ordered, detect_unordered: a cell of more objects is crowded (each
  // object is tested only against the neighbours its reach allows)
  static constexpr std::uint32_t kFlat = 4;
  static constexpr std::size_t kCrowdedGrid = 8;  // detect_grid: more objects per occupied cell take the lookup walk
  static constexpr std::size_t kMaxOrderedPool = std::numeric_limits<std::uint32_t>::max() / sizeof(entry);
  std::vector<entry> cand;  // detect_unordered, detect_across: gathered neighbour objects
  std::vector<std::uint32_t> gathered;  // detect_ordered: a cell's candidates (byte offsets into the pool)
  std::vector<std::uint32_t> row_pos;   // detect_ordered: per row and x, a pool position

  // detection scratch and counters
  std::vector<std::uint32_t> order, order_tmp;
  std::vector<std::uint32_t> displaced_cells;  // detect_grid: an ordered grid's cells above ordered_end
  std::vector<std::uint64_t> across, across_tmp;  // detect_across: (cell in the coarser grid, entry)
  std::vector<std::uint32_t> live_levels;
  std::vector<entry> tmp;
  // batch move scratch: the moves set aside for the second pass (index in
  // the batch, old cell code), and one bit per slot for objects set aside
  struct deferred_move {
    std::uint32_t index;
    std::uint32_t key;
  };
  std::vector<deferred_move> deferred, deferred_tmp;
  std::vector<std::uint64_t> pending;
  std::uint64_t box_tests = 0, cells_visited = 0, pairs = 0;
  std::uint64_t compactions = 0;  // since construction

  // bulk_move does not write the slots of the objects it lays out (that is
  // one scattered write per object: 11-12 ms a step at 10^6 objects,
  // wherever it is done). Until settle() runs, the cell and at of every grid
  // object's slot may be out of date; their place and generation are right.
  // Detection and bulk moves read neither. Everything else that reads them
  // (hash_grids' insert, remove, move, get, update, validate) calls settle()
  // first, which rewrites them from the pools in one pass (the cost bulk_move
  // skipped, paid once, and only by users who need it). A const reader (get,
  // validate) may run concurrently with another, so the flag is atomic and
  // the rewrite happens under a lock, once.
  struct stale_flag {
    std::atomic<bool> on{false};
    std::mutex lock;
    stale_flag() = default;
    stale_flag(const stale_flag& o) : on(o.on.load()) {}
    stale_flag& operator=(const stale_flag& o) {
      on.store(o.on.load());
      return *this;
    }
  };
  stale_flag stale_slots;
  void settle() {
    if (!stale_slots.on.load(std::memory_order_acquire)) return;
    const std::lock_guard<std::mutex> hold(stale_slots.lock);
    if (!stale_slots.on.load(std::memory_order_relaxed)) return;
    for (const grid& g : grids) {
      const std::size_t cells = g.occupied.size();
      for (std::size_t k = 0; k < cells; ++k) {
        if (k + 16 < cells) {  // the slots are scattered: fetch them 16 cells ahead
          const occupied_cell& ahead = g.occupied[k + 16];
          for (std::uint32_t j = 0; j < ahead.count && j < 4; ++j)
            __builtin_prefetch(&slots[g.pool[ahead.block + j].id.index], 1);
        }
        const occupied_cell& oc = g.occupied[k];
        for (std::uint32_t j = 0; j < oc.count; ++j) {
          slot& sl = slots[g.pool[oc.block + j].id.index];
          sl.cell = oc.cell;
          sl.at = oc.block + j;
        }
      }
    }
    stale_slots.on.store(false, std::memory_order_release);
  }

  explicit hash_grids_state(const config& c) : cfg(c), base_class(class_for(c.cell_capacity)) {}

  // ---- geometry ---------------------------------------------------------------
  // Returns +inf for objects that must be kept apart.
  static double effective_size(const box_t& b) {
    double edge = 0, mag = 0;
    for (int i = 0; i < D; ++i) {
      const double lo = b.min[i], hi = b.max[i];
      edge = std::max(edge, hi - lo);
      mag = std::max(mag, std::max(std::fabs(lo), std::fabs(hi)));
    }
    constexpr double scale = 1.0 / static_cast<double>(std::uint64_t{1} << q);  // 2^-q, exact
    double eff = std::max(edge, mag * scale) * (1.0 + 0x1p-9);
    if (!(eff <= 0x1p900)) return std::numeric_limits<double>::infinity();
    // A floor for tiny (subnormal) sizes: a cell below 2^-900 would make the
    // inverse cell size overflow to +inf and every cell index undefined. Only
    // the exact all-zero box keeps eff 0 (it fits any grid).
    if (eff > 0 && eff < 0x1p-900) eff = 0x1p-900;
    return eff;
  }

  static std::uint32_t coord(const grid& g, int axis, T v) {
    return static_cast<std::uint32_t>(floor_to_int(static_cast<double>(v) * g.inv)) & g.mask[axis];
  }

  // Row-major: x in the low bits, then y, then z. A row of cells along x is
  // a run of consecutive codes, so a grid laid out in code order (compact,
  // bulk_move) keeps each row's objects together, sorted by x (detect_grid
  // walks rows). The brick directory covers runs of kBrickCells codes.
  static std::uint32_t encode(const grid& g, const std::array<std::uint32_t, D>& c) {
    std::uint32_t code = c[0] | c[1] << g.bits[0];
    if constexpr (D == 3) code |= c[2] << (g.bits[0] + g.bits[1]);
    return code;
  }

  // The part of a cell code contributed by coordinate v on one axis
  // (v is reduced modulo the cells on that axis first).
  static std::uint32_t axis_term(const grid& g, int axis, std::uint32_t v) {
    v &= g.mask[axis];
    std::uint32_t shift = 0;
    for (int i = 0; i < axis; ++i) shift += g.bits[i];
    return v << shift;
  }

  static std::uint32_t cell_of(const grid& g, const box_t& b) {
    std::array<std::uint32_t, D> c{};
    for (int i = 0; i < D; ++i) c[i] = coord(g, i, b.min[i]);
    return encode(g, c);
  }
  static std::uint32_t cell_of(const grid& g, const entry& e) {
    std::array<std::uint32_t, D> c{};
    for (int i = 0; i < D; ++i) c[i] = coord(g, i, e.min(i));
    return encode(g, c);
  }
  // cell_of and reach_of at once (the floors of the min corner are shared).
  static std::uint32_t cell_and_reach(const grid& g, const box_t& b, std::uint32_t& reach) {
    std::array<std::uint32_t, D> c{};
    std::uint32_t r = 0;
    for (int i = 0; i < D; ++i) {
      const std::int64_t lo = floor_to_int(static_cast<double>(b.min[i]) * g.inv);
      const std::int64_t hi = floor_to_int(static_cast<double>(b.max[i]) * g.inv);
      c[i] = static_cast<std::uint32_t>(lo) & g.mask[i];
      r |= static_cast<std::uint32_t>(hi != lo) << i;
    }
    reach = r;
    return encode(g, c);
  }
  // reach_of for a box whose cell code is known: the min corner's cell
  // coordinates are in the code. (An object of g is smaller than a cell, so
  // floor(max / cell) - floor(min / cell) is 0 or 1, and with at least 2
  // cells per axis it is 1 exactly when the two differ modulo the cells.)
  static std::uint32_t reach_in(const grid& g, std::uint32_t code, const box_t& b) {
    std::uint32_t r = 0, shift = 0;
    for (int i = 0; i < D; ++i) {
      const std::uint32_t lo = (code >> shift) & g.mask[i];
      const std::uint32_t hi = static_cast<std::uint32_t>(floor_to_int(static_cast<double>(b.max[i]) * g.inv)) & g.mask[i];
      r |= static_cast<std::uint32_t>(hi != lo) << i;
      shift += g.bits[i];
    }
    return r;
  }
  // The reach bits of a box in grid g (see entry::reach).
  static std::uint32_t reach_of(const grid& g, const box_t& b) {
    std::uint32_t r = 0;
    for (int i = 0; i < D; ++i) {
      const bool out = floor_to_int(static_cast<double>(b.max[i]) * g.inv) !=
                       floor_to_int(static_cast<double>(b.min[i]) * g.inv);
      r |= static_cast<std::uint32_t>(out) << i;
    }
    return r;
  }

  // Bit m set for every subset m of the axes in r (r < 2^D).
  static constexpr std::uint32_t subsets_of(std::uint32_t r) {
    std::uint32_t bits = 0;
    for (std::uint32_t m = 0; m < (1u << D); ++m)
      if ((r & m) == m) bits |= 1u << m;
    return bits;
  }

  // occupied index + 1, or 0
  static std::uint32_t lookup(const grid& g, std::uint32_t code) {
    // dir 0 selects the empty brick at the front of `bricks`: no branch
    return g.bricks[(g.dir[code >> kLocalBits] << kLocalBits) | (code & kLocalMask)];
  }

  // ---- grids --------------------------------------------------------------------
  void init_grid(grid& g, double cell_size, double lower) {
    g.cell_size = cell_size;
    g.lower = lower;
    g.inv = 1.0 / cell_size;
    for (int i = 0; i < D; ++i) {
      g.bits[i] = static_cast<std::uint32_t>(std::countr_zero(cfg.initial_cells[i]));
      g.mask[i] = cfg.initial_cells[i] - 1;
    }
    g.dir.assign(static_cast<std::size_t>(g.cell_count() >> kLocalBits), 0);
    g.bricks.assign(kBrickCells, 0);  // the empty brick (dir 0)
    g.occupied.reserve(cfg.occupied_cells_capacity);
  }

  std::uint32_t new_grid(double cell_size, double lower, std::size_t level_pos) {
    if (grids.size() >= kMaxGrids)
      throw error(errc::capacity, "hhg: more than 250 grid levels needed (sizes span too many decades "
                                  "for this hierarchy factor)");
    // Everything that can fail first (out of memory leaves no half-made grid).
    grid g;
    init_grid(g, cell_size, lower);
    levels.reserve(levels.size() + 1);
    grids.reserve(grids.size() + 1);
    grids.push_back(std::move(g));
    const auto id = static_cast<std::uint32_t>(grids.size() - 1);
    levels.insert(levels.begin() + static_cast<std::ptrdiff_t>(level_pos), id);
    return id;
  }

  // Algorithm 3: the grid for an object of effective size `eff`, created if
  // needed. Each grid keeps the bounds [lower, cell_size) it was created with,
  // so placement and the checks in move() and validate() agree exactly even
  // when f is not a power of two. An all-zero box (eff 0) fits any grid.
  // The grid an object of effective size eff belongs in, if it exists; npos
  // if grid_for would create one.
  std::uint32_t existing_grid(double eff) const {
    if (levels.empty()) return npos;
    if (eff <= 0) return levels.front();
    for (std::uint32_t id : levels)
      if (fits(grids[id], eff)) return id;
    return npos;
  }

  std::uint32_t grid_for(double eff) {
    const double f = cfg.hierarchy_factor;
    if (levels.empty()) {
      const double c = eff > 0 ? eff * std::sqrt(f) : 1.0;
      return new_grid(c, c / f, 0);
    }
    if (eff <= 0) return levels.front();
    for (std::size_t i = 0; i < levels.size(); ++i) {
      const grid& g = grids[levels[i]];
      if (eff < g.cell_size) {
        if (eff >= g.lower) return levels[i];
        double prev = g.lower, x = g.lower;
        while (eff < x) {
          prev = x;
          x /= f;
        }
        return new_grid(prev, x, i);  // x <= eff < prev
      }
    }
    double prev = grids[levels.back()].cell_size, x = prev;
    while (eff >= x) {
      prev = x;
      x *= f;
    }
    return new_grid(x, prev, levels.size());  // prev <= eff < x
  }

  // true when an object of effective size eff belongs in grid g
  static bool fits(const grid& g, double eff) { return eff < g.cell_size && (eff >= g.lower || eff <= 0); }

  // ---- blocks ------------------------------------------------------------------
  // (a new block lies at or above ordered_end: free lists hold no block
  // below it, see free_block)
  std::uint32_t alloc_block(grid& g, int k) {
    auto& fl = g.free_blocks[k];
    if (!fl.empty()) {
      const std::uint32_t b = fl.back();
      fl.pop_back();
      return b;
    }
    const std::size_t start = g.pool.size();
    const std::size_t need = start + class_capacity(k);
    if (need > npos) throw error(errc::capacity, "hhg: a grid holds too many objects");
    reserve_for(g.pool, need);
    g.pool.resize(need, sentinel());
    return static_cast<std::uint32_t>(start);
  }

  void free_block(grid& g, std::uint32_t block, int k) {
    if (g.ordered && block < g.ordered_end) {  // a hole in the ordered part, until the next layout
      std::fill_n(g.pool.begin() + block, class_capacity(k), sentinel());
      return;
    }
    g.free_blocks[k].push_back(block);
  }

  void relocate(grid& g, occupied_cell& oc, int k) {
    const std::uint32_t nb = alloc_block(g, k);
    for (std::uint32_t j = 0; j < oc.count; ++j) {  // a few entries: a loop beats a memmove call
      g.pool[nb + j] = g.pool[oc.block + j];
      slots[g.pool[nb + j].id.index].at = nb + j;
    }
    free_block(g, oc.block, static_cast<int>(oc.klass));
    oc.block = nb;
    oc.klass = static_cast<std::uint32_t>(k);
    g.displaced += oc.count;
  }

  // ---- cells ---------------------------------------------------------------------
  std::uint32_t& cell_ref(grid& g, std::uint32_t code) {
    const std::uint32_t b = code >> kLocalBits;
    if (g.dir[b] == 0) {
      std::uint32_t id;
      if (!g.free_bricks.empty()) {
        id = g.free_bricks.back();
        g.free_bricks.pop_back();
      } else {
        id = static_cast<std::uint32_t>(g.brick_fill.size());
        g.brick_fill.push_back(0);
        g.bricks.resize(g.bricks.size() + kBrickCells, 0);
      }
      g.dir[b] = id + 1;
    }
    return g.bricks[(g.dir[b] << kLocalBits) | (code & kLocalMask)];
  }

  // ---- out of memory ---------------------------------------------------------
  // add_to_grid and remove_from_grid must not fail half-way: prepare_add and
  // prepare_remove reserve, beforehand, every capacity the operation can need
  // (a reservation changes nothing a user can observe), so the operation
  // itself never allocates. A free list is reserved before a block is
  // returned to it.
  // What a removal from a cell and/or an addition to a cell may need: the
  // block classes it takes (from a free list, else from the end of the pool),
  // the classes it returns to free lists, a brick, an occupied record.
  struct needs {
    std::array<int, 2> take{-1, -1}, give{-1, -1};
    bool new_brick = false, free_brick = false, new_cell = false;
    void add_take(int k) { take[take[0] < 0 ? 0 : 1] = k; }
    void add_give(int k) { give[give[0] < 0 ? 0 : 1] = k; }
  };
  void removal_needs(const grid& g, std::uint32_t code, needs& n) const {
    const occupied_cell& oc = g.occupied[lookup(g, code) - 1];
    n.add_give(static_cast<int>(oc.klass));  // the cell's block, emptied or relocated
    if (oc.count == 1) {
      n.free_brick = true;
    } else if (static_cast<int>(oc.klass) > base_class && 2 * (oc.count - 1) <= class_capacity(static_cast<int>(oc.klass))) {
      n.add_take(std::max(base_class, class_for(oc.count - 1)));
    }
  }
  void addition_needs(const grid& g, std::uint32_t code, needs& n) const {
    if (g.dir[code >> kLocalBits] == 0) n.new_brick = true;
    const std::uint32_t r = lookup(g, code);
    if (r == 0) {
      n.new_cell = true;
      n.add_take(base_class);
    } else {
      const occupied_cell& oc = g.occupied[r - 1];
      if (oc.count == class_capacity(static_cast<int>(oc.klass)) && oc.klass + 1 < static_cast<std::uint32_t>(kClasses)) {
        n.add_take(static_cast<int>(oc.klass) + 1);
        n.add_give(static_cast<int>(oc.klass));
      }
    }
  }
  // Reserves everything n lists, together: two takes of one class may need
  // two free blocks, two gives to one class two free-list places.
  void reserve(grid& g, const needs& n) {
    if (n.new_brick && g.free_bricks.empty()) {
      reserve_for(g.bricks, g.bricks.size() + kBrickCells);
      reserve_for(g.brick_fill, g.brick_fill.size() + 1);
    }
    if (n.free_brick) reserve_for(g.free_bricks, g.free_bricks.size() + 1);
    if (n.new_cell) reserve_for(g.occupied, g.occupied.size() + 1);
    std::size_t pool_extra = 0;
    for (int i = 0; i < 2; ++i) {
      const int k = n.take[i];
      if (k < 0) continue;
      const std::size_t earlier = i == 1 && n.take[0] == k ? 1 : 0;  // free blocks the first take uses
      if (g.free_blocks[k].size() <= earlier) pool_extra += class_capacity(k);
    }
    if (pool_extra != 0) reserve_for(g.pool, g.pool.size() + pool_extra);
    for (int i = 0; i < 2; ++i) {
      const int k = n.give[i];
      if (k < 0) continue;
      const std::size_t both = n.give[0] == n.give[1] ? 2 : 1;
      reserve_for(g.free_blocks[k], g.free_blocks[k].size() + both);
    }
  }
  void prepare_add(std::uint32_t gid, std::uint32_t code) {
    needs n;
    addition_needs(grids[gid], code, n);
    reserve(grids[gid], n);
  }
  void prepare_remove(std::uint32_t gid, std::uint32_t code) {
    needs n;
    removal_needs(grids[gid], code, n);
    reserve(grids[gid], n);
  }
  // Reserves what remove_from_grid(gid, from, .) followed by an add to cell
  // `to` of the same grid need together. prepare_remove and prepare_add one
  // after the other are not enough: both may count on the same free block,
  // both may grow the pool, and both may return a block to the same free list.
  void prepare_cell_change(std::uint32_t gid, std::uint32_t from, std::uint32_t to) {
    needs n;
    removal_needs(grids[gid], from, n);
    addition_needs(grids[gid], to, n);
    reserve(grids[gid], n);
  }

  // Adds entry e to grid gid (slot table updated). No growth check.
  void add_to_grid(std::uint32_t gid, const entry& e) {
    grid& g = grids[gid];
    std::uint32_t reach;
    const std::uint32_t code = cell_and_reach(g, e.box(), reach);
    std::uint32_t& ref = cell_ref(g, code);
    if (ref == 0) {
      const std::uint32_t block = alloc_block(g, base_class);
      reserve_for(g.occupied, g.occupied.size() + 1);
      g.occupied.push_back({code, block, 0, static_cast<std::uint32_t>(base_class)});
      ref = static_cast<std::uint32_t>(g.occupied.size());
      ++g.brick_fill[g.dir[code >> kLocalBits] - 1];
    }
    occupied_cell& oc = g.occupied[ref - 1];
    if (oc.count == class_capacity(static_cast<int>(oc.klass))) {
      if (oc.klass + 1 >= static_cast<std::uint32_t>(kClasses))
        throw error(errc::capacity, "hhg: too many objects in one cell");
      relocate(g, oc, static_cast<int>(oc.klass) + 1);
    }
    g.pool[oc.block + oc.count] = e;
    g.pool[oc.block + oc.count].set_reach(reach);
    ++g.displaced;
    slot& s = slots[e.id.index];
    s.cell = code;
    s.at = oc.block + oc.count;
    s.set_place(gid);
    ++oc.count;
    ++g.objects;
  }

  void remove_from_grid(std::uint32_t gid, std::uint32_t code, std::uint32_t at) {
    grid& g = grids[gid];
    std::uint32_t& ref = cell_ref(g, code);
    const std::uint32_t oi = ref - 1;
    occupied_cell& oc = g.occupied[oi];
    const std::uint32_t last = oc.block + oc.count - 1;
    if (at != last) {
      g.pool[at] = g.pool[last];
      slots[g.pool[at].id.index].at = at;
    }
    g.pool[last] = sentinel();
    --oc.count;
    --g.objects;
    if (oc.count == 0) {
      free_block(g, oc.block, static_cast<int>(oc.klass));
      ref = 0;
      const std::uint32_t brick = g.dir[code >> kLocalBits] - 1;
      if (--g.brick_fill[brick] == 0) {
        g.dir[code >> kLocalBits] = 0;
        g.free_bricks.push_back(brick);
      }
      if (oi + 1 != g.occupied.size()) {
        g.occupied[oi] = g.occupied.back();
        cell_ref(g, g.occupied[oi].cell) = oi + 1;
      }
      g.occupied.pop_back();
    } else if (static_cast<int>(oc.klass) > base_class &&
               2 * oc.count <= class_capacity(static_cast<int>(oc.klass))) {
      relocate(g, oc, std::max(base_class, class_for(oc.count)));  // at most half full: best fit
    }
  }

  void reset_grid(grid& g) {
    g.dir.assign(static_cast<std::size_t>(g.cell_count() >> kLocalBits), 0);
    g.bricks.assign(kBrickCells, 0);  // the empty brick (dir 0)
    g.brick_fill.clear();
    g.free_bricks.clear();
    g.occupied.clear();
    g.pool.clear();
    for (auto& fl : g.free_blocks) fl.clear();
    g.objects = 0;
    g.displaced = 0;
    g.ordered = false;
    g.ordered_end = 0;
  }

  void gather(const grid& g, std::vector<entry>& out) const {
    for (const occupied_cell& oc : g.occupied)
      out.insert(out.end(), g.pool.begin() + oc.block, g.pool.begin() + oc.block + oc.count);
  }

  // Section 3.4: double the cells per axis when objects > cells / density.
  // Called before an object is added (`extra` = 1), so that a growth that
  // runs out of memory fails the insert before anything changed.
  void maybe_grow(std::uint32_t gid, std::size_t extra) {
    grid& g = grids[gid];
    const std::uint64_t cells = g.cell_count();
    if (g.objects + extra <= cells / cfg.minimal_grid_density) return;
    if (code_bits(g) + D > 31) return;  // codes are 32-bit: a grid stops growing at 2^31 cells
    // If memory runs out while the grown grid is built, the old grid is put
    // back (and the slots pointed at it again), so the structure is exactly
    // as before, and the error propagates: the insert fails cleanly.
    std::vector<entry> all;  // growth is rare: a local buffer keeps no memory afterwards
    all.reserve(g.objects);
    gather(g, all);
    std::array<std::uint32_t, D> add{};
    add.fill(1);
    if (cfg.growth == growth_rule::by_occupancy) add = split_growth(g, all);
    grid old = g;  // a copy: the fallback
    try {
      for (int i = 0; i < D; ++i) {
        g.bits[i] += add[i];
        g.mask[i] = (1u << g.bits[i]) - 1;
      }
      reset_grid(g);
      for (const entry& e : all) {
        prepare_add(gid, cell_of(g, e));
        add_to_grid(gid, e);
      }
    } catch (const std::bad_alloc&) {
      grids[gid] = std::move(old);
      const grid& h = grids[gid];
      for (const occupied_cell& oc : h.occupied)
        for (std::uint32_t j = 0; j < oc.count; ++j) {
          slot& sl = slots[h.pool[oc.block + j].id.index];
          sl.cell = oc.cell;
          sl.at = oc.block + j;
        }
      throw;
    }
  }

  // growth_rule::by_occupancy: how many of the D doublings of a growth each
  // axis gets. Cell sizes do not change with growth, only the cells per axis
  // (the modulo of the hashing), so doubling axis i separates objects exactly
  // when their cell coordinates on i, taken modulo the new count, take more
  // distinct values. distinct[i][k]: the distinct coordinates of the objects'
  // min corners on axis i modulo 2^(bits_i + k). Each doubling goes to the
  // axis that gains the most (its distinct count grows the most), among
  // axes within 5 % of the best to the one with the fewest cells, so objects
  // spread evenly get one doubling per axis, as in the thesis; in a long
  // channel the long axis gets them all. Counted up to 2^22 cells per axis
  // (beyond, an axis gains nothing more). May throw std::bad_alloc before
  // anything changed.
  std::array<std::uint32_t, D> split_growth(const grid& g, const std::vector<entry>& all) const {
    constexpr std::uint32_t kMaxCountBits = 22;
    std::array<std::array<double, D + 1>, D> distinct{};
    std::vector<std::uint64_t> seen;
    for (int i = 0; i < D; ++i)
      for (int k = 0; k <= D; ++k) {
        const std::uint32_t bits = std::min(g.bits[i] + static_cast<std::uint32_t>(k), kMaxCountBits);
        const std::uint64_t mask = (std::uint64_t{1} << bits) - 1;
        seen.assign(std::size_t{1} << (bits > 6 ? bits - 6 : 0), 0);
        std::size_t used = 0;
        for (const entry& e : all) {
          const std::uint64_t c = static_cast<std::uint64_t>(floor_to_int(static_cast<double>(e.min(i)) * g.inv)) & mask;
          const std::uint64_t bit = std::uint64_t{1} << (c & 63);
          used += (seen[c >> 6] & bit) == 0;
          seen[c >> 6] |= bit;
        }
        distinct[i][k] = static_cast<double>(std::max<std::size_t>(used, 1));
      }
    std::array<std::uint32_t, D> add{};
    for (int t = 0; t < D; ++t) {
      std::array<double, D> gain{};
      double best = 0;
      for (int i = 0; i < D; ++i) {
        gain[i] = distinct[i][add[i] + 1] / distinct[i][add[i]];
        best = std::max(best, gain[i]);
      }
      int pick = -1;
      for (int i = 0; i < D; ++i)
        if (gain[i] >= 0.95 * best && (pick < 0 || g.bits[i] + add[i] < g.bits[pick] + add[pick])) pick = i;
      ++add[pick];
    }
    return add;
  }

  // ---- slots -------------------------------------------------------------------
  bool live(handle h) const {
    return h.generation != 0 && h.index < slots.size() && slots[h.index].place() != kPlaceFree &&
           slots[h.index].generation() == h.generation;
  }

  handle new_slot() {
    std::uint32_t index;
    if (free_head != npos) {
      index = free_head;
      free_head = slots[index].at;
    } else {
      if (slots.size() >= npos - 1) throw error(errc::capacity, "hhg: too many objects (2^32 - 1)");
      reserve_for(slots, slots.size() + 1);
      slots.push_back({1u << 8 | kPlaceFree, 0, npos});
      index = static_cast<std::uint32_t>(slots.size() - 1);
    }
    return {index, slots[index].generation()};
  }

  // Undoes new_slot exactly (same generation for the next insert), for an
  // insert that failed.
  void unnew_slot(std::uint32_t index, bool pushed) {
    if (pushed) {
      slots.pop_back();
    } else {
      slots[index].at = free_head;
      free_head = index;
    }
  }

  void release_slot(std::uint32_t index) {
    slot& s = slots[index];
    s.next_generation();
    s.set_place(kPlaceFree);
    s.at = free_head;
    free_head = index;
  }

  // ---- placing and unplacing objects ---------------------------------------------
  void push_list(std::vector<entry>& v, std::uint32_t place, const entry& e) {
    v.push_back(e);
    slot& s = slots[e.id.index];
    s.at = static_cast<std::uint32_t>(v.size() - 1);
    s.set_place(place);
  }

  void erase_list(std::vector<entry>& v, std::uint32_t pos) {
    if (pos + 1 != v.size()) {
      v[pos] = v.back();
      slots[v[pos].id.index].at = pos;
    }
    v.pop_back();
  }

  // Stores e where it belongs (grid, list or apart).
  void place(const entry& e) {
    const box_t b = e.box();
    const double eff = effective_size(b);
    if (!is_bounded(b) || std::isinf(eff)) {
      push_list(apart, kPlaceApart, e);
    } else if (!active) {
      push_list(list, kPlaceList, e);
    } else {
      const std::uint32_t gid = grid_for(eff);
      maybe_grow(gid, 1);
      prepare_add(gid, cell_of(grids[gid], e));
      add_to_grid(gid, e);
    }
  }

  // Reserves what place(e) will need, so that it cannot fail after an
  // unplace (a move to another grid); may create e's grid level.
  void prepare_place(const entry& e) {
    const box_t b = e.box();
    const double eff = effective_size(b);
    if (!is_bounded(b) || std::isinf(eff)) {
      reserve_for(apart, apart.size() + 1);
    } else if (!active) {
      reserve_for(list, list.size() + 1);
    } else {
      const std::uint32_t gid = grid_for(eff);
      maybe_grow(gid, 1);
      prepare_add(gid, cell_of(grids[gid], e));
    }
  }
  void prepare_unplace(std::uint32_t index) {
    const slot& sl = slots[index];
    if (sl.place() < kMaxGrids) prepare_remove(sl.place(), sl.cell);
  }

  void unplace(std::uint32_t index) {
    const slot s = slots[index];
    switch (s.place()) {
      case kPlaceList:
        erase_list(list, s.at);
        break;
      case kPlaceApart:
        erase_list(apart, s.at);
        break;
      default:
        remove_from_grid(s.place(), s.cell, s.at);
    }
  }

  entry& find(std::uint32_t index) {
    const slot& s = slots[index];
    switch (s.place()) {
      case kPlaceList:
        return list[s.at];
      case kPlaceApart:
        return apart[s.at];
      default:
        return grids[s.place()].pool[s.at];
    }
  }

  // Points the slots of every entry of list v (the all-pairs list or the
  // objects kept apart) at their positions in it.
  void repoint(const std::vector<entry>& v, std::uint32_t place) {
    for (std::uint32_t i = 0; i < v.size(); ++i) {
      slot& sl = slots[v[i].id.index];
      sl.set_place(place);
      sl.at = i;
    }
  }

  // Out of memory half-way: every grid is dropped and the list restored,
  // exactly as before (nothing here allocates), and the error is rethrown.
  void activate() {
    active = true;
    std::vector<entry> all;
    all.swap(list);  // releases the list's memory
    try {
      for (const entry& e : all) place(e);
    } catch (...) {
      grids.clear();
      levels.clear();
      active = false;
      list.swap(all);
      repoint(list, kPlaceList);
      throw;
    }
  }

  // Rebuild strategy: clear every cell, reinsert every grid object.
  // Out of memory part-way: the objects not yet placed join the unbounded ones
  // (tested against everything: pairs stay exact), rebuild_pending stays set,
  // and the next rebuild places them in the grids again. Nothing is lost: the
  // scratch vector is reserved for all objects before anything changes, and
  // on failure becomes the apart list (no allocation).
  static bool belongs_in_grid(const entry& e) {
    const box_t b = e.box();
    return is_bounded(b) && !std::isinf(effective_size(b));
  }
  void rebuild() {
    std::size_t total = 0;
    for (const grid& g : grids) total += g.objects;
    tmp.clear();
    reserve_for(tmp, total + apart.size());
    // nothing below allocates until place()
    for (grid& g : grids) gather(g, tmp);
    for (std::size_t i = apart.size(); i-- > 0;) {
      if (!belongs_in_grid(apart[i])) continue;
      tmp.push_back(apart[i]);
      erase_list(apart, static_cast<std::uint32_t>(i));
    }
    for (grid& g : grids) reset_grid(g);
    std::size_t i = 0;
    try {
      for (; i < tmp.size(); ++i) place(tmp[i]);  // place is all or nothing
    } catch (...) {
      tmp.erase(tmp.begin(), tmp.begin() + static_cast<std::ptrdiff_t>(i));  // the placed ones
      tmp.insert(tmp.end(), apart.begin(), apart.end());
      apart.swap(tmp);
      repoint(apart, kPlaceApart);
      throw;
    }
    rebuild_pending = false;
  }

  // ---- layout in cell order (compact, bulk_move) ----------------------------------
  // A grid's new storage, written cell by cell in cell-code order: each cell's
  // objects are appended to the pool, then close_cell adds its free room,
  // its record and its brick. reserve allocates all of it up front, so that
  // the writing allocates nothing; install swaps it in.
  struct layout {
    std::vector<occupied_cell> occupied;
    big_vector<entry> pool;
    std::vector<std::uint32_t> bricks;
    std::vector<std::uint32_t> fill;
    std::uint32_t last_brick = npos;

    void reserve(std::size_t cells, std::size_t pool_capacity, std::size_t nbricks) {
      occupied.reserve(cells);
      pool.reserve(pool_capacity);
      bricks.assign((nbricks + 1) * kBrickCells, 0);
      fill.reserve(nbricks);
    }
    // g.dir must have been cleared before the first cell
    void close_cell(grid& g, std::uint32_t code, std::uint32_t block, std::uint32_t objects_in, int klass) {
      pool.resize(block + class_capacity(klass), sentinel());  // the block's free room
      record_cell(g, code, block, objects_in, klass);
    }
    // close_cell without the pool (bulk_move writes it)
    void record_cell(grid& g, std::uint32_t code, std::uint32_t block, std::uint32_t objects_in, int klass) {
      const std::uint32_t b = code >> kLocalBits;
      if (b != last_brick) {
        last_brick = b;
        fill.push_back(0);
        g.dir[b] = static_cast<std::uint32_t>(fill.size());
      }
      ++fill.back();
      bricks[(fill.size() << kLocalBits) | (code & kLocalMask)] = static_cast<std::uint32_t>(occupied.size() + 1);
      occupied.push_back({code, block, objects_in, static_cast<std::uint32_t>(klass)});
    }
  };
  static void install(grid& g, layout& l) noexcept {
    g.occupied.swap(l.occupied);
    g.pool.swap(l.pool);
    g.bricks.swap(l.bricks);
    g.brick_fill.swap(l.fill);
    g.free_bricks.clear();
    for (auto& fl : g.free_blocks) fl.clear();
    g.displaced = 0;
    g.ordered = true;
    g.ordered_end = static_cast<std::uint32_t>(g.pool.size());
  }

  // ---- compaction ------------------------------------------------------------------
  // Rebuilds a grid's storage in cell-code order: the occupied list sorted by
  // code, each cell's block (shrunk to the best-fitting class) laid out in that
  // order in a fresh pool, bricks renumbered in code order. Detection then
  // streams through memory instead of jumping: a cell's neighbours along x are
  // adjacent, along y and z a fixed stride away. The cost is one pass over the
  // objects (and one write per slot), paid when more than 1/kCompactRatio of
  // a grid's objects (at least kCompactMin) were written out of order since the last compaction.
  // Between compactions an ordered grid keeps its order below ordered_end
  // and walks the cells written since apart (detect_displaced), which costs
  // more per cell and leaves holes in the pool: 1/8 balances the two
  // (measured at 10^6 objects moving 1 % of their size a step, mean step
  // over 60 steps: ratio 2: 220, 4: 190, 8: 173 ns per object; the
  // unordered walk throughout: 196).
  // Everything is allocated before anything changes: if an allocation fails,
  // the grid is left as it was (compaction is only an optimization).
  static constexpr std::size_t kCompactMin = 4096;
  static constexpr std::size_t kCompactRatio = 8;

  void compact(grid& g) {
    sort_occupied(g);
    const std::size_t cells = order.size();
    layout l;
    try {
      std::size_t total = 0, nbricks = 0;
      std::uint32_t last_brick = npos;
      for (std::size_t k = 0; k < cells; ++k) {
        const occupied_cell& oc = g.occupied[order[k]];
        total += class_capacity(std::max(base_class, class_for(oc.count)));
        if ((oc.cell >> kLocalBits) != last_brick) {
          last_brick = oc.cell >> kLocalBits;
          ++nbricks;
        }
      }
      if (total > npos) return;
      l.reserve(g.occupied.capacity(), total + total / 8, nbricks);
    } catch (const std::bad_alloc&) {
      return;
    }
    // nothing below allocates
    std::fill(g.dir.begin(), g.dir.end(), 0u);
    for (std::size_t k = 0; k < cells; ++k) {
      const occupied_cell& oc = g.occupied[order[k]];
      // The slots written below are scattered, and so are the blocks of the
      // cells that changed since the last compaction: fetch the blocks 32
      // cells ahead, the slots (whose handles are in the blocks) 16 ahead.
      if (k + 16 < cells) {
        const occupied_cell& ahead = g.occupied[order[k + 16]];
        for (std::uint32_t j = 0; j < ahead.count && j < 4; ++j)
          __builtin_prefetch(&slots[g.pool[ahead.block + j].id.index], 1);
      }
      if (k + 32 < cells) {
        const occupied_cell& ahead = g.occupied[order[k + 32]];
        __builtin_prefetch(g.pool.data() + ahead.block);
        __builtin_prefetch(reinterpret_cast<const char*>(g.pool.data() + ahead.block) + 64);
      }
      if (k + 48 < cells) __builtin_prefetch(&g.occupied[order[k + 48]]);
      const auto pos = static_cast<std::uint32_t>(l.pool.size());
      l.pool.insert(l.pool.end(), g.pool.begin() + oc.block, g.pool.begin() + oc.block + oc.count);
      for (std::uint32_t j = 0; j < oc.count; ++j) slots[l.pool[pos + j].id.index].at = pos + j;
      l.close_cell(g, oc.cell, pos, oc.count, std::max(base_class, class_for(oc.count)));
    }
    install(g, l);
    ++compactions;
  }

  // ---- detection -----------------------------------------------------------------
  void sort_occupied(const grid& g) {
    const std::size_t n = g.occupied.size();
    order.resize(n);
    for (std::size_t i = 0; i < n; ++i) order[i] = static_cast<std::uint32_t>(i);
    // right after a compaction the list is in code order already
    bool sorted = true;
    for (std::size_t i = 1; i < n && sorted; ++i) sorted = g.occupied[i - 1].cell < g.occupied[i].cell;
    if (sorted) return;
    if (n < 64) {
      std::sort(order.begin(), order.end(),
                [&](std::uint32_t a, std::uint32_t b) { return g.occupied[a].cell < g.occupied[b].cell; });
      return;
    }
    radix_sort(order, order_tmp, code_bits(g), [&](std::uint32_t o) { return g.occupied[o].cell; });
  }

  // A grid's occupied cells in code order: the occupied list itself when it
  // is sorted (as after a compaction or a bulk move: no scratch), else
  // through `order`.
  struct cell_view {
    const occupied_cell* occ;
    const std::uint32_t* order;  // nullptr: the list is sorted
    std::size_t size;
    const occupied_cell& at(std::size_t k) const { return occ[order != nullptr ? order[k] : k]; }
    std::uint32_t code(std::size_t k) const { return at(k).cell; }
  };
  cell_view sorted_cells(const grid& g) {
    const std::size_t n = g.occupied.size();
    bool sorted = true;
    for (std::size_t i = 1; i < n && sorted; ++i) sorted = g.occupied[i - 1].cell < g.occupied[i].cell;
    if (sorted) return {g.occupied.data(), nullptr, n};
    sort_occupied(g);
    return {g.occupied.data(), order.data(), n};
  }

  static std::uint32_t code_bits(const grid& g) {
    std::uint32_t bits = 0;
    for (int i = 0; i < D; ++i) bits += g.bits[i];
    return bits;
  }

  void release_batch_scratch() noexcept {
    std::vector<deferred_move>().swap(deferred);
    std::vector<deferred_move>().swap(deferred_tmp);
    std::vector<std::uint64_t>().swap(pending);
  }

  // Stable radix sort of `deferred` by key (old cell code).
  void sort_deferred() {
    if (deferred.size() < 2) return;
    radix_sort(deferred, deferred_tmp, 32, [](const deferred_move& d) { return d.key; });
  }

  template <class Sink>
  void test_against(const entry& a, const entry* first, std::uint32_t n, Sink& sink) {
    box_tests += n;
    const query qa(a);
    for (std::uint32_t j = 0; j < n; ++j) {
      if (qa.hits(first[j])) [[unlikely]] sink(a.user_handle(), first[j].user_handle());
    }
  }

  template <class Sink>
  void detect(Sink& sink) {
    box_tests = cells_visited = 0;
    if (rebuild_pending) {
      settle();
      rebuild();
    }
    // 1. all-pairs list (before activation)
    for (std::size_t i = 0; i < list.size(); ++i)
      test_against(list[i], list.data() + i + 1, static_cast<std::uint32_t>(list.size() - i - 1), sink);
    // 2. objects kept apart against everything
    for (std::size_t i = 0; i < apart.size(); ++i) {
      const entry& a = apart[i];
      test_against(a, apart.data() + i + 1, static_cast<std::uint32_t>(apart.size() - i - 1), sink);
      test_against(a, list.data(), static_cast<std::uint32_t>(list.size()), sink);
      for (const grid& g : grids)
        for (const occupied_cell& oc : g.occupied) test_against(a, g.pool.data() + oc.block, oc.count, sink);
    }
    // 3. the grids, finest first
    for (grid& g : grids)
      if (g.objects >= kCompactMin && g.displaced * kCompactRatio > g.objects) compact(g);
    live_levels.clear();
    for (std::uint32_t id : levels)
      if (grids[id].objects != 0) live_levels.push_back(id);
    bool ordered_walk = false;
    for (std::size_t li = 0; li < live_levels.size(); ++li) {
      ordered_walk = ordered_walk || grids[live_levels[li]].ordered;
      detect_grid(li, sink);
    }
    for (std::size_t li = 0; li + 1 < live_levels.size(); ++li)
      for (std::size_t lj = li + 1; lj < live_levels.size(); ++lj) detect_across(li, lj, sink);
    if (!ordered_walk) {  // the row tables are kept only while detect_ordered uses them
      std::vector<std::uint32_t>().swap(row_pos);
      std::vector<row_info>().swap(rows);
      std::vector<std::uint32_t>().swap(gathered);
    }
  }

  // detect_grid for a grid whose pool is in code order (see grid::ordered).
  // A window of cells of a row is then one stretch of the pool, from the
  // block of its first cell to the block of the next cell in code order
  // (the gaps hold sentinels). Each occupied row gets, over the x between
  // its first and last cell, the pool position of its first cell at x or
  // beyond (row_pos): a window is two reads, no search, no branch. A row
  // whose cells are far apart (more than 4 x between them on average) is
  // searched instead. The candidates of a cell are gathered, after the
  // cell's own objects, as byte offsets into the pool (eight at a time,
  // without branches; a pool of more than 2^32 bytes takes
  // detect_unordered), and each object of the cell is tested against what
  // follows it in one loop.
  struct row_info {
    std::uint32_t code;       // the cell code of x = 0 in the row
    std::uint32_t first, end;  // its cells in sorted order: [first, end)
    std::uint32_t xmin, xmax;  // the x of its first and last cell
    std::uint32_t pos;        // row_pos offset (npos: searched)
  };
  std::vector<row_info> rows;  // detect_ordered: the occupied rows of a grid
  template <class Sink>
  void detect_ordered(const grid& g, const cell_view& cv, Sink& sink) {
    const entry* pool = g.pool.data();
    const std::size_t cells = cv.size;
    const std::uint32_t mx = g.mask[0], bx = g.bits[0], my = g.mask[1], by = g.bits[1];
    const std::uint32_t mz = D == 3 ? g.mask[D - 1] : 0;
    const std::uint32_t pool_end = g.ordered_end;  // (the cells of cv lie below it)
    auto start_of = [&](std::size_t c) { return c < cells ? cv.at(c).block : pool_end; };
    // the rows, and row_pos; rows[0] is an empty row (row_pos 0, 0)
    rows.clear();
    row_pos.clear();
    rows.push_back({npos, 0, 0, 0, 0, 0});
    row_pos.push_back(0);
    row_pos.push_back(0);
    for (std::size_t k = 0; k < cells;) {
      const std::uint32_t row = cv.code(k) & ~mx;
      std::size_t e = k + 1;
      while (e < cells && (cv.code(e) & ~mx) == row) ++e;
      row_info r{row, static_cast<std::uint32_t>(k), static_cast<std::uint32_t>(e), cv.code(k) & mx, cv.code(e - 1) & mx, npos};
      if (r.xmax - r.xmin <= 4 * (e - k) + 16) {
        r.pos = static_cast<std::uint32_t>(row_pos.size());
        std::size_t c = k;
        for (std::uint32_t x = r.xmin; x <= r.xmax + 1; ++x) {
          while (c < e && (cv.code(c) & mx) < x) ++c;
          row_pos.push_back(start_of(c));
        }
      }
      rows.push_back(r);
      k = e;
    }
    // the pool position of the first cell at x >= v (v may be -1 or past
    // the row's end) in row r
    auto pos = [&](const row_info& r, std::int64_t v) -> std::uint32_t {
      if (r.pos != npos) {
        const std::int64_t i = std::clamp<std::int64_t>(v - r.xmin, 0, std::int64_t{r.xmax} - r.xmin + 1);
        return row_pos[r.pos + static_cast<std::size_t>(i)];
      }
      std::size_t c = r.first;
      while (c < r.end && static_cast<std::int64_t>(cv.code(c) & mx) < v) ++c;
      return start_of(c);
    };
    // the first row at index >= from with code >= key (galloping)
    auto seek_row = [&](std::size_t from, std::uint32_t key) {
      const std::size_t nrows = rows.size();
      if (from < 1 || from > nrows || (from > 1 && rows[from - 1].code >= key)) from = 1;
      std::size_t lo = from, hi = from, step = 1;
      while (hi < nrows && rows[hi].code < key) {
        lo = hi + 1;
        hi += step;
        step *= 2;
      }
      if (hi > nrows) hi = nrows;
      return static_cast<std::size_t>(
          std::partition_point(rows.begin() + static_cast<std::ptrdiff_t>(lo), rows.begin() + static_cast<std::ptrdiff_t>(hi),
                               [&](const row_info& r) { return r.code < key; }) -
          rows.begin());
    };
    constexpr std::uint32_t X = 1, Y = 2, Z = 4;
    constexpr int kRows = D == 3 ? 4 : 1;
    constexpr std::array<int, kRows> dy = [] {
      if constexpr (D == 3) return std::array<int, kRows>{1, -1, 0, 1};
      else return std::array<int, kRows>{1};
    }();
    constexpr std::array<int, kRows> dz = [] {
      if constexpr (D == 3) return std::array<int, kRows>{0, 1, 1, 1};
      else return std::array<int, kRows>{0};
    }();
    constexpr std::array<std::uint32_t, kRows> row_need = [] {
      if constexpr (D == 3) return std::array<std::uint32_t, kRows>{Y, Z, Z, Y | Z};
      else return std::array<std::uint32_t, kRows>{Y};
    }();
    std::array<std::size_t, kRows> hint{};
    std::array<const row_info*, kRows> nb{};
    if (gathered.size() < 256 + 8 * kFlat) gathered.resize(256 + 8 * kFlat);
    start_found();
    const std::size_t nrows = rows.size();
    for (std::size_t ri = 1; ri < nrows; ++ri) {
      const row_info& R = rows[ri];
      const std::uint32_t y = (R.code >> bx) & my, z = D == 3 ? (R.code >> (bx + by)) & mz : 0;
      for (int t = 0; t < kRows; ++t) {
        const std::uint32_t ny = (y + static_cast<std::uint32_t>(dy[t])) & my;
        const std::uint32_t nz = (z + static_cast<std::uint32_t>(dz[t])) & mz;
        const std::uint32_t code = ny << bx | (D == 3 ? nz << (bx + by) : 0);
        hint[t] = seek_row(hint[t], code);
        nb[t] = hint[t] < nrows && rows[hint[t]].code == code ? &rows[hint[t]] : &rows[0];
      }
      for (std::size_t kk = R.first; kk < R.end; ++kk) {
        const std::int64_t x = cv.code(kk) & mx;
        const occupied_cell& oc = cv.at(kk);
        const entry* cell = pool + oc.block;
        const std::uint32_t n = oc.count;
        ++cells_visited;
        std::uint32_t own = 0;  // bit m: some object of the cell reaches the axes m
        for (std::uint32_t i = 0; i < n; ++i) own |= subsets_of(cell[i].reach());
        // the candidates: stretches of the pool, each with the reach it
        // needs of this cell's object (x + 1 needs X)
        struct span {
          std::uint32_t lo, hi, need;
        };
        std::array<span, 1 + 4 * kRows> sp;
        std::size_t ns = 0;
        if (x != mx) sp[ns++] = {pos(R, x + 1), pos(R, x + 2), X};
        else sp[ns++] = {pos(R, 0), pos(R, 1), X};  // x + 1 wraps to 0
        for (int t = 0; t < kRows; ++t) {
          const row_info& N = *nb[t];
          const std::uint32_t lo = pos(N, x - 1), mid = pos(N, x + 1), hi = pos(N, x + 2);
          if (n > kFlat) {
            sp[ns++] = {lo, mid, row_need[t]};
            sp[ns++] = {mid, hi, row_need[t] | X};
          } else {  // one stretch: to x + 1 when some object reaches it
            sp[ns++] = {lo, (own >> (row_need[t] | X)) & 1u ? hi : mid, row_need[t]};
          }
          if (x == 0 && N.xmax == mx && N.code != npos) sp[ns++] = {pos(N, mx), pos(N, mx + 1), row_need[t]};  // x - 1 wraps
          if (x == mx) sp[ns++] = {pos(N, 0), pos(N, 1), row_need[t] | X};  // x + 1 wraps
        }
        if (n > kFlat) {  // a crowded cell: each object only against what it reaches
          for (std::uint32_t i = 0; i < n; ++i) {
            const entry& a = cell[i];
            test_against(a, cell + i + 1, n - i - 1, sink);  // pairs inside the cell
            const std::uint32_t reach = a.reach();
            for (std::size_t s = 0; s < ns; ++s)
              if ((reach & sp[s].need) == sp[s].need) test_against(a, pool + sp[s].lo, sp[s].hi - sp[s].lo, sink);
          }
          continue;
        }
        // The usual 1-4 objects: gather the stretches some object of the
        // cell reaches, as byte offsets into the pool (eight at a time, no
        // branches), after room for the cell's own objects (test_cell reads
        // those from the cell); then one loop tests them all (test_cell).
        std::uint32_t* out = gathered.data() + n;
        for (std::size_t s = 0; s < ns; ++s) {
          const std::uint32_t lo = sp[s].lo;
          const std::uint32_t len = (sp[s].hi - lo) & (0u - ((own >> sp[s].need) & 1u));
          const std::size_t at = static_cast<std::size_t>(out - gathered.data());
          if (at + len + 8 > gathered.size()) [[unlikely]] {
            gathered.resize(2 * (at + len + 8));
            out = gathered.data() + at;
          }
          gather_offsets(out, lo, len);
        }
        const auto total = static_cast<std::uint32_t>(out - gathered.data());
        // every test writes its pair to found, and a hit keeps it: no
        // branch on the outcome
        handle_pair* const fb = found_room(sink, static_cast<std::size_t>(n) * total);
        char* to = reinterpret_cast<char*>(fb + found_fill);
        const char* base = reinterpret_cast<const char*>(pool);
        box_tests += static_cast<std::uint64_t>(n) * (total - n) + n * (n - 1) / 2;
        switch (n) {
          case 1: to = test_cell<1>(cell, base, gathered.data(), total, to); break;
          case 2: to = test_cell<2>(cell, base, gathered.data(), total, to); break;
          case 3: to = test_cell<3>(cell, base, gathered.data(), total, to); break;
          default: to = test_cell<kFlat>(cell, base, gathered.data(), total, to); break;
        }
        found_fill = static_cast<std::size_t>(reinterpret_cast<handle_pair*>(to) - fb);
      }
    }
    flush_found(sink);
  }

  // detect_ordered's tests for a cell of N objects (cell[0, N); ix[0, N)
  // is not read): among themselves, then against the candidates ix[N,
  // total), each loaded once and tested against the N objects, whose
  // queries stay in registers. One loop a cell, where a loop per object
  // ended in a mispredicted branch per object. Every test writes its pair
  // at `to`; a hit advances `to` past it. Returns the new `to`.
  template <std::uint32_t N>
  static char* test_cell(const entry* cell, const char* base, const std::uint32_t* ix, std::uint32_t total, char* to) {
    static_assert(N >= 1 && N <= kFlat);
    std::array<query, N> qs;
    std::array<std::uint64_t, N> ids;
    for (std::uint32_t i = 0; i < N; ++i) {
      qs[i] = query(cell[i]);
      ids[i] = id_word(cell[i]);
    }
    for (std::uint32_t i = 0; i < N; ++i)
      for (std::uint32_t j = i + 1; j < N; ++j) {
        put_pair(to, ids[i], cell[j]);
        to += qs[i].hit_bytes(cell[j]);
      }
    for (std::uint32_t j = N; j < total; ++j) {
      const entry& b = *reinterpret_cast<const entry*>(base + ix[j]);
      for (std::uint32_t i = 0; i < N; ++i) {
        put_pair(to, ids[i], b);
        to += qs[i].hit_bytes(b);
      }
    }
    return to;
  }

  // detect_ordered's pairs, delivered in batches: [0, found_fill) of found
  // are pairs of entry ids (the reach bits still in the generations).
  // A sink with append(const handle_pair*, std::size_t) takes them at once.
  static constexpr std::size_t kFoundBatch = 256;  // 4 KB: no measurable cost against 1024
  std::vector<handle_pair> found;
  std::size_t found_fill = 0;
  void start_found() {
    if (found.size() < kFoundBatch) found.resize(kFoundBatch);
    found_fill = 0;
  }
  // Where the next pair goes, with room for `most` after it (found flushed
  // first if need be).
  template <class Sink>
  handle_pair* found_room(Sink& sink, std::size_t most) {
    if (found_fill + most > found.size()) {
      flush_found(sink);
      if (most > found.size()) found.resize(most);
    }
    return found.data();
  }
  // An entry's id as one word, and the pair (a's id, b's id) written as two
  // (with the reach bits: flush_found clears them). Whole words: two plain
  // stores a test.
  static std::uint64_t id_word(const entry& e) {
    std::uint64_t w;
    std::memcpy(&w, &e.id, sizeof w);
    return w;
  }
  static void put_pair(char* to, std::uint64_t aid, const entry& b) {
    const std::uint64_t bid = id_word(b);
    std::memcpy(to, &aid, sizeof aid);
    std::memcpy(to + sizeof aid, &bid, sizeof bid);
  }
  template <class Sink>
  void flush_found(Sink& sink) {
    const std::size_t k = found_fill;
    found_fill = 0;  // (first: a throwing sink leaves found empty)
    for (std::size_t i = 0; i < k; ++i) {
      found[i].a.generation &= 0xFFFFFFu;
      found[i].b.generation &= 0xFFFFFFu;
    }
    if constexpr (requires { sink.append(found.data(), k); }) {
      sink.append(found.data(), k);
    } else {
      for (std::size_t i = 0; i < k; ++i) sink(found[i].a, found[i].b);
    }
  }

  // detect_ordered's candidates: the byte offsets of pool entries
  // [first, first + len) at out (eight are written whatever len is: out
  // has room), and out advanced past them.
  static void gather_offsets(std::uint32_t*& out, std::uint32_t first, std::uint32_t len) {
    constexpr auto e = static_cast<std::uint32_t>(sizeof(entry));
    const std::uint32_t lo = first * e;
#if defined(__SSE2__)
    const __m128i l = _mm_set1_epi32(static_cast<int>(lo));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm_add_epi32(l, _mm_setr_epi32(0, e, 2 * e, 3 * e)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 4), _mm_add_epi32(l, _mm_setr_epi32(4 * e, 5 * e, 6 * e, 7 * e)));
    for (std::uint32_t j = 8; j < len; ++j) out[j] = lo + j * e;
#else
    for (std::uint32_t j = 0; j < len; ++j) out[j] = lo + j * e;
#endif
    out += len;
  }

  // Within one grid (Algorithm 4, first part): each occupied cell against
  // itself and its forward neighbours (dz > 0, or dz == 0 and dy > 0, or
  // dz == dy == 0 and dx > 0: 13 in 3D, 4 in 2D), by detect_ordered when
  // the grid's pool is in code order, else by detect_unordered.
  template <class Sink>
  void detect_grid(std::size_t li, Sink& sink) {
    const grid& g = grids[live_levels[li]];
    // (detect_ordered addresses entries by 32-bit byte offsets)
    // (and crowded grids take the lookup walk: it filters each candidate by
    // its reach too, where the ordered walk tests whole stretches; measured
    // with 10x1x1 boxes, 125 objects a cell: 288 against 210 tests per object)
    if (!g.ordered || g.pool.size() > kMaxOrderedPool || g.objects > kCrowdedGrid * g.occupied.size())
      return detect_unordered(g, sink);
    cell_view cv = sorted_cells(g);
    // the cells whose block lies above ordered_end ("displaced") are walked
    // apart (detect_displaced)
    displaced_cells.clear();
    if (g.pool.size() > g.ordered_end) {  // some block may lie above it: split the cells, in code order
      order_tmp.clear();
      std::size_t outside = 0;
      for (std::size_t k = 0; k < cv.size; ++k) {
        const auto oi = static_cast<std::uint32_t>(&cv.at(k) - cv.occ);
        if (cv.at(k).block < g.ordered_end) {
          order_tmp.push_back(oi);
        } else {
          displaced_cells.push_back(oi);
          outside += cv.at(k).count;
        }
      }
      // many displaced objects: the lookup walk over all cells (half the
      // neighbours each) costs less than the displaced walk (all of them)
      if (outside * 4 > g.objects) return detect_unordered(g, sink);
      if (!displaced_cells.empty()) cv = {cv.occ, order_tmp.data(), order_tmp.size()};
    }
    detect_ordered(g, cv, sink);
    detect_displaced(g, sink);
  }

  // The displaced cells of an ordered grid (see grid::ordered): the ordered
  // walk never sees their objects, so each is tested against itself and all
  // of its neighbours (3^D - 1), except that of two displaced neighbours only
  // the one with the smaller code tests the other. Grids have at least 4
  // cells per axis, so the neighbours are distinct cells. The reach filter
  // of detect_unordered applies: toward a neighbour at offset d, a must
  // reach on the axes where d = +1 and b on those where d = -1.
  template <class Sink>
  void detect_displaced(const grid& g, Sink& sink) {
    const entry* pool = g.pool.data();
    const occupied_cell* occ = g.occupied.data();
    const std::uint32_t mx = axis_term(g, 0, g.mask[0]), my = axis_term(g, 1, g.mask[1]),
                        mz = D == 3 ? axis_term(g, D - 1, g.mask[D - 1]) : 0;
    for (const std::uint32_t di : displaced_cells) {
      const occupied_cell& oc = occ[di];
      const entry* cell = pool + oc.block;
      ++cells_visited;
      for (std::uint32_t i = 0; i < oc.count; ++i) test_against(cell[i], cell + i + 1, oc.count - i - 1, sink);
      // neighbour codes in dilated arithmetic, as in detect_unordered
      const std::uint32_t code = oc.cell;
      const std::uint32_t x1 = code & mx, y1 = code & my, z1 = code & mz;
      const std::array<std::uint32_t, 3> xs{(x1 - 1) & mx, x1, ((x1 | ~mx) + 1) & mx};
      const std::array<std::uint32_t, 3> ys{(y1 - 1) & my, y1, ((y1 | ~my) + 1) & my};
      const std::array<std::uint32_t, 3> zs{(z1 - 1) & mz, z1, ((z1 | ~mz) + 1) & mz};
      for (int c = 0; c < (D == 3 ? 27 : 9); ++c) {
        const std::uint32_t nc = xs[c % 3] | ys[(c / 3) % 3] | (D == 3 ? zs[c / 9] : 0);
        if (nc == code) continue;
        const std::uint32_t r = lookup(g, nc);
        if (r == 0) continue;
        const occupied_cell& nb = occ[r - 1];
        if (nb.block >= g.ordered_end && nb.cell < code) continue;  // that one tests this one
        std::uint32_t need_own = 0, need_nb = 0;
        for (int a = 0, t = c; a < D; ++a, t /= 3) {
          need_own |= static_cast<std::uint32_t>(t % 3 == 2) << a;
          need_nb |= static_cast<std::uint32_t>(t % 3 == 0) << a;
        }
        const entry* others = pool + nb.block;
        for (std::uint32_t i = 0; i < oc.count; ++i) {
          if ((cell[i].reach() & need_own) != need_own) continue;
          if (need_nb == 0) {
            test_against(cell[i], others, nb.count, sink);
            continue;
          }
          const query qa(cell[i]);
          for (std::uint32_t j = 0; j < nb.count; ++j) {
            if ((others[j].reach() & need_nb) != need_nb) continue;
            ++box_tests;
            if (qa.hits(others[j])) [[unlikely]] sink(cell[i].user_handle(), others[j].user_handle());
          }
        }
      }
    }
  }

  // detect_grid for a grid whose pool is not in code order: the walk goes
  // through the occupied cells in code order and looks up each cell's
  // forward neighbours.
  template <class Sink>
  void detect_unordered(const grid& g, Sink& sink) {
    sort_occupied(g);
    start_found();
    const entry* pool = g.pool.data();
    const occupied_cell* occ = g.occupied.data();
    const std::size_t cells = order.size();
    constexpr int kForward = D == 3 ? 13 : 4;
    // Reach filter: an object b of the neighbour at offset d can overlap an
    // object a of this cell only if a reaches into the next cell on every
    // axis where d = +1 and b does on every axis where d = -1 (both boxes
    // are smaller than a cell, and cells are computed monotonically from
    // the coordinates). need_own[t] / need_nb[t]: the reach offset t needs.
    constexpr std::uint8_t X = 1, Y = 2, Z = 4;
    constexpr auto need_own = [] {
      if constexpr (D == 2) return std::array<std::uint8_t, 4>{X, Y, Y, X | Y};
      else return std::array<std::uint8_t, 13>{X, Y, Y, X | Y, Z, Z, Z, Z, Z | X, Z | X, Z | Y, Z | Y, Z | X | Y};
    }();
    // offsets with the same need_own are adjacent: group k is [groups[k], groups[k + 1])
    constexpr auto groups = [] {
      if constexpr (D == 2) return std::array<std::uint8_t, 4>{0, 1, 3, 4};
      else return std::array<std::uint8_t, 8>{0, 1, 3, 4, 8, 10, 12, 13};
    }();
    constexpr auto need_nb = [] {
      if constexpr (D == 2) return std::array<std::uint8_t, 4>{0, X, 0, 0};
      else return std::array<std::uint8_t, 13>{0, X, 0, 0, X | Y, Y, X, 0, Y, 0, X, 0, 0};
    }();
    // the code bits of each axis (see the neighbour codes below)
    const std::uint32_t mx = axis_term(g, 0, g.mask[0]), my = axis_term(g, 1, g.mask[1]),
                        mz = D == 3 ? axis_term(g, D - 1, g.mask[D - 1]) : 0;
    const std::uint32_t* dir = g.dir.data();
    const std::uint32_t* bricks = g.bricks.data();
    // The lookups of a cell's forward neighbours (see below) are done kAhead
    // cells before the cell is tested, and their blocks fetched then: the
    // neighbours one brick up in z are a whole layer of bricks away in the
    // pool, and waiting for them was a sixth of the walk.
    constexpr std::size_t kAhead = 8;
    struct looked {
      std::array<std::uint32_t, kForward> first, counts;
      std::uint32_t visited;
    };
    std::array<looked, kAhead> ring;
    auto look = [&](std::size_t k, looked& out) {
      // The forward half of the neighbourhood: dz > 0, or dz == 0 and dy > 0,
      // or dz == dy == 0 and dx > 0. A code is a sum of independent per-axis
      // terms (disjoint bit fields), so the neighbour codes are sums of terms
      // computed once per cell.
      // Each axis owns fixed bits of the code, in order of significance, so a
      // neighbour's part of the code is the cell's part plus or minus one in
      // "dilated" arithmetic: the carry runs through the other axes' bits when
      // they are set to one first. Wrap-around modulo the cells per axis is the
      // mask. No decoding, no offset table.
      const std::uint32_t code = occ[order[k]].cell;
      const std::uint32_t x1 = code & mx, y1 = code & my;
      const std::uint32_t x0 = (x1 - 1) & mx, x2 = ((x1 | ~mx) + 1) & mx;
      const std::uint32_t y0 = (y1 - 1) & my, y2 = ((y1 | ~my) + 1) & my;
      std::array<std::uint32_t, kForward> codes;
      if constexpr (D == 2) {
        codes = {x2 | y1, x0 | y2, x1 | y2, x2 | y2};
      } else {
        const std::uint32_t z1 = code & mz, z2 = ((z1 | ~mz) + 1) & mz;
        codes = {x2 | y1 | z1, x0 | y2 | z1, x1 | y2 | z1, x2 | y2 | z1, x0 | y0 | z2,
                 x1 | y0 | z2, x0 | y1 | z2, x1 | y1 | z2, x2 | y0 | z2, x2 | y1 | z2,
                 x0 | y2 | z2, x1 | y2 | z2, x2 | y2 | z2};
      }
      // Lookups have no branches: an empty cell reads as count 0.
      std::uint32_t visited = 0;
      for (int t = 0; t < kForward; ++t) {
        const std::uint32_t r = bricks[(dir[codes[t] >> kLocalBits] << kLocalBits) | (codes[t] & kLocalMask)];
        const std::uint32_t hit = r != 0;
        const occupied_cell& nb = occ[r - hit];  // occ[0] when empty, masked
        out.counts[t] = nb.count & (0u - hit);
        out.first[t] = nb.block;
        __builtin_prefetch(pool + nb.block);
        visited += hit;
      }
      out.visited = visited;
    };
    for (std::size_t k = 0; k < kAhead && k < cells; ++k) look(k, ring[k]);
    for (std::size_t k = 0; k < cells; ++k) {
      // The walk is spatially sorted but blocks may sit anywhere in the pool
      // (until the next compaction): fetch records and blocks a little ahead.
      if (k + kAhead + 8 < cells) __builtin_prefetch(&occ[order[k + kAhead + 8]]);
      const occupied_cell& oc = occ[order[k]];
      const entry* cell = pool + oc.block;
      const std::uint32_t n = oc.count;
      ++cells_visited;
      // pairs inside the cell
      for (std::uint32_t i = 0; i + 1 < n; ++i) test_against(cell[i], cell + i + 1, n - i - 1, sink);
      // Gather the objects of the neighbours into one contiguous candidate
      // list, then test each object of the cell against all of it. A
      // neighbour that no object of this cell reaches counts 0, and a
      // neighbour's object without the reach it needs is overwritten by the
      // next one: at 1-3 objects per cell, branch mispredictions, more than
      // box tests, were the cost of the walk.
      looked& lk = ring[k % kAhead];
      std::uint32_t own_reach = 0;  // bit m: some object of the cell reaches the axes m
      for (std::uint32_t i = 0; i < n; ++i) own_reach |= subsets_of(cell[i].reach());
      std::array<std::uint32_t, kForward> first, counts;
      std::uint32_t total = 0;
      for (int t = 0; t < kForward; ++t) {
        counts[t] = lk.counts[t] & (0u - ((own_reach >> need_own[t]) & 1u));
        first[t] = lk.first[t];
        total += counts[t];
      }
      cells_visited += lk.visited;
      if (k + kAhead < cells) look(k + kAhead, lk);
      if (total != 0) {
        if (cand.size() < total) cand.resize(std::max<std::size_t>(total, 2 * cand.size()));
        entry* out = cand.data();
        std::array<std::uint32_t, kForward + 1> start;  // offset t's candidates: [start[t], start[t + 1])
        for (int t = 0; t < kForward; ++t) {
          start[t] = static_cast<std::uint32_t>(out - cand.data());
          const entry* src = pool + first[t];
          const std::uint32_t need = need_nb[t];
          for (std::uint32_t j = 0; j < counts[t]; ++j) {
            *out = src[j];
            out += (src[j].reach() & need) == need;
          }
        }
        total = static_cast<std::uint32_t>(out - cand.data());
        start[kForward] = total;
        const entry* cs = cand.data();
        if (n <= kFlat) {  // the usual 1-3 objects: one loop over all candidates
          box_tests += static_cast<std::uint64_t>(n) * total;
          handle_pair* const fb = found_room(sink, static_cast<std::size_t>(n) * total);  // as in detect_ordered
          char* to = reinterpret_cast<char*>(fb + found_fill);
          for (std::uint32_t i = 0; i < n; ++i) {
            const query qa(cell[i]);
            const std::uint64_t aid = id_word(cell[i]);
            for (std::uint32_t j = 0; j < total; ++j) {
              put_pair(to, aid, cs[j]);
              to += qa.hit_bytes(cs[j]);
            }
          }
          found_fill = static_cast<std::size_t>(reinterpret_cast<handle_pair*>(to) - fb);
        } else {  // a crowded cell: each object only against the offsets it reaches
          for (std::uint32_t i = 0; i < n; ++i) {
            const query qa(cell[i]);
            const std::uint32_t reach = cell[i].reach();
            for (std::size_t gi = 0; gi + 1 < groups.size(); ++gi) {
              const std::uint32_t need = need_own[groups[gi]];
              if ((reach & need) != need) continue;
              const std::uint32_t lo = start[groups[gi]], hi = start[groups[gi + 1]];
              box_tests += hi - lo;
              for (std::uint32_t j = lo; j < hi; ++j)
                if (qa.hits(cs[j])) [[unlikely]] sink(cell[i].user_handle(), cs[j].user_handle());
            }
          }
        }
      }
    }
    flush_found(sink);
  }

  // Every object of grid live_levels[li] against the coarser grid
  // live_levels[lj] (Algorithm 4's second part). The objects are visited in
  // the order of the cell of h that holds their min corner, so the lookups
  // and blocks of h are read in h's memory order: walking the finer grid in
  // its own order jumps around h, because grids have different numbers of
  // cells per axis and so alias space differently (measured at 10^6 objects
  // with sizes over a factor 12, together with the shared gathering below:
  // detection 556 -> 370 ms). The scratch is 16 bytes per object of the
  // finer grid, kept for the next detection.
  template <class Sink>
  void detect_across(std::size_t li, std::size_t lj, Sink& sink) {
    const grid& g = grids[live_levels[li]];
    const grid& h = grids[live_levels[lj]];
    across.clear();
    if (across.capacity() < g.objects) across.reserve(g.objects);
    for (const occupied_cell& oc : g.occupied)
      for (std::uint32_t j = 0; j < oc.count; ++j) {
        const std::uint32_t at = oc.block + j;
        across.push_back(std::uint64_t{cell_of(h, g.pool[at])} << 32 | at);
      }
    radix_sort(across, across_tmp, code_bits(h), [](std::uint64_t v) { return static_cast<std::uint32_t>(v >> 32); });
    // Objects whose min corner is in the same cell b of h (a group) share
    // the cells of h they can meet: per axis b - 1 and b, and b + 1 for an
    // object whose box reaches into it (its beyond mask). The cells are
    // looked up and gathered once per group, in segments by the axes on which
    // they lie at b + 1 (segment v: exactly the axes in v), only for the
    // segments some object of the group reaches, with the reach filter (an
    // object of h in cell b - 1 on an axis must reach into the next cell on
    // it). Each object is tested against the segments its own mask allows:
    // segment 0 (cells b - 1 .. b) always. Visiting the b + 1 cells object by
    // object instead, as before, looked each of them up again for every
    // object reaching it and waited for each lookup in turn.
    constexpr std::uint32_t kSubsets = 1u << D;
    constexpr std::uint32_t kAll = kSubsets - 1;
    const entry* pool = g.pool.data();
    const occupied_cell* occ = h.occupied.data();
    const entry* hpool = h.pool.data();
    const std::uint32_t* dir = h.dir.data();
    const std::uint32_t* bricks = h.bricks.data();
    std::array<std::uint32_t, D> am{};  // the code bits of each axis
    for (int i = 0; i < D; ++i) am[i] = axis_term(h, i, h.mask[i]);
    const std::size_t n = across.size();
    std::uint64_t* beyond = across_tmp.data();  // the beyond masks, by position in across (the sort's scratch is free)
    for (std::size_t k = 0; k < n;) {
      const std::uint32_t base = static_cast<std::uint32_t>(across[k] >> 32);
      std::size_t end = k + 1;
      while (end < n && static_cast<std::uint32_t>(across[end] >> 32) == base) ++end;
      std::uint32_t group_mask = 0;
      for (std::size_t j = k; j < end; ++j) {
        // the beyond mask is the object's reach in h: its min corner is in b
        beyond[j] = reach_of(h, pool[static_cast<std::uint32_t>(across[j])].box());
        group_mask |= static_cast<std::uint32_t>(beyond[j]);
      }
      // per axis the code terms of cells b - 1, b, b + 1 (dilated arithmetic, see detect_grid)
      std::array<std::array<std::uint32_t, 3>, D> term;
      for (int i = 0; i < D; ++i) {
        const std::uint32_t t1 = base & am[i];
        term[i] = {(t1 - 1) & am[i], t1, ((t1 | ~am[i]) + 1) & am[i]};
      }
      constexpr std::uint32_t kMaxCells = D == 3 ? 27 : 9;
      std::array<std::uint32_t, kMaxCells> first, counts, need;
      std::array<std::uint32_t, kSubsets + 1> cell_start{};  // the cells of segment v: [cell_start[v], cell_start[v + 1])
      std::uint32_t cells = 0, total = 0, visited = 0;
      for (std::uint32_t v = 0; v < kSubsets; ++v) {  // v: the axes at b + 1
        cell_start[v] = cells;
        if ((v & ~group_mask) != 0) continue;
        for (std::uint32_t c = 0; c < kSubsets; ++c) {  // c: of the other axes, those at b (not b - 1)
          if ((c & v) != 0) continue;
          std::uint32_t code = 0;
          for (int i = 0; i < D; ++i) code |= term[i][(v >> i) & 1u ? 2 : (c >> i) & 1u];
          const std::uint32_t r = bricks[(dir[code >> kLocalBits] << kLocalBits) | (code & kLocalMask)];
          const std::uint32_t hit = r != 0;
          const occupied_cell& nb = occ[r - hit];  // occ[0] when empty, masked
          counts[cells] = nb.count & (0u - hit);
          first[cells] = nb.block;
          need[cells] = ~(v | c) & kAll;
          total += counts[cells];
          visited += hit;
          ++cells;
        }
      }
      cell_start[kSubsets] = cells;
      cells_visited += visited;
      if (end - k == 1) {  // one object: tested in place, nothing to share
        if (k + 8 < n) __builtin_prefetch(pool + static_cast<std::uint32_t>(across[k + 8]));
        const entry& a = pool[static_cast<std::uint32_t>(across[k])];
        const query qa(a);
        box_tests += total;
        for (std::uint32_t cell = 0; cell < cells; ++cell) {
          const entry* src = hpool + first[cell];
          const std::uint32_t nd = need[cell];
          for (std::uint32_t j = 0; j < counts[cell]; ++j)
            if (qa.hits(src[j]) && (src[j].reach() & nd) == nd) [[unlikely]] sink(a.user_handle(), src[j].user_handle());
        }
        k = end;
        continue;
      }
      std::array<std::uint32_t, kSubsets + 1> start{};  // the candidates of segment v: [start[v], start[v + 1])
      if (total != 0) {
        if (cand.size() < total) cand.resize(std::max<std::size_t>(total, 2 * cand.size()));
        entry* out = cand.data();
        for (std::uint32_t v = 0; v < kSubsets; ++v) {
          start[v] = static_cast<std::uint32_t>(out - cand.data());
          for (std::uint32_t cell = cell_start[v]; cell < cell_start[v + 1]; ++cell) {
            const entry* src = hpool + first[cell];
            const std::uint32_t nd = need[cell];
            for (std::uint32_t j = 0; j < counts[cell]; ++j) {
              *out = src[j];
              out += (src[j].reach() & nd) == nd;
            }
          }
        }
        start[kSubsets] = static_cast<std::uint32_t>(out - cand.data());
      }
      const entry* cs = cand.data();
      for (std::size_t j = k; j < end; ++j) {
        if (j + 8 < n) __builtin_prefetch(pool + static_cast<std::uint32_t>(across[j + 8]));
        if (total == 0) continue;
        const entry& a = pool[static_cast<std::uint32_t>(across[j])];
        const std::uint32_t m = static_cast<std::uint32_t>(beyond[j]);
        const query qa(a);
        for (std::uint32_t v = 0; v < kSubsets; ++v) {
          if ((v & ~m) != 0) continue;
          const std::uint32_t lo = start[v], hi = start[v + 1];
          box_tests += hi - lo;
          for (std::uint32_t t = lo; t < hi; ++t)
            if (qa.hits(cs[t])) [[unlikely]] sink(a.user_handle(), cs[t].user_handle());
        }
      }
      k = end;
    }
  }

  // ---- bulk move -------------------------------------------------------------------
  // A batch that moves most of the grid objects at once (the usual time step
  // of a simulation) is applied by laying the grids out anew instead of
  // object by object: each object's cell is computed (a hash, as in
  // Algorithm 2), the objects are radix-sorted by cell, and each grid's pool,
  // occupied list and bricks are written in cell-code order, exactly the
  // layout a compaction leaves. The user's boxes are read in that order
  // (prefetched) and the pool is written sequentially, where moving object by
  // object writes every box to a random place in the pool and then needs a
  // compaction to restore the order detection walks in. The result is the
  // structure the moves one by one followed by a compaction would give.
  // Returns false, having changed nothing, when the batch does not qualify:
  // grids not active, a rebuild pending, fewer than kBulkMin moves or fewer
  // than half the grid objects, a handle twice, an object not in a grid or
  // leaving the grids (unbounded, too large, or of a size no grid exists for
  // yet). Those batches take the object-by-object path, which handles
  // everything. The handles and boxes are validated on the way (the first
  // pass reads them anyway): hs[0, checked) and bs[0, checked) are valid on
  // return, and the caller checks the rest, so the first bad one reports
  // its error before anything changed.
  static constexpr std::size_t kBulkMin = 4096;
  static constexpr std::size_t kBulkChangedRatio = 25;  // bulk when >= 1/25 changed cell last time
  std::size_t last_batch_changed = 0, last_batch_size = 0;  // objects that changed cell, moves
  struct bulk_key {
    std::uint32_t code;
    std::uint32_t src;  // position in the batch, or n + old pool position of an object the batch does not move
  };
  struct regrid_move {  // an object the batch moves to another grid
    std::uint32_t index, grid;
  };
  std::vector<regrid_move> regrid;
  std::vector<big_vector<bulk_key>> bulk_keys;  // per grid id
  big_vector<bulk_key> bulk_tmp;

  void release_bulk_scratch() noexcept {
    std::vector<big_vector<bulk_key>>().swap(bulk_keys);
    big_vector<bulk_key>().swap(bulk_tmp);
    std::vector<std::uint64_t>().swap(pending);
    std::vector<regrid_move>().swap(regrid);
  }

  bool bulk_move(std::span<const handle> hs, std::span<const box_t> bs, std::size_t& checked) {
    const std::size_t n = hs.size();
    checked = 0;
    if (!active || rebuild_pending || n < kBulkMin || n + slots.size() >= npos) return false;
    std::size_t in_grids = 0;
    for (const grid& g : grids) {
      in_grids += g.objects;
      if (n + g.pool.size() >= npos) return false;  // (bulk_key::src)
    }
    if (2 * n < in_grids) return false;
    // When few objects changed cell in the last batch, moving them one by one
    // is cheaper (measured at 10^6 objects: 1 % of the size per step, one
    // by one 194 against 221 ns per object per step; 20 %, with ~10 % of the
    // objects changing cell, 256 against 214).
    if (last_batch_changed * kBulkChangedRatio < last_batch_size) return false;
    // Objects that changed grid or cell (for the choice above): counted in
    // step 1 when the slots' cells are up to date, else estimated in step 3
    // from the cells' counts before and after.
    std::size_t changed = 0;
    const bool slots_fresh = !stale_slots.on.load(std::memory_order_relaxed);
    // Whether hs[i] == {i, g0} for every i (the batch names slots 0..n-1 in
    // order, all of one generation: a structure filled once and moved as a
    // whole, the usual case in particle codes). Step 3 then makes the
    // handles without reading hs, one scattered read less per object
    // (measured at 10^6: 50 -> 44 ms).
    bool in_slot_order = true;
    const std::uint32_t g0 = hs[0].generation;
    // Everything is allocated in steps 1 and 2: std::bad_alloc there
    // propagates with nothing changed.
    std::vector<layout> plans;
    std::vector<char> reuse;  // per grid: write into its own pool (every object of it moves)
    std::vector<std::size_t> moved(grids.size(), 0);  // per grid: its objects the batch moves
    std::vector<std::size_t> pool_size(grids.size(), 0);  // per grid: its new pool's entries
    {
      pending.assign((slots.size() + 63) / 64, 0);  // the slots the batch moves
      regrid.clear();
      bulk_keys.resize(grids.size());
      for (std::size_t id = 0; id < grids.size(); ++id) {
        bulk_keys[id].clear();
        bulk_keys[id].reserve(grids[id].objects);
      }
      // 1. every moved object's grid and cell (nothing changes yet)
      for (std::size_t i = 0; i < n; ++i) {
        checked = i;
        // the hardware prefetcher falls behind on the boxes, read in order
        // (measured at 10^6 objects: this loop 24 -> 13 ms); a prefetch
        // never faults, and bs.data() + n is a valid address
        const char* ahead = reinterpret_cast<const char*>(bs.data() + std::min(i + 32, n));
        __builtin_prefetch(ahead);
        __builtin_prefetch(ahead + sizeof(box_t) - 1);
        if (!live(hs[i])) return false;
        in_slot_order &= hs[i].index == i && hs[i].generation == g0;
        const box_t& b = bs[i];
        bool valid = true;  // false for NaN too
        for (int a = 0; a < D; ++a) valid &= b.min[a] <= b.max[a];
        if (!valid) return false;
        const std::uint32_t idx = hs[i].index;
        std::uint64_t& word = pending[idx >> 6];
        const std::uint64_t bit = std::uint64_t{1} << (idx & 63);
        if (word & bit) return false;  // moved twice: in order, one by one
        word |= bit;
        const std::uint32_t place = slots[idx].place();
        if (place >= kMaxGrids) return false;
        const double eff = effective_size(b);
        if (std::isinf(eff)) return false;  // (also every box with an infinite coordinate)
        std::uint32_t gid = place;
        ++moved[place];
        if (!fits(grids[gid], eff)) {
          gid = existing_grid(eff);
          if (gid == npos) return false;  // a new level: one by one (nothing changes before validation)
        }
        const std::uint32_t code = cell_of(grids[gid], b);
        if (gid != place) {
          regrid.push_back({idx, gid});
          ++changed;
        } else if (slots_fresh) {
          changed += code != slots[idx].cell;
        }
        bulk_keys[gid].push_back({code, static_cast<std::uint32_t>(i)});
      }
      checked = n;
      // the objects the batch does not move keep their grid and cell (and
      // are copied from their grid's old pool in step 3)
      for (std::size_t id = 0; id < grids.size(); ++id) {
        if (moved[id] == grids[id].objects) continue;
        for (const occupied_cell& oc : grids[id].occupied)
          for (std::uint32_t j = 0; j < oc.count; ++j) {
            const std::uint32_t idx = grids[id].pool[oc.block + j].id.index;
            if (!((pending[idx >> 6] >> (idx & 63)) & 1u))
              bulk_keys[id].push_back({oc.cell, static_cast<std::uint32_t>(n + oc.block + j)});
          }
      }
      // 2. sort each grid's objects by cell; size and allocate its new storage
      plans.resize(grids.size());
      reuse.assign(grids.size(), 0);
      for (std::size_t id = 0; id < grids.size(); ++id) {
        const grid& g = grids[id];
        auto& keys = bulk_keys[id];
        const auto code = [](const bulk_key& k) { return k.code; };
        if (code_bits(g) <= 24) radix_sort<std::remove_reference_t<decltype(keys)>, decltype(code), 12>(keys, bulk_tmp, code_bits(g), code);
        else radix_sort(keys, bulk_tmp, code_bits(g), code);
        std::size_t total = 0, cells = 0, nbricks = 0;
        for (std::size_t k = 0; k < keys.size();) {
          std::size_t e = k + 1;
          while (e < keys.size() && code(keys[e]) == code(keys[k])) ++e;
          total += class_capacity(std::max(base_class, class_for(static_cast<std::uint32_t>(e - k))));
          ++cells;
          if (k == 0 || (code(keys[k]) >> kLocalBits) != (code(keys[k - 1]) >> kLocalBits)) ++nbricks;
          k = e;
        }
        if (total > npos) return false;
        pool_size[id] = total;
        // A grid whose objects all move is not read as a source: its own
        // pool is written in place (no fresh memory to fault in), unless it
        // is far larger than needed (the growth of crowded cells may have
        // left one twice the size).
        reuse[id] = moved[id] == g.objects && g.pool.capacity() >= total && g.pool.capacity() <= total + total / 8;
        plans[id].reserve(std::max(cells, g.occupied.capacity() / 2), reuse[id] ? 0 : total + total / 16, nbricks);
      }
    }
    // 3. write the new storage (nothing below allocates); the old pools are
    // read for the objects the batch does not move, and stay until all grids
    // are written. The slots are not written (see stale_slots).
    for (std::size_t id = 0; id < grids.size(); ++id) {
      grid& g = grids[id];
      layout& p = plans[id];
      const auto& keys = bulk_keys[id];
      const std::size_t m = keys.size();
      // the estimate of `changed`: the cells' object counts, old (g.occupied,
      // in code order after a bulk move or a compaction) against new
      std::size_t diff = 0, oi = 0;
      const std::vector<occupied_cell>& old = g.occupied;
      if (reuse[id]) p.pool.swap(g.pool);
      p.pool.clear();
      p.pool.resize(pool_size[id]);  // within the capacity reserved in step 2; written below
      entry* const out = p.pool.data();
      std::uint32_t w = 0;
      std::fill(g.dir.begin(), g.dir.end(), 0u);
      for (std::size_t k = 0; k < m;) {
        const std::uint32_t code = keys[k].code;
        std::size_t e = k + 1;
        while (e < m && keys[e].code == code) ++e;
        const std::uint32_t here = static_cast<std::uint32_t>(e - k);
        const int klass = std::max(base_class, class_for(here));
        const std::uint32_t block = w;
        if (!slots_fresh) {
          while (oi < old.size() && old[oi].cell < code) diff += old[oi++].count;
          if (oi < old.size() && old[oi].cell == code) {
            diff += here > old[oi].count ? here - old[oi].count : old[oi].count - here;
            ++oi;
          } else {
            diff += here;
          }
        }
        for (; k < e; ++k, ++w) {
          // the handles and boxes are scattered: the handles are fetched
          // 32 objects ahead, the boxes 16
          if (!in_slot_order && k + 32 < m && keys[k + 32].src < n) __builtin_prefetch(&hs[keys[k + 32].src]);
          if (k + 16 < m) {
            const std::uint32_t src = keys[k + 16].src;
            if (src < n) {
              __builtin_prefetch(&bs[src]);
              __builtin_prefetch(reinterpret_cast<const char*>(&bs[src] + 1) - 1);
            }
          }
          const std::uint32_t src = keys[k].src;
          if (src < n) {
            entry en = entry::make(bs[src], in_slot_order ? handle{src, g0} : hs[src]);
            en.set_reach(reach_in(g, code, bs[src]));
            // (plain stores: the pool then stays in cache for the
            // detection that follows; streaming stores, which skip reading
            // the lines first, cost 3-6 ms more a step at 10^6 objects)
            out[w] = en;
          } else {
            out[w] = g.pool[src - n];  // (not reused: some of its objects stay)
          }
        }
        for (const std::uint32_t end = block + class_capacity(klass); w < end; ++w) out[w] = sentinel();  // free room
        p.record_cell(g, code, block, here, klass);
      }
      for (; oi < old.size() && !slots_fresh; ++oi) diff += old[oi].count;
      changed += diff / 2;
    }
    for (const regrid_move& r : regrid) slots[r.index].set_place(r.grid);
    stale_slots.on.store(true, std::memory_order_relaxed);
    for (std::size_t id = 0; id < grids.size(); ++id) {
      install(grids[id], plans[id]);
      grids[id].objects = bulk_keys[id].size();
    }
    last_batch_changed = changed;
    last_batch_size = n;
    // A grid that gained objects past its density grows now (section 3.4;
    // maybe_grow rehashes it). The moves are done: if memory runs out here,
    // the grid stays as it is, correct but denser, and grows at its next
    // insertion.
    for (std::size_t id = 0; id < grids.size(); ++id) {
      try {
        for (std::uint64_t cells = 0; cells != grids[id].cell_count();) {
          cells = grids[id].cell_count();
          maybe_grow(static_cast<std::uint32_t>(id), 0);
        }
      } catch (const std::bad_alloc&) {
      }
    }
    return true;
  }

  // ---- accounting ------------------------------------------------------------------
  std::size_t grid_bytes(const grid& g) const {
    std::size_t b = sizeof(grid) + capacity_bytes(g.dir) + capacity_bytes(g.bricks) +
                    capacity_bytes(g.brick_fill) + capacity_bytes(g.free_bricks) +
                    capacity_bytes(g.occupied) + capacity_bytes(g.pool);
    for (const auto& fl : g.free_blocks) b += capacity_bytes(fl);
    return b;
  }

  std::size_t total_bytes() const {
    std::size_t b = sizeof(*this) + capacity_bytes(grids) + capacity_bytes(levels) + capacity_bytes(list) +
                    capacity_bytes(apart) + capacity_bytes(slots) + capacity_bytes(order) +
                    capacity_bytes(order_tmp) + capacity_bytes(across) + capacity_bytes(across_tmp) + capacity_bytes(live_levels) + capacity_bytes(tmp) + capacity_bytes(deferred) + capacity_bytes(deferred_tmp) + capacity_bytes(pending) +
                    capacity_bytes(cand) + capacity_bytes(found) +
                    capacity_bytes(gathered) + capacity_bytes(row_pos) + capacity_bytes(rows) +
                    capacity_bytes(displaced_cells);
    for (const grid& g : grids) b += grid_bytes(g) - sizeof(grid);
    return b;
  }

  [[noreturn]] static void broken(const std::string& what) {
    throw std::logic_error("hhg: hash_grids invariant broken: " + what);
  }

  void validate() const;
};

}  // namespace detail
}  // namespace hhg
