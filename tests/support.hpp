// Shared test helpers: the method type lists, a "mirror" that drives a method
// and the brute-force oracle in lockstep and compares their pairs exactly, and
// random boxes for dynamic sequences.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iomanip>
#include <iterator>
#include <limits>
#include <span>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "hhg/box.hpp"
#include "hhg/broad_phase.hpp"
#include "hhg/brute_force.hpp"
#include "hhg/config.hpp"
#include "hhg/detail/tuning.hpp"
#include "hhg/handle.hpp"
#include "hhg/hash_grids.hpp"
#include "hhg/scenes.hpp"

namespace hhg {
// Readable gtest output for handles, pairs and boxes (found by ADL).
inline void PrintTo(const handle& h, std::ostream* os) { *os << '#' << h.index << '.' << h.generation; }
inline void PrintTo(const handle_pair& p, std::ostream* os) {
  *os << '(';
  PrintTo(p.a, os);
  *os << ", ";
  PrintTo(p.b, os);
  *os << ')';
}
template <int D, class T>
void PrintTo(const box<D, T>& b, std::ostream* os) {
  *os << std::setprecision(std::numeric_limits<T>::max_digits10) << '[';
  for (int i = 0; i < D; ++i) *os << (i ? " x " : "") << b.min[i] << ".." << b.max[i];
  *os << ']';
}
}  // namespace hhg

namespace hhg_test {

using hhg::box;
using hhg::brute_force;
using hhg::config;
using hhg::handle;
using hhg::handle_pair;
using hhg::hash_grids;

// The (dimension, scalar) variants of a method that a typed test runs on: all
// four, or with HHG_TEST_FEWER_VARIANTS two of them, 2D float and 3D double
// (each dimension and each scalar once). CI's sanitizer build sets it
// (scripts/test.sh): a typed test file then compiles 10-50 % faster and the
// suite's run time falls by a third (docs/reliability.md, stage 2); the
// Release build and the fuzzer (under the sanitizers) cover all four.
#ifdef HHG_TEST_FEWER_VARIANTS
#define HHG_TEST_VARIANTS(M) M<2, float>, M<3, double>
#else
#define HHG_TEST_VARIANTS(M) M<2, float>, M<2, double>, M<3, float>, M<3, double>
#endif

using grid_types = ::testing::Types<HHG_TEST_VARIANTS(hash_grids)>;
using method_types = ::testing::Types<HHG_TEST_VARIANTS(hash_grids), brute_force<2, float>, brute_force<3, double>>;

template <class M>
inline constexpr bool is_grids = std::is_same_v<M, hash_grids<M::dimension, typename M::scalar>>;

/// Names typed tests hhg_3d_float, brute_2d_double, sap_3d_double etc. from
/// M::method_name.
struct method_names {
  template <class M>
  static std::string GetName(int) {
    std::string name = M::method_name;  // appended piecewise: g++ 12 warns falsely on operator+ chains
    for (char& c : name)
      if (c == '-') c = '_';  // test names: letters, digits and underscores
    name += '_';
    name += static_cast<char>('0' + M::dimension);
    name += std::is_same_v<typename M::scalar, float> ? "d_float" : "d_double";
    return name;
  }
};

/// A method built with a hash grid configuration where it takes one.
template <class M>
M make_method(const config& c = {}) {
  if constexpr (std::is_constructible_v<M, const config&>) {
    return M(c);
  } else {
    (void)c;
    return M();
  }
}

/// Runs m.validate() where the method has one.
template <class M>
void validate(const M& m) {
  if constexpr (requires { m.validate(); }) m.validate();
}

/// A configuration with a name to print.
struct named_config {
  std::string name;
  config c;
};

inline std::vector<named_config> test_configs() {
  std::vector<named_config> list;
  list.push_back({"default", {}});
  config c;
  c.strategy = hhg::update_strategy::rebuild;
  list.push_back({"rebuild", c});
  c = {};
  c.activation_threshold = 0;
  c.initial_cells = {4, 4, 4};
  list.push_back({"threshold0_cells4", c});
  c = {};
  c.activation_threshold = 1;
  c.hierarchy_factor = 1.5;
  list.push_back({"threshold1_f1.5", c});
  c = {};
  c.hierarchy_factor = 3;
  c.minimal_grid_density = 1;
  c.initial_cells = {4, 8, 4};
  c.activation_threshold = 0;
  list.push_back({"f3_density1_cells4x8x4", c});
  c = {};
  c.hierarchy_factor = 4;
  c.activation_threshold = 0;
  c.cell_capacity = 16;
  c.occupied_cells_capacity = 1;
  list.push_back({"f4_threshold0_capacity16", c});
  c = {};
  c.strategy = hhg::update_strategy::rebuild;
  c.hierarchy_factor = 4;
  c.activation_threshold = 1;
  c.initial_cells = {4, 4, 4};
  list.push_back({"rebuild_f4_threshold1_cells4", c});
  return list;
}

template <class B>
std::string show(const B& b) {
  std::ostringstream os;
  PrintTo(b, &os);
  return os.str();
}

/// Drives a method M and brute_force in lockstep. Objects are named by their
/// insertion number ("id"); handles are mapped between the two structures by it.
template <class M>
class mirror {
 public:
  using box_type = typename M::box_type;
  static constexpr int D = M::dimension;
  using T = typename M::scalar;

