// Sweep and prune with a persistent pair set (see include/hhg/sweep_and_prune.hpp).
//
// Implementation note.
//
// State. Objects live in an object_table (handles, input checks, get()). Each
// object also has a *proxy*, an internal id that names it in the endpoint
// arrays and in the pair set. A removed object's proxy stays in the arrays
// until the next update() and is reused only after it, so a slot the table
// reuses at once can never be confused with the object that left it.
//
// Invariant between updates: for every axis, axes_[a] holds the two endpoints
// of every proxy that is in the arrays, sorted by (value, is_max) — at equal
// values a min comes first — and the pair set holds exactly the pairs of those
// proxies whose boxes, as of the last update, overlap (closed). Two intervals
// overlap on an axis exactly when each one's min precedes the other's max in
// that order.
//
// update() runs three phases.
//  1. Removals: one pass per axis drops the endpoints of removed proxies (the
//     others keep their order); the pair set is rebuilt without their pairs.
//  2. Moves: the new coordinates of moved proxies are written into their
//     endpoints in place (pos_ knows where they are), then each axis is
//     insertion-sorted. Insertion sort swaps exactly the endpoint pairs whose
//     order changed, each once. A min of A moving down past a max of B means
//     A and B now overlap on this axis: if their (new) boxes overlap on every
//     axis, the pair is added. A max of A moving down past a min of B means
//     they no longer overlap on this axis (the final order is that of the new
//     values): the pair is erased (erasing an absent pair does nothing). Each
//     pair of endpoints whose order changed is swapped exactly once, so a pair
//     that stopped overlapping is erased on an axis where it separated, and
//     adds need a full overlap of the new boxes, so a pair that does not
//     overlap at the end is never added, and one that does is added on the
//     axis where it started to overlap (insertion ignores duplicates). (An
//     earlier version erased only if the new boxes still overlapped on every
//     other axis; a pair separating on two axes in one step then stayed.)
//  3. Inserts: the new endpoints are sorted (k log k) and merged into each
//     axis (O(N + k)); then one sweep along axis 0 with two active lists (old
//     and new objects whose x-interval is open) tests each new object against
//     every open object, and each old object against the open new ones. The
//     sweep stops after the last new object's max.
//
// Why a persistent pair set rather than a re-sweep each detection: the
// re-sweep along one axis tests every pair that overlaps on that axis, which
// in a uniform 3D scene is O(N^(5/3)) (about N / L per object for a domain of
// edge L); the persistent set costs O(N + swaps), and swaps are few when
// objects move little (the coherent scenarios where sweep and prune is used).
#include "hhg/sweep_and_prune.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

#include "hhg/detail/checks.hpp"
#include "hhg/error.hpp"

