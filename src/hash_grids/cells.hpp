// Cells and cell codes: what an object is (entry), what a test is (query),
// where a handle's object lives (slot), a grid and its cells, and the
// functions that turn a box into a cell code and its reach.
#pragma once

#include "hash_grids/base.hpp"

namespace hhg {
namespace detail {

template <int D, class T>
struct grid_types {
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
    // (one copy of the SSE compare: hit_bytes below)
    bool hits(const entry& b) const {
#if defined(__SSE2__)
      if constexpr (kLoads) return hit_bytes(load(b)) != 0;
#endif
      bool r = true;
      for (int k = 0; k < 2 * D; ++k) r &= b.p[k] <= q[k];
      return r;
    }
    // A stored entry read once for the tests of several queries, and before
    // any pair is written: the pairs are stored through char*, which may
    // alias the entry, so an entry read through its reference was read again
    // after every pair (test_cell: Terdiman's 10^4 one-shot 8-16 % faster
    // with the coordinates in registers). With SSE2 in registers (the
    // vectors hit_bytes compares); otherwise the entry itself.
#if defined(__SSE2__)
    static constexpr bool kDouble = std::is_same_v<T, double>;
    static constexpr bool kLoads = kDouble || std::is_same_v<T, float>;
    struct loaded_pd {
      __m128d v[D];
    };
    struct loaded_ps {
      __m128 v[D - 1];  // lanes 0-3, and 2-5 in 3D
    };
#else
    static constexpr bool kDouble = false, kLoads = false;
    struct loaded_pd {};
    struct loaded_ps {};
#endif
    struct loaded_ref {
      const entry* e;
    };
    using loaded = std::conditional_t<kDouble, loaded_pd, std::conditional_t<kLoads, loaded_ps, loaded_ref>>;
    static loaded load(const entry& b) {
      loaded l;
#if defined(__SSE2__)
      if constexpr (kDouble) {
        for (int k = 0; k < D; ++k) l.v[k] = _mm_loadu_pd(b.p.data() + 2 * k);
        return l;
      } else if constexpr (kLoads) {
        for (int k = 0; k < D - 1; ++k) l.v[k] = _mm_loadu_ps(b.p.data() + 2 * k);
        return l;
      }
#endif
      if constexpr (!kLoads) l.e = &b;
      return l;
    }
    // hits as 0 or sizeof(handle_pair), for advancing an output pointer
    // without a branch (in two instructions from the SSE mask)
    std::size_t hit_bytes(const loaded& b) const {
      static_assert(sizeof(handle_pair) == 16);
#if defined(__SSE2__)
      if constexpr (kDouble) {
        __m128d r = _mm_cmple_pd(b.v[0], _mm_load_pd(q.data()));
        for (int k = 1; k < D; ++k) r = _mm_and_pd(r, _mm_cmple_pd(b.v[k], _mm_load_pd(q.data() + 2 * k)));
        const auto m = static_cast<std::size_t>(_mm_movemask_pd(r));  // 3: a hit
        return ((m + 1) << 2) & 16;
      } else if constexpr (kLoads) {
        __m128 r = _mm_cmple_ps(b.v[0], _mm_loadu_ps(q.data()));
        if constexpr (D == 3) r = _mm_and_ps(r, _mm_cmple_ps(b.v[1], _mm_loadu_ps(q.data() + 2)));
        const auto m = static_cast<std::size_t>(_mm_movemask_ps(r));  // 15: a hit
        return (m + 1) & 16;
      } else
#endif
        return hits(*b.e) ? 16 : 0;
    }
    std::size_t hit_bytes(const entry& b) const { return hit_bytes(load(b)); }
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
    // Per axis, the inverse cell edge: axis_scale[i] / cell_size (the
    // structure's scales, see effective_size; powers of two, so a cell index
    // floor(v * inv[i]) is exactly that of the scaled coordinate).
    std::array<double, D> inv{};
    std::array<std::uint32_t, D> bits{};
    std::array<std::uint32_t, D> mask{};
    big_vector<std::uint32_t> dir;
    big_vector<std::uint32_t> bricks;  // brick id k at (k + 1) << kLocalBits; [0, 4^D): the empty brick
    std::vector<std::uint32_t> brick_fill;
    std::vector<std::uint32_t> free_bricks;
    big_vector<occupied_cell> occupied;
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
    // The last detection sent this ordered grid to the lookup walk for its
    // rows (too few cells a row, or most in searched rows): later ones do
    // so at once, without splitting off displaced cells and counting rows
    // again, until the next layout (a hint: install and reset_grid clear it).
    bool sparse_rows = false;

