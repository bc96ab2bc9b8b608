// libFuzzer target: bytes -> a sequence of operations (insert, move/resize,
// remove, detection, bad handles) on one method in 2D or 3D, float or double,
// with hostile values (huge and tiny sizes, coordinates near the precision
// limit, infinities, NaN, zero-size and inverted boxes), and misuse: changes
// from inside a detection callback or a query visitor (refused). Every operation is
// applied to the method and to brute force (the model): an operation the
// model refuses must be refused by the method with the same error code, and
// vice versa; after every detection the pairs must equal the model's exactly;
// validate() runs after every operation where the method has it.
//
// Adding a method: one line in `run_for` (the switch on the first byte).
// Build and run: see docs/reliability.md.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <vector>

#include "hhg/brute_force.hpp"
#include "hhg/error.hpp"
#include "hhg/executor.hpp"
#include "hhg/hash_grids.hpp"
#include "hhg/hierarchical_hashing.hpp"
#include "hhg/linear_kdtree.hpp"
#include "hhg/pivot_hashing.hpp"
#include "hhg/queries.hpp"
#include "hhg/spatial_hashing.hpp"
#include "hhg/sweep_and_prune.hpp"

namespace {

class reader {
 public:
  reader(const std::uint8_t* d, std::size_t n) : d_(d), n_(n) {}
  bool empty() const { return i_ >= n_; }
  std::uint8_t byte() { return i_ < n_ ? d_[i_++] : 0; }
  std::uint16_t u16() { return static_cast<std::uint16_t>(byte() | byte() << 8); }

 private:
  const std::uint8_t* d_;
  std::size_t n_, i_ = 0;
};

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "hhg fuzz: %s\n", what);
  std::abort();
}

template <class T>
T value(reader& r) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  static const double palette[] = {0.0,
                                   -0.0,
                                   1.0,
                                   -1.0,
                                   0.5,
                                   1e-30,
                                   -1e-30,
                                   1e30,
                                   -1e30,
                                   1e12,
                                   -1e12,
                                   4194304.0,
                                   4194305.0,
                                   1099511627776.0,
                                   1099511627777.0,
                                   inf,
                                   -inf,
                                   std::nan(""),
                                   5e-324,
                                   1e-300,
                                   1e300,
                                   -1e300,
                                   3.0,
                                   7.25,
                                   1e15,
                                   -1e15,
                                   1e7,
                                   0.1};
  const std::uint8_t k = r.byte();
  if (k < 160) return static_cast<T>((static_cast<int>(r.byte()) - 128) / 8.0);  // small grid of values
  if (k < 200) return static_cast<T>((static_cast<int>(r.u16()) - 32768) / 64.0);
  const double v = palette[k % (sizeof(palette) / sizeof(palette[0]))];
  return static_cast<T>(v);
}

template <int D, class T>
hhg::box<D, T> make_box(reader& r) {
  hhg::box<D, T> b;
  const std::uint8_t shape = r.byte();
  for (int i = 0; i < D; ++i) {
    const T lo = value<T>(r);
    if (shape % 4 == 0) {  // min, max independently (may be inverted or NaN)
      b.min[i] = lo;
      b.max[i] = value<T>(r);
    } else if (shape % 4 == 1) {  // a point
      b.min[i] = b.max[i] = lo;
    } else {  // min + a non-negative size
      T size = value<T>(r);
      if (size < 0) size = -size;
      b.min[i] = lo;
      b.max[i] = static_cast<T>(lo + size);
      if (!(b.max[i] >= b.min[i]) && !std::isnan(b.max[i])) b.max[i] = b.min[i];
    }
  }
  return b;
}

struct object {
  hhg::handle subject, model;
  bool live;
};

// HHG_FUZZ_TRACE=1 prints every operation (to reproduce a failing input).
const bool trace = std::getenv("HHG_FUZZ_TRACE") != nullptr;

