// Reproduces the shape of Table 1 of seed 002 (linear kd-trees): the effect of
// element splitting on collision culling. N = 10000 equal spheres, centres
// uniform in a cube sized so that N * V_sphere / V_cube = d; their bounding
// boxes go into the linear kd-tree without and with splitting. Printed per d:
// sub-elements (records / N), V_n / V_e (total volume of the records' nodes
// over the total volume of the spheres), selected pairs (kd-tree-1, repeats
// included), true positives among them (sphere pairs that intersect, counted
// with the same repeats), and the distinct candidates (kd-tree-2) and
// distinct true pairs. Seeded: the same spheres in both columns.
//
// Usage: hhg_kdtree_table1 [N] [seed]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numbers>
#include <vector>

#include "hhg/linear_kdtree.hpp"
#include "hhg/scenes.hpp"

int main(int argc, char** argv) {
  const std::size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 10000;
  const std::uint64_t seed = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1;
  const double r = 1.0, v_sphere = 4.0 / 3.0 * std::numbers::pi * r * r * r;
  std::printf("Table 1 (seed 002), N = %zu spheres of radius 1, seed %llu\n", n, static_cast<unsigned long long>(seed));
  std::printf("%-5s | %-9s %-11s %-11s %-9s | %-9s %-11s %-11s %-9s %-11s %-9s\n", "d", "sub-el.", "Vn/Ve", "selected",
              "true pos.", "sub-el.", "Vn/Ve", "selected", "true pos.", "distinct", "true pairs");
  for (const double d : {0.01, 0.05, 0.1, 0.5, 1.0}) {
    const double edge = std::cbrt(static_cast<double>(n) * v_sphere / d);
    hhg::scenes::rng g(seed);
    std::vector<std::array<double, 3>> centre(n);
    for (auto& c : centre)
      for (double& x : c) x = g.uniform(0, edge);
    double cols[2][6];
    for (int split = 0; split < 2; ++split) {
      hhg::linear_kdtree<3, double> k(split == 1, true);
      for (const auto& c : centre) k.insert({{c[0] - r, c[1] - r, c[2] - r}, {c[0] + r, c[1] + r, c[2] + r}});
      std::uint64_t true_pos = 0;
      const std::uint64_t selected = k.for_each_candidate([&](std::uint32_t a, std::uint32_t b) {
        double dd = 0;
        for (int i = 0; i < 3; ++i) dd += (centre[a][i] - centre[b][i]) * (centre[a][i] - centre[b][i]);
        true_pos += dd <= 4 * r * r;
      });
      std::vector<hhg::handle_pair> pairs;
      k.find_pairs(pairs);  // fills unique_candidates()
      std::uint64_t true_pairs = 0;
      for (const auto& p : pairs) {
        const auto ba = k.get(p.a), bb = k.get(p.b);
        double dd = 0;
        for (int i = 0; i < 3; ++i) {
          const double x = ba.min[i] - bb.min[i];
          dd += x * x;
        }
        true_pairs += dd <= 4 * r * r;
      }
      cols[split][0] = static_cast<double>(k.records()) / static_cast<double>(n);
      cols[split][1] = k.node_volume() / (static_cast<double>(n) * v_sphere);
      cols[split][2] = static_cast<double>(selected);
      cols[split][3] = static_cast<double>(true_pos);
      cols[split][4] = static_cast<double>(k.unique_candidates());
      cols[split][5] = static_cast<double>(true_pairs);
    }
    std::printf("%-5.2f | %-9.2f %-11.4g %-11.0f %-9.0f | %-9.2f %-11.4g %-11.0f %-9.0f %-11.0f %-9.0f\n", d,
                cols[0][0], cols[0][1], cols[0][2], cols[0][3], cols[1][0], cols[1][1], cols[1][2], cols[1][3],
                cols[1][4], cols[1][5]);
  }
  return 0;
}
