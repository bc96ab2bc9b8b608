// python/src/_hhg.cpp: the pybind11 module behind `import hhg`.
//
// Layout: numpy arrays come in through `as_array` (zero copy when the array is
// C-contiguous and already of the wanted dtype, a converted copy otherwise);
// every call that does real work releases the GIL; results go out as numpy
// arrays that own the C++ vector they were computed in (no copy).
//
// Dynamic structures are type-erased behind `structure` (one virtual call per
// batch, not per box), so the pybind11 glue is compiled once, not once per
// method x dimension x scalar. The method classes come from hhg::all_methods.
//
// Ids: a handle {index, generation} is the int64 (generation << 32) | index.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cxxabi.h>
#include <pthread.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <span>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "hhg/box.hpp"
#include "hhg/broad_phase.hpp"
#include "hhg/config.hpp"
#include "hhg/error.hpp"
#include "hhg/executor.hpp"
#include "hhg/hash_grids.hpp"
#include "hhg/methods.hpp"
#include "hhg/neighbors.hpp"
#include "hhg/queries.hpp"

namespace py = pybind11;

namespace {

using hhg::handle;

// ---------------------------------------------------------------- ids -------

std::int64_t to_id(handle h) noexcept {
  return static_cast<std::int64_t>((std::uint64_t{h.generation} << 32) | h.index);
}
handle to_handle(std::int64_t id) noexcept {
  const auto u = static_cast<std::uint64_t>(id);
  return handle{static_cast<std::uint32_t>(u), static_cast<std::uint32_t>(u >> 32)};
}

// ------------------------------------------------------------ workers -------

/// Pools shared by every call asking for the same number of workers (a pool
/// runs the calls of several threads one after the other). Never destroyed:
/// their threads just wait until the process ends. A child made by fork()
/// (multiprocessing's default on Linux) has none of the parent's threads: it
/// forgets the parent's pools (leaking them) and starts its own.
struct pool_registry {
  std::mutex lock;
  std::map<unsigned, hhg::thread_pool*> pools;
};
pool_registry* registry = nullptr;

void forget_pools_after_fork() { registry = new pool_registry; }

hhg::executor* pool_for(unsigned workers) {
  if (workers <= 1) return nullptr;
  pool_registry* reg = registry;
  std::lock_guard<std::mutex> g(reg->lock);
  auto& p = reg->pools[workers];
  if (!p) p = new hhg::thread_pool(workers);
  return p;
}

/// An integer argument: a Python int or a numpy integer (anything with
/// __index__), not a bool. false when v is not one; `fits` false when it does
/// not fit in a long long (x is then 0). Casting to long long first raised
/// pybind11's RuntimeError ("Unable to cast") for ints past 2^63.
bool int_arg(const py::handle& v, long long& x, bool& fits) {
  x = 0;
  fits = true;
  if (PyBool_Check(v.ptr()) || !PyIndex_Check(v.ptr())) return false;
  const auto i = py::reinterpret_steal<py::object>(PyNumber_Index(v.ptr()));
  if (!i) {  // (numpy's bool_ refuses __index__)
    PyErr_Clear();
    return false;
  }
  int overflow = 0;
  x = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
  if (overflow != 0) x = 0, fits = false;
  return true;
}

/// None or -1: every core; n >= 1: n workers (1 = the calling thread only).
unsigned parse_workers(const py::object& w) {
  if (w.is_none()) return hhg::thread_pool::cores();
  long long n = 0;
  bool fits = true;
  if (!int_arg(w, n, fits)) throw py::type_error("workers must be None or an int");
  if (fits && n == -1) return hhg::thread_pool::cores();
  if (!fits || n < 1 || n > 4096)
    throw py::value_error("workers must be None, -1 or between 1 and 4096, got " + py::repr(w).cast<std::string>());
  return static_cast<unsigned>(n);
}

// -------------------------------------------------------- numpy input -------

template <class T>
using carray = py::array_t<T, py::array::c_style | py::array::forcecast>;

std::string shape_str(const py::array& a) {
  std::string s = "(";
  for (py::ssize_t i = 0; i < a.ndim(); ++i) s += (i ? ", " : "") + std::to_string(a.shape(i));
  return s + (a.ndim() == 1 ? ",)" : ")");
}

/// `obj` as a C-contiguous array of T: the same object when it already is one
/// (zero copy), else a converted copy. Only numbers are accepted (TypeError).
template <class T>
carray<T> as_array(const py::handle& obj, const char* what) {
  py::array a = py::array::ensure(obj);
  if (!a) throw py::type_error(std::string(what) + " must be an array of numbers");
  const char kind = a.dtype().kind();
  // (an empty list is a float array to numpy: empty, it is ids as well)
  const bool ok = std::is_integral_v<T> ? (kind == 'i' || kind == 'u' || (kind == 'f' && a.size() == 0))
                                        : (kind == 'f' || kind == 'i' || kind == 'u');
  if (!ok)
    throw py::type_error(std::string(what) + " must be an array of " +
                         (std::is_integral_v<T> ? "integers" : "real numbers") + ", got dtype " +
                         py::str(a.dtype()).cast<std::string>());
  auto c = carray<T>::ensure(a);
  if (!c)
    throw py::type_error(std::string(what) + ": cannot convert to " + py::str(py::dtype::of<T>()).cast<std::string>());
  return c;
}

/// A 2-D (N, cols) array of T.
template <class T>
carray<T> as_matrix(const py::handle& obj, py::ssize_t cols, const char* what, const char* shape) {
  auto a = as_array<T>(obj, what);
  if (a.ndim() != 2 || a.shape(1) != cols)
    throw py::value_error(std::string(what) + " must have shape " + shape + " = (N, " + std::to_string(cols) +
                          "), got " + shape_str(a));
  return a;
}

/// A 1-D array of ids.
carray<std::int64_t> as_ids(const py::handle& obj) {
  auto a = as_array<std::int64_t>(obj, "ids");
  if (a.ndim() != 1) throw py::value_error("ids must be a 1-D array, got shape " + shape_str(a));
  return a;
}

/// A per-query scalar: a number (broadcast) or a (Q,) array, as doubles.
std::vector<double> per_query(const py::handle& obj, std::size_t q, const char* what) {
  auto a = as_array<double>(obj, what);
  std::vector<double> v(q);
  if (a.ndim() == 0) {
    std::fill(v.begin(), v.end(), *a.data());
  } else if (a.ndim() == 1 && static_cast<std::size_t>(a.shape(0)) == q) {
    std::copy(a.data(), a.data() + q, v.begin());
  } else {
    throw py::value_error(std::string(what) + " must be a number or have shape (" + std::to_string(q) + ",), got " +
                          shape_str(a));
  }
  return v;
}

int dtype_code(const py::object& dtype) {  // 4 = float32, 8 = float64
  py::dtype dt = py::dtype::from_args(dtype);
  if (dt.kind() == 'f' && dt.itemsize() == 4) return 4;
  if (dt.kind() == 'f' && dt.itemsize() == 8) return 8;
  throw py::type_error("dtype must be float32 or float64, got " + py::str(dt).cast<std::string>());
}

// ------------------------------------------------------- numpy output -------

/// Hands a vector to numpy without a copy: the array owns it.
template <class V>
py::array to_numpy(V&& v, std::vector<py::ssize_t> shape) {
  using E = typename std::remove_reference_t<V>::value_type;
  auto* owner = new std::remove_reference_t<V>(std::move(v));
  py::capsule cap(owner, [](void* p) { delete static_cast<std::remove_reference_t<V>*>(p); });
  return py::array_t<E>(shape, owner->data(), cap);
}
template <class V>
py::array to_numpy(V&& v) {
  const auto n = static_cast<py::ssize_t>(v.size());
  return to_numpy(std::forward<V>(v), {n});
}

/// Variable-length results: the answers of query i are indices[offsets[i] .. offsets[i + 1]).
struct csr {
  std::vector<std::int64_t> indices;
  std::vector<std::int64_t> offsets;
  std::vector<double> values;  // ray_hits: entry parameters
};
py::tuple csr_out(csr&& c) { return py::make_tuple(to_numpy(std::move(c.indices)), to_numpy(std::move(c.offsets))); }

/// The one batch driver of the module: fn(begin, end) over the queries
/// [0, q), in ranges on `e` (nullptr or a small batch: the calling thread).
/// Each query writes only its own outputs, so results do not depend on `e`.
template <class F>
void for_query_ranges(hhg::executor* e, std::size_t q, F&& fn) {
  if (e == nullptr || q < 64) {
    if (q > 0) fn(std::size_t{0}, q);
    return;
  }
  e->parallel_for(q, 16, [&](std::size_t b, std::size_t en, unsigned) { fn(b, en); });
}

/// Per-query result lists flattened into a csr (ray hits: their t in values).
template <class E>
csr to_csr(const std::vector<std::vector<E>>& per) {
  const std::size_t q = per.size();
  csr c;
  c.offsets.resize(q + 1);
  std::size_t total = 0;
  for (std::size_t i = 0; i < q; ++i) {
    c.offsets[i] = static_cast<std::int64_t>(total);
    total += per[i].size();
  }
  c.offsets[q] = static_cast<std::int64_t>(total);
  c.indices.reserve(total);
  if constexpr (std::is_same_v<E, hhg::ray_hit>) {
    c.values.reserve(total);
    for (auto& v : per)
      for (const auto& h : v) {
        c.indices.push_back(to_id(h.id));
        c.values.push_back(h.t);
      }
  } else {
    for (auto& v : per)
      for (const handle h : v) c.indices.push_back(to_id(h));
  }
  return c;
}

/// One result list per query: f(i, out_i) answers query i.
template <class E, class F>
csr build_csr(hhg::executor* e, std::size_t q, F&& f) {
  std::vector<std::vector<E>> per(q);
  for_query_ranges(e, q, [&](std::size_t b, std::size_t en) {
    for (std::size_t i = b; i < en; ++i) f(i, per[i]);
  });
  return to_csr(per);
}

// ------------------------------------------------- checks before changes -------

template <int D, class T>
void check_boxes(const hhg::box<D, T>* b, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    int axis = -1;
    switch (hhg::check_box(b[i], &axis)) {
      case hhg::box_problem::none: break;
      case hhg::box_problem::nan_coordinate:
        throw hhg::error(hhg::errc::nan_coordinate,
                         "box " + std::to_string(i) + ": NaN coordinate on axis " + std::to_string(axis));
      case hhg::box_problem::inverted:
        throw hhg::error(hhg::errc::inverted_box,
                         "box " + std::to_string(i) + ": min > max on axis " + std::to_string(axis));
    }
  }
}

