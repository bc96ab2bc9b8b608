// apps/hhg/entry.hpp: what every hhg program's main() shares (the `hhg` tool,
// apps/hhg/main.cpp, and the benchmark harness `hhg_bench`,
// bench/harness/main.cpp): "hhg: " before every error message, CLI11's
// included; the parse step's exit statuses; and the mapping of errors thrown
// while running to messages and exit statuses (status.hpp).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <new>
#include <optional>
#include <utility>

#include "commands.hpp"
#include "hhg/error.hpp"
#include "parse.hpp"
#include "status.hpp"

namespace hhg::cli {

/// Every usage error of `app` (and of its subcommands) starts with "hhg: ".
inline void prefix_usage_errors(CLI::App& app) {
  app.failure_message(
      [](const CLI::App* a, const CLI::Error& e) { return "hhg: " + CLI::FailureMessage::simple(a, e); });
}

/// app.parse(args...). Returns the exit status when the program ends here
/// (--help or --version printed: 0; a usage error printed: 2), nothing when
/// the command is to run.
template <class... Args>
std::optional<int> parse_command_line(CLI::App& app, Args&&... args) {
  try {
    app.parse(std::forward<Args>(args)...);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help, the version or the error message
    return code == 0 ? exit_ok : exit_usage;
  }
  return std::nullopt;
}

/// Runs command() and turns what it throws into "hhg: <message>" on standard
/// error and an exit status (describe_failure, status.hpp): bad input, usage
/// and hhg::error 2; out of memory and other failures 1.
template <class F>
int guarded(F&& command) {
  try {
    return command();
  } catch (...) {
    const failure f = describe_failure(std::current_exception());
    std::fprintf(stderr, "%s\n", f.message.c_str());
    return f.status;
  }
}

}  // namespace hhg::cli
