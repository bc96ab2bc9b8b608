// The detection kernel: one worker's scratch and the box tests every walk
// shares. A test compares an object's query (its box, prepared once) with a
// stored entry in a few SIMD instructions (cells.hpp, query). The walks
// write a candidate pair for every test and keep it when the boxes overlap
// (no branch on the outcome) into a batch (`found`), which is handed to the
// sink 256 pairs at a time. Per worker: the candidates gathered for a cell,
// the batch, and the counters (summed after the detection).
#pragma once

#include "hash_grids/state.hpp"

namespace hhg {
namespace detail {

template <int D, class T>
struct alignas(64) detect_worker {  // (own cache lines: workers count every test)
  using types = grid_types<D, T>;
  using entry = typename types::entry;
  using query = typename types::query;

  std::vector<entry> cand;              // unordered and across walks: gathered neighbour objects
  std::vector<std::uint32_t> gathered;  // ordered walk: a cell's candidates (byte offsets into the pool)
  std::vector<handle_pair> found;       // the batch: [0, found_fill) are pairs of entry ids (reach bits still in)
  std::size_t found_fill = 0;
  std::uint64_t box_tests = 0, cells_visited = 0, cells_flat = 0, cells_crowded = 0, cells_grouped = 0;

  static constexpr std::size_t kFoundBatch = 256;  // 4 KB: no measurable cost against 1024

  std::size_t bytes() const { return capacity_bytes(cand) + capacity_bytes(gathered) + capacity_bytes(found); }
  void reset_counters() { box_tests = cells_visited = cells_flat = cells_crowded = cells_grouped = 0; }

  template <class Sink>
  void test_against(const entry& a, const entry* first, std::uint32_t n, Sink& sink) {
    box_tests += n;
    const query qa(a);
    for (std::uint32_t j = 0; j < n; ++j) {
      if (qa.hits(first[j])) [[unlikely]]
        sink(a.user_handle(), first[j].user_handle());
    }
  }

