// Every query against an exact rational reference (GMP mpq_class): region,
// point, sphere, ray (all hits with their entry parameters, first hit, any
// hit), k nearest, and fixed-radius neighbours (cell_list and hierarchical),
// at coordinate scales 1e-300, 1, 1e13, 1e150 and 1e280, in 2D and 3D, with
// ties built in (spheres through box corners, radii equal to point distances,
// rays through corners and with max_t at an entry). Plus the regression cases
// of issue 20, parts 1 and 2 (distances that overflow or underflow in double,
// rays whose direction is far from unit length).
#include <gmpxx.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "cli_support.hpp"
#include "hhg/hash_grids.hpp"
#include "hhg/hierarchical_neighbors.hpp"
#include "hhg/neighbors.hpp"
#include "hhg/queries.hpp"

namespace {

using hhg::handle;
using hhg::ray_hit;
constexpr double kInf = std::numeric_limits<double>::infinity();

mpq_class q(double x) { return mpq_class(x); }  // exact

// Round a positive rational to the nearest double (ties to even; +inf beyond).
double round_nearest(const mpq_class& v) {
  if (v <= 0) return 0;
  const mpq_class top = q(std::numeric_limits<double>::max()) + q(0x1p970);  // DBL_MAX + ulp / 2
  if (v >= top) return kInf;
  double c = v.get_d();  // truncated: c <= v < next(c)
  if (q(c) > v) c = std::nextafter(c, 0.0);
  while (q(std::nextafter(c, kInf)) <= v) c = std::nextafter(c, kInf);
  const double n = std::nextafter(c, kInf);
  const mpq_class dl = v - q(c), du = q(n) - v;
  if (dl < du) return c;
  if (du < dl) return n;
  std::uint64_t bits = 0;
  std::memcpy(&bits, &c, sizeof bits);
  return (bits & 1) == 0 ? c : n;
}

template <int D>
mpq_class dist2(const hhg::box<D, double>& b, const std::array<double, D>& p) {
  mpq_class s = 0;
  for (int i = 0; i < D; ++i) {
    mpq_class d = 0;
    if (p[i] < b.min[i]) d = q(b.min[i]) - q(p[i]);
    if (p[i] > b.max[i]) d = q(p[i]) - q(b.max[i]);
    s += d * d;
  }
  return s;
}

// Exact slab test: the entry parameter, or false (finite boxes and rays).
template <int D>
bool ray_entry(const hhg::ray<D, double>& r, const hhg::box<D, double>& b, mpq_class& entry) {
  mpq_class tn = 0, tf = 0;
  const bool unbounded = r.max_t == kInf;
  if (!unbounded) tf = q(r.max_t);
  bool have_tf = !unbounded;
  for (int i = 0; i < D; ++i) {
    const double o = r.origin[i], d = r.direction[i];
    if (d == 0) {
      if (o < b.min[i] || o > b.max[i]) return false;
      continue;
    }
    mpq_class t1 = (q(b.min[i]) - q(o)) / q(d), t2 = (q(b.max[i]) - q(o)) / q(d);
    if (t1 > t2) std::swap(t1, t2);
    if (t1 > tn) tn = t1;
    if (!have_tf || t2 < tf) {
      tf = t2;
      have_tf = true;
    }
  }
  if (have_tf && tn > tf) return false;
  entry = tn;
  return true;
}

template <int D>
struct scene {
  std::vector<hhg::box<D, double>> boxes;
};

template <int D>
scene<D> make_scene(std::mt19937_64& rng, double s, int n) {
  std::uniform_real_distribution<double> u(-1, 1), w(0, 0.2);
  scene<D> sc;
  for (int j = 0; j < n; ++j) {
    hhg::box<D, double> b;
    for (int i = 0; i < D; ++i) {
      double lo = u(rng) * s;
      double hi = lo + w(rng) * s * (j % 7 == 0 ? 0 : 1);  // some zero-size
      if (j % 5 == 1 && j > 0) {                           // touching the previous box
        lo = sc.boxes.back().max[i];
        hi = lo + w(rng) * s;
      }
      b.min[i] = lo;
      b.max[i] = hi;
    }
    sc.boxes.push_back(b);
  }
  return sc;
}

template <int D>
void check_scale(double s, std::uint64_t seed) {
  SCOPED_TRACE("scale " + std::to_string(s) + " dim " + std::to_string(D));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1), w(0, 1);
  const auto sc = make_scene<D>(rng, s, 120);
  hhg::hash_grids<D, double> g;
  std::vector<handle> hs;
  for (const auto& b : sc.boxes) hs.push_back(g.insert(b));
  g.update();
  const auto& bs = sc.boxes;
  const std::size_t n = bs.size();
  auto corner = [&](std::size_t j, unsigned mask) {
    std::array<double, D> p{};
    for (int i = 0; i < D; ++i) p[i] = (mask >> i) & 1 ? bs[j].max[i] : bs[j].min[i];
    return p;
  };
  auto sorted = [](std::vector<handle> v) {
    std::sort(v.begin(), v.end());
    return v;
  };
  for (int it = 0; it < 60; ++it) {
    // ---- point, box, sphere -------------------------------------------------
    std::array<double, D> c{};
    if (it % 2 == 0) {
      c = corner(rng() % n, static_cast<unsigned>(rng()));
    } else {
      for (int i = 0; i < D; ++i) c[i] = u(rng) * s;
    }
    {
      std::vector<handle> got, want;
      g.containing(c, got);
      for (std::size_t j = 0; j < n; ++j)
        if (dist2<D>(bs[j], c) == 0) want.push_back(hs[j]);
      EXPECT_EQ(sorted(got), want);
    }
    {
      hhg::box<D, double> qb;
      for (int i = 0; i < D; ++i) {
        qb.min[i] = c[i];
        qb.max[i] = c[i] + w(rng) * s * 0.3;
      }
      std::vector<handle> want;
      for (std::size_t j = 0; j < n; ++j) {
        bool ov = true;
        for (int i = 0; i < D; ++i) ov = ov && q(bs[j].min[i]) <= q(qb.max[i]) && q(qb.min[i]) <= q(bs[j].max[i]);
        if (ov) want.push_back(hs[j]);
      }
      EXPECT_EQ(sorted(g.overlapping(qb)), want);
    }
    {
      // radius: random, or exactly the distance along one axis to a box (a tie)
      double rad = w(rng) * s * 0.5;
      if (it % 3 == 0) {
        const std::size_t j = rng() % n;
        const int a = static_cast<int>(rng() % D);
        std::array<double, D> cc = corner(j, 0);
        cc[a] = bs[j].min[a] - rad;  // |cc_a - min_a| may round: still a near tie
        c = cc;
        rad = bs[j].min[a] - cc[a];
      }
      if (it % 10 == 5) rad = 0;
      std::vector<handle> got, want;
      g.in_sphere(c, rad, got);
      for (std::size_t j = 0; j < n; ++j) {
        const bool in = dist2<D>(bs[j], c) <= q(rad) * q(rad);
        if (in) want.push_back(hs[j]);
        EXPECT_EQ(hhg::box_meets_sphere(bs[j], c, rad), in);
      }
      EXPECT_EQ(sorted(got), want);
    }
    // ---- nearest ----------------------------------------------------------------
    {
      const std::size_t k = it % 3 == 0 ? 1 : (it % 3 == 1 ? 4 : 15);
      std::vector<std::pair<mpq_class, std::uint32_t>> all;
      for (std::size_t j = 0; j < n; ++j) all.push_back({dist2<D>(bs[j], c), static_cast<std::uint32_t>(j)});
      std::sort(all.begin(), all.end(), [&](const auto& x, const auto& y) {
        return x.first < y.first || (x.first == y.first && hs[x.second].index < hs[y.second].index);
      });
      std::vector<handle> got, want;
      g.nearest(c, k, got);
      for (std::size_t i = 0; i < std::min(k, n); ++i) want.push_back(hs[all[i].second]);
      EXPECT_EQ(got, want);
    }
    // ---- rays ---------------------------------------------------------------------
    {
      hhg::ray<D, double> r;
      r.origin = c;
      const auto target = corner(rng() % n, static_cast<unsigned>(rng()));
      for (int i = 0; i < D; ++i) r.direction[i] = target[i] - c[i];
      if (it % 4 == 1) r.direction[static_cast<std::size_t>(rng() % D)] = 0;
      // direction lengths far from 1: 2^-900, 1e-290, 1e290, 2^900
      const double scales[] = {1.0, 0x1p-900, 1e-290, 1e290, 0x1p900, 3.0};
      const double f = scales[it % 6];
      bool finite = true;
      for (int i = 0; i < D; ++i) {
        r.direction[i] *= f;
        finite = finite && std::isfinite(r.direction[i]);
      }
      if (!finite) continue;
      r.max_t = it % 5 == 0 ? kInf : w(rng) * 2 / f;
      if (!std::isfinite(r.max_t)) r.max_t = std::numeric_limits<double>::max();
      std::vector<std::pair<double, handle>> want;
      for (std::size_t j = 0; j < n; ++j) {
        mpq_class e;
        const bool hit = ray_entry<D>(r, bs[j], e);
        const double t = hhg::ray_box_entry(r, bs[j]);
        EXPECT_EQ(t >= 0, hit) << "box " << j;
        if (hit) {
          want.push_back({round_nearest(e), hs[j]});
          EXPECT_EQ(t, round_nearest(e)) << "box " << j;
        }
      }
      std::sort(want.begin(), want.end(), [](const auto& x, const auto& y) {
        return x.first < y.first || (x.first == y.first && x.second.index < y.second.index);
      });
      std::vector<ray_hit> got;
      g.ray_hits(r, got);
      ASSERT_EQ(got.size(), want.size());
      for (std::size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(got[i].id, want[i].second);
        EXPECT_EQ(got[i].t, want[i].first);
      }
      const ray_hit first = g.first_ray_hit(r);
      const ray_hit any = g.any_ray_hit(r);
      if (want.empty()) {
        EXPECT_FALSE(first.id);
        EXPECT_FALSE(any.id);
      } else {
        EXPECT_EQ(first.id, want[0].second);
        EXPECT_EQ(first.t, want[0].first);
        EXPECT_TRUE(std::any_of(want.begin(), want.end(), [&](const auto& x) { return x.second == any.id; }));
      }
    }
  }
  // ---- neighbours ------------------------------------------------------------------
  {
    // clustered points (spread min(s, 1e150) inside a cluster, so radii stay
    // below kMaxRadius), duplicates, and radii equal to a distance
    const double spread = std::min(s, 1e150);
    std::vector<std::array<double, D>> pts;
    for (int cl = 0; cl < 8; ++cl) {
      std::array<double, D> ctr{};
      for (int i = 0; i < D; ++i) ctr[i] = u(rng) * s;
      for (int j = 0; j < 12; ++j) {
        std::array<double, D> p = ctr;
        for (int i = 0; i < D; ++i) p[i] = ctr[i] + u(rng) * spread * 0.01;
        if (j % 6 == 5) p = pts.back();
        if (j % 6 == 4) {  // differs from the previous point on one axis only
          p = pts.back();
          p[0] = p[0] + spread * 0.003;
        }
        pts.push_back(p);
      }
    }
    for (const double rad : {spread * 0.004, pts[4][0] - pts[3][0], 0.0, spread * 0.02}) {
      SCOPED_TRACE("radius " + std::to_string(rad));
      if (!(rad >= 0) || rad > hhg::kMaxRadius) continue;
      std::vector<std::vector<std::uint32_t>> want(pts.size());
      for (std::size_t a = 0; a < pts.size(); ++a)
        for (std::size_t b = 0; b < pts.size(); ++b) {
          if (a == b) continue;
          mpq_class s2 = 0;
          for (int i = 0; i < D; ++i) {
            const mpq_class d = q(pts[a][i]) - q(pts[b][i]);
            s2 += d * d;
          }
          if (s2 <= q(rad) * q(rad)) want[a].push_back(static_cast<std::uint32_t>(b));
          EXPECT_EQ(hhg::within(pts[a], pts[b], rad), s2 <= q(rad) * q(rad));
        }
      hhg::cell_list<D, double> cl;
      cl.build(pts, rad);
      hhg::neighbor_list nl, nq;
      cl.neighbors(nl);
      cl.neighbors_of(pts, nq);
      hhg::hierarchical_neighbors<D, double> hn;
      hhg::neighbor_list hl;
      hn.neighbors(pts, rad, hl);
      for (std::size_t a = 0; a < pts.size(); ++a) {
        const std::vector<std::uint32_t> got(nl.indices.begin() + static_cast<std::ptrdiff_t>(nl.offsets[a]),
                                             nl.indices.begin() + static_cast<std::ptrdiff_t>(nl.offsets[a + 1]));
        EXPECT_EQ(got, want[a]) << "cell_list, point " << a;
        std::vector<std::uint32_t> self = want[a];
        self.insert(std::lower_bound(self.begin(), self.end(), static_cast<std::uint32_t>(a)),
                    static_cast<std::uint32_t>(a));
        const std::vector<std::uint32_t> gq(nq.indices.begin() + static_cast<std::ptrdiff_t>(nq.offsets[a]),
                                            nq.indices.begin() + static_cast<std::ptrdiff_t>(nq.offsets[a + 1]));
        EXPECT_EQ(gq, self) << "cell_list::neighbors_of, point " << a;
        const std::vector<std::uint32_t> gh(hl.indices.begin() + static_cast<std::ptrdiff_t>(hl.offsets[a]),
                                            hl.indices.begin() + static_cast<std::ptrdiff_t>(hl.offsets[a + 1]));
        EXPECT_EQ(gh, want[a]) << "hierarchical, point " << a;
      }
    }
  }
}

