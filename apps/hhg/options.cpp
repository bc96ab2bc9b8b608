// apps/hhg/options.cpp: shared flags (validators, hash grid configuration,
// threads, output format) and output helpers of the `hhg` tool.
#include "options.hpp"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <system_error>
#include <utility>

#include "commands.hpp"
#include "hhg/error.hpp"

namespace hhg::cli {

namespace {

std::string shortest(double v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

/// "a,b,c" -> {"a", "b", "c"} (empty pieces kept: "8,,8" has three).
std::vector<std::string> comma_pieces(const std::string& text) {
  std::vector<std::string> out;
  for (std::size_t at = 0;;) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    out.push_back(text.substr(at, comma - at));
    if (comma == text.size()) return out;
    at = comma + 1;
  }
}

}  // namespace

CLI::Validator integer_in(std::uint64_t lo, std::uint64_t hi, const std::string& label) {
  return CLI::Validator(
      [lo, hi](std::string& s) -> std::string {
        std::uint64_t v = 0;
        const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 10);
        if (s.empty() || ec != std::errc{} || ptr != s.data() + s.size() || v < lo || v > hi)
          return "must be an integer from " + std::to_string(lo) + " to " + std::to_string(hi) + ", got '" + s + "'";
        return {};
      },
      label);
}

CLI::Validator number_in(double lo, double hi, bool lo_open, const std::string& hi_text) {
  return CLI::Validator(
      [lo, hi, lo_open, hi_text](std::string& s) -> std::string {
        const char* first = s.data();
        const char* const last = s.data() + s.size();
        if (first != last && *first == '+' && last - first > 1 && first[1] != '-' && first[1] != '+') ++first;
        double v = 0;
        const auto [ptr, ec] = std::from_chars(first, last, v, std::chars_format::general);
        const std::string range = std::string(lo_open ? "> " : ">= ") + shortest(lo) +
                                  " and <= " + (hi_text.empty() ? shortest(hi) : hi_text);
        if (s.empty() || ec != std::errc{} || ptr != last || std::isnan(v))
          return "must be a decimal number " + range + ", got '" + s + "'";
        if ((lo_open ? !(v > lo) : !(v >= lo)) || !(v <= hi)) return "must be " + range + ", got '" + s + "'";
        return {};
      },
      "");
}

void add_grid_options(CLI::App* sub, grid_options& g) {
  const char* group = "Hash grid configuration";
  const auto u32 = std::numeric_limits<std::uint32_t>::max();
  sub->add_option("--factor", g.factor, "Hierarchy factor: cell size ratio of successive grids (> 1, finite)")
      ->capture_default_str()
      ->check(number_in(1, 1e300, true))
      ->group(group);
  sub->add_option("--density", g.density, "Minimal grid density: a grid grows above cells/density objects (>= 1)")
      ->capture_default_str()
      ->check(integer_in(1, u32))
      ->group(group);
  sub->add_option("--threshold", g.threshold,
                  "Activation threshold: all-pairs test up to this many objects (0: grids at once)")
      ->capture_default_str()
      ->check(integer_in(0, std::numeric_limits<std::uint64_t>::max()))
      ->group(group);
  // One argument, split here: as a vector option with 1 to 3 values, `--cells 8
  // FILE` took FILE for a second value (until stop 79).
  const CLI::Validator cell_count = integer_in(4, 32768);
  sub->add_option_function<std::string>(
         "--cells",
         [&g](const std::string& text) {
           g.cells.clear();
           for (const std::string& piece : comma_pieces(text))
             g.cells.push_back(static_cast<std::uint32_t>(std::stoul(piece)));
         },
         "Initial cells per axis of a new grid: one value for every axis or one per axis "
         "(comma-separated); powers of two >= 4, at most 2^24 cells in all (default 16)")
      ->type_name("C[,C,C]")
      ->check(CLI::Validator(
          [cell_count](std::string& text) -> std::string {
            const std::vector<std::string> pieces = comma_pieces(text);
            for (std::string piece : pieces)
              if (std::string e = cell_count(piece); !e.empty()) return e;
            if (pieces.size() > 3) return "takes 1 to 3 comma-separated values, got '" + text + "'";
            return {};
          },
          ""))
      ->group(group);
  sub->add_option("--cell-capacity", g.cell_capacity, "Initial object capacity of a cell (1 to 65536)")
      ->capture_default_str()
      ->check(integer_in(1, 65536))
      ->group(group);
  sub->add_option("--strategy", g.strategy, "How moved objects are followed: incremental or rebuild")
      ->capture_default_str()
      ->check(CLI::IsMember({"incremental", "rebuild"}))
      ->group(group);
  sub->add_option("--growth", g.growth,
                  "Which axes get a growing grid's cells: every-axis (all alike, the thesis) or by-occupancy "
                  "(after the objects' extent per axis)")
      ->capture_default_str()
      ->check(CLI::IsMember({"every-axis", "by-occupancy"}))
      ->group(group);
  sub->add_flag(
         "--fixed-factor", g.fixed_factor,
         "Every level --factor apart (default: a batch of boxes that activates the grids may space the levels it spans "
         "wider, from an estimate of the detection's cost)")
      ->group(group);
  // given, whatever the value: `--method brute --factor 4` (4 is the default)
  // passed as "no grid flag" until stop 79
  for (CLI::Option* opt : sub->get_options([group](const CLI::Option* x) { return x->get_group() == group; }))
    opt->each([&g](const std::string&) { g.given = true; });
}

