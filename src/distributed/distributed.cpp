// src/distributed/distributed.cpp: hhg::distributed_hash_grids (docs/distributed.md).
#include "hhg/distributed.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <limits>
#include <new>
#include <numeric>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>

#include "../periodic_limits.hpp"
#include "hhg/hash_grids.hpp"

namespace hhg {
namespace detail {

namespace {

const char* box_error_text(box_problem p) {
  return p == box_problem::nan_coordinate ? "a box coordinate is NaN" : "min > max on an axis";
}

/// The rank that keeps the directory entry of a global id (a mixed hash, so
/// consecutive ids spread over the ranks).
int directory_rank(std::uint64_t id, int size) {
  std::uint64_t x = id + 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  x ^= x >> 31;
  return static_cast<int>(x % static_cast<std::uint64_t>(size));
}

void check_mpi(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw std::runtime_error(std::string("hhg::distributed_hash_grids: MPI call failed: ") + what);
}

}  // namespace

template <int D, class T>
struct distributed_state {
  using box_type = box<D, T>;
  using point = std::array<T, D>;

  struct node {
    int axis = 0;
    T cut = 0;
    int child[2] = {-1, -1};
    int leaf_rank = -1;  // >= 0 for a leaf
  };
  struct record {
    std::uint64_t id;
    box_type b;
  };
  struct staged_op {
    enum kind_t : std::uint8_t { insert, move, remove } kind;
    box_type b;
  };
  struct sample {
    point p;
    double w;
  };

  MPI_Comm comm = MPI_COMM_NULL;
  // ----- periodic mode (docs/distributed.md, "Periodic domains over MPI") -----
  // Owned objects are then kept out of `grid` (slots only); the local grid of
  // the detection is `igrid`, rebuilt every step from the images received.
  bool periodic = false;
  periodic_domain<D, T> dom{};
  std::array<double, D> plo{}, phi{}, period{}, delta{};
  box_type clip{};  // the domain widened by 2 delta on periodic axes, everything elsewhere
  std::vector<std::uint32_t> free_slots;
  std::uint32_t slots = 0;
  struct image_record {
    std::uint64_t id;
    std::array<std::int32_t, D> shift;
    box_type raw;      // the object's box
    box_type clipped;  // its image under `shift`, widened by delta, cut to `clip`
  };
  std::vector<image_record> images;     // the images this rank holds (this step)
  std::vector<std::uint32_t> image_of;  // igrid handle.index -> index in images
  hash_grids<D, T> igrid;

  int rank = 0;
  int size = 1;
  distributed_config cfg;
  ownership_rule rule = ownership_rule::max_of_mins;

  hash_grids<D, T> grid;
  std::unordered_map<std::uint64_t, handle> owned;   // committed, owned here
  std::unordered_map<std::uint64_t, handle> ghosts;  // copies of other ranks' objects
  std::vector<std::uint64_t> id_of;                  // handle.index -> id
  std::vector<box_type> box_of;                      // handle.index -> box
  std::vector<handle> handle_of;                     // handle.index -> handle
  std::vector<std::uint8_t> state;                   // handle.index -> free, owned, ghost
  static constexpr std::uint8_t free_slot = 0, owned_slot = 1, ghost_slot = 2;
  // Staged moves of committed objects (the common case), applied as one batch.
  std::vector<handle> move_h;
  std::vector<box_type> move_b;
  std::vector<std::uint32_t> move_slot;  // handle.index -> 1 + index in move_b, 0: none
  std::vector<std::uint32_t> stamp;      // handle.index -> last exchange seen
  std::uint32_t exchange = 0;

  std::unordered_map<std::uint64_t, staged_op> staged;
  std::unordered_set<std::uint64_t> directory;  // live ids whose directory_rank is this rank

  // ----- failures between collectives (docs/distributed.md, "A failure in a collective call") -----
  // A rank that fails locally (std::bad_alloc, ...) keeps taking part in the
  // collectives of the call up to the next agreement point, where every rank
  // throws the same error. Failures before anything changed leave the
  // structure as it was; later ones leave it `broken` on every rank alike.
  int fail_code = -1;
  std::string fail_message;
  bool broken = false;
  int inject_phase = -1;  // test hook: throw std::bad_alloc at this phase (this rank)

  std::vector<node> tree;  // root at 0; empty before the first bisection
  double achieved_imbalance = 1;
  std::vector<std::uint64_t> arrived, departed;
  distributed_statistics st;
  std::vector<handle_pair> local_pairs;

  distributed_state(const distributed_config& c) : igrid(c.grid), cfg(c), grid(c.grid) {}

  void set_domain(const periodic_domain<D, T>& d) {
    periodic = true;
    dom = d;
    constexpr double top = static_cast<double>(std::numeric_limits<T>::max());
    for (int i = 0; i < D; ++i) {
      clip.min[i] = -std::numeric_limits<T>::infinity();
      clip.max[i] = std::numeric_limits<T>::infinity();
      if (!d.periodic[i]) continue;
      plo[i] = d.bounds.min[i];
      phi[i] = d.bounds.max[i];
      period[i] = static_cast<double>(d.bounds.max[i] - d.bounds.min[i]);  // as periodic_image computes it
      // delta = 4 U, U the ulp of T at m = max(|lo|, |hi|) + 4096 L: no number
      // the proof rounds (an image of a box within 1024 periods, a shift times
      // L, p, q) exceeds m, so each rounding moves it by at most U / 2; the
      // images and q are off by at most 3 U in all, the widening's own
      // rounding takes U / 2 more (docs/distributed.md, "the bound on delta").
      // Until stop 80 delta was 64 eps (|lo| + |hi| + 2052 L): 2.8 periods for
      // a period of 1 at 1e14, thousands of images per box, out of memory.
      // (m saturates at the largest T: every finite number is below it.)
      const double m = std::min(std::max(std::abs(plo[i]), std::abs(phi[i])) + 4096 * period[i], top);
      delta[i] = 4 * ulp_of(m);
      clip.min[i] = static_cast<T>(plo[i] - 2 * delta[i]);
      clip.max[i] = static_cast<T>(phi[i] + 2 * delta[i]);
    }
  }

