// apps/hhg/mpi_handoff.cpp: `mpiexec -n P hhg pairs|run ...` without MPI in hhg.
//
// hhg links no MPI. When a launcher started it as one of P > 1 ranks (OpenMPI
// sets OMPI_COMM_WORLD_SIZE, MPICH / Intel MPI PMI_SIZE, MVAPICH
// MV2_COMM_WORLD_SIZE), `pairs` and `run` replace the process with the
// `hhg_mpi` program (same arguments, same environment, so it joins the same MPI
// job): the executable named by HHG_MPI, else `hhg_mpi` in hhg's own directory
// (the build tree and the install's bin/ both put it there). Without it, or
// for a subcommand that does not run distributed, every rank exits with
// status 2 and rank 0 says why: never P copies of the serial output. With one
// rank, or outside a launcher, hhg is the serial tool.
#include <limits.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

namespace hhg::cli {

namespace {

long env_number(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return -1;
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  return *end == '\0' && x >= 0 ? x : -1;
}

long first_of(std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (const long v = env_number(n); v >= 0) return v;
  return -1;
}

/// The directory of the running executable ("" when unknown).
std::string own_directory() {
  std::vector<char> buf(PATH_MAX + 1);
  const ssize_t n = ::readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  if (n <= 0) return {};
  std::string path(buf.data(), static_cast<std::size_t>(n));
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

// The exit status 2 of a refusal. Only rank 0 prints why; the other ranks
// wait a moment first, so that the launcher, which ends the whole job when
// any rank fails, does not stop rank 0 before its message is out (seen under
// AddressSanitizer: no message at all).
int refused(long rank) {
  if (rank != 0) ::usleep(500000);
  return 2;
}

}  // namespace

/// Returns -1 to run serially, else the exit status (on a successful exec it
/// does not return).
int mpi_handoff(int argc, char** argv) {
  const long size = first_of({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE"});
  long rank = first_of({"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "MV2_COMM_WORLD_RANK"});
  // A launcher that gives a rank but no size (PMIx alone): more than one rank
  // is certain only for rank > 0; rank 0 then hands off when it can.
  const bool several = size > 1 || (size < 0 && rank > 0);
  const bool maybe = size < 0 && rank == 0;
  if (!several && !maybe) return -1;
  if (rank < 0) rank = 0;
  const std::string command = argc > 1 ? argv[1] : "";
  const bool distributed = command == "pairs" || command == "run";
  const bool serial_only = command == "replay" || command == "bench" || command == "query" || command == "neighbors";
  if (!distributed && !serial_only) {  // --help, --version, usage errors: once, from rank 0
    if (rank == 0) return -1;
    return several ? 0 : -1;
  }
  const std::string ranks = size > 1 ? std::to_string(size) + " ranks" : "several ranks";
  if (serial_only) {
    if (maybe) return -1;
    if (rank == 0)
      std::fprintf(stderr,
                   "hhg: 'hhg %s' does not run distributed (started by mpiexec with %s): run it without mpiexec "
                   "or with -n 1; 'pairs' and 'run' run distributed through hhg_mpi\n",
                   command.c_str(), ranks.c_str());
    return refused(rank);
  }
  std::string target;
  if (const char* explicit_path = std::getenv("HHG_MPI"); explicit_path != nullptr && *explicit_path != '\0')
    target = explicit_path;
  else if (const std::string dir = own_directory(); !dir.empty())
    target = dir + "/hhg_mpi";
  if (!target.empty() && ::access(target.c_str(), X_OK) == 0) {
    std::vector<char*> args(argv, argv + argc);
    args.push_back(nullptr);
    args[0] = target.data();
    ::execv(target.c_str(), args.data());
    if (rank == 0) std::fprintf(stderr, "hhg: cannot start %s: %s\n", target.c_str(), std::strerror(errno));
    return refused(rank);
  }
  if (maybe) return -1;  // rank 0 of an unknown number of ranks, no hhg_mpi: serial
  if (rank == 0)
    std::fprintf(stderr,
                 "hhg: started by mpiexec with %s, but the distributed 'hhg %s' needs the hhg_mpi program, "
                 "which was not found (%s; set HHG_MPI to its path): build hhg with MPI, or run hhg without "
                 "mpiexec\n",
                 ranks.c_str(), command.c_str(), target.empty() ? "hhg's directory is unknown" : target.c_str());
  return refused(rank);
}

}  // namespace hhg::cli