config make_config(const grid_options& g, int dim, const std::string& command) {
  const std::string prefix = command + ": bad hash grid configuration: ";
  config c;
  c.hierarchy_factor = g.factor;
  c.adaptive_factor = !g.fixed_factor;
  c.minimal_grid_density = g.density;
  c.activation_threshold = g.threshold > std::numeric_limits<std::size_t>::max()
                               ? std::numeric_limits<std::size_t>::max()
                               : static_cast<std::size_t>(g.threshold);
  c.cell_capacity = g.cell_capacity;
  c.strategy = g.strategy == "rebuild" ? update_strategy::rebuild : update_strategy::incremental;
  c.growth = g.growth == "by-occupancy" ? growth_rule::by_occupancy : growth_rule::every_axis;
  if (!g.cells.empty()) {
    if (g.cells.size() != 1 && g.cells.size() != static_cast<std::size_t>(dim))
      throw usage_error(prefix + "--cells takes 1 or " + std::to_string(dim) + " values in " + std::to_string(dim) +
                        "D, got " + std::to_string(g.cells.size()));
    std::uint64_t total = 1;
    for (int a = 0; a < 3; ++a) {
      const std::uint32_t v = g.cells.size() == 1 ? g.cells[0] : (a < dim ? g.cells[static_cast<std::size_t>(a)] : 16);
      c.initial_cells[static_cast<std::size_t>(a)] = v;
      if (a < dim) total *= v;
    }
    if (total > max_initial_cells)
      throw usage_error(prefix + "--cells gives " + std::to_string(total) + " cells per grid, more than 2^24 (" +
                        std::to_string(max_initial_cells) + "); use fewer cells per axis");
  }
  try {
    validate_config(c);
  } catch (const hhg::error& e) {
    std::string what = e.what();
    if (what.rfind("hhg: ", 0) == 0) what.erase(0, 5);
    static constexpr std::pair<const char*, const char*> flags[] = {{"hierarchy_factor", "--factor"},
                                                                    {"initial_cells", "--cells"},
                                                                    {"minimal_grid_density", "--density"},
                                                                    {"activation_threshold", "--threshold"},
                                                                    {"cell_capacity", "--cell-capacity"}};
    for (const auto& [field, flag] : flags) {
      if (what.find(field) != std::string::npos) {
        what += std::string(" (set by ") + flag + ")";
        break;
      }
    }
    throw usage_error(prefix + what);
  }
  return c;
}

void add_threads_option(CLI::App* sub, unsigned& threads) {
  sub->add_option("--threads", threads,
                  "Worker threads of the hash grid (default 0: every core); the output is the same for every count")
      ->capture_default_str()
      ->check(integer_in(0, 1024));
}

std::unique_ptr<thread_pool> make_executor(unsigned threads) { return std::make_unique<thread_pool>(threads); }

void add_output_options(CLI::App* sub, output_options& o) {
  sub->add_option("--format", o.format, "Output format: text (default), csv or json")
      ->check(CLI::IsMember({"text", "csv", "json"}));
  sub->add_flag("--count", o.count, "Print only the number of results");
  sub->add_flag("--skip-header", o.skip_header, "With --format csv: no header line");
}

void write_json(std::FILE* f, const nlohmann::json& j, const std::string& what) {
  // dump() writes non-finite numbers as null; replace invalid UTF-8 instead of throwing
  const std::string text = j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  if (std::fwrite(text.data(), 1, text.size(), f) != text.size() || std::fflush(f) != 0)
    throw std::runtime_error("cannot write " + what + ": " + std::strerror(errno));
}

output_file::output_file(const std::string& path, const std::string& command, const std::string& flag)
    : f_(std::fopen(path.c_str(), "w")), what_("the " + flag + " file '" + path + "'") {
  if (!f_) throw usage_error(command + ": cannot write '" + path + "' (" + flag + "): " + std::strerror(errno));
}

void output_file::close() {
  if (!f_) return;
  std::FILE* f = f_.release();
  const bool ok = std::ferror(f) == 0 && std::fflush(f) == 0;
  const int err = errno;
  if (std::fclose(f) != 0 || !ok)
    throw std::runtime_error("cannot write " + what_ + ": " + std::strerror(err ? err : errno));
}

void flush_stdout() {
  if (std::ferror(stdout) != 0 || std::fflush(stdout) != 0)
    throw std::runtime_error(std::string("cannot write the output: ") + std::strerror(errno));
}

}  // namespace hhg::cli
