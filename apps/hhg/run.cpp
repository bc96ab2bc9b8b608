// apps/hhg/run.cpp: `hhg run`, the thesis benchmark scenario, timed.
//
// One step = the scenario moves every object (not timed), the update phase (the
// batch move() of all objects, then update(); timed) and the detection (find_pairs into a
// reused vector; timed). Medians and maxima are taken over the steps after the
// first three (warm-up), or over all steps when there are at most three.
// With --check every step (and the state before the first step) is compared
// with hhg::brute_force holding the same boxes, pair for pair, and the
// structure's validate() is run: a difference ends the run with status 1.
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

#include "commands.hpp"
#include "hhg/brute_force.hpp"
#include "hhg/error.hpp"
#include "hhg/hash_grids.hpp"
#include "hhg/scenes.hpp"
#include "options.hpp"
#include "peak_memory.hpp"

namespace hhg::cli {

namespace {

using clock_type = std::chrono::steady_clock;

constexpr std::size_t warmup_steps = 3;

double ms_between(clock_type::time_point a, clock_type::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

/// Median of the values (the mean of the two middle ones for an even count); 0 when empty.
double median(std::vector<double> v) {
  if (v.empty()) return 0;
  const std::size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  const double upper = v[mid];
  if (v.size() % 2 == 1) return upper;
  const double lower = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lower + upper) / 2;
}

double maximum(const std::vector<double>& v) { return v.empty() ? 0 : *std::max_element(v.begin(), v.end()); }
double mean(const std::vector<double>& v) {
  double sum = 0;
  for (const double x : v) sum += x;
  return v.empty() ? 0 : sum / static_cast<double>(v.size());
}

/// Peak resident set size (VmHWM) in bytes, if /proc/self/status tells.
std::optional<std::uint64_t> peak_rss_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) != 0) continue;
    std::uint64_t kb = 0;
    if (std::sscanf(line.c_str() + 6, "%" SCNu64, &kb) == 1) return kb * 1024;
  }
  return std::nullopt;
}

