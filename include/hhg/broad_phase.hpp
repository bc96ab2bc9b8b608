// hhg/broad_phase.hpp: the contract every pair-finding method satisfies.
//
// A method stores boxes under handles and reports every overlapping pair
// (closed overlap, see box.hpp) exactly once. Tests, the command-line tool and
// the benchmark are written once against this contract.
#pragma once

#include <algorithm>
#include <concepts>
#include <cstdint>
#include <cstddef>
#include <type_traits>
#include <span>
#include <utility>
#include <vector>

#include "hhg/box.hpp"
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

/// One-shot use: every overlapping pair of `boxes`, as indices (i < j, sorted
/// ascending), with any dynamic method M. O(N) inserts plus one detection.
template <dynamic_broad_phase M>
std::vector<std::pair<std::uint32_t, std::uint32_t>> all_pairs(M& m, std::span<const typename M::box_type> boxes) {
  m.clear();
  std::vector<std::uint32_t> index_of;
  for (std::size_t i = 0; i < boxes.size(); ++i) {
    const handle h = m.insert(boxes[i]);
    if (h.index >= index_of.size()) index_of.resize(h.index + 1);
    index_of[h.index] = static_cast<std::uint32_t>(i);
  }
  std::vector<std::pair<std::uint32_t, std::uint32_t>> out;
  m.for_each_pair([&](handle a, handle b) {
    std::uint32_t i = index_of[a.index], j = index_of[b.index];
    if (j < i) std::swap(i, j);
    out.emplace_back(i, j);
  });
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace hhg