    std::uint64_t cell_count() const {
      std::uint32_t s = 0;
      for (int i = 0; i < D; ++i) s += bits[i];
      return std::uint64_t{1} << s;
    }
  };

  // ---- geometry ---------------------------------------------------------------
  // Per axis, a power of two >= 1 that the structure multiplies coordinates by
  // before it places them in cells (chosen per activating batch, see
  // level_choice::axis_scale_for; all 1 unless the objects are longer on some
  // axes than on others). A grid's cells are then cell_size / scale[i] long
  // on axis i, and everything in cells (levels, reach, the walks across
  // grids) holds for the scaled boxes exactly: scaling by a power of two is
  // exact and keeps the order of coordinates, so scaled boxes overlap when
  // the boxes do. The tests compare the boxes themselves.
  using scale_t = std::array<double, D>;
  static constexpr scale_t unit_scale() {
    scale_t s{};
    for (double& v : s) v = 1;
    return s;
  }

  // The size that picks an object's level: its longest scaled edge, or the
  // precision floor of its scaled coordinates. Returns +inf for objects that
  // must be kept apart.
  [[gnu::always_inline]] static double effective_size(const box_t& b, const scale_t& scale) {
    double edge = 0, mag = 0;
#if defined(__SSE2__)
    if constexpr (std::is_same_v<T, double>) {
      // The same products and maxima, two axes a vector (the bulk move's
      // pass 1 takes this for every object). Equal to the loop below for
      // every box without NaN (the callers check the boxes first): the max of
      // numbers does not depend on the order, and an infinite coordinate,
      // which may give a NaN edge here (inf - inf), is infinite in mag, so
      // both return +inf (the NaN fails the test below).
      const __m128d abs = _mm_castsi128_pd(_mm_set1_epi64x(0x7FFFFFFFFFFFFFFF));
      const __m128d lo = _mm_loadu_pd(b.min.data()), hi = _mm_loadu_pd(b.max.data());
      const __m128d sc = _mm_loadu_pd(scale.data());
      __m128d e = _mm_mul_pd(_mm_sub_pd(hi, lo), sc);
      __m128d m = _mm_mul_pd(_mm_max_pd(_mm_and_pd(lo, abs), _mm_and_pd(hi, abs)), sc);
      if constexpr (D == 3) {
        const __m128d lo2 = _mm_load_sd(&b.min[2]), hi2 = _mm_load_sd(&b.max[2]), sc2 = _mm_load_sd(&scale[2]);
        const __m128d e2 = _mm_mul_sd(_mm_sub_sd(hi2, lo2), sc2);
        const __m128d m2 = _mm_mul_sd(_mm_max_sd(_mm_and_pd(lo2, abs), _mm_and_pd(hi2, abs)), sc2);
        e = _mm_max_sd(e, e2);
        m = _mm_max_sd(m, m2);
      }
      edge = _mm_cvtsd_f64(_mm_max_sd(e, _mm_unpackhi_pd(e, e)));
      mag = _mm_cvtsd_f64(_mm_max_sd(m, _mm_unpackhi_pd(m, m)));
    } else
#endif
      for (int i = 0; i < D; ++i) {
        const double lo = b.min[i], hi = b.max[i];
        edge = std::max(edge, (hi - lo) * scale[i]);
        mag = std::max(mag, std::max(std::fabs(lo), std::fabs(hi)) * scale[i]);
      }
    constexpr double pq = 1.0 / static_cast<double>(std::uint64_t{1} << q);  // 2^-q, exact
    double eff = std::max(edge, mag * pq) * (1.0 + 0x1p-9);
    if (!(eff <= 0x1p900)) return std::numeric_limits<double>::infinity();
    // A floor for tiny (subnormal) sizes: a cell below 2^-900 would make the
    // inverse cell size overflow to +inf and every cell index undefined. Only
    // the exact all-zero box keeps eff 0 (it fits any grid).
    if (eff > 0 && eff < 0x1p-900) eff = 0x1p-900;
    return eff;
  }

