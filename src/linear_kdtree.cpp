// The linear kd-tree (see include/hhg/linear_kdtree.hpp).
//
// Implementation note. Everything after quantization is integer arithmetic on
// the B-bit coordinates: a box's node is the longest common prefix of the
// Morton codes of its corners; the first differing bit names the cutting plane
// (its axis is the bit's position modulo D, counted from the top; its
// position is where that bit of the coordinate turns to 1). Splitting cuts the
// integer box there into [lo, plane - 1] and [plane, hi] when the axis has not
// been split yet, and places both halves recursively (at most one cut per
// axis, 2^D records); the split is kept only if the nodes of all the records
// it produced are smaller in total than the parent's node (the paper
// suppresses splits that do not reduce the volume; judging the first cut
// alone would refuse most splits, since a half usually still crosses a plane
// of another axis and stays in a node just one level down).
// Sub-boxes of one element partition its integer box, so for two overlapping
// elements some pair of their sub-boxes overlaps and their nodes nest.
#include "hhg/linear_kdtree.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

namespace hhg {

namespace {

// Spreads the low `bits` bits of v so that bit i lands on bit i * D.
template <int D>
std::uint64_t spread(std::uint64_t v) {
  std::uint64_t out = 0;
  constexpr unsigned bits = D == 2 ? 31 : 21;
  for (unsigned i = 0; i < bits; ++i) out |= ((v >> i) & 1u) << (i * D);
  return out;
}

template <int D>
std::uint64_t morton(const std::array<std::uint64_t, D>& c) {
  std::uint64_t code = 0;
  for (int k = 0; k < D; ++k) code |= spread<D>(c[k]) << (D - 1 - k);  // x on top
  return code;
}

}  // namespace

template <int D, class T>
void linear_kdtree<D, T>::place(std::uint32_t element, std::array<std::uint64_t, D> lo, std::array<std::uint64_t, D> hi,
                                unsigned split_axes) {
  const std::uint64_t cl = morton<D>(lo), ch = morton<D>(hi);
  const std::uint64_t diff = cl ^ ch;
  const unsigned len = diff == 0 ? kTotal : kTotal - 1 - static_cast<unsigned>(std::bit_width(diff) - 1);
  if (diff != 0 && split_) {
    const unsigned pos = static_cast<unsigned>(std::bit_width(diff) - 1);  // bit index from the bottom
    const unsigned from_top = kTotal - 1 - pos;
    const int axis = static_cast<int>(from_top % D);
    const unsigned level_bit = kBits - 1 - from_top / D;  // bit of the coordinate
    if (!(split_axes & (1u << axis))) {
      const std::uint64_t plane = (hi[axis] >> level_bit) << level_bit;  // first coordinate with the bit set
      std::array<std::uint64_t, D> left_hi = hi, right_lo = lo;
      left_hi[axis] = plane - 1;
      right_lo[axis] = plane;
      // Split tentatively (the halves may split further on other axes) and
      // keep the split only if the records' nodes are smaller in total than
      // this node (the paper suppresses splits that do not reduce volume).
      const std::size_t before = records_.size();
      place(element, lo, left_hi, split_axes | 1u << axis);
      place(element, right_lo, hi, split_axes | 1u << axis);
      long double kids = 0;
      for (std::size_t i = before; i < records_.size(); ++i)
        kids += std::ldexp(1.0L, static_cast<int>(kTotal - records_[i].len));
      if (kids < std::ldexp(1.0L, static_cast<int>(kTotal - len))) return;
      records_.resize(before);
    }
  }
  const std::uint64_t mask = len == 0 ? 0 : ~std::uint64_t{0} << (kTotal - len);
  records_.push_back({cl & mask, len, element});
}

template <int D, class T>
void linear_kdtree<D, T>::build() {
  const auto boxes = this->table_.boxes();
  records_.clear();
  // root cell: the finite extent of all coordinates
  std::array<double, D> lo, hi;
  lo.fill(std::numeric_limits<double>::infinity());
  hi.fill(-std::numeric_limits<double>::infinity());
  for (const auto& b : boxes)
    for (int k = 0; k < D; ++k)
      for (const double v : {static_cast<double>(b.min[k]), static_cast<double>(b.max[k])})
        if (std::isfinite(v)) {
          lo[k] = std::min(lo[k], v);
          hi[k] = std::max(hi[k], v);
        }
  const double cells = std::ldexp(1.0, kBits);
  for (int k = 0; k < D; ++k) {
    if (!(lo[k] <= hi[k])) lo[k] = hi[k] = 0;
    origin_[k] = lo[k];
    const double extent = hi[k] - lo[k];
    scale_[k] = extent > 0 && std::isfinite(cells / extent) ? cells / extent : 0.0;
  }
  const std::uint64_t top = (std::uint64_t{1} << kBits) - 1;
  auto quantize = [&](double v, int k) -> std::uint64_t {
    // monotone in v: subtract, scale, floor, clamp (NaN from inf * 0 only
    // arises when every coordinate maps to 0)
    const double t = (v - origin_[k]) * scale_[k];
    if (!(t > 0)) return 0;
    if (t >= static_cast<double>(top)) return top;
    return static_cast<std::uint64_t>(t);
  };
  node_volume_ = 0;
  for (std::uint32_t i = 0; i < boxes.size(); ++i) {
    std::array<std::uint64_t, D> a{}, b{};
    for (int k = 0; k < D; ++k) {
      a[k] = quantize(static_cast<double>(boxes[i].min[k]), k);
      b[k] = quantize(static_cast<double>(boxes[i].max[k]), k);
    }
    place(i, a, b, 0);
  }
  // node volumes in scene units: a node of length len has, per axis,
  // 2^(B - cuts on that axis) integer cells of edge 1 / scale
  for (const record& r : records_) {
    double v = 1;
    for (int k = 0; k < D; ++k) {
      const unsigned cuts = r.len / D + (static_cast<unsigned>(k) < r.len % D ? 1 : 0);
      v *= scale_[k] > 0 ? std::ldexp(1.0, static_cast<int>(kBits - cuts)) / scale_[k] : 0.0;
    }
    node_volume_ += v;
  }
  std::sort(records_.begin(), records_.end(),
            [](const record& x, const record& y) { return x.code < y.code || (x.code == y.code && x.len < y.len); });
}

template <int D, class T>
void linear_kdtree<D, T>::for_each_pair(pair_callback f) {
  build();
  const auto boxes = this->table_.boxes();
  const auto ids = this->table_.ids();
  box_tests_ = candidates_ = unique_ = 0;
  keys_.clear();
  const bool repeats = split_;  // one record per element without splitting: no repeats
  sweep([&](std::uint32_t a, std::uint32_t b) {
    ++candidates_;
    if (count_unique_) keys_.push_back(std::uint64_t{std::min(a, b)} << 32 | std::max(a, b));
    if (count_unique_ || !repeats) {
      if (!repeats) {
        ++box_tests_;
        if (overlaps(boxes[a], boxes[b])) f(ids[a], ids[b]);
      }
      return;
    }
    ++box_tests_;
    if (overlaps(boxes[a], boxes[b])) keys_.push_back(std::uint64_t{std::min(a, b)} << 32 | std::max(a, b));
  });
  if (!repeats) {
    unique_ = candidates_;
    return;
  }
  std::sort(keys_.begin(), keys_.end());
  keys_.erase(std::unique(keys_.begin(), keys_.end()), keys_.end());
  if (count_unique_) {
    unique_ = keys_.size();
    box_tests_ = 0;
    for (const std::uint64_t k : keys_) {
      const auto a = static_cast<std::uint32_t>(k >> 32), b = static_cast<std::uint32_t>(k);
      ++box_tests_;
      if (overlaps(boxes[a], boxes[b])) f(ids[a], ids[b]);
    }
    return;
  }
  for (const std::uint64_t k : keys_) f(ids[k >> 32], ids[static_cast<std::uint32_t>(k)]);
}

template <int D, class T>
void linear_kdtree<D, T>::find_pairs(std::vector<handle_pair>& out) {
  out.clear();
  for_each_pair([&out](handle a, handle b) { out.push_back({a, b}); });
}

template <int D, class T>
std::size_t linear_kdtree<D, T>::bytes() const noexcept {
  return this->table_.bytes() + records_.capacity() * sizeof(record) + keys_.capacity() * 8;
}

template class linear_kdtree<2, float>;
template class linear_kdtree<2, double>;
template class linear_kdtree<3, float>;
template class linear_kdtree<3, double>;

}  // namespace hhg