  explicit mirror(const config& c = {}) : subject_(make_method<M>(c)) {}

  std::size_t insert(const box_type& b) {
    const handle hs = subject_.insert(b);
    const handle ho = oracle_.insert(b);
    const std::size_t id = boxes_.size();
    boxes_.push_back(b);
    subject_handles_.push_back(hs);
    oracle_handles_.push_back(ho);
    live_pos_.push_back(live_.size());
    live_.push_back(id);
    if (oracle_slot_to_id_.size() <= ho.index) oracle_slot_to_id_.resize(ho.index + 1);
    oracle_slot_to_id_[ho.index] = id;
    return id;
  }

  void move(std::size_t id, const box_type& b) {
    subject_.move(subject_handles_[id], b);
    oracle_.move(oracle_handles_[id], b);
    boxes_[id] = b;
  }

  /// One batch move of the subject (ids may repeat: the last box wins), the
  /// same moves one by one on the oracle.
  void move_batch(const std::vector<std::size_t>& ids, const std::vector<box_type>& bs) {
    std::vector<handle> hs;
    for (std::size_t id : ids) hs.push_back(subject_handles_[id]);
    subject_.move(std::span<const handle>(hs), std::span<const box_type>(bs));
    for (std::size_t k = 0; k < ids.size(); ++k) {
      oracle_.move(oracle_handles_[ids[k]], bs[k]);
      boxes_[ids[k]] = bs[k];
    }
  }

  void remove(std::size_t id) {
    subject_.remove(subject_handles_[id]);
    oracle_.remove(oracle_handles_[id]);
    const std::size_t pos = live_pos_[id];
    live_[pos] = live_.back();
    live_pos_[live_[pos]] = pos;
    live_.pop_back();
    live_pos_[id] = npos;
  }

  void clear() {
    subject_.clear();
    oracle_.clear();
    for (std::size_t id : live_) live_pos_[id] = npos;
    live_.clear();
  }

  bool live(std::size_t id) const { return live_pos_[id] != npos; }
  const std::vector<std::size_t>& live_ids() const { return live_; }
  const box_type& box_of(std::size_t id) const { return boxes_[id]; }
  handle subject_handle(std::size_t id) const { return subject_handles_[id]; }
  M& subject() { return subject_; }
  brute_force<D, T>& oracle() { return oracle_; }
  std::size_t ids() const { return boxes_.size(); }

  /// The oracle's pairs in the subject's handles, canonical.
  std::vector<handle_pair> expected() {
    oracle_.find_pairs(scratch_);
    std::vector<handle_pair> out;
    out.reserve(scratch_.size());
    for (const handle_pair& p : scratch_) {
      out.push_back({subject_handles_[oracle_slot_to_id_[p.a.index]], subject_handles_[oracle_slot_to_id_[p.b.index]]});
    }
    hhg::canonicalize(out);
    return out;
  }

