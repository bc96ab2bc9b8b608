// hhg/handle.hpp: object identities and the pairs reported by every method.
#pragma once

#include <algorithm>
#include <compare>
#include <cstdint>
#include <vector>

namespace hhg {

/// Identity of an object stored in an hhg structure: a slot index plus a
/// generation. A default-constructed handle (generation 0) is null.
///
/// `index` is dense: it is below the number of slots the structure ever needed
/// (at most the peak object count), so users can keep per-object data in a plain
/// array indexed by `handle.index`. Slots are reused after removal; the
/// generation changes on reuse, so a stale handle is detected and rejected.
/// (hash_grids keeps 24-bit generations: a slot whose generation would wrap
/// is retired, never reused, so a stale handle never passes for a live one.)
struct handle {
  std::uint32_t index = 0;
  std::uint32_t generation = 0;

  constexpr explicit operator bool() const noexcept { return generation != 0; }
  friend constexpr bool operator==(handle, handle) = default;
  friend constexpr auto operator<=>(handle, handle) = default;
};

/// One overlapping pair. Methods report each pair exactly once, in an order
/// that depends on the method; `canonicalize` gives a deterministic order.
struct handle_pair {
  handle a;
  handle b;
  friend constexpr bool operator==(const handle_pair&, const handle_pair&) = default;
  friend constexpr auto operator<=>(const handle_pair&, const handle_pair&) = default;
};

/// Puts every pair in the form a.index < b.index and sorts the list.
/// O(P log P).
inline void canonicalize(std::vector<handle_pair>& pairs) {
  for (auto& p : pairs) {
    if (p.b.index < p.a.index) std::swap(p.a, p.b);
  }
  std::sort(pairs.begin(), pairs.end());
}

}  // namespace hhg
