// hhg/detail/checks.hpp: input checks shared by every method (not public API).
#pragma once

#include <string>

#include "hhg/box.hpp"
#include "hhg/error.hpp"

namespace hhg::detail {

/// Throws hhg::error naming the problem and the axis if `b` is not a valid box.
template <int D, class T>
void require_valid_box(const box<D, T>& b) {
  int axis = -1;
  switch (check_box(b, &axis)) {
    case box_problem::none: return;
    case box_problem::nan_coordinate:
      throw error(errc::nan_coordinate, "hhg: box coordinate is NaN on axis " + std::to_string(axis));
    case box_problem::inverted:
      throw error(errc::inverted_box, "hhg: box has min > max on axis " + std::to_string(axis));
  }
}

[[noreturn]] inline void throw_invalid_handle(const char* operation) {
  throw error(errc::invalid_handle,
              std::string("hhg: ") + operation + ": handle is null, stale, unknown or already removed");
}

}  // namespace hhg::detail
