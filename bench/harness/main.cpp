// bench/harness/main.cpp: `hhg_bench`, the benchmark harness with the peers
// (Bullet, FCL, CGAL: whichever bench/peers.cmake found) compiled in. It takes
// the flags of `hhg bench` (bench/harness/bench.cpp); the installed `hhg` tool
// runs the same harness with hhg's own methods only and links no peer library.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "../../apps/hhg/commands.hpp"
#include "../../apps/hhg/entry.hpp"

int main(int argc, char** argv) {
  return hhg::cli::guarded([&] {
    CLI::App app{"hhg_bench: the thesis' experiments with every method and the peers, side by side", "hhg_bench"};
    hhg::cli::prefix_usage_errors(app);
    hhg::cli::bench_options o;
    // the flags of `hhg bench`, on the top level
    CLI::App* bench = hhg::cli::add_bench_command(app, o);
    app.require_subcommand(0, 1);
    bench->footer("Also: hhg_bench [FLAGS] without the word 'bench'.");
    std::optional<int> done;
    if (argc > 1 && std::string(argv[1]) != "bench") {
      // accept `hhg_bench --n 1000 ...` as `hhg_bench bench --n 1000 ...`
      std::vector<std::string> args;
      for (int i = argc - 1; i >= 1; --i) args.emplace_back(argv[i]);
      args.emplace_back("bench");
      done = hhg::cli::parse_command_line(app, args);
    } else {
      done = hhg::cli::parse_command_line(app, argc, argv);
    }
    return done ? *done : hhg::cli::bench_command(o);
  });
}
