// End-to-end tests of `hhg query` and `hhg neighbors` (HHG_CLI_PATH): the built
// tool runs through the shell with its inputs in temporary files; standard
// output, standard error and the exit status are checked exactly. Expected
// answers are computed here by brute force over all boxes/points with the
// predicates of hhg/queries.hpp and hhg/neighbors.hpp.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cli_support.hpp"
#include "hhg/box.hpp"
#include "hhg/neighbors.hpp"
#include "hhg/queries.hpp"
#include "hhg/scenes.hpp"

namespace {

namespace fs = std::filesystem;

using result = hhg_cli_test::cli_result;

std::string num(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::ostringstream s;
  s.precision(17);
  s << v;
  return s.str();
}

/// Concatenation with += (g++ 12 warns falsely about long `a + b + c` chains).
std::string cat(std::initializer_list<std::string> parts) {
  std::string s;
  for (const auto& x : parts) s += x;
  return s;
}

std::string join(const std::vector<long long>& v) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) s += ' ';
    s += std::to_string(v[i]);
  }
  return s + "\n";
}

class cli_query : public hhg_cli_test::cli_fixture {
 protected:
  cli_query() : cli_fixture("hhg_cli_query_") {}
  /// Writes a file of the test's folder; returns its path quoted for the shell.
  std::string write(const std::string& name, const std::string& content) {
    return hhg_cli_test::quote(cli_fixture::write(name, content));
  }
  result run(const std::string& args, const std::string& input = "") {
    return run_tool(args, cli_fixture::write("stdin.txt", input));
  }
};

using box3 = hhg::box<3, double>;

std::string boxes_text(const std::vector<box3>& bs) {
  std::string s = "# dim 3\n";
  for (const auto& b : bs) {
    for (double v : b.min) s += cat({num(v), " "});
    for (double v : b.max) s += cat({num(v), " "});
    s += "\n";
  }
  return s;
}

TEST_F(cli_query, AllQueryKindsMatchBruteForce) {
  auto bs = hhg::scenes::make_zoo_scene<3, double>(hhg::scenes::zoo::mixed, 300, 4);
  const std::string bf = write("boxes.txt", boxes_text(bs));
  hhg::scenes::rng g(21);
  auto pt = [&]() {
    const box3& b = bs[g.below(bs.size())];
    std::array<double, 3> p{};
    for (int i = 0; i < 3; ++i) {
      const double lo = std::isfinite(b.min[i]) ? b.min[i] : 0, hi = std::isfinite(b.max[i]) ? b.max[i] : lo;
      p[static_cast<std::size_t>(i)] = g.below(2) ? lo : hi;
    }
    return p;
  };
  std::string qa, qp, qs, qr, qn, ea, ep, es, er, ec, en;
  for (int k = 0; k < 40; ++k) {
    const auto p = pt(), p2 = pt();
    box3 q;
    for (int i = 0; i < 3; ++i) {
      q.min[i] = std::min(p[i], p2[i]);
      q.max[i] = std::max(p[i], p2[i]);
    }
    const double rad = k % 4 == 0 ? 0.0 : std::fabs(p[0] - p2[0]) / 4;
    std::array<double, 3> dir{};
    dir[static_cast<std::size_t>(k % 3)] = k % 2 ? 2.0 : -1.0;
    const double len = k % 5 == 0 ? INFINITY : 10.0;
    hhg::ray<3, double> r{p, dir, len / 2.0 * (k % 2 ? 1.0 : 2.0)};  // L / |direction|
    std::vector<long long> a, pp, s, n;
    std::vector<std::pair<double, long long>> rh, dist;
    for (std::size_t i = 0; i < bs.size(); ++i) {
      const auto ii = static_cast<long long>(i);
      if (hhg::overlaps(bs[i], q)) a.push_back(ii);
      if (hhg::box_contains_point(bs[i], p)) pp.push_back(ii);
      if (hhg::box_meets_sphere(bs[i], p, rad)) s.push_back(ii);
      const double t = hhg::ray_box_entry(r, bs[i]);
      if (t >= 0) rh.push_back({t, ii});
      dist.push_back({hhg::box_distance_squared(bs[i], p), ii});
    }
    std::sort(rh.begin(), rh.end());
    std::sort(dist.begin(), dist.end());
    std::vector<long long> ro, rc;
    for (const auto& e : rh) ro.push_back(e.second);
    rc.push_back(rh.empty() ? -1 : rh.front().second);
    for (std::size_t i = 0; i < 5; ++i) n.push_back(dist[i].second);
    qa += cat({num(q.min[0]), " ", num(q.min[1]), " ", num(q.min[2]), " ", num(q.max[0]), " ", num(q.max[1]), " ",
               num(q.max[2]), "\n"});
    qp += cat({num(p[0]), ",", num(p[1]), "\t", num(p[2]), "\n"});
    qs += cat({num(p[0]), " ", num(p[1]), " ", num(p[2]), " ", num(rad), "\n"});
    qr += cat({num(p[0]), " ", num(p[1]), " ", num(p[2]), " ", num(dir[0]), " ", num(dir[1]), " ", num(dir[2]), " ",
               num(len), "\n"});
    qn += cat({num(p[0]), " ", num(p[1]), " ", num(p[2]), "\n"});
    ea += join(a);
    ep += join(pp);
    es += join(s);
    er += join(ro);
    ec += join(rc);
    en += join(n);
  }
  const auto ra = run(cat({"query --boxes ", bf, " --aabb ", write("a.txt", qa)}));
  EXPECT_EQ(ra.status, 0) << ra.err;
  EXPECT_EQ(ra.out, ea);
  const auto rp = run(cat({"query --boxes ", bf, " --point -"}), qp);
  EXPECT_EQ(rp.out, ep);
  const auto rs = run(cat({"query --boxes ", bf, " --sphere ", write("s.txt", qs)}));
  EXPECT_EQ(rs.out, es);
  const std::string rf = write("r.txt", qr);
  const auto rr = run(cat({"query --boxes ", bf, " --ray ", rf}));
  EXPECT_EQ(rr.out, er);
  const auto rcl = run(cat({"query --boxes ", bf, " --ray ", rf, " --closest"}));
  EXPECT_EQ(rcl.out, ec);
  const auto rn = run(cat({"query --boxes ", bf, " --nearest ", write("n.txt", qn), " --k 5"}));
  EXPECT_EQ(rn.out, en);
  EXPECT_EQ(rn.err, "");
}