  /// The distance from x (0 <= x <= the largest T) to the next larger T
  /// (the spacing of T in x's binade; never below the smallest subnormal).
  static double ulp_of(double x) {
    int e = 0;
    (void)std::frexp(x, &e);  // x = f 2^e, 1/2 <= f < 1
    return std::max(std::ldexp(1.0, e - std::numeric_limits<T>::digits),
                    static_cast<double>(std::numeric_limits<T>::denorm_min()));
  }

  /// The limits of periodic_pairs on periodic axes, and at most 65536 images
  /// of a box here (errc::out_of_domain).
  void check_periodic(const char* where, const box_type& b) const {
    if (!periodic) return;
    std::string problem = periodic_box_problem(dom, b);
    if (problem.empty()) {
      std::uint64_t count = 1;
      for (int i = 0; i < D && count <= periodic_max_images; ++i) {
        if (!dom.periodic[i]) continue;
        std::int32_t u0 = 0, u1 = 0;
        shift_range(b, i, u0, u1);
        count *= static_cast<std::uint64_t>(std::max(u1 - u0 + 1, 0));
      }
      if (count > periodic_max_images) problem = too_many_images_problem();
    }
    if (!problem.empty()) throw error(errc::out_of_domain, std::string(where) + ": " + problem);
  }

  /// One coordinate of an image: x moved by u periods on axis i, computed as
  /// periodic_image computes it (two roundings in T; a rounding is monotone,
  /// so the result does not decrease when u grows).
  T image_coord(T x, std::int32_t u, int i) const {
    if (u == 0) return x;
    return x + static_cast<T>(u) * (dom.bounds.max[i] - dom.bounds.min[i]);
  }
  /// The ends of an image widened by delta on periodic axis i (not yet cut to `clip`).
  T widened_min(T x, std::int32_t u, int i) const {
    return static_cast<T>(static_cast<double>(image_coord(x, u, i)) - delta[i]);
  }
  T widened_max(T x, std::int32_t u, int i) const {
    return static_cast<T>(static_cast<double>(image_coord(x, u, i)) + delta[i]);
  }

  /// The shifts u on periodic axis i whose image of b, widened by delta, meets
  /// `clip`: exactly u0..u1 (empty when u1 < u0). Both ends of the widened
  /// image grow with u, so the set is an interval; it is found from an
  /// estimate by stepping with the very test of for_each_image, so no
  /// rounding of the estimate can drop or add a shift. (b within the limits.)
  void shift_range(const box_type& b, int i, std::int32_t& u0, std::int32_t& u1) const {
    const double L = period[i];
    // quarters first: the difference of a bound and a box's far corner can
    // pass the largest double (quartering is exact, the rounding unchanged)
    u0 = static_cast<std::int32_t>(std::clamp(
        std::ceil((plo[i] * 0.25 - 0.75 * delta[i] - static_cast<double>(b.max[i]) * 0.25) / L * 4), -1e9, 1e9));
    u1 = static_cast<std::int32_t>(std::clamp(
        std::floor((phi[i] * 0.25 + 0.75 * delta[i] - static_cast<double>(b.min[i]) * 0.25) / L * 4), -1e9, 1e9));
    while (widened_max(b.max[i], u0 - 1, i) >= clip.min[i]) --u0;
    while (widened_max(b.max[i], u0, i) < clip.min[i]) ++u0;
    while (widened_min(b.min[i], u1 + 1, i) <= clip.max[i]) ++u1;
    while (widened_min(b.min[i], u1, i) > clip.max[i]) --u1;
  }

  /// Calls f(shift, clipped) for every image of b whose box widened by delta
  /// meets `clip` (the images another box's pair may need; see the proof).
  template <class F>
  void for_each_image(const box_type& b, F&& f) const {
    std::array<std::int32_t, D> t_lo{}, t_hi{}, t{};
    for (int i = 0; i < D; ++i) {
      if (!dom.periodic[i]) continue;
      shift_range(b, i, t_lo[i], t_hi[i]);
      if (t_hi[i] < t_lo[i]) return;
    }
    t = t_lo;
    box_type im = b;
    while (true) {
      for (int i = 0; i < D; ++i) {
        if (!dom.periodic[i]) continue;
        im.min[i] = std::max(clip.min[i], widened_min(b.min[i], t[i], i));
        im.max[i] = std::min(clip.max[i], widened_max(b.max[i], t[i], i));
      }
      f(t, im);
      int i = 0;
      for (; i < D; ++i) {
        if (t[i] < t_hi[i]) {
          ++t[i];
          break;
        }
        t[i] = t_lo[i];
      }
      if (i == D) break;
    }
  }

  /// The point where a pair is decided: p = max(min_a, min_b') (b' the image),
  /// moved into the domain by whole periods; t: the periods it was moved by
  /// (q = p - t L, computed in double, then in T).
  void wrap(const box_type& a, const box_type& bi, point& q, std::array<std::int32_t, D>& t) const {
    for (int i = 0; i < D; ++i) {
      const T p = std::max(a.min[i], bi.min[i]);
      if (!dom.periodic[i]) {
        q[i] = p;
        t[i] = 0;
        continue;
      }
      const double k = std::floor((static_cast<double>(p) * 0.5 - plo[i] * 0.5) / period[i] * 2);  // (no overflow)
      t[i] = static_cast<std::int32_t>(k);
      q[i] = static_cast<T>(static_cast<double>(p) - k * period[i]);
    }
  }

  // ----- bookkeeping of the local grid ---------------------------------------
  void note(handle h, std::uint64_t id, const box_type& b, bool ghost) {
    if (h.index >= id_of.size()) {
      const std::size_t n = std::max<std::size_t>(h.index + 1, 2 * id_of.size());
      id_of.resize(n);
      box_of.resize(n);
      handle_of.resize(n);
      state.resize(n);
      stamp.resize(n);
      move_slot.resize(n);
    }
    id_of[h.index] = id;
    box_of[h.index] = b;
    handle_of[h.index] = h;
    state[h.index] = ghost ? ghost_slot : owned_slot;
    stamp[h.index] = exchange;
  }
  handle add(std::uint64_t id, const box_type& b, bool ghost) {
    handle h;
    if (periodic) {  // a slot only: owned objects are not in a grid
      if (!free_slots.empty()) {
        h.index = free_slots.back();
        free_slots.pop_back();
      } else {
        h.index = slots++;
      }
      h.generation = 1;
    } else {
      h = grid.insert(b);
    }
    note(h, id, b, ghost);
    return h;
  }
  void drop(handle h) {
    if (periodic)
      free_slots.push_back(h.index);
    else
      grid.remove(h);
    state[h.index] = free_slot;
  }
  void clear_moves() {
    for (const handle h : move_h) move_slot[h.index] = 0;
    move_h.clear();
    move_b.clear();
  }
  /// Calls f(index) for every object owned here (committed), in slot order.
  template <class F>
  void for_each_owned(F&& f) const {
    const std::size_t n = state.size();
    for (std::size_t k = 0; k < n; ++k)
      if (state[k] == owned_slot) f(k);
  }
  void set_box(handle h, const box_type& b) {
    if (!(box_of[h.index] == b)) {
      if (!periodic) grid.move(h, b);
      box_of[h.index] = b;
    }
  }