  void start_found() {
    if (found.size() < kFoundBatch) found.resize(kFoundBatch);
    found_fill = 0;
  }
  // Where the next pair goes, with room for `most` after it (the batch is
  // flushed first if need be).
  template <class Sink>
  handle_pair* found_room(Sink& sink, std::size_t most) {
    if (found_fill + most > found.size()) {
      flush_found(sink);
      if (most > found.size()) found.resize(most);
    }
    return found.data();
  }
  template <class Sink>
  void flush_found(Sink& sink) {
    const std::size_t k = found_fill;
    found_fill = 0;  // (first: a throwing sink leaves the batch empty)
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

  // An entry's id as one word, and the pair (a's id, b's id) written as two
  // (with the reach bits: flush_found clears them). Whole words: two plain
  // stores a test.
  static std::uint64_t id_word(const entry& e) {
    std::uint64_t w;
    std::memcpy(&w, &e.id, sizeof w);
    return w;
  }
  static void put_pair(char* to, std::uint64_t aid, std::uint64_t bid) {
    std::memcpy(to, &aid, sizeof aid);
    std::memcpy(to + sizeof aid, &bid, sizeof bid);
  }

  // The tests of a cell of N objects (cell[0, N); ix[0, N) is not read):
  // among themselves, then against the candidates ix[N, total) (byte offsets
  // from base), each loaded once and tested against the N objects, whose
  // queries stay in registers. One loop a cell, where a loop per object ended
  // in a mispredicted branch per object. Every test writes its pair at `to`;
  // a hit advances `to` past it. Returns the new `to`.
  // The loops over the N queries are unrolled by pragma: g++ 12 unrolls them
  // completely at -O3 (its -fpeel-loops) but not at -O2, and the queries then
  // no longer stay in registers (detection 1.2x slower at -O2, stop 78).
  template <std::uint32_t N>
  static char* test_cell(const entry* cell, const char* base, const std::uint32_t* ix, std::uint32_t total, char* to) {
    static_assert(N >= 1 && N <= 4, "the pragmas unroll 4 iterations");
    std::array<query, N> qs;
    std::array<std::uint64_t, N> ids;
#pragma GCC unroll 4
    for (std::uint32_t i = 0; i < N; ++i) {
      qs[i] = query(cell[i]);
      ids[i] = id_word(cell[i]);
    }
#pragma GCC unroll 4
    for (std::uint32_t i = 0; i < N; ++i)
#pragma GCC unroll 4
      for (std::uint32_t j = i + 1; j < N; ++j) {
        const std::size_t hit = qs[i].hit_bytes(cell[j]);
        put_pair(to, ids[i], ids[j]);
        to += hit;
      }
    for (std::uint32_t j = N; j < total; ++j) {
      const entry& b = *reinterpret_cast<const entry*>(base + ix[j]);
      const auto lb = query::load(b);  // (read once, before any pair is written)
      const std::uint64_t bid = id_word(b);
#pragma GCC unroll 4
      for (std::uint32_t i = 0; i < N; ++i) {
        const std::size_t hit = qs[i].hit_bytes(lb);
        put_pair(to, ids[i], bid);
        to += hit;
      }
    }
    return to;
  }

  // Every object of cell[0, n) against cs[0, total), without branches on the
  // outcome (the unordered walk's flat cells).
  template <class Sink>
  void test_flat(const entry* cell, std::uint32_t n, const entry* cs, std::uint32_t total, Sink& sink) {
    box_tests += static_cast<std::uint64_t>(n) * total;
    handle_pair* const fb = found_room(sink, static_cast<std::size_t>(n) * total);
    char* to = reinterpret_cast<char*>(fb + found_fill);
    for (std::uint32_t i = 0; i < n; ++i) {
      const query qa(cell[i]);
      const std::uint64_t aid = id_word(cell[i]);
      for (std::uint32_t j = 0; j < total; ++j) {
        const std::size_t hit = qa.hit_bytes(cs[j]);  // (cs[j] read before the pair is written)
        put_pair(to, aid, id_word(cs[j]));
        to += hit;
      }
    }
    found_fill = static_cast<std::size_t>(reinterpret_cast<handle_pair*>(to) - fb);
  }

  // The ordered walk's candidates: the byte offsets of pool entries
  // [first, first + len) at out (sixteen are written whatever len is: out
  // has room), and out advanced past them. Sixteen, not eight: a stretch
  // of three cells holds about eight objects at 10^6 `varied`, so the loop
  // after eight ran about every other call and its exit was mispredicted
  // (10^6, one process, two structures stepped alternately: `varied` step
  // 0.93-0.98x, `coherent` 0.96x; `equal` and `sparse` unchanged).
  static void gather_offsets(std::uint32_t*& out, std::uint32_t first, std::uint32_t len) {
    constexpr auto e = static_cast<std::uint32_t>(sizeof(entry));
    const std::uint32_t lo = first * e;
#if defined(__SSE2__)
    const __m128i l = _mm_set1_epi32(static_cast<int>(lo));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm_add_epi32(l, _mm_setr_epi32(0, e, 2 * e, 3 * e)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 4), _mm_add_epi32(l, _mm_setr_epi32(4 * e, 5 * e, 6 * e, 7 * e)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 8),
                     _mm_add_epi32(l, _mm_setr_epi32(8 * e, 9 * e, 10 * e, 11 * e)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 12),
                     _mm_add_epi32(l, _mm_setr_epi32(12 * e, 13 * e, 14 * e, 15 * e)));
    for (std::uint32_t j = 16; j < len; ++j) out[j] = lo + j * e;
#else
    for (std::uint32_t j = 0; j < len; ++j) out[j] = lo + j * e;
#endif
    out += len;
  }
};

}  // namespace detail
}  // namespace hhg