const double kScales[] = {1e-300, 1.0, 1e13, 1e150, 1e280};

TEST(ExactQueries, RationalReference3D) {
  std::uint64_t seed = 1;
  for (const double s : kScales) check_scale<3>(s, seed++);
}

TEST(ExactQueries, RationalReference2D) {
  std::uint64_t seed = 100;
  for (const double s : kScales) check_scale<2>(s, seed++);
}

// ---- issue 20, part 1: distances beyond the double range of their squares ----------

hhg::box<3, double> cube(double lo, double hi) { return {{lo, lo, lo}, {hi, hi, hi}}; }

TEST(ExactQueries, SphereDoesNotOverflow) {
  hhg::hash_grids<3, double> g;
  const handle a = g.insert(cube(1e300, 2e300)), b = g.insert(cube(1e200, 2e200)), c = g.insert(cube(0, 1));
  (void)a;
  (void)b;
  std::vector<handle> out;
  g.in_sphere({0, 0, 0}, 1e160, out);
  EXPECT_EQ(out, std::vector<handle>{c});
  EXPECT_FALSE(hhg::box_meets_sphere(cube(1e300, 2e300), {0, 0, 0}, 1e160));
  EXPECT_TRUE(hhg::box_meets_sphere(cube(1e300, 2e300), {0, 0, 0}, 1e300 * std::sqrt(3.0) * (1 + 1e-15)));
  EXPECT_FALSE(hhg::box_meets_sphere(cube(1e300, 2e300), {0, 0, 0}, 1e300 * std::sqrt(3.0) * (1 - 1e-15)));
}

