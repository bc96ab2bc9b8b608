// apps/hhg/bench.cpp: `hhg bench`, the thesis' experiments (chapter 4) run by
// every method on the same boxes and the same motion, side by side.
//
// Each (scenario, N, method) runs in its own child process (fork), so no
// method inherits another's heap; the child reports one line through a pipe.
// A step = the scenario moves every object (not timed), update phase (move()
// for every object, then update(); timed), detection (find_pairs into a
// reused vector; timed). Medians and maxima over the steps after 2 warm-up
// steps. Pairs per step must agree across methods: a mismatch is reported and
// gives exit status 1. See docs/benchmarks/README.md.
#include <sys/resource.h>
#include <csignal>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "bench_peers.hpp"
#include "commands.hpp"
#include "hhg/scenes.hpp"
#include "methods.hpp"

namespace hhg::cli {

namespace {

using clock_type = std::chrono::steady_clock;

// ---- the afternoon baseline: a uniform grid in a std::unordered_map ---------
// Cell = the largest object's edge; each object in the cell of its min corner;
// rebuilt every step; each cell against itself and its 26 neighbours, pairs
// kept once by index order. What a user writes without a library.
template <int D, class T>
class plain_grid {
 public:
  using box_type = box<D, T>;
  static constexpr int dimension = D;
  using scalar = T;
  static constexpr const char* method_name = "grid";
  handle insert(const box_type& b) {
    boxes_.push_back(b);
    return {static_cast<std::uint32_t>(boxes_.size() - 1), 1};
  }
  void move(handle h, const box_type& b) { boxes_[h.index] = b; }
  void update() {}
  std::size_t bytes() const {
    std::size_t b = boxes_.capacity() * sizeof(box_type) + cells_.bucket_count() * sizeof(void*);
    for (const auto& [k, v] : cells_) b += sizeof(k) + v.capacity() * 4 + 32;
    return b;
  }
  void find_pairs(std::vector<handle_pair>& out) {
    out.clear();
    double cell = 0;
    for (const auto& b : boxes_)
      for (int k = 0; k < D; ++k) cell = std::max(cell, static_cast<double>(b.max[k] - b.min[k]));
    cell = cell > 0 ? cell * (1 + 1e-9) : 1;
    cells_.clear();
    auto key = [](const std::array<std::int64_t, D>& c) {
      std::uint64_t h = 0;
      for (int k = 0; k < D; ++k) h = h * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(c[k]);
      return h;
    };
    std::vector<std::array<std::int64_t, D>> at(boxes_.size());
    for (std::size_t i = 0; i < boxes_.size(); ++i) {
      for (int k = 0; k < D; ++k) at[i][k] = static_cast<std::int64_t>(std::floor(boxes_[i].min[k] / cell));
      cells_[key(at[i])].push_back(static_cast<std::uint32_t>(i));
    }
    for (std::size_t i = 0; i < boxes_.size(); ++i) {
      std::array<int, D> d{};
      d.fill(-1);
      for (;;) {
        std::array<std::int64_t, D> c{};
        for (int k = 0; k < D; ++k) c[k] = at[i][k] + d[k];
        if (auto it = cells_.find(key(c)); it != cells_.end())
          for (std::uint32_t j : it->second)
            if (j > i && overlaps(boxes_[i], boxes_[j]))
              out.push_back({{static_cast<std::uint32_t>(i), 1}, {j, 1}});
        int k = 0;
        for (; k < D; ++k) {
          if (d[k] < 1) {
            ++d[k];
            break;
          }
          d[k] = -1;
        }
        if (k == D) break;
      }
    }
  }

