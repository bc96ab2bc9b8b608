// Work on the executor: chunks run in parallel when the executor has more
// than one worker, else in order on the calling thread; and a stable radix
// sort whose passes run in chunks (the same result as the serial sort).
#pragma once

#include "hash_grids/base.hpp"

namespace hhg {
namespace detail {

// Runs fn(c) for every chunk c in [0, chunks): on the executor when it has
// more than one worker, else here, in order. Chunks never share output.
template <class F>
void run_chunks(executor* exec, std::size_t chunks, F&& fn) {
  if (exec != nullptr && exec->workers() > 1 && chunks > 1) {
    exec->parallel_for(chunks, 1, [&](std::size_t b, std::size_t e, unsigned) {
      for (std::size_t c = b; c < e; ++c) fn(c);
    });
  } else {
    for (std::size_t c = 0; c < chunks; ++c) fn(c);
  }
}

// Stable LSD radix sort of v by key(x) < 2^bits, tmp
// scratch. With more than one worker and at least 4 x `chunk_items` items,
// each pass counts per chunk, sums the counts in
// (digit, chunk) order and scatters per chunk: the same result as the
// serial sort, which runs otherwise.
template <class V, class W, class Key>
void parallel_radix_sort(executor* exec, std::size_t chunk_items, V& v, W& scratch, std::uint32_t bits, Key key) {
  const std::size_t n = v.size();
  bits = std::min(bits, 32u);
  if (exec == nullptr || exec->workers() < 2 || n < 4 * std::max<std::size_t>(chunk_items, 1)) {
    if (bits <= 24)
      radix_sort<12>(v, scratch, bits, key);
    else
      radix_sort(v, scratch, bits, key);
    return;
  }
  const std::uint32_t digit = bits <= 24 ? 12 : 11, radix = 1u << digit, mask = radix - 1;
  const std::uint32_t digits = (bits + digit - 1) / digit;
  // A stable sort has one result whatever the chunks, so they follow the
  // workers: four per worker (the prefix sums over chunks x radix counts are
  // serial: 62 chunks of 10^6 keys cost ~1 ms a sort, 8 a tenth of that).
  const std::size_t chunk =
      std::max<std::size_t>({chunk_items, 1, (n + 4 * exec->workers() - 1) / (4 * exec->workers())});
  const std::size_t nchunks = (n + chunk - 1) / chunk;
  std::vector<std::uint32_t> hist(nchunks * radix), starts(radix);
  resize_scratch(scratch, n);
  for (std::uint32_t d = 0; d < digits; ++d) {
    const std::uint32_t shift = d * digit;
    run_chunks(exec, nchunks, [&](std::size_t c) {
      std::uint32_t* h = hist.data() + c * radix;
      std::fill_n(h, radix, 0u);
      for (std::size_t i = c * chunk, e = std::min(n, i + chunk); i < e; ++i) ++h[(key(v[i]) >> shift) & mask];
    });
    // where each (digit, chunk) starts: digit totals first, then each
    // chunk's row in turn (rows are read in order, not down the columns)
    std::fill(starts.begin(), starts.end(), 0u);
    for (std::size_t c = 0; c < nchunks; ++c)
      for (std::uint32_t r = 0; r < radix; ++r) starts[r] += hist[c * radix + r];
    bool one_value = false;
    std::uint32_t sum = 0;
    for (std::uint32_t r = 0; r < radix; ++r) {
      one_value |= starts[r] == n;
      sum += std::exchange(starts[r], sum);
    }
    if (one_value) continue;  // every key has this digit: nothing moves
    for (std::size_t c = 0; c < nchunks; ++c)
      for (std::uint32_t r = 0; r < radix; ++r) starts[r] += std::exchange(hist[c * radix + r], starts[r]);
    run_chunks(exec, nchunks, [&](std::size_t c) {
      std::uint32_t* h = hist.data() + c * radix;
      for (std::size_t i = c * chunk, e = std::min(n, i + chunk); i < e; ++i)
        scratch[h[(key(v[i]) >> shift) & mask]++] = v[i];
    });
    v.swap(scratch);
  }
}

}  // namespace detail
}  // namespace hhg
