// bench/harness/bench.cpp: `hhg bench` (and `hhg_bench`, the same with the
// peers compiled in), the thesis' experiments (chapter 4) run by every method
// on the same boxes and the same motion, side by side.
//
// Each (scenario, N, method) runs in its own child process (fork), so no
// method inherits another's heap; the child reports one line through a pipe.
// A step = the scenario moves every object (not timed), update phase (move()
// for every object, then update(); timed), detection (find_pairs into a
// reused vector; timed). Medians and maxima over the steps after 2 warm-up
// steps. Pairs per step must agree across methods: a mismatch is reported and
// gives exit status 1. See docs/benchmarks/README.md.
#include <poll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <csignal>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "../../apps/hhg/commands.hpp"
#include "../../apps/hhg/input.hpp"
#include "../../apps/hhg/methods.hpp"
#include "../../apps/hhg/options.hpp"
#include "../../apps/hhg/parse.hpp"
#include "../../apps/hhg/peak_memory.hpp"
#include "batch.hpp"
#include "hhg/scenes.hpp"
#include "peers.hpp"

namespace hhg::cli {

namespace {

using clock_type = std::chrono::steady_clock;

struct result {
  std::string scenario, method;
  std::size_t n = 0, steps = 0;
  double setup_ms = 0, update_med = 0, update_max = 0, detect_med = 0, detect_max = 0, step_med = 0, step_mean = 0;
  double pairs_med = 0;
  std::size_t bytes = 0;
  long peak_rss_kb = 0;
  // rise of the peak RSS over the RSS before the method was created (the
  // scene already generated): the method's peak memory (apps/hhg/peak_memory.hpp)
  long long peak_bytes = 0;
  long long caller_bytes = 0;  // of that, the harness' handles and pairs output (caller_bytes in peak_memory.hpp)
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

using hhg::bench::move_boxes;

/// --interleave, the child's side: the methods of one scenario and N run at
/// once, each in its own process (run_group), and each waits here for its turn
/// before every timed part (its setup; each step, the scene's motion
/// included), so that one runs at a time and every method's steps see the
/// same phases of a host whose speed drifts. A turn ends at the next wait, or
/// when the child's result line comes (it has freed its memory then: the pipe
/// closes at exit). Inactive (-1) otherwise.
struct turn_gate {
  int ask = -1;  // child -> parent: 'w' (waiting for a turn), then the result line
  int go = -1;   // parent -> child: 'g' (the turn)
  void wait() const {
    if (ask < 0) return;
    char c = 'w';
    if (write(ask, &c, 1) != 1 || read(go, &c, 1) != 1) _exit(1);  // (the parent is gone)
  }
};
turn_gate gate;

/// Memory and counters at the end of a run.
template <class M>
void finish(const M& m, const peak_meter& memory, std::size_t handles, std::size_t most_pairs, result& res) {
  res.bytes = m.bytes();
  res.peak_bytes = memory.rise();
  res.caller_bytes = caller_bytes(handles, most_pairs);
  res.peak_rss_kb = static_cast<long>(peak_meter::peak_rss() / 1024);
  if constexpr (requires { m.stats().box_tests; }) {
    const auto counters = m.stats();
    res.box_tests = static_cast<long long>(counters.box_tests);
    res.cells_visited = static_cast<long long>(counters.cells_visited);
  } else {
    if constexpr (requires { m.box_tests(); }) res.box_tests = static_cast<long long>(m.box_tests());
    if constexpr (requires { m.cells_visited(); }) res.cells_visited = static_cast<long long>(m.cells_visited());
  }
}

// Runs one method on one scenario (in the child process).
// `scenario` is a name of scenes::named_scenarios().
template <class M>
result measure(M m, const std::string& scenario, std::size_t n, std::size_t steps, std::uint64_t seed) {
  using B = typename M::box_type;
  scenes::thesis_scenario<3, double> scene(scenes::named_scenario_params(scenario, n, seed));
  // mixed: a few huge static objects (1000x the size) among the moving ones
  const std::vector<B> huge =
      scenes::find_named_scenario(scenario).huge_statics ? scenes::huge_static_boxes(scene, seed) : std::vector<B>{};
  result res;
  res.scenario = scenario;
  res.n = n;
  res.steps = steps;
  warm_memory(n * kWarmBytesPerObject);  // (a VM's host faults out of the setup: peak_memory.hpp)
  // (and the input's translations back)
  touch_pages(scene.boxes().data(), scene.boxes().size() * sizeof(scene.boxes()[0]));
  gate.wait();
  peak_meter memory;
  memory.start();
  const auto t0 = clock_type::now();
  const std::vector<handle> hs = insert_all<M>(m, scene.boxes());
  for (const auto& b : huge) m.insert(b);
  std::vector<handle_pair> pairs;
  m.find_pairs(pairs);
  res.setup_ms = ms(t0, clock_type::now());
  std::size_t most_pairs = pairs.size();
  std::vector<double> up, det, st, pc;
  for (std::size_t s = 1; s <= steps; ++s) {
    gate.wait();
    scene.step();
    const auto a = clock_type::now();
    move_boxes(m, hs, scene.boxes());  // (the batch form where there is one)
    m.update();
    const auto b = clock_type::now();
    m.find_pairs(pairs);
    const auto c = clock_type::now();
    most_pairs = std::max(most_pairs, pairs.size());
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
  finish(m, memory, hs.capacity(), most_pairs, res);
  return res;
}

/// The one-shot pairs of the boxes of a file (build + detection, setup_ms),
/// then, with steps > 0, `steps` steps of random motion: each box moves in
/// its own random direction at a speed uniform in [0, motion * its longest
/// edge] per step (deterministic in seed; no wrapping). Only the first
/// `moving_axes` axes move (2 for 2D boxes lifted to 3D for a peer: the same
/// motion, drawn in the same order, as the 2D methods see).
template <class M>
result measure_boxes(M m, const std::vector<typename M::box_type>& start, std::size_t steps, double motion,
                     std::uint64_t seed, int moving_axes = M::dimension) {
  using B = typename M::box_type;
  constexpr int D = M::dimension;
  result res;
  res.n = start.size();
  res.steps = steps;
  warm_memory(start.size() * kWarmBytesPerObject);  // (as in measure)
  gate.wait();
  peak_meter memory;
  memory.start();
  std::vector<B> boxes = start;
  const auto t0 = clock_type::now();
  const std::vector<handle> hs = insert_all<M>(m, boxes);
  std::vector<handle_pair> pairs;
  m.find_pairs(pairs);
  res.setup_ms = ms(t0, clock_type::now());
  res.pair_counts = std::to_string(pairs.size());
  res.pairs_med = static_cast<double>(pairs.size());
  std::size_t most_pairs = pairs.size();
  std::vector<double> velocity;
  if (steps > 0) {
    scenes::rng r(seed);
    velocity.resize(boxes.size() * D);
    for (std::size_t i = 0; i < boxes.size(); ++i) {
      double longest = 0, norm = 0;
      std::array<double, D> dir{};
      for (int k = 0; k < D; ++k) longest = std::max(longest, boxes[i].max[k] - boxes[i].min[k]);
      if (!std::isfinite(longest)) longest = 0;  // unbounded boxes stay
      while (!(norm > 1e-6 && norm <= 1)) {
        norm = 0;
        for (int k = 0; k < moving_axes; ++k) {
          dir[k] = r.uniform(-1, 1);
          norm += dir[k] * dir[k];
        }
      }
      const double speed = r.uniform() * motion * longest / std::sqrt(norm);
      for (int k = 0; k < D; ++k) velocity[i * D + k] = dir[k] * speed;
    }
  }
  std::vector<double> up, det, st, pc;
  for (std::size_t s = 1; s <= steps; ++s) {
    gate.wait();
    for (std::size_t i = 0; i < boxes.size(); ++i)
      for (int k = 0; k < D; ++k) {
        const double v = velocity[i * D + k];
        if (v == 0) continue;
        boxes[i].min[k] = start[i].min[k] + static_cast<double>(s) * v;
        boxes[i].max[k] = start[i].max[k] + static_cast<double>(s) * v;
      }
    const auto a = clock_type::now();
    move_boxes(m, hs, boxes);
    m.update();
    const auto b = clock_type::now();
    m.find_pairs(pairs);
    const auto c = clock_type::now();
    most_pairs = std::max(most_pairs, pairs.size());
    res.pair_counts += ',' + std::to_string(pairs.size());
    if (s > 2 || steps <= 2) {
      up.push_back(ms(a, b));
      det.push_back(ms(b, c));
      st.push_back(ms(a, c));
      pc.push_back(static_cast<double>(pairs.size()));
    }
  }
  if (!st.empty()) {
    res.update_med = median(up);
    res.update_max = *std::max_element(up.begin(), up.end());
    res.detect_med = median(det);
    res.detect_max = *std::max_element(det.begin(), det.end());
    res.step_med = median(st);
    for (const double x : st) res.step_mean += x / static_cast<double>(st.size());
    res.pairs_med = median(pc);
  }
  finish(m, memory, hs.capacity(), most_pairs, res);
  return res;
}

std::string encode(const result& r) {
  std::ostringstream s;
  s.precision(9);
  s << r.setup_ms << ' ' << r.update_med << ' ' << r.update_max << ' ' << r.detect_med << ' ' << r.detect_max << ' '
    << r.step_med << ' ' << r.step_mean << ' ' << r.pairs_med << ' ' << r.bytes << ' ' << r.peak_rss_kb << ' '
    << r.peak_bytes << ' ' << r.caller_bytes << ' ' << r.box_tests << ' ' << r.cells_visited << ' ' << r.pair_counts;
  return s.str();
}

bool decode(const std::string& line, result& r) {
  std::istringstream s(line);
  return static_cast<bool>(s >> r.setup_ms >> r.update_med >> r.update_max >> r.detect_med >> r.detect_max >>
                           r.step_med >> r.step_mean >> r.pairs_med >> r.bytes >> r.peak_rss_kb >> r.peak_bytes >>
                           r.caller_bytes >> r.box_tests >> r.cells_visited >> r.pair_counts);
}

// The `factor` experiment: hhg with these hierarchy factors.
constexpr std::pair<const char*, double> factor_variants[] = {
    {"hhg-f1.5", 1.5}, {"hhg-f2", 2.0}, {"hhg-f3", 3.0}, {"hhg-f4", 4.0}};

// Runs `method` (with its variant) in the child: dispatch by name.
result run_child(const std::string& method, const std::string& scenario, std::size_t n, std::size_t steps,
                 std::uint64_t seed, unsigned threads) {
  const std::unique_ptr<thread_pool> pool = make_executor(threads);
  // the hash grid variants run on `threads` workers (set_executor)
  auto grid = [&](const config& c) {
    hash_grids<3, double> g(c);
    g.set_executor(pool.get());
    return g;
  };
#ifdef HHG_HAVE_BULLET
  if (method.rfind("bullet-", 0) == 0) return measure(peers::bullet(method), scenario, n, steps, seed);
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
    return measure(grid(c), scenario, n, steps, seed);
  }
  if (method == "hhg-every-axis") {
    config c;
    c.growth = growth_rule::every_axis;
    return measure(grid(c), scenario, n, steps, seed);
  }
  for (const auto& [name, factor] : factor_variants) {
    if (method != name) continue;
    config c;
    c.hierarchy_factor = factor;
    c.adaptive_factor = false;  // Fig. 23-24: the factor itself
    return measure(grid(c), scenario, n, steps, seed);
  }
  if (method == "hhg") return measure(grid(config{}), scenario, n, steps, seed);
  return with_method<3>(method, [&](auto id) {  // throws hhg::error for an unknown name
    using M = typename decltype(id)::type;
    return measure(M(), scenario, n, steps, seed);
  });
}

/// Runs `method` on the boxes of a file (in the child): hhg and its variants
/// and the registry's methods in D, the peers (3D) on the boxes lifted to 3D
/// (a 2D box gets the extent [0, 0] in z: the same pairs).
template <int D>
result run_boxes_child(const std::string& method, const std::vector<box<D, double>>& boxes, std::size_t steps,
                       double motion, std::uint64_t seed, unsigned threads) {
  const std::unique_ptr<thread_pool> pool = make_executor(threads);
  auto grid = [&](const config& c) {
    hash_grids<D, double> g(c);
    g.set_executor(pool.get());
    return g;
  };
  // make: a factory (the peers cannot be moved: created in place)
  auto peer = [&](auto make) {
    if constexpr (D == 3) {
      return measure_boxes(make(), boxes, steps, motion, seed);
    } else {
      std::vector<box<3, double>> lifted(boxes.size());
      for (std::size_t i = 0; i < boxes.size(); ++i)
        lifted[i] = {{boxes[i].min[0], boxes[i].min[1], 0}, {boxes[i].max[0], boxes[i].max[1], 0}};
      return measure_boxes(make(), lifted, steps, motion, seed, D);
    }
  };
  (void)peer;
#ifdef HHG_HAVE_BULLET
  if (method.rfind("bullet-", 0) == 0) return peer([&] { return peers::bullet(method); });
#endif
#ifdef HHG_HAVE_FCL
  if (method.rfind("fcl-", 0) == 0) return peer([&] { return peers::fcl_manager(method); });
#endif
#ifdef HHG_HAVE_CGAL
  if (method == "cgal") return peer([] { return peers::cgal(); });
#endif
  if (method == "hhg-rebuild") {
    config c;
    c.strategy = update_strategy::rebuild;
    return measure_boxes(grid(c), boxes, steps, motion, seed);
  }
  if (method == "hhg-every-axis") {
    config c;
    c.growth = growth_rule::every_axis;
    return measure_boxes(grid(c), boxes, steps, motion, seed);
  }
  if (method == "hhg") return measure_boxes(grid(config{}), boxes, steps, motion, seed);
  return all_methods::with<D, double>(method, [&](auto id) {
    using M = typename decltype(id)::type;
    return measure_boxes(M(), boxes, steps, motion, seed);
  });
}

/// A run in a child process (fork), so that no run inherits another's heap:
/// the child reports its result as one line through a pipe.
struct child {
  pid_t pid = -1;
  int out = -1;  // the child's output (with turns: a 'w' a turn, then the line)
  int go = -1;   // with turns: the parent's 'g'
  std::string text;
};

/// Starts `body` in a child that gets `timeout_s` seconds (killed then, and
/// reported as timed out); with `turns`, the child waits for a turn before each
/// timed part (turn_gate). `others`: the children started before, whose ends
/// of the pipes the new one closes.
std::optional<child> spawn(const std::function<result()>& body, unsigned timeout_s, bool turns,
                           const std::vector<child>& others, std::string& error) {
  int out[2] = {-1, -1}, go[2] = {-1, -1};
  const auto fail = [&](const char* why) {  // (no descriptor left open)
    for (const int fd : {out[0], out[1], go[0], go[1]})
      if (fd >= 0) close(fd);
    error = why;
    return std::nullopt;
  };
  if (pipe(out) != 0 || (turns && pipe(go) != 0)) return fail("pipe failed");
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) return fail("fork failed");
  if (pid == 0) {
    for (const child& o : others) {
      close(o.out);
      if (o.go >= 0) close(o.go);
    }
    close(out[0]);
    if (turns) {
      close(go[1]);
      gate = {out[1], go[0]};
    }
    alarm(timeout_s);  // a run that takes longer is killed and reported as timed out
    int code = 0;
    std::string line;
    try {
      line = encode(body()) + "\n";
    } catch (const std::exception& e) {
      line = std::string("error ") + e.what() + "\n";
      code = 1;
    }
    const char* p = line.data();
    std::size_t left = line.size();
    while (left > 0) {
      const ssize_t w = write(out[1], p, left);
      if (w <= 0) break;
      p += w;
      left -= static_cast<std::size_t>(w);
    }
    close(out[1]);
    _exit(code);
  }
  close(out[1]);
  if (turns) close(go[0]);
  return child{pid, out[0], turns ? go[1] : -1, {}};
}

/// Reads the rest of the child's line, waits for its end and decodes it.
std::optional<result> reap(child& c, unsigned timeout_s, std::string& error) {
  char buf[4096];
  for (;;) {
    const ssize_t r = read(c.out, buf, sizeof buf);
    if (r <= 0) break;
    c.text.append(buf, static_cast<std::size_t>(r));
  }
  close(c.out);
  if (c.go >= 0) close(c.go);
  int status = 0;
  waitpid(c.pid, &status, 0);
  result res;
  if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM) {
    error = "timed out after " + std::to_string(timeout_s) + " s";
    return std::nullopt;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !decode(c.text, res)) {
    error = c.text.empty() ? "the run crashed" : c.text.substr(0, c.text.find('\n'));
    return std::nullopt;
  }
  return res;
}

/// Runs `body` in a child process and waits for its result.
std::optional<result> run_isolated(const std::function<result()>& body, unsigned timeout_s, std::string& error) {
  std::optional<child> c = spawn(body, timeout_s, false, {}, error);
  if (!c) return std::nullopt;
  return reap(*c, timeout_s, error);
}

/// --interleave: the bodies at once, one child each, taking turns (turn_gate):
/// every child's setup, then every child's first step, and so on, the first
/// of each round of turns rotating (child t % n at turn t) and every other
/// round backward, so that no method always follows the same one. A child's `timeout_s` counts the time of its
/// own turns (and of making its scene, which the children do at once, before
/// the first turn); past it, the child is killed and reported as timed out.
/// `turns` counts the turns given. A child that ends (its line, a crash, its
/// time) leaves the rotation; the others go on.
std::vector<std::optional<result>> run_group(const std::vector<std::function<result()>>& bodies, unsigned timeout_s,
                                             std::vector<std::string>& errors, std::size_t& turns) {
  const std::size_t g = bodies.size();
  std::vector<std::optional<result>> results(g);
  errors.assign(g, {});
  // a write to a child that died waiting fails with EPIPE instead of killing the harness
  struct sigaction ignore = {}, old = {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, &old);
  // the children's own alarm: a backstop for a harness that stops giving turns
  const auto backstop = static_cast<unsigned>(std::min<std::size_t>(std::size_t{timeout_s} * (g + 1), 86400u * 30));
  std::vector<child> kids;
  std::vector<std::size_t> body_of;
  for (std::size_t i = 0; i < g; ++i)
    if (std::optional<child> c = spawn(bodies[i], backstop, true, kids, errors[i])) {
      kids.push_back(std::move(*c));
      body_of.push_back(i);
    }
  std::vector<double> left(kids.size(), 1000.0 * timeout_s);  // ms of turns each child has left
  std::vector<char> live(kids.size(), 1);
  // Child k's answer to a turn, within its time left: 'w' (waiting for the
  // next) keeps it in the rotation; else it has ended: the first byte of its
  // line, nothing (it died), or its time ran out (killed here).
  auto answer = [&](std::size_t k) {
    child& c = kids[k];
    const auto t0 = clock_type::now();
    pollfd p{c.out, POLLIN, 0};
    int ready;
    do {
      ready = poll(&p, 1, static_cast<int>(std::max(left[k], 0.0)) + 1);
    } while (ready < 0 && errno == EINTR);
    left[k] -= ms(t0, clock_type::now());
    char b = 0;
    if (ready == 0 || left[k] < 0) {
      kill(c.pid, SIGKILL);
      c.text.clear();
      reap(c, timeout_s, errors[body_of[k]]);
      errors[body_of[k]] = "timed out after " + std::to_string(timeout_s) + " s";
    } else if (read(c.out, &b, 1) == 1 && b == 'w') {
      return;
    } else {
      if (b != 0) c.text.push_back(b);
      results[body_of[k]] = reap(c, timeout_s, errors[body_of[k]]);
    }
    live[k] = 0;
  };
  for (std::size_t k = 0; k < kids.size(); ++k) answer(k);  // each ready: its scene made (untimed, all at once)
  const std::size_t nk = kids.size();
  for (std::size_t t = 0; std::find(live.begin(), live.end(), 1) != live.end(); ++t)
    for (std::size_t j = 0; j < nk; ++j) {
      const std::size_t k = t % 2 == 0 ? (t + j) % nk : (t + nk - j) % nk;
      if (!live[k]) continue;
      const char go = 'g';
      if (write(kids[k].go, &go, 1) == 1) ++turns;
      answer(k);  // (a child that died waiting: its end)
    }
  sigaction(SIGPIPE, &old, nullptr);
  return results;
}

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown";
}