  // ----- the bisection ----------------------------------------------------------
  static point reference_point(const box_type& b) {
    point p{};
    for (int i = 0; i < D; ++i) {
      const bool lo = std::isfinite(b.min[i]);
      const bool hi = std::isfinite(b.max[i]);
      if (lo && hi)
        p[i] = b.min[i] / 2 + b.max[i] / 2;
      else if (lo)
        p[i] = b.min[i];
      else if (hi)
        p[i] = b.max[i];
      else
        p[i] = 0;
    }
    return p;
  }

  int locate(const point& p) const {
    if (tree.empty()) return 0;
    int n = 0;
    while (tree[n].leaf_rank < 0) n = tree[n].child[p[tree[n].axis] < tree[n].cut ? 0 : 1];
    return tree[n].leaf_rank;
  }

  /// Calls f(r) for every rank whose part the closed box reaches.
  template <class F>
  void route(const box_type& b, F&& f) const {
    if (tree.empty()) {
      f(0);
      return;
    }
    int stack[128];
    int top = 0;
    stack[top++] = 0;
    while (top > 0) {
      const node& n = tree[stack[--top]];
      if (n.leaf_rank >= 0) {
        f(n.leaf_rank);
        continue;
      }
      if (b.min[n.axis] < n.cut) stack[top++] = n.child[0];
      if (b.max[n.axis] >= n.cut) stack[top++] = n.child[1];
    }
  }

  int build(std::vector<sample>& pts, std::size_t first, std::size_t last, int r0, int r1) {
    const int me = static_cast<int>(tree.size());
    tree.push_back(node{});
    if (r1 - r0 == 1) {
      tree[me].leaf_rank = r0;
      return me;
    }
    // Axis: the longest extent of the points in this part.
    int axis = 0;
    if (last > first) {
      point lo = pts[first].p, hi = pts[first].p;
      for (std::size_t k = first; k < last; ++k)
        for (int i = 0; i < D; ++i) {
          lo[i] = std::min(lo[i], pts[k].p[i]);
          hi[i] = std::max(hi[i], pts[k].p[i]);
        }
      double best = -1;
      for (int i = 0; i < D; ++i) {
        const double e = static_cast<double>(hi[i]) - static_cast<double>(lo[i]);
        if (e > best) {
          best = e;
          axis = i;
        }
      }
    }
    const int nl = (r1 - r0) / 2;
    std::sort(pts.begin() + static_cast<std::ptrdiff_t>(first), pts.begin() + static_cast<std::ptrdiff_t>(last),
              [axis](const sample& a, const sample& b) {
                if (a.p[axis] != b.p[axis]) return a.p[axis] < b.p[axis];
                return a.p < b.p;
              });
    T cut = 0;
    std::size_t split = first;
    if (last - first == 1) {
      cut = pts[first].p[axis];
    } else if (last - first >= 2) {
      double total = 0;
      for (std::size_t k = first; k < last; ++k) total += pts[k].w;
      const double target = total * nl / (r1 - r0);
      double below = 0;
      std::size_t k = first;
      while (k + 1 < last && below + pts[k].w <= target) below += pts[k++].w;
      if (k == first) k = first + 1;
      cut = pts[k].p[axis];
    }
    while (split < last && pts[split].p[axis] < cut) ++split;
    tree[me].axis = axis;
    tree[me].cut = cut;
    const int left = build(pts, first, split, r0, r0 + nl);
    const int right = build(pts, split, last, r0 + nl, r1);
    tree[me].child[0] = left;
    tree[me].child[1] = right;
    return me;
  }

  void bisect(std::uint64_t total) {
    // A stride sample of the owned objects' reference points, weighted by count.
    const std::uint64_t n = owned.size();
    const std::uint64_t budget = std::uint64_t{cfg.samples_per_rank} * static_cast<std::uint64_t>(size);
    std::uint64_t s = n;
    if (total > budget) s = std::min<std::uint64_t>(n, (budget * n + total - 1) / total);
    if (n > 0 && s == 0) s = 1;
    std::vector<sample> mine;
    std::vector<int> counts(size), displs(size);
    guarded(p_bisect, [&] {
      mine.reserve(s);
      std::uint64_t k = 0, next_pick = 0, picked = 0;
      for_each_owned([&](std::size_t idx) {
        if (picked < s && k == next_pick) {
          mine.push_back(sample{reference_point(box_of[idx]), static_cast<double>(n) / static_cast<double>(s)});
          ++picked;
          next_pick = picked * n / s;
        }
        ++k;
      });
    });
    checkpoint(false);
    int mine_bytes = static_cast<int>(mine.size() * sizeof(sample));
    check_mpi(MPI_Allgather(&mine_bytes, 1, MPI_INT, counts.data(), 1, MPI_INT, comm), "Allgather");
    long long all = 0;
    for (int r = 0; r < size; ++r) {
      displs[r] = static_cast<int>(std::min<long long>(all, INT_MAX));
      all += counts[r];
    }
    int code = -1;
    std::string message;
    if (all > INT_MAX) {  // the same on every rank
      code = static_cast<int>(errc::capacity);
      message = "hhg::distributed_hash_grids: bisection sample too large";
    }
    std::vector<sample> pts;
    if (code < 0) guarded(p_bisect, [&] { pts.resize(static_cast<std::size_t>(all) / sizeof(sample)); });
    checkpoint(false, code, message);
    check_mpi(
        MPI_Allgatherv(mine.data(), mine_bytes, MPI_BYTE, pts.data(), counts.data(), displs.data(), MPI_BYTE, comm),
        "Allgatherv");
    st.bytes_sent += static_cast<std::uint64_t>(mine_bytes) * static_cast<std::uint64_t>(size - 1);
    guarded(p_bisect, [&] {
      tree.clear();
      build(pts, 0, pts.size(), 0, size);
    });
    ++st.rebalances;
    st.rebalanced = true;
  }

