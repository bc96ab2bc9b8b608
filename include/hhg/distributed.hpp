// hhg/distributed.hpp: the hash grids over MPI (target hhg::mpi, built when
// CMake finds MPI). See docs/distributed.md.
//
// Every rank owns the objects whose reference point lies in its part of a
// recursive coordinate bisection (RCB) of space; it keeps them, plus ghost
// copies of the other ranks' objects whose closed box reaches into its part,
// in a local hhg::hash_grids. A pair is reported by exactly one rank: the rank
// whose part holds the point max(min_a, min_b) (per axis). That point lies in
// both closed boxes, so both boxes reach that rank's part and it sees both.
//
// Usage (every rank):
//   hhg::distributed_hash_grids<3, double> g(MPI_COMM_WORLD);
//   g.insert(id, box);              // local: objects this rank creates
//   g.find_pairs(pairs);            // collective: the pairs this rank owns
//   for (auto id : g.owned_ids()) g.move(id, new_box(id));   // local
//
// insert/move/remove are local (no communication) and are staged: they take
// effect at the next collective find_pairs (or commit), all at once. After a
// collective call an object may have migrated: move/remove an id only on the
// rank that owns it (owns(id), owned_ids(), and arrived()/departed() list the
// changes of the last collective call).
//
// Periodic domains: construct with an hhg::periodic_domain and call the
// find_pairs overload taking periodic_id_pair: over all ranks, exactly the pairs
// and shifts of hhg::periodic_pairs, each once (docs/distributed.md).
//
// Errors: a local call with bad input (NaN, min > max, an id already owned or
// staged here, an id not owned here) throws hhg::error on that rank and
// changes nothing. A collective call first agrees on errors found only
// globally (an id inserted on two ranks, or inserted while it lives on
// another rank): then every rank throws the same hhg::error, every rank's
// staged operations are dropped, and the structure is as after the last
// successful collective call. The constructor is collective and throws the
// same hhg::error(errc::bad_config) on every rank when the ranks' configurations
// differ or one is out of range. A failure of one rank inside a collective
// call (std::bad_alloc, ...) is the same hhg::error(errc::capacity) on every
// rank, no rank waits: during the id check or the local detection nothing has
// changed (staged operations dropped); later the structure is left unusable
// on every rank (every call throws errc::capacity; destroy it).
#pragma once

#include <mpi.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "hhg/box.hpp"
#include "hhg/config.hpp"
#include "hhg/error.hpp"
#include "hhg/periodic.hpp"

namespace hhg {

struct distributed_config {
  /// Configuration of each rank's local hash grids.
  config grid{};
  /// Re-bisect when the most loaded rank would own more than this factor of
  /// the average object count. Must be >= 1 and finite. Default 1.2.
  double rebalance_factor = 1.2;
  /// Reference points each rank contributes to a bisection, at most (a
  /// stride sample of its objects, weighted by its count). Must be >= 1.
  std::uint32_t samples_per_rank = 4096;
};

/// Counters of the last collective call on this rank.
struct distributed_statistics {
  std::size_t owned = 0;            ///< objects owned here
  std::size_t ghosts = 0;           ///< ghost copies held here
  std::size_t migrated_out = 0;     ///< objects sent to their new owner
  std::size_t migrated_in = 0;      ///< objects received from their old owner
  std::uint64_t bytes_sent = 0;     ///< payload bytes this rank sent (ids, boxes, samples)
  std::uint64_t messages_sent = 0;  ///< non-empty point-to-point payloads sent
  std::size_t local_pairs = 0;      ///< pairs the local grid found (before the ownership filter)
  std::size_t pairs = 0;            ///< pairs this rank owns
  double imbalance = 1;             ///< max over ranks of owned / average owned (after migration)
  bool rebalanced = false;          ///< the bisection was recomputed in this call
  std::uint64_t rebalances = 0;     ///< bisections computed so far
  double commit_seconds = 0;        ///< the collective part: checks, migration, ghosts, local grid updates
  double detect_seconds = 0;        ///< local detection and the ownership filter (find_pairs)
};

/// A pair of a periodic structure: box `a` overlaps the image of box `b` under
/// `shift` (periodic_image), a <= b, as hhg::periodic_pairs reports it (a == b:
/// an object meeting its own image, shift lexicographically positive).
template <int D>
struct periodic_id_pair {
  std::uint64_t a = 0;
  std::uint64_t b = 0;
  std::array<std::int32_t, D> shift{};
  friend constexpr bool operator==(const periodic_id_pair&, const periodic_id_pair&) = default;
  friend constexpr auto operator<=>(const periodic_id_pair&, const periodic_id_pair&) = default;
};

namespace detail {
template <int D, class T>
struct distributed_state;
/// Test hook: which rank reports a cross-rank pair. Only `max_of_mins` is
/// correct; the others exist so the tests can show they would catch a wrong rule.
enum class ownership_rule { max_of_mins, min_of_mins, owner_of_first };
}  // namespace detail

template <int D, class T>
class distributed_hash_grids {
 public:
  using box_type = box<D, T>;
  using id_type = std::uint64_t;
  using id_pair = std::pair<std::uint64_t, std::uint64_t>;
  static constexpr int dimension = D;
  using scalar = T;