 private:
  std::vector<box_type> boxes_;
  std::unordered_map<std::uint64_t, std::vector<std::uint32_t>> cells_;
};

struct result {
  std::string scenario, method;
  std::size_t n = 0, steps = 0;
  double setup_ms = 0, update_med = 0, update_max = 0, detect_med = 0, detect_max = 0, step_med = 0, step_mean = 0;
  double pairs_med = 0;
  std::size_t bytes = 0;
  long peak_rss_kb = 0;
  // growth of the peak RSS over the process' peak before the method was
  // created (the scene already generated): the method's peak memory
  long long peak_bytes = 0;
  // counters of the last detection, -1 where the method does not count
  long long box_tests = -1, cells_visited = -1;
  std::string pair_counts;  // per step, comma separated
  std::string note;
};

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

double ms(clock_type::time_point a, clock_type::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

scenes::thesis_params params_for(const std::string& scenario, std::size_t n, std::uint64_t seed) {
  scenes::thesis_params p;
  p.n = n;
  p.seed = seed;
  if (scenario == "varied" || scenario == "factor") {
    p.size_min = 1;
    p.size_max = 12;
  } else if (scenario == "elongated") {
    p.elongation = 10;
  } else if (scenario == "coherent") {
    p.max_speed_fraction = 0.01;
  } else if (scenario == "sparse") {
    p.pairs_per_object = 0.001;
  } else if (scenario == "uneven") {
    p.domain_aspect = 1024;
  } else if (scenario == "update-jump") {
    p.max_speed_fraction = 3.0;  // nearly every object leaves its cell every step
  }
  return p;
}

// Runs one method on one scenario (in the child process).
template <class M>
result measure(M m, const std::string& scenario, std::size_t n, std::size_t steps, std::uint64_t seed) {
  using B = typename M::box_type;
  scenes::thesis_scenario<3, double> scene(params_for(scenario, n, seed));
  // mixed: a few huge static objects (1000x the size) among the moving ones
  std::vector<B> huge;
  if (scenario == "mixed") {
    scenes::rng r(seed + 17);
    const auto& dom = scene.domain();
    const std::size_t k = std::max<std::size_t>(1, n / 2000);
    for (std::size_t i = 0; i < k; ++i) {
      B b;
      for (int a = 0; a < 3; ++a) {
        b.min[a] = r.uniform(0, dom[a]);
        b.max[a] = b.min[a] + 1000.0;
      }
      huge.push_back(b);
    }
  }
  result res;
  res.scenario = scenario;
  res.n = n;
  res.steps = steps;
  rusage before{};
  getrusage(RUSAGE_SELF, &before);
  std::vector<handle> hs;
  hs.reserve(n);
  const auto t0 = clock_type::now();
  for (const auto& b : scene.boxes()) hs.push_back(m.insert(b));
  for (const auto& b : huge) m.insert(b);
  std::vector<handle_pair> pairs;
  m.find_pairs(pairs);
  res.setup_ms = ms(t0, clock_type::now());
  std::vector<double> up, det, st, pc;
  for (std::size_t s = 1; s <= steps; ++s) {
    scene.step();
    const auto a = clock_type::now();
    if constexpr (requires { m.move(std::span<const handle>(hs), std::span<const B>(scene.boxes())); })
      m.move(std::span<const handle>(hs), std::span<const B>(scene.boxes()));  // the batch form where there is one
    else
      for (std::size_t i = 0; i < n; ++i) m.move(hs[i], scene.boxes()[i]);
    m.update();
    const auto b = clock_type::now();
    m.find_pairs(pairs);
    const auto c = clock_type::now();
    if (!res.pair_counts.empty()) res.pair_counts += ',';
    res.pair_counts += std::to_string(pairs.size());
    if (s > 2 || steps <= 2) {
      up.push_back(ms(a, b));
      det.push_back(ms(b, c));
      st.push_back(ms(a, c));
      pc.push_back(static_cast<double>(pairs.size()));
    }
  }
  res.update_med = median(up);
  res.update_max = up.empty() ? 0 : *std::max_element(up.begin(), up.end());
  res.detect_med = median(det);
  res.detect_max = det.empty() ? 0 : *std::max_element(det.begin(), det.end());
  res.step_med = median(st);
  for (const double x : st) res.step_mean += x / static_cast<double>(st.size());
  res.pairs_med = median(pc);
  res.bytes = m.bytes();
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  res.peak_rss_kb = ru.ru_maxrss;
  res.peak_bytes = (static_cast<long long>(ru.ru_maxrss) - static_cast<long long>(before.ru_maxrss)) * 1024;
  if constexpr (requires { m.stats().box_tests; }) {
    const auto counters = m.stats();
    res.box_tests = static_cast<long long>(counters.box_tests);
    res.cells_visited = static_cast<long long>(counters.cells_visited);
  } else {
    if constexpr (requires { m.box_tests(); }) res.box_tests = static_cast<long long>(m.box_tests());
    if constexpr (requires { m.cells_visited(); }) res.cells_visited = static_cast<long long>(m.cells_visited());
  }
  return res;
}

std::string encode(const result& r) {
  std::ostringstream s;
  s.precision(9);
  s << r.setup_ms << ' ' << r.update_med << ' ' << r.update_max << ' ' << r.detect_med << ' ' << r.detect_max << ' '
    << r.step_med << ' ' << r.step_mean << ' ' << r.pairs_med << ' ' << r.bytes << ' ' << r.peak_rss_kb << ' ' << r.peak_bytes << ' '
    << r.box_tests << ' ' << r.cells_visited << ' ' << r.pair_counts;
  return s.str();
}

bool decode(const std::string& line, result& r) {
  std::istringstream s(line);
  return static_cast<bool>(s >> r.setup_ms >> r.update_med >> r.update_max >> r.detect_med >> r.detect_max >>
                           r.step_med >> r.step_mean >> r.pairs_med >> r.bytes >> r.peak_rss_kb >> r.peak_bytes >> r.box_tests >>
                           r.cells_visited >> r.pair_counts);
}

// Runs `method` (with its variant) in the child: dispatch by name.
result run_child(const std::string& method, const std::string& scenario, std::size_t n, std::size_t steps,
                 std::uint64_t seed) {
  if (method == "grid") return measure(plain_grid<3, double>(), scenario, n, steps, seed);
#ifdef HHG_HAVE_BULLET
  if (method == "bullet-dbvt") return measure(peers::bullet(false), scenario, n, steps, seed);
  if (method == "bullet-sap") return measure(peers::bullet(true), scenario, n, steps, seed);
#endif
#ifdef HHG_HAVE_FCL
  if (method.rfind("fcl-", 0) == 0) return measure(peers::fcl_manager(method), scenario, n, steps, seed);
#endif
#ifdef HHG_HAVE_CGAL
  if (method == "cgal") return measure(peers::cgal(), scenario, n, steps, seed);
#endif
  if (method == "hhg-rebuild") {
    config c;
    c.strategy = update_strategy::rebuild;
    return measure(hash_grids<3, double>(c), scenario, n, steps, seed);
  }
  if (method == "hhg-occupancy") {
    config c;
    c.growth = growth_rule::by_occupancy;
    return measure(hash_grids<3, double>(c), scenario, n, steps, seed);
  }
  if (method.rfind("hhg-f", 0) == 0) {  // factor variants: hhg-f1.5, hhg-f2, ...
    config c;
    c.hierarchy_factor = std::stod(method.substr(5));
    return measure(hash_grids<3, double>(c), scenario, n, steps, seed);
  }
  return with_method<3>(method, [&](auto id) {
    using M = typename decltype(id)::type;
    return measure(M(), scenario, n, steps, seed);
  });
}

std::optional<result> run_isolated(const std::string& method, const std::string& scenario, std::size_t n,
                                   std::size_t steps, std::uint64_t seed, unsigned timeout_s, std::string& error) {
  int fd[2];
  if (pipe(fd) != 0) {
    error = "pipe failed";
    return std::nullopt;
  }
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    error = "fork failed";
    return std::nullopt;
  }
  if (pid == 0) {
    close(fd[0]);
    alarm(timeout_s);  // a run that takes longer is killed and reported as timed out
    int code = 0;
    std::string line;
    try {
      line = encode(run_child(method, scenario, n, steps, seed)) + "\n";
    } catch (const std::exception& e) {
      line = std::string("error ") + e.what() + "\n";
      code = 1;
    }
    const char* p = line.data();
    std::size_t left = line.size();
    while (left > 0) {
      const ssize_t w = write(fd[1], p, left);
      if (w <= 0) break;
      p += w;
      left -= static_cast<std::size_t>(w);
    }
    close(fd[1]);
    _exit(code);
  }
  close(fd[1]);
  std::string text;
  char buf[4096];
  for (;;) {
    const ssize_t r = read(fd[0], buf, sizeof buf);
    if (r <= 0) break;
    text.append(buf, static_cast<std::size_t>(r));
  }
  close(fd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  result res;
  res.method = method;
  res.scenario = scenario;
  res.n = n;
  res.steps = steps;
  if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM) {
    error = "timed out after " + std::to_string(timeout_s) + " s";
    return std::nullopt;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !decode(text, res)) {
    error = text.empty() ? "the run crashed" : text.substr(0, text.find('\n'));
    return std::nullopt;
  }
  return res;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == ',') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown";
}

std::string json_str(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    o += c;
  }
  return o + "\"";
}