template <int D, class T>
void print_box(const char* what, std::size_t id, const hhg::box<D, T>& b) {
  if (!trace) return;
  std::fprintf(stderr, "%s %zu:", what, id);
  for (int i = 0; i < D; ++i) std::fprintf(stderr, " %.17g", static_cast<double>(b.min[i]));
  for (int i = 0; i < D; ++i) std::fprintf(stderr, " %.17g", static_cast<double>(b.max[i]));
  std::fprintf(stderr, "\n");
}

template <class F>
int code_of(F&& f) {
  try {
    f();
    return -1;
  } catch (const hhg::error& e) {
    return static_cast<int>(e.code());
  }
}

template <class M>
void check_validate(const M& m) {
  if constexpr (requires { m.validate(); }) m.validate();
}

template <class M>
void run(reader& r) {
  constexpr int D = M::dimension;
  using T = typename M::scalar;
  M m;
  if constexpr (requires { m.set_executor(nullptr); }) {
    // the hash grid on three workers, its paths and chunks cut small so that
    // a few dozen objects already run the bulk move and detection in
    // several chunks at once
    static hhg::thread_pool pool(3);
    m.set_executor(&pool);
    hhg::detail::tuning t;
    t.bulk_min = t.batch_two_pass = t.compact_min = 8;
    t.chunk_moves = 5;
    t.chunk_cells = 2;
    t.chunk_objects = 3;
    m.set_tuning(t);
  }
  hhg::brute_force<D, T> model;
  std::vector<object> objects;
  std::vector<hhg::handle_pair> got, want;
  int ops = 0;
  while (!r.empty() && ops++ < 400) {
    const std::uint8_t op = r.byte() % 9;
    if (op <= 1 || objects.empty()) {  // insert
      if (objects.size() >= 96) continue;
      const auto b = make_box<D, T>(r);
      hhg::handle hs{}, hm{};
      const int cm = code_of([&] { hm = model.insert(b); });
      const int cs = code_of([&] { hs = m.insert(b); });
      print_box<D, T>("insert", objects.size(), b);
      if (cm != cs) fail("insert: method and model disagree on accepting the box");
      if (cm == -1) objects.push_back({hs, hm, true});
    } else if (op <= 3) {  // move or resize an object (live or not)
      const std::size_t which = r.byte() % objects.size();
      object& o = objects[which];
      const auto b = make_box<D, T>(r);
      print_box<D, T>("move", which, b);
      const int cm = code_of([&] { model.move(o.model, b); });
      const int cs = code_of([&] { m.move(o.subject, b); });
      if (cm != cs) fail("move: method and model disagree");
    } else if (op == 4) {  // remove (twice is an error)
      const std::size_t which = r.byte() % objects.size();
      if (trace) std::fprintf(stderr, "remove %zu\n", which);
      object& o = objects[which];
      const int cm = code_of([&] { model.remove(o.model); });
      const int cs = code_of([&] { m.remove(o.subject); });
      if (cm != cs) fail("remove: method and model disagree");
      o.live = false;
    } else if (op == 5) {  // foreign and null handles
      const hhg::handle bad = r.byte() % 2 ? hhg::handle{} : hhg::handle{0xFFFFFFF0u, 1};
      if (code_of([&] { m.remove(bad); }) != static_cast<int>(hhg::errc::invalid_handle)) fail("bad handle accepted");
      if (m.contains(bad)) fail("contains(bad handle)");
    } else if (op == 6) {  // get agrees with the model
      const object& o = objects[r.byte() % objects.size()];
      if (m.contains(o.subject) != model.contains(o.model)) fail("contains disagrees");
      if (o.live && m.contains(o.subject)) {
        const auto a = m.get(o.subject), b = model.get(o.model);
        for (int i = 0; i < D; ++i)
          if (!(a.min[i] == b.min[i] && a.max[i] == b.max[i])) fail("get disagrees");
      }
    } else if (op == 8) {  // queries (the hash grid has them): box, sphere, ray against the model
      if constexpr (requires { m.overlapping(std::declval<const typename M::box_type&>()); }) {
        const auto q = make_box<D, T>(r);
        std::vector<hhg::handle> hs;
        const bool bad = hhg::check_box(q) != hhg::box_problem::none;
        const int code = code_of([&] { hs = m.overlapping(q); });
        if (bad != (code != -1)) fail("box query: bad query box accepted or good one refused");
        if (!bad && !objects.empty() && (r.byte() & 1)) {  // misuse: a query visitor that changes the structure
          const std::uint8_t how = r.byte();
          const hhg::handle victim = objects[how % objects.size()].subject;
          bool called = false;
          const int vc = code_of([&] {
            auto change = [&] {
              called = true;
              switch (how % 4) {
                case 0: m.remove(victim); break;
                case 1: m.insert(q); break;
                case 2: m.clear(); break;
                default: m.move(victim, q); break;
              }
            };
            if (how & 4)
              m.for_each_overlapping(q, [&](hhg::handle) {
                change();
                return true;
              });
            else
              m.for_each_ray_hit({q.min, q.max, 1}, [&](hhg::handle, double) {
                change();
                return true;
              });
          });
          if (called && vc != static_cast<int>(hhg::errc::reentrant_call))
            fail("a change inside a query visitor was not refused");
          check_validate(m);
        }
        if (!bad) {
          std::size_t expected = 0;
          for (const object& o : objects)
            if (o.live && hhg::overlaps(q, model.get(o.model))) ++expected;
          if (hs.size() != expected) fail("box query differs from brute force");
          for (hhg::handle h : hs)
            if (!m.contains(h) || !hhg::overlaps(q, m.get(h))) fail("box query returned a non-overlapping object");
        }
        std::array<T, D> c{};
        for (int i = 0; i < D; ++i) c[i] = value<T>(r);
        // radii and ray directions of every magnitude (exact predicates:
        // squares beyond 1e308 or below 1e-308, quotients far from unit scale)
        static const double scales[] = {1.0, 1e-306, 1e300, 0x1p-900, 0x1p900, 1e-160, 1e160, 3.0};
        const std::uint8_t rk = r.byte();
        double radius = static_cast<double>(r.byte()) / 16.0 * scales[rk % 8];
        if (rk >= 224) radius = std::fabs(static_cast<double>(value<T>(r)));
        if (!std::isfinite(radius)) radius = 0;
        const double dscale = scales[r.byte() % 8];
        bool finite = true;
        for (int i = 0; i < D; ++i) finite &= std::isfinite(static_cast<double>(c[i]));
        if (finite) {
          std::vector<hhg::handle> in;
          m.in_sphere(c, radius, in);
          std::size_t expected = 0;
          for (const object& o : objects)
            if (o.live && hhg::box_meets_sphere(model.get(o.model), c, radius)) ++expected;
          if (in.size() != expected) fail("sphere query differs from brute force");
          hhg::ray<D, T> ray;
          ray.origin = c;
          for (int i = 0; i < D; ++i)
            ray.direction[i] = static_cast<T>((static_cast<int>(r.byte()) - 128) / 16.0 * dscale);
          bool nonzero = false, dfinite = true;
          for (int i = 0; i < D; ++i) {
            nonzero |= ray.direction[i] != 0;
            dfinite &= std::isfinite(static_cast<double>(ray.direction[i]));
          }
          if (r.byte() % 2 == 0) ray.max_t = static_cast<double>(r.byte()) / dscale;
          if (std::isnan(ray.max_t)) ray.max_t = 0;
          if (nonzero && dfinite) {
            std::vector<hhg::ray_hit> hits;
            m.ray_hits(ray, hits);
            std::size_t want_hits = 0;
            for (const object& o : objects)
              if (o.live && hhg::ray_box_entry(ray, model.get(o.model)) >= 0) ++want_hits;
            if (hits.size() != want_hits) fail("ray query differs from brute force");
            for (const hhg::ray_hit& h : hits)
              if (hhg::ray_box_entry(ray, m.get(h.id)) != h.t) fail("ray hit's entry parameter differs");
            for (std::size_t i = 1; i < hits.size(); ++i)
              if (hits[i].t < hits[i - 1].t) fail("ray hits out of entry order");
          }
        }
      }
    } else {  // detection
      if constexpr (requires { m.set_executor(nullptr); }) {
        const std::uint8_t extra = r.byte();
        if (extra & 1) {  // every live object moved in one batch to its own box (the bulk path)
          std::vector<hhg::handle> hs;
          std::vector<typename M::box_type> bs;
          for (const object& o : objects)
            if (o.live && m.contains(o.subject)) {
              hs.push_back(o.subject);
              bs.push_back(model.get(o.model));
            }
          m.move(std::span<const hhg::handle>(hs), std::span<const typename M::box_type>(bs));
        }
        if ((extra & 2) && !objects.empty()) {  // misuse: a callback that changes the structure
          const hhg::handle victim = objects[r.byte() % objects.size()].subject;
          bool called = false;
          const int code = code_of([&] {
            m.for_each_pair([&](hhg::handle, hhg::handle) {
              called = true;
              if (extra & 4)
                m.remove(victim);
              else
                m.clear();
            });
          });
          if (called && code != static_cast<int>(hhg::errc::reentrant_call))
            fail("a change inside for_each_pair was not refused");
          check_validate(m);
        }
      }
      m.find_pairs(got);
      model.find_pairs(want);
      // map both to object numbers
      auto to_ids = [&](const std::vector<hhg::handle_pair>& ps, bool subject) {
        std::vector<std::pair<std::size_t, std::size_t>> out;
        for (const auto& p : ps) {
          std::size_t a = SIZE_MAX, b = SIZE_MAX;
          for (std::size_t k = 0; k < objects.size(); ++k) {
            if (!objects[k].live) continue;
            const hhg::handle h = subject ? objects[k].subject : objects[k].model;
            if (h == p.a) a = k;
            if (h == p.b) b = k;
          }
          if (a == SIZE_MAX || b == SIZE_MAX || a == b) fail("a pair names an unknown object");
          out.emplace_back(std::min(a, b), std::max(a, b));
        }
        std::sort(out.begin(), out.end());
        return out;
      };
      const auto gs = to_ids(got, true), ws = to_ids(want, false);
      if (trace) {
        std::fprintf(stderr, "pairs: method");
        for (const auto& [a, b] : gs) std::fprintf(stderr, " (%zu %zu)", a, b);
        std::fprintf(stderr, "\n       model ");
        for (const auto& [a, b] : ws) std::fprintf(stderr, " (%zu %zu)", a, b);
        std::fprintf(stderr, "\n");
      }
      if (std::adjacent_find(gs.begin(), gs.end()) != gs.end()) fail("a pair reported twice");
      if (gs != ws) fail("pairs differ from brute force");
    }
    if (m.size() != model.size()) fail("size differs");
    check_validate(m);
  }
}

template <template <int, class> class M>
void run_for(reader& r, std::uint8_t variant) {
  switch (variant % 4) {
    case 0: run<M<2, float>>(r); break;
    case 1: run<M<2, double>>(r); break;
    case 2: run<M<3, float>>(r); break;
    default: run<M<3, double>>(r); break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  reader r(data, size);
  const std::uint8_t first = r.byte();
  switch ((first >> 2) % 8) {  // one line per method
    case 0: run_for<hhg::hash_grids>(r, first); break;
    case 1: run_for<hhg::sweep_and_prune>(r, first); break;
    case 2: run_for<hhg::uniform_hashing>(r, first); break;
    case 3: run_for<hhg::multilevel_hashing>(r, first); break;
    case 4: run_for<hhg::pivot_hashing>(r, first); break;
    case 5: run_for<hhg::pivot_chunked>(r, first); break;
    case 6: run_for<hhg::linear_kdtree>(r, first); break;
    default: run_for<hhg::hierarchical_hashing>(r, first); break;
  }
  return 0;
}