TEST(ExactQueries, NearestDoesNotOverflow) {
  hhg::hash_grids<3, double> g;
  g.insert(cube(1e300, 2e300));
  g.insert(cube(1e200, 2e200));
  const handle c = g.insert(cube(0, 1));
  std::vector<handle> out;
  g.nearest({-1e200, -1e200, -1e200}, 1, out);
  EXPECT_EQ(out, std::vector<handle>{c});
  EXPECT_LT(hhg::compare_box_distance(cube(0, 1), cube(1e300, 2e300), {-1e200, -1e200, -1e200}), 0);
}

TEST(ExactQueries, ZeroRadiusSphereDoesNotUnderflow) {
  hhg::hash_grids<3, double> g;
  g.insert(cube(1e-300, 2e-300));
  std::vector<handle> out, pt;
  g.in_sphere({0, 0, 0}, 0, out);
  g.containing({0, 0, 0}, pt);
  EXPECT_TRUE(out.empty());
  EXPECT_TRUE(pt.empty());
  EXPECT_FALSE(hhg::box_meets_sphere(cube(1e-300, 2e-300), {0, 0, 0}, 0));
  // the distance is sqrt(3) e-300: just above and below
  EXPECT_TRUE(hhg::box_meets_sphere(cube(1e-300, 2e-300), {0, 0, 0}, 1.7320508075688780e-300));
  EXPECT_FALSE(hhg::box_meets_sphere(cube(1e-300, 2e-300), {0, 0, 0}, 1.7320508075688765e-300));
}

