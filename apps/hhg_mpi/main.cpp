// apps/hhg_mpi/main.cpp: `hhg_mpi`, the command line of hhg::distributed_hash_grids.
//
//   mpiexec -n P hhg_mpi pairs [--dim 2|3] [--periodic AXES --domain BOUNDS] [FILE]
//       Prints exactly what `hhg pairs FILE` prints: every overlapping pair
//       'i j' (0-based box lines, i < j), sorted; with --periodic, what
//       `hhg pairs --periodic AXES --domain BOUNDS FILE` prints ('i j s_1 .. s_D').
//       Rank 0 reads and writes; box i is inserted on rank i % P, the ranks
//       find the pairs they own, rank 0 gathers and sorts them. The input is
//       read by the code of `hhg pairs` itself (library hhg_cli_input: a bad
//       line gives the same message, status 2, no output).
//       `mpiexec -n P hhg pairs ...` (P > 1) runs this program (apps/hhg/mpi_handoff.cpp).
//   mpiexec -n P hhg_mpi run [--n N | --total N] [--steps S] [--seed S] [--scenario equal|varied]
//                            [--dim 2|3] [--periodic AXES] [--check]
//       The thesis scenario (hhg/scenes.hpp, equal cubes or sizes 1..12),
//       distributed: N objects per rank (weak scaling; default 100000) or N in
//       total. Every rank steps the whole scenario (not timed) and moves the
//       objects it owns; timed per step: the moves, the collective exchange
//       and the detection. Reports per step the time (max over ranks), ghosts
//       per rank, bytes sent, imbalance and pairs. --check compares every step's
//       pairs (gathered on rank 0) with a serial hhg::hash_grids (with
//       --periodic: hhg::periodic_pairs, the scenario's domain [0, edge)
//       wrapping on AXES): status 1 on a difference.
#include <mpi.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "hhg/distributed.hpp"
#include "hhg/hash_grids.hpp"
#include "hhg/scenes.hpp"
#include "input.hpp"
#include "io.hpp"
#include "parse.hpp"
#include "status.hpp"

