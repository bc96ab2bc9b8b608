// apps/hhg/options.hpp: flags shared by the subcommands of the `hhg` tool and
// the output helpers they share.
//
// Numbers on the command line are checked by CLI11 validators built here: an
// integer is decimal digits only, in a stated range ("12abc", "-1", "0x10",
// "1e3" are refused); a real number is a decimal floating-point number as in
// the input files (no hex, no NaN). A refused value is a usage error, exit 2.
#pragma once

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "format.hpp"
#include "hhg/config.hpp"
#include "hhg/executor.hpp"

namespace hhg::cli {

/// Accepts a decimal integer in [lo, hi] (digits only).
CLI::Validator integer_in(std::uint64_t lo, std::uint64_t hi, const std::string& label = "");
/// Accepts a decimal real number v with lo <= v <= hi (lo < v when lo_open),
/// written as the input files write numbers (no hex, no NaN, no trailing text).
/// `hi_text` names hi in the message (e.g. "2^511"); empty: the number.
CLI::Validator number_in(double lo, double hi, bool lo_open = false, const std::string& hi_text = "");

/// The hash grid's configuration flags (hhg::config), for every subcommand
/// that builds a hash grid.
struct grid_options {
  double factor = config{}.hierarchy_factor;
  std::uint32_t density = config{}.minimal_grid_density;
  std::uint64_t threshold = config{}.activation_threshold;
  std::vector<std::uint32_t> cells;  // empty: the default; 1 value: every axis; else one per axis
  std::uint32_t cell_capacity = config{}.cell_capacity;
  std::string strategy = "incremental";
  std::string growth = "by-occupancy";
  bool fixed_factor = !config{}.adaptive_factor;
  bool given = false;  // some flag was given (set by add_grid_options)
  /// True when no flag was given (a flag given its default value counts as given).
  bool is_default() const { return !given; }
  friend bool operator==(const grid_options&, const grid_options&) = default;
};
/// Adds --factor, --density, --threshold, --cells, --cell-capacity,
/// --strategy, --growth, --fixed-factor in the group "Hash grid configuration".
void add_grid_options(CLI::App* sub, grid_options& g);
/// The configuration the flags describe for dimension `dim`; a bad combination
/// is a usage_error naming the flag ("<command>: bad hash grid configuration: ...").
config make_config(const grid_options& g, int dim, const std::string& command);
/// At most this many cells in a new grid (cells per axis ^ dim): a usable
/// grid, not terabytes (16 Mi cells).
inline constexpr std::uint64_t max_initial_cells = std::uint64_t{1} << 24;

/// --threads N (0 or absent: every core).
void add_threads_option(CLI::App* sub, unsigned& threads);
/// The executor for --threads: a thread_pool with that many threads.
std::unique_ptr<thread_pool> make_executor(unsigned threads);

/// Output format and shape of pairs, query and neighbors.
struct output_options {
  std::string format = "text";  // text, csv, json
  bool count = false;           // only the number of results
  bool skip_header = false;     // csv without its header line
};
void add_output_options(CLI::App* sub, output_options& o);

/// Writes `j` (then '\n') to `f`, non-finite numbers as null; throws
/// std::runtime_error("cannot write <what>: ...") on a write error.
void write_json(std::FILE* f, const nlohmann::json& j, const std::string& what);
/// An output file opened for writing at once (before any long work), closed
/// (and checked) by close(). Throws usage_error when it cannot be opened.
class output_file {
 public:
  output_file() = default;
  output_file(const std::string& path, const std::string& command, const std::string& flag);
  std::FILE* get() const noexcept { return f_.get(); }
  explicit operator bool() const noexcept { return static_cast<bool>(f_); }
  /// Flushes and closes; throws std::runtime_error on a write error.
  void close();

 private:
  struct closer {
    void operator()(std::FILE* f) const noexcept { std::fclose(f); }
  };
  std::unique_ptr<std::FILE, closer> f_;
  std::string what_;
};

/// Flushes standard output; throws std::runtime_error on a write error
/// (a full disk, /dev/full, a closed pipe).
void flush_stdout();

}  // namespace hhg::cli