  [[gnu::always_inline]] static std::uint32_t coord(const grid& g, int axis, T v) {
    return static_cast<std::uint32_t>(floor_to_int(static_cast<double>(v) * g.inv[axis])) & g.mask[axis];
  }

  // Row-major: x in the low bits, then y, then z. A row of cells along x is
  // a run of consecutive codes, so a grid laid out in code order (compact,
  // bulk_move) keeps each row's objects together, sorted by x (detect_grid
  // walks rows). The brick directory covers runs of kBrickCells codes.
  template <class G>
  [[gnu::always_inline]] static std::uint32_t encode(const G& g, const std::array<std::uint32_t, D>& c) {
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

  // The cell code of a box (its min corner's cell) and, when Reach, its reach
  // bits (entry::reach: the max corner in the next cell, per axis), for a box
  // that fits g. With SSE2 the double products and floors go two axes a
  // vector: v + 1.5 * 2^52 holds v rounded to an integer in its low bits
  // (two's complement, for |v| < 2^51, in any rounding mode), and one is
  // taken off where that rounded up. A box that fits g (effective_size <
  // cell_size) lies within 2^41 cells of the origin, so these are coord's
  // floors exactly (tests/test_cell_math.cpp compares them). The bulk move
  // places every object with them: 10^6 objects of `varied`, its pass 1
  // 21 -> 16 ms a step.
  template <bool Reach, class G>
  [[gnu::always_inline]] static std::uint32_t cell_and_reach_of(const G& g, const box_t& b, std::uint32_t& reach) {
    std::array<std::uint32_t, D> c{};
    std::uint32_t r = 0;
#if defined(__SSE2__)
    if constexpr (std::is_same_v<T, double>) {
      const auto floors = [](__m128d v) {  // (the low 32 bits of each lane)
        const __m128d magic = _mm_set1_pd(0x1.8p52);
        const __m128d big = _mm_add_pd(v, magic);
        const __m128d up = _mm_cmpgt_pd(_mm_sub_pd(big, magic), v);
        return _mm_add_epi32(_mm_castpd_si128(big), _mm_castpd_si128(up));
      };
      const __m128d inv = _mm_loadu_pd(g.inv.data());
      const __m128i lo = floors(_mm_mul_pd(_mm_loadu_pd(b.min.data()), inv));
      c[0] = static_cast<std::uint32_t>(_mm_cvtsi128_si32(lo)) & g.mask[0];
      c[1] = static_cast<std::uint32_t>(_mm_cvtsi128_si32(_mm_shuffle_epi32(lo, 2))) & g.mask[1];
      if constexpr (Reach) {
        const __m128i hi = floors(_mm_mul_pd(_mm_loadu_pd(b.max.data()), inv));
        // 32-bit lanes 0 and 2 (x, y): equal floors set mask bits 0 and 2
        const auto same = static_cast<std::uint32_t>(_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(lo, hi))));
        r = (~same & 1u) | (~same >> 1 & 2u);
      }
      if constexpr (D == 3) {
        const __m128d inv2 = _mm_load_sd(&g.inv[2]);
        const __m128i lo2 = floors(_mm_mul_sd(_mm_load_sd(&b.min[2]), inv2));
        c[2] = static_cast<std::uint32_t>(_mm_cvtsi128_si32(lo2)) & g.mask[2];
        if constexpr (Reach) {
          const __m128i hi2 = floors(_mm_mul_sd(_mm_load_sd(&b.max[2]), inv2));
          r |= static_cast<std::uint32_t>(_mm_cvtsi128_si32(lo2) != _mm_cvtsi128_si32(hi2)) << 2;
        }
      }
      reach = r;
      return encode(g, c);
    }
#endif
    for (int i = 0; i < D; ++i) {
      const std::int64_t lo = floor_to_int(static_cast<double>(b.min[i]) * g.inv[i]);
      c[i] = static_cast<std::uint32_t>(lo) & g.mask[i];
      if constexpr (Reach)
        r |= static_cast<std::uint32_t>(floor_to_int(static_cast<double>(b.max[i]) * g.inv[i]) != lo) << i;
    }
    reach = r;
    return encode(g, c);
  }
  [[gnu::always_inline]] static std::uint32_t cell_of(const grid& g, const box_t& b) {
    std::uint32_t none;
    return cell_and_reach_of<false>(g, b, none);
  }
  static std::uint32_t cell_of(const grid& g, const entry& e) {
    std::array<std::uint32_t, D> c{};
    for (int i = 0; i < D; ++i) c[i] = coord(g, i, e.min(i));
    return encode(g, c);
  }
  // cell_of and reach_of at once (the floors of the min corner are shared).
  static std::uint32_t cell_and_reach(const grid& g, const box_t& b, std::uint32_t& reach) {
    return cell_and_reach_of<true>(g, b, reach);
  }
  // The reach bits of a box in grid g (see entry::reach).
  static std::uint32_t reach_of(const grid& g, const box_t& b) {
    std::uint32_t r = 0;
    for (int i = 0; i < D; ++i) {
      const bool out = floor_to_int(static_cast<double>(b.max[i]) * g.inv[i]) !=
                       floor_to_int(static_cast<double>(b.min[i]) * g.inv[i]);
      r |= static_cast<std::uint32_t>(out) << i;
    }
    return r;
  }

