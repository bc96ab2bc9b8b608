// `hhg pairs --periodic AXES --domain BOUNDS`: the output is hhg::periodic_pairs
// of the same boxes (text, csv, json, --count), and bad values are usage errors
// (status 2, one "hhg: " message, nothing on standard output).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli_support.hpp"
#include "hhg/periodic.hpp"

namespace {

class cli_periodic : public hhg_cli_test::cli_fixture {
 protected:
  cli_periodic() : cli_fixture("hhg_cli_periodic_test_") {}

 public:
  hhg_cli_test::cli_result run(const std::string& args, const std::string& input) {
    return run_tool(args, write("stdin.txt", input));
  }
};

std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
double u01(std::uint64_t& s) { return static_cast<double>((s = mix(s)) >> 11) * 0x1.0p-53; }

/// Boxes in and around [-5, 5)^D on a 1/8 lattice (exact in text): small,
/// wider than half the period on one axis, on the faces, a period away.
template <int D>
std::vector<hhg::box<D, double>> scene(std::uint64_t seed, int n) {
  std::vector<hhg::box<D, double>> out;
  for (int k = 0; k < n; ++k) {
    hhg::box<D, double> b;
    const double r = u01(seed);
    for (int i = 0; i < D; ++i) {
      double c = std::floor(-40 + 80 * u01(seed)) / 8, e = std::floor(8 * u01(seed)) / 8;
      if (r < 0.1 && i == k % D) e = 6 + std::floor(8 * u01(seed));
      if (r > 0.8) c = u01(seed) < 0.5 ? -5 : 5;
      if (r > 0.9) c += 10;
      b.min[i] = c;
      b.max[i] = c + e;
    }
    out.push_back(b);
  }
  return out;
}

template <int D>
std::string text_of(const std::vector<hhg::box<D, double>>& boxes) {
  std::ostringstream s;
  s << "# dim " << D << "\n";
  for (const auto& b : boxes) {
    for (int i = 0; i < D; ++i) s << b.min[i] << ' ';
    for (int i = 0; i < D; ++i) s << b.max[i] << (i + 1 < D ? " " : "\n");
  }
  return s.str();
}

template <int D>
void expect_matches_library(cli_periodic& t, const std::string& axes, const std::string& bounds,
                            const hhg::periodic_domain<D, double>& d) {
  const auto boxes = scene<D>(7 + axes.size(), 300);
  std::vector<hhg::periodic_pair<D>> want;
  hhg::periodic_pairs(d, std::span<const hhg::box<D, double>>(boxes), want);
  ASSERT_FALSE(want.empty());
  std::string text, csv = D == 2 ? "i,j,sx,sy\n" : "i,j,sx,sy,sz\n";
  nlohmann::json pairs = nlohmann::json::array();
  for (const auto& p : want) {
    text += std::to_string(p.a) + ' ' + std::to_string(p.b);
    csv += std::to_string(p.a) + ',' + std::to_string(p.b);
    nlohmann::json shift = nlohmann::json::array();
    for (int i = 0; i < D; ++i) {
      text += ' ' + std::to_string(p.shift[i]);
      csv += ',' + std::to_string(p.shift[i]);
      shift.push_back(p.shift[i]);
    }
    text += '\n';
    csv += '\n';
    pairs.push_back(nlohmann::json::array({p.a, p.b, shift}));
  }
  const std::string input = text_of(boxes);
  const std::string flags = "pairs --periodic " + axes + " --domain " + bounds;
  auto r = t.run(flags, input);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, text) << flags;
  r = t.run(flags + " --format csv", input);
  EXPECT_EQ(r.out, csv);
  r = t.run(flags + " --format json", input);
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["pairs"], pairs);
  EXPECT_EQ(j["count"], want.size());
  r = t.run(flags + " --count", input);
  EXPECT_EQ(r.out, std::to_string(want.size()) + "\n");
}

