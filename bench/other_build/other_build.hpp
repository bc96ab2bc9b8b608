// The hash grid built a second time with other compiler flags, behind an
// interface of plain types, for hhg_paired's lane `hhg-other`.
//
// Why: the host's speed swings by 20-50 % between seconds, so two builds run
// as two processes compare two machine phases. other_build.cpp and the
// library's sources are compiled again with HHG_BENCH_OTHER_FLAGS (CMake;
// default -march=native) and the namespace renamed (-Dhhg=hhg_other), and
// linked into hhg_paired next to the default build: both step one scene
// alternately in one process (stop 77 found a -march=native build 1.5-1.8x
// slower in detection this way; docs/hash_grids.md, Detection).
#pragma once

#include <cstddef>

namespace other_build {

struct grid;

/// A hash grid (3D, double; default config) holding `n` boxes inserted as one
/// batch and then `k` more one by one; boxes are 6 doubles (min xyz, max xyz).
grid* create(const double* boxes, std::size_t n, const double* more, std::size_t k);

/// Moves the n batch boxes to `boxes` (one batch move), then finds the pairs;
/// returns their number and the two phases' times in milliseconds.
std::size_t step(grid* g, const double* boxes, std::size_t n, double* update_ms, double* detect_ms);

void destroy(grid* g) noexcept;

/// The flags this build was compiled with.
const char* flags() noexcept;

}  // namespace other_build