  /// Collective over `comm` (duplicated; the duplicate is freed by the
  /// destructor, which is therefore collective too).
  explicit distributed_hash_grids(MPI_Comm comm, const distributed_config& c = {});
  /// A periodic structure (collective, as above): the domain's periodic axes
  /// wrap around as in hhg/periodic.hpp. Every rank must pass the same domain
  /// (else errc::bad_config on every rank, as for a bad domain). Boxes must
  /// satisfy periodic_pairs' limits on periodic axes (errc::out_of_domain from
  /// insert/move on the calling rank). Pairs come from the periodic find_pairs.
  distributed_hash_grids(MPI_Comm comm, const periodic_domain<D, T>& domain, const distributed_config& c = {});
  ~distributed_hash_grids();
  distributed_hash_grids(const distributed_hash_grids&) = delete;
  distributed_hash_grids& operator=(const distributed_hash_grids&) = delete;

  /// Stages a new object with global id `id`, owned here until the next
  /// collective call decides its owner. Throws hhg::error (nan_coordinate,
  /// inverted_box; invalid_handle when `id` is owned or staged on this rank).
  void insert(id_type id, const box_type& b);
  /// Stages a new box for an object owned here. Throws hhg::error for a bad
  /// box or an id not owned here (invalid_handle).
  void move(id_type id, const box_type& b);
  /// Stages the removal of an object owned here (invalid_handle otherwise).
  void remove(id_type id);

  /// True when `id` is owned here (staged operations included).
  bool owns(id_type id) const noexcept;
  /// The box of an object owned here (staged operations included).
  box_type get(id_type id) const;
  /// Ids owned here, staged operations included, ascending.
  std::vector<id_type> owned_ids() const;
  /// Objects owned here (staged operations included).
  std::size_t local_size() const noexcept;
  /// Ids that came to / left this rank in the last collective call, ascending.
  const std::vector<id_type>& arrived() const noexcept;
  const std::vector<id_type>& departed() const noexcept;

  /// Collective: applies every rank's staged operations, migrates, rebalances
  /// when needed, exchanges ghosts. Global object count afterwards.
  std::uint64_t commit();

  /// Collective: commit(), then clears `out` and appends the pairs (a < b)
  /// this rank owns (order unspecified but deterministic). Over all ranks:
  /// every overlapping pair exactly once.
  void find_pairs(std::vector<id_pair>& out);

  /// Collective, periodic structures only: commit(), then clears `out` and
  /// appends the periodic pairs this rank owns. Over all ranks: exactly the
  /// pairs (and shifts) hhg::periodic_pairs reports for the same boxes, each
  /// once. (The plain find_pairs throws errc::bad_config on a periodic
  /// structure and this one on a plain structure, on every rank alike.)
  void find_pairs(std::vector<periodic_id_pair<D>>& out);
  /// True when constructed with a periodic domain.
  bool is_periodic() const noexcept;
  /// The periodic domain (no periodic axis for a plain structure).
  const periodic_domain<D, T>& domain() const noexcept;

  /// The part of space this rank owns: per axis [lo, hi), the outer parts
  /// reaching to -inf / +inf (included). Valid after the first collective call.
  box_type part() const;
  /// The rank whose part holds point p (after the first collective call).
  int rank_of(const std::array<T, D>& p) const;

  const distributed_statistics& stats() const noexcept;
  int rank() const noexcept;
  int size() const noexcept;
  MPI_Comm communicator() const noexcept;

  /// For tests only: use a wrong ownership rule to show the tests catch it.
  void set_ownership_rule_for_testing(detail::ownership_rule r) noexcept;
  /// For tests only: the next collective call throws std::bad_alloc on this
  /// rank in phase `phase` (0 id check, 1 applying the staged operations,
  /// 2 bisection, 3 migration, 4 arrivals, 5 ghost update, 6 local detection).
  void inject_failure_for_testing(int phase) noexcept;

 private:
  void init(MPI_Comm comm, const distributed_config& c, const periodic_domain<D, T>* domain);
  std::unique_ptr<detail::distributed_state<D, T>> s_;
};

extern template class distributed_hash_grids<2, float>;
extern template class distributed_hash_grids<2, double>;
extern template class distributed_hash_grids<3, float>;
extern template class distributed_hash_grids<3, double>;

}  // namespace hhg
