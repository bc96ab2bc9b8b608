// Internal: cells whose edge is a power of two, shared by the methods that
// hash by size class (multilevel and hierarchical hashing, hierarchical
// neighbour search). Cell coordinates are exact (ldexp and floor), so the cell
// of v at class c + s is the cell at class c shifted right by s (nesting).
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace hhg::detail {

// Smallest c with 2^c >= x, for finite x > 0.
inline std::int32_t ceil_log2(double x) {
  int e = 0;
  const double m = std::frexp(x, &e);  // x = m * 2^e, m in [0.5, 1)
  return m == 0.5 ? e - 1 : e;
}

// floor(v / 2^c). ldexp is exact except where the result underflows: a tiny
// negative v over a huge cell rounds to -0, whose floor (0) would put v in
// the wrong cell and break the nesting of classes (found by the fuzzer).
inline std::int64_t cell_coord(double v, std::int32_t c) {
  const double t = std::ldexp(v, -c);
  if (t == 0 && v < 0) return -1;
  return static_cast<std::int64_t>(std::floor(t));
}

// A 64-bit hash of a cell (class and coordinates): Teschner's primes, then
// a 64-bit mix so that sums of hashes (the additive keys of hierarchical
// hashing) spread over all bits.
template <std::size_t D>
std::uint64_t class_cell_hash(std::int32_t level, const std::array<std::int64_t, D>& c) {
  constexpr std::uint64_t primes[3] = {73856093u, 19349663u, 83492791u};
  std::uint64_t x = static_cast<std::uint64_t>(static_cast<std::int64_t>(level)) * 0xD6E8FEB86659FD93ull;
  for (std::size_t k = 0; k < D; ++k) x ^= static_cast<std::uint64_t>(c[k]) * primes[k] * 0x9E3779B97F4A7C15ull;
  x ^= x >> 32;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 29;
  return x;
}

// The cell tables of these methods are open-addressing hash tables (linear
// probing, power-of-two size, a `used` flag per entry). Before an insertion,
// a table that would be more than half full doubles (at least 64 entries) and
// its entries are placed again with slot(entry, mask). The new table is made
// before anything changes: if that fails, the table is as it was.
template <class Entry, class Slot>
void grow_open_table(std::vector<Entry>& table, std::size_t used, Slot slot) {
  if (2 * (used + 1) <= table.size()) return;
  std::vector<Entry> old(std::max<std::size_t>(64, 2 * table.size()));
  old.swap(table);
  const std::size_t mask = table.size() - 1;
  for (const Entry& e : old) {
    if (!e.used) continue;
    std::size_t i = slot(e, mask);
    while (table[i].used) i = (i + 1) & mask;
    table[i] = e;
  }
}

}  // namespace hhg::detail