std::string id_str(std::int64_t id) { return "id " + std::to_string(id); }

// ---------------------------------------------------- the dynamic structure -------

/// One dynamic method, type-erased. Batches in, batches out.
class structure {
 public:
  virtual ~structure() = default;
  virtual int dim() const = 0;
  virtual int scalar_bytes() const = 0;
  virtual std::string method() const = 0;
  virtual void insert(const void* boxes, std::size_t n, std::int64_t* ids) = 0;
  virtual void move(const std::int64_t* ids, const void* boxes, std::size_t n) = 0;
  virtual void remove(const std::int64_t* ids, std::size_t n) = 0;
  virtual void get(const std::int64_t* ids, std::size_t n, void* boxes) const = 0;
  virtual bool contains(std::int64_t id) const = 0;
  virtual std::size_t size() const = 0;
  virtual std::vector<std::int64_t> pairs(bool sorted) = 0;
  virtual void clear() = 0;
  virtual void update() = 0;
  virtual void validate() const = 0;
  virtual void set_workers(unsigned w) = 0;
  virtual py::dict stats() const = 0;  // with the GIL

  // hash grids only
  virtual csr overlapping(const void*, std::size_t) const { throw py::type_error("no queries"); }
  virtual csr containing(const void*, std::size_t) const { throw py::type_error("no queries"); }
  virtual csr in_sphere(const void*, const double*, std::size_t) const { throw py::type_error("no queries"); }
  virtual csr ray_hits(const void*, const void*, const double*, std::size_t) const {
    throw py::type_error("no queries");
  }
  virtual void first_ray_hit(const void*, const void*, const double*, std::size_t, std::int64_t*, double*) const {
    throw py::type_error("no queries");
  }
  virtual void nearest(const void*, std::size_t, std::size_t, std::int64_t*, double*) const {
    throw py::type_error("no queries");
  }
};

template <class M>
class method_structure final : public structure {
 public:
  using B = typename M::box_type;
  static constexpr int D = B::dimension;
  using T = typename B::scalar;
  static_assert(sizeof(B) == 2 * D * sizeof(T), "a box is 2*D scalars");
  static constexpr bool is_hash_grids = std::is_same_v<M, hhg::hash_grids<D, T>>;

  method_structure() = default;
  explicit method_structure(const hhg::config& c) requires is_hash_grids : m_(c) {}

  int dim() const override { return D; }
  int scalar_bytes() const override { return sizeof(T); }
  std::string method() const override { return M::method_name; }

  void insert(const void* p, std::size_t n, std::int64_t* ids) override {
    const B* b = static_cast<const B*>(p);
    if constexpr (is_hash_grids) {
      const std::vector<handle> hs = m_.insert(std::span<const B>(b, n));  // checks every box first
      for (std::size_t i = 0; i < n; ++i) ids[i] = to_id(hs[i]);
    } else {
      check_boxes(b, n);
      std::size_t done = 0;
      try {
        for (; done < n; ++done) ids[done] = to_id(m_.insert(b[done]));
      } catch (...) {  // e.g. out of memory: undo
        for (std::size_t i = 0; i < done; ++i) m_.remove(to_handle(ids[i]));
        throw;
      }
    }
  }

  void check_ids(const std::int64_t* ids, std::size_t n) const {
    for (std::size_t i = 0; i < n; ++i)
      if (!m_.contains(to_handle(ids[i])))
        throw hhg::error(hhg::errc::invalid_handle, id_str(ids[i]) + " (position " + std::to_string(i) +
                                                        ") is not stored (stale, removed or never returned by insert)");
  }

  void move(const std::int64_t* ids, const void* p, std::size_t n) override {
    const B* b = static_cast<const B*>(p);
    check_ids(ids, n);
    check_boxes(b, n);
    if constexpr (is_hash_grids) {
      std::vector<handle> hs(n);
      for (std::size_t i = 0; i < n; ++i) hs[i] = to_handle(ids[i]);
      m_.move(std::span<const handle>(hs), std::span<const B>(b, n));
    } else {
      for (std::size_t i = 0; i < n; ++i) m_.move(to_handle(ids[i]), b[i]);
    }
  }

  void remove(const std::int64_t* ids, std::size_t n) override {
    check_ids(ids, n);
    std::vector<std::int64_t> sorted(ids, ids + n);
    std::sort(sorted.begin(), sorted.end());
    const auto dup = std::adjacent_find(sorted.begin(), sorted.end());
    if (dup != sorted.end())
      throw hhg::error(hhg::errc::invalid_handle, id_str(*dup) + " appears more than once in one remove");
    for (std::size_t i = 0; i < n; ++i) m_.remove(to_handle(ids[i]));
  }

  void get(const std::int64_t* ids, std::size_t n, void* out) const override {
    check_ids(ids, n);
    B* b = static_cast<B*>(out);
    for (std::size_t i = 0; i < n; ++i) b[i] = m_.get(to_handle(ids[i]));
  }

  bool contains(std::int64_t id) const override { return m_.contains(to_handle(id)); }
  std::size_t size() const override { return m_.size(); }

