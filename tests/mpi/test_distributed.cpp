// tests/mpi/test_distributed.cpp: hhg::distributed_hash_grids against brute force.
//
// Run as `mpiexec -n P hhg_mpi_tests` (CTest runs P = 1, 2, 3, 4). Every rank
// builds the same scene (the same seeds), inserts its share, and the union of
// the ranks' pairs (gathered to rank 0) must equal the brute-force pair set of
// the whole scene: no pair twice, none missing, none extra. Failures are
// counted on every rank and summed; the exit status is non-zero when any check
// failed anywhere.
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "hhg/distributed.hpp"

namespace {

int g_rank = 0, g_size = 1;
int g_failures = 0;
std::string g_test;

#define CHECK(cond)                                                                                                 \
  do {                                                                                                              \
    if (!(cond)) {                                                                                                  \
      ++g_failures;                                                                                                 \
      std::fprintf(stderr, "[rank %d] %s: CHECK failed at line %d: %s\n", g_rank, g_test.c_str(), __LINE__, #cond); \
    }                                                                                                               \
  } while (0)

std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
/// Uniform in [0, 1), the same on every rank for the same arguments.
double u01(std::uint64_t seed, std::uint64_t a, std::uint64_t b = 0) {
  return static_cast<double>(mix(mix(mix(seed) ^ a) ^ (b * 0x51ED27u)) >> 11) * 0x1.0p-53;
}

template <int D, class T>
using scene = std::map<std::uint64_t, hhg::box<D, T>>;
using id_pair = std::pair<std::uint64_t, std::uint64_t>;

template <int D, class T>
std::vector<id_pair> brute(const scene<D, T>& s) {
  std::vector<std::pair<std::uint64_t, hhg::box<D, T>>> v(s.begin(), s.end());
  std::vector<id_pair> out;
  for (std::size_t i = 0; i < v.size(); ++i)
    for (std::size_t j = i + 1; j < v.size(); ++j)
      if (hhg::overlaps(v[i].second, v[j].second)) out.emplace_back(v[i].first, v[j].first);
  std::sort(out.begin(), out.end());
  return out;
}

struct verdict {
  long long duplicates = 0, missing = 0, extra = 0, expected = 0;
  bool ok() const { return duplicates == 0 && missing == 0 && extra == 0; }
};

/// Collective: gathers every rank's pairs on rank 0 and compares with brute
/// force; the verdict is broadcast to every rank.
template <int D, class T>
verdict compare(const std::vector<id_pair>& mine, const scene<D, T>& truth) {
  std::vector<std::uint64_t> flat;
  for (const auto& p : mine) {
    flat.push_back(p.first);
    flat.push_back(p.second);
  }
  int n = static_cast<int>(flat.size());
  std::vector<int> counts(g_size), displs(g_size);
  MPI_Gather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  int total = 0;
  for (int r = 0; r < g_size; ++r) {
    displs[r] = total;
    total += counts[r];
  }
  std::vector<std::uint64_t> all(g_rank == 0 ? total : 0);
  MPI_Gatherv(flat.data(), n, MPI_UINT64_T, all.data(), counts.data(), displs.data(), MPI_UINT64_T, 0, MPI_COMM_WORLD);
  long long v[4] = {0, 0, 0, 0};
  if (g_rank == 0) {
    std::vector<id_pair> got;
    for (std::size_t k = 0; k + 1 < all.size(); k += 2) got.emplace_back(all[k], all[k + 1]);
    std::sort(got.begin(), got.end());
    const auto unique_end = std::unique(got.begin(), got.end());
    v[0] = got.end() - unique_end;
    got.erase(unique_end, got.end());
    const auto want = brute(truth);
    std::vector<id_pair> diff;
    std::set_difference(want.begin(), want.end(), got.begin(), got.end(), std::back_inserter(diff));
    v[1] = static_cast<long long>(diff.size());
    diff.clear();
    std::set_difference(got.begin(), got.end(), want.begin(), want.end(), std::back_inserter(diff));
    v[2] = static_cast<long long>(diff.size());
    v[3] = static_cast<long long>(want.size());
  }
  MPI_Bcast(v, 4, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  return verdict{v[0], v[1], v[2], v[3]};
}

template <int D, class T>
void expect_exact(hhg::distributed_hash_grids<D, T>& g, const scene<D, T>& truth, const char* what) {
  std::vector<id_pair> mine;
  g.find_pairs(mine);
  for (const auto& p : mine) CHECK(p.first < p.second);
  const verdict v = compare(mine, truth);
  if (!v.ok() && g_rank == 0)
    std::fprintf(stderr, "  %s %s: %lld duplicates, %lld missing, %lld extra of %lld pairs\n", g_test.c_str(), what,
                 v.duplicates, v.missing, v.extra, v.expected);
  CHECK(v.ok());
}

template <int D, class T>
hhg::box<D, T> cube(const std::array<double, D>& lo, double edge) {
  hhg::box<D, T> b;
  for (int i = 0; i < D; ++i) {
    b.min[i] = static_cast<T>(lo[i]);
    b.max[i] = static_cast<T>(lo[i] + edge);
  }
  return b;
}

/// A random box: corner in [offset, offset + span)^D, edge log-uniform in [lo, hi].
template <int D, class T>
hhg::box<D, T> random_box(std::uint64_t seed, std::uint64_t id, double offset, double span, double lo, double hi) {
  std::array<double, D> c;
  for (int i = 0; i < D; ++i) c[i] = offset + span * u01(seed, id, static_cast<std::uint64_t>(i));
  const double e = lo * std::pow(hi / lo, u01(seed, id, 17));
  return cube<D, T>(c, e);
}

// ----- scenes --------------------------------------------------------------------

template <int D, class T>
scene<D, T> adversarial(int kind, std::uint64_t seed) {
  const T inf = std::numeric_limits<T>::infinity();
  scene<D, T> s;
  std::uint64_t id = 1000 + seed * 7;  // ids are not dense and not 0-based
  auto add = [&](const hhg::box<D, T>& b) { s[id += 3] = b; };
  switch (kind) {
    case 0:  // sizes over 8 decades
      for (int k = 0; k < 800; ++k) add(random_box<D, T>(seed, k, 0, 100, 1e-4, 1e4 / 4));
      break;
    case 1:  // a touching lattice of unit cubes plus zero-size points on its corners
      for (int k = 0; k < 400; ++k) {
        std::array<double, D> c;
        int r = k;
        for (int i = 0; i < D; ++i) {
          c[i] = r % 8;
          r /= 8;
        }
        add(cube<D, T>(c, 1));
        if (k % 3 == 0) add(cube<D, T>(c, 0));
        if (k % 5 == 0) add(cube<D, T>(c, 0));  // duplicates of a point
      }
      break;
    case 2: {  // far from the origin
      const double off = std::is_same_v<T, float> ? 1e6 : 1e12;
      for (int k = 0; k < 600; ++k) add(random_box<D, T>(seed, k, off, 1000, 1, 40));
      for (int k = 0; k < 20; ++k) add(random_box<D, T>(seed, 9000 + k, -off, 10, 0.5, 3));
      break;
    }
    case 3: {  // unbounded objects and objects larger than a part
      for (int k = 0; k < 500; ++k) add(random_box<D, T>(seed, k, 0, 100, 0.5, 4));
      hhg::box<D, T> b;
      for (int i = 0; i < D; ++i) {
        b.min[i] = -inf;
        b.max[i] = inf;
      }
      add(b);  // everything
      auto half = b;
      half.max[0] = 10;
      add(half);  // a half-space
      auto slab = b;
      slab.min[1] = 50;
      slab.max[1] = 50;
      add(slab);  // a zero-thickness plane
      auto at_inf = b;
      at_inf.min[0] = inf;
      at_inf.max[0] = inf;
      add(at_inf);  // a box at +inf on axis 0: meets only boxes reaching +inf there
      auto at_minus = b;
      at_minus.min[D - 1] = -inf;
      at_minus.max[D - 1] = -inf;
      add(at_minus);
      for (int k = 0; k < 5; ++k) add(random_box<D, T>(seed, 5000 + k, -20, 100, 60, 200));  // huge
      break;
    }
    case 4:  // everything at one point (bisection cannot separate anything)
      for (int k = 0; k < 300; ++k) add(cube<D, T>(std::array<double, D>{}, k % 2 ? 1 : 0));
      break;
    default:  // a far-away clump and a few huge ones: very uneven
      for (int k = 0; k < 600; ++k) add(random_box<D, T>(seed, k, 0, 10, 0.2, 1));
      for (int k = 0; k < 10; ++k) add(random_box<D, T>(seed, 700 + k, 1e5, 1e3, 1, 1e3));
      break;
  }
  return s;
}

/// Which rank inserts object number k of n: 0 round robin, 1 all on rank 0, 2 blocks, 3 last rank.
int inserter(int how, std::size_t k, std::size_t n) {
  switch (how) {
    case 0: return static_cast<int>(k % g_size);
    case 1: return 0;
    case 2: return static_cast<int>(k * g_size / std::max<std::size_t>(n, 1));
    default: return g_size - 1;
  }
}

template <int D, class T>
void insert_scene(hhg::distributed_hash_grids<D, T>& g, const scene<D, T>& s, int how) {
  std::size_t k = 0;
  for (const auto& [id, b] : s)
    if (inserter(how, k++, s.size()) == g_rank) g.insert(id, b);
}

template <int D, class T>
void test_static_scenes() {
  for (int kind = 0; kind < 6; ++kind) {
    for (int how = 0; how < 4; ++how) {
      const auto s = adversarial<D, T>(kind, 11 + kind);
      hhg::distributed_hash_grids<D, T> g(MPI_COMM_WORLD);
      insert_scene(g, s, how);
      expect_exact(g, s, ("scene " + std::to_string(kind) + " inserter " + std::to_string(how)).c_str());
      // Every object is owned by exactly one rank.
      long long mine = static_cast<long long>(g.local_size()), sum = 0;
      MPI_Allreduce(&mine, &sum, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
      CHECK(sum == static_cast<long long>(s.size()));
      // A second detection without changes gives the same answer.
      expect_exact(g, s, "again");
    }
  }
}

/// Dynamic sequence: moves (small and large), removals, insertions, a drift
/// that piles everything into one corner (rebalancing), on every rank.
template <int D, class T>
void test_dynamic(std::uint64_t seed, int steps) {
  scene<D, T> truth = adversarial<D, T>(static_cast<int>(seed % 2 ? 0 : 3), seed);
  hhg::distributed_hash_grids<D, T> g(MPI_COMM_WORLD);
  insert_scene(g, truth, 0);
  std::uint64_t next_id = 1u << 20;
  long long migrations = 0;
  std::uint64_t rebalances_after_first = 0;
  for (int step = 0; step < steps; ++step) {
    expect_exact(g, truth, ("step " + std::to_string(step)).c_str());
    if (step > 0) rebalances_after_first += g.stats().rebalanced ? 1 : 0;
    migrations += static_cast<long long>(g.stats().migrated_out);
    // The same decisions on every rank; each is applied by the owner.
    std::vector<std::uint64_t> ids;
    for (const auto& [id, b] : truth) ids.push_back(id);
    for (const std::uint64_t id : ids) {
      const double r = u01(seed, id, 1000 + static_cast<std::uint64_t>(step));
      auto b = truth[id];
      if (r < 0.05) {  // removal
        if (g.owns(id)) g.remove(id);
        truth.erase(id);
        continue;
      }
      if (!hhg::is_bounded(b)) continue;
      // Drift toward the corner (-30, ...) plus a jiggle; every 4th step a jump.
      const bool jump = r < 0.15 && step % 4 == 1;
      for (int i = 0; i < D; ++i) {
        const double c = static_cast<double>(b.min[i]);
        const double to = jump ? 100 * u01(seed, id, 50 + i) : c + (-30 - c) * 0.25 + (u01(seed, id, 70 + i) - 0.5);
        const T e = b.max[i] - b.min[i];
        b.min[i] = static_cast<T>(to);
        b.max[i] = b.min[i] + e;
      }
      truth[id] = b;
      if (g.owns(id)) g.move(id, b);
    }
    for (int k = 0; k < 40; ++k) {  // insertions, spread over the ranks
      const std::uint64_t id = next_id++;
      const auto b = random_box<D, T>(seed, id, 0, 100, 0.1, 5);
      truth[id] = b;
      if (static_cast<int>(id % static_cast<std::uint64_t>(g_size)) == g_rank) g.insert(id, b);
    }
    // Owners know their objects' boxes.
    for (const std::uint64_t id : g.owned_ids()) CHECK(g.get(id) == truth.at(id));
  }
  expect_exact(g, truth, "final");
  long long sum = 0;
  MPI_Allreduce(&migrations, &sum, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (g_size > 1) {
    CHECK(sum > 0);                     // objects did change owner
    CHECK(rebalances_after_first > 0);  // the drift forced a re-bisection
  }
}

/// Negative control: a wrong ownership rule must be caught by compare().
template <int D, class T>
void test_negative_control() {
  if (g_size < 2) return;  // one rank owns every pair under any rule
  for (auto rule : {hhg::detail::ownership_rule::min_of_mins, hhg::detail::ownership_rule::owner_of_first}) {
    const auto s = adversarial<D, T>(0, 5);
    hhg::distributed_hash_grids<D, T> g(MPI_COMM_WORLD);
    g.set_ownership_rule_for_testing(rule);
    insert_scene(g, s, 0);
    std::vector<id_pair> mine;
    g.find_pairs(mine);
    const verdict v = compare(mine, s);
    if (g_rank == 0)
      std::printf("  negative control (rule %d): %lld duplicates, %lld missing, %lld extra of %lld pairs\n",
                  static_cast<int>(rule), v.duplicates, v.missing, v.extra, v.expected);
    CHECK(!v.ok());  // the check sees the wrong rule
  }
}

/// Collects the error code every rank threw (-1: none) and checks they agree.
void expect_same_error_everywhere(int code, hhg::errc want) {
  std::vector<int> codes(g_size);
  MPI_Allgather(&code, 1, MPI_INT, codes.data(), 1, MPI_INT, MPI_COMM_WORLD);
  for (const int c : codes) CHECK(c == static_cast<int>(want));
}

template <int D, class T>
void test_errors() {
  const T nan = std::numeric_limits<T>::quiet_NaN();
  const auto s = adversarial<D, T>(0, 3);
  hhg::distributed_hash_grids<D, T> g(MPI_COMM_WORLD);
  insert_scene(g, s, 2);
  expect_exact(g, s, "before errors");
  const std::size_t before = g.local_size();

  // Local errors: thrown on the calling rank, nothing staged.
  hhg::box<D, T> bad = cube<D, T>(std::array<double, D>{}, 1);
  bad.min[D - 1] = nan;
  try {
    g.insert(1, bad);
    CHECK(false);
  } catch (const hhg::error& e) {
    CHECK(e.code() == hhg::errc::nan_coordinate);
  }
  bad = cube<D, T>(std::array<double, D>{}, 1);
  bad.min[0] = 2;
  try {
    g.insert(1, bad);
    CHECK(false);
  } catch (const hhg::error& e) {
    CHECK(e.code() == hhg::errc::inverted_box);
  }
  try {
    g.move(999999999, cube<D, T>(std::array<double, D>{}, 1));
    CHECK(false);
  } catch (const hhg::error& e) {
    CHECK(e.code() == hhg::errc::invalid_handle);
  }
  try {
    g.remove(999999999);
    CHECK(false);
  } catch (const hhg::error& e) {
    CHECK(e.code() == hhg::errc::invalid_handle);
  }
  const auto owned = g.owned_ids();
  if (!owned.empty()) {
    try {
      g.insert(owned.front(), cube<D, T>(std::array<double, D>{}, 1));
      CHECK(false);
    } catch (const hhg::error& e) {
      CHECK(e.code() == hhg::errc::invalid_handle);
    }
    if (hhg::is_bounded(g.get(owned.front()))) {
      try {
        auto b = g.get(owned.front());
        b.max[0] = std::numeric_limits<T>::quiet_NaN();
        g.move(owned.front(), b);
        CHECK(false);
      } catch (const hhg::error& e) {
        CHECK(e.code() == hhg::errc::nan_coordinate);
      }
    }
  }
  CHECK(g.local_size() == before);
  expect_exact(g, s, "after local errors");

  // Collective errors: the same new id inserted on two ranks, or an id that
  // lives on another rank inserted here. Every rank throws the same error;
  // every rank's staged operations are dropped.
  for (int variant = 0; variant < 2; ++variant) {
    if (g_size < 2 && variant == 0) continue;
    const std::uint64_t fresh = 77777777;
    // A harmless staged operation on every rank that must be dropped too.
    const std::uint64_t staged_id = 88888888 + static_cast<std::uint64_t>(g_rank);
    g.insert(staged_id, cube<D, T>(std::array<double, D>{}, 1));
    if (variant == 0) {
      if (g_rank <= 1) g.insert(fresh, cube<D, T>(std::array<double, D>{}, 2));
    } else {
      // Rank (from + 1) % P inserts an id that lives on rank `from`. With one
      // rank there is no other rank: check instead that remove + insert of the
      // same id is a move and insert + remove cancels.
      std::uint64_t victim = 0;
      std::uint64_t have = owned.empty() ? 0 : owned.front();
      std::vector<std::uint64_t> firsts(g_size);
      MPI_Allgather(&have, 1, MPI_UINT64_T, firsts.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD);
      int from = 0;
      for (int r = 0; r < g_size; ++r)
        if (firsts[r] != 0) {
          from = r;
          break;
        }
      victim = firsts[from];
      if (g_size == 1) {
        g.remove(victim);
        g.insert(victim, cube<D, T>(std::array<double, D>{}, 2));  // a move: allowed
        g.insert(fresh, cube<D, T>(std::array<double, D>{}, 2));
        g.remove(fresh);  // cancels: nothing to report; skip the error check
        std::vector<id_pair> mine;
        g.find_pairs(mine);  // commits the move and the staged insert
        auto t = s;
        t[victim] = cube<D, T>(std::array<double, D>{}, 2);
        t[staged_id] = cube<D, T>(std::array<double, D>{}, 1);
        CHECK(compare(mine, t).ok());
        g.remove(staged_id);
        g.move(victim, s.at(victim));
        expect_exact(g, s, "restored");
        continue;
      }
      if (g_rank == (from + 1) % g_size) g.insert(victim, cube<D, T>(std::array<double, D>{}, 2));
    }
    int code = -1;
    std::vector<id_pair> mine;
    try {
      g.find_pairs(mine);
    } catch (const hhg::error& e) {
      code = static_cast<int>(e.code());
      if (g_rank == 0 && variant == 0) std::printf("  agreed error: %s\n", e.what());
    }
    expect_same_error_everywhere(code, hhg::errc::invalid_handle);
    CHECK(!g.owns(staged_id));
    CHECK(!g.owns(fresh) || variant == 1);
    expect_exact(g, s, "after a collective error nothing changed");
  }

  // Configuration: ranks that disagree, or a bad value.
  {
    hhg::distributed_config c;
    if (g_rank == g_size - 1) c.rebalance_factor = g_size > 1 ? 1.5 : 0.5;
    int code = -1;
    try {
      hhg::distributed_hash_grids<D, T> h(MPI_COMM_WORLD, c);
    } catch (const hhg::error& e) {
      code = static_cast<int>(e.code());
    }
    expect_same_error_everywhere(code, hhg::errc::bad_config);
  }
  {
    hhg::distributed_config c;
    if (g_rank == 0) c.grid.hierarchy_factor = std::numeric_limits<double>::quiet_NaN();
    int code = -1;
    try {
      hhg::distributed_hash_grids<D, T> h(MPI_COMM_WORLD, c);
    } catch (const hhg::error& e) {
      code = static_cast<int>(e.code());
    }
    expect_same_error_everywhere(code, hhg::errc::bad_config);
  }
}

/// The parts tile space: every point has one owner, inside that rank's part().
template <int D, class T>
void test_parts() {
  const auto s = adversarial<D, T>(0, 9);
  hhg::distributed_hash_grids<D, T> g(MPI_COMM_WORLD);
  insert_scene(g, s, 1);
  g.commit();
  const auto p = g.part();
  const T inf = std::numeric_limits<T>::infinity();
  for (int k = 0; k < 2000; ++k) {
    std::array<T, D> x;
    for (int i = 0; i < D; ++i) {
      const double r = u01(77, static_cast<std::uint64_t>(k), static_cast<std::uint64_t>(i));
      x[i] = k % 50 == 0 ? (r < 0.5 ? -inf : inf) : static_cast<T>(-50 + 200 * r);
    }
    const int owner = g.rank_of(x);
    bool inside = true;
    for (int i = 0; i < D; ++i) inside = inside && p.min[i] <= x[i] && (x[i] < p.max[i] || p.max[i] == inf);
    CHECK(inside == (owner == g_rank));
    int count = inside ? 1 : 0, sum = 0;
    MPI_Allreduce(&count, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(sum == 1);
  }
}

template <int D, class T>
void run_all(const char* name) {
  g_test = std::string(name) + " static scenes";
  test_static_scenes<D, T>();
  g_test = std::string(name) + " dynamic";
  test_dynamic<D, T>(1, 14);
  test_dynamic<D, T>(2, 10);
  g_test = std::string(name) + " negative control";
  test_negative_control<D, T>();
  g_test = std::string(name) + " errors";
  test_errors<D, T>();
  g_test = std::string(name) + " parts";
  test_parts<D, T>();
  int total = 0;
  MPI_Allreduce(&g_failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0)
    std::printf("[%s] %s with %d ranks: %d failed checks so far\n", total ? "FAIL" : " OK ", name, g_size, total);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  run_all<3, double>("3D double");
  run_all<2, float>("2D float");
  run_all<3, float>("3D float");
  run_all<2, double>("2D double");
  int total = 0;
  MPI_Allreduce(&g_failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
