// apps/hhg_mpi/main.cpp: `hhg_mpi`, the command line of hhg::distributed_hash_grids.
//
//   mpiexec -n P hhg_mpi pairs [--dim 2|3] [FILE]
//       Prints exactly what `hhg pairs FILE` prints: every overlapping pair
//       'i j' (0-based box lines, i < j), sorted. Rank 0 reads and writes; box i
//       is inserted on rank i % P, the ranks find the pairs they own, rank 0
//       gathers and sorts them. Same input format and checks as `hhg pairs`
//       (a bad line: message on standard error, status 2, no output).
//   mpiexec -n P hhg_mpi run [--n N | --total N] [--steps S] [--seed S] [--varied] [--dim 2|3] [--check]
//       The thesis scenario (hhg/scenes.hpp, equal cubes or sizes 1..12),
//       distributed: N objects per rank (weak scaling; default 100000) or N in
//       total. Every rank steps the whole scenario (not timed) and moves the
//       objects it owns; timed per step: the moves, the collective exchange
//       and the detection. Reports per step the time (max over ranks), ghosts
//       per rank, bytes sent, imbalance and pairs. --check compares every step's
//       pairs (gathered on rank 0) with a serial hhg::hash_grids: status 1 on a difference.
#include <mpi.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "hhg/distributed.hpp"
#include "hhg/hash_grids.hpp"
#include "hhg/scenes.hpp"

namespace {

int g_rank = 0, g_size = 1;

struct input_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] void fail_at(std::size_t line, const std::string& what) {
  throw input_error("line " + std::to_string(line) + ": " + what);
}

std::string_view strip_cr(std::string_view s) {
  if (!s.empty() && s.back() == '\r') s.remove_suffix(1);
  return s;
}
bool blank(char c) { return c == ' ' || c == '\t'; }
bool separator(char c) { return c == ' ' || c == '\t' || c == ','; }

bool ignorable(std::string_view line) {
  for (const char c : strip_cr(line)) {
    if (blank(c)) continue;
    return c == '#';
  }
  return true;
}

std::optional<int> dim_header(std::string_view s) {
  s = strip_cr(s);
  std::size_t i = 0;
  while (i < s.size() && blank(s[i])) ++i;
  if (i == s.size() || s[i] != '#') return std::nullopt;
  ++i;
  while (i < s.size() && blank(s[i])) ++i;
  if (s.substr(i, 3) != "dim") return std::nullopt;
  i += 3;
  if (i == s.size() || !blank(s[i])) return std::nullopt;
  while (i < s.size() && blank(s[i])) ++i;
  std::size_t end = s.size();
  while (end > i && blank(s[end - 1])) --end;
  const std::string_view v = s.substr(i, end - i);
  if (v == "2") return 2;
  if (v == "3") return 3;
  fail_at(1, "the '# dim' header must give 2 or 3, found '" + std::string(v) + "'");
}

double number(std::string_view f, std::size_t line) {
  const char* first = f.data();
  const char* last = f.data() + f.size();
  if (first != last && *first == '+' && last - first > 1 && first[1] != '-' && first[1] != '+') ++first;
  double v = 0;
  const auto [ptr, ec] = std::from_chars(first, last, v, std::chars_format::general);
  if (ec == std::errc::result_out_of_range && ptr == last)
    fail_at(line, "number out of range: '" + std::string(f) + "'");
  if (ec != std::errc{} || ptr != last) fail_at(line, "not a number: '" + std::string(f) + "'");
  if (std::isnan(v)) fail_at(line, "NaN is not allowed: '" + std::string(f) + "'");
  return v;
}