namespace hhg {

namespace {
template <class V>
void reserve_for(V& v, std::size_t n) {
  if (v.capacity() < n) v.reserve(std::max(n, v.capacity() + v.capacity() / 2 + 16));
}
[[noreturn]] void logic(const char* what) {
  std::string message = "hhg::sweep_and_prune::validate: ";
  message += what;
  throw std::logic_error(message);
}
}  // namespace

// ---------------------------------------------------------------- pair set

template <int D, class T>
bool sweep_and_prune<D, T>::pair_set::insert(std::uint64_t key) {
  if ((count_ + 1) * 2 > slots_.size()) grow();
  const std::size_t mask = slots_.size() - 1;
  std::size_t i = home(key);
  while (slots_[i] != empty) {
    if (slots_[i] == key) return false;
    i = (i + 1) & mask;
  }
  slots_[i] = key;
  ++count_;
  return true;
}

template <int D, class T>
void sweep_and_prune<D, T>::pair_set::erase(std::uint64_t key) noexcept {
  if (count_ == 0) return;
  const std::size_t mask = slots_.size() - 1;
  std::size_t i = home(key);
  while (slots_[i] != key) {
    if (slots_[i] == empty) return;
    i = (i + 1) & mask;
  }
  // Backward-shift deletion: pull later entries of the probe run into the hole
  // unless their home lies cyclically in (hole, entry].
  std::size_t j = i;
  for (;;) {
    j = (j + 1) & mask;
    if (slots_[j] == empty) break;
    const std::size_t k = home(slots_[j]);
    const bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
    if (!stays) {
      slots_[i] = slots_[j];
      i = j;
    }
  }
  slots_[i] = empty;
  --count_;
}

template <int D, class T>
void sweep_and_prune<D, T>::pair_set::clear() noexcept {
  std::fill(slots_.begin(), slots_.end(), empty);
  count_ = 0;
}

template <int D, class T>
void sweep_and_prune<D, T>::pair_set::grow() {
  const std::size_t size = std::max<std::size_t>(16, slots_.size() * 2);
  std::vector<std::uint64_t> old(size, empty);
  old.swap(slots_);
  unsigned bits = 0;
  while ((std::size_t{1} << bits) < size) ++bits;
  shift_ = 64 - bits;
  count_ = 0;
  for (const std::uint64_t k : old) {
    if (k == empty) continue;
    std::size_t i = home(k);
    while (slots_[i] != empty) i = (i + 1) & (size - 1);
    slots_[i] = k;
    ++count_;
  }
}

// ---------------------------------------------------------------- operations

template <int D, class T>
handle sweep_and_prune<D, T>::insert(const box_type& b) {
  detail::require_valid_box(b);
  if (free_proxies_.empty() && boxes_.size() >= (std::size_t{1} << 31) - 2)
    throw error(errc::capacity, "hhg: sweep_and_prune::insert: too many objects");
  // Reserve everything first so that nothing can fail after the table insert.
  const std::size_t proxies = boxes_.size() + (free_proxies_.empty() ? 1 : 0);
  reserve_for(boxes_, proxies);
  reserve_for(handles_, proxies);
  reserve_for(state_, proxies);
  reserve_for(moved_, proxies);
  reserve_for(aux_, proxies);
  reserve_for(free_proxies_, proxies);
  reserve_for(pending_inserts_, proxies);
  reserve_for(pending_removes_, proxies);
  reserve_for(moved_list_, proxies);
  for (int a = 0; a < D; ++a) reserve_for(pos_[a], 2 * proxies);
  reserve_for(proxy_of_slot_, table_.slot_count() + 1);

  const handle h = table_.insert(b, "sweep_and_prune::insert");
  std::uint32_t p;
  if (!free_proxies_.empty()) {
    p = free_proxies_.back();
    free_proxies_.pop_back();
  } else {
    p = static_cast<std::uint32_t>(boxes_.size());
    boxes_.emplace_back();
    handles_.emplace_back();
    state_.push_back(free_state);
    moved_.push_back(0);
    aux_.push_back(0);
    for (int a = 0; a < D; ++a) pos_[a].resize(pos_[a].size() + 2);
  }
  if (proxy_of_slot_.size() <= h.index) proxy_of_slot_.resize(h.index + 1);
  proxy_of_slot_[h.index] = p;
  boxes_[p] = b;
  handles_[p] = h;
  state_[p] = pending_insert;
  aux_[p] = static_cast<std::uint32_t>(pending_inserts_.size());
  pending_inserts_.push_back(p);
  return h;
}

template <int D, class T>
void sweep_and_prune<D, T>::remove(handle h) {
  table_.require(h, "sweep_and_prune::remove");
  const std::uint32_t p = proxy_of_slot_[h.index];
  // capacity first (a copy holds no spare capacity): nothing below can fail
  reserve_for(free_proxies_, free_proxies_.size() + 1);
  reserve_for(pending_removes_, pending_removes_.size() + 1);
  if (state_[p] == pending_insert) {  // never reached the axes: forget it now
    const std::uint32_t last = pending_inserts_.back();
    pending_inserts_[aux_[p]] = last;
    aux_[last] = aux_[p];
    pending_inserts_.pop_back();
    state_[p] = free_state;
    free_proxies_.push_back(p);
  } else {
    state_[p] = pending_remove;
    pending_removes_.push_back(p);
  }
  table_.remove(h, "sweep_and_prune::remove");
}

template <int D, class T>
void sweep_and_prune<D, T>::move(handle h, const box_type& b) {
  table_.require(h, "sweep_and_prune::move");
  detail::require_valid_box(b);
  const std::uint32_t p = proxy_of_slot_[h.index];
  reserve_for(moved_list_, moved_list_.size() + 1);  // before anything changes
  table_.move(h, b, "sweep_and_prune::move");
  boxes_[p] = b;
  if (state_[p] == live_state && !moved_[p]) {
    moved_[p] = 1;
    moved_list_.push_back(p);
  }
}

template <int D, class T>
void sweep_and_prune<D, T>::clear() {
  table_.clear();
  free_proxies_.clear();
  for (std::size_t p = boxes_.size(); p-- > 0;) {
    state_[p] = free_state;
    moved_[p] = 0;
    free_proxies_.push_back(static_cast<std::uint32_t>(p));
  }
  for (int a = 0; a < D; ++a) axes_[a].clear();
  pending_inserts_.clear();
  pending_removes_.clear();
  moved_list_.clear();
  pairs_.clear();
  dirty_ = false;
}

// ---------------------------------------------------------------- update

template <int D, class T>
void sweep_and_prune<D, T>::update() {
  if (dirty_) {
    rebuild_all();
    return;
  }
  try {
    apply_removals();
    apply_moves();
    apply_inserts();
  } catch (...) {
    // Out of memory part-way (the pair set grows while the axes are
    // re-sorted): every object is still stored with its box; the axes and the
    // pair set are rebuilt from scratch by the next update().
    mark_dirty();
    throw;
  }
}

// After a failed update: the recorded-operation lists are made to agree with
// the per-proxy states again (their capacity was reserved by insert, so this
// cannot fail), and the axes and pairs are marked stale.
template <int D, class T>
void sweep_and_prune<D, T>::mark_dirty() noexcept {
  dirty_ = true;
  pending_inserts_.clear();
  pending_removes_.clear();
  moved_list_.clear();
  for (std::size_t p = 0; p < state_.size(); ++p) {
    moved_[p] = 0;
    if (state_[p] == pending_insert) {
      aux_[p] = static_cast<std::uint32_t>(pending_inserts_.size());
      pending_inserts_.push_back(static_cast<std::uint32_t>(p));
    } else if (state_[p] == pending_remove) {
      pending_removes_.push_back(static_cast<std::uint32_t>(p));
    }
  }
}

// Sorts every axis and finds every pair anew from the stored boxes (one sweep
// along axis 0). Everything is built aside and swapped in at the end: if an
// allocation fails, the structure stays marked stale and the next update()
// tries again.
template <int D, class T>
void sweep_and_prune<D, T>::rebuild_all() {
  const std::size_t np = state_.size();
  std::size_t m = 0;
  for (std::size_t p = 0; p < np; ++p) m += state_[p] == live_state || state_[p] == pending_insert;
  std::vector<endpoint> fresh[D];
  for (int a = 0; a < D; ++a) {
    fresh[a].reserve(2 * m);
    for (std::size_t p = 0; p < np; ++p) {
      if (state_[p] != live_state && state_[p] != pending_insert) continue;
      const auto q = static_cast<std::uint32_t>(p);
      fresh[a].push_back({boxes_[p].min[a], 2 * q});
      fresh[a].push_back({boxes_[p].max[a], 2 * q + 1});
    }
    std::sort(fresh[a].begin(), fresh[a].end(), [](const endpoint& x, const endpoint& y) { return less(x, y); });
  }
  std::size_t removed = 0;
  for (std::size_t p = 0; p < np; ++p) removed += state_[p] == pending_remove;
  reserve_for(free_proxies_, free_proxies_.size() + removed);
  pair_set found;
  std::vector<std::uint32_t> active, where(np);
  active.reserve(m);
  for (const endpoint& e : fresh[0]) {
    const std::uint32_t p = e.ref >> 1;
    if ((e.ref & 1u) == 0) {
      for (const std::uint32_t q : active) {
        ++tests_since_;
        if (overlaps(boxes_[p], boxes_[q])) found.insert(key(p, q));
      }
      where[p] = static_cast<std::uint32_t>(active.size());
      active.push_back(p);
    } else {
      const std::uint32_t last = active.back();
      active[where[p]] = last;
      where[last] = where[p];
      active.pop_back();
    }
  }
  // commit: nothing below allocates
  for (std::size_t p = 0; p < np; ++p) {
    moved_[p] = 0;
    if (state_[p] == pending_remove) {
      state_[p] = free_state;
      free_proxies_.push_back(static_cast<std::uint32_t>(p));
    } else if (state_[p] == pending_insert) {
      state_[p] = live_state;
    }
  }
  pending_inserts_.clear();
  pending_removes_.clear();
  moved_list_.clear();
  for (int a = 0; a < D; ++a) {
    axes_[a].swap(fresh[a]);
    for (std::size_t i = 0; i < axes_[a].size(); ++i) pos_[a][axes_[a][i].ref] = static_cast<std::uint32_t>(i);
  }
  std::swap(pairs_, found);
  dirty_ = false;
}

template <int D, class T>
void sweep_and_prune<D, T>::apply_removals() {
  if (pending_removes_.empty()) return;
  keep_.reserve(pairs_.size());  // the only allocations: before anything changes
  reserve_for(free_proxies_, free_proxies_.size() + pending_removes_.size());
  for (int a = 0; a < D; ++a) {
    std::vector<endpoint>& axis = axes_[a];
    std::vector<std::uint32_t>& pos = pos_[a];
    std::size_t w = 0;
    for (const endpoint& e : axis) {
      if (state_[e.ref >> 1] == pending_remove) continue;
      pos[e.ref] = static_cast<std::uint32_t>(w);
      axis[w++] = e;
    }
    axis.resize(w);
  }
  keep_.clear();
  bool dropped = false;
  for (const std::uint64_t k : pairs_.slots()) {
    if (k == pair_set::empty) continue;
    if (state_[k >> 32] == pending_remove || state_[k & 0xffffffffu] == pending_remove) {
      dropped = true;
    } else {
      keep_.push_back(k);
    }
  }
  if (dropped) {
    pairs_.clear();
    for (const std::uint64_t k : keep_) pairs_.insert(k);
  }
  for (const std::uint32_t p : pending_removes_) {
    state_[p] = free_state;
    free_proxies_.push_back(p);
  }
  pending_removes_.clear();
}

template <int D, class T>
void sweep_and_prune<D, T>::apply_moves() {
  if (moved_list_.empty()) return;
  for (const std::uint32_t p : moved_list_) {
    moved_[p] = 0;
    if (state_[p] != live_state) continue;
    const box_type& b = boxes_[p];
    for (int a = 0; a < D; ++a) {
      axes_[a][pos_[a][2 * p]].value = b.min[a];
      axes_[a][pos_[a][2 * p + 1]].value = b.max[a];
    }
  }
  moved_list_.clear();
  for (int a = 0; a < D; ++a) sort_axis(a);
}

template <int D, class T>
void sweep_and_prune<D, T>::sort_axis(int a) {
  std::vector<endpoint>& axis = axes_[a];
  std::uint32_t* pos = pos_[a].data();
  endpoint* v = axis.data();
  const std::size_t n = axis.size();
  for (std::size_t i = 1; i < n; ++i) {
    const endpoint e = v[i];
    if (!less(e, v[i - 1])) continue;
    const std::uint32_t p = e.ref >> 1;
    const bool e_max = (e.ref & 1u) != 0;
    std::size_t j = i;
    try {
      do {
        const endpoint y = v[j - 1];
        const bool y_max = (y.ref & 1u) != 0;
        if (e_max != y_max) {
          const std::uint32_t q = y.ref >> 1;
          if (!e_max) {  // min of p now before max of q: start of overlap on this axis
            add_if_overlapping(p, q);
          } else {  // max of p now before min of q: they no longer overlap on this axis
            pairs_.erase(key(p, q));
          }
        }
        v[j] = y;
        pos[y.ref] = static_cast<std::uint32_t>(j);
        --j;
      } while (j > 0 && less(e, v[j - 1]));
    } catch (...) {  // the pair set could not grow: put e back (the axis stays a permutation)
      v[j] = e;
      pos[e.ref] = static_cast<std::uint32_t>(j);
      throw;
    }
    swaps_since_ += i - j;
    v[j] = e;
    pos[e.ref] = static_cast<std::uint32_t>(j);
  }
}

template <int D, class T>
void sweep_and_prune<D, T>::add_if_overlapping(std::uint32_t p, std::uint32_t q) {
  ++tests_since_;
  if (overlaps(boxes_[p], boxes_[q])) pairs_.insert(key(p, q));
}

template <int D, class T>
void sweep_and_prune<D, T>::apply_inserts() {
  if (pending_inserts_.empty()) return;
  const auto order = [](const endpoint& x, const endpoint& y) { return less(x, y); };
  for (int a = 0; a < D; ++a) {
    merge_new_.clear();
    for (const std::uint32_t p : pending_inserts_) {
      merge_new_.push_back({boxes_[p].min[a], 2 * p});
      merge_new_.push_back({boxes_[p].max[a], 2 * p + 1});
    }
    std::sort(merge_new_.begin(), merge_new_.end(), order);
    std::vector<endpoint>& axis = axes_[a];
    merge_out_.resize(axis.size() + merge_new_.size());
    std::merge(axis.begin(), axis.end(), merge_new_.begin(), merge_new_.end(), merge_out_.begin(), order);
    axis.swap(merge_out_);
    std::uint32_t* pos = pos_[a].data();
    for (std::size_t i = 0; i < axis.size(); ++i) pos[axis[i].ref] = static_cast<std::uint32_t>(i);
  }
  // One sweep along axis 0: new objects against everything open, old objects
  // against the open new ones.
  active_old_.clear();
  active_new_.clear();
  std::size_t new_mins_left = pending_inserts_.size();
  for (const endpoint& e : axes_[0]) {
    const std::uint32_t p = e.ref >> 1;
    const bool is_new = state_[p] == pending_insert;
    std::vector<std::uint32_t>& list = is_new ? active_new_ : active_old_;
    if ((e.ref & 1u) == 0) {
      for (const std::uint32_t q : active_new_) add_if_overlapping(p, q);
      if (is_new) {
        for (const std::uint32_t q : active_old_) add_if_overlapping(p, q);
        --new_mins_left;
      }
      aux_[p] = static_cast<std::uint32_t>(list.size());
      list.push_back(p);
    } else {
      const std::uint32_t last = list.back();
      list[aux_[p]] = last;
      aux_[last] = aux_[p];
      list.pop_back();
      if (new_mins_left == 0 && active_new_.empty()) break;
    }
  }
  for (const std::uint32_t p : pending_inserts_) state_[p] = live_state;
  pending_inserts_.clear();
}

// ---------------------------------------------------------------- detection

template <int D, class T>
void sweep_and_prune<D, T>::find_pairs(std::vector<handle_pair>& out) {
  out.clear();
  update();
  out.reserve(pairs_.size());
  for (const std::uint64_t k : pairs_.slots()) {
    if (k != pair_set::empty) out.push_back({handles_[k >> 32], handles_[k & 0xffffffffu]});
  }
  box_tests_ = tests_since_;
  swaps_ = swaps_since_;
  tests_since_ = swaps_since_ = 0;
}

template <int D, class T>
void sweep_and_prune<D, T>::for_each_pair(pair_callback f) {
  update();
  box_tests_ = tests_since_;
  swaps_ = swaps_since_;
  tests_since_ = swaps_since_ = 0;
  for (const std::uint64_t k : pairs_.slots()) {
    if (k != pair_set::empty) f(handles_[k >> 32], handles_[k & 0xffffffffu]);
  }
}

template <int D, class T>
std::size_t sweep_and_prune<D, T>::bytes() const noexcept {
  std::size_t n = table_.bytes() + proxy_of_slot_.capacity() * 4 + boxes_.capacity() * sizeof(box_type) +
                  handles_.capacity() * sizeof(handle) + state_.capacity() + moved_.capacity() + aux_.capacity() * 4 +
                  free_proxies_.capacity() * 4 + pending_inserts_.capacity() * 4 + pending_removes_.capacity() * 4 +
                  moved_list_.capacity() * 4 + (merge_new_.capacity() + merge_out_.capacity()) * sizeof(endpoint) +
                  (active_old_.capacity() + active_new_.capacity()) * 4 + keep_.capacity() * 8 + pairs_.bytes();
  for (int a = 0; a < D; ++a) n += axes_[a].capacity() * sizeof(endpoint) + pos_[a].capacity() * 4;
  return n;
}

template <int D, class T>
void sweep_and_prune<D, T>::validate() const {
  std::size_t in_axes = 0, pending = 0;
  for (std::size_t p = 0; p < state_.size(); ++p) {
    in_axes += state_[p] == live_state || state_[p] == pending_remove;
    pending += state_[p] == pending_insert;
  }
  if (in_axes - pending_removes_.size() + pending != table_.size()) logic("object count mismatch");
  if (pending != pending_inserts_.size()) logic("pending insert count mismatch");
  if (dirty_) return;  // axes and pairs are stale until the next update() rebuilds them
  const bool settled = pending_inserts_.empty() && pending_removes_.empty() && moved_list_.empty();
  for (int a = 0; a < D; ++a) {
    const std::vector<endpoint>& axis = axes_[a];
    if (axis.size() != 2 * in_axes) logic("endpoint count mismatch");
    for (std::size_t i = 0; i < axis.size(); ++i) {
      const endpoint& e = axis[i];
      const std::uint32_t p = e.ref >> 1;
      if (p >= state_.size() || (state_[p] != live_state && state_[p] != pending_remove))
        logic("endpoint of a proxy not in the axes");
      if (pos_[a][e.ref] != i) logic("position table out of date");
      if (i > 0 && less(e, axis[i - 1])) logic("axis not sorted");
      if (settled && e.value != ((e.ref & 1u) ? boxes_[p].max[a] : boxes_[p].min[a]))
        logic("endpoint value differs from the box");
    }
  }
  std::size_t count = 0;
  for (const std::uint64_t k : pairs_.slots()) {
    if (k == pair_set::empty) continue;
    ++count;
    const auto p = static_cast<std::uint32_t>(k >> 32), q = static_cast<std::uint32_t>(k & 0xffffffffu);
    if (!(p < q) || q >= state_.size()) logic("bad pair key");
    if (state_[p] != live_state && state_[p] != pending_remove) logic("pair of a proxy not in the axes");
    if (state_[q] != live_state && state_[q] != pending_remove) logic("pair of a proxy not in the axes");
    if (settled && !overlaps(boxes_[p], boxes_[q])) logic("pair set holds a pair that does not overlap");
  }
  if (count != pairs_.size()) logic("pair count mismatch");
}

template class sweep_and_prune<2, float>;
template class sweep_and_prune<2, double>;
template class sweep_and_prune<3, float>;
template class sweep_and_prune<3, double>;

}  // namespace hhg