// An experiment of --scenario: a named scenario run by the chosen methods, or
// `factor` / `update`, which expand into hhg variants on named scenarios.
struct job {
  std::string label;     // the scenario column of the results
  std::string scenario;  // a name of scenes::named_scenarios()
  std::vector<std::string> methods;
};

bool has(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

std::vector<std::string> experiment_names() {
  std::vector<std::string> v = scenes::named_scenario_names();
  v.erase(std::remove(v.begin(), v.end(), "jumping"), v.end());  // part of `update`
  v.push_back("factor");
  v.push_back("update");
  return v;
}

/// Every method this build can run, in table order: the registry (with the hhg
/// variants after hhg; `grid`, the strong uniform-grid baseline, is one of
/// them), then the peers compiled in.
std::vector<std::string> offered_methods() {
  std::vector<std::string> v = method_names();
  v.insert(v.begin() + 1, {"hhg-rebuild", "hhg-every-axis"});
  for (const auto& p : peers::available()) v.push_back(p);
  return v;
}

/// A reason to skip `method` at this size, or "" to run it.
std::string skip_reason(const std::string& m, const std::string& scenario, std::size_t n) {
  if ((m == "fcl-sap" || m == "fcl-shash") && n > 20000)
    return "skipped: above 20000 objects (15 us per object per step already at 3000)";
  if (m == "brute" && n > 20000) return "skipped: O(N^2) above 20000 objects";
  if ((m == "uniform" || m == "multilevel" || m == "hierarchical" || m == "grid") && scenario == "mixed" && n > 20000)
    return "skipped: huge objects cover too many cells above 20000 objects";
  if (scenario == "terdiman" && n > 200000)
    return "skipped: Terdiman's data is for 10^4 and 10^5 boxes (in the fixed cube the pairs grow as N^2)";
  return {};
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string pad(std::string s, std::size_t width, bool left) {
  if (s.size() >= width) return s;
  return left ? s + std::string(width - s.size(), ' ') : std::string(width - s.size(), ' ') + s;
}

}  // namespace

CLI::App* add_bench_command(CLI::App& app, bench_options& o) {
  CLI::App* sub = app.add_subcommand("bench", "Run the thesis' experiments with every method, side by side");
  std::string scenario_help = "Comma-separated experiments:";
  for (const scenes::named_scenario& sc : scenes::named_scenarios())
    if (sc.name != "jumping") scenario_help += " " + std::string(sc.name) + " (" + std::string(sc.description) + "),";
  scenario_help +=
      " factor (hhg with hierarchy factors 1.5, 2, 3, 4 on varied sizes), update (hhg and hhg-rebuild on equal "
      "and on jumping motion) (default: all)";
  sub->add_option("--scenario", o.scenarios, scenario_help)->delimiter(',')->check(CLI::IsMember(experiment_names()));
  std::string method_list;
  for (const auto& m : offered_methods()) method_list += (method_list.empty() ? "" : ", ") + m;
  sub->add_option("--methods", o.methods, "Comma-separated methods (default: all): " + method_list)
      ->delimiter(',')
      ->check(CLI::IsMember(offered_methods()));
  sub->add_option("--n", o.ns, "Comma-separated object counts, 1 to 100000000 (default: 1000,10000,100000)")
      ->delimiter(',')
      ->check(integer_in(1, 100000000));
  sub->add_option("--steps", o.steps, "Time steps per run, 1 to 100000 (default 10, 5 with --quick)")
      ->check(integer_in(1, 100000));
  sub->add_option("--seed", o.seed, "Seed of the scenarios (0 to 2^64-1)")
      ->check(integer_in(0, std::numeric_limits<std::uint64_t>::max()));
  sub->add_option("--json", o.json, "Write the results as JSON to this file (opened before the runs)");
  sub->add_option("--csv", o.csv, "Write the results as CSV to this file (opened before the runs)");
  sub->add_flag("--skip-header", o.skip_header, "No header line in the --csv file");
  sub->add_flag(
      "--quick", o.quick,
      "A small run (a few seconds): equal, varied, sparse, mixed, update at N = 2000, 5 steps; the one CI runs");
  sub->add_option("--timeout", o.timeout, "Seconds a single run may take before it is skipped as too slow")
      ->check(integer_in(1, 86400));
  sub->add_option("--boxes", o.boxes,
                  "Time the one-shot pairs (build + detection) of the boxes of this file (the input of 'hhg pairs') "
                  "with every method instead of the scenarios; with --steps K, then K steps of random motion");
  sub->add_option("--motion", o.motion,
                  "With --boxes --steps: each box moves in its own random direction at up to this fraction of its "
                  "longest edge per step, 0 to 1000 (default 0.2)")
      ->check(number_in(0, 1000));  // (the tool's number rule: CLI::Range took hex, 1e-400 and " 0.5")
  sub->add_option("--rounds", o.rounds,
                  "Run the methods of each scenario and N this many times, alternately (forward, then backward), "
                  "and report each method's median round: on a host whose speed drifts, the ratios then compare "
                  "the same phases (default 1)")
      ->check(integer_in(1, 1000));
  sub->add_flag("--interleave", o.interleave,
                "Run the methods of each scenario and N at once, each in its own process, taking turns: every "
                "method's setup, then every method's first step, and so on, so that all of them see the same phases "
                "of a host whose speed drifts");
  add_threads_option(sub, o.threads);
  return sub;
}

namespace {

/// A box file read for --boxes, in its dimension.
struct box_file {
  std::string path;
  int dim = 3;
  std::vector<box<2, double>> boxes2;
  std::vector<box<3, double>> boxes3;
  std::size_t size() const { return dim == 2 ? boxes2.size() : boxes3.size(); }
};

box_file read_box_file(const std::string& path) {
  line_reader in(path);
  box_file f;
  f.path = path;
  f.dim = read_dimension(in, 0);
  if (f.dim == 2)
    f.boxes2 = read_boxes<2>(in);
  else
    f.boxes3 = read_boxes<3>(in);
  if (f.size() == 0) throw input_error("the --boxes file '" + path + "' holds no box");
  return f;
}

bool ran(const result& r) { return r.note.empty() || r.note.rfind("PAIRS DIFFER", 0) == 0; }

double per_object(double v, std::size_t n) { return n ? v / static_cast<double>(n) : 0.0; }

/// The columns of the --csv and --json results, in order: the one list both
/// writers read (README "hhg bench" describes them). A value is null (JSON) or
/// empty (CSV) for a run that did not run, and for a counter the method does
/// not keep. The scenario-level keys (scenario, n, steps, seed) come first in
/// the CSV and on the run object in the JSON.
struct column {
  const char* name;
  std::function<nlohmann::ordered_json(const result&)> value;
};

const std::vector<column>& result_columns() {
  using J = nlohmann::ordered_json;
  auto time = [](double result::*f) {
    return [f](const result& r) { return ran(r) ? J(json_number(r.*f)) : J(nullptr); };
  };
  auto counter = [](long long result::*f) {
    return [f](const result& r) { return ran(r) && r.*f >= 0 ? J(r.*f) : J(nullptr); };
  };
  static const std::vector<column> columns = {
      {"method", [](const result& r) { return J(r.method); }},
      {"setup_ms", time(&result::setup_ms)},
      {"step_ms_median", time(&result::step_med)},
      {"step_ms_mean", time(&result::step_mean)},
      {"update_ms_median", time(&result::update_med)},
      {"detect_ms_median", time(&result::detect_med)},
      {"pairs", time(&result::pairs_med)},
      {"peak_bytes", counter(&result::peak_bytes)},
      {"update_ms_max", time(&result::update_max)},
      {"detect_ms_max", time(&result::detect_max)},
      {"bytes", [](const result& r) { return ran(r) ? J(r.bytes) : J(nullptr); }},
      {"peak_rss_kb", [](const result& r) { return ran(r) ? J(r.peak_rss_kb) : J(nullptr); }},
      {"box_tests", counter(&result::box_tests)},
      {"cells_visited", counter(&result::cells_visited)},
      {"step_ns_per_object",
       [](const result& r) { return ran(r) ? J(json_number(per_object(r.step_med * 1e6, r.n))) : J(nullptr); }},
      {"bytes_per_object",  // steady: bytes() / N, null where the method does not know (0)
       [](const result& r) {
         return ran(r) && r.bytes > 0 ? J(json_number(per_object(static_cast<double>(r.bytes), r.n))) : J(nullptr);
       }},
      {"peak_bytes_per_object",
       [](const result& r) {
         return ran(r) ? J(json_number(per_object(static_cast<double>(r.peak_bytes), r.n))) : J(nullptr);
       }},
      {"caller_bytes", counter(&result::caller_bytes)},
      {"own_peak_bytes_per_object",  // the peak without the harness' handles and pairs
       [](const result& r) {
         return ran(r) ? J(json_number(per_object(static_cast<double>(own_peak(r.peak_bytes, r.caller_bytes)), r.n)))
                       : J(nullptr);
       }},
      {"note", [](const result& r) { return J(r.note); }},
  };
  return columns;
}

std::string csv_value(const nlohmann::ordered_json& v) {
  if (v.is_null()) return {};
  if (v.is_string()) return csv_field(v.get<std::string>());
  return v.dump();
}

}  // namespace

int bench_command(const bench_options& o) {
  const std::vector<std::string> offered = offered_methods();
  const bool file_mode = !o.boxes.empty();
  if (std::isnan(o.motion)) throw usage_error("bench: --motion must be a number in [0, 1000]");
  if (!file_mode && o.motion >= 0) throw usage_error("bench: --motion applies to --boxes only");
  if (file_mode && (!o.scenarios.empty() || !o.ns.empty() || o.quick))
    throw usage_error("bench: --boxes times the boxes of a file: --scenario, --n and --quick do not apply");
  std::vector<std::string> scenarios = o.scenarios.empty() ? experiment_names() : o.scenarios;
  const std::vector<std::string> methods = o.methods.empty() ? offered : o.methods;
  for (const auto& s : scenarios)  // CLI11 checks these too; the harness may be called from elsewhere
    if (!has(experiment_names(), s)) throw usage_error("bench: unknown scenario '" + s + "'");
  for (const auto& m : methods)
    if (!has(offered, m)) throw usage_error("bench: unknown method '" + m + "'");
  if (o.motion >= 0 && !(o.motion <= 1000)) throw usage_error("bench: --motion must be in [0, 1000]");
  std::vector<std::size_t> ns(o.ns.begin(), o.ns.end());
  std::size_t steps = o.steps;
  if (o.quick) {
    if (o.scenarios.empty()) scenarios = {"equal", "varied", "sparse", "mixed", "update"};
    if (ns.empty()) ns = {2000};
    if (steps == 0) steps = 5;
  }
  if (ns.empty()) ns = {1000, 10000, 100000};
  if (steps == 0 && !file_mode) steps = 10;  // --boxes: one-shot only unless --steps
  const double motion = o.motion >= 0 ? o.motion : 0.2;

  std::vector<job> jobs;
  box_file file;
  if (file_mode) {
    file = read_box_file(o.boxes);  // a bad file fails now: "hhg: line N: ..." and status 2
    const std::size_t slash = o.boxes.find_last_of('/');
    jobs.push_back({"file:" + (slash == std::string::npos ? o.boxes : o.boxes.substr(slash + 1)), "", methods});
    ns = {file.size()};
  } else {
    for (const auto& s : scenarios) {
      if (s == "factor") {
        std::vector<std::string> v;
        if (has(methods, "hhg"))
          for (const auto& [name, factor] : factor_variants) v.emplace_back(name);
        jobs.push_back({"factor", "varied", v});
      } else if (s == "update") {
        std::vector<std::string> v;
        for (const char* m : {"hhg", "hhg-rebuild"})
          if (has(methods, m)) v.emplace_back(m);
        jobs.push_back({"update", "equal", v});
        jobs.push_back({"update-jump", "jumping", v});
      } else {
        jobs.push_back({s, s, methods});
      }
    }
  }
  // A scenario that none of the chosen methods runs is a usage error, not an empty table.
  for (const job& j : jobs)
    if (j.methods.empty())
      throw usage_error("bench: scenario '" + j.label + "' runs only " +
                        (j.label == "factor" ? std::string("hhg (as hhg-f1.5 ... hhg-f4)") : "hhg and hhg-rebuild") +
                        ", and --methods names neither");

  // Output files are opened before any run: a bad path fails now, not after an hour.
  output_file json_file, csv_file;
  if (!o.json.empty()) json_file = output_file(o.json, "bench", "--json");
  if (!o.csv.empty()) csv_file = output_file(o.csv, "bench", "--csv");

  std::vector<result> results;
  bool mismatch = false;
  std::size_t total = 0, done = 0;
  const std::size_t rounds = o.rounds;
  // a run's time: its median step (the one-shot time with --boxes and no --steps)
  const bool one_shot = steps == 0;
  auto key_time = [&](const result& r) { return one_shot ? r.setup_ms : r.step_med; };
  for (const auto& j : jobs) total += j.methods.size() * ns.size() * rounds;
  std::map<std::pair<std::string, std::size_t>, std::size_t> turns_of;  // --interleave: turns given per (scenario, n)
  for (const auto& j : jobs) {
    // a method that timed out at some size is not run at larger ones (it would only time out again)
    std::map<std::string, std::size_t> timed_out_at;
    for (std::size_t n : ns) {
      // Run m? Its row with the reason if not (r.note), else r with the names.
      auto prepare = [&](const std::string& m, std::size_t round, result& r) {
        ++done;
        r.method = m;
        r.scenario = j.label;
        r.n = n;
        r.steps = steps;
        const auto slow = timed_out_at.find(m);
        if (std::string why = skip_reason(m, j.scenario, n); !why.empty()) {  // (j.scenario is "" for --boxes)
          r.note = why;
          return false;
        }
        if (slow != timed_out_at.end() && slow->second < n) {
          r.note = "skipped: timed out after " + std::to_string(o.timeout) + " s at n=" + std::to_string(slow->second);
          return false;
        }
        const std::string of_rounds =
            rounds > 1 ? " (round " + std::to_string(round + 1) + "/" + std::to_string(rounds) + ")" : "";
        std::fprintf(stderr, "hhg bench: [%zu/%zu] %s n=%zu %s%s%s ...\n", done, total, j.label.c_str(), n, m.c_str(),
                     of_rounds.c_str(), o.interleave ? " (interleaved)" : "");
        return true;
      };
      auto body_of = [&](const std::string& m) -> std::function<result()> {
        return [&, m]() -> result {
          if (!file_mode) return run_child(m, j.scenario, n, steps, o.seed, o.threads);
          return file.dim == 2 ? run_boxes_child<2>(m, file.boxes2, steps, motion, o.seed, o.threads)
                               : run_boxes_child<3>(m, file.boxes3, steps, motion, o.seed, o.threads);
        };
      };
      // The row of a run that ended: its result, or why not.
      auto settle = [&](const std::string& m, std::optional<result> got, const std::string& error, result& r) {
        if (got) {
          const std::string label = r.scenario;
          r = *got;
          r.method = m;
          r.scenario = label;
          r.n = n;
          r.steps = steps;
        } else if (error.rfind("timed out", 0) == 0) {
          r.note = "skipped: " + error;  // too slow for this size: noted, not an error
          timed_out_at.emplace(m, n);
        } else {
          r.note = "failed: " + error;
          mismatch = true;
        }
      };
      // Rounds: forward, backward, forward, ... so that each method's runs
      // sit next to the others' in time. A method that did not run in a
      // round (skipped, timed out, failed) is not run again at this N. With
      // --interleave, a round's methods run at once, taking turns (run_group).
      const std::size_t nm = j.methods.size();
      std::vector<std::vector<result>> runs(nm);
      for (std::size_t round = 0; round < rounds; ++round) {
        std::vector<std::size_t> group;  // the methods of the round that run, in its order
        for (std::size_t k = 0; k < nm; ++k) {
          const std::size_t i = round % 2 == 0 ? k : nm - 1 - k;
          if (!runs[i].empty() && !ran(runs[i].back())) {
            done += 1;
            continue;
          }
          result r;
          if (prepare(j.methods[i], round, r)) group.push_back(i);
          runs[i].push_back(r);
        }
        if (o.interleave) {
          std::vector<std::function<result()>> bodies;
          for (const std::size_t i : group) bodies.push_back(body_of(j.methods[i]));
          std::vector<std::string> errors;
          const std::vector<std::optional<result>> got = run_group(bodies, o.timeout, errors, turns_of[{j.label, n}]);
          for (std::size_t k = 0; k < group.size(); ++k)
            settle(j.methods[group[k]], got[k], errors[k], runs[group[k]].back());
        } else {
          for (const std::size_t i : group) {
            std::string error;
            std::optional<result> got = run_isolated(body_of(j.methods[i]), o.timeout, error);
            settle(j.methods[i], std::move(got), error, runs[i].back());
          }
        }
      }
      // Each method's median round by key_time, whole: its setup, memory and
      // counts are that run's. Every round of every method must find the same
      // pairs as the first method's first round. A round that failed (not a
      // skip) is the method's row, as without rounds.
      std::string reference_counts, reference_method;
      for (std::size_t i = 0; i < nm; ++i) {
        const std::vector<result>& rs = runs[i];
        std::vector<const result*> by_time;
        for (const result& r : rs)
          if (ran(r)) by_time.push_back(&r);
        if (by_time.empty() || rs.back().note.rfind("failed", 0) == 0) {
          results.push_back(rs.back());
          continue;
        }
        std::string differ;
        for (const result* r : by_time) {
          if (reference_counts.empty()) {
            reference_counts = r->pair_counts;
            reference_method = j.methods[i];
          } else if (r->pair_counts != reference_counts && differ.empty()) {
            mismatch = true;
            differ = "PAIRS DIFFER from " + reference_method;
            std::fprintf(stderr, "hhg bench: MISMATCH: %s n=%zu: %s found pairs per step %s, %s found %s\n",
                         j.label.c_str(), n, j.methods[i].c_str(), r->pair_counts.c_str(), reference_method.c_str(),
                         reference_counts.c_str());
          }
        }
        std::sort(by_time.begin(), by_time.end(),
                  [&](const result* a, const result* b) { return key_time(*a) < key_time(*b); });
        result median_run = *by_time[(by_time.size() - 1) / 2];
        if (!differ.empty()) median_run.note = differ;
        results.push_back(median_run);
      }
    }
  }

  // The summary table. "x hhg" (step time over hhg's, same scenario and n; the
  // one-shot time with --boxes and no --steps) is shown only when an hhg row
  // ran; rows without an hhg reference show "-". "B/obj" is the steady memory
  // (bytes() / N, "-" where a method does not know: the peers), "peak B/obj"
  // the rise of the peak RSS over the run / N, "own peak" the same without
  // the harness' handles and pairs (the method's structure and transients).
  std::map<std::pair<std::string, std::size_t>, double> hhg_time;
  for (const auto& r : results)
    if (r.method == "hhg" && ran(r) && key_time(r) > 0) hhg_time[{r.scenario, r.n}] = key_time(r);
  const bool ratio_column = !hhg_time.empty();
  std::string t;
  t += pad("scenario", 12, true) + " " + pad("n", 9, false) + " " + pad("method", 15, true) + " " +
       pad(one_shot ? "one-shot ms" : "setup ms", 11, false) + " " + pad("update ms", 10, false) + " " +
       pad("detect ms", 10, false) + " " + pad("ns/obj/step", 11, false) + " ";
  if (ratio_column) t += pad("x hhg", 8, false) + " ";
  t += pad("pairs", 10, false) + " " + pad("B/obj", 8, false) + " " + pad("peak B/obj", 10, false) + " " +
       pad("own peak", 8, false) + "  note\n";
  for (const auto& r : results) {
    t += pad(r.scenario, 12, true) + " " + pad(std::to_string(r.n), 9, false) + " " + pad(r.method, 15, true) + " ";
    if (!ran(r)) {
      t += r.note + "\n";
      continue;
    }
    const double n = static_cast<double>(r.n);
    t += pad(fixed(r.setup_ms, 3), 11, false) + " ";
    if (one_shot) {
      t += pad("-", 10, false) + " " + pad("-", 10, false) + " " + pad("-", 11, false) + " ";
    } else {
      t += pad(fixed(r.update_med, 3), 10, false) + " " + pad(fixed(r.detect_med, 3), 10, false) + " " +
           pad(fixed(r.step_med * 1e6 / n, 1), 11, false) + " ";
    }
    if (ratio_column) {
      const auto it = hhg_time.find({r.scenario, r.n});
      t += pad(it != hhg_time.end() ? fixed(key_time(r) / it->second, 2) : "-", 8, false) + " ";
    }
    t += pad(fixed(r.pairs_med, 0), 10, false) + " ";
    // bytes(): 0 where a method does not know (the peers): no meaningless 0.0
    t += pad(r.bytes > 0 ? fixed(static_cast<double>(r.bytes) / n, 1) : "-", 8, false) + " " +
         pad(fixed(static_cast<double>(r.peak_bytes) / n, 1), 10, false) + " " +
         pad(fixed(static_cast<double>(own_peak(r.peak_bytes, r.caller_bytes)) / n, 1), 8, false) + "  " + r.note +
         "\n";
  }
  std::fwrite(t.data(), 1, t.size(), stdout);
  flush_stdout();

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
  // JSON and CSV carry the same columns (result_columns(); README, `hhg bench`).
  const std::vector<column>& columns = result_columns();
  if (csv_file) {
    std::string c;
    if (!o.skip_header) {
      c += "scenario,n,steps,seed";
      for (const column& col : columns) c += std::string(",") + col.name;
      c += '\n';
    }
    for (const auto& r : results) {
      c += csv_field(r.scenario) + ',' + std::to_string(r.n) + ',' + std::to_string(r.steps) + ',' +
           std::to_string(o.seed);
      for (const column& col : columns) c += ',' + csv_value(col.value(r));
      c += '\n';
    }
    if (std::fwrite(c.data(), 1, c.size(), csv_file.get()) != c.size())
      throw std::runtime_error("cannot write the --csv file '" + o.csv + "': " + std::strerror(errno));
    csv_file.close();
  }
  if (json_file) {
    // A list of runs, one per (scenario, n), each {"scenario", "n", "steps",
    // "seed", "machine", "results": [{"method", ...}]}; keys may be added, none renamed.
    nlohmann::ordered_json machine = {
        {"cpu", cpu}, {"cores", sysconf(_SC_NPROCESSORS_ONLN)}, {"compiler", compiler}, {"flags", flags}};
    nlohmann::ordered_json runs = nlohmann::ordered_json::array();
    for (std::size_t i = 0; i < results.size();) {
      std::size_t e = i;
      while (e < results.size() && results[e].scenario == results[i].scenario && results[e].n == results[i].n) ++e;
      nlohmann::ordered_json rows = nlohmann::ordered_json::array();
      for (std::size_t k = i; k < e; ++k) {
        const auto& r = results[k];
        std::vector<std::uint64_t> per_step;
        for (std::size_t p = 0, q = 0; p < r.pair_counts.size(); p = q + 1) {
          q = r.pair_counts.find(',', p);
          if (q == std::string::npos) q = r.pair_counts.size();
          per_step.push_back(std::stoull(r.pair_counts.substr(p, q - p)));
        }
        nlohmann::ordered_json row = nlohmann::ordered_json::object();
        for (const column& col : columns) {
          if (std::string(col.name) == "note") row["pairs_per_step"] = per_step;  // before the note, as before
          row[col.name] = col.value(r);
        }
        rows.push_back(row);
      }
      nlohmann::ordered_json run = {
          {"scenario", results[i].scenario},
          {"n", results[i].n},
          {"steps", steps},
          {"rounds", rounds},
          {"interleaved_turns", turns_of[{results[i].scenario, results[i].n}]},
          {"seed", o.seed},
          {"threads", o.threads ? o.threads : std::max(1u, std::thread::hardware_concurrency())},
          {"machine", machine},
          {"results", rows}};
      if (file_mode) {
        run["boxes_file"] = o.boxes;
        run["motion"] = motion;
      }
      runs.push_back(run);
      i = e;
    }
    write_json(json_file.get(), runs, "the --json file '" + o.json + "'");
    json_file.close();
  }
  if (mismatch) {
    std::fprintf(stderr, "hhg: bench: some methods disagreed or failed (see the notes)\n");
    return exit_failure;
  }
  return exit_ok;
}

}  // namespace hhg::cli