  // ----- communication ------------------------------------------------------------
  /// Sends out[r] to rank r (bytes), receives into `in` (concatenated, in rank order).
  template <class R>
  void exchange_records(std::vector<std::vector<R>>& out, std::vector<R>& in, bool clean = false) {
    std::vector<int> scount(size), rcount(size), sdispl(size), rdispl(size);
    long long stotal = 0;
    int overflow = 0;
    for (int r = 0; r < size; ++r) {
      const long long b = static_cast<long long>(out[r].size() * sizeof(R));
      if (stotal + b > INT_MAX) overflow = 1;
      scount[r] = overflow ? 0 : static_cast<int>(b);
      sdispl[r] = overflow ? 0 : static_cast<int>(stotal);
      stotal += b;
    }
    check_mpi(MPI_Alltoall(scount.data(), 1, MPI_INT, rcount.data(), 1, MPI_INT, comm), "Alltoall");
    long long rtotal = 0;
    for (int r = 0; r < size; ++r) {
      rdispl[r] = static_cast<int>(std::min<long long>(rtotal, INT_MAX));
      rtotal += rcount[r];
    }
    if (rtotal > INT_MAX) overflow = 1;
    // Every rank learns whether any rank would overflow, failed before, or
    // cannot allocate the buffers, so all throw together (one agreement).
    std::vector<R> send;
    int code = -1;
    std::string message;
    if (overflow) {
      code = static_cast<int>(errc::capacity);
      message = "hhg::distributed_hash_grids: more than 2 GiB to send or receive in one exchange";
    } else if (fail_code < 0) {
      try {
        send.resize(static_cast<std::size_t>(stotal) / sizeof(R));
        in.resize(static_cast<std::size_t>(rtotal) / sizeof(R));
      } catch (const std::bad_alloc&) {
        code = static_cast<int>(errc::capacity);
        message = "hhg::distributed_hash_grids: rank " + std::to_string(rank) + " is out of memory for an exchange";
      }
    }
    checkpoint(clean, code, message);
    for (int r = 0; r < size; ++r) {
      if (!out[r].empty()) std::memcpy(reinterpret_cast<char*>(send.data()) + sdispl[r], out[r].data(), scount[r]);
      if (r != rank && scount[r] > 0) {
        st.bytes_sent += static_cast<std::uint64_t>(scount[r]);
        ++st.messages_sent;
      }
    }
    check_mpi(MPI_Alltoallv(send.data(), scount.data(), sdispl.data(), MPI_BYTE, in.data(), rcount.data(),
                            rdispl.data(), MPI_BYTE, comm),
              "Alltoallv");
  }

  /// Agrees on an error: every rank passes its own (code < 0: none). When some
  /// rank has one, every rank throws the error of the lowest rank with the
  /// lowest code.
  void agree(int code, const std::string& message) {
    int in[2] = {code < 0 ? INT_MAX : code, rank};
    int out[2] = {INT_MAX, 0};
    check_mpi(MPI_Allreduce(in, out, 1, MPI_2INT, MPI_MINLOC, comm), "Allreduce");
    if (out[0] == INT_MAX) return;
    char text[512] = {};
    if (rank == out[1]) std::snprintf(text, sizeof text, "%s", message.c_str());
    check_mpi(MPI_Bcast(text, sizeof text, MPI_CHAR, out[1], comm), "Bcast");
    throw error(static_cast<errc>(out[0]), text);
  }

  // ----- failures ------------------------------------------------------------------
  enum phase : int { p_directory, p_apply, p_bisect, p_migrate, p_arrive, p_ghosts, p_detect, p_count };
  static const char* phase_name(int p) {
    static constexpr const char* names[] = {"the id check",       "applying the staged operations",
                                            "the bisection",      "the migration",
                                            "the arrivals",       "the ghost update",
                                            "the local detection"};
    return names[p];
  }
  void maybe_inject(int p) {
    if (inject_phase == p) {
      inject_phase = -1;
      throw std::bad_alloc();
    }
  }
  /// Runs a local phase; a failure is kept for the next agreement point.
  template <class F>
  void guarded(int p, F&& f) {
    if (fail_code >= 0) return;  // failed earlier in this call: skip the work, keep communicating
    try {
      maybe_inject(p);
      f();
    } catch (const std::exception& e) {
      fail_code = static_cast<int>(errc::capacity);
      fail_message =
          "hhg::distributed_hash_grids: rank " + std::to_string(rank) + " failed during " + phase_name(p) + " (" +
          (dynamic_cast<const std::bad_alloc*>(&e) ? std::string("out of memory") : std::string(e.what())) + ")";
    }
  }
  /// An agreement point: when any rank failed, every rank throws the error
  /// of the lowest failing rank. `clean`: nothing has changed yet (the staged
  /// operations are dropped); otherwise the structure is broken everywhere.
  void checkpoint(bool clean, int code = -1, std::string message = {}) {
    if (fail_code >= 0 && code < 0) {
      code = fail_code;
      message = fail_message;
    }
    fail_code = -1;
    try {
      agree(code, message);
    } catch (const error& e) {
      staged.clear();
      clear_moves();
      if (clean) throw;
      broken = true;
      throw error(e.code(), std::string(e.what()) +
                                "; the structure is now unusable on every rank (every call throws): destroy it");
    }
  }
  void throw_if_broken() const {
    if (broken)
      throw error(errc::capacity,
                  "hhg::distributed_hash_grids: unusable after a failed collective call (see its error): destroy it");
  }

  // ----- the collective step --------------------------------------------------------
  std::uint64_t commit() {
    throw_if_broken();
    const double t0 = MPI_Wtime();
    const std::uint64_t n = commit_steps();
    st.commit_seconds = MPI_Wtime() - t0;
    return n;
  }

