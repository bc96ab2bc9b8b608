// bench/harness/batch.hpp: how the benchmarks (hhg_bench, hhg_paired) move
// every object of a scene, for every method and peer alike: in one call where
// the method has the batch form (hash_grids: the bulk move), else one by one
// (they insert with hhg::insert_all, its counterpart). No checks of its own
// (the timed step stays the bare loop): hs and boxes have the same length,
// the handles are the method's own.
#pragma once

#include <cstddef>
#include <span>

#include "hhg/handle.hpp"

namespace hhg::bench {

template <class M>
void move_boxes(M& m, std::span<const handle> hs, std::span<const typename M::box_type> boxes) {
  if constexpr (requires { m.move(hs, boxes); })
    m.move(hs, boxes);
  else
    for (std::size_t i = 0; i < hs.size(); ++i) m.move(hs[i], boxes[i]);
}

}  // namespace hhg::bench
