// apps/hhg/commands.hpp: the subcommands of the `hhg` tool.
//
// Each subcommand registers its flags on the CLI11 application (add_*_command)
// and runs from the parsed options (*_command), returning the exit status.
// Exit statuses: 0 success; 1 failure (a --check mismatch, an output error, out
// of memory); 2 usage or input error (bad flag, bad line, unreadable file).
#pragma once

#include <CLI/CLI.hpp>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "hhg/config.hpp"
#include "options.hpp"
#include "status.hpp"

namespace hhg::cli {

// exit_ok, exit_failure, exit_usage, print_error and usage_error: status.hpp.

/// `hhg pairs [--method M] [--dim 2|3] [--format F] [--count] [--order O] [FILE]`
struct pairs_options {
  std::string method = "hhg";
  int dim = 0;  // 0: from the '# dim N' header, else 3
  std::string file;
  std::string order = "auto";     // sorted, stream, auto
  std::uint64_t sort_memory = 0;  // 0: a quarter of the physical memory
  std::string periodic;           // --periodic AXES (empty: not periodic)
  std::string domain;             // --domain LO,HI[,...]
  output_options out;
  grid_options grid;
  unsigned threads = 0;
};
CLI::App* add_pairs_command(CLI::App& app, pairs_options& o);
int pairs_command(const pairs_options& o);

/// `hhg replay [--method hhg|brute] [--dim 2|3] [FILE]`
struct replay_options {
  std::string method = "hhg";
  int dim = 0;
  std::string file;
};
CLI::App* add_replay_command(CLI::App& app, replay_options& o);
int replay_command(const replay_options& o);

/// `hhg run [flags]`: the thesis benchmark scenario, timed.
struct run_options {
  std::size_t n = 100000;
  std::size_t steps = 100;
  std::string scenario = "equal";
  std::uint64_t seed = 1;
  int dim = 3;
  bool use_float = false;
  bool check = false;
  bool quiet = false;
  std::string json;
  grid_options grid;
  unsigned threads = 0;
};
CLI::App* add_run_command(CLI::App& app, run_options& o);
int run_command(const run_options& o);

/// `hhg bench [--scenario S,...] [--methods M,...] [--n N,...] [--steps S] [--seed K]
/// [--json FILE] [--csv FILE] [--skip-header] [--quick] [--timeout SECONDS] [--threads N]`,
/// or `hhg bench --boxes FILE [--steps K] [--motion F] [--methods ...]`: the one-shot
/// pairs of a box file (and K steps of replayed random motion)
/// (bench/harness/bench.cpp; `hhg_bench` is the same with the peers compiled in)
struct bench_options {
  std::vector<std::string> scenarios;
  std::vector<std::string> methods;
  std::vector<std::uint64_t> ns;
  std::size_t steps = 0;  // 0: 10, or 5 with --quick
  unsigned threads = 0;
  std::uint64_t seed = 1;
  std::string json, csv;
  bool skip_header = false;
  bool quick = false;
  unsigned timeout = 120;   // seconds per (scenario, N, method) run
  std::string boxes;        // --boxes FILE: a box file instead of the scenarios
  double motion = -1;       // --motion F (with --boxes); < 0: not given (0.2 with --steps)
  unsigned rounds = 1;      // --rounds R: every (scenario, N) runs its methods R times, alternately
  bool interleave = false;  // --interleave: the methods of a (scenario, N) at once, taking turns step by step
};
CLI::App* add_bench_command(CLI::App& app, bench_options& o);
int bench_command(const bench_options& o);

/// `hhg query --boxes FILE (--aabb|--point|--sphere|--ray|--nearest) QUERIES
/// [--k K] [--closest] [--dim 2|3]` (apps/hhg/query.cpp)
struct query_options {
  std::string boxes;
  std::string aabb, point, sphere, ray, nearest;
  std::size_t k = 1;
  bool k_given = false;  // (--k without --nearest: a usage error)
  bool closest = false;
  bool distances = false;  // --nearest: the distance of each box; --ray: the entry parameter of each hit
  int dim = 0;
  output_options out;
  grid_options grid;
  unsigned threads = 0;
};
CLI::App* add_query_command(CLI::App& app, query_options& o);
int query_command(const query_options& o);

/// `hhg neighbors --radius R [--dim 2|3] [POINTS]` (apps/hhg/neighbors.cpp)
struct neighbors_options {
  double radius = -1;
  std::string method = "cell-list";
  int dim = 0;
  std::string file;
  bool distances = false;
  output_options out;
  unsigned threads = 0;
};
CLI::App* add_neighbors_command(CLI::App& app, neighbors_options& o);
int neighbors_command(const neighbors_options& o);

/// --check compares with the O(N^2) brute force: refused above this many objects.
inline constexpr std::size_t max_check_objects = 20000;

}  // namespace hhg::cli