template <int D>
void tiny_neighbors() {
  std::vector<std::array<double, D>> pts(2);
  pts[1][0] = 1.5e-170;
  for (const double r : {1e-170, 1.5e-170}) {
    const bool near = r >= 1.5e-170;
    hhg::cell_list<D, double> cl;
    cl.build(pts, r);
    hhg::neighbor_list a, b;
    cl.neighbors(a);
    hhg::hierarchical_neighbors<D, double> hn;
    hn.neighbors(pts, r, b);
    EXPECT_EQ(a.count(0), near ? 1u : 0u) << r;
    EXPECT_EQ(b.count(0), near ? 1u : 0u) << r;
    EXPECT_EQ(hhg::within(pts[0], pts[1], r), near);
  }
}

TEST(ExactQueries, NeighborsDoNotUnderflow) {
  tiny_neighbors<2>();
  tiny_neighbors<3>();
}

// ---- issue 20, part 2: rays far from unit length --------------------------------------

hhg::box<3, double> slab_x(double lo) { return {{lo, 0, 0}, {lo + 1, 1, 1}}; }

TEST(ExactQueries, RayWithTinyDirection) {
  hhg::hash_grids<3, double> g;
  const handle a = g.insert(slab_x(300)), b = g.insert(slab_x(200)), c = g.insert(slab_x(100));
  hhg::ray<3, double> r{{0, 0.5, 0.5}, {1e-306, 0, 0}, 1.5e308};
  std::vector<ray_hit> hits;
  g.ray_hits(r, hits);
  ASSERT_EQ(hits.size(), 1u);  // entries 1e308, 2e308 (beyond max_t), 3e308
  EXPECT_EQ(hits[0].id, c);
  EXPECT_EQ(hits[0].t, round_nearest(mpq_class(100) / q(1e-306)));
  // unbounded: the entries beyond the largest double round to +inf and are
  // ordered by handle index
  r.max_t = kInf;
  g.ray_hits(r, hits);
  ASSERT_EQ(hits.size(), 3u);
  EXPECT_EQ(hits[0].id, c);
  EXPECT_EQ(hits[1].id, a);
  EXPECT_EQ(hits[2].id, b);
  EXPECT_EQ(hits[1].t, kInf);
  EXPECT_EQ(g.first_ray_hit(r).id, c);
  // a normalised direction: 250 units of length
  r.direction = {std::ldexp(1e-306, -std::ilogb(1e-306)), 0, 0};
  r.max_t = 250 / r.direction[0];
  g.ray_hits(r, hits);
  ASSERT_EQ(hits.size(), 2u);
  EXPECT_EQ(hits[0].id, c);
  EXPECT_EQ(hits[1].id, b);
}