  std::vector<std::int64_t> pairs(bool sorted) override {
    std::vector<std::int64_t> out;
    m_.for_each_pair([&](handle a, handle b) {
      std::int64_t x = to_id(a), y = to_id(b);
      if (y < x) std::swap(x, y);
      out.push_back(x);
      out.push_back(y);
    });
    if (sorted) {
      auto* rows = reinterpret_cast<std::array<std::int64_t, 2>*>(out.data());
      std::sort(rows, rows + out.size() / 2);
    }
    return out;
  }

  void clear() override { m_.clear(); }
  void update() override { m_.update(); }
  void validate() const override {
    if constexpr (requires(const M& m) { m.validate(); }) m_.validate();
  }
  void set_workers(unsigned w) override {
    if constexpr (is_hash_grids) {
      m_.set_executor(pool_for(w));
    } else if constexpr (requires(M & m) { m.set_threads(w); }) {
      m_.set_threads(w);
    }
  }

  py::dict stats() const override {
    py::dict d;
    if constexpr (is_hash_grids) {
      const hhg::statistics s = m_.stats();
      d["objects"] = s.objects;
      d["unbounded_objects"] = s.unbounded_objects;
      d["list_objects"] = s.list_objects;
      d["grids_active"] = s.grids_active;
      d["bytes"] = s.bytes;
      d["box_tests"] = s.box_tests;
      d["cells_visited"] = s.cells_visited;
      d["pairs"] = s.pairs;
      d["compactions"] = s.compactions;
      py::list grids;
      for (const auto& g : s.grids) {
        py::dict gd;
        gd["cell_size"] = g.cell_size;
        gd["cell_edges"] = py::make_tuple(g.cell_edges[0], g.cell_edges[1], g.cell_edges[2]);
        gd["cells_per_axis"] = py::make_tuple(g.cells_per_axis[0], g.cells_per_axis[1], g.cells_per_axis[2]);
        gd["cell_count"] = g.cell_count;
        gd["objects"] = g.objects;
        gd["occupied_cells"] = g.occupied_cells;
        gd["bytes"] = g.bytes;
        grids.append(gd);
      }
      d["grids"] = grids;
    } else {
      d["objects"] = m_.size();
      d["bytes"] = m_.bytes();
      d["box_tests"] = m_.box_tests();
    }
    d["method"] = std::string(M::method_name);
    return d;
  }

  // ---- queries (hash grids only) ----
  using P = std::array<T, D>;
  hhg::executor* exec() const {
    if constexpr (is_hash_grids) return m_.get_executor();
    return nullptr;
  }

  // The library's batch forms where it has them (overlapping, ray_hits: on
  // the structure's executor), else build_csr / for_query_ranges; every input
  // is checked before any query runs, so the error is the same for any worker count.
  static void check_points(const P* p, std::size_t n, const char* what, std::size_t first = 0) {
    for (std::size_t i = 0; i < n; ++i)
      for (int k = 0; k < D; ++k)
        if (std::isnan(p[i][k]))
          throw hhg::error(hhg::errc::nan_coordinate,
                           what + (" " + std::to_string(first + i)) + " has a NaN coordinate");
  }
  csr overlapping(const void* q, std::size_t n) const override {
    if constexpr (is_hash_grids) {
      const B* b = static_cast<const B*>(q);
      check_boxes(b, n);
      std::vector<std::vector<handle>> per;
      m_.overlapping(std::vector<B>(b, b + n), per);
      return to_csr(per);
    }
    return structure::overlapping(q, n);
  }
  csr containing(const void* q, std::size_t n) const override {
    if constexpr (is_hash_grids) {
      const P* p = static_cast<const P*>(q);
      return build_csr<handle>(exec(), n, [&](std::size_t i, std::vector<handle>& out) { m_.containing(p[i], out); });
    }
    return structure::containing(q, n);
  }
  csr in_sphere(const void* q, const double* radii, std::size_t n) const override {
    if constexpr (is_hash_grids) {
      const P* p = static_cast<const P*>(q);
      for (std::size_t i = 0; i < n; ++i) {
        check_points(p + i, 1, "centre", i);
        if (std::isnan(radii[i]))
          throw hhg::error(hhg::errc::nan_coordinate, "radius " + std::to_string(i) + " is NaN");
        if (radii[i] < 0) throw hhg::error(hhg::errc::inverted_box, "radius " + std::to_string(i) + " is negative");
      }
      return build_csr<handle>(exec(), n,
                               [&](std::size_t i, std::vector<handle>& out) { m_.in_sphere(p[i], radii[i], out); });
    }
    return structure::in_sphere(q, radii, n);
  }
  static void check_rays(const P* o, const P* d, const double* t, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      for (int k = 0; k < D; ++k)
        if (!std::isfinite(o[i][k]) || !std::isfinite(d[i][k]))
          throw hhg::error(hhg::errc::nan_coordinate,
                           "ray " + std::to_string(i) + ": origin and direction must be finite");
      if (std::isnan(t[i])) throw hhg::error(hhg::errc::nan_coordinate, "ray " + std::to_string(i) + ": max_t is NaN");
      if (t[i] < 0) throw hhg::error(hhg::errc::inverted_box, "ray " + std::to_string(i) + ": max_t is negative");
    }
  }
  std::vector<hhg::ray<D, T>> rays_of(const void* o, const void* d, const double* t, std::size_t n) const {
    const P* po = static_cast<const P*>(o);
    const P* pd = static_cast<const P*>(d);
    check_rays(po, pd, t, n);
    std::vector<hhg::ray<D, T>> rays(n);
    for (std::size_t i = 0; i < n; ++i) rays[i] = {po[i], pd[i], t[i]};
    return rays;
  }
  csr ray_hits(const void* o, const void* d, const double* t, std::size_t n) const override {
    if constexpr (is_hash_grids) {
      std::vector<std::vector<hhg::ray_hit>> per;
      m_.ray_hits(rays_of(o, d, t, n), per);
      return to_csr(per);
    }
    return structure::ray_hits(o, d, t, n);
  }
  void first_ray_hit(const void* o, const void* d, const double* t, std::size_t n, std::int64_t* ids,
                     double* ts) const override {
    if constexpr (is_hash_grids) {
      const std::vector<hhg::ray<D, T>> rays = rays_of(o, d, t, n);
      for_query_ranges(exec(), n, [&](std::size_t b, std::size_t e) {
        for (std::size_t i = b; i < e; ++i) {
          const hhg::ray_hit h = m_.first_ray_hit(rays[i]);
          ids[i] = h.id ? to_id(h.id) : -1;
          ts[i] = h.id ? h.t : std::numeric_limits<double>::infinity();
        }
      });
      return;
    }
    structure::first_ray_hit(o, d, t, n, ids, ts);
  }
  void nearest(const void* q, std::size_t n, std::size_t k, std::int64_t* ids, double* dist) const override {
    if constexpr (is_hash_grids) {
      const P* p = static_cast<const P*>(q);
      check_points(p, n, "point");
      for_query_ranges(exec(), n, [&](std::size_t b, std::size_t e) {
        std::vector<handle> out;
        for (std::size_t i = b; i < e; ++i) {
          m_.nearest(p[i], k, out);
          for (std::size_t j = 0; j < k; ++j) {
            if (j < out.size()) {
              ids[i * k + j] = to_id(out[j]);
              dist[i * k + j] = std::sqrt(hhg::box_distance_squared(m_.get(out[j]), p[i]));
            } else {
              ids[i * k + j] = -1;
              dist[i * k + j] = std::numeric_limits<double>::infinity();
            }
          }
        }
      });
      return;
    }
    structure::nearest(q, n, k, ids, dist);
  }

 private:
  M m_;
};

/// Calls f.template operator()<D, T>() for the dim and dtype code.
template <class F>
decltype(auto) with_dim_type(int dim, int bytes, F&& f) {
  if (dim == 2) return bytes == 4 ? f.template operator()<2, float>() : f.template operator()<2, double>();
  if (dim == 3) return bytes == 4 ? f.template operator()<3, float>() : f.template operator()<3, double>();
  throw py::value_error("dim must be 2 or 3, got " + std::to_string(dim));
}