  std::uint64_t commit_steps() {
    st.bytes_sent = 0;
    st.messages_sent = 0;
    st.rebalanced = false;
    arrived.clear();
    departed.clear();

    // 1. Global id check through the directory (an id lives on one rank).
    struct dir_entry {
      std::uint64_t id;
      std::uint64_t insert;  // 1 insert, 0 remove
    };
    std::vector<std::vector<dir_entry>> dir_out(size);
    guarded(p_directory, [&] {
      for (const auto& [id, op] : staged) {
        if (op.kind == staged_op::insert) dir_out[directory_rank(id, size)].push_back({id, 1});
        if (op.kind == staged_op::remove) dir_out[directory_rank(id, size)].push_back({id, 0});
      }
      for (auto& v : dir_out) std::sort(v.begin(), v.end(), [](auto& a, auto& b) { return a.id < b.id; });
    });
    std::vector<dir_entry> dir_in;
    int code = -1;
    std::string message;
    try {
      exchange_records(dir_out, dir_in, true);  // a failure so far: nothing has changed
    } catch (const error& e) {
      code = static_cast<int>(e.code());
      message = e.what();
      dir_in.clear();
    }
    std::unordered_map<std::uint64_t, int> inserts;
    std::unordered_set<std::uint64_t> removes;
    guarded(p_directory, [&] {
      for (const auto& e : dir_in) {
        if (e.insert)
          ++inserts[e.id];
        else
          removes.insert(e.id);
      }
    });
    if (code < 0 && fail_code >= 0) {
      code = fail_code;
      message = fail_message;
      fail_code = -1;
    }
    if (code < 0) {
      std::uint64_t bad = 0;
      bool found = false;
      for (const auto& [id, count] : inserts) {
        if (count > 1 || (directory.count(id) && !removes.count(id))) {
          if (!found || id < bad) bad = id;
          found = true;
        }
      }
      if (found) {
        code = static_cast<int>(errc::invalid_handle);
        message = "hhg::distributed_hash_grids: global id " + std::to_string(bad) +
                  (inserts[bad] > 1 ? " inserted on more than one rank" : " inserted while it lives on another rank") +
                  "; the staged operations of every rank were dropped";
      }
    }
    try {
      agree(code, message);
    } catch (const error&) {
      staged.clear();
      clear_moves();
      throw;
    }
    // From here on a failure leaves the structure broken (agreed at the next
    // collective: no rank waits).
    guarded(p_apply, [&] {
      for (const auto id : removes) directory.erase(id);
      for (const auto& [id, count] : inserts) directory.insert(id);
      apply_staged();
    });

    // 3. Owners: load per rank; re-bisect when unbalanced.
    std::vector<long long> load(size, 0), load_sum(size, 0);
    auto count_loads = [&] {
      std::fill(load.begin(), load.end(), 0);
      for_each_owned([&](std::size_t idx) { ++load[locate(reference_point(box_of[idx]))]; });
      checkpoint(false);
      check_mpi(MPI_Allreduce(load.data(), load_sum.data(), size, MPI_LONG_LONG, MPI_SUM, comm), "Allreduce");
      long long total = 0, most = 0;
      for (const long long l : load_sum) {
        total += l;
        most = std::max(most, l);
      }
      const double imbalance = total == 0 ? 1.0 : static_cast<double>(most) * size / static_cast<double>(total);
      return std::pair<long long, double>(total, imbalance);
    };
    auto [total, imbalance] = count_loads();
    if (size > 1 && (tree.empty() || imbalance > cfg.rebalance_factor * std::max(1.0, achieved_imbalance))) {
      bisect(static_cast<std::uint64_t>(total));
      std::tie(total, imbalance) = count_loads();
      achieved_imbalance = imbalance;
    } else {
      // What a bisection could not fix (everything at one point) is not retried
      // every step; the allowance decays so a scene that spreads out later is
      // balanced again (5 % a step).
      achieved_imbalance = std::max(1.0, achieved_imbalance * 0.95);
    }
    st.imbalance = imbalance;

    // 4. Migration to the new owners.
    std::vector<std::vector<record>> out(size);
    std::vector<record> in;
    guarded(p_migrate, [&] {
      for_each_owned([&](std::size_t idx) {
        const box_type& b = box_of[idx];
        const int r = locate(reference_point(b));
        if (r != rank) {
          out[r].push_back({id_of[idx], b});
          departed.push_back(id_of[idx]);
          owned.erase(id_of[idx]);
          drop(handle_of[idx]);
        }
      });
    });
    exchange_records(out, in);
    guarded(p_arrive, [&] {
      for (const auto& rec : in) {
        owned.emplace(rec.id, add(rec.id, rec.b, false));
        arrived.push_back(rec.id);
      }
      std::sort(arrived.begin(), arrived.end());
      std::sort(departed.begin(), departed.end());
    });
    st.migrated_out = departed.size();
    st.migrated_in = arrived.size();

    if (periodic) {
      exchange_images();
      checkpoint(false);
      return static_cast<std::uint64_t>(total);
    }

    // 5. Ghosts: every owned box to every other rank whose part it reaches.
    for (auto& v : out) v.clear();
    if (size > 1)
      guarded(p_ghosts, [&] {
        for_each_owned([&](std::size_t idx) {
          const box_type& b = box_of[idx];
          route(b, [&](int r) {
            if (r != rank) out[r].push_back({id_of[idx], b});
          });
        });
      });
    exchange_records(out, in);
    ++exchange;
    guarded(p_ghosts, [&] {
      for (const auto& rec : in) {
        const auto it = ghosts.find(rec.id);
        if (it == ghosts.end()) {
          ghosts.emplace(rec.id, add(rec.id, rec.b, true));
        } else {
          set_box(it->second, rec.b);
          stamp[it->second.index] = exchange;
        }
      }
      for (auto it = ghosts.begin(); it != ghosts.end();) {
        if (stamp[it->second.index] != exchange) {
          drop(it->second);
          it = ghosts.erase(it);
        } else {
          ++it;
        }
      }
    });
    checkpoint(false);
    st.owned = owned.size();
    st.ghosts = ghosts.size();
    return static_cast<std::uint64_t>(total);
  }