  /// Runs a detection on the subject (find_pairs, or for_each_pair when
  /// `callback`) and compares it with the oracle. Also checks handles, sizes,
  /// stored boxes and validate().
  ::testing::AssertionResult check(bool callback = false) {
    std::vector<handle_pair> got;
    if (callback) {
      subject_.for_each_pair([&got](handle a, handle b) { got.push_back({a, b}); });
    } else {
      subject_.find_pairs(got);
    }
    if (subject_.size() != live_.size())
      return ::testing::AssertionFailure() << "size() " << subject_.size() << ", expected " << live_.size();
    for (std::size_t id = 0; id < boxes_.size(); ++id) {
      const handle h = subject_handles_[id];
      if (subject_.contains(h) != live(id))
        return ::testing::AssertionFailure() << "contains(" << show(h) << ") of object " << id << " is wrong";
      if (live(id) && !(subject_.get(h) == boxes_[id]))
        return ::testing::AssertionFailure()
               << "get() of object " << id << " returns " << show(subject_.get(h)) << ", expected " << show(boxes_[id]);
    }
    try {
      validate(subject_);
    } catch (const std::exception& e) {
      return ::testing::AssertionFailure() << "validate() failed: " << e.what();
    }
    const std::size_t reported = got.size();
    hhg::canonicalize(got);
    return compare(got, expected(), reported);
  }

  /// Compares canonical pair lists and describes the differences with boxes.
  ::testing::AssertionResult compare(const std::vector<handle_pair>& got, const std::vector<handle_pair>& want,
                                     std::size_t reported) {
    if (got == want) return ::testing::AssertionSuccess() << got.size() << " pairs";
    std::vector<handle_pair> missing, extra;
    std::set_difference(want.begin(), want.end(), got.begin(), got.end(), std::back_inserter(missing));
    std::set_difference(got.begin(), got.end(), want.begin(), want.end(), std::back_inserter(extra));
    std::size_t duplicates = 0;
    for (std::size_t i = 1; i < got.size(); ++i) duplicates += got[i] == got[i - 1];
    auto result = ::testing::AssertionFailure();
    result << "pairs differ from brute force: got " << reported << ", expected " << want.size() << "; "
           << missing.size() << " missing, " << extra.size() << " extra, " << duplicates << " duplicates";
    auto describe = [&](const char* what, const std::vector<handle_pair>& list) {
      for (std::size_t i = 0; i < std::min<std::size_t>(list.size(), 5); ++i) {
        result << "\n  " << what << ' ' << show(list[i]) << ": " << describe_handle(list[i].a) << " and "
               << describe_handle(list[i].b);
      }
    };
    describe("missing", missing);
    describe("extra", extra);
    return result;
  }

 private:
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

  std::string describe_handle(handle h) const {
    for (std::size_t id = 0; id < boxes_.size(); ++id) {
      if (subject_handles_[id] == h && live(id)) return "object " + std::to_string(id) + " " + show(boxes_[id]);
    }
    return "unknown handle " + show(h);
  }