std::string format(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

/// Pairs as keys (i << 32 | j, i < j) of object indices, sorted.
void to_sorted_keys(const std::vector<handle_pair>& pairs, const std::vector<std::uint32_t>& index_of,
                    std::vector<std::uint64_t>& keys) {
  keys.clear();
  for (const handle_pair& p : pairs) {
    std::uint64_t i = index_of[p.a.index];
    std::uint64_t j = index_of[p.b.index];
    if (j < i) std::swap(i, j);
    keys.push_back(i << 32 | j);
  }
  std::sort(keys.begin(), keys.end());
}

std::vector<std::uint32_t> index_table(const std::vector<handle>& handles) {
  std::uint32_t size = 0;
  for (const handle h : handles) size = std::max(size, h.index + 1);
  std::vector<std::uint32_t> index_of(size, 0);
  for (std::size_t i = 0; i < handles.size(); ++i) index_of[handles[i].index] = static_cast<std::uint32_t>(i);
  return index_of;
}

std::string describe_keys(const std::vector<std::uint64_t>& keys) {
  std::string s;
  const std::size_t shown = std::min<std::size_t>(keys.size(), 5);
  for (std::size_t k = 0; k < shown; ++k) {
    s += (k == 0 ? "" : ", ");
    s += "(" + std::to_string(keys[k] >> 32) + ", " + std::to_string(keys[k] & 0xffffffffu) + ")";
  }
  if (keys.size() > shown) s += ", ...";
  return s;
}

/// The brute-force oracle of --check, holding the same boxes as the grids.
template <int D, class T>
class oracle {
 public:
  oracle(const std::vector<box<D, T>>& boxes, const std::vector<handle>& grid_handles)
      : grid_index_of_(index_table(grid_handles)) {
    handles_.reserve(boxes.size());
    for (const auto& b : boxes) handles_.push_back(bf_.insert(b));
    index_of_ = index_table(handles_);
  }

  /// Moves the first boxes.size() objects (the static ones stay).
  void move_all(const std::vector<box<D, T>>& boxes) {
    for (std::size_t i = 0; i < boxes.size(); ++i) bf_.move(handles_[i], boxes[i]);
  }

  /// Empty when `found` (the grids' pairs) equals the brute-force pairs, else what differs.
  std::string compare(const std::vector<handle_pair>& found, const hash_grids<D, T>& grids) {
    bf_.find_pairs(expected_);
    to_sorted_keys(expected_, index_of_, want_);
    to_sorted_keys(found, grid_index_of_, got_);
    if (want_ != got_) {
      std::vector<std::uint64_t> missing, extra;
      std::set_difference(want_.begin(), want_.end(), got_.begin(), got_.end(), std::back_inserter(missing));
      std::set_difference(got_.begin(), got_.end(), want_.begin(), want_.end(), std::back_inserter(extra));
      std::string s = std::to_string(got_.size()) + " pairs found, brute force finds " + std::to_string(want_.size());
      if (!missing.empty()) s += "; missing " + std::to_string(missing.size()) + ": " + describe_keys(missing);
      if (!extra.empty()) s += "; not overlapping " + std::to_string(extra.size()) + ": " + describe_keys(extra);
      if (missing.empty() && extra.empty()) s += "; some pairs are reported more than once";
      return s;
    }
    try {
      grids.validate();
    } catch (const std::exception& e) {
      return std::string("validate(): ") + e.what();
    }
    return {};
  }

 private:
  brute_force<D, T> bf_;
  std::vector<handle> handles_;
  std::vector<std::uint32_t> index_of_;
  std::vector<std::uint32_t> grid_index_of_;
  std::vector<handle_pair> expected_;
  std::vector<std::uint64_t> want_, got_;
};

struct summary {
  std::size_t n = 0;
  std::size_t steps = 0;
  std::size_t measured = 0;
  double setup_ms = 0;
  double first_detect_ms = 0;  // the first find_pairs, after setup and before the steps
  double update_median = 0, update_max = 0;
  double detect_median = 0, detect_max = 0;
  double step_median = 0, step_max = 0, step_mean = 0;
  double pairs_median = 0;
  std::size_t bytes = 0;
  std::optional<std::uint64_t> peak_rss;
  long long peak_rise = 0;     // bytes: the rise of the peak RSS from before setup to the end (peak_memory.hpp)
  long long caller_bytes = 0;  // of that, the run's own vectors: handles and the largest pairs output
  statistics stats;
};

void print_summary(const run_options& o, const summary& s, const char* scalar, unsigned threads) {
  std::string t;
  auto row = [&t](const char* label, const std::string& value) {
    std::string l = std::string(label) + ":";
    l.resize(std::max<std::size_t>(l.size() + 1, 17), ' ');
    t += l + value + "\n";
  };
  row("scenario", o.scenario);
  row("dimension", std::to_string(o.dim));
  row("scalar", scalar);
  row("strategy", o.grid.strategy);
  row("growth", o.grid.growth);
  row("threads", std::to_string(threads));
  row("objects", std::to_string(s.n));
  row("steps", std::to_string(s.steps) + " (" + std::to_string(s.steps - s.measured) + " warm-up, " +
                   std::to_string(s.measured) + " measured)");
  row("seed", std::to_string(o.seed));
  row("setup", format("%.3f ms", s.setup_ms) + " (inserting all objects)");
  row("first detection", format("%.3f ms", s.first_detect_ms) +
                             (s.step_median > 0 ? format("; with the setup %.2f median steps",
                                                         (s.setup_ms + s.first_detect_ms) / s.step_median)
                                                : std::string()));
  row("update", format("median %.3f ms", s.update_median) + format(", max %.3f ms", s.update_max));
  row("detection", format("median %.3f ms", s.detect_median) + format(", max %.3f ms", s.detect_max));
  const double per = s.n ? 1e6 / static_cast<double>(s.n) : 0.0;
  row("step", format("median %.3f ms", s.step_median) + format(", %.1f ns per object", s.step_median * per) +
                  format("; mean %.3f ms", s.step_mean) + format(", %.1f ns per object", s.step_mean * per));
  row("pairs per step",
      format(s.pairs_median == std::floor(s.pairs_median) ? "median %.0f" : "median %.1f", s.pairs_median));
  row("box tests",
      std::to_string(s.stats.box_tests) + " in the last detection" +
          format(", %.1f per object", s.n ? static_cast<double>(s.stats.box_tests) / static_cast<double>(s.n) : 0.0));
  const double objects = s.n ? static_cast<double>(s.n) : 1.0;
  row("memory", format("steady %.1f bytes per object", static_cast<double>(s.bytes) / objects) +
                    format(", peak %.1f bytes per object", static_cast<double>(s.peak_rise) / objects) + " (" +
                    std::to_string(s.bytes) + " bytes held; peak RSS rise " + std::to_string(s.peak_rise) + " bytes)");
  row("own peak",
      format("%.1f bytes per object", static_cast<double>(own_peak(s.peak_rise, s.caller_bytes)) / objects) +
          " (the peak without the caller's handles and pairs," +
          format(" %.1f bytes per object)", static_cast<double>(s.caller_bytes) / objects));
  row("peak RSS", s.peak_rss ? std::to_string(*s.peak_rss) + " bytes" : std::string("unknown"));
  std::string grids = std::to_string(s.stats.grids.size());
  if (!s.stats.grids_active)
    grids += " (not active: " + std::to_string(s.stats.list_objects) + " objects in the all-pairs list)";
  if (s.stats.unbounded_objects) grids += ", " + std::to_string(s.stats.unbounded_objects) + " unbounded objects";
  row("grids", grids);
  if (!s.stats.grids.empty()) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "  %24s  %20s  %12s  %14s\n", "cell size", "cells per axis", "objects",
                  "occupied cells");
    t += buf;
    for (const grid_statistics& g : s.stats.grids) {
      std::string cells = std::to_string(g.cells_per_axis[0]) + " x " + std::to_string(g.cells_per_axis[1]);
      if (o.dim == 3) cells += " x " + std::to_string(g.cells_per_axis[2]);
      // the edge per axis when the cells are shorter on some axes (stats.hpp, cell_edges)
      const auto number = [](double v, int digits) {
        char nb[32];
        std::snprintf(nb, sizeof nb, "%.*g", digits, v);
        return std::string(nb);
      };
      std::string size = number(g.cell_size, 6);
      bool cube = true;
      for (int a = 0; a < o.dim; ++a) cube &= g.cell_edges[static_cast<std::size_t>(a)] == g.cell_size;
      if (!cube) {
        size.clear();
        for (int a = 0; a < o.dim; ++a) size += (a ? " x " : "") + number(g.cell_edges[static_cast<std::size_t>(a)], 4);
      }
      std::snprintf(buf, sizeof buf, "  %24s  %20s  %12zu  %14zu\n", size.c_str(), cells.c_str(), g.objects,
                    g.occupied_cells);
      t += buf;
    }
  }
  if (o.check) row("check", "passed: every step equals brute force");
  std::fwrite(t.data(), 1, t.size(), stdout);
  flush_stdout();
}

