// apps/hhg/status.hpp: the exit statuses of the hhg programs and the message
// and status of an error thrown while running, shared by `hhg` (entry.hpp's
// guarded) and `hhg_mpi` (apps/hhg_mpi/main.cpp), which has no CLI11: one
// mapping, one text per kind of failure (README, "Exit status").
#pragma once

#include <cstdio>
#include <exception>
#include <new>
#include <stdexcept>
#include <string>

#include "hhg/error.hpp"
#include "parse.hpp"

namespace hhg::cli {

inline constexpr int exit_ok = 0;
inline constexpr int exit_failure = 1;
inline constexpr int exit_usage = 2;

/// A request that cannot be served as given (e.g. --check with too many
/// objects, a bad hash grid configuration). Exit status 2.
class usage_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// "hhg: <what>" (no second "hhg: " when `what` has one).
inline std::string error_line(const std::string& what) { return what.rfind("hhg: ", 0) == 0 ? what : "hhg: " + what; }

/// Prints error_line(what) on standard error.
inline void print_error(const std::string& what) { std::fprintf(stderr, "%s\n", error_line(what).c_str()); }

/// What a program prints (one line, no '\n') and returns for an error thrown
/// while running: bad input, usage and hhg::error 2; out of memory and other
/// failures 1.
struct failure {
  int status;
  std::string message;
};

/// The failure for `e` (a std::exception or anything else thrown).
inline failure describe_failure(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const input_error& x) {
    return {exit_usage, error_line(x.what())};
  } catch (const usage_error& x) {
    return {exit_usage, error_line(x.what())};
  } catch (const hhg::error& x) {
    return {exit_usage, error_line(x.what())};
  } catch (const std::bad_alloc&) {
    return {exit_failure, "hhg: out of memory"};
  } catch (const std::exception& x) {
    return {exit_failure, error_line(x.what())};
  } catch (...) {
    return {exit_failure, "hhg: unknown error"};
  }
}

}  // namespace hhg::cli