  M subject_;
  brute_force<D, T> oracle_;
  std::vector<box_type> boxes_;
  std::vector<handle> subject_handles_;
  std::vector<handle> oracle_handles_;
  std::vector<std::size_t> oracle_slot_to_id_;
  std::vector<std::size_t> live_;      // ids of live objects
  std::vector<std::size_t> live_pos_;  // position in live_, or npos
  std::vector<handle_pair> scratch_;
};

/// A box from coordinates given in double.
template <int D, class T>
box<D, T> make_box(std::initializer_list<double> lo, std::initializer_list<double> hi) {
  box<D, T> b;
  auto l = lo.begin();
  auto h = hi.begin();
  for (int i = 0; i < D; ++i, ++l, ++h) {
    b.min[static_cast<std::size_t>(i)] = static_cast<T>(*l);
    b.max[static_cast<std::size_t>(i)] = static_cast<T>(*h);
  }
  return b;
}

/// A cube with min corner `at` (all axes) and edge `s`.
template <int D, class T>
box<D, T> cube(double at, double s) {
  box<D, T> b;
  for (int i = 0; i < D; ++i) {
    b.min[static_cast<std::size_t>(i)] = static_cast<T>(at);
    b.max[static_cast<std::size_t>(i)] = static_cast<T>(at + s);
  }
  return b;
}

/// A random box for dynamic sequences: mostly sizes 2^-4..2^4 in [-world, world],
/// with lattice boxes and points, huge, tiny, far-away and unbounded ones.
template <int D, class T>
box<D, T> random_box(hhg::scenes::rng& r, double world) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  box<D, T> b;
  const std::uint64_t kind = r.below(100);
  double lo[3], hi[3];
  if (kind < 50) {  // ordinary
    const double s = std::ldexp(r.uniform(1, 2), static_cast<int>(r.below(9)) - 4);
    for (int i = 0; i < 3; ++i) {
      lo[i] = r.uniform(-world, world);
      hi[i] = lo[i] + s * (r.below(4) == 0 ? r.uniform(0.1, 1) : 1);
    }
  } else if (kind < 65) {  // integer lattice: touching, sometimes a point
    const bool point = r.below(4) == 0;
    for (int i = 0; i < 3; ++i) {
      lo[i] = static_cast<double>(static_cast<std::int64_t>(r.below(9)) - 4);
      hi[i] = point ? lo[i] : lo[i] + static_cast<double>(1 + r.below(2));
    }
  } else if (kind < 72) {  // huge
    const double s = r.uniform(200, 2000);
    for (int i = 0; i < 3; ++i) {
      lo[i] = r.uniform(-world - s, world);
      hi[i] = lo[i] + s;
    }
  } else if (kind < 80) {  // tiny
    const double s = r.uniform(1e-6, 1e-4);
    for (int i = 0; i < 3; ++i) {
      lo[i] = r.uniform(-world, world);
      hi[i] = lo[i] + s;
    }
  } else if (kind < 86) {  // far away, in groups that can overlap
    const double offset = (r.below(2) ? 1 : -1) * (r.below(2) ? 1e12 : 1e6);
    for (int i = 0; i < 3; ++i) {
      lo[i] = offset + static_cast<double>(r.below(4));
      hi[i] = lo[i] + r.uniform(0.5, 2);
    }
  } else if (kind < 92) {  // unbounded
    for (int i = 0; i < 3; ++i) {
      lo[i] = r.uniform(-world, world);
      hi[i] = lo[i] + r.uniform(0, 3);
    }
    const auto a = static_cast<int>(r.below(D));
    switch (r.below(5)) {
      case 0: lo[a] = -inf; break;
      case 1: hi[a] = inf; break;
      case 2:
        lo[a] = -inf;
        hi[a] = inf;
        break;
      case 3: lo[a] = hi[a] = r.below(2) ? inf : -inf; break;
      default:
        for (int i = 0; i < 3; ++i) {
          lo[i] = -inf;
          hi[i] = inf;
        }
    }
  } else {  // random point
    for (int i = 0; i < 3; ++i) lo[i] = hi[i] = r.uniform(-world, world);
  }
  for (int i = 0; i < D; ++i) {
    b.min[static_cast<std::size_t>(i)] = static_cast<T>(lo[i]);
    b.max[static_cast<std::size_t>(i)] = static_cast<T>(hi[i]);
  }
  return b;
}

/// The box moved by dx on every axis (computed in double, rounded to T).
template <int D, class T>
box<D, T> shifted(const box<D, T>& b, double dx) {
  box<D, T> out = b;
  for (std::size_t a = 0; a < static_cast<std::size_t>(D); ++a) {
    out.min[a] = static_cast<T>(static_cast<double>(b.min[a]) + dx);
    out.max[a] = static_cast<T>(static_cast<double>(b.max[a]) + dx);
  }
  return out;
}

/// Size of the box in a form meant for stats checks.
template <int D, class T>
double edge_of(const box<D, T>& b) {
  return static_cast<double>(hhg::longest_edge(b));
}