/// Reads the boxes (2*D numbers a line) as doubles, flat.
std::vector<double> read_boxes(std::istream& in, int& dim, bool dim_given) {
  std::vector<double> flat;
  std::string line;
  std::size_t number_of_line = 0;
  std::vector<std::string_view> fields;
  while (std::getline(in, line)) {
    ++number_of_line;
    if (number_of_line == 1 && !dim_given)
      if (const auto d = dim_header(line)) dim = *d;
    if (ignorable(line)) continue;
    const std::string_view s = strip_cr(line);
    fields.clear();
    std::size_t i = 0, count = 0;
    while (true) {
      while (i < s.size() && separator(s[i])) ++i;
      if (i == s.size()) break;
      const std::size_t start = i;
      while (i < s.size() && !separator(s[i])) ++i;
      ++count;
      fields.push_back(s.substr(start, i - start));
    }
    const std::size_t want = 2 * static_cast<std::size_t>(dim);
    if (count != want)
      fail_at(number_of_line, "expected " + std::to_string(want) + " numbers, found " + std::to_string(count));
    const std::size_t base = flat.size();
    for (const auto f : fields) flat.push_back(number(f, number_of_line));
    for (int a = 0; a < dim; ++a)
      if (flat[base + a] > flat[base + dim + a])
        fail_at(number_of_line, "min > max on axis " + std::string(1, "xyz"[a]));
  }
  if (flat.size() / (2 * dim) > 0xFFFFFFFFull) throw input_error("too many boxes (at most 4294967295)");
  return flat;
}