TEST_F(cli_query, SmallKnownAnswers2D) {
  const std::string bf = write("b.txt", "# dim 2\n0 0 1 1\n2 0 3 1\n\n# comment\n0.5 0.5 2.5 0.75\n-inf -inf inf -5\n");
  EXPECT_EQ(run(cat({"query --boxes ", bf, " --aabb -"}), "0 0 0.5 0.5\n5 5 6 6\n1 1 2 2\n").out, "0 2\n\n0 1\n");
  EXPECT_EQ(run(cat({"query --boxes ", bf, " --ray -"}), "-1 0.6 1 0 inf\n-1 0.6 1 0 1.5\n0.5 -20 0 1 inf\n").out,
            "0 2 1\n0 2\n3 0 2\n");
  EXPECT_EQ(run(cat({"query --boxes ", bf, " --ray - --closest"}), "-1 0.6 1 0 inf\n9 9 1 0 inf\n").out, "0\n-1\n");
  EXPECT_EQ(run(cat({"query --boxes ", bf, " --sphere -"}), "1.5 0.5 0.5\n1.5 0.5 0\n").out, "0 1 2\n2\n");
  EXPECT_EQ(run(cat({"query --boxes ", bf, " --nearest - --k 3"}), "10 0.5\n").out, "3 1 2\n");
}

TEST_F(cli_query, BadInputExitsTwoWithLineNumberAndNoOutput) {
  const std::string bf = write("b.txt", "0 0 0 1 1 1\n");
  auto r = run(cat({"query --boxes ", bf, " --point -"}), "0 0 0\n\n1 x 0\n");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("line 3"), std::string::npos) << r.err;
  r = run(cat({"query --boxes ", bf, " --sphere -"}), "0 0 0 -1\n");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("line 1"), std::string::npos) << r.err;
  r = run(cat({"query --boxes ", bf, " --ray -"}), "0 0 0 1 0 0\n");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("line 1"), std::string::npos) << r.err;
  const std::string bad = write("bad.txt", "0 0 0 1 1 1\n2 2 2 1 1 1\n");
  r = run(cat({"query --boxes ", bad, " --point -"}), "0 0 0\n");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("line 2"), std::string::npos) << r.err;
  r = run(cat({"query --boxes ", bf}), "");
  EXPECT_EQ(r.status, 2);
  r = run("neighbors --radius 1", "0 0 0\n1 1\n");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("line 2"), std::string::npos) << r.err;
  r = run("neighbors --radius -1", "0 0 0\n");
  EXPECT_EQ(r.status, 2);
  r = run("neighbors --radius 1e300", "0 0 0\n");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("2^511"), std::string::npos) << r.err;
  r = run("neighbors --radius 1 --method kd", "0 0 0\n");
  EXPECT_EQ(r.status, 2);
}

TEST_F(cli_query, NeighborsMatchBruteForce) {
  hhg::scenes::rng g(3);
  std::vector<std::array<double, 3>> pts;
  std::string text;
  for (int k = 0; k < 400; ++k) {
    std::array<double, 3> p{};
    for (auto& v : p) v = k % 5 == 0 ? static_cast<double>(g.below(4)) : g.uniform(0, 4);  // some at distance exactly 1
    pts.push_back(p);
    text += cat({num(p[0]), " ", num(p[1]), " ", num(p[2]), "\n"});
  }
  std::string want;
  for (std::size_t i = 0; i < pts.size(); ++i) {
    std::vector<long long> n;
    for (std::size_t j = 0; j < pts.size(); ++j)
      if (i != j && hhg::within(pts[i], pts[j], 1.0)) n.push_back(static_cast<long long>(j));
    want += join(n);
  }
  const auto r = run(cat({"neighbors --radius 1 ", write("p.txt", text)}));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, want);
  const auto h = run(cat({"neighbors --method hierarchical --radius 1 ", write("p.txt", text)}));
  EXPECT_EQ(h.status, 0) << h.err;
  EXPECT_EQ(h.out, want);
  EXPECT_EQ(run("neighbors --radius 0.5 --dim 2", "0 0\n0.5 0\n2 2\n").out, "1\n0\n\n");
}

}  // namespace