/// One random sequence. Every operation is followed by validate(); a detection
/// compared with the oracle follows about every fifth operation.
template <class M>
void run_sequence(std::uint64_t seed, const named_config& nc, int operations) {
  constexpr int D = M::dimension;
  using T = typename M::scalar;
  using B = typename M::box_type;
  const std::string where = "seed " + std::to_string(seed) + " config " + nc.name;
  SCOPED_TRACE(where);
  hhg::scenes::rng r(seed);
  mirror<M> m(nc.c);
  std::size_t target = 40;
  constexpr std::size_t targets[] = {0, 5, 31, 33, 60, 150};
  for (int op = 0; op < operations; ++op) {
    SCOPED_TRACE("operation " + std::to_string(op));
    if (r.below(40) == 0) target = targets[r.below(std::size(targets))];
    const std::size_t live = m.live_ids().size();
    const std::uint64_t k = r.below(100);
    if (r.below(400) == 0) {
      m.clear();
    } else if (live == 0 || (live < target && k < 45)) {
      m.insert(random_box<D, T>(r, 20));
    } else if (live > target && k < 45) {
      m.remove(m.live_ids()[r.below(live)]);
    } else {
      const std::size_t id = m.live_ids()[r.below(live)];
      const B b = m.box_of(id);
      const std::uint64_t kind = r.below(6);
      if (kind == 0) {  // small move
        const double size = hhg::is_bounded(b) ? edge_of(b) : 1.0;
        m.move(id, shifted(b, r.uniform(-0.05, 0.05) * (size + 0.1)));
      } else if (kind == 1) {  // jump anywhere, maybe a different kind of box
        m.move(id, random_box<D, T>(r, 20));
      } else if (kind == 2 && hhg::is_bounded(b)) {  // resize across levels, same min corner
        const double factor = std::ldexp(r.uniform(1, 2), static_cast<int>(r.below(17)) - 8);
        B c = b;
        for (int i = 0; i < D; ++i) {
          const auto a = static_cast<std::size_t>(i);
          const double edge = static_cast<double>(b.max[a]) - static_cast<double>(b.min[a]);
          c.max[a] = std::max(c.min[a], static_cast<T>(static_cast<double>(b.min[a]) + edge * factor + 1e-3));
        }
        m.move(id, c);
      } else if (kind == 3) {  // to infinity, or back from it
        B c = b;
        if (hhg::is_bounded(b)) {
          const auto a = static_cast<std::size_t>(r.below(D));
          if (r.below(2))
            c.min[a] = -std::numeric_limits<T>::infinity();
          else
            c.max[a] = std::numeric_limits<T>::infinity();
        } else {
          c = random_box<D, T>(r, 20);
          if (!hhg::is_bounded(c)) c = cube<D, T>(r.uniform(-20, 20), r.uniform(0.1, 4));
        }
        m.move(id, c);
      } else if (kind == 4) {  // far away, a detection there, and back
        m.move(id, shifted(b, 1e12));
        ASSERT_TRUE(m.check()) << "with object " << id << " far away";
        m.move(id, b);
      } else {  // the same box again
        m.move(id, b);
      }
    }
    try {
      validate(m.subject());
    } catch (const std::exception& e) {
      FAIL() << "validate(): " << e.what();
    }
    if (r.below(5) == 0) {
      ASSERT_TRUE(m.check(r.below(2) == 0));
    }
  }
  ASSERT_TRUE(m.check());
}

// Thresholds that force every path, and chunks of a few dozen items, at test
// sizes (the path and thread tests).
inline hhg::detail::tuning small_tuning() {
  hhg::detail::tuning t;
  t.bulk_min = 64;
  t.batch_two_pass = 64;
  t.chunk_moves = 97;
  t.chunk_cells = 37;
  t.chunk_objects = 53;
  t.compact_min = 64;
  t.row_cells = 0;      // grids of test size take the row walk however few cells their rows hold
  t.bulk_rows_min = 0;  // and the bulk move whatever their rows
  return t;
}

// The pairs found as indices into `hs` (the handles in box order), each
// (i, j) with i < j, sorted: for comparing with all_pairs or brute force.
inline std::vector<std::pair<std::uint32_t, std::uint32_t>> as_indices(const std::vector<handle_pair>& found,
                                                                       const std::vector<handle>& hs) {
  std::vector<std::uint32_t> index_of;
  for (std::size_t i = 0; i < hs.size(); ++i) {
    if (hs[i].index >= index_of.size()) index_of.resize(hs[i].index + 1, UINT32_MAX);
    index_of[hs[i].index] = static_cast<std::uint32_t>(i);
  }
  std::vector<std::pair<std::uint32_t, std::uint32_t>> out;
  for (const handle_pair& p : found) {
    std::uint32_t i = index_of.at(p.a.index), j = index_of.at(p.b.index);
    if (j < i) std::swap(i, j);
    out.emplace_back(i, j);
  }
  std::sort(out.begin(), out.end());
  return out;
}

/// The pairs of `bs` by brute force, as all_pairs gives them (i < j, sorted):
/// the oracle for a method's all_pairs or as_indices(find_pairs).
template <class M>
std::vector<std::pair<std::uint32_t, std::uint32_t>> brute_pairs(std::span<const typename M::box_type> bs) {
  brute_force<M::dimension, typename M::scalar> b;
  return hhg::all_pairs(b, bs);
}

}  // namespace hhg_test