void write_summary_json(std::FILE* f, const run_options& o, const config& cfg, const summary& s, const char* scalar,
                        unsigned threads) {
  const double n = static_cast<double>(s.n);
  nlohmann::ordered_json j;
  j["scenario"] = o.scenario;
  j["n"] = s.n;
  j["steps"] = s.steps;
  j["dim"] = o.dim;
  j["scalar"] = scalar;
  j["strategy"] = o.grid.strategy;
  j["growth"] = o.grid.growth;
  j["threads"] = threads;
  j["seed"] = o.seed;
  j["warmup_steps"] = s.steps - s.measured;
  j["setup_ms"] = json_number(s.setup_ms);
  j["first_detect_ms"] = json_number(s.first_detect_ms);
  j["update_ms_median"] = json_number(s.update_median);
  j["update_ms_max"] = json_number(s.update_max);
  j["detect_ms_median"] = json_number(s.detect_median);
  j["detect_ms_max"] = json_number(s.detect_max);
  j["step_ms_median"] = json_number(s.step_median);
  j["step_ms_max"] = json_number(s.step_max);
  j["step_ns_per_object"] = json_number(s.n ? s.step_median * 1e6 / n : 0.0);
  j["step_ms_mean"] = json_number(s.step_mean);
  j["step_ns_per_object_mean"] = json_number(s.n ? s.step_mean * 1e6 / n : 0.0);
  j["pairs_median"] = json_number(s.pairs_median);
  j["box_tests"] = s.stats.box_tests;
  j["bytes"] = s.bytes;
  j["bytes_per_object"] = json_number(s.n ? static_cast<double>(s.bytes) / n : 0.0);
  j["peak_rss_bytes"] = s.peak_rss ? nlohmann::ordered_json(*s.peak_rss) : nlohmann::ordered_json(nullptr);
  j["peak_bytes"] = s.peak_rise;
  j["peak_bytes_per_object"] = json_number(s.n ? static_cast<double>(s.peak_rise) / n : 0.0);
  j["caller_bytes"] = s.caller_bytes;
  j["own_peak_bytes_per_object"] =
      json_number(s.n ? static_cast<double>(own_peak(s.peak_rise, s.caller_bytes)) / n : 0.0);
  j["check"] = o.check;
  j["config"] = {{"factor", json_number(cfg.hierarchy_factor)},
                 {"adaptive_factor", cfg.adaptive_factor},
                 {"density", cfg.minimal_grid_density},
                 {"threshold", cfg.activation_threshold},
                 {"cells", std::vector<std::uint32_t>(cfg.initial_cells.begin(), cfg.initial_cells.begin() + o.dim)},
                 {"cell_capacity", cfg.cell_capacity}};
  nlohmann::ordered_json grids = nlohmann::ordered_json::array();
  for (const grid_statistics& g : s.stats.grids) {
    std::vector<std::size_t> cells;
    for (int a = 0; a < o.dim; ++a) cells.push_back(g.cells_per_axis[static_cast<std::size_t>(a)]);
    std::vector<double> edges;
    for (int a = 0; a < o.dim; ++a) edges.push_back(g.cell_edges[static_cast<std::size_t>(a)]);
    grids.push_back({{"cell_size", json_number(g.cell_size)},
                     {"cell_edges", edges},
                     {"cells_per_axis", cells},
                     {"objects", g.objects},
                     {"occupied_cells", g.occupied_cells},
                     {"bytes", g.bytes}});
  }
  j["grids"] = grids;
  write_json(f, j, "the --json file");
}