std::unique_ptr<structure> make_structure(const std::string& method, int dim, int bytes, const hhg::config* c) {
  return with_dim_type(dim, bytes, [&]<int D, class T>() -> std::unique_ptr<structure> {
    return hhg::all_methods::with<D, T>(method, [&](auto id) -> std::unique_ptr<structure> {
      using M = typename decltype(id)::type;
      if constexpr (std::is_same_v<M, hhg::hash_grids<D, T>>) {
        return std::make_unique<method_structure<M>>(c ? *c : hhg::config{});
      } else {
        if (c) throw py::type_error("configuration keywords are for HashGrids only");
        return std::make_unique<method_structure<M>>();
      }
    });
  });
}

// ------------------------------------------------------------- config -------

std::uint32_t u32_field(const std::string& key, const py::handle& v) {
  long long x = 0;
  bool fits = true;
  if (!int_arg(v, x, fits)) throw py::type_error(key + " must be an int");
  if (!fits || x < 0 || x > static_cast<long long>(std::numeric_limits<std::uint32_t>::max()))
    throw hhg::error(hhg::errc::bad_config, key + " = " + py::repr(v).cast<std::string>() + " is out of range");
  return static_cast<std::uint32_t>(x);
}

hhg::config parse_config(const py::kwargs& kw) {
  hhg::config c;
  for (auto item : kw) {
    const std::string key = py::str(item.first);
    const py::handle v = item.second;
    if (key == "hierarchy_factor") {
      if (!py::isinstance<py::float_>(v) && !py::isinstance<py::int_>(v))
        throw py::type_error("hierarchy_factor must be a number");
      c.hierarchy_factor = v.cast<double>();
    } else if (key == "adaptive_factor") {
      if (!py::isinstance<py::bool_>(v)) throw py::type_error("adaptive_factor must be a bool");
      c.adaptive_factor = v.cast<bool>();
    } else if (key == "initial_cells") {
      if (PyIndex_Check(v.ptr())) {
        const std::uint32_t n = u32_field(key, v);
        c.initial_cells = {n, n, n};
      } else {
        const auto seq = py::reinterpret_borrow<py::sequence>(v);
        if (!py::isinstance<py::sequence>(v) || (seq.size() != 2 && seq.size() != 3))
          throw py::type_error("initial_cells must be an int or a sequence of 2 or 3 ints");
        for (std::size_t i = 0; i < 3; ++i)
          c.initial_cells[i] = u32_field(key, seq[std::min<std::size_t>(i, seq.size() - 1)]);
      }
    } else if (key == "minimal_grid_density") {
      c.minimal_grid_density = u32_field(key, v);
    } else if (key == "growth") {
      const std::string s = py::isinstance<py::str>(v) ? v.cast<std::string>() : "";
      if (s == "every_axis")
        c.growth = hhg::growth_rule::every_axis;
      else if (s == "by_occupancy")
        c.growth = hhg::growth_rule::by_occupancy;
      else
        throw hhg::error(hhg::errc::bad_config, "growth must be 'every_axis' or 'by_occupancy'");
    } else if (key == "activation_threshold") {
      if (v.is_none()) {
        c.activation_threshold = std::numeric_limits<std::size_t>::max();
      } else {
        long long x = 0;
        bool fits = true;
        if (!int_arg(v, x, fits)) throw py::type_error("activation_threshold must be an int or None");
        if (!fits || x < 0)
          throw hhg::error(hhg::errc::bad_config, "activation_threshold = " + py::repr(v).cast<std::string>() +
                                                      " is out of range (0 to 2^63 - 1; None: never)");
        c.activation_threshold = static_cast<std::size_t>(x);
      }
    } else if (key == "cell_capacity") {
      c.cell_capacity = u32_field(key, v);
    } else if (key == "occupied_cells_capacity") {
      c.occupied_cells_capacity = u32_field(key, v);
    } else if (key == "strategy") {
      const std::string s = py::isinstance<py::str>(v) ? v.cast<std::string>() : "";
      if (s == "incremental")
        c.strategy = hhg::update_strategy::incremental;
      else if (s == "rebuild")
        c.strategy = hhg::update_strategy::rebuild;
      else
        throw hhg::error(hhg::errc::bad_config, "strategy must be 'incremental' or 'rebuild'");
    } else {
      throw py::type_error("unexpected keyword argument '" + key + "'");
    }
  }
  hhg::validate_config(c);
  return c;
}

py::dict config_dict(const hhg::config& c) {
  py::dict d;
  d["hierarchy_factor"] = c.hierarchy_factor;
  d["adaptive_factor"] = c.adaptive_factor;
  d["initial_cells"] = py::make_tuple(c.initial_cells[0], c.initial_cells[1], c.initial_cells[2]);
  d["minimal_grid_density"] = c.minimal_grid_density;
  d["growth"] = c.growth == hhg::growth_rule::every_axis ? "every_axis" : "by_occupancy";
  if (c.activation_threshold == std::numeric_limits<std::size_t>::max())
    d["activation_threshold"] = py::none();
  else
    d["activation_threshold"] = c.activation_threshold;
  d["cell_capacity"] = c.cell_capacity;
  d["occupied_cells_capacity"] = c.occupied_cells_capacity;
  d["strategy"] = c.strategy == hhg::update_strategy::incremental ? "incremental" : "rebuild";
  return d;
}

// ------------------------------------------------------- Python objects -------

/// The Python-visible dynamic structure. A shared_mutex lets queries of
/// several Python threads run together while changes run alone; it is taken
/// after the GIL is released (and freed before it is taken back).
class py_structure {
 public:
  py_structure(const std::string& method, int dim, const py::object& dtype, const py::object& workers,
               const hhg::config* c)
      : s_(make_structure(method, dim, dtype_code(dtype), c)), workers_(parse_workers(workers)) {
    if (c) config_ = *c;
    s_->set_workers(workers_);
  }
  virtual ~py_structure() = default;

  int dim() const { return s_->dim(); }
  py::dtype dtype() const { return s_->scalar_bytes() == 4 ? py::dtype::of<float>() : py::dtype::of<double>(); }
  int cols() const { return 2 * s_->dim(); }

  template <class F>
  decltype(auto) with_scalar(F&& f) const {
    if (s_->scalar_bytes() == 4) return f(float{});
    return f(double{});
  }

