// hhg/scenes.hpp: seeded scene generators shared by the tests, the `hhg` tool,
// the benchmark and (later) the bindings. Same seed, same boxes, on every
// machine: the generators use their own integer-to-real conversions, never
// the implementation-defined std:: distributions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hhg/box.hpp"

namespace hhg::scenes {

/// A small, fast, fully specified random generator (splitmix64).
class rng {
 public:
  explicit rng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() noexcept;
  /// Uniform in [0, 1) with 53 random bits.
  double uniform() noexcept;
  /// Uniform in [lo, hi).
  double uniform(double lo, double hi) noexcept { return lo + (hi - lo) * uniform(); }
  /// Uniform integer in [0, n).
  std::uint64_t below(std::uint64_t n) noexcept;

 private:
  std::uint64_t state_;
};

/// The thesis benchmark scenario (Schornbaum 2009, chapter 4): N cuboids placed
/// uniformly in a periodic cube (square in 2D) whose edge grows with N so the
/// density is constant; sizes equal or uniform in [size_min, size_max]; density
/// chosen so there are about `pairs_per_object` overlapping pairs per object;
/// every object moves in its own random direction at a speed uniform in
/// [0, max_speed_fraction * its size] per step, wrapping at the domain boundary.
struct thesis_params {
  std::size_t n = 1000;
  double size_min = 1.0;
  double size_max = 1.0;  ///< size_max / size_min = 12 for the thesis' varied sizes
  double pairs_per_object = 2.0;
  double max_speed_fraction = 0.2;  ///< 0.01 for the high-coherence scenario
  double elongation = 1.0;          ///< x edge = elongation * size (10 for 10x1x1 boxes)
  double domain_aspect = 1.0;       ///< domain x edge / other edges (1024 for the uneven domain)
  std::uint64_t seed = 1;
  /// Sizes log-uniform in [size_min, size_max] (the density rule uses their
  /// moments) instead of uniform.
  bool log_uniform_sizes = false;
  /// Each axis draws its own edge in [size_min, size_max] (uniform); the
  /// object's speed follows its longest edge. size_min may be 0 then.
  bool per_axis_sizes = false;
  /// The initial positions are the boxes' centres, uniform in the domain
  /// (boxes stick out on both sides) instead of their min corners.
  bool centred = false;
  /// > 0: the domain is a cube of this edge whatever n (pairs_per_object and
  /// domain_aspect are then ignored: the density grows with n).
  double fixed_domain_edge = 0;
};

template <int D, class T>
class thesis_scenario {
 public:
  explicit thesis_scenario(const thesis_params& p);
  /// Current boxes, index i is object i.
  const std::vector<box<D, T>>& boxes() const noexcept { return boxes_; }
  /// Moves every object one step (deterministic for a given seed).
  void step();
  /// Domain edges (the domain is [0, edge[i]) per axis; boxes may stick out
  /// past the upper end by their size).
  const std::vector<double>& domain() const noexcept { return domain_; }
  const thesis_params& params() const noexcept { return params_; }

 private:
  thesis_params params_;
  std::vector<double> domain_;
  std::vector<double> pos_;  // D per object: min corner
  std::vector<double> vel_;  // D per object
  std::vector<double> ext_;  // D per object: edge lengths
  std::vector<box<D, T>> boxes_;
  void refresh(std::size_t i);
};

/// The named variants of the thesis scenario: the one table `hhg run`,
/// `hhg bench` and the benchmark harness read.
struct named_scenario {
  std::string_view name;
  std::string_view description;
  /// Changes the default thesis_params into this variant's.
  void (*adjust)(thesis_params&);
  /// A few huge static boxes are added (huge_static_boxes) to the moving ones.
  bool huge_statics = false;
};

/// Every named variant: equal, varied, elongated, coherent, sparse, uneven,
/// mixed, log-uniform, terdiman, jumping (in this order).
const std::vector<named_scenario>& named_scenarios();
/// Their names, in table order.
std::vector<std::string> named_scenario_names();
/// The variant called `name`; throws std::invalid_argument (naming the known
/// ones) for any other name.
const named_scenario& find_named_scenario(std::string_view name);
/// The thesis parameters of variant `name` with n objects and `seed`.
thesis_params named_scenario_params(std::string_view name, std::size_t n, std::uint64_t seed);
/// The huge static boxes of the `mixed` variant: max(1, n / 2000) cubes of
/// edge 1000 placed uniformly in the scene's domain (deterministic in seed).
template <int D, class T>
std::vector<box<D, T>> huge_static_boxes(const thesis_scenario<D, T>& scene, std::uint64_t seed);

/// The adversarial zoo: scenes aimed at the weak spots of broad phases.
enum class zoo {
  equal,             ///< equal cubes, thesis density
  varied12,          ///< sizes uniform over a factor 12
  log_uniform,       ///< sizes log-uniform over 8 decades
  negative,          ///< everything at negative coordinates
  far_from_origin,   ///< offset by ~1e6 (float) / ~1e12 (double) sizes
  touching,          ///< boxes on an integer lattice touching exactly (faces, edges, corners)
  zero_size,         ///< points and zero-size boxes, with duplicates and points on faces of boxes
  duplicates,        ///< many identical boxes
  one_cell,          ///< a crowd of small boxes inside one tiny region
  elongated,         ///< 10x1x1 and 1x1x10 boxes (needles) and flat slabs
  unbounded,         ///< bounded boxes mixed with planes, half-spaces and the everything box
  huge_among_small,  ///< a few boxes 1000x larger than the rest
  mixed,             ///< all of the above mixed in one scene
};

/// All zoo scenes, for iterating in tests.
std::vector<zoo> all_zoo_scenes();
std::string to_string(zoo z);

/// Builds `n` boxes of scene `z` (some scenes round n). Deterministic in (z, n, seed).
template <int D, class T>
std::vector<box<D, T>> make_zoo_scene(zoo z, std::size_t n, std::uint64_t seed);

}  // namespace hhg::scenes