/// Progress on standard error: one line each time another tenth of the steps is done.
void progress(const run_options& o, std::size_t done, clock_type::time_point start) {
  if (o.quiet) return;
  if (done * 10 / o.steps == (done - 1) * 10 / o.steps) return;
  std::fprintf(stderr, "hhg run: step %zu/%zu (%zu%%), %.1f s\n", done, o.steps, done * 100 / o.steps,
               ms_between(start, clock_type::now()) / 1000);
  std::fflush(stderr);
}

template <int D, class T>
int run_scenario(const run_options& o, const config& cfg, output_file& json) {
  const char* scalar = std::is_same_v<T, float> ? "float" : "double";
  scenes::thesis_scenario<D, T> scene(scenes::named_scenario_params(o.scenario, o.n, o.seed));
  const std::vector<box<D, T>>& boxes = scene.boxes();
  const std::size_t n = boxes.size();
  // `mixed`: huge static boxes, inserted after the moving ones and never moved
  const std::vector<box<D, T>> statics = scenes::find_named_scenario(o.scenario).huge_statics
                                             ? scenes::huge_static_boxes(scene, o.seed)
                                             : std::vector<box<D, T>>{};

  // (a VM's host faults out of the setup: peak_memory.hpp)
  warm_memory(n * kWarmBytesPerObject);
  touch_pages(boxes.data(), n * sizeof(box<D, T>));  // (its translations back: peak_memory.hpp)
  peak_meter memory;  // after the scene is generated: the structure's peak, setup and steps
  memory.start();
  hash_grids<D, T> grids(cfg);
  const std::unique_ptr<thread_pool> pool = make_executor(o.threads);
  grids.set_executor(pool.get());
  std::vector<handle> handles;      // (filled by the bulk insert below: no zeroed vector first)
  std::vector<handle> all_handles;  // moving then static, for --check
  const auto start = clock_type::now();
  handles = grids.insert(std::span<const box<D, T>>(boxes));  // in bulk: the grids laid out in one pass
  for (const box<D, T>& b : statics) all_handles.push_back(grids.insert(b));
  summary s;
  s.n = n + statics.size();
  s.steps = o.steps;
  s.setup_ms = ms_between(start, clock_type::now());

  // the first detection, into a new vector (what a one-shot caller pays)
  std::vector<handle_pair> pairs;
  const auto first = clock_type::now();
  grids.find_pairs(pairs);
  s.first_detect_ms = ms_between(first, clock_type::now());
  std::size_t most_pairs = pairs.size();  // the pages of the pairs output ever written
  std::unique_ptr<oracle<D, T>> check;
  if (o.check) {
    std::vector<box<D, T>> all = boxes;
    all.insert(all.end(), statics.begin(), statics.end());
    all_handles.insert(all_handles.begin(), handles.begin(), handles.end());
    check = std::make_unique<oracle<D, T>>(all, all_handles);
    if (std::string diff = check->compare(pairs, grids); !diff.empty()) {
      std::fprintf(stderr, "hhg: run: check failed before the first step: %s\n", diff.c_str());
      return exit_failure;
    }
  }

  std::vector<double> update_ms, detect_ms, step_ms, pair_counts;
  const auto run_start = clock_type::now();
  for (std::size_t step = 1; step <= o.steps; ++step) {
    scene.step();
    const auto t0 = clock_type::now();
    grids.move(std::span<const handle>(handles), std::span<const box<D, T>>(boxes));  // all, in one batch
    grids.update();
    const auto t1 = clock_type::now();
    grids.find_pairs(pairs);
    const auto t2 = clock_type::now();
    if (o.steps <= warmup_steps || step > warmup_steps) {
      update_ms.push_back(ms_between(t0, t1));
      detect_ms.push_back(ms_between(t1, t2));
      step_ms.push_back(ms_between(t0, t2));
      pair_counts.push_back(static_cast<double>(pairs.size()));
    }
    most_pairs = std::max(most_pairs, pairs.size());
    if (check) {
      check->move_all(boxes);
      if (std::string diff = check->compare(pairs, grids); !diff.empty()) {
        std::fprintf(stderr, "hhg: run: check failed at step %zu: %s\n", step, diff.c_str());
        return exit_failure;
      }
    }
    progress(o, step, run_start);
  }

  s.measured = update_ms.size();
  s.update_median = median(update_ms);
  s.update_max = maximum(update_ms);
  s.detect_median = median(detect_ms);
  s.detect_max = maximum(detect_ms);
  s.step_median = median(step_ms);
  s.step_max = maximum(step_ms);
  s.step_mean = mean(step_ms);
  s.pairs_median = median(pair_counts);
  s.stats = grids.stats();
  s.bytes = s.stats.bytes;
  s.peak_rss = peak_rss_bytes();
  s.peak_rise = memory.rise();
  s.caller_bytes = caller_bytes(handles.capacity() + all_handles.capacity(), most_pairs);
  print_summary(o, s, scalar, pool->workers());
  if (json) {
    write_summary_json(json.get(), o, cfg, s, scalar, pool->workers());
    json.close();
  }
  return exit_ok;
}

}  // namespace