  py::array insert(const py::handle& boxes) {
    return with_scalar([&](auto t) {
      using T = decltype(t);
      auto a = as_matrix<T>(boxes, cols(), "boxes", "(N, 2*dim)");
      const auto n = static_cast<std::size_t>(a.shape(0));
      std::vector<std::int64_t> ids(n);
      {
        py::gil_scoped_release nogil;
        std::unique_lock lock(m_);
        s_->insert(a.data(), n, ids.data());
      }
      return to_numpy(std::move(ids));
    });
  }
  void move(const py::handle& ids, const py::handle& boxes) {
    with_scalar([&](auto t) {
      using T = decltype(t);
      auto i = as_ids(ids);
      auto a = as_matrix<T>(boxes, cols(), "boxes", "(N, 2*dim)");
      if (i.shape(0) != a.shape(0))
        throw py::value_error("ids and boxes differ in length: " + std::to_string(i.shape(0)) + " and " +
                              std::to_string(a.shape(0)));
      py::gil_scoped_release nogil;
      std::unique_lock lock(m_);
      s_->move(i.data(), a.data(), static_cast<std::size_t>(i.shape(0)));
    });
  }
  void remove(const py::handle& ids) {
    auto i = as_ids(ids);
    py::gil_scoped_release nogil;
    std::unique_lock lock(m_);
    s_->remove(i.data(), static_cast<std::size_t>(i.shape(0)));
  }
  py::array boxes(const py::handle& ids) const {
    return with_scalar([&](auto t) {
      using T = decltype(t);
      auto i = as_ids(ids);
      const auto n = static_cast<std::size_t>(i.shape(0));
      std::vector<T> out(n * static_cast<std::size_t>(cols()));
      {
        py::gil_scoped_release nogil;
        std::shared_lock lock(m_);
        s_->get(i.data(), n, out.data());
      }
      return to_numpy(std::move(out), {static_cast<py::ssize_t>(n), cols()});
    });
  }
  py::array pairs(bool sorted) {
    std::vector<std::int64_t> p;
    {
      py::gil_scoped_release nogil;
      std::unique_lock lock(m_);  // detection updates internal scratch
      p = s_->pairs(sorted);
    }
    const auto m = static_cast<py::ssize_t>(p.size() / 2);
    return to_numpy(std::move(p), {m, 2});
  }
  bool contains(const py::object& id) const {
    if (py::isinstance<py::bool_>(id)) return false;
    PyObject* index = PyNumber_Index(id.ptr());  // int, numpy integers, anything with __index__
    if (index == nullptr) {
      PyErr_Clear();
      return false;
    }
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(index, &overflow);
    Py_DECREF(index);
    if (overflow != 0) return false;  // does not fit in int64
    std::shared_lock lock(m_);
    return s_->contains(v);
  }
  std::size_t size() const {
    std::shared_lock lock(m_);
    return s_->size();
  }
  void clear() {
    py::gil_scoped_release nogil;
    std::unique_lock lock(m_);
    s_->clear();
  }
  void update() {
    py::gil_scoped_release nogil;
    std::unique_lock lock(m_);
    s_->update();
  }
  void validate() const {
    py::gil_scoped_release nogil;
    std::shared_lock lock(m_);
    s_->validate();
  }
  py::dict stats() const {
    std::shared_lock lock(m_);
    return s_->stats();
  }
  std::string method() const { return s_->method(); }
  unsigned workers() const { return workers_; }
  std::string repr() const {
    return "<hhg " + s_->method() + " dim=" + std::to_string(s_->dim()) +
           " dtype=" + (s_->scalar_bytes() == 4 ? "float32" : "float64") + " objects=" + std::to_string(size()) + ">";
  }

 protected:
  std::unique_ptr<structure> s_;
  mutable std::shared_mutex m_;
  unsigned workers_;
  hhg::config config_{};
};

class py_hash_grids : public py_structure {
 public:
  py_hash_grids(int dim, const py::object& dtype, const py::object& workers, const hhg::config& c)
      : py_structure("hhg", dim, dtype, workers, &c) {}

  py::dict settings() const { return config_dict(config_); }

 private:
  /// The one wrapper of every batch query: f() runs without the GIL, under
  /// the shared (read) lock; it returns C++ data only (no Python objects).
  template <class F>
  decltype(auto) read(F&& f) const {
    py::gil_scoped_release nogil;
    std::shared_lock lock(m_);
    return f();
  }

 public:
  py::tuple overlapping(const py::handle& q) const {
    return with_scalar([&](auto t) {
      using T = decltype(t);
      auto a = as_matrix<T>(q, cols(), "query_boxes", "(Q, 2*dim)");
      csr c = read([&] { return s_->overlapping(a.data(), static_cast<std::size_t>(a.shape(0))); });
      return csr_out(std::move(c));
    });
  }
  py::tuple containing(const py::handle& q) const {
    return with_scalar([&](auto t) {
      using T = decltype(t);
      auto a = as_matrix<T>(q, dim(), "points", "(Q, dim)");
      csr c = read([&] { return s_->containing(a.data(), static_cast<std::size_t>(a.shape(0))); });
      return csr_out(std::move(c));
    });
  }
  py::tuple in_sphere(const py::handle& centres, const py::handle& radii) const {
    return with_scalar([&](auto t) {
      using T = decltype(t);
      auto a = as_matrix<T>(centres, dim(), "centres", "(Q, dim)");
      const auto n = static_cast<std::size_t>(a.shape(0));
      const std::vector<double> r = per_query(radii, n, "radii");
      csr c = read([&] { return s_->in_sphere(a.data(), r.data(), n); });
      return csr_out(std::move(c));
    });
  }
  py::tuple ray_hits(const py::handle& origins, const py::handle& directions, const py::handle& max_t) const {
    return with_scalar([&](auto t) {
      using T = decltype(t);
      auto o = as_matrix<T>(origins, dim(), "origins", "(Q, dim)");
      auto d = as_matrix<T>(directions, dim(), "directions", "(Q, dim)");
      if (o.shape(0) != d.shape(0)) throw py::value_error("origins and directions differ in length");
      const auto n = static_cast<std::size_t>(o.shape(0));
      const std::vector<double> mt = per_query(max_t, n, "max_t");
      csr c = read([&] { return s_->ray_hits(o.data(), d.data(), mt.data(), n); });
      return py::make_tuple(to_numpy(std::move(c.indices)), to_numpy(std::move(c.values)),
                            to_numpy(std::move(c.offsets)));
    });
  }
  py::tuple first_ray_hit(const py::handle& origins, const py::handle& directions, const py::handle& max_t) const {
    return with_scalar([&](auto t) {
      using T = decltype(t);
      auto o = as_matrix<T>(origins, dim(), "origins", "(Q, dim)");
      auto d = as_matrix<T>(directions, dim(), "directions", "(Q, dim)");
      if (o.shape(0) != d.shape(0)) throw py::value_error("origins and directions differ in length");
      const auto n = static_cast<std::size_t>(o.shape(0));
      const std::vector<double> mt = per_query(max_t, n, "max_t");
      std::vector<std::int64_t> ids(n);
      std::vector<double> ts(n);
      read([&] { s_->first_ray_hit(o.data(), d.data(), mt.data(), n, ids.data(), ts.data()); });
      return py::make_tuple(to_numpy(std::move(ids)), to_numpy(std::move(ts)));
    });
  }
  py::tuple nearest(const py::handle& points, long long k) const {
    if (k < 0) throw py::value_error("k must be >= 0");
    return with_scalar([&](auto t) {
      using T = decltype(t);
      auto a = as_matrix<T>(points, dim(), "points", "(Q, dim)");
      const auto n = static_cast<std::size_t>(a.shape(0));
      const auto kk = static_cast<std::size_t>(k);
      // (Q k wrapped around for a huge k, and the writes went past empty buffers)
      if (kk != 0 && n > std::numeric_limits<py::ssize_t>::max() / sizeof(double) / kk)
        throw py::value_error("k = " + std::to_string(k) + " nearest for " + std::to_string(n) +
                              " points: the result would not fit in memory");
      std::vector<std::int64_t> ids(n * kk);
      std::vector<double> dist(n * kk);
      read([&] { s_->nearest(a.data(), n, kk, ids.data(), dist.data()); });
      const std::vector<py::ssize_t> shape{static_cast<py::ssize_t>(n), static_cast<py::ssize_t>(kk)};
      return py::make_tuple(to_numpy(std::move(ids), shape), to_numpy(std::move(dist), shape));
    });
  }
};

// ------------------------------------------------------------ hhg.pairs -------

/// Index pairs (i << 32 | j, i < j, i and j < n) as sorted (M, 2) rows: the
/// library's pair sort (hhg::sort_pair_keys, shared with all_pairs and `hhg pairs`).
std::vector<std::int64_t> sorted_rows(std::vector<std::uint64_t>&& keys, std::size_t n) {
  hhg::sort_pair_keys(keys, n);
  std::vector<std::int64_t> rows(2 * keys.size());
  for (std::size_t p = 0; p < keys.size(); ++p) {
    rows[2 * p] = static_cast<std::int64_t>(keys[p] >> 32);
    rows[2 * p + 1] = static_cast<std::int64_t>(keys[p] & 0xFFFFFFFFu);
  }
  return rows;
}