  void apply_staged() {
    // 2. Apply the staged operations to the local grid: the moves of committed
    // objects as one batch first (they were all staged before any removal or
    // re-insertion of the same id), then the others.
    if (!move_h.empty()) {
      if (!periodic) grid.move(std::span<const handle>(move_h), std::span<const box_type>(move_b));
      for (std::size_t k = 0; k < move_h.size(); ++k) box_of[move_h[k].index] = move_b[k];
      clear_moves();
    }
    for (const auto& [id, op] : staged) {
      const auto it = owned.find(id);
      if (op.kind == staged_op::remove) {
        drop(it->second);
        owned.erase(it);
      } else if (it != owned.end()) {
        set_box(it->second, op.b);
      } else {
        owned.emplace(id, add(id, op.b, false));
      }
    }
    staged.clear();
  }

  /// Periodic step 5: every image of every owned object that reaches the
  /// (widened) domain goes to every rank whose part its clipped box reaches,
  /// this rank included; the local grid is rebuilt from the images received.
  void exchange_images() {
    std::vector<std::vector<image_record>> out(size);
    guarded(p_ghosts, [&] {
      for_each_owned([&](std::size_t idx) {
        const box_type& b = box_of[idx];
        const std::uint64_t id = id_of[idx];
        for_each_image(b, [&](const std::array<std::int32_t, D>& t, const box_type& c) {
          route(c, [&](int r) { out[r].push_back(image_record{id, t, b, c}); });
        });
      });
    });
    // This rank's own images skip MPI (the largest share, copied twice otherwise).
    std::vector<image_record> own_images;
    own_images.swap(out[rank]);
    const std::size_t own = own_images.size();
    images.clear();
    exchange_records(out, images);
    guarded(p_ghosts, [&] {
      images.insert(images.end(), own_images.begin(), own_images.end());
      igrid.clear();
      std::vector<box_type> boxes(images.size());
      for (std::size_t k = 0; k < images.size(); ++k) boxes[k] = images[k].clipped;
      const std::vector<handle> hs = igrid.insert(std::span<const box_type>(boxes));
      image_of.assign(images.size(), 0);
      for (std::size_t k = 0; k < hs.size(); ++k) {
        if (hs[k].index >= image_of.size()) image_of.resize(hs[k].index + 1);
        image_of[hs[k].index] = static_cast<std::uint32_t>(k);
      }
    });
    st.owned = owned.size();
    st.ghosts = images.size() - own;  // images of other ranks' objects held here
  }

  void find_periodic_pairs(std::vector<periodic_id_pair<D>>& out) {
    commit();
    out.clear();
    guarded(p_detect, [&] { detect_periodic(out); });
    detected(out);
  }

  /// After the local detection: a failure on any rank is the same error on
  /// every rank, `out` empty, the structure as after the commit (usable).
  template <class P>
  void detected(std::vector<P>& out) {
    try {
      checkpoint(true);
    } catch (...) {
      out.clear();
      throw;
    }
  }

  void detect_periodic(std::vector<periodic_id_pair<D>>& out) {
    const double t0 = MPI_Wtime();
    igrid.find_pairs(local_pairs);
    point q;
    std::array<std::int32_t, D> t{}, s{};
    for (const auto& hp : local_pairs) {
      const image_record* x = &images[image_of[hp.a.index]];
      const image_record* y = &images[image_of[hp.b.index]];
      if (y->id < x->id) std::swap(x, y);
      for (int i = 0; i < D; ++i) s[i] = y->shift[i] - x->shift[i];
      if (x->id == y->id) {  // an object and its own image: s lexicographically positive
        int first = 0;
        while (first < D && s[first] == 0) ++first;
        if (first == D) continue;  // cannot happen: one image per shift
        if (s[first] < 0) {
          std::swap(x, y);
          for (int i = 0; i < D; ++i) s[i] = -s[i];
        }
      }
      const box_type bi = periodic_image(y->raw, s, dom);
      if (!overlaps(x->raw, bi)) continue;
      wrap(x->raw, bi, q, t);
      // The one image pair that decides (a, b, s): a's image under -t (then
      // b's is under s - t), on the rank whose part holds q.
      bool canonical = true;
      for (int i = 0; i < D; ++i) canonical = canonical && x->shift[i] == -t[i];
      if (rule == ownership_rule::max_of_mins && !canonical) continue;
      if (rule != ownership_rule::owner_of_first && locate(q) != rank) continue;
      out.push_back(periodic_id_pair<D>{x->id, y->id, s});
    }
    st.local_pairs = local_pairs.size();
    st.pairs = out.size();
    st.detect_seconds = MPI_Wtime() - t0;
  }

  bool keep(handle a, handle b) const {
    const box_type& x = box_of[a.index];
    const box_type& y = box_of[b.index];
    point p;
    switch (rule) {
      case ownership_rule::max_of_mins:
        for (int i = 0; i < D; ++i) p[i] = std::max(x.min[i], y.min[i]);
        return locate(p) == rank;
      case ownership_rule::min_of_mins:
        for (int i = 0; i < D; ++i) p[i] = std::min(x.min[i], y.min[i]);
        return locate(p) == rank;
      case ownership_rule::owner_of_first: return state[a.index] == owned_slot;
    }
    return false;
  }

  void find_pairs(std::vector<std::pair<std::uint64_t, std::uint64_t>>& out) {
    commit();
    out.clear();
    guarded(p_detect, [&] { detect_plain(out); });
    detected(out);
  }

