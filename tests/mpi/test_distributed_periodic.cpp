// tests/mpi/test_distributed_periodic.cpp: the periodic hhg::distributed_hash_grids
// against brute force over the images and against the serial hhg::periodic_pairs.
//
// Run as `mpiexec -n P hhg_mpi_periodic_tests` (CTest: P = 1, 2, 3, 4). Every
// rank builds the same scene (the same seeds) and inserts its share; the union
// of the ranks' periodic pairs, gathered on rank 0, must equal (1) brute force
// over a wide range of image shifts and (2) hhg::periodic_pairs of the same
// boxes: same pairs, same shifts, none twice. Scenes: random boxes over 6
// decades crossing the faces, boxes wider than half the period and wider than
// the period (several shifts per pair, self images), points on lo and hi
// (touching through the face), boxes several periods outside the domain, a
// domain far from the origin, boxes infinite on the non-periodic axes; every
// subset of periodic axes in 2D and 3D, float and double; dynamic steps with
// migration. Negative controls: two wrong rules must fail the same check.
// Failures: a std::bad_alloc injected on one rank in each phase of a collective
// call is the same error on every rank, with no hang (plain and periodic).
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "hhg/distributed.hpp"
#include "hhg/periodic.hpp"

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
double u01(std::uint64_t seed, std::uint64_t a, std::uint64_t b = 0) {
  return static_cast<double>(mix(mix(mix(seed) ^ a) ^ (b * 0x51ED27u)) >> 11) * 0x1.0p-53;
}

template <int D>
using pair_list = std::vector<hhg::periodic_id_pair<D>>;

/// Brute force: every a <= b, every shift in a range two wider than needed on
/// each side, the exact test with the canonical image.
template <int D, class T>
pair_list<D> brute(const hhg::periodic_domain<D, T>& d, const std::vector<hhg::box<D, T>>& boxes) {
  pair_list<D> out;
  for (std::size_t a = 0; a < boxes.size(); ++a)
    for (std::size_t b = a; b < boxes.size(); ++b) {
      std::array<std::int32_t, D> lo{}, hi{}, s{};
      for (int i = 0; i < D; ++i) {
        if (!d.periodic[i]) continue;
        // (long double: its exponent range holds the difference of any two
        // doubles, which overflows in double near the top of the range)
        const auto L = static_cast<long double>(static_cast<double>(d.bounds.max[i] - d.bounds.min[i]));
        lo[i] =
            static_cast<std::int32_t>(std::floor((static_cast<long double>(boxes[a].min[i]) - boxes[b].max[i]) / L)) -
            2;
        hi[i] =
            static_cast<std::int32_t>(std::ceil((static_cast<long double>(boxes[a].max[i]) - boxes[b].min[i]) / L)) + 2;
      }
      s = lo;
      while (true) {
        bool take = true;
        if (a == b) {
          int f = 0;
          while (f < D && s[f] == 0) ++f;
          take = f < D && s[f] > 0;
        }
        if (take && hhg::overlaps(boxes[a], hhg::periodic_image(boxes[b], s, d)))
          out.push_back(hhg::periodic_id_pair<D>{a, b, s});
        int i = 0;
        for (; i < D; ++i) {
          if (s[i] < hi[i]) {
            ++s[i];
            break;
          }
          s[i] = lo[i];
        }
        if (i == D) break;
      }
    }
  std::sort(out.begin(), out.end());
  return out;
}

struct verdict {
  long long duplicates = 0, missing = 0, extra = 0, expected = 0, serial_differs = 0;
  bool ok() const { return duplicates == 0 && missing == 0 && extra == 0 && serial_differs == 0; }
};

