// apps/hhg/box_file.hpp: reading a box file (the input of `hhg pairs`, also
// read by `hhg bench --boxes`): one box per line, `min_1 .. min_D max_1 .. max_D`
// (see parse.hpp for the line syntax and the `# dim N` header).
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "hhg/box.hpp"
#include "io.hpp"
#include "parse.hpp"

namespace hhg::cli {

/// Every box of the rest of `in`; throws input_error naming the line of the
/// first bad one.
template <int D>
std::vector<box<D, double>> read_boxes(line_reader& in) {
  std::vector<box<D, double>> boxes;
  std::vector<std::string_view> fields;
  std::string_view line;
  while (in.next(line)) {
    if (is_ignorable(line)) continue;
    constexpr std::size_t count = std::size_t{2} * D;
    const std::size_t found = split_fields(line, fields, count);
    if (found != count)
      fail_at(in.line_number(), "expected " + std::to_string(count) + " numbers, found " + std::to_string(found));
    boxes.push_back(parse_box<D>(fields, 0, in.line_number()));
  }
  if (boxes.size() > std::numeric_limits<std::uint32_t>::max())
    throw input_error("too many boxes (at most 4294967295)");
  return boxes;
}

}  // namespace hhg::cli
