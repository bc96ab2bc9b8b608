// Seeded scene generators: the thesis scenario and the adversarial zoo.
//
// Determinism. Every random number comes from hhg::scenes::rng (splitmix64)
// and is turned into a real by our own conversions. Geometry uses only + - * /,
// sqrt, frexp and ldexp (all exactly specified by IEEE 754), never the
// std:: distributions nor transcendental functions whose last bit may differ
// between C libraries: the cube root below is a Newton iteration, log-uniform
// sizes are a random power of two times a uniform mantissa. So the same
// (scene, n, seed) gives bit-identical boxes on every IEEE machine (assuming the
// compiler does not contract a*b+c into a fused multiply-add).
//
// Zoo scenes are built in double and converted to T at the end; every scene
// has exactly n boxes.
#include "hhg/scenes.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <type_traits>

namespace hhg::scenes {

// --- rng ------------------------------------------------------------------------

std::uint64_t rng::next() noexcept {
  state_ += 0x9E3779B97F4A7C15ull;
  std::uint64_t z = state_;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double rng::uniform() noexcept { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

std::uint64_t rng::below(std::uint64_t n) noexcept {
  if (n <= 1) return 0;
  // Reject the lowest (2^64 mod n) values so every residue is equally likely.
  const std::uint64_t threshold = (0 - n) % n;
  for (;;) {
    const std::uint64_t r = next();
    if (r >= threshold) return r % n;
  }
}

namespace {

constexpr double inf = std::numeric_limits<double>::infinity();

/// x^(1/d) for d = 2 or 3, reproducible bit for bit (sqrt is correctly rounded;
/// the cube root is a Newton iteration using only + * /).
double root(double x, int d) {
  if (!(x > 0)) return 0;
  if (d == 2) return std::sqrt(x);
  int e = 0;
  std::frexp(x, &e);
  double y = std::ldexp(1.0, e / 3);
  for (int i = 0; i < 200; ++i) {
    const double next = (2 * y + x / (y * y)) / 3;
    if (next == y) break;
    y = next;
  }
  return y;
}

double ipow(double x, int k) {
  double r = 1;
  for (int i = 0; i < k; ++i) r *= x;
  return r;
}

/// E[(s1 + s2)^d] for independent s1, s2 with raw moments m[k] = E[s^k], k <= d.
double mean_sum_power(const std::array<double, 4>& m, int d) {
  static constexpr int binomial[4][4] = {{1, 0, 0, 0}, {1, 1, 0, 0}, {1, 2, 1, 0}, {1, 3, 3, 1}};
  double sum = 0;
  for (int k = 0; k <= d; ++k)
    sum += binomial[d][k] * m[static_cast<std::size_t>(k)] * m[static_cast<std::size_t>(d - k)];
  return sum;
}

/// Raw moments of s uniform in [a, b] (a point mass when a == b).
std::array<double, 4> uniform_moments(double a, double b) {
  std::array<double, 4> m{};
  for (int k = 0; k < 4; ++k) {
    m[static_cast<std::size_t>(k)] = b > a ? (ipow(b, k + 1) - ipow(a, k + 1)) / ((k + 1) * (b - a)) : ipow(a, k);
  }
  return m;
}

/// ln(x) for x > 0 finite, reproducible bit for bit: frexp, then the series of
/// 2 atanh(t) with t = (m - 1) / (m + 1), only + * / (no C library logarithm).
double det_log(double x) {
  int e = 0;
  double m = std::frexp(x, &e);  // x = m 2^e, m in [0.5, 1)
  if (m < 0.70710678118654752) {
    m *= 2;
    --e;
  }
  const double t = (m - 1) / (m + 1), t2 = t * t;
  double sum = 0, term = t;
  for (int k = 1; k < 200; k += 2) {
    const double next = sum + term / k;
    if (next == sum) break;
    sum = next;
    term *= t2;
  }
  return 2 * sum + e * 0x1.62e42fefa39efp-1;
}

/// e^x for moderate x, reproducible bit for bit: x = k ln 2 + r, the Taylor
/// series of e^r, ldexp (no C library exponential).
double det_exp(double x) {
  constexpr double ln2 = 0x1.62e42fefa39efp-1;
  const double kd = std::floor(x / ln2 + 0.5);
  const double r = x - kd * ln2;
  double sum = 1, term = 1;
  for (int k = 1; k < 200; ++k) {
    term *= r / k;
    const double next = sum + term;
    if (next == sum) break;
    sum = next;
  }
  return std::ldexp(sum, static_cast<int>(kd));
}

/// Raw moments of s log-uniform in [a, b], 0 < a <= b: E[s^k] = (b^k - a^k) / (k ln(b / a)).
std::array<double, 4> log_uniform_moments(double a, double b) {
  std::array<double, 4> m{};
  const double l = det_log(b / a);
  for (int k = 0; k < 4; ++k)
    m[static_cast<std::size_t>(k)] = k == 0 ? 1 : l > 0 ? (ipow(b, k) - ipow(a, k)) / (k * l) : ipow(a, k);
  return m;
}

/// Edge of a cube domain holding n objects at the number density that gives
/// `pairs_per_object` expected overlapping pairs per object, where
/// `mean_pair_volume` = E[prod_i (e1_i + e2_i)] over two random objects:
/// pairs per object = rho * mean_pair_volume / 2.
double domain_edge(int d, std::size_t n, double mean_pair_volume, double pairs_per_object) {
  const double count = static_cast<double>(std::max<std::size_t>(n, 1));
  return root(count * mean_pair_volume / (2 * pairs_per_object), d);
}

// --- thesis helpers --------------------------------------------------------------

/// A uniformly distributed unit vector in d dimensions (rejection from the ball).
std::array<double, 3> random_direction(rng& r, int d) {
  for (;;) {
    std::array<double, 3> v{};
    double norm2 = 0;
    for (int i = 0; i < d; ++i) {
      v[static_cast<std::size_t>(i)] = r.uniform(-1, 1);
      norm2 += v[static_cast<std::size_t>(i)] * v[static_cast<std::size_t>(i)];
    }
    if (norm2 > 1e-12 && norm2 <= 1) {
      const double norm = std::sqrt(norm2);
      for (int i = 0; i < d; ++i) v[static_cast<std::size_t>(i)] /= norm;
      return v;
    }
  }
}

/// Brings p into [0, e) (periodic domain).
inline double wrap(double p, double e) {
  if (p >= e) {
    p -= e;
    if (p >= e) p = std::fmod(p, e);
  } else if (p < 0) {
    p += e;
    if (p < 0) p = std::fmod(p, e) + e;
  }
  // p + e can round up to e for a tiny negative p.
  if (!(p >= 0 && p < e)) p = 0;
  return p;
}

void require(bool ok, const char* what) {
  if (!ok) throw std::invalid_argument(std::string("hhg::scenes::thesis_scenario: ") + what);
}

}  // namespace

// --- thesis scenario ---------------------------------------------------------------

template <int D, class T>
thesis_scenario<D, T>::thesis_scenario(const thesis_params& p) : params_(p) {
  require(std::isfinite(p.fixed_domain_edge) && p.fixed_domain_edge >= 0, "fixed_domain_edge must be finite and >= 0");
  require(std::isfinite(p.size_min) && (p.size_min > 0 || (p.size_min == 0 && p.per_axis_sizes &&
                                                           !p.log_uniform_sizes && p.fixed_domain_edge > 0)),
          "size_min must be finite and > 0 (0 only with per-axis uniform sizes in a fixed domain)");
  require(std::isfinite(p.size_max) && p.size_max >= p.size_min, "size_max must be finite and >= size_min");
  require(std::isfinite(p.pairs_per_object) && p.pairs_per_object > 0, "pairs_per_object must be > 0");
  require(std::isfinite(p.max_speed_fraction) && p.max_speed_fraction >= 0, "max_speed_fraction must be >= 0");
  require(std::isfinite(p.elongation) && p.elongation > 0, "elongation must be > 0");
  require(std::isfinite(p.domain_aspect) && p.domain_aspect > 0, "domain_aspect must be > 0");

  // Two boxes with edges e1, e2 overlap when their min corners are closer than
  // e1_i (or e2_i) on every axis: a region of volume prod_i (e1_i + e2_i)
  // = elongation * (s1 + s2)^D.
  // Per-axis sizes: prod_i E[e1_i + e2_i] = elongation * (2 E[s])^D.
  const std::array<double, 4> moments =
      p.log_uniform_sizes ? log_uniform_moments(p.size_min, p.size_max) : uniform_moments(p.size_min, p.size_max);
  const double mean_volume = p.elongation * (p.per_axis_sizes ? ipow(2 * moments[1], D) : mean_sum_power(moments, D));
  if (p.fixed_domain_edge > 0) {
    domain_.assign(D, p.fixed_domain_edge);
  } else {
    const double density = 2 * p.pairs_per_object / mean_volume;
    const double volume = static_cast<double>(std::max<std::size_t>(p.n, 1)) / density;
    const double a = root(volume / p.domain_aspect, D);
    domain_.assign(D, a);
    domain_[0] = p.domain_aspect * a;
  }
  const double log_range = p.log_uniform_sizes ? det_log(p.size_max / p.size_min) : 0;
  const bool plain = !p.log_uniform_sizes && !p.per_axis_sizes && !p.centred;

  const std::size_t n = p.n;
  pos_.resize(n * D);
  vel_.resize(n * D);
  ext_.resize(n * D);
  boxes_.resize(n);
  rng r(p.seed);
  for (std::size_t i = 0; i < n; ++i) {
    double s = p.size_max > p.size_min ? r.uniform(p.size_min, p.size_max) : p.size_min;
    if (plain) {  // the thesis' draws, unchanged (same seed, same boxes)
      for (int d = 0; d < D; ++d) {
        const std::size_t k = i * D + static_cast<std::size_t>(d);
        ext_[k] = d == 0 ? p.elongation * s : s;
        pos_[k] = wrap(r.uniform() * domain_[static_cast<std::size_t>(d)], domain_[static_cast<std::size_t>(d)]);
      }
    } else {
      if (p.log_uniform_sizes) s = p.size_max > p.size_min ? p.size_min * det_exp(r.uniform() * log_range) : p.size_min;
      double longest = 0;
      for (int d = 0; d < D; ++d) {
        const std::size_t k = i * D + static_cast<std::size_t>(d);
        const double e =
            p.per_axis_sizes ? (p.size_max > p.size_min ? r.uniform(p.size_min, p.size_max) : p.size_min) : s;
        ext_[k] = d == 0 ? p.elongation * e : e;
        longest = std::max(longest, ext_[k]);
        const double x = r.uniform() * domain_[static_cast<std::size_t>(d)];
        // centred: the box around x (it may stick out below 0 until it moves)
        pos_[k] = p.centred ? x - ext_[k] / 2 : wrap(x, domain_[static_cast<std::size_t>(d)]);
      }
      if (p.per_axis_sizes) s = longest;
    }
    const std::array<double, 3> dir = random_direction(r, D);
    const double speed = r.uniform() * p.max_speed_fraction * s;
    for (int d = 0; d < D; ++d) vel_[i * D + static_cast<std::size_t>(d)] = dir[static_cast<std::size_t>(d)] * speed;
    refresh(i);
  }
}

template <int D, class T>
void thesis_scenario<D, T>::step() {
  const std::size_t n = boxes_.size();
  std::array<double, D> edge{};
  for (int d = 0; d < D; ++d) edge[static_cast<std::size_t>(d)] = domain_[static_cast<std::size_t>(d)];
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t d = 0; d < static_cast<std::size_t>(D); ++d) {
      const std::size_t k = i * D + d;
      pos_[k] = wrap(pos_[k] + vel_[k], edge[d]);
    }
    refresh(i);
  }
}

template <int D, class T>
void thesis_scenario<D, T>::refresh(std::size_t i) {
  box<D, T>& b = boxes_[i];
  for (std::size_t d = 0; d < static_cast<std::size_t>(D); ++d) {
    const std::size_t k = i * D + d;
    b.min[d] = static_cast<T>(pos_[k]);
    b.max[d] = static_cast<T>(pos_[k] + ext_[k]);
  }
}

template class thesis_scenario<2, float>;
template class thesis_scenario<2, double>;
template class thesis_scenario<3, float>;
template class thesis_scenario<3, double>;

// --- named variants of the thesis scenario ----------------------------------------------

const std::vector<named_scenario>& named_scenarios() {
  static const std::vector<named_scenario> table = {
      {"equal", "equal cubes", [](thesis_params&) {}, false},
      {"varied", "sizes uniform over a factor 12",
       [](thesis_params& p) {
         p.size_min = 1;
         p.size_max = 12;
       },
       false},
      {"elongated", "10x1x1 boxes", [](thesis_params& p) { p.elongation = 10; }, false},
      {"coherent", "slow motion (1% of the size per step)", [](thesis_params& p) { p.max_speed_fraction = 0.01; },
       false},
      {"sparse", "almost no pairs", [](thesis_params& p) { p.pairs_per_object = 0.001; }, false},
      {"uneven", "domain 1024 times longer in x", [](thesis_params& p) { p.domain_aspect = 1024; }, false},
      {"mixed", "equal cubes among a few static cubes 1000 times larger", [](thesis_params&) {}, true},
      {"log-uniform", "sizes log-uniform from 1 to 1000 (three decades)",
       [](thesis_params& p) {
         p.size_min = 1;
         p.size_max = 1000;
         p.log_uniform_sizes = true;
       },
       false},
      {"terdiman",
       "P. Terdiman's box-pruning data: centres uniform in a cube of edge 4096, half-extents uniform in "
       "[0, 127] per axis (pairs grow with n: 1.2 per box at 10^4, 11 at 10^5)",
       [](thesis_params& p) {
         p.size_min = 0;
         p.size_max = 254;
         p.per_axis_sizes = true;
         p.centred = true;
         p.fixed_domain_edge = 4096;
       },
       false},
      {"jumping", "fast motion (up to 3 sizes per step: nearly every object changes cells)",
       [](thesis_params& p) { p.max_speed_fraction = 3.0; }, false},
  };
  return table;
}

std::vector<std::string> named_scenario_names() {
  std::vector<std::string> v;
  for (const named_scenario& s : named_scenarios()) v.emplace_back(s.name);
  return v;
}

const named_scenario& find_named_scenario(std::string_view name) {
  for (const named_scenario& s : named_scenarios())
    if (s.name == name) return s;
  std::string known;
  for (const named_scenario& s : named_scenarios()) known += (known.empty() ? "" : ", ") + std::string(s.name);
  throw std::invalid_argument("unknown scenario '" + std::string(name) + "' (scenarios: " + known + ")");
}

thesis_params named_scenario_params(std::string_view name, std::size_t n, std::uint64_t seed) {
  thesis_params p;
  find_named_scenario(name).adjust(p);
  p.n = n;
  p.seed = seed;
  return p;
}

template <int D, class T>
std::vector<box<D, T>> huge_static_boxes(const thesis_scenario<D, T>& scene, std::uint64_t seed) {
  rng r(seed + 17);
  const std::vector<double>& dom = scene.domain();
  const std::size_t k = std::max<std::size_t>(1, scene.params().n / 2000);
  std::vector<box<D, T>> out;
  out.reserve(k);
  for (std::size_t i = 0; i < k; ++i) {
    box<D, T> b;
    for (int a = 0; a < D; ++a) {
      const double lo = r.uniform(0, dom[static_cast<std::size_t>(a)]);
      b.min[a] = static_cast<T>(lo);
      b.max[a] = static_cast<T>(lo + 1000.0);
    }
    out.push_back(b);
  }
  return out;
}

template std::vector<box<2, float>> huge_static_boxes(const thesis_scenario<2, float>&, std::uint64_t);
template std::vector<box<2, double>> huge_static_boxes(const thesis_scenario<2, double>&, std::uint64_t);
template std::vector<box<3, float>> huge_static_boxes(const thesis_scenario<3, float>&, std::uint64_t);
template std::vector<box<3, double>> huge_static_boxes(const thesis_scenario<3, double>&, std::uint64_t);

// --- the zoo ------------------------------------------------------------------------

std::vector<zoo> all_zoo_scenes() {
  return {zoo::equal,     zoo::varied12,         zoo::log_uniform, zoo::negative, zoo::far_from_origin,
          zoo::touching,  zoo::zero_size,        zoo::duplicates,  zoo::one_cell, zoo::elongated,
          zoo::unbounded, zoo::huge_among_small, zoo::mixed};
}

std::string to_string(zoo z) {
  switch (z) {
    case zoo::equal: return "equal";
    case zoo::varied12: return "varied12";
    case zoo::log_uniform: return "log_uniform";
    case zoo::negative: return "negative";
    case zoo::far_from_origin: return "far_from_origin";
    case zoo::touching: return "touching";
    case zoo::zero_size: return "zero_size";
    case zoo::duplicates: return "duplicates";
    case zoo::one_cell: return "one_cell";
    case zoo::elongated: return "elongated";
    case zoo::unbounded: return "unbounded";
    case zoo::huge_among_small: return "huge_among_small";
    case zoo::mixed: return "mixed";
  }
  return "unknown";
}

namespace {

/// A box in double precision; only the first d axes are used.
struct dbox {
  std::array<double, 3> lo{};
  std::array<double, 3> hi{};
};

using dscene = std::vector<dbox>;

/// What every generator needs to know.
struct gen {
  int d;        // dimension
  bool single;  // T is float
  rng* r;
  dscene* out;