TEST(ExactQueries, RayWithHugeDirection) {
  hhg::hash_grids<3, double> g;
  const handle a = g.insert(slab_x(300)), b = g.insert(slab_x(200)), c = g.insert(slab_x(100));
  (void)a;
  const hhg::ray<3, double> r{{0, 0.5, 0.5}, {1e300, 0, 0}, 2.5e-298};
  std::vector<ray_hit> hits;
  g.ray_hits(r, hits);
  ASSERT_EQ(hits.size(), 2u);
  EXPECT_EQ(hits[0].id, c);
  EXPECT_EQ(hits[1].id, b);
  EXPECT_EQ(hits[0].t, round_nearest(mpq_class(100) / q(1e300)));
  EXPECT_EQ(hits[1].t, round_nearest(mpq_class(200) / q(1e300)));
}

TEST(ExactQueries, RayEntryTiesAndRounding) {
  // exact ties of entry and exit (a ray through a box's edge), and an entry
  // whose subtraction rounds: the value is the entry rounded to nearest
  const hhg::box<2, double> bx{{1, 1}, {2, 2}};
  EXPECT_EQ(hhg::ray_box_entry(hhg::ray<2, double>{{0, 0}, {1, 1}, kInf}, bx), 1.0);
  EXPECT_EQ(hhg::ray_box_entry(hhg::ray<2, double>{{0, 3}, {1, -1}, kInf}, bx), 1.0);  // through (1, 2)
  EXPECT_EQ(hhg::ray_box_entry(hhg::ray<2, double>{{0, 4}, {1, -1}, kInf}, bx), 2.0);  // corner (2, 2) only
  EXPECT_LT(hhg::ray_box_entry(hhg::ray<2, double>{{0, 4}, {1, -1}, 1.9999999999999998}, bx), 0);
  EXPECT_LT(hhg::ray_box_entry(hhg::ray<2, double>{{0, 4.000000000000001}, {1, -1}, kInf}, bx), 0);
  const hhg::ray<2, double> r{{0.1, 0}, {3, 0}, kInf};
  const hhg::box<2, double> far{{2e17, -1}, {3e17, 1}};
  EXPECT_EQ(hhg::ray_box_entry(r, far), round_nearest((q(far.min[0]) - q(0.1)) / q(3)));
}

