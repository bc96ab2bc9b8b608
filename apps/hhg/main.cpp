// apps/hhg/main.cpp: the `hhg` command-line tool: argument parsing and dispatch.
//
// Usage errors (unknown flag, bad value, no subcommand) exit with status 2, not
// CLI11's own codes; --help and --version exit with 0. Errors found while running
// are printed as "hhg: <message>" on standard error (see commands.hpp for the
// exit statuses; entry.hpp has what main() shares with hhg_bench).
#include <CLI/CLI.hpp>
#include <iostream>
#include <string>

#include "commands.hpp"
#include "entry.hpp"

#ifndef HHG_VERSION
#define HHG_VERSION "0.1.0"
#endif

namespace {

/// Parses the command line and runs the chosen subcommand.
int dispatch(int argc, char** argv) {
  CLI::App app{"hhg: broad-phase collision detection with hierarchical hash grids", "hhg"};
  app.set_version_flag("--version", std::string("hhg ") + HHG_VERSION);
  // Every error message starts with "hhg: ", CLI11's usage errors included.
  hhg::cli::prefix_usage_errors(app);
  app.require_subcommand(0, 1);

  hhg::cli::pairs_options pairs_opts;
  hhg::cli::replay_options replay_opts;
  hhg::cli::run_options run_opts;
  hhg::cli::bench_options bench_opts;
  CLI::App* pairs = hhg::cli::add_pairs_command(app, pairs_opts);
  CLI::App* replay = hhg::cli::add_replay_command(app, replay_opts);
  CLI::App* run = hhg::cli::add_run_command(app, run_opts);
  CLI::App* bench = hhg::cli::add_bench_command(app, bench_opts);
  hhg::cli::query_options query_opts;
  hhg::cli::neighbors_options neighbors_opts;
  CLI::App* query = hhg::cli::add_query_command(app, query_opts);
  CLI::App* neighbors = hhg::cli::add_neighbors_command(app, neighbors_opts);
  // Set after the subcommands are added: they would inherit it.
  app.footer(
      "Run 'hhg SUBCOMMAND --help' for the flags of a subcommand.\n"
      "Exit status: 0 success, 1 failure (--check mismatch, output error), 2 usage or input error.");

  if (const auto done = hhg::cli::parse_command_line(app, argc, argv)) return *done;

  if (pairs->parsed()) return hhg::cli::pairs_command(pairs_opts);
  if (replay->parsed()) return hhg::cli::replay_command(replay_opts);
  if (run->parsed()) return hhg::cli::run_command(run_opts);
  if (bench->parsed()) return hhg::cli::bench_command(bench_opts);
  if (query->parsed()) return hhg::cli::query_command(query_opts);
  if (neighbors->parsed()) return hhg::cli::neighbors_command(neighbors_opts);

  std::cerr << "hhg: a subcommand is required\n" << app.help();
  return hhg::cli::exit_usage;
}

}  // namespace

namespace hhg::cli {
int mpi_handoff(int argc, char** argv);  // mpi_handoff.cpp
}

int main(int argc, char** argv) {
  // Under mpiexec with several ranks, pairs and run become hhg_mpi (exec).
  if (const int status = hhg::cli::mpi_handoff(argc, argv); status >= 0) return status;
  return hhg::cli::guarded([&] { return dispatch(argc, argv); });
}