template <int D, class T>
std::vector<std::int64_t> pairs_of(const hhg::box<D, T>* b, std::size_t n, const std::string& method,
                                   unsigned workers) {
  if (n > std::numeric_limits<std::uint32_t>::max())
    throw hhg::error(hhg::errc::capacity, "too many boxes (at most 2^32 - 1)");
  return hhg::all_methods::with<D, T>(method, [&](auto id) {
    using M = typename decltype(id)::type;
    M m;
    std::vector<std::uint32_t> index_of;
    if constexpr (std::is_same_v<M, hhg::hash_grids<D, T>>) {
      m.set_executor(pool_for(workers));
      const std::vector<handle> hs = m.insert(std::span<const hhg::box<D, T>>(b, n));
      for (std::size_t i = 0; i < n; ++i) {
        if (hs[i].index >= index_of.size()) index_of.resize(std::max<std::size_t>(hs[i].index + 1, n));
        index_of[hs[i].index] = static_cast<std::uint32_t>(i);
      }
    } else {
      if constexpr (requires(M & x) { x.set_threads(workers); }) m.set_threads(workers);
      check_boxes(b, n);
      index_of.resize(n);
      for (std::size_t i = 0; i < n; ++i) {
        const handle h = m.insert(b[i]);
        if (h.index >= index_of.size()) index_of.resize(std::max<std::size_t>(h.index + 1, 2 * index_of.size()));
        index_of[h.index] = static_cast<std::uint32_t>(i);
      }
    }
    std::vector<std::uint64_t> keys;
    keys.reserve(2 * n);
    m.for_each_pair([&](handle x, handle y) {
      std::uint64_t i = index_of[x.index], j = index_of[y.index];
      if (j < i) std::swap(i, j);
      keys.push_back(i << 32 | j);
    });
    return sorted_rows(std::move(keys), n);
  });
}

template <class F>
decltype(auto) with_boxes(const py::handle& boxes, F&& f) {
  py::array raw = py::array::ensure(boxes);
  if (!raw) throw py::type_error("boxes must be an array of numbers");
  const bool single = raw.dtype().kind() == 'f' && raw.dtype().itemsize() == 4;
  auto run = [&](auto t) {
    using T = decltype(t);
    auto a = as_array<T>(raw, "boxes");
    if (a.ndim() != 2 || (a.shape(1) != 4 && a.shape(1) != 6))
      throw py::value_error("boxes must have shape (N, 4) (2D) or (N, 6) (3D), got " + shape_str(a));
    const auto n = static_cast<std::size_t>(a.shape(0));
    if (a.shape(1) == 4) return f(reinterpret_cast<const hhg::box<2, T>*>(a.data()), n);
    return f(reinterpret_cast<const hhg::box<3, T>*>(a.data()), n);
  };
  return single ? run(float{}) : run(double{});
}

py::array pairs(const py::handle& boxes, const std::string& method, const py::object& workers_obj) {
  const unsigned workers = parse_workers(workers_obj);
  std::vector<std::int64_t> rows = with_boxes(boxes, [&](const auto* b, std::size_t n) {
    py::gil_scoped_release nogil;
    return pairs_of(b, n, method, workers);
  });
  const auto m = static_cast<py::ssize_t>(rows.size() / 2);
  return to_numpy(std::move(rows), {m, 2});
}

/// The C++ time of hhg.pairs' work on the same input: best of `repeats` runs,
/// in seconds (for bench/python/bench_python.py).
double time_pairs(const py::handle& boxes, const std::string& method, const py::object& workers_obj, int repeats) {
  const unsigned workers = parse_workers(workers_obj);
  return with_boxes(boxes, [&](const auto* b, std::size_t n) {
    py::gil_scoped_release nogil;
    double best = std::numeric_limits<double>::infinity();
    for (int r = 0; r < std::max(repeats, 1); ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      const auto rows = pairs_of(b, n, method, workers);
      const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
      best = std::min(best, dt.count());
    }
    return best;
  });
}

// ---------------------------------------------------------- neighbours -------

/// The cell list on the workers' pool (hhg::cell_list::set_executor): its
/// sort, its walk and neighbors_of run there, with lists that do not depend on
/// the worker count.
template <int D, class T>
csr neighbors_of(const T* pts, std::size_t n, double r, const T* other, std::size_t nq, unsigned workers) {
  using P = std::array<T, D>;
  std::vector<P> points(reinterpret_cast<const P*>(pts), reinterpret_cast<const P*>(pts) + n);
  hhg::cell_list<D, T> cl;
  cl.set_executor(pool_for(workers));
  cl.build(points, r);
  hhg::neighbor_list nl;
  if (other == nullptr) {
    std::vector<P>().swap(points);
    cl.neighbors(nl, true);
  } else {
    cl.neighbors_of(std::vector<P>(reinterpret_cast<const P*>(other), reinterpret_cast<const P*>(other) + nq), nl);
  }
  csr c;
  c.offsets.assign(nl.offsets.begin(), nl.offsets.end());
  c.indices.assign(nl.indices.begin(), nl.indices.end());
  return c;
}

double check_radius(double r) {
  if (std::isnan(r) || std::isinf(r)) throw hhg::error(hhg::errc::nan_coordinate, "r must be finite");
  if (r < 0) throw hhg::error(hhg::errc::inverted_box, "r must be >= 0");
  if (r > hhg::kMaxRadius) throw hhg::error(hhg::errc::bad_config, "r is larger than 2^511");
  return r;
}

template <class F>
decltype(auto) with_points(const py::handle& points, const py::handle& other, F&& f) {
  py::array raw = py::array::ensure(points);
  if (!raw) throw py::type_error("points must be an array of numbers");
  const bool single = raw.dtype().kind() == 'f' && raw.dtype().itemsize() == 4;
  auto run = [&](auto t) {
    using T = decltype(t);
    auto a = as_array<T>(raw, "points");
    if (a.ndim() != 2 || (a.shape(1) != 2 && a.shape(1) != 3))
      throw py::value_error("points must have shape (N, 2) or (N, 3), got " + shape_str(a));
    carray<T> o;
    const T* op = nullptr;
    std::size_t nq = 0;
    if (!other.is_none()) {
      o = as_array<T>(other, "other");
      if (o.ndim() != 2 || o.shape(1) != a.shape(1))
        throw py::value_error("other must have shape (Q, " + std::to_string(a.shape(1)) + "), got " + shape_str(o));
      op = o.data();
      nq = static_cast<std::size_t>(o.shape(0));
    }
    const auto n = static_cast<std::size_t>(a.shape(0));
    if (a.shape(1) == 2) return f.template operator()<2, T>(a.data(), n, op, nq);
    return f.template operator()<3, T>(a.data(), n, op, nq);
  };
  return single ? run(float{}) : run(double{});
}

py::tuple neighbors(const py::handle& points, double r, const py::handle& other, const py::object& workers_obj) {
  const unsigned workers = parse_workers(workers_obj);
  check_radius(r);
  csr c = with_points(points, other, [&]<int D, class T>(const T* p, std::size_t n, const T* o, std::size_t nq) {
    py::gil_scoped_release nogil;
    return neighbors_of<D, T>(p, n, r, o, nq, workers);
  });
  return csr_out(std::move(c));
}