#ifdef HHG_CLI_PATH
class exact_cli : public hhg_cli_test::cli_fixture {
 protected:
  exact_cli() : cli_fixture("hhg_exact_") {}
};

TEST_F(exact_cli, RayQueryWithTinyDirection) {
  const auto boxes = write("b.txt", "# dim 3\n300 0 0 301 1 1\n200 0 0 201 1 1\n100 0 0 101 1 1\n");
  const auto rays = write("r.txt", "0 0.5 0.5 1e-306 0 0 250\n0 0.5 0.5 1e300 0 0 250\n0 0.5 0.5 1e-306 0 0 inf\n");
  const auto r = run_tool("query --boxes " + hhg_cli_test::quote(boxes) + " --ray " + hhg_cli_test::quote(rays),
                          write("in.txt", ""));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "2 1\n2 1\n2 1 0\n");
}

TEST_F(exact_cli, SphereNearestNeighborsAtExtremeScales) {
  const auto boxes = write(
      "b.txt", "# dim 3\n1e300 1e300 1e300 2e300 2e300 2e300\n1e200 1e200 1e200 2e200 2e200 2e200\n0 0 0 1 1 1\n");
  const auto sph = write("s.txt", "0 0 0 1e160\n");
  auto r = run_tool("query --boxes " + hhg_cli_test::quote(boxes) + " --sphere " + hhg_cli_test::quote(sph),
                    write("in.txt", ""));
  EXPECT_EQ(r.out, "2\n") << r.err;
  const auto np = write("n.txt", "-1e200 -1e200 -1e200\n");
  r = run_tool("query --boxes " + hhg_cli_test::quote(boxes) + " --nearest " + hhg_cli_test::quote(np),
               write("in2.txt", ""));
  EXPECT_EQ(r.out, "2\n") << r.err;
  const auto pts = write("p.txt", "# dim 3\n0 0 0\n1.5e-170 0 0\n");
  for (const std::string m : {"cell-list", "hierarchical"}) {
    r = run_tool("neighbors --radius 1e-170 --method " + m + " " + hhg_cli_test::quote(pts), write("in3.txt", ""));
    EXPECT_EQ(r.out, "\n\n") << m << r.err;
  }
}
#endif

}  // namespace