  // Bit m set for every subset m of the axes in r (r < 2^D). A table: the
  // walks take it for every object of every cell, where the loop cost ~30
  // instructions a call (2 % of Terdiman's 10^4 one-shot).
  static constexpr std::array<std::uint32_t, 1u << D> kSubsetsOf = [] {
    std::array<std::uint32_t, 1u << D> t{};
    for (std::uint32_t r = 0; r < (1u << D); ++r)
      for (std::uint32_t m = 0; m < (1u << D); ++m)
        if ((r & m) == m) t[r] |= 1u << m;
    return t;
  }();
  static std::uint32_t subsets_of(std::uint32_t r) { return kSubsetsOf[r & ((1u << D) - 1)]; }

  // occupied index + 1, or 0
  static std::uint32_t lookup(const grid& g, std::uint32_t code) {
    // dir 0 selects the empty brick at the front of `bricks`: no branch
    return g.bricks[(g.dir[code >> kLocalBits] << kLocalBits) | (code & kLocalMask)];
  }
  static bool fits(const grid& g, double eff) { return eff < g.cell_size && (eff >= g.lower || eff <= 0); }

  static std::uint32_t code_bits(const grid& g) {
    std::uint32_t bits = 0;
    for (int i = 0; i < D; ++i) bits += g.bits[i];
    return bits;
  }

  // ---- layout in cell order (compact, bulk_move) ----------------------------------
  // A grid's new storage, written cell by cell in cell-code order: each cell's
  // objects are appended to the pool, then close_cell adds its free room,
  // its record and its brick. reserve allocates all of it up front, so that
  // the writing allocates nothing; install swaps it in.
  struct layout {
    big_vector<occupied_cell> occupied;
    big_vector<entry> pool;
    big_vector<std::uint32_t> bricks;
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
    g.sparse_rows = false;
  }

  // The indices of g's occupied cells in code order, into `order` (tmp:
  // radix sort scratch). Returns false, leaving order empty, when the
  // occupied list is in code order already (as after a compaction or a bulk
  // move).
  static bool sort_cells(const grid& g, std::vector<std::uint32_t>& order, std::vector<std::uint32_t>& tmp) {
    const std::size_t n = g.occupied.size();
    order.clear();
    bool sorted = true;
    for (std::size_t i = 1; i < n && sorted; ++i) sorted = g.occupied[i - 1].cell < g.occupied[i].cell;
    if (sorted) return false;
    order.resize(n);
    for (std::size_t i = 0; i < n; ++i) order[i] = static_cast<std::uint32_t>(i);
    if (n < 64) {
      std::sort(order.begin(), order.end(),
                [&](std::uint32_t a, std::uint32_t b) { return g.occupied[a].cell < g.occupied[b].cell; });
    } else {
      radix_sort(order, tmp, code_bits(g), [&](std::uint32_t o) { return g.occupied[o].cell; });
    }
    return true;
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
};

}  // namespace detail
}  // namespace hhg
