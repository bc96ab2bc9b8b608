// hhg/broad_phase.hpp: the contract every pair-finding method satisfies.
//
// A method stores boxes under handles and reports every overlapping pair
// (closed overlap, see box.hpp) exactly once. Tests, the command-line tool and
// the benchmark are written once against this contract.
#pragma once

#include <algorithm>
#include <bit>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "hhg/box.hpp"
#include "hhg/executor.hpp"
#include "hhg/function_ref.hpp"
#include "hhg/handle.hpp"

namespace hhg {

/// The callback of for_each_pair: a non-owning reference to a callable
/// `void(handle, handle)`, cheap to pass by value (hhg/function_ref.hpp). The
/// referenced callable must outlive the call it is passed to.
using pair_callback = function_ref<void(handle, handle)>;

/// Dynamic use: insert, move, remove, then ask for the pairs. Every method of
/// hhg satisfies it (a method without an incremental index stores the boxes
/// in an object_table and rebuilds its index in the detection). A method also
/// has `get(h)` (a copy of the stored box), `clear()`, `update()` (finishes the
/// update phase; detection calls it when needed), `bytes()` (bytes of capacity
/// held), `box_tests()` (box tests of the last detection), and `method_name`, its name on the command line and in
/// hhg::all_methods (hhg/methods.hpp). Bad input (NaN, min > max, a stale handle) throws
/// hhg::error and changes nothing. See docs/methods.md.
template <class M>
concept dynamic_broad_phase = requires(M m, const M cm, const typename M::box_type& b, handle h,
                                       std::vector<handle_pair>& out, pair_callback cb) {
  typename M::box_type;
  { m.insert(b) } -> std::same_as<handle>;
  m.move(h, b);
  m.remove(h);
  m.find_pairs(out);
  m.for_each_pair(cb);
  { cm.size() } -> std::convertible_to<std::size_t>;
  { cm.contains(h) } -> std::same_as<bool>;
  { cm.get(h) } -> std::same_as<typename M::box_type>;
  m.clear();
  m.update();
  { cm.bytes() } -> std::convertible_to<std::size_t>;
  { cm.box_tests() } -> std::convertible_to<std::uint64_t>;
  { M::method_name } -> std::convertible_to<const char*>;
};

/// Inserts every box of `boxes` into m, in order, and returns the handles:
/// in one call where the method has a bulk insert (hash_grids: the grids are
/// laid out in one pass), else one by one. (Any M with insert(box) ->
/// handle: the benchmark's peer wrappers too.)
template <class M>
  requires requires(M& m, const typename M::box_type& b) {
    { m.insert(b) } -> std::same_as<handle>;
  }
std::vector<handle> insert_all(M& m, std::span<const typename M::box_type> boxes) {
  if constexpr (requires {
                  { m.insert(boxes) } -> std::same_as<std::vector<handle>>;
                }) {
    return m.insert(boxes);
  } else {
    std::vector<handle> hs;
    hs.reserve(boxes.size());
    for (const auto& b : boxes) hs.push_back(m.insert(b));
    return hs;
  }
}

/// Sorts index pairs packed as keys `i << 32 | j` (i, j < n) ascending, that is
/// by (i, j): an LSD radix sort over 16-bit digits that skips the digits no
/// index below n uses (four passes at n = 10^6). O(keys) time, and a second
/// buffer of keys.size() keys (16 bytes per pair in all). The one pair sort
/// of hhg: all_pairs, `hhg pairs` and the Python module use it.
inline void sort_pair_keys(std::vector<std::uint64_t>& keys, std::size_t n) {
  std::vector<std::uint64_t> tmp(keys.size());
  const unsigned index_bits = static_cast<unsigned>(std::bit_width(n));
  for (unsigned shift = 0; shift < 64; shift += 16) {
    if (shift >= index_bits && shift < 32) continue;  // j's unused high bits
    if (shift >= 32 + index_bits) break;              // i's unused high bits
    std::vector<std::size_t> count(1u << 16, 0);
    for (std::uint64_t k : keys) ++count[(k >> shift) & 0xFFFF];
    std::size_t sum = 0;
    for (std::size_t& c : count) sum += std::exchange(c, sum);
    for (std::uint64_t k : keys) tmp[count[(k >> shift) & 0xFFFF]++] = k;
    keys.swap(tmp);
  }
}

/// One-shot use: every overlapping pair of `boxes`, as indices (i < j, sorted
/// ascending), with any dynamic method M. O(N) inserts (one bulk insert where
/// the method has one), one detection, and a radix sort of the pairs. With an
/// executor (methods that take one: hash_grids), the insertion and the
/// detection run on it; the result does not depend on it.
template <dynamic_broad_phase M>
std::vector<std::pair<std::uint32_t, std::uint32_t>> all_pairs(M& m, std::span<const typename M::box_type> boxes,
                                                               executor* ex = nullptr) {
  m.clear();
  if constexpr (requires { m.set_executor(ex); }) m.set_executor(ex);
  const std::vector<handle> hs = insert_all(m, boxes);
  std::vector<std::uint32_t> index_of;
  for (std::size_t i = 0; i < hs.size(); ++i) {
    if (hs[i].index >= index_of.size()) index_of.resize(std::max<std::size_t>(hs[i].index + 1, 2 * index_of.size()));
    index_of[hs[i].index] = static_cast<std::uint32_t>(i);
  }
  std::vector<handle_pair> found;
  m.find_pairs(found);
  std::vector<std::uint64_t> keys(found.size());
  for (std::size_t k = 0; k < found.size(); ++k) {
    std::uint64_t i = index_of[found[k].a.index], j = index_of[found[k].b.index];
    if (j < i) std::swap(i, j);
    keys[k] = i << 32 | j;
  }
  std::vector<handle_pair>().swap(found);
  sort_pair_keys(keys, boxes.size());
  std::vector<std::pair<std::uint32_t, std::uint32_t>> out(keys.size());
  for (std::size_t k = 0; k < keys.size(); ++k)
    out[k] = {static_cast<std::uint32_t>(keys[k] >> 32), static_cast<std::uint32_t>(keys[k])};
  return out;
}

}  // namespace hhg