  double u() const { return r->uniform(); }
  double u(double lo, double hi) const { return r->uniform(lo, hi); }
  std::size_t below(std::size_t n) const { return static_cast<std::size_t>(r->below(n)); }
  std::size_t axis() const { return below(static_cast<std::size_t>(d)); }
  std::size_t dims() const { return static_cast<std::size_t>(d); }
};

/// A cube of edge s with its min corner uniform in origin + [0, edge)^d.
dbox random_cube(const gen& g, double s, double origin, double edge) {
  dbox b;
  for (std::size_t i = 0; i < g.dims(); ++i) {
    b.lo[i] = origin + g.u() * edge;
    b.hi[i] = b.lo[i] + s;
  }
  return b;
}

void shuffle(const gen& g, dscene& s, std::size_t first) {
  for (std::size_t i = s.size(); i > first + 1; --i) {
    const std::size_t j = first + g.below(i - first);
    std::swap(s[i - 1], s[j]);
  }
}

/// Cubes with sizes uniform in [a, b] at `ppo` pairs per object in origin + [0, L)^d.
void uniform_cubes(const gen& g, std::size_t n, double a, double b, double origin, double ppo) {
  const double edge = domain_edge(g.d, n, mean_sum_power(uniform_moments(a, b), g.d), ppo);
  for (std::size_t i = 0; i < n; ++i) {
    const double s = b > a ? g.u(a, b) : a;
    g.out->push_back(random_cube(g, s, origin, edge));
  }
}

void make_equal(const gen& g, std::size_t n) { uniform_cubes(g, n, 1, 1, 0, 2); }

void make_varied12(const gen& g, std::size_t n) { uniform_cubes(g, n, 1, 12, 0, 2); }

/// Sizes 2^j * m, j uniform in [-13, 13], m uniform in [1, 2): log-uniform over
/// 2^27 (about 1.3e8) up to the shape inside each octave.
void make_log_uniform(const gen& g, std::size_t n) {
  constexpr int lowest = -13;
  constexpr int octaves = 27;
  std::array<double, 4> m{};
  for (int k = 0; k < 4; ++k) {
    double sum = 0;
    for (int j = 0; j < octaves; ++j) sum += std::ldexp(1.0, (lowest + j) * k);
    // E[m^k] for m uniform in [1, 2) is (2^(k+1) - 1) / (k + 1).
    m[static_cast<std::size_t>(k)] = sum / octaves * (ipow(2, k + 1) - 1) / (k + 1);
  }
  const double edge = domain_edge(g.d, n, mean_sum_power(m, g.d), 2);
  for (std::size_t i = 0; i < n; ++i) {
    const int octave = lowest + static_cast<int>(g.below(octaves));
    const double s = std::ldexp(g.u(1, 2), octave);
    g.out->push_back(random_cube(g, s, 0, edge));
  }
}

/// 80 % continuous boxes around -1e3; 20 % on a quarter-unit lattice ending at or
/// below -0.0 (some exactly at -0.0), touching exactly at negative coordinates.
void make_negative(const gen& g, std::size_t n) {
  const std::size_t lattice = n / 5;
  const std::size_t continuous = n - lattice;
  const double edge = domain_edge(g.d, continuous, mean_sum_power(uniform_moments(0.5, 6), g.d), 2);
  for (std::size_t i = 0; i < continuous; ++i) {
    const double s = g.u(0.5, 6);
    g.out->push_back(random_cube(g, s, -1000 - 6 - edge, edge));
  }
  // Edges 0.25 .. 1.5 in quarter units: mean pair volume about (e1 + e2 + 0.25)^d.
  const double lattice_edge = domain_edge(g.d, lattice, ipow(2, g.d), 2);
  const std::size_t steps = std::max<std::size_t>(1, static_cast<std::size_t>(4 * lattice_edge));
  for (std::size_t i = 0; i < lattice; ++i) {
    dbox b;
    const bool point = g.below(10) == 0;
    for (std::size_t k = 0; k < g.dims(); ++k) {
      const double e = point ? 0 : 0.25 * static_cast<double>(1 + g.below(6));
      double hi = -0.25 * static_cast<double>(g.below(steps));
      if (hi == 0) hi = -0.0;
      b.hi[k] = hi;
      b.lo[k] = e == 0 ? hi : hi - e;
    }
    g.out->push_back(b);
  }
}

/// Sizes about 1 far from the origin: half at +offset, a quarter at -offset, a
/// quarter at 16 * offset (beyond hash_grids::precision_limit() for cells of
/// size about 1), offset 1e6 for float and 1e12 for double.
void make_far_from_origin(const gen& g, std::size_t n) {
  const double offset = g.single ? 1e6 : 1e12;
  const std::size_t group[3] = {n - n / 4 - n / 4, n / 4, n / 4};
  const double origin[3] = {offset, -offset, 16 * offset};
  for (int k = 0; k < 3; ++k) {
    const double edge = domain_edge(g.d, group[k], mean_sum_power(uniform_moments(0.5, 2), g.d), 2);
    for (std::size_t i = 0; i < group[k]; ++i) g.out->push_back(random_cube(g, g.u(0.5, 2), origin[k], edge));
  }
}

/// Boxes on a half-unit lattice straddling the origin, edges 0.5, 1 or 1.5:
/// many faces, edges and corners coincide exactly.
void make_touching(const gen& g, std::size_t n) {
  // Two boxes with edges e1, e2 (in half units) touch or overlap for
  // e1 + e2 + 1 relative offsets per axis: 5 on average.
  const double cells = root(static_cast<double>(std::max<std::size_t>(n, 1)) * ipow(5, g.d) / 6, g.d);
  const std::size_t m = std::max<std::size_t>(1, static_cast<std::size_t>(std::ceil(cells)));
  const auto half = static_cast<double>(m / 2);
  for (std::size_t i = 0; i < n; ++i) {
    dbox b;
    for (std::size_t k = 0; k < g.dims(); ++k) {
      b.lo[k] = 0.5 * (static_cast<double>(g.below(m)) - half);
      b.hi[k] = b.lo[k] + 0.5 * static_cast<double>(1 + g.below(3));
    }
    g.out->push_back(b);
  }
}

/// Integer-lattice boxes, points on their faces, edges and corners, flat boxes
/// lying in their faces, duplicated points and free points.
void make_zero_size(const gen& g, std::size_t n) {
  const double cells = root(static_cast<double>(std::max<std::size_t>(n, 1)) * ipow(5, g.d) / 16, g.d);
  const std::size_t m = std::max<std::size_t>(2, static_cast<std::size_t>(std::ceil(cells)));
  const auto half = static_cast<double>(m / 2);
  std::vector<std::size_t> bases;   // positions in out of the lattice boxes
  std::vector<std::size_t> points;  // positions in out of the zero-size objects
  const std::size_t start = g.out->size();
  for (std::size_t i = 0; i < n; ++i) {
    std::size_t kind = g.below(20);
    if (bases.empty() && kind >= 5 && kind < 14) kind = 17;
    if (points.empty() && kind >= 14 && kind < 17) kind = 17;
    dbox b;
    if (kind < 5) {  // a base box with integer corners, edges 1 .. 3
      for (std::size_t k = 0; k < g.dims(); ++k) {
        b.lo[k] = static_cast<double>(g.below(m)) - half;
        b.hi[k] = b.lo[k] + static_cast<double>(1 + g.below(3));
      }
      bases.push_back(g.out->size());
    } else if (kind < 10) {  // a point on a corner, edge, face or inside of a base
      const dbox& base = (*g.out)[bases[g.below(bases.size())]];
      for (std::size_t k = 0; k < g.dims(); ++k) {
        const std::size_t where = g.below(3);
        const double c = where == 0 ? base.lo[k] : where == 1 ? base.hi[k] : g.u(base.lo[k], base.hi[k]);
        b.lo[k] = b.hi[k] = c;
      }
    } else if (kind < 14) {  // a flat box in the plane of a face, overhanging by up to a unit
      const dbox& base = (*g.out)[bases[g.below(bases.size())]];
      const std::size_t flat = g.axis();
      for (std::size_t k = 0; k < g.dims(); ++k) {
        if (k == flat) {
          b.lo[k] = b.hi[k] = g.below(2) ? base.lo[k] : base.hi[k];
        } else {
          double x = base.lo[k] + 0.5 * (static_cast<double>(g.below(5)) - 2);
          double y = base.hi[k] + 0.5 * (static_cast<double>(g.below(5)) - 2);
          if (x > y) std::swap(x, y);
          b.lo[k] = x;
          b.hi[k] = y;
        }
      }
    } else if (kind < 17) {  // a duplicate of an earlier zero-size object
      b = (*g.out)[points[g.below(points.size())]];
    } else if (kind < 19) {  // a free point on the half-unit lattice
      for (std::size_t k = 0; k < g.dims(); ++k) b.lo[k] = b.hi[k] = 0.5 * static_cast<double>(g.below(2 * m)) - half;
    } else {  // a free point anywhere
      for (std::size_t k = 0; k < g.dims(); ++k) b.lo[k] = b.hi[k] = g.u(-half, static_cast<double>(m) - half);
    }
    if (kind >= 5) points.push_back(g.out->size());
    g.out->push_back(b);
  }
  shuffle(g, *g.out, start);
}

/// Groups of 1 to 6 identical boxes (some of them points), plus one large group.
void make_duplicates(const gen& g, std::size_t n) {
  const std::size_t start = g.out->size();
  // Representatives: about n / 3.5 boxes at 0.3 pairs per representative.
  const std::size_t reps = n * 2 / 7 + 1;
  const double edge = domain_edge(g.d, reps, mean_sum_power(uniform_moments(1, 2), g.d), 0.3);
  std::size_t left = n;
  std::size_t size = std::min<std::size_t>({n, 2 + n / 16, 64});
  while (left > 0) {
    dbox b = random_cube(g, g.u(1, 2), 0, edge);
    if (g.below(10) == 0) b.hi = b.lo;
    size = std::min(size, left);
    for (std::size_t i = 0; i < size; ++i) g.out->push_back(b);
    left -= size;
    size = 1 + g.below(6);
  }
  shuffle(g, *g.out, start);
}

/// n boxes of size about 0.01 inside a cube of edge 0.05 centred on the origin.
void make_one_cell(const gen& g, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const double s = g.u(0.005, 0.015);
    g.out->push_back(random_cube(g, s, -0.025, 0.05 - s));
  }
}

/// Edges of an elongated object: needles (10 x 1 x 1 or 10 x 0.05 x 0.05 along a
/// random axis), slabs (10 x 10 x 1, some of zero thickness; 10 x 0.2 in 2D)
/// and unit cubes.
std::array<double, 3> elongated_edges(const gen& g) {
  std::array<double, 3> e{1, 1, 1};
  const std::size_t kind = g.below(10);
  const std::size_t a = g.axis();
  if (kind < 4) {
    const double thin = g.below(5) < 3 ? 1 : 0.05;
    e = {thin, thin, thin};
    e[a] = 10;
  } else if (kind < 7) {
    if (g.d == 3) {
      e = {10, 10, 10};
      e[a] = g.below(10) == 0 ? 0 : 1;
    } else {
      e = {10, 10, 10};
      e[a] = g.below(10) == 0 ? 0 : 0.2;
    }
  }
  return e;
}

void make_elongated(const gen& g, std::size_t n) {
  // Estimate E[prod_i (e1_i + e2_i)] with a fixed-seed generator.
  rng fixed(0x5eed5eed5eedull);
  const gen h{g.d, g.single, &fixed, nullptr};
  double mean = 0;
  constexpr int samples = 4096;
  for (int i = 0; i < samples; ++i) {
    const std::array<double, 3> e1 = elongated_edges(h);
    const std::array<double, 3> e2 = elongated_edges(h);
    double v = 1;
    for (std::size_t k = 0; k < g.dims(); ++k) v *= e1[k] + e2[k];
    mean += v;
  }
  mean /= samples;
  const double edge = domain_edge(g.d, n, mean, 2);
  for (std::size_t i = 0; i < n; ++i) {
    const std::array<double, 3> e = elongated_edges(g);
    dbox b;
    for (std::size_t k = 0; k < g.dims(); ++k) {
      b.lo[k] = g.u() * edge;
      b.hi[k] = b.lo[k] + e[k];
    }
    g.out->push_back(b);
  }
}

/// 95 % cubes of size 1 to 4; about 5 % unbounded: the everything box, planes (some in
/// the plane of a face of a bounded box), half-spaces, infinite bars, rays and
/// points at infinity.
void make_unbounded(const gen& g, std::size_t n) {
  const std::size_t start = g.out->size();
  // 5 % up to n = 1000, fewer beyond (a plane meets a share of the objects that
  // grows with n, so the pair count would grow faster than n).
  const std::size_t unbounded = n == 0 ? 0 : std::max<std::size_t>(1, std::min(n / 20, 50 + n / 400));
  const std::size_t bounded = n - unbounded;
  const double edge = domain_edge(g.d, bounded, mean_sum_power(uniform_moments(1, 4), g.d), 1.5);
  for (std::size_t i = 0; i < bounded; ++i) g.out->push_back(random_cube(g, g.u(1, 4), 0, edge));
  for (std::size_t i = 0; i < unbounded; ++i) {
    dbox b;
    for (std::size_t k = 0; k < 3; ++k) {
      b.lo[k] = -inf;
      b.hi[k] = inf;
    }
    if (i > 0) {
      const std::size_t a = g.axis();
      const std::size_t kind = g.below(6);
      if (kind == 0) {  // a plane, perhaps through the face of a bounded box
        double z = g.u() * edge;
        if (bounded > 0 && g.below(2)) {
          const dbox& other = (*g.out)[start + g.below(bounded)];
          z = g.below(2) ? other.lo[a] : other.hi[a];
        }
        b.lo[a] = b.hi[a] = z;
      } else if (kind == 1) {  // a half-space cutting a thin layer off the domain
        if (g.below(2)) {
          b.hi[a] = g.u(-0.1, 0.1) * edge;
        } else {
          b.lo[a] = g.u(0.9, 1.1) * edge;
        }
      } else {  // finite across the axes but a, like a bounded box
        const double s = g.u(1, 4);
        for (std::size_t k = 0; k < g.dims(); ++k) {
          b.lo[k] = g.u() * edge;
          b.hi[k] = b.lo[k] + s;
        }
        if (kind == 2) {  // an infinite bar
          b.lo[a] = -inf;
          b.hi[a] = inf;
        } else if (kind == 3) {  // a ray
          if (g.below(2))
            b.lo[a] = -inf;
          else
            b.hi[a] = inf;
        } else if (kind == 4) {  // a point at infinity on axis a
          b.lo[a] = b.hi[a] = g.below(2) ? inf : -inf;
        } else {  // a bar at infinity: [-inf, -inf] or [inf, inf] on a, infinite on another axis
          b.lo[a] = b.hi[a] = g.below(2) ? inf : -inf;
          const std::size_t other = (a + 1) % g.dims();
          b.lo[other] = -inf;
          b.hi[other] = inf;
        }
      }
    }
    g.out->push_back(b);
  }
  shuffle(g, *g.out, start);
}

/// Cubes of size 0.5 to 1.5 and a few (1 to 4) cubes 1000 times larger reaching
/// into their domain.
void make_huge_among_small(const gen& g, std::size_t n) {
  const std::size_t start = g.out->size();
  const std::size_t huge = n == 0 ? 0 : std::min<std::size_t>(n, 1 + std::min<std::size_t>(n / 256, 3));
  const std::size_t small = n - huge;
  const double edge = domain_edge(g.d, small, mean_sum_power(uniform_moments(0.5, 1.5), g.d), 2);
  for (std::size_t i = 0; i < small; ++i) g.out->push_back(random_cube(g, g.u(0.5, 1.5), 0, edge));
  for (std::size_t i = 0; i < huge; ++i) {
    const double s = 1000 * g.u(0.5, 1.5);
    g.out->push_back(random_cube(g, s, -s, s + edge));
  }
  shuffle(g, *g.out, start);
}

void make(const gen& g, zoo z, std::size_t n);

void make_mixed(const gen& g, std::size_t n) {
  const std::size_t start = g.out->size();
  std::vector<zoo> parts = all_zoo_scenes();
  parts.pop_back();  // mixed itself
  const std::size_t count = parts.size();
  for (std::size_t i = 0; i < count; ++i) make(g, parts[i], n / count + (i < n % count ? 1 : 0));
  shuffle(g, *g.out, start);
}

void make(const gen& g, zoo z, std::size_t n) {
  switch (z) {
    case zoo::equal: return make_equal(g, n);
    case zoo::varied12: return make_varied12(g, n);
    case zoo::log_uniform: return make_log_uniform(g, n);
    case zoo::negative: return make_negative(g, n);
    case zoo::far_from_origin: return make_far_from_origin(g, n);
    case zoo::touching: return make_touching(g, n);
    case zoo::zero_size: return make_zero_size(g, n);
    case zoo::duplicates: return make_duplicates(g, n);
    case zoo::one_cell: return make_one_cell(g, n);
    case zoo::elongated: return make_elongated(g, n);
    case zoo::unbounded: return make_unbounded(g, n);
    case zoo::huge_among_small: return make_huge_among_small(g, n);
    case zoo::mixed: return make_mixed(g, n);
  }
  throw std::invalid_argument("hhg::scenes::make_zoo_scene: unknown scene");
}

}  // namespace