namespace {

int g_rank = 0, g_size = 1;

using hhg::cli::input_error;

/// The message and exit status of an error, as hhg gives them (status.hpp:
/// bad input, usage and hhg::error 2; out of memory and other failures 1),
/// with one addition: hhg::errc::capacity is a failure (1). The distributed
/// structure reports a rank that ran out of memory (or failed otherwise)
/// inside a collective step as errc::capacity on every rank ("rank 1 failed
/// during the local detection (out of memory)"), and its other capacity
/// errors are limits of the machine too (more than 2 GiB in one exchange).
hhg::cli::failure failure_of(std::exception_ptr e) {
  hhg::cli::failure f = hhg::cli::describe_failure(e);
  try {
    std::rethrow_exception(e);
  } catch (const hhg::error& x) {
    if (x.code() == hhg::errc::capacity) f.status = hhg::cli::exit_failure;
  } catch (...) {
  }
  return f;
}

template <int D>
std::vector<double> scatter_boxes(const std::vector<double>& flat_all, std::uint64_t n);

template <int D>
void distributed_pairs(const std::vector<double>& flat_all, std::uint64_t n) {
  const std::vector<double> mine = scatter_boxes<D>(flat_all, n);
  std::vector<int> counts(g_size, 0), displs(g_size, 0);
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

/// Box i to rank i % P: rank 0 sends each rank its share (flat doubles, 2*D a box).
template <int D>
std::vector<double> scatter_boxes(const std::vector<double>& flat_all, std::uint64_t n) {
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
  std::vector<double> mine(static_cast<std::size_t>(my_count));
  MPI_Scatterv(ordered.data(), counts.data(), displs.data(), MPI_DOUBLE, mine.data(), my_count, MPI_DOUBLE, 0,
               MPI_COMM_WORLD);
  return mine;
}

/// Gathers every rank's numbers on rank 0 (empty elsewhere); fails clearly on
/// every rank beyond MPI's int counts.
std::vector<std::int64_t> gather_on_root(const std::vector<std::int64_t>& flat) {
  long long my_numbers = static_cast<long long>(flat.size());
  std::vector<long long> all_numbers(g_size);
  MPI_Gather(&my_numbers, 1, MPI_LONG_LONG, all_numbers.data(), 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  std::vector<int> counts(g_size, 0), displs(g_size, 0);
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
  if (too_many) throw std::runtime_error("too many pairs to gather on rank 0 (more than 2^31 numbers)");
  std::vector<std::int64_t> all(g_rank == 0 ? static_cast<std::size_t>(total) : 0);
  MPI_Gatherv(flat.data(), static_cast<int>(flat.size()), MPI_INT64_T, all.data(), counts.data(), displs.data(),
              MPI_INT64_T, 0, MPI_COMM_WORLD);
  return all;
}

/// `--periodic`: the periodic pairs over the ranks, printed by rank 0 exactly
/// as `hhg pairs --periodic` prints them (sorted by (i, j, shift)).
template <int D>
void distributed_periodic_pairs(const std::vector<double>& flat_all, std::uint64_t n,
                                const hhg::periodic_domain<D, double>& d) {
  const std::vector<double> mine = scatter_boxes<D>(flat_all, n);
  hhg::distributed_hash_grids<D, double> g(MPI_COMM_WORLD, d);
  for (std::size_t k = 0; k < mine.size() / (2 * D); ++k) {
    hhg::box<D, double> b;
    for (int a = 0; a < D; ++a) {
      b.min[a] = mine[2 * D * k + a];
      b.max[a] = mine[2 * D * k + D + a];
    }
    g.insert(static_cast<std::uint64_t>(g_rank) + k * static_cast<std::uint64_t>(g_size), b);
  }
  std::vector<hhg::periodic_id_pair<D>> pairs;
  g.find_pairs(pairs);
  std::vector<std::int64_t> flat;
  flat.reserve((2 + D) * pairs.size());
  for (const auto& p : pairs) {
    flat.push_back(static_cast<std::int64_t>(p.a));
    flat.push_back(static_cast<std::int64_t>(p.b));
    for (int a = 0; a < D; ++a) flat.push_back(p.shift[a]);
  }
  const std::vector<std::int64_t> all = gather_on_root(flat);
  if (g_rank != 0) return;
  std::vector<hhg::periodic_id_pair<D>> sorted(all.size() / (2 + D));
  for (std::size_t k = 0; k < sorted.size(); ++k) {
    sorted[k].a = static_cast<std::uint64_t>(all[(2 + D) * k]);
    sorted[k].b = static_cast<std::uint64_t>(all[(2 + D) * k + 1]);
    for (int a = 0; a < D; ++a) sorted[k].shift[a] = static_cast<std::int32_t>(all[(2 + D) * k + 2 + a]);
  }
  std::sort(sorted.begin(), sorted.end());
  hhg::cli::output out(stdout);
  for (const auto& p : sorted) hhg::cli::put_periodic_pair<D>(out, p.a, p.b, p.shift);
  out.flush();
}

/// A subcommand's arguments read as hhg's own parser (CLI11) reads them, so
/// that `mpiexec -n P hhg pairs ...` takes what `hhg pairs ...` takes:
/// `--flag=value` is `--flag value`, `--` ends the options (the arguments after
/// it are operands, returned after a lone "--"), and a flag given twice is an
/// error (until stop 79 the last one won, where hhg refuses the line;
/// `--dim=2` and `--` were unknown options).
std::vector<std::string> normalized(const std::vector<std::string>& args, const std::string& command) {
  std::vector<std::string> out;
  std::vector<std::string> seen;
  for (std::size_t k = 0; k < args.size(); ++k) {
    const std::string& a = args[k];
    if (a == "--") {
      out.insert(out.end(), args.begin() + static_cast<std::ptrdiff_t>(k), args.end());
      break;
    }
    std::string flag = a, value;
    bool has_value = false;
    if (a.size() > 2 && a.compare(0, 2, "--") == 0 && a.find('=') != std::string::npos) {
      flag = a.substr(0, a.find('='));
      value = a.substr(a.find('=') + 1);
      has_value = true;
    }
    const bool number = flag.size() > 1 && (std::isdigit(static_cast<unsigned char>(flag[1])) || flag[1] == '.');
    if (flag.size() > 1 && flag[0] == '-' && !number) {  // (a value such as -5,5 is no flag)
      if (std::find(seen.begin(), seen.end(), flag) != seen.end())
        throw input_error(command + ": " + flag + " given more than once");
      seen.push_back(flag);
    }
    out.push_back(flag);
    if (has_value) out.push_back(value);
  }
  return out;
}

/// `--help` or `-h` among a subcommand's options (before any `--`).
bool asks_help(const std::vector<std::string>& args) {
  for (const std::string& a : args) {
    if (a == "--") return false;
    if (a == "--help" || a == "-h") return true;
  }
  return false;
}

constexpr const char* kUsage =
    "usage: mpiexec -n P hhg_mpi pairs [--dim 2|3] [--periodic AXES --domain BOUNDS] [FILE]\n"
    "       mpiexec -n P hhg_mpi run [--n N | --total N] [--steps S] [--seed S] "
    "[--scenario equal|varied] [--dim 2|3] [--periodic AXES] [--check]\n"
    "(mpiexec -n P hhg pairs|run ... starts this program; docs/distributed.md)\n";

int pairs_command(const std::vector<std::string>& raw) {
  const std::vector<std::string> args = normalized(raw, "pairs");
  std::string file, periodic, domain;
  bool have_file = false, operands = false;
  int dim_flag = 0;
  for (std::size_t k = 0; k < args.size(); ++k) {
    auto value = [&]() -> std::string {
      if (k + 1 >= args.size()) throw input_error(args[k] + " needs a value");
      return args[++k];
    };
    if (!operands && args[k] == "--") {
      operands = true;
    } else if (operands) {
      if (have_file) throw input_error("pairs: unexpected argument '" + args[k] + "'");
      file = args[k];
      have_file = true;
    } else if (args[k] == "--dim") {
      const std::string v = value();
      if (v != "2" && v != "3") throw input_error("--dim must be 2 or 3");
      dim_flag = v[0] - '0';
    } else if (args[k] == "--periodic") {
      periodic = value();
    } else if (args[k] == "--domain") {
      domain = value();
    } else if (args[k].size() > 1 && args[k][0] == '-') {
      throw input_error("pairs: unknown option '" + args[k] +
                        "' (distributed: --dim, --periodic, --domain; the other flags of hhg pairs run serially only)");
    } else if (!have_file) {
      file = args[k];
      have_file = true;
    } else {
      throw input_error("pairs: unexpected argument '" + args[k] + "'");
    }
  }
  if (periodic.empty() != domain.empty())
    throw input_error(periodic.empty() ? "pairs: --domain needs --periodic AXES (which axes wrap around)"
                                       : "pairs: --periodic needs --domain LO,HI (the periodic domain)");
  // Rank 0 reads and checks (the format of hhg pairs: the same library); a bad
  // input stops every rank with the same status.
  std::vector<double> flat;
  char message[512] = {};
  int status = 0, dim = 3;
  hhg::periodic_domain<3, double> d3{};
  hhg::periodic_domain<2, double> d2{};
  if (g_rank == 0) {
    try {
      hhg::cli::line_reader in(file);
      dim = hhg::cli::read_dimension(in, dim_flag);
      if (!periodic.empty()) {
        if (dim == 2)
          d2 = hhg::cli::parse_periodic<2>(periodic, domain);
        else
          d3 = hhg::cli::parse_periodic<3>(periodic, domain);
      }
      auto flatten = [&](const auto& boxes) {
        constexpr int D = std::decay_t<decltype(boxes[0])>::dimension;
        flat.reserve(2 * D * boxes.size());
        for (const auto& b : boxes) {
          for (int a = 0; a < D; ++a) flat.push_back(b.min[a]);
          for (int a = 0; a < D; ++a) flat.push_back(b.max[a]);
        }
      };
      // (with --periodic a box beyond the domain's limits is a bad line too,
      // named as hhg pairs names it: one check, in read_boxes)
      if (dim == 2)
        flatten(hhg::cli::read_boxes<2>(in, periodic.empty() ? nullptr : &d2));
      else
        flatten(hhg::cli::read_boxes<3>(in, periodic.empty() ? nullptr : &d3));
    } catch (...) {  // (out of memory while reading: status 1, as hhg; until stop 80 it was 2)
      const hhg::cli::failure f = failure_of(std::current_exception());
      std::snprintf(message, sizeof message, "%s", f.message.c_str());
      status = f.status;
    }
  }
  MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (status != 0) {
    if (g_rank == 0) std::fprintf(stderr, "%s\n", message);
    return status;
  }
  MPI_Bcast(&dim, 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::uint64_t n = flat.size() / (2 * static_cast<std::size_t>(dim));
  MPI_Bcast(&n, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  if (periodic.empty()) {
    if (dim == 2)
      distributed_pairs<2>(flat, n);
    else
      distributed_pairs<3>(flat, n);
    return 0;
  }
  // The domain, as rank 0 read it (the others parsed nothing).
  auto share = [](auto& d) {
    constexpr int D = std::tuple_size_v<std::decay_t<decltype(d.periodic)>>;
    double v[3 * D];
    for (int a = 0; a < D; ++a) {
      v[3 * a] = d.bounds.min[a];
      v[3 * a + 1] = d.bounds.max[a];
      v[3 * a + 2] = d.periodic[a] ? 1 : 0;
    }
    MPI_Bcast(v, 3 * D, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    for (int a = 0; a < D; ++a) {
      d.bounds.min[a] = v[3 * a];
      d.bounds.max[a] = v[3 * a + 1];
      d.periodic[a] = v[3 * a + 2] != 0;
    }
  };
  if (dim == 2) {
    share(d2);
    distributed_periodic_pairs<2>(flat, n, d2);
  } else {
    share(d3);
    distributed_periodic_pairs<3>(flat, n, d3);
  }
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

/// --check with --periodic: the union of the ranks' periodic pairs against
/// hhg::periodic_pairs of the same boxes (rank 0); true on every rank when equal.
template <int D>
bool check_periodic_step(const std::vector<hhg::periodic_id_pair<D>>& mine,
                         const std::vector<hhg::box<D, double>>& boxes, const hhg::periodic_domain<D, double>& d) {
  std::vector<std::int64_t> flat;
  for (const auto& p : mine) {
    flat.push_back(static_cast<std::int64_t>(p.a));
    flat.push_back(static_cast<std::int64_t>(p.b));
    for (int a = 0; a < D; ++a) flat.push_back(p.shift[a]);
  }
  const std::vector<std::int64_t> all = gather_on_root(flat);
  int ok = 1;
  if (g_rank == 0) {
    std::vector<hhg::periodic_id_pair<D>> got(all.size() / (2 + D)), want;
    for (std::size_t k = 0; k < got.size(); ++k) {
      got[k].a = static_cast<std::uint64_t>(all[(2 + D) * k]);
      got[k].b = static_cast<std::uint64_t>(all[(2 + D) * k + 1]);
      for (int a = 0; a < D; ++a) got[k].shift[a] = static_cast<std::int32_t>(all[(2 + D) * k + 2 + a]);
    }
    std::sort(got.begin(), got.end());
    std::vector<hhg::periodic_pair<D>> serial;
    hhg::periodic_pairs(d, std::span<const hhg::box<D, double>>(boxes), serial);
    for (const auto& p : serial) want.push_back(hhg::periodic_id_pair<D>{p.a, p.b, p.shift});
    ok = got == want ? 1 : 0;
    if (!ok)
      std::fprintf(stderr, "hhg run --check: %zu periodic pairs over the ranks, %zu from hhg::periodic_pairs\n",
                   got.size(), want.size());
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return ok == 1;
}

struct run_settings {
  std::uint64_t total = 0, seed = 1;
  int steps = 10;
  bool varied = false, check = false;
  std::string periodic;  // axes, empty: not periodic
};

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

/// The thesis scenario, distributed. Per step, after a barrier: the moves of
/// the objects a rank owns and the collective find_pairs, timed on every rank;
/// reported: the maximum over ranks (the step's wall time), the parts
/// (exchange = commit, detection), ghosts per rank, bytes sent per rank,
/// imbalance, migrations and pairs. The summary gives medians over the steps
/// after the first (which inserts, bisects and migrates everything).
template <int D>
int run_scenario(const run_settings& o) {
  hhg::scenes::thesis_params p;
  p.n = o.total;
  p.seed = o.seed;
  if (o.varied) p.size_max = 12;
  hhg::scenes::thesis_scenario<D, double> scene(p);
  const bool periodic = !o.periodic.empty();
  hhg::periodic_domain<D, double> d{};
  if (periodic) {
    // The scenario's own domain [0, edge) wraps on the chosen axes.
    d = hhg::cli::parse_periodic<D>(o.periodic, "0,1");
    for (int a = 0; a < D; ++a) {
      d.bounds.min[a] = 0;
      d.bounds.max[a] = scene.domain()[static_cast<std::size_t>(a)];
    }
  }
  std::unique_ptr<hhg::distributed_hash_grids<D, double>> gp =
      periodic ? std::make_unique<hhg::distributed_hash_grids<D, double>>(MPI_COMM_WORLD, d)
               : std::make_unique<hhg::distributed_hash_grids<D, double>>(MPI_COMM_WORLD);
  hhg::distributed_hash_grids<D, double>& g = *gp;
  const auto& boxes = scene.boxes();
  const std::uint64_t total = o.total;
  for (std::uint64_t i = static_cast<std::uint64_t>(g_rank); i < total; i += static_cast<std::uint64_t>(g_size))
    g.insert(i, boxes[i]);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> pairs;
  std::vector<hhg::periodic_id_pair<D>> ppairs;
  if (g_rank == 0)
    std::printf(
        "# hhg_mpi run: %d ranks, %llu objects (%s), %dD, %d steps, seed %llu%s%s\n"
        "# step  time_ms(max)  exchange_ms(max)  detect_ms(max)  owned(max)  ghosts(avg)  ghosts(max)  "
        "ghost_fraction  sent_bytes(avg/rank)  sent_bytes(max)  imbalance  migrated  pairs\n",
        g_size, static_cast<unsigned long long>(total), o.varied ? "sizes 1..12" : "equal cubes", D, o.steps,
        static_cast<unsigned long long>(o.seed), periodic ? ", periodic " : "", o.periodic.c_str());
  std::vector<double> times, exchange, detect, fraction, sent;
  std::vector<std::uint64_t> ids;
  for (int step = 0; step <= o.steps; ++step) {
    if (step > 0) {
      scene.step();  // not timed: every rank steps the whole scene
      ids = g.owned_ids();
    }
    MPI_Barrier(MPI_COMM_WORLD);  // every rank starts the timed part together
    const double t0 = MPI_Wtime();
    for (const std::uint64_t id : ids) g.move(id, boxes[id]);
    if (periodic)
      g.find_pairs(ppairs);
    else
      g.find_pairs(pairs);
    const double t = MPI_Wtime() - t0;
    if (o.check && !(periodic ? check_periodic_step<D>(ppairs, boxes, d) : check_step<D>(pairs, boxes))) {
      if (g_rank == 0) std::fprintf(stderr, "hhg run --check: step %d differs\n", step);
      return 1;
    }
    const auto& st = g.stats();
    double mx[6] = {t,
                    st.commit_seconds,
                    st.detect_seconds,
                    static_cast<double>(st.owned),
                    static_cast<double>(st.ghosts),
                    static_cast<double>(st.bytes_sent)};
    double mx_out[6];
    MPI_Reduce(mx, mx_out, 6, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    double sums[5] = {static_cast<double>(st.ghosts), static_cast<double>(st.bytes_sent), static_cast<double>(st.pairs),
                      static_cast<double>(st.migrated_out), static_cast<double>(st.owned)};
    double sums_out[5];
    MPI_Reduce(sums, sums_out, 5, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (g_rank == 0) {
      const double frac = sums_out[4] > 0 ? sums_out[0] / sums_out[4] : 0.0;
      if (step > 0) {
        times.push_back(mx_out[0]);
        exchange.push_back(mx_out[1]);
        detect.push_back(mx_out[2]);
        fraction.push_back(frac);
        sent.push_back(sums_out[1] / g_size);
      }
      std::printf("%6d  %12.2f  %16.2f  %14.2f  %10.0f  %11.0f  %11.0f  %14.4f  %20.0f  %15.0f  %9.3f  %8.0f  %.0f%s\n",
                  step, 1e3 * mx_out[0], 1e3 * mx_out[1], 1e3 * mx_out[2], mx_out[3], sums_out[0] / g_size, mx_out[4],
                  frac, sums_out[1] / g_size, mx_out[5], st.imbalance, sums_out[3], sums_out[2],
                  step == 0 ? "  (initial: insertion, first bisection)" : "");
    }
  }
  if (g_rank == 0 && !times.empty()) {
    const double m = median(times);
    std::printf(
        "# median over %zu steps: step %.2f ms (exchange %.2f, detection %.2f; max over ranks) = %.1f ns per object "
        "per step; ghost fraction %.4f; sent %.0f bytes per rank per step\n",
        times.size(), 1e3 * m, 1e3 * median(exchange), 1e3 * median(detect), 1e9 * m / static_cast<double>(total),
        median(fraction), median(sent));
  }
  return 0;
}

int run_command(const std::vector<std::string>& raw) {
  const std::vector<std::string> args = normalized(raw, "run");
  std::uint64_t per_rank = 100000;
  run_settings o;
  int dim = 3;
  auto integer = [](const std::string& flag, const std::string& v, std::uint64_t lo, std::uint64_t hi) {
    std::uint64_t x = 0;
    const auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), x, 10);
    if (ec != std::errc{} || ptr != v.data() + v.size() || x < lo || x > hi)
      throw input_error("run: " + flag + " must be an integer from " + std::to_string(lo) + " to " +
                        std::to_string(hi) + ", found '" + v + "'");
    return x;
  };
  for (std::size_t k = 0; k < args.size(); ++k) {
    auto value = [&]() -> std::string {
      if (k + 1 >= args.size()) throw input_error("run: " + args[k] + " needs a value");
      return args[++k];
    };
    const std::string& a = args[k];
    if (a == "--n" || a == "-n") {  // (-n: hhg run's short form)
      per_rank = integer(a, value(), 1, std::uint64_t{1} << 32);
    } else if (a == "--total") {
      o.total = integer(a, value(), 1, std::uint64_t{1} << 32);
    } else if (a == "--steps") {
      o.steps = static_cast<int>(integer(a, value(), 0, 1000000));
    } else if (a == "--seed") {
      o.seed = integer(a, value(), 0, ~std::uint64_t{0});
    } else if (a == "--dim") {
      dim = static_cast<int>(integer(a, value(), 2, 3));
    } else if (a == "--varied") {
      o.varied = true;
    } else if (a == "--scenario") {  // the names of hhg run
      const std::string v = value();
      if (v != "equal" && v != "varied")
        throw input_error("run: distributed, --scenario is equal or varied, found '" + v + "'");
      o.varied = v == "varied";
    } else if (a == "--check") {
      o.check = true;
    } else if (a == "--periodic") {
      o.periodic = value();
    } else if (a == "--domain") {
      throw input_error("run: the scenario has its own domain ([0, edge) per axis): --periodic AXES alone");
    } else {
      throw input_error("run: unknown option '" + a +
                        "' (distributed: --n, --total, --steps, --seed, --dim, --scenario equal|varied, --varied, "
                        "--periodic, --check)");
    }
  }
  if (o.total == 0) o.total = per_rank * static_cast<std::uint64_t>(g_size);
  if (!o.periodic.empty()) {  // the axes, checked now (every rank alike)
    if (dim == 2)
      (void)hhg::cli::parse_periodic<2>(o.periodic, "0,1");
    else
      (void)hhg::cli::parse_periodic<3>(o.periodic, "0,1");
  }
  return dim == 2 ? run_scenario<2>(o) : run_scenario<3>(o);
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
  // (whole numbers only: until stop 79 "5junk" was 5, "-3" a huge seed, --dim 4 a 3-D scene)
  auto integer = [](const char* what, const std::string& v, std::uint64_t hi) {
    std::uint64_t x = 0;
    const auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), x, 10);
    if (v.empty() || ec != std::errc{} || ptr != v.data() + v.size() || x > hi)
      throw input_error(std::string("scene: ") + what + " must be an integer from 0 to " + std::to_string(hi) +
                        ", found '" + v + "'");
    return x;
  };
  if (args.size() == 5 && args[4] != "2" && args[4] != "3")
    throw input_error("scene: --dim must be 2 or 3, found '" + args[4] + "'");
  const int dim = args.size() == 5 ? args[4][0] - '0' : 3;
  for (const auto z : hhg::scenes::all_zoo_scenes()) {
    if (hhg::scenes::to_string(z) != args[0]) continue;
    const std::size_t n = integer("N", args[1], std::uint64_t{1} << 32);
    const std::uint64_t seed = integer("SEED", args[2], ~std::uint64_t{0});
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
      if (g_rank == 0) std::fputs(kUsage, stderr);
      status = 2;
    } else if (asks_help(args)) {  // (printed once; was "unknown option '--help'")
      if (g_rank == 0) std::fputs(kUsage, stdout);
    } else {
      const std::vector<std::string> rest(args.begin() + 1, args.end());
      status = args[0] == "pairs" ? pairs_command(rest) : run_command(rest);
    }
  } catch (...) {
    // Argument errors are the same on every rank; library errors are agreed.
    // The status is hhg's for the same error (README, "Exit status"): until
    // stop 80 every error here gave 2, out of memory included.
    const hhg::cli::failure f = failure_of(std::current_exception());
    if (g_rank == 0) std::fprintf(stderr, "%s\n", f.message.c_str());
    status = f.status;
  }
  MPI_Finalize();
  return status;
}
