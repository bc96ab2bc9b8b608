// apps/hhg/input.hpp: what `hhg pairs` and `hhg_mpi pairs` share beyond parse.hpp:
// reading a box file, the --periodic / --domain options and the text form of a
// periodic pair. Built with parse.cpp and io.cpp into the static library
// hhg_cli_input, which both executables link (one definition of the format).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hhg/box.hpp"
#include "hhg/periodic.hpp"
#include "io.hpp"

namespace hhg::cli {

/// The dimension of the input behind `in`: `dim_flag` (2 or 3) when given,
/// else the '# dim N' first line, else 3. Leaves `in` at its first line.
int read_dimension(line_reader& in, int dim_flag);

/// Every box of the input (one box a line, 2*D numbers; comments and blank
/// lines skipped). Throws input_error ("line N: ...") on the first bad line;
/// with `periodic`, a box beyond the limits of that domain is one too
/// ("line N: " and periodic_box_problem's text: the file's line, not the
/// box's index that hhg::periodic_pairs would name).
template <int D>
std::vector<box<D, double>> read_boxes(line_reader& in, const periodic_domain<D, double>* periodic = nullptr);

/// The domain of `--periodic AXES --domain BOUNDS`: AXES is a comma list of
/// axis names x, y, z (each at most once) or 'all'; BOUNDS is 'LO,HI' (every
/// periodic axis) or one 'LO,HI' per axis of the dimension ('LO_x,HI_x,LO_y,HI_y[,LO_z,HI_z]';
/// the bounds of non-periodic axes are ignored). On a periodic axis LO < HI,
/// both finite, with a finite period. Throws input_error naming the flag.
template <int D>
periodic_domain<D, double> parse_periodic(std::string_view axes, std::string_view bounds);

/// Appends the text line of a periodic pair: "i j s_1 .. s_D\n".
template <int D>
void put_periodic_pair(output& out, std::uint64_t i, std::uint64_t j, const std::array<std::int32_t, D>& shift);

}  // namespace hhg::cli