TEST_F(cli_periodic, PairsPeriodicMatchesPeriodicPairs2D) {
  hhg::periodic_domain<2, double> d;
  d.bounds = {{-5, -5}, {5, 5}};
  d.periodic = {true, false};
  expect_matches_library<2>(*this, "x", "-5,5", d);
  d.periodic = {true, true};
  expect_matches_library<2>(*this, "all", "-5,5", d);
  d.bounds = {{-5, -4}, {5, 4}};
  expect_matches_library<2>(*this, "y,x", "-5,5,-4,4", d);
}

TEST_F(cli_periodic, PairsPeriodicMatchesPeriodicPairs3D) {
  hhg::periodic_domain<3, double> d;
  d.bounds = {{-5, -5, -5}, {5, 5, 5}};
  d.periodic = {false, true, true};
  expect_matches_library<3>(*this, "y,z", "-5,5", d);
  d.periodic = {true, true, true};
  d.bounds.max[2] = 6;
  expect_matches_library<3>(*this, "x,y,z", "-5,5,-5,5,-5,6", d);
}

TEST_F(cli_periodic, PairsPeriodicKnownAnswer) {
  // Box 0 touches box 1 through the face x = 0 / 10; box 2 is 12 wide: it meets
  // its own image (shift 1 0); box 3 lies a period away from the domain.
  const std::string input = "# dim 2\n0 0 1 1\n9.5 0 10 1\n4 4 16 5\n-3 8 -2 9\n17.5 8.5 18 9\n";
  const auto r = run("pairs --periodic x,y --domain 0,10", input);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "0 1 -1 0\n2 2 1 0\n3 4 -2 0\n");
}

TEST_F(cli_periodic, PairsPeriodicBadValuesAreUsageErrors) {
  const std::string input = "# dim 2\n0 0 1 1\n";
  for (const std::string flags :
       {"--periodic x", "--domain 0,1", "--periodic x,w --domain 0,1", "--periodic z --domain 0,1",
        "--periodic x,x --domain 0,1", "--periodic '' --domain 0,1", "--periodic x --domain 1,1",
        "--periodic x --domain 2,1", "--periodic x --domain -inf,1", "--periodic x --domain 0,nan",
        "--periodic x --domain 0,1,2", "--periodic x --domain 0,1e400", "--periodic x --domain -1e308,1e308",
        "--periodic x --domain 0,abc", "--periodic x --domain 0,1 --method brute",
        "--periodic x --domain 0,1 --order stream", "--periodic x --domain 0,0.001"}) {
    const auto r = run("pairs " + flags, input);
    EXPECT_EQ(r.status, 2) << flags;
    EXPECT_EQ(r.out, "") << flags;
    EXPECT_EQ(r.err.rfind("hhg: ", 0), 0u) << flags << ": " << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << flags << ": one line: " << r.err;
  }
}

// A box beyond the domain's limits is a bad input line: named by its line in
// the file (comments and blank lines counted), not by its index among the boxes
// ("box 1", until stop 80); status 2, one line, no output.
TEST_F(cli_periodic, PairsPeriodicBoxOutOfDomainNamesItsLine) {
  const std::string input = "# dim 2\n# a comment\n\n0 0 1 1\n0 0 1000 1\n0 0 2 2\n";
  for (const std::string format : {"", " --format csv", " --count"}) {
    const auto r = run("pairs --periodic x --domain 0,10" + format, input);
    EXPECT_EQ(r.status, 2) << format;
    EXPECT_EQ(r.out, "") << format;
    EXPECT_EQ(r.err,
              "hhg: line 5: on periodic axis 0 the box is infinite, spans more than 64 periods, or lies more than 1024 "
              "periods from the domain\n")
        << format;
  }
  // infinite on the periodic axis y (fine on x, not periodic), line 3; the first bad line wins
  const auto r = run("pairs --periodic y --domain 0,10", "# dim 2\n-inf 0 inf 1\n0 0 1 inf\n0 0 1e9 1e9\n");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err.rfind("hhg: line 3: on periodic axis 1 the box is infinite", 0), 0u) << r.err;
}

}  // namespace