// Scenarios that expand into several (scenario, method) runs.
struct job {
  std::string scenario;
  std::vector<std::string> methods;
};

}  // namespace

CLI::App* add_bench_command(CLI::App& app, bench_options& o) {
  CLI::App* sub = app.add_subcommand("bench", "Run the thesis' experiments with every method, side by side");
  sub->add_option("--scenario", o.scenarios,
                  "Comma-separated: equal, varied, elongated, coherent, sparse, uneven, mixed, factor, update");
  sub->add_option("--methods", o.methods, "Comma-separated method names (default: all)");
  sub->add_option("--n", o.ns, "Comma-separated object counts");
  sub->add_option("--steps", o.steps, "Time steps per run")->check(CLI::Range(1, 100000));
  sub->add_option("--seed", o.seed, "Seed of the scenarios");
  sub->add_option("--json", o.json, "Write the results as JSON to this file");
  sub->add_option("--csv", o.csv, "Write the results as CSV to this file");
  sub->add_flag("--quick", o.quick, "A small run (under a minute): the one CI runs");
  sub->add_option("--timeout", o.timeout, "Seconds a single run may take before it is skipped as too slow")
      ->check(CLI::Range(1, 86400));
  return sub;
}

int bench_command(const bench_options& o) {
  const std::vector<std::string> all_scenarios = {"equal", "varied",   "elongated", "coherent", "sparse",
                                                  "uneven", "mixed", "factor",    "update"};
  std::vector<std::string> all_methods = method_names();
  all_methods.insert(all_methods.begin() + 1, "hhg-rebuild");
  all_methods.insert(all_methods.begin() + 2, "hhg-occupancy");
  all_methods.push_back("grid");
  for (const auto& p : peers::all_names()) all_methods.push_back(p);
  const std::vector<std::string> present = peers::available();
  std::vector<std::string> scenarios = o.scenarios.empty() ? all_scenarios : split(o.scenarios);
  std::vector<std::string> methods = o.methods.empty() ? all_methods : split(o.methods);
  for (const auto& s : scenarios)
    if (std::find(all_scenarios.begin(), all_scenarios.end(), s) == all_scenarios.end())
      throw usage_error("bench: unknown scenario '" + s + "'");
  for (const auto& m : methods)
    if (std::find(all_methods.begin(), all_methods.end(), m) == all_methods.end())
      throw usage_error("bench: unknown method '" + m + "'");
  std::vector<std::size_t> ns;
  for (const auto& t : split(o.ns)) {
    std::size_t v = 0;
    try {
      v = std::stoull(t);
    } catch (...) {
      throw usage_error("bench: --n: not a count: '" + t + "'");
    }
    if (v < 1 || v > 100000000) throw usage_error("bench: --n: out of range: '" + t + "'");
    ns.push_back(v);
  }
  std::size_t steps = o.steps;
  if (o.quick) {
    if (o.scenarios.empty()) scenarios = {"equal", "varied", "sparse", "mixed", "update"};
    if (ns.empty()) ns = {2000};
    if (steps == 0) steps = 5;
  }
  if (ns.empty()) ns = {1000, 10000, 100000};
  if (steps == 0) steps = 10;

  std::vector<job> jobs;
  for (const auto& s : scenarios) {
    if (s == "factor") {
      std::vector<std::string> v;
      if (std::find(methods.begin(), methods.end(), "hhg") != methods.end())
        for (const char* f : {"hhg-f1.5", "hhg-f2", "hhg-f3", "hhg-f4"}) v.push_back(f);
      jobs.push_back({"factor", v});
    } else if (s == "update") {
      std::vector<std::string> v;
      for (const char* m : {"hhg", "hhg-rebuild"})
        if (std::find(methods.begin(), methods.end(), m) != methods.end()) v.push_back(m);
      jobs.push_back({"update", v});
      jobs.push_back({"update-jump", v});
    } else {
      jobs.push_back({s, methods});
    }
  }

  std::vector<result> results;
  bool mismatch = false;
  std::size_t total = 0, done = 0;
  for (const auto& j : jobs) total += j.methods.size() * ns.size();
  for (const auto& j : jobs) {
    for (std::size_t n : ns) {
      std::string reference_counts, reference_method;
      for (const auto& m : j.methods) {
        ++done;
        result r;
        r.method = m;
        r.scenario = j.scenario;
        r.n = n;
        r.steps = steps;
        const bool is_peer = std::find(peers::all_names().begin(), peers::all_names().end(), m) != peers::all_names().end();
        if (is_peer && std::find(present.begin(), present.end(), m) == present.end()) {
          r.note = "skipped: not compiled in (library not found when hhg was built)";
        } else if (m == "fcl-itree") {
          r.note = "skipped: FCL 0.7's IntervalTreeCollisionManager crashed (segfault) after update(objects) here";
        } else if ((m == "fcl-sap" || m == "fcl-shash") && n > 20000) {
          r.note = "skipped: above 20000 objects (15 us per object per step already at 3000)";
        } else if (m == "brute" && n > 20000) {
          r.note = "skipped: O(N^2) above 20000 objects";
        } else if ((m == "uniform" || m == "multilevel" || m == "hierarchical" || m == "grid") && j.scenario == "mixed" &&
                   n > 20000) {
          r.note = "skipped: huge objects cover too many cells above 20000 objects";
        } else {
          std::fprintf(stderr, "hhg bench: [%zu/%zu] %s n=%zu %s ...\n", done, total, j.scenario.c_str(), n, m.c_str());
          std::string error;
          if (auto got = run_isolated(m, j.scenario, n, steps, o.seed, o.timeout, error)) {
            r = *got;
            if (reference_counts.empty()) {
              reference_counts = r.pair_counts;
              reference_method = m;
            } else if (r.pair_counts != reference_counts) {
              mismatch = true;
              r.note = "PAIRS DIFFER from " + reference_method;
              std::fprintf(stderr, "hhg bench: MISMATCH: %s n=%zu: %s found pairs per step %s, %s found %s\n",
                           j.scenario.c_str(), n, m.c_str(), r.pair_counts.c_str(), reference_method.c_str(),
                           reference_counts.c_str());
            }
          } else if (error.rfind("timed out", 0) == 0) {
            r.note = "skipped: " + error;  // too slow for this size: noted, not an error
          } else {
            r.note = "failed: " + error;
            mismatch = true;
          }
        }
        results.push_back(r);
      }
    }
  }

  // summary table with ratios to hhg (same scenario and n)
  std::map<std::pair<std::string, std::size_t>, double> hhg_step;
  for (const auto& r : results)
    if (r.method == "hhg" && r.note.empty()) hhg_step[{r.scenario, r.n}] = r.step_med;
  std::printf("%-12s %9s %-14s %10s %10s %10s %11s %8s %10s %9s  %s\n", "scenario", "n", "method", "setup ms",
              "update ms", "detect ms", "ns/obj/step", "x hhg", "pairs", "B/object", "note");
  for (const auto& r : results) {
    if (!r.note.empty() && r.step_med == 0) {
      std::printf("%-12s %9zu %-14s %s\n", r.scenario.c_str(), r.n, r.method.c_str(), r.note.c_str());
      continue;
    }
    const auto it = hhg_step.find({r.scenario, r.n});
    const double ratio = it != hhg_step.end() && it->second > 0 ? r.step_med / it->second : 0;
    std::printf("%-12s %9zu %-14s %10.3f %10.3f %10.3f %11.1f %8.2f %10.0f %9.1f  %s\n", r.scenario.c_str(), r.n,
                r.method.c_str(), r.setup_ms, r.update_med, r.detect_med, r.step_med * 1e6 / static_cast<double>(r.n),
                ratio, r.pairs_med, static_cast<double>(r.bytes) / static_cast<double>(r.n), r.note.c_str());
  }

  const std::string cpu = cpu_model();
#ifdef __VERSION__
  const std::string compiler = __VERSION__;
#else
  const std::string compiler = "unknown";
#endif
#ifdef HHG_BUILD_FLAGS
  const std::string flags = HHG_BUILD_FLAGS;
#else
  const std::string flags = "unknown";
#endif
  if (!o.csv.empty()) {
    std::ofstream f(o.csv);
    if (!f) throw usage_error("bench: cannot write '" + o.csv + "'");
    f << "scenario,n,method,steps,setup_ms,update_ms_median,update_ms_max,detect_ms_median,detect_ms_max,"
         "step_ms_median,pairs_median,bytes,bytes_per_object,peak_rss_kb,peak_bytes,box_tests,cells_visited,note\n";
    for (const auto& r : results)
      f << r.scenario << ',' << r.n << ',' << r.method << ',' << r.steps << ',' << r.setup_ms << ',' << r.update_med
        << ',' << r.update_max << ',' << r.detect_med << ',' << r.detect_max << ',' << r.step_med << ','
        << r.pairs_med << ',' << r.bytes << ',' << static_cast<double>(r.bytes) / static_cast<double>(r.n) << ','
        << r.peak_rss_kb << ',' << r.peak_bytes << ',' << r.box_tests << ',' << r.cells_visited << ',' << r.note
        << '\n';
  }
  if (!o.json.empty()) {
    // The contract of the issue: a list of runs, one per (scenario, n), each
    // {"scenario", "n", "steps", "results": [{"method", "setup_ms",
    // "step_ms_median", "update_ms_median", "detect_ms_median", "pairs",
    // "peak_bytes", ...}]}; more keys may be added, none renamed.
    std::ofstream f(o.json);
    if (!f) throw usage_error("bench: cannot write '" + o.json + "'");
    auto counter = [](long long v) { return v < 0 ? std::string("null") : std::to_string(v); };
    std::ostringstream machine;
    machine << "{\"cpu\": " << json_str(cpu) << ", \"cores\": " << sysconf(_SC_NPROCESSORS_ONLN)
            << ", \"compiler\": " << json_str(compiler) << ", \"flags\": " << json_str(flags) << "}";
    f << "[\n";
    for (std::size_t i = 0; i < results.size();) {
      std::size_t e = i;
      while (e < results.size() && results[e].scenario == results[i].scenario && results[e].n == results[i].n) ++e;
      f << "  {\"scenario\": " << json_str(results[i].scenario) << ", \"n\": " << results[i].n
        << ", \"steps\": " << steps << ", \"seed\": " << o.seed << ",\n   \"machine\": " << machine.str()
        << ",\n   \"results\": [\n";
      for (std::size_t k = i; k < e; ++k) {
        const auto& r = results[k];
        f << "    {\"method\": " << json_str(r.method) << ", \"setup_ms\": " << r.setup_ms
          << ", \"step_ms_median\": " << r.step_med << ", \"step_ms_mean\": " << r.step_mean
          << ", \"update_ms_median\": " << r.update_med
          << ", \"detect_ms_median\": " << r.detect_med << ", \"pairs\": " << r.pairs_med
          << ", \"peak_bytes\": " << r.peak_bytes << ", \"update_ms_max\": " << r.update_max
          << ", \"detect_ms_max\": " << r.detect_max << ", \"bytes\": " << r.bytes
          << ", \"peak_rss_kb\": " << r.peak_rss_kb << ", \"box_tests\": " << counter(r.box_tests)
          << ", \"cells_visited\": " << counter(r.cells_visited) << ", \"pairs_per_step\": [" << r.pair_counts
          << "], \"note\": " << json_str(r.note) << "}" << (k + 1 < e ? "," : "") << "\n";
      }
      f << "   ]}" << (e < results.size() ? "," : "") << "\n";
      i = e;
    }
    f << "]\n";
  }
  if (mismatch) {
    std::fprintf(stderr, "hhg bench: some methods disagreed or failed (see the notes)\n");
    return exit_failure;
  }
  return exit_ok;
}

}  // namespace hhg::cli
