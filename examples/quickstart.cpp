// The README's library example, compiled and run by the consumer test.
#include <hhg/hash_grids.hpp>

#include <cstdio>
#include <vector>

int main() {
  hhg::hash_grids<3, double> grid;  // defaults: factor 4 (thesis 2), 16^3 cells, ...

  // Insert boxes {min, max}; keep the handles.
  const hhg::handle floor = grid.insert({{-1e9, -1e9, -1.0}, {1e9, 1e9, 0.0}});
  const hhg::handle a = grid.insert({{0.0, 0.0, 0.0}, {1.0, 1.0, 1.0}});
  const hhg::handle b = grid.insert({{1.0, 0.5, 0.5}, {2.0, 1.5, 1.5}});  // touches a: overlaps

  std::vector<hhg::handle_pair> pairs;  // reused every step: no allocation in steady state
  grid.find_pairs(pairs);
  std::printf("step 0: %zu pairs\n", pairs.size());  // floor-a, a-b (b rests at z = 0.5)

  grid.move(b, {{5.0, 5.0, 5.0}, {6.0, 6.0, 6.0}});  // b flies away
  grid.remove(floor);
  grid.find_pairs(pairs);
  std::printf("step 1: %zu pairs\n", pairs.size());  // none

  grid.for_each_pair([](hhg::handle, hhg::handle) { /* narrow phase here */ });
  (void)a;
  return pairs.empty() ? 0 : 1;
}