  void detect_plain(std::vector<std::pair<std::uint64_t, std::uint64_t>>& out) {
    const double t0 = MPI_Wtime();
    grid.find_pairs(local_pairs);
    const bool alone = size == 1 && rule == ownership_rule::max_of_mins;
    for (const auto& hp : local_pairs) {
      if (!alone && !keep(hp.a, hp.b)) continue;
      std::uint64_t a = id_of[hp.a.index], b = id_of[hp.b.index];
      if (b < a) std::swap(a, b);
      out.emplace_back(a, b);
    }
    st.local_pairs = local_pairs.size();
    st.pairs = out.size();
    st.detect_seconds = MPI_Wtime() - t0;
  }
};

}  // namespace detail

// ===== the public class ===========================================================

namespace {

void check_box_or_throw(const char* where, const auto& b) {
  int axis = -1;
  const box_problem p = check_box(b, &axis);
  if (p == box_problem::none) return;
  throw error(p == box_problem::nan_coordinate ? errc::nan_coordinate : errc::inverted_box,
              std::string(where) + ": " + detail::box_error_text(p) + " (axis " + std::to_string(axis) + ")");
}

}  // namespace

template <int D, class T>
distributed_hash_grids<D, T>::distributed_hash_grids(MPI_Comm comm, const distributed_config& c) {
  init(comm, c, nullptr);
}

template <int D, class T>
distributed_hash_grids<D, T>::distributed_hash_grids(MPI_Comm comm, const periodic_domain<D, T>& domain,
                                                     const distributed_config& c) {
  init(comm, c, &domain);
}

template <int D, class T>
void distributed_hash_grids<D, T>::init(MPI_Comm comm, const distributed_config& c,
                                        const periodic_domain<D, T>* domain) {
  MPI_Comm dup = MPI_COMM_NULL;
  detail::check_mpi(MPI_Comm_dup(comm, &dup), "Comm_dup");
  int code = -1;
  std::string message;
  try {
    validate_config(c.grid);
    if (!(c.rebalance_factor >= 1) || !std::isfinite(c.rebalance_factor))
      throw error(errc::bad_config, "distributed_config::rebalance_factor must be >= 1 and finite");
    if (c.samples_per_rank < 1) throw error(errc::bad_config, "distributed_config::samples_per_rank must be >= 1");
    if (domain) validate_domain(*domain);
  } catch (const error& e) {
    code = static_cast<int>(e.code());
    message = e.what();
  }
  // The same configuration on every rank: compare min and max of each field.
  constexpr int nf = 13 + 3 * D;
  double fields[nf] = {c.grid.hierarchy_factor,
                       double(c.grid.initial_cells[0]),
                       double(c.grid.initial_cells[1]),
                       double(c.grid.initial_cells[2]),
                       double(c.grid.minimal_grid_density),
                       double(static_cast<int>(c.grid.growth)),
                       double(c.grid.activation_threshold),
                       double(c.grid.cell_capacity),
                       double(static_cast<int>(c.grid.strategy)),
                       c.rebalance_factor,
                       double(c.samples_per_rank),
                       domain ? 1.0 : 0.0,
                       c.grid.adaptive_factor ? 1.0 : 0.0};
  // The periodic domain: which axes wrap, and their bounds (others ignored).
  for (int i = 0; i < D; ++i) {
    const bool wraps = domain && domain->periodic[i];
    fields[13 + 3 * i] = wraps ? 1.0 : 0.0;
    fields[14 + 3 * i] = wraps ? static_cast<double>(domain->bounds.min[i]) : 0.0;
    fields[15 + 3 * i] = wraps ? static_cast<double>(domain->bounds.max[i]) : 0.0;
  }
  double lo[nf], hi[nf];
  for (double& f : fields)
    if (std::isnan(f)) f = -1e300;  // NaN fields compare equal here; validate_config reports them
  int rank = 0;
  MPI_Comm_rank(dup, &rank);
  try {
    detail::check_mpi(MPI_Allreduce(fields, lo, nf, MPI_DOUBLE, MPI_MIN, dup), "Allreduce");
    detail::check_mpi(MPI_Allreduce(fields, hi, nf, MPI_DOUBLE, MPI_MAX, dup), "Allreduce");
    if (code < 0 && std::memcmp(lo, hi, sizeof lo) != 0) {
      code = static_cast<int>(errc::bad_config);
      message = "hhg::distributed_hash_grids: the ranks' configurations (or periodic domains) differ";
    }
    // agree() needs a state; use a temporary one-off exchange here.
    int in[2] = {code < 0 ? INT_MAX : code, rank};
    int out[2];
    detail::check_mpi(MPI_Allreduce(in, out, 1, MPI_2INT, MPI_MINLOC, dup), "Allreduce");
    if (out[0] != INT_MAX) {
      char text[512] = {};
      if (rank == out[1]) std::snprintf(text, sizeof text, "%s", message.c_str());
      detail::check_mpi(MPI_Bcast(text, sizeof text, MPI_CHAR, out[1], dup), "Bcast");
      throw error(static_cast<errc>(out[0]), text);
    }
    s_ = std::make_unique<detail::distributed_state<D, T>>(c);
    if (domain) s_->set_domain(*domain);
  } catch (...) {
    MPI_Comm_free(&dup);
    throw;
  }
  s_->comm = dup;
  s_->rank = rank;
  MPI_Comm_size(dup, &s_->size);
}

template <int D, class T>
distributed_hash_grids<D, T>::~distributed_hash_grids() {
  if (!s_) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && s_->comm != MPI_COMM_NULL) MPI_Comm_free(&s_->comm);
}

template <int D, class T>
void distributed_hash_grids<D, T>::insert(id_type id, const box_type& b) {
  s_->throw_if_broken();
  check_box_or_throw("hhg::distributed_hash_grids::insert", b);
  s_->check_periodic("hhg::distributed_hash_grids::insert", b);
  if (owns(id))
    throw error(errc::invalid_handle,
                "hhg::distributed_hash_grids::insert: global id " + std::to_string(id) + " is already owned here");
  auto& st = s_->staged;
  const auto it = st.find(id);
  using op = typename detail::distributed_state<D, T>::staged_op;
  if (it != st.end())  // a staged removal of a committed object: now a move
    it->second = op{op::move, b};
  else
    st.emplace(id, op{op::insert, b});
}

template <int D, class T>
void distributed_hash_grids<D, T>::move(id_type id, const box_type& b) {
  s_->throw_if_broken();
  check_box_or_throw("hhg::distributed_hash_grids::move", b);
  s_->check_periodic("hhg::distributed_hash_grids::move", b);
  if (!owns(id))
    throw error(errc::invalid_handle,
                "hhg::distributed_hash_grids::move: global id " + std::to_string(id) + " is not owned by this rank");
  auto& s = *s_;
  if (!s.staged.empty()) {
    const auto it = s.staged.find(id);
    if (it != s.staged.end()) {
      it->second.b = b;  // insert stays insert, move (a remove then insert) stays move
      return;
    }
  }
  const handle h = s.owned.at(id);
  std::uint32_t& slot = s.move_slot[h.index];
  if (slot != 0) {
    s.move_b[slot - 1] = b;
  } else {
    s.move_h.push_back(h);
    s.move_b.push_back(b);
    slot = static_cast<std::uint32_t>(s.move_b.size());
  }
}