template <int D, class T>
std::vector<box<D, T>> make_zoo_scene(zoo z, std::size_t n, std::uint64_t seed) {
  rng r(seed ^ (0x9E3779B97F4A7C15ull * (static_cast<std::uint64_t>(z) + 1)));
  dscene scene;
  scene.reserve(n);
  make({D, std::is_same_v<T, float>, &r, &scene}, z, n);
  std::vector<box<D, T>> boxes(scene.size());
  for (std::size_t i = 0; i < scene.size(); ++i) {
    for (std::size_t k = 0; k < static_cast<std::size_t>(D); ++k) {
      boxes[i].min[k] = static_cast<T>(scene[i].lo[k]);
      boxes[i].max[k] = static_cast<T>(scene[i].hi[k]);
    }
  }
  return boxes;
}

template std::vector<box<2, float>> make_zoo_scene<2, float>(zoo, std::size_t, std::uint64_t);
template std::vector<box<2, double>> make_zoo_scene<2, double>(zoo, std::size_t, std::uint64_t);
template std::vector<box<3, float>> make_zoo_scene<3, float>(zoo, std::size_t, std::uint64_t);
template std::vector<box<3, double>> make_zoo_scene<3, double>(zoo, std::size_t, std::uint64_t);

}  // namespace hhg::scenes