template <int D>
void distributed_pairs(const std::vector<double>& flat_all, std::uint64_t n) {
  // Scatter: box i to rank i % P (rank 0 sends each rank its share).
  std::vector<double> mine;
  std::vector<int> counts(g_size, 0), displs(g_size, 0);
  std::vector<double> ordered;
  if (g_rank == 0) {
    ordered.reserve(flat_all.size());
    for (int r = 0; r < g_size; ++r) {
      displs[r] = static_cast<int>(ordered.size());
      for (std::uint64_t i = static_cast<std::uint64_t>(r); i < n; i += static_cast<std::uint64_t>(g_size))
        ordered.insert(ordered.end(), flat_all.begin() + static_cast<std::ptrdiff_t>(2 * D * i),
                       flat_all.begin() + static_cast<std::ptrdiff_t>(2 * D * (i + 1)));
      counts[r] = static_cast<int>(ordered.size()) - displs[r];
    }
  }
  int my_count = 0;
  MPI_Scatter(counts.data(), 1, MPI_INT, &my_count, 1, MPI_INT, 0, MPI_COMM_WORLD);
  mine.resize(static_cast<std::size_t>(my_count));
  MPI_Scatterv(ordered.data(), counts.data(), displs.data(), MPI_DOUBLE, mine.data(), my_count, MPI_DOUBLE, 0,
               MPI_COMM_WORLD);
  hhg::distributed_hash_grids<D, double> g(MPI_COMM_WORLD);
  for (std::size_t k = 0; k < mine.size() / (2 * D); ++k) {
    hhg::box<D, double> b;
    for (int a = 0; a < D; ++a) {
      b.min[a] = mine[2 * D * k + a];
      b.max[a] = mine[2 * D * k + D + a];
    }
    g.insert(static_cast<std::uint64_t>(g_rank) + k * static_cast<std::uint64_t>(g_size), b);
  }
  std::vector<std::pair<std::uint64_t, std::uint64_t>> pairs;
  g.find_pairs(pairs);
  std::vector<std::uint64_t> flat;
  flat.reserve(2 * pairs.size());
  for (const auto& [a, b] : pairs) {
    flat.push_back(a);
    flat.push_back(b);
  }
  // Gather (counts as long long: a rank may own more than 2^31 numbers... not
  // supported by MPI_Gatherv's int counts; fail clearly instead).
  long long my_numbers = static_cast<long long>(flat.size());
  std::vector<long long> all_numbers(g_size);
  MPI_Gather(&my_numbers, 1, MPI_LONG_LONG, all_numbers.data(), 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  long long total = 0;
  int too_many = 0;
  if (g_rank == 0) {
    for (int r = 0; r < g_size; ++r) {
      displs[r] = static_cast<int>(std::min<long long>(total, 0x7FFFFFFF));
      counts[r] = static_cast<int>(std::min<long long>(all_numbers[r], 0x7FFFFFFF));
      total += all_numbers[r];
    }
    too_many = total > 0x7FFFFFFF ? 1 : 0;
  }
  MPI_Bcast(&too_many, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (too_many) throw std::runtime_error("more than 2^30 pairs: too many to gather on rank 0");
  std::vector<std::uint64_t> all(g_rank == 0 ? static_cast<std::size_t>(total) : 0);
  MPI_Gatherv(flat.data(), static_cast<int>(flat.size()), MPI_UINT64_T, all.data(), counts.data(), displs.data(),
              MPI_UINT64_T, 0, MPI_COMM_WORLD);
  if (g_rank != 0) return;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> sorted(all.size() / 2);
  for (std::size_t k = 0; k < sorted.size(); ++k) sorted[k] = {all[2 * k], all[2 * k + 1]};
  std::sort(sorted.begin(), sorted.end());
  std::string out;
  out.reserve(std::size_t{1} << 20);
  char first[24], second[24];
  for (const auto& [a, b] : sorted) {
    const char* end_a = std::to_chars(first, first + sizeof first, a).ptr;
    const char* end_b = std::to_chars(second, second + sizeof second, b).ptr;
    out.append(first, static_cast<std::size_t>(end_a - first));
    out.push_back(' ');
    out.append(second, static_cast<std::size_t>(end_b - second));
    out.push_back('\n');
    if (out.size() > (std::size_t{1} << 20)) {
      std::fwrite(out.data(), 1, out.size(), stdout);
      out.clear();
    }
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  if (std::fflush(stdout) != 0) throw std::runtime_error("write error on standard output");
}

int pairs_command(const std::vector<std::string>& args) {
  std::string file;
  int dim = 3;
  bool dim_given = false;
  for (std::size_t k = 0; k < args.size(); ++k) {
    if (args[k] == "--dim" && k + 1 < args.size()) {
      dim = std::atoi(args[++k].c_str());
      dim_given = true;
      if (dim != 2 && dim != 3) throw input_error("--dim must be 2 or 3");
    } else if (file.empty()) {
      file = args[k];
    } else {
      throw input_error("unexpected argument '" + args[k] + "'");
    }
  }
  // Rank 0 reads; a bad input stops every rank with the same status.
  std::vector<double> flat;
  char message[512] = {};
  int status = 0;
  if (g_rank == 0) {
    try {
      if (file.empty() || file == "-") {
        flat = read_boxes(std::cin, dim, dim_given);
      } else {
        std::ifstream in(file, std::ios::binary);
        if (!in) throw input_error("cannot open '" + file + "'");
        flat = read_boxes(in, dim, dim_given);
      }
    } catch (const std::exception& e) {
      std::snprintf(message, sizeof message, "%s", e.what());
      status = 2;
    }
  }
  MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (status != 0) {
    if (g_rank == 0) std::fprintf(stderr, "hhg_mpi pairs: %s\n", message);
    return status;
  }
  MPI_Bcast(&dim, 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::uint64_t n = flat.size() / (2 * static_cast<std::size_t>(dim));
  MPI_Bcast(&n, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  if (dim == 2)
    distributed_pairs<2>(flat, n);
  else
    distributed_pairs<3>(flat, n);
  return 0;
}

/// --check: the union of the ranks' pairs (gathered on rank 0) against a serial
/// hhg::hash_grids of the same boxes; true on every rank when they are equal.
template <int D>
bool check_step(const std::vector<std::pair<std::uint64_t, std::uint64_t>>& mine,
                const std::vector<hhg::box<D, double>>& boxes) {
  std::vector<std::uint64_t> flat;
  for (const auto& [a, b] : mine) {
    flat.push_back(a);
    flat.push_back(b);
  }
  int n = static_cast<int>(flat.size());
  std::vector<int> counts(g_size), displs(g_size);
  MPI_Gather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  int sum = 0;
  for (int r = 0; r < g_size; ++r) {
    displs[r] = sum;
    sum += counts[r];
  }
  std::vector<std::uint64_t> all(g_rank == 0 ? static_cast<std::size_t>(sum) : 0);
  MPI_Gatherv(flat.data(), n, MPI_UINT64_T, all.data(), counts.data(), displs.data(), MPI_UINT64_T, 0, MPI_COMM_WORLD);
  int ok = 1;
  if (g_rank == 0) {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> got(all.size() / 2), want;
    for (std::size_t k = 0; k < got.size(); ++k) got[k] = {all[2 * k], all[2 * k + 1]};
    std::sort(got.begin(), got.end());
    hhg::hash_grids<D, double> serial;
    const std::vector<hhg::handle> hs = serial.insert(std::span<const hhg::box<D, double>>(boxes));
    std::vector<std::uint64_t> index_of(hs.size());
    for (std::size_t k = 0; k < hs.size(); ++k) {
      if (hs[k].index >= index_of.size()) index_of.resize(hs[k].index + 1);
      index_of[hs[k].index] = k;
    }
    serial.for_each_pair([&](hhg::handle a, hhg::handle b) {
      const std::uint64_t i = index_of[a.index], j = index_of[b.index];
      want.emplace_back(std::min(i, j), std::max(i, j));
    });
    std::sort(want.begin(), want.end());
    ok = got == want ? 1 : 0;
    if (!ok)
      std::fprintf(stderr, "hhg_mpi run --check: %zu pairs over the ranks, %zu from the serial hash grids\n",
                   got.size(), want.size());
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return ok == 1;
}

template <int D>
int run_scenario(std::uint64_t total, int steps, std::uint64_t seed, bool varied, bool check) {
  hhg::scenes::thesis_params p;
  p.n = total;
  p.seed = seed;
  if (varied) p.size_max = 12;
  hhg::scenes::thesis_scenario<D, double> scene(p);
  hhg::distributed_hash_grids<D, double> g(MPI_COMM_WORLD);
  const auto& boxes = scene.boxes();
  for (std::uint64_t i = static_cast<std::uint64_t>(g_rank); i < total; i += static_cast<std::uint64_t>(g_size))
    g.insert(i, boxes[i]);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> pairs;
  if (g_rank == 0)
    std::printf(
        "# hhg_mpi run: %d ranks, %llu objects (%s), %dD, %d steps, seed %llu\n"
        "# step  time_ms(max)  exchange_ms(max)  detect_ms(max)  owned(max)  ghosts(avg)  ghosts(max)  "
        "ghost_fraction  sent_bytes(avg/rank)  sent_bytes(max)  imbalance  migrated  pairs\n",
        g_size, static_cast<unsigned long long>(total), varied ? "sizes 1..12" : "equal cubes", D, steps,
        static_cast<unsigned long long>(seed));
  std::vector<double> times;
  std::vector<std::uint64_t> ids;
  for (int step = 0; step <= steps; ++step) {
    if (step > 0) {
      scene.step();  // not timed: every rank steps the whole scene
      ids = g.owned_ids();
    }
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (const std::uint64_t id : ids) g.move(id, boxes[id]);
    g.find_pairs(pairs);
    const double t = MPI_Wtime() - t0;
    if (check && !check_step<D>(pairs, boxes)) {
      if (g_rank == 0) std::fprintf(stderr, "hhg_mpi run --check: step %d differs\n", step);
      return 1;
    }
    const auto& st = g.stats();
    double mx[4] = {t, st.commit_seconds, st.detect_seconds, static_cast<double>(st.owned)};
    double mx_out[4];
    MPI_Reduce(mx, mx_out, 4, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    double sums[6] = {static_cast<double>(st.ghosts), static_cast<double>(st.bytes_sent),
                      static_cast<double>(st.pairs),  static_cast<double>(st.migrated_out),
                      static_cast<double>(st.owned),  0};
    double sums_out[6];
    MPI_Reduce(sums, sums_out, 6, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    double gmax[2] = {static_cast<double>(st.ghosts), static_cast<double>(st.bytes_sent)}, gmax_out[2];
    MPI_Reduce(gmax, gmax_out, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (g_rank == 0) {
      if (step > 0) times.push_back(mx_out[0]);
      std::printf("%6d  %12.2f  %16.2f  %14.2f  %10.0f  %11.0f  %11.0f  %14.4f  %20.0f  %15.0f  %9.3f  %8.0f  %.0f%s\n",
                  step, 1e3 * mx_out[0], 1e3 * mx_out[1], 1e3 * mx_out[2], mx_out[3], sums_out[0] / g_size, gmax_out[0],
                  sums_out[4] > 0 ? sums_out[0] / sums_out[4] : 0.0, sums_out[1] / g_size, gmax_out[1], st.imbalance,
                  sums_out[3], sums_out[2], step == 0 ? "  (initial: insertion, first bisection)" : "");
    }
  }
  if (g_rank == 0 && !times.empty()) {
    std::sort(times.begin(), times.end());
    std::printf("# median step %.2f ms = %.1f ns per object per step (wall time, max over ranks)\n",
                1e3 * times[times.size() / 2], 1e9 * times[times.size() / 2] / static_cast<double>(total));
  }
  return 0;
}

int run_command(const std::vector<std::string>& args) {
  std::uint64_t per_rank = 100000, total = 0, seed = 1;
  int steps = 10, dim = 3;
  bool varied = false, check = false;
  for (std::size_t k = 0; k < args.size(); ++k) {
    auto value = [&]() -> std::string {
      if (k + 1 >= args.size()) throw input_error(args[k] + " needs a value");
      return args[++k];
    };
    if (args[k] == "--n")
      per_rank = std::stoull(value());
    else if (args[k] == "--total")
      total = std::stoull(value());
    else if (args[k] == "--steps")
      steps = std::stoi(value());
    else if (args[k] == "--seed")
      seed = std::stoull(value());
    else if (args[k] == "--dim")
      dim = std::stoi(value());
    else if (args[k] == "--varied")
      varied = true;
    else if (args[k] == "--check")
      check = true;
    else
      throw input_error("unknown option '" + args[k] + "'");
  }
  if (total == 0) total = per_rank * static_cast<std::uint64_t>(g_size);
  if (steps < 0 || (dim != 2 && dim != 3)) throw input_error("--steps must be >= 0 and --dim 2 or 3");
  return dim == 2 ? run_scenario<2>(total, steps, seed, varied, check)
                  : run_scenario<3>(total, steps, seed, varied, check);
}

/// `hhg_mpi scene NAME N SEED [--dim 2|3]`: writes an adversarial zoo scene
/// (hhg/scenes.hpp) in the input format of `pairs`, for the tests that compare
/// `mpiexec -n P hhg_mpi pairs` with `hhg pairs`. `hhg_mpi scene list` names them.
int scene_command(const std::vector<std::string>& args) {
  if (g_rank != 0) return 0;
  if (args.size() == 1 && args[0] == "list") {
    for (const auto z : hhg::scenes::all_zoo_scenes()) std::printf("%s\n", hhg::scenes::to_string(z).c_str());
    return 0;
  }
  if (args.size() != 3 && !(args.size() == 5 && args[3] == "--dim"))
    throw input_error("usage: hhg_mpi scene NAME N SEED [--dim 2|3] (hhg_mpi scene list: the names)");
  const int dim = args.size() == 5 ? std::stoi(args[4]) : 3;
  for (const auto z : hhg::scenes::all_zoo_scenes()) {
    if (hhg::scenes::to_string(z) != args[0]) continue;
    const std::size_t n = std::stoull(args[1]);
    const std::uint64_t seed = std::stoull(args[2]);
    auto write = [](const auto& boxes, int d) {
      std::printf("# dim %d\n", d);
      char buf[64];
      for (const auto& b : boxes) {
        std::string line;
        for (int a = 0; a < 2 * d; ++a) {
          const double v = a < d ? b.min[a] : b.max[a - d];
          const char* e = std::to_chars(buf, buf + sizeof buf, v).ptr;
          if (a) line.push_back(' ');
          line.append(buf, static_cast<std::size_t>(e - buf));
        }
        std::printf("%s\n", line.c_str());
      }
    };
    if (dim == 2)
      write(hhg::scenes::make_zoo_scene<2, double>(z, n, seed), 2);
    else
      write(hhg::scenes::make_zoo_scene<3, double>(z, n, seed), 3);
    return 0;
  }
  throw input_error("unknown scene '" + args[0] + "' (hhg_mpi scene list: the names)");
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  int status = 0;
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (!args.empty() && args[0] == "scene") {
      status = scene_command(std::vector<std::string>(args.begin() + 1, args.end()));
    } else if (args.empty() || (args[0] != "pairs" && args[0] != "run")) {
      if (g_rank == 0)
        std::fprintf(stderr,
                     "usage: mpiexec -n P hhg_mpi pairs [--dim 2|3] [FILE]\n"
                     "       mpiexec -n P hhg_mpi run [--n N | --total N] [--steps S] [--seed S] [--varied] "
                     "[--dim 2|3] [--check]\n");
      status = 2;
    } else {
      const std::vector<std::string> rest(args.begin() + 1, args.end());
      status = args[0] == "pairs" ? pairs_command(rest) : run_command(rest);
    }
  } catch (const std::exception& e) {
    // Argument errors are the same on every rank; library errors are agreed.
    if (g_rank == 0) std::fprintf(stderr, "hhg_mpi: %s\n", e.what());
    status = 2;
  }
  MPI_Finalize();
  return status;
}