CLI::App* add_run_command(CLI::App& app, run_options& o) {
  CLI::App* sub = app.add_subcommand("run", "Time the hierarchical hash grid on the thesis benchmark scenario");
  sub->add_option("-n,--n", o.n, "Number of objects")
      ->capture_default_str()
      ->check(integer_in(1, std::numeric_limits<std::uint32_t>::max(), "POSITIVE"));
  sub->add_option("--steps", o.steps, "Number of time steps")
      ->capture_default_str()
      ->check(integer_in(1, std::numeric_limits<std::uint32_t>::max(), "POSITIVE"));
  std::string scenario_help;
  for (const scenes::named_scenario& sc : scenes::named_scenarios())
    scenario_help += (scenario_help.empty() ? "" : "; ") + std::string(sc.name) + ": " + std::string(sc.description);
  sub->add_option("--scenario", o.scenario, scenario_help)
      ->capture_default_str()
      ->check(CLI::IsMember(scenes::named_scenario_names()));
  sub->add_option("--seed", o.seed, "Seed of the scenario (0 to 2^64-1)")
      ->capture_default_str()
      ->check(integer_in(0, std::numeric_limits<std::uint64_t>::max()));
  sub->add_option("--dim", o.dim, "Dimension, 2 or 3")->capture_default_str()->check(CLI::IsMember({2, 3}));
  sub->add_flag("--float", o.use_float, "Use float coordinates instead of double");
  sub->add_flag("--check", o.check,
                "Compare every step's pairs with brute force (at most " + std::to_string(max_check_objects) +
                    " objects); a difference gives exit status 1");
  sub->add_option("--json", o.json, "Also write the summary as JSON to this file");
  sub->add_flag("-q,--quiet", o.quiet, "No progress lines on standard error");
  add_threads_option(sub, o.threads);
  add_grid_options(sub, o.grid);
  return sub;
}

int run_command(const run_options& o) {
  if (o.check && o.n > max_check_objects)
    throw usage_error("run: --check compares with brute force and is limited to " + std::to_string(max_check_objects) +
                      " objects; got --n " + std::to_string(o.n));
  const config cfg = make_config(o.grid, o.dim, "run");
  output_file json;
  if (!o.json.empty()) json = output_file(o.json, "run", "--json");  // opened first: a bad path fails before a long run
  if (o.dim == 2) {
    return o.use_float ? run_scenario<2, float>(o, cfg, json) : run_scenario<2, double>(o, cfg, json);
  }
  return o.use_float ? run_scenario<3, float>(o, cfg, json) : run_scenario<3, double>(o, cfg, json);
}

}  // namespace hhg::cli