/// Collective: gathers the ranks' pairs on rank 0, compares with brute force
/// and with hhg::periodic_pairs; the verdict goes to every rank.
template <int D, class T>
verdict compare(const pair_list<D>& mine, const hhg::periodic_domain<D, T>& d,
                const std::vector<hhg::box<D, T>>& boxes) {
  std::vector<std::int64_t> flat;
  for (const auto& p : mine) {
    flat.push_back(static_cast<std::int64_t>(p.a));
    flat.push_back(static_cast<std::int64_t>(p.b));
    for (int i = 0; i < D; ++i) flat.push_back(p.shift[i]);
  }
  int n = static_cast<int>(flat.size());
  std::vector<int> counts(g_size), displs(g_size);
  MPI_Gather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  int total = 0;
  for (int r = 0; r < g_size; ++r) {
    displs[r] = total;
    total += counts[r];
  }
  std::vector<std::int64_t> all(g_rank == 0 ? total : 0);
  MPI_Gatherv(flat.data(), n, MPI_INT64_T, all.data(), counts.data(), displs.data(), MPI_INT64_T, 0, MPI_COMM_WORLD);
  long long v[5] = {0, 0, 0, 0, 0};
  if (g_rank == 0) {
    pair_list<D> got;
    for (std::size_t k = 0; k + 2 + D - 1 < all.size() + 1 && k < all.size(); k += 2 + D) {
      hhg::periodic_id_pair<D> p{static_cast<std::uint64_t>(all[k]), static_cast<std::uint64_t>(all[k + 1]), {}};
      for (int i = 0; i < D; ++i) p.shift[i] = static_cast<std::int32_t>(all[k + 2 + i]);
      got.push_back(p);
    }
    std::sort(got.begin(), got.end());
    const auto unique_end = std::unique(got.begin(), got.end());
    v[0] = got.end() - unique_end;
    got.erase(unique_end, got.end());
    const pair_list<D> want = brute(d, boxes);
    pair_list<D> diff;
    std::set_difference(want.begin(), want.end(), got.begin(), got.end(), std::back_inserter(diff));
    v[1] = static_cast<long long>(diff.size());
    diff.clear();
    std::set_difference(got.begin(), got.end(), want.begin(), want.end(), std::back_inserter(diff));
    v[2] = static_cast<long long>(diff.size());
    v[3] = static_cast<long long>(want.size());
    std::vector<hhg::periodic_pair<D>> serial;
    hhg::periodic_pairs(d, std::span<const hhg::box<D, T>>(boxes), serial);
    pair_list<D> serial_ids;
    for (const auto& p : serial) serial_ids.push_back(hhg::periodic_id_pair<D>{p.a, p.b, p.shift});
    v[4] = serial_ids == want ? 0 : 1;
  }
  MPI_Bcast(v, 5, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  return verdict{v[0], v[1], v[2], v[3], v[4]};
}

template <int D, class T>
verdict run_once(hhg::distributed_hash_grids<D, T>& g, const hhg::periodic_domain<D, T>& d,
                 const std::vector<hhg::box<D, T>>& boxes) {
  pair_list<D> mine;
  g.find_pairs(mine);
  for (const auto& p : mine) CHECK(p.a <= p.b);
  return compare(mine, d, boxes);
}

template <int D, class T>
void expect_exact(hhg::distributed_hash_grids<D, T>& g, const hhg::periodic_domain<D, T>& d,
                  const std::vector<hhg::box<D, T>>& boxes, const std::string& what) {
  const verdict v = run_once(g, d, boxes);
  if (!v.ok() && g_rank == 0)
    std::fprintf(stderr, "  %s %s: %lld duplicates, %lld missing, %lld extra of %lld pairs; serial differs %lld\n",
                 g_test.c_str(), what.c_str(), v.duplicates, v.missing, v.extra, v.expected, v.serial_differs);
  CHECK(v.ok());
  CHECK(v.expected > 0);  // every scene here has pairs
}

/// A scene in the domain [lo, lo + L)^D (L = 10 on every axis; lo from `offset`).
template <int D, class T>
std::vector<hhg::box<D, T>> make_scene(int kind, std::uint64_t seed, double offset, std::size_t n) {
  const double L = 10;
  std::vector<hhg::box<D, T>> out;
  auto put = [&](const std::array<double, D>& c, const std::array<double, D>& e) {
    hhg::box<D, T> b;
    for (int i = 0; i < D; ++i) {
      b.min[i] = static_cast<T>(offset + c[i]);
      b.max[i] = static_cast<T>(offset + c[i] + e[i]);
    }
    out.push_back(b);
  };
  for (std::size_t k = 0; k < n; ++k) {
    std::array<double, D> c{}, e{};
    for (int i = 0; i < D; ++i) c[i] = L * u01(seed, k, static_cast<std::uint64_t>(i));
    const double r = u01(seed, k, 9);
    switch (kind) {
      case 0: {  // sizes over 6 decades, crossing the faces
        const double edge = 1e-5 * std::pow(1e6, u01(seed, k, 7)) * 0.3;
        for (int i = 0; i < D; ++i) e[i] = std::min(edge, 3.0);
        break;
      }
      case 1: {  // wider than half the period, some wider than the period
        for (int i = 0; i < D; ++i) e[i] = r < 0.1 ? L * (0.5 + 1.2 * u01(seed, k, 11 + i)) : 0.8;
        break;
      }
      case 2: {  // points and boxes on the faces: touching through the face
        for (int i = 0; i < D; ++i) {
          const double q = u01(seed, k, 20 + i);
          c[i] = q < 0.25 ? 0 : q < 0.5 ? L : std::floor(c[i]);  // on lo, on hi, or on a lattice
          e[i] = r < 0.5 ? 0 : 1;
        }
        break;
      }
      case 3: {  // outside the domain by a few periods (and crossing)
        for (int i = 0; i < D; ++i) {
          c[i] += L * std::floor(7 * u01(seed, k, 30 + i) - 3);
          e[i] = 0.9;
        }
        break;
      }
      default: break;
    }
    put(c, e);
  }
  return out;
}

template <int D, class T>
hhg::periodic_domain<D, T> domain(unsigned axes, double offset) {
  hhg::periodic_domain<D, T> d;
  for (int i = 0; i < D; ++i) {
    d.bounds.min[i] = static_cast<T>(offset);
    d.bounds.max[i] = static_cast<T>(offset + 10);
    d.periodic[i] = (axes >> i) & 1u;
  }
  return d;
}

/// Boxes infinite on non-periodic axes.
template <int D, class T>
void make_infinite(std::vector<hhg::box<D, T>>& boxes, const hhg::periodic_domain<D, T>& d, std::uint64_t seed) {
  const T inf = std::numeric_limits<T>::infinity();
  for (std::size_t k = 0; k < boxes.size(); k += 7)
    for (int i = 0; i < D; ++i)
      if (!d.periodic[i]) {
        if (u01(seed, k, 40 + i) < 0.5) boxes[k].max[i] = inf;
        if (u01(seed, k, 50 + i) < 0.5) boxes[k].min[i] = -inf;
      }
}

template <int D, class T>
void insert_all(hhg::distributed_hash_grids<D, T>& g, const std::vector<hhg::box<D, T>>& boxes, int how) {
  for (std::size_t k = 0; k < boxes.size(); ++k) {
    const int r = how == 0 ? static_cast<int>(k % static_cast<std::size_t>(g_size)) : 0;
    if (r == g_rank) g.insert(k, boxes[k]);
  }
}

template <int D, class T>
void test_static() {
  const std::size_t n = 220;
  for (unsigned axes = 1; axes < (1u << D); ++axes)
    for (int kind = 0; kind < 4; ++kind) {
      const double offset = kind == 3 ? (sizeof(T) == 8 ? 1e11 : 1e4) : -5;
      const auto d = domain<D, T>(axes, offset);
      auto boxes = make_scene<D, T>(kind, 100 + axes * 7 + static_cast<unsigned>(kind), offset, n);
      if (kind == 0 && axes + 1 != (1u << D)) make_infinite(boxes, d, 3);
      hhg::distributed_hash_grids<D, T> g(MPI_COMM_WORLD, d);
      insert_all(g, boxes, kind % 2);
      expect_exact(g, d, boxes, "axes " + std::to_string(axes) + " scene " + std::to_string(kind));
    }
}

template <int D, class T>
void test_dynamic() {
  const unsigned axes = (1u << D) - 1;
  const auto d = domain<D, T>(axes, 0);
  auto boxes = make_scene<D, T>(1, 5, 0, 200);
  hhg::distributed_hash_grids<D, T> g(MPI_COMM_WORLD, d);
  insert_all(g, boxes, 0);
  long long migrated = 0;
  for (int step = 0; step < 6; ++step) {
    if (step > 0) {
      // Everything drifts across the faces (left in place outside the domain:
      // the images wrap); a few jump.
      for (std::size_t k = 0; k < boxes.size(); ++k)
        for (int i = 0; i < D; ++i) {
          const double v = u01(77, k * 31 + static_cast<std::uint64_t>(step), static_cast<std::uint64_t>(i));
          const T dx = static_cast<T>(k % 13 == 0 ? 20 * v - 10 : 2 * v - 0.5);
          boxes[k].min[i] += dx;
          boxes[k].max[i] += dx;
        }
      for (const auto id : g.owned_ids()) g.move(id, boxes[id]);
    }
    expect_exact(g, d, boxes, "step " + std::to_string(step));
    long long m = static_cast<long long>(g.stats().migrated_out), sum = 0;
    MPI_Allreduce(&m, &sum, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    migrated += sum;
  }
  if (g_size > 1) CHECK(migrated > 0);
  // Removals and re-insertions keep it exact.
  for (const auto id : g.owned_ids())
    if (id % 3 == 0) g.remove(id);
  std::vector<hhg::box<D, T>> rest;
  std::vector<std::uint64_t> ids;
  for (std::size_t k = 0; k < boxes.size(); ++k)
    if (k % 3 != 0) rest.push_back(boxes[k]);
  hhg::periodic_domain<D, T> dd = d;
  pair_list<D> mine;
  g.find_pairs(mine);
  // Renumber: the verdict compares ids with indices of `rest`.
  std::vector<std::uint64_t> index(boxes.size());
  std::uint64_t next = 0;
  for (std::size_t k = 0; k < boxes.size(); ++k)
    if (k % 3 != 0) index[k] = next++;
  for (auto& p : mine) {
    p.a = index[p.a];
    p.b = index[p.b];
  }
  const verdict v = compare(mine, dd, rest);
  CHECK(v.ok());
}

/// The check above must fail for wrong rules.
template <int D, class T>
void test_negative_control() {
  const auto d = domain<D, T>((1u << D) - 1, 0);
  const auto boxes = make_scene<D, T>(1, 9, 0, 200);
  {  // no canonical image pair: a pair is reported once per image pair the rank sees
    hhg::distributed_hash_grids<D, T> g(MPI_COMM_WORLD, d);
    g.set_ownership_rule_for_testing(hhg::detail::ownership_rule::min_of_mins);
    insert_all(g, boxes, 0);
    const verdict v = run_once(g, d, boxes);
    CHECK(!v.ok());
    CHECK(v.duplicates > 0);
    if (g_rank == 0) std::printf("  negative control (no canonical image): %lld duplicates\n", v.duplicates);
  }
  if (g_size > 1) {  // no rank test: the ranks that see the canonical image pair all report it
    hhg::distributed_hash_grids<D, T> g(MPI_COMM_WORLD, d);
    g.set_ownership_rule_for_testing(hhg::detail::ownership_rule::owner_of_first);
    insert_all(g, boxes, 0);
    const verdict v = run_once(g, d, boxes);
    CHECK(!v.ok());
    if (g_rank == 0) std::printf("  negative control (no owner rank): %lld duplicates\n", v.duplicates);
  }
}

template <int D, class T>
void test_errors() {
  // Ranks that disagree on the domain: bad_config everywhere.
  {
    auto d = domain<D, T>(1, 0);
    if (g_rank == g_size - 1) d.bounds.max[0] = 11;
    int code = -1;
    try {
      hhg::distributed_hash_grids<D, T> g(MPI_COMM_WORLD, d);
    } catch (const hhg::error& e) {
      code = static_cast<int>(e.code());
    }
    if (g_size > 1) CHECK(code == static_cast<int>(hhg::errc::bad_config));
  }
  {  // a bad domain on one rank
    auto d = domain<D, T>(1, 0);
    if (g_rank == 0) d.bounds.max[0] = d.bounds.min[0];
    int code = -1;
    try {
      hhg::distributed_hash_grids<D, T> g(MPI_COMM_WORLD, d);
    } catch (const hhg::error& e) {
      code = static_cast<int>(e.code());
    }
    CHECK(code == static_cast<int>(hhg::errc::bad_config));
  }
  const auto d = domain<D, T>(1, 0);
  hhg::distributed_hash_grids<D, T> g(MPI_COMM_WORLD, d);
  hhg::box<D, T> good{}, wide{}, far{}, inf{};
  for (int i = 0; i < D; ++i) {
    good.min[i] = 1;
    good.max[i] = 2;
  }
  wide = far = inf = good;
  wide.max[0] = 700;                                // more than 64 periods
  far.min[0] = far.max[0] = 20000;                  // more than 1024 periods away
  inf.max[0] = std::numeric_limits<T>::infinity();  // infinite on a periodic axis
  for (const auto& b : {wide, far, inf}) {
    int code = -1;
    try {
      g.insert(static_cast<std::uint64_t>(g_rank), b);
    } catch (const hhg::error& e) {
      code = static_cast<int>(e.code());
    }
    CHECK(code == static_cast<int>(hhg::errc::out_of_domain));
    CHECK(!g.owns(static_cast<std::uint64_t>(g_rank)));
  }
  g.insert(static_cast<std::uint64_t>(g_rank), good);
  int code = -1;
  try {
    g.move(static_cast<std::uint64_t>(g_rank), wide);
  } catch (const hhg::error& e) {
    code = static_cast<int>(e.code());
  }
  CHECK(code == static_cast<int>(hhg::errc::out_of_domain));
  CHECK(g.get(static_cast<std::uint64_t>(g_rank)) == good);
  // The plain find_pairs on a periodic structure: the same error everywhere, no hang.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> plain;
  code = -1;
  try {
    g.find_pairs(plain);
  } catch (const hhg::error& e) {
    code = static_cast<int>(e.code());
  }
  CHECK(code == static_cast<int>(hhg::errc::bad_config));
  pair_list<D> mine;
  g.find_pairs(mine);  // still works; every rank's box is [1, 2]^D: all pairs overlap
  long long n = static_cast<long long>(mine.size()), sum = 0;
  MPI_Allreduce(&n, &sum, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  CHECK(sum == static_cast<long long>(g_size) * (g_size - 1) / 2);
  // And the periodic find_pairs on a plain structure.
  hhg::distributed_hash_grids<D, T> plain_g(MPI_COMM_WORLD);
  code = -1;
  try {
    plain_g.find_pairs(mine);
  } catch (const hhg::error& e) {
    code = static_cast<int>(e.code());
  }
  CHECK(code == static_cast<int>(hhg::errc::bad_config));
}

/// A failure (std::bad_alloc) of one rank inside a collective call, in each
/// phase: every rank throws the same hhg::error(errc::capacity), no rank hangs;
/// after a failure in the id check or the detection the structure works on
/// (exact pairs on retry), after one in between every call throws on every rank.
template <int D, class T, bool Periodic>
void test_failures() {
  const auto d = domain<D, T>((1u << D) - 1, 0);
  const auto boxes = make_scene<D, T>(0, 21, 0, 200);
  long long want_plain = 0;
  for (std::size_t i = 0; i < boxes.size(); ++i)
    for (std::size_t j = i + 1; j < boxes.size(); ++j) want_plain += hhg::overlaps(boxes[i], boxes[j]) ? 1 : 0;
  for (int phase = 0; phase < 7; ++phase) {
    std::unique_ptr<hhg::distributed_hash_grids<D, T>> gp =
        Periodic ? std::make_unique<hhg::distributed_hash_grids<D, T>>(MPI_COMM_WORLD, d)
                 : std::make_unique<hhg::distributed_hash_grids<D, T>>(MPI_COMM_WORLD);
    auto& g = *gp;
    insert_all(g, boxes, 0);
    const int failing = phase % g_size;
    if (g_rank == failing) g.inject_failure_for_testing(phase);
    auto collective = [&]() -> std::pair<int, unsigned long long> {  // error code (-1: none), message hash
      try {
        if constexpr (Periodic) {
          pair_list<D> mine;
          g.find_pairs(mine);
        } else {
          std::vector<std::pair<std::uint64_t, std::uint64_t>> mine;
          g.find_pairs(mine);
        }
      } catch (const hhg::error& e) {
        unsigned long long h = 1469598103934665603ull;
        for (const char* c = e.what(); *c; ++c) h = (h ^ static_cast<unsigned char>(*c)) * 1099511628211ull;
        return {static_cast<int>(e.code()), h};
      }
      return {-1, 0};
    };
    const auto [code, hash] = collective();
    const bool happens = phase != 2 || g_size > 1;  // one rank never bisects
    if (!happens) {
      CHECK(code == -1);
      continue;
    }
    CHECK(code == static_cast<int>(hhg::errc::capacity));
    unsigned long long lo = 0, hi = 0;
    MPI_Allreduce(&hash, &lo, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&hash, &hi, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    CHECK(lo == hi);  // the same message on every rank
    const bool clean = phase == 0 || phase == 6;
    if (clean) {
      if (phase == 0) insert_all(g, boxes, 0);  // the staged inserts were dropped
      if constexpr (Periodic) {
        expect_exact(g, d, boxes, "after a failure in phase " + std::to_string(phase));
      } else {
        std::vector<std::pair<std::uint64_t, std::uint64_t>> mine;
        g.find_pairs(mine);
        long long n = static_cast<long long>(mine.size()), sum = 0;
        MPI_Allreduce(&n, &sum, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
        CHECK(sum == want_plain);
      }
    } else {
      const auto [again, ignored] = collective();  // broken on every rank: throws without communicating
      (void)ignored;
      CHECK(again == static_cast<int>(hhg::errc::capacity));
      int insert_code = -1;
      try {
        g.insert(1000000 + static_cast<std::uint64_t>(g_rank), boxes[0]);
      } catch (const hhg::error& e) {
        insert_code = static_cast<int>(e.code());
      }
      CHECK(insert_code == static_cast<int>(hhg::errc::capacity));
    }
  }
}

/// Domains whose period is near the largest T (found by the review of stop
/// 79): the widening delta overflowed to +inf above a period of ~8.7e304, no
/// rank made an image, and the result was empty with no error.
template <int D, class T>
void test_huge_domain() {
  const double top = static_cast<double>(std::numeric_limits<T>::max());
  for (const auto& [lo, hi] : {std::pair{0.0, top / 1.8}, std::pair{-top / 18, top / 18}, std::pair{-top / 1.1, 0.0}}) {
    hhg::periodic_domain<D, T> d;
    for (int i = 0; i < D; ++i) {
      d.bounds.min[i] = static_cast<T>(lo);
      d.bounds.max[i] = static_cast<T>(hi);
      d.periodic[i] = true;
    }
    const double L = hi - lo;
    std::vector<hhg::box<D, T>> boxes;
    for (std::size_t k = 0; k < 200; ++k) {
      hhg::box<D, T> b;
      for (int i = 0; i < D; ++i) {
        const double c = lo + L * u01(77, k, static_cast<std::uint64_t>(i)) * 0.999;
        b.min[i] = static_cast<T>(c);
        b.max[i] = static_cast<T>(std::min(c + L * 0.15 * u01(77, k, 10), hi));  // (some touch hi: through the face)
      }
      boxes.push_back(b);
    }
    hhg::distributed_hash_grids<D, T> g(MPI_COMM_WORLD, d);
    insert_all(g, boxes, 0);
    char what[96];
    std::snprintf(what, sizeof what, "domain [%g, %g)", lo, hi);
    expect_exact(g, d, boxes, what);
  }
}

/// Domains far from the origin whose period is a few dozen ulps or less (stop
/// 80): delta was 64 eps (|lo| + |hi| + 2052 L), 2.8 periods at [1e14, 1e14 + 1),
/// so every box had thousands of images and a rank ran out of memory. Periods
/// of 64, 8 and 8 ulps (double), 16, 8 and 8 (float). Boxes on the lattice of
/// 1/8 periods (exact in T): points and boxes on lo and hi
/// (touching through the face), as wide as the period and wider, one or two
/// periods outside the domain. The result must be brute force's, exactly.
template <int D, class T>
void test_far_domain() {
  std::vector<std::pair<double, double>> domains;
  if (sizeof(T) == 8)
    domains = {{1e14, 1e14 + 1}, {-1e15 - 1, -1e15}, {0x1p50, 0x1p50 + 2}};
  else
    domains = {{1e6, 1e6 + 1}, {-0x1p21 - 2, -0x1p21}, {0x1p21, 0x1p21 + 2}};
  for (const auto& dom : domains) {
    const double lo = dom.first, hi = dom.second, L = hi - lo;
    hhg::periodic_domain<D, T> d;
    for (int i = 0; i < D; ++i) {
      d.bounds.min[i] = static_cast<T>(lo);
      d.bounds.max[i] = static_cast<T>(hi);
      d.periodic[i] = true;
    }
    std::vector<hhg::box<D, T>> boxes;
    const std::size_t n = D == 2 ? 120 : 40;
    for (std::size_t k = 0; k < n; ++k) {
      hhg::box<D, T> b;
      const double r = u01(91, k, 9);
      for (int i = 0; i < D; ++i) {
        const double q = u01(91, k, 20 + static_cast<std::uint64_t>(i));
        double c = lo + L * std::floor(8 * u01(91, k, static_cast<std::uint64_t>(i))) / 8;
        if (q < 0.2) c = lo;                                                     // on lo
        if (q > 0.8) c = hi;                                                     // on hi: touching through the face
        if (r > 0.85) c += L * std::floor(5 * u01(91, k, 40 + i) - 2);           // periods outside
        const double e = r < 0.4 ? 0 : r < 0.6 ? L / 8 : r < 0.8 ? L : 1.5 * L;  // a point, small, the period, wider
        b.min[i] = static_cast<T>(c);
        b.max[i] = static_cast<T>(c + e);
      }
      boxes.push_back(b);
    }
    // Pairs that exist by rounding: a box off the lattice, and a partner up to
    // 1000 periods away that touches the box's image under that shift (as
    // periodic_image rounds it). The images near the domain round otherwise:
    // without the widening these pairs are missed (delta = 0: the test fails).
    for (std::size_t k = 0; k < n / 2; ++k) {
      hhg::box<D, T> b, a;
      std::array<std::int32_t, D> s{};
      for (int i = 0; i < D; ++i) {
        const double c = lo + L * (1.2 * u01(93, k, static_cast<std::uint64_t>(i)) - 0.1);
        b.min[i] = static_cast<T>(c);
        b.max[i] = static_cast<T>(c + L * 0.3 * u01(93, k, 10 + static_cast<std::uint64_t>(i)));
        s[i] = static_cast<std::int32_t>(std::floor(2001 * u01(93, k, 20 + static_cast<std::uint64_t>(i)))) - 1000;
      }
      const hhg::box<D, T> image = hhg::periodic_image(b, s, d);
      for (int i = 0; i < D; ++i) {  // touching the image's max on axis 0, overlapping it on the others
        a.min[i] = i == 0 ? image.max[i] : image.min[i];
        a.max[i] = i == 0 ? static_cast<T>(static_cast<double>(image.max[i]) + L / 4) : image.max[i];
      }
      boxes.push_back(b);
      boxes.push_back(a);
    }
    hhg::distributed_hash_grids<D, T> g(MPI_COMM_WORLD, d);
    insert_all(g, boxes, 0);
    char what[96];
    std::snprintf(what, sizeof what, "domain [%.17g, %.17g)", lo, hi);
    expect_exact(g, d, boxes, what);
  }
}

template <int D, class T>
void run_all(const char* name) {
  const double t0 = MPI_Wtime();
  g_test = std::string(name) + " static";
  test_static<D, T>();
  g_test = std::string(name) + " dynamic";
  test_dynamic<D, T>();
  g_test = std::string(name) + " huge domain";
  test_huge_domain<D, T>();
  g_test = std::string(name) + " far domain";
  test_far_domain<D, T>();
  g_test = std::string(name) + " negative control";
  test_negative_control<D, T>();
  g_test = std::string(name) + " errors";
  test_errors<D, T>();
  g_test = std::string(name) + " failures (plain)";
  test_failures<D, T, false>();
  g_test = std::string(name) + " failures (periodic)";
  test_failures<D, T, true>();
  if (g_rank == 0) std::printf("%s: done in %.2f s\n", name, MPI_Wtime() - t0);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  run_all<2, double>("2D double");
  run_all<2, float>("2D float");
  run_all<3, double>("3D double");
  run_all<3, float>("3D float");
  int failures = 0;
  MPI_Allreduce(&g_failures, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0) std::printf("%s: %d failed checks over %d ranks\n", failures ? "FAILED" : "OK", failures, g_size);
  MPI_Finalize();
  return failures == 0 ? 0 : 1;
}
