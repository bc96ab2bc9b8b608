// bench/harness/main.cpp: `hhg_bench`, the benchmark harness with the peers
// (Bullet, FCL, CGAL: whichever bench/peers.cmake found) compiled in. It takes
// the flags of `hhg bench` (bench/harness/bench.cpp); the installed `hhg` tool
// runs the same harness with hhg's own methods only and links no peer library.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "../../apps/hhg/commands.hpp"
#include "../../apps/hhg/parse.hpp"
#include "hhg/error.hpp"

int main(int argc, char** argv) {
  CLI::App app{"hhg_bench: the thesis' experiments with every method and the peers, side by side", "hhg_bench"};
  app.failure_message(
      [](const CLI::App* a, const CLI::Error& e) { return "hhg: " + CLI::FailureMessage::simple(a, e); });
  hhg::cli::bench_options o;
  // the flags of `hhg bench`, on the top level
  CLI::App* bench = hhg::cli::add_bench_command(app, o);
  app.require_subcommand(0, 1);
  bench->footer("Also: hhg_bench [FLAGS] without the word 'bench'.");
  try {
    if (argc > 1 && std::string(argv[1]) != "bench") {
      // accept `hhg_bench --n 1000 ...` as `hhg_bench bench --n 1000 ...`
      std::vector<std::string> args;
      for (int i = argc - 1; i >= 1; --i) args.emplace_back(argv[i]);
      args.emplace_back("bench");
      app.parse(args);
    } else {
      app.parse(argc, argv);
    }
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? hhg::cli::exit_ok : hhg::cli::exit_usage;
  }
  try {
    return hhg::cli::bench_command(o);
  } catch (const hhg::cli::input_error& e) {  // a bad --boxes file
    std::fprintf(stderr, "hhg: %s\n", e.what());
    return hhg::cli::exit_usage;
  } catch (const hhg::cli::usage_error& e) {
    std::fprintf(stderr, "hhg: %s\n", e.what());
    return hhg::cli::exit_usage;
  } catch (const hhg::error& e) {
    hhg::cli::print_error(e.what());
    return hhg::cli::exit_usage;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "hhg: out of memory\n");
    return hhg::cli::exit_failure;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hhg: %s\n", e.what());
    return hhg::cli::exit_failure;
  }
}
