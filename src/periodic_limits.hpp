// src/periodic_limits.hpp: the text of a periodic limit shared by
// periodic_box_problem (src/periodic.cpp) and the distributed structure,
// which counts its own images (src/distributed/distributed.cpp).
#pragma once

#include <string>

namespace hhg::detail {

/// "the box has more than 65536 images" (hhg::periodic_max_images).
std::string too_many_images_problem();

}  // namespace hhg::detail