/// Every pair of points within r (closed, exact: the predicate of
/// hhg::within), each once, as keys (i << 32 | j, i < j), unordered. Points are
/// sorted into cubic cells of edge h slightly above r / 2 (raised so that
/// |coordinate| / h < 2^40 keeps cell indices exact enough); each cell is
/// tested against itself and the forward half of the 5^D cells around it, as
/// runs of up to five cells along x, found with one monotone cursor per run.
/// About half the distance tests of a full neighbour list, and no list to
/// transpose: query_pairs' one-worker path.
template <int D, class T>
std::vector<std::uint64_t> half_stencil_pairs(const T* p, std::size_t n, double r) {
  double maxabs = 0;
  for (std::size_t i = 0; i < n * D; ++i) {
    if (!std::isfinite(p[i]))
      throw hhg::error(hhg::errc::nan_coordinate, "point " + std::to_string(i / D) + " has a non-finite coordinate");
    maxabs = std::max(maxabs, std::abs(static_cast<double>(p[i])));
  }
  if (n > std::numeric_limits<std::uint32_t>::max())
    throw hhg::error(hhg::errc::capacity, "too many points (at most 2^32 - 1)");
  double h = std::max(r * 0.5 * (1.0 + 0x1p-8), maxabs * 0x1p-40);
  if (!(h > 0)) h = 1;
  const double inv = 1.0 / h;
  using K = std::array<std::int64_t, D>;  // cell coordinates, compared z, y, x
  auto less = [](const K& a, const K& b) {
    for (int i = D - 1; i >= 0; --i)
      if (a[i] != b[i]) return a[i] < b[i];
    return false;
  };
  std::vector<K> key(n);
  for (std::size_t i = 0; i < n; ++i)
    for (int a = 0; a < D; ++a)
      key[i][a] = static_cast<std::int64_t>(std::floor(static_cast<double>(p[i * D + a]) * inv));
  std::vector<std::uint32_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = static_cast<std::uint32_t>(i);
  std::sort(order.begin(), order.end(),
            [&](std::uint32_t a, std::uint32_t b) { return less(key[a], key[b]) || (key[a] == key[b] && a < b); });
  std::vector<std::array<double, D>> xyz(n);
  std::vector<K> cell;               // occupied cells, ascending
  std::vector<std::uint32_t> start;  // first sorted point of each cell, + end
  for (std::size_t s = 0; s < n; ++s) {
    for (int a = 0; a < D; ++a) xyz[s][a] = static_cast<double>(p[order[s] * D + a]);
    if (s == 0 || key[order[s]] != cell.back()) {
      cell.push_back(key[order[s]]);
      start.push_back(static_cast<std::uint32_t>(s));
    }
  }
  start.push_back(static_cast<std::uint32_t>(n));
  // forward rows: (dy, dz) > (0, 0) in z-major order, x from -2 to 2; the
  // row (0, 0) only x + 1, x + 2 (the cell itself separately)
  std::vector<std::array<std::int64_t, 3>> rows;  // dy, dz, first dx
  for (std::int64_t dz = 0; dz <= (D == 3 ? 2 : 0); ++dz)
    for (std::int64_t dy = (dz == 0 ? 0 : -2); dy <= 2; ++dy) rows.push_back({dy, dz, dy == 0 && dz == 0 ? 1 : -2});
  std::vector<std::size_t> cursor(rows.size(), 0);
  // The test is hhg::within's, exact, through its filter (as cell_list's):
  // the rounded d2 decides outside a band around r^2, the exact test inside
  // it. Until stop 79 this path kept d2 <= r * r in rounded doubles, and a pair
  // just beyond r could be reported with one worker and not with two.
  const hhg::detail::within_filter near(r);
  const double accept = near.fast ? near.accept : -1.0;
  const double reject = near.fast ? near.reject : std::numeric_limits<double>::infinity();
  // Keys are appended branch free: written always, kept when the test passes
  // (about a quarter of the candidates are within r: a branch would mispredict).
  std::vector<std::uint64_t> keys(8 * n + 64);
  std::size_t used = 0;
  auto test_run = [&](std::uint32_t s, std::uint32_t t0, std::uint32_t t1) {
    if (keys.size() < used + (t1 - t0)) keys.resize(2 * keys.size() + (t1 - t0));
    std::uint64_t* w = keys.data();
    const std::uint64_t i = order[s];
    const auto& a = xyz[s];
    auto dist2 = [&](std::uint32_t t) {
      double d2 = 0;
      for (int k = 0; k < D; ++k) {
        const double d = a[k] - xyz[t][k];
        d2 += d * d;
      }
      return d2;
    };
    const std::size_t start = used;
    bool band = false;  // some d2 in (accept, reject]: the exact test decides
    for (std::uint32_t t = t0; t < t1; ++t) {
      const double d2 = dist2(t);
      const std::uint64_t j = order[t];
      w[used] = i < j ? (i << 32 | j) : (j << 32 | i);
      used += static_cast<std::size_t>(d2 <= accept);
      band |= (d2 > accept) & (d2 <= reject);
    }
    if (band) [[unlikely]] {  // again, with the exact test in the band (rare)
      used = start;
      for (std::uint32_t t = t0; t < t1; ++t) {
        const std::uint64_t j = order[t];
        w[used] = i < j ? (i << 32 | j) : (j << 32 | i);
        used += static_cast<std::size_t>(near(a, xyz[t], dist2(t)));
      }
    }
  };
  for (std::size_t c = 0; c < cell.size(); ++c) {
    const std::uint32_t b0 = start[c], b1 = start[c + 1];
    for (std::uint32_t s = b0; s < b1; ++s) test_run(s, s + 1, b1);
    for (std::size_t k = 0; k < rows.size(); ++k) {
      K first = cell[c], last = cell[c];
      first[0] += rows[k][2];
      last[0] += 2;
      first[1] += rows[k][0];
      last[1] += rows[k][0];
      if constexpr (D == 3) {
        first[2] += rows[k][1];
        last[2] += rows[k][1];
      }
      std::size_t& q = cursor[k];
      while (q < cell.size() && less(cell[q], first)) ++q;
      std::size_t e = q;
      while (e < cell.size() && !less(last, cell[e])) ++e;
      if (e > q)  // cells q .. e - 1 are consecutive in storage: one run of points
        for (std::uint32_t s = b0; s < b1; ++s) test_run(s, start[q], start[e]);
    }
  }
  keys.resize(used);
  return keys;
}

py::array query_pairs(const py::handle& points, double r, const py::object& workers_obj) {
  const unsigned workers = parse_workers(workers_obj);
  check_radius(r);
  std::vector<std::int64_t> rows =
      with_points(points, py::none(), [&]<int D, class T>(const T* p, std::size_t n, const T*, std::size_t) {
        py::gil_scoped_release nogil;
        std::vector<std::int64_t> out;
        if (pool_for(workers) == nullptr) return sorted_rows(half_stencil_pairs<D, T>(p, n, r), n);  // one worker
        const csr c = neighbors_of<D, T>(p, n, r, nullptr, 0, workers);
        out.reserve(c.indices.size());
        for (std::size_t i = 0; i < n; ++i)
          for (auto t = c.offsets[i]; t < c.offsets[i + 1]; ++t)  // ascending: the part above i is a suffix
            if (c.indices[static_cast<std::size_t>(t)] > static_cast<std::int64_t>(i)) {
              out.push_back(static_cast<std::int64_t>(i));
              out.push_back(c.indices[static_cast<std::size_t>(t)]);
            }
        return out;
      });
  const auto m = static_cast<py::ssize_t>(rows.size() / 2);
  return to_numpy(std::move(rows), {m, 2});
}

// ----------------------------------------------------------- registry -------

/// "hhg::sweep_and_prune<3, double>" -> "SweepAndPrune": the Python class name
/// of a method, from its C++ class name.
template <class M>
std::string class_name() {
  int status = 0;
  char* d = abi::__cxa_demangle(typeid(M).name(), nullptr, nullptr, &status);
  std::string s = status == 0 && d ? d : typeid(M).name();
  std::free(d);
  if (const auto p = s.rfind("::", s.find('<')); p != std::string::npos) s = s.substr(p + 2);
  s = s.substr(0, s.find('<'));
  std::string out;
  bool up = true;
  for (const char ch : s) {
    if (ch == '_') {
      up = true;
      continue;
    }
    out += up ? static_cast<char>(std::toupper(static_cast<unsigned char>(ch))) : ch;
    up = false;
  }
  return out;
}

py::list method_classes() {
  py::list l;
  for (const std::string_view name : hhg::all_methods::names()) {
    const std::string cls =
        hhg::all_methods::with<3, double>(name, [](auto id) { return class_name<typename decltype(id)::type>(); });
    l.append(py::make_tuple(std::string(name), cls));
  }
  return l;
}

}  // namespace