template <int D, class T>
void distributed_hash_grids<D, T>::remove(id_type id) {
  s_->throw_if_broken();
  if (!owns(id))
    throw error(errc::invalid_handle,
                "hhg::distributed_hash_grids::remove: global id " + std::to_string(id) + " is not owned by this rank");
  auto& st = s_->staged;
  using op = typename detail::distributed_state<D, T>::staged_op;
  const auto it = st.find(id);
  if (it != st.end() && it->second.kind == op::insert)
    st.erase(it);
  else if (it != st.end())
    it->second = op{op::remove, {}};
  else
    st.emplace(id, op{op::remove, {}});
}

template <int D, class T>
bool distributed_hash_grids<D, T>::owns(id_type id) const noexcept {
  const auto it = s_->staged.find(id);
  if (it != s_->staged.end()) return it->second.kind != detail::distributed_state<D, T>::staged_op::remove;
  return s_->owned.count(id) != 0;
}

template <int D, class T>
auto distributed_hash_grids<D, T>::get(id_type id) const -> box_type {
  if (!owns(id))
    throw error(errc::invalid_handle,
                "hhg::distributed_hash_grids::get: global id " + std::to_string(id) + " is not owned by this rank");
  const auto it = s_->staged.find(id);
  if (it != s_->staged.end()) return it->second.b;
  const handle h = s_->owned.at(id);
  if (const std::uint32_t slot = s_->move_slot[h.index]) return s_->move_b[slot - 1];
  return s_->box_of[h.index];
}

template <int D, class T>
std::vector<std::uint64_t> distributed_hash_grids<D, T>::owned_ids() const {
  std::vector<std::uint64_t> ids;
  ids.reserve(s_->owned.size() + s_->staged.size());
  for (const auto& [id, h] : s_->owned)
    if (!s_->staged.count(id)) ids.push_back(id);
  for (const auto& [id, op] : s_->staged)
    if (op.kind != detail::distributed_state<D, T>::staged_op::remove) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

template <int D, class T>
std::size_t distributed_hash_grids<D, T>::local_size() const noexcept {
  std::size_t n = s_->owned.size();
  using op = typename detail::distributed_state<D, T>::staged_op;
  for (const auto& [id, o] : s_->staged) {
    if (o.kind == op::insert && !s_->owned.count(id)) ++n;
    if (o.kind == op::remove) --n;
  }
  return n;
}

template <int D, class T>
const std::vector<std::uint64_t>& distributed_hash_grids<D, T>::arrived() const noexcept {
  return s_->arrived;
}
template <int D, class T>
const std::vector<std::uint64_t>& distributed_hash_grids<D, T>::departed() const noexcept {
  return s_->departed;
}

template <int D, class T>
std::uint64_t distributed_hash_grids<D, T>::commit() {
  return s_->commit();
}

template <int D, class T>
void distributed_hash_grids<D, T>::find_pairs(std::vector<id_pair>& out) {
  if (s_->periodic)  // the same on every rank (the domain was agreed): no rank waits
    throw error(errc::bad_config,
                "hhg::distributed_hash_grids::find_pairs: a periodic structure reports periodic_id_pair");
  s_->find_pairs(out);
}

template <int D, class T>
void distributed_hash_grids<D, T>::find_pairs(std::vector<periodic_id_pair<D>>& out) {
  if (!s_->periodic)
    throw error(errc::bad_config,
                "hhg::distributed_hash_grids::find_pairs: periodic_id_pair needs a periodic structure");
  s_->find_periodic_pairs(out);
}

template <int D, class T>
bool distributed_hash_grids<D, T>::is_periodic() const noexcept {
  return s_->periodic;
}

template <int D, class T>
auto distributed_hash_grids<D, T>::domain() const noexcept -> const periodic_domain<D, T>& {
  return s_->dom;
}

template <int D, class T>
auto distributed_hash_grids<D, T>::part() const -> box_type {
  box_type b;
  for (int i = 0; i < D; ++i) {
    b.min[i] = -std::numeric_limits<T>::infinity();
    b.max[i] = std::numeric_limits<T>::infinity();
  }
  const auto& t = s_->tree;
  if (t.empty()) return b;
  // Find the path to this rank's leaf (the tree is small: one leaf per rank).
  std::vector<int> parent(t.size(), -1);
  int leaf = -1;
  for (int n = 0; n < static_cast<int>(t.size()); ++n) {
    if (t[n].leaf_rank == s_->rank) leaf = n;
    if (t[n].leaf_rank < 0) {
      parent[t[n].child[0]] = n;
      parent[t[n].child[1]] = n;
    }
  }
  for (int n = leaf; parent[n] >= 0; n = parent[n]) {
    const auto& p = t[parent[n]];
    if (p.child[0] == n)
      b.max[p.axis] = std::min(b.max[p.axis], p.cut);
    else
      b.min[p.axis] = std::max(b.min[p.axis], p.cut);
  }
  return b;
}

template <int D, class T>
int distributed_hash_grids<D, T>::rank_of(const std::array<T, D>& p) const {
  return s_->locate(p);
}

template <int D, class T>
const distributed_statistics& distributed_hash_grids<D, T>::stats() const noexcept {
  return s_->st;
}
template <int D, class T>
int distributed_hash_grids<D, T>::rank() const noexcept {
  return s_->rank;
}
template <int D, class T>
int distributed_hash_grids<D, T>::size() const noexcept {
  return s_->size;
}
template <int D, class T>
MPI_Comm distributed_hash_grids<D, T>::communicator() const noexcept {
  return s_->comm;
}
template <int D, class T>
void distributed_hash_grids<D, T>::inject_failure_for_testing(int phase) noexcept {
  s_->inject_phase = phase;
}

template <int D, class T>
void distributed_hash_grids<D, T>::set_ownership_rule_for_testing(detail::ownership_rule r) noexcept {
  s_->rule = r;
}

template class distributed_hash_grids<2, float>;
template class distributed_hash_grids<2, double>;
template class distributed_hash_grids<3, float>;
template class distributed_hash_grids<3, double>;

}  // namespace hhg