PYBIND11_MODULE(_hhg, m) {
  registry = new pool_registry;
  pthread_atfork(nullptr, nullptr, &forget_pools_after_fork);
  m.doc() = "hhg: broad-phase collision detection with hierarchical hash grids (C++ core).";

  static py::exception<hhg::error> hhg_error(m, "Error", PyExc_ValueError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const hhg::error& e) {
      hhg_error(e.what());
    }  // validate()'s std::logic_error: pybind11's default, RuntimeError
  });

  m.def("_method_classes", &method_classes,
        "(method name, class name) for every method of hhg::all_methods, default first.");
  m.def(
      "methods",
      []() {
        py::list l;
        for (const std::string_view n : hhg::all_methods::names()) l.append(std::string(n));
        return l;
      },
      "Every method name hhg.pairs accepts (the registry hhg::all_methods), default first.");

  m.def("pairs", &pairs, py::arg("boxes"), py::arg("method") = "hhg", py::arg("workers") = py::none(),
        R"(Every overlapping pair of boxes (closed overlap: touching boxes overlap).

boxes: (N, 4) or (N, 6) array-like (min..., max...), float32 or float64
  (other real dtypes become float64). Zero copy for C-contiguous float32/float64.
method: a name from hhg.methods() (default "hhg", the hierarchical hash grid).
workers: None or -1 = every core, n >= 1 = n threads. Results do not depend on it.
Returns an (M, 2) int64 array of index pairs, i < j, sorted lexicographically.
Raises hhg.Error (a ValueError) for NaN or min > max, ValueError for a bad shape,
TypeError for a non-numeric dtype.)");
  m.def("_time_pairs", &time_pairs, py::arg("boxes"), py::arg("method") = "hhg", py::arg("workers") = py::none(),
        py::arg("repeats") = 3,
        "Best C++ wall time (s) of the work hhg.pairs does, without Python (benchmark helper).");
  m.def(
      "_as_array",
      [](const py::handle& a, const py::object& dtype) -> py::array {
        if (dtype_code(dtype) == 4) return as_array<float>(a, "a");
        return as_array<double>(a, "a");
      },
      "The array the module works on (test helper: zero copy means the same memory).");

  m.def("neighbors", &neighbors, py::arg("points"), py::arg("r"), py::arg("other") = py::none(),
        py::arg("workers") = py::none(),
        R"(Fixed-radius neighbours as CSR lists (indices, offsets), both int64.

Without `other`: for each point i of `points` ((N, 2) or (N, 3)), the other
points j != i with |p_i - p_j| <= r, ascending (like
cKDTree(points).query_ball_point(points, r) without i itself).
With `other` ((Q, dim)): for each row of `other`, the points within r, ascending
(like cKDTree(points).query_ball_point(other, r)).
The neighbours of query i are indices[offsets[i]:offsets[i+1]]; len(offsets) = Q + 1.
workers: None or -1 = every core, n >= 1 = n threads; results do not depend on it.)");
  m.def("query_pairs", &query_pairs, py::arg("points"), py::arg("r"), py::arg("workers") = py::none(),
        R"(Every pair of points within distance r (closed), as an (M, 2) int64 array,
i < j, sorted: the result of cKDTree(points).query_pairs(r, output_type="ndarray")
(sorted rows).)");

  py::class_<py_structure>(m, "Structure", R"(A dynamic broad phase of one method (see hhg.methods()).

Structure(method, dim=3, dtype="float64", workers=None). Objects are boxes
(min..., max...) under int64 ids; an id is (generation << 32) | slot index.)")
      .def(py::init([](const std::string& method, int dim, const py::object& dtype, const py::object& workers,
                       const py::kwargs& kw) {
             if (method == "hhg") {
               const hhg::config c = parse_config(kw);
               return std::make_unique<py_structure>(method, dim, dtype, workers, &c);
             }
             if (kw.size() != 0) throw py::type_error("configuration keywords are for HashGrids only");
             return std::make_unique<py_structure>(method, dim, dtype, workers, nullptr);
           }),
           py::arg("method"), py::arg("dim") = 3, py::arg("dtype") = "float64", py::arg("workers") = py::none())
      .def_property_readonly("dim", &py_structure::dim, "2 or 3.")
      .def_property_readonly("dtype", &py_structure::dtype, "float32 or float64.")
      .def_property_readonly("method", &py_structure::method, "The method's name in hhg.methods().")
      .def_property_readonly("workers", &py_structure::workers, "Threads used where the method has threads.")
      .def("insert", &py_structure::insert, py::arg("boxes"),
           "Stores (N, 2*dim) boxes; returns their ids (int64, input order). A bad box: nothing is stored.")
      .def("move", &py_structure::move, py::arg("ids"), py::arg("boxes"),
           "Replaces the boxes of ids (a repeated id: the last box wins). A bad id or box: nothing changes.")
      .def("remove", &py_structure::remove, py::arg("ids"), "Removes ids. A bad or repeated id: nothing changes.")
      .def("boxes", &py_structure::boxes, py::arg("ids"), "The stored boxes of ids, (N, 2*dim).")
      .def("pairs", &py_structure::pairs, py::arg("sort") = true,
           "Every overlapping pair as an (M, 2) int64 array of ids, smaller id first, rows sorted (unless sort=False).")
      .def("clear", &py_structure::clear, "Removes every object.")
      .def("update", &py_structure::update, "Finishes the update phase (detection calls it when needed).")
      .def("validate", &py_structure::validate, "Checks every invariant; RuntimeError on a violation.")
      .def("stats", &py_structure::stats,
           "Statistics as a dict (objects, bytes, box_tests of the last detection, ...).")
      .def("__len__", &py_structure::size)
      .def("__contains__", &py_structure::contains, py::arg("id"))
      .def("__repr__", &py_structure::repr);

  py::class_<py_hash_grids, py_structure>(m, "HashGrids",
                                          R"(The hierarchical hash grid (hhg::hash_grids) with batched queries.

HashGrids(dim=3, dtype="float64", workers=None, **config): config keywords are the
fields of hhg::config: hierarchy_factor, adaptive_factor, initial_cells (int or 2-3 ints),
minimal_grid_density, growth ("every_axis" | "by_occupancy"),
activation_threshold (int, None = never), cell_capacity, occupied_cells_capacity,
strategy ("incremental" | "rebuild"). A bad value raises hhg.Error.
Query results with a variable length are CSR: (indices, offsets), len(offsets) = Q + 1.)")
      .def(py::init([](int dim, const py::object& dtype, const py::object& workers, const py::kwargs& kw) {
             const hhg::config c = parse_config(kw);
             return std::make_unique<py_hash_grids>(dim, dtype, workers, c);
           }),
           py::arg("dim") = 3, py::arg("dtype") = "float64", py::arg("workers") = py::none())
      .def_property_readonly("config", &py_hash_grids::settings, "The configuration as a dict.")
      .def(
          "overlapping", &py_hash_grids::overlapping, py::arg("query_boxes"),
          "Ids of the objects overlapping each (Q, 2*dim) query box (closed), CSR (ids, offsets), unordered per query.")
      .def("containing", &py_hash_grids::containing, py::arg("points"),
           "Ids of the objects containing each (Q, dim) point (closed), CSR (ids, offsets).")
      .def("in_sphere", &py_hash_grids::in_sphere, py::arg("centres"), py::arg("radii"),
           "Ids of the objects meeting each closed sphere, CSR (ids, offsets); radii a number or (Q,).")
      .def("ray_hits", &py_hash_grids::ray_hits, py::arg("origins"), py::arg("directions"),
           py::arg("max_t") = std::numeric_limits<double>::infinity(),
           "Objects each ray origin + t*direction (0 <= t <= max_t) enters: (ids, t, offsets), per ray by entry t, "
           "ties by slot.")
      .def("first_ray_hit", &py_hash_grids::first_ray_hit, py::arg("origins"), py::arg("directions"),
           py::arg("max_t") = std::numeric_limits<double>::infinity(),
           "The first object each ray enters: (ids (Q,), t (Q,)), -1 and inf where none.")
      .def("nearest", &py_hash_grids::nearest, py::arg("points"), py::arg("k") = 1,
           "The k objects nearest each point by box distance: (ids (Q, k), distances (Q, k)), nearest first, "
           "padded with -1 and inf.");
}
