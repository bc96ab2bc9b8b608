// A randomized differential driver of hash_grids' dynamic API: long random
// interleavings of insert (one box and spans, with a bad box among them),
// remove, move (one object and batches: in slot order, shuffled, reversed,
// a part, a suffix, handles given twice, a bad handle or box among them,
// lengths that differ), clear, update, copies and moves of the structure,
// and bad single calls, against a model (slot index -> handle and box) and
// brute-force pairs. Two structures run in lockstep, one serial and one on a
// thread pool: after every step both validate() and match the model, and
// their find_pairs, and for_each_pair on a copy, give the same pairs in the
// same order. With an allocation hook (tests/test_alloc.cpp) some steps run
// with an allocation failing: single calls must then change nothing, a
// batch move leaves each object its old box or one of its new ones.
// Used by tests/test_dynamic_fuzz.cpp and tests/test_alloc.cpp.
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "support.hpp"

namespace hhg_test {

template <int D, class T>
struct dynamic_fuzz {
  using B = box<D, T>;
  using G = hash_grids<D, T>;
  // Runs f with one allocation failing (the hook's choice of which); true
  // when f failed with std::bad_alloc. Empty: no such steps.
  using oom_hook = std::function<bool(std::uint64_t k, const std::function<void()>& f)>;

  hhg::scenes::rng r;
  int shape;  // 0 sizes ~1, 1 sizes over 6 decades, 2 crowded, 3 integer (touching, zero size), 4 far out, 5 extremes
  config cfg;
  G a, b;  // a serial, b on `pool`
  hhg::executor* pool;
  oom_hook oom;
  std::map<std::uint32_t, std::pair<handle, B>> live;  // the model, by slot index
  std::vector<handle> dead;
  std::string trail;  // the last steps, for the failure message
  std::size_t target = 60;

  dynamic_fuzz(std::uint64_t seed, int shape_, const config& c, bool small, hhg::executor* p, oom_hook hook = {})
      : r(seed), shape(shape_), cfg(c), a(c), b(c), pool(p), oom(std::move(hook)) {
    if (small) {
      hhg::detail::tuning t = small_tuning();
      t.apart_index_min = 3;
      t.reserve_estimate_min = 100;
      a.set_tuning(t);
      b.set_tuning(t);
    }
    b.set_executor(pool);
  }

  [[noreturn]] void fail(const std::string& what) const { throw std::runtime_error(what + "; last steps: " + trail); }
  void require(bool ok, const std::string& what) const {
    if (!ok) fail(what);
  }
  static T inf() { return std::numeric_limits<T>::infinity(); }

  B random_box() {
    B x;
    double offset = 0, world = 20, s = r.uniform(0.3, 2);
    if (shape == 1) {
      world = 50;
      s = std::pow(10.0, r.uniform(-3, 3));
    } else if (shape == 2) {
      world = 1;
      s = r.uniform(0.05, 1.5);
    } else if (shape == 4) {
      offset = (std::is_same_v<T, float> ? 3e5 : 7e11) * (r.below(2) ? 1 : -1);
    } else if (shape == 5) {
      s = std::pow(10.0, r.uniform(-2, 2));
    }
    for (std::size_t i = 0; i < D; ++i) {
      if (shape == 3) {
        x.min[i] = static_cast<T>(static_cast<double>(r.below(21)) - 10);
        x.max[i] = static_cast<T>(x.min[i] + static_cast<T>(r.below(4)));
      } else {
        const double c = offset + r.uniform(-world, world), e = s * r.uniform(0.5, 1.0);
        x.min[i] = static_cast<T>(c - e / 2);
        x.max[i] = std::max(x.min[i], static_cast<T>(c + e / 2));
      }
    }
    const std::uint64_t k = r.below(shape == 5 ? 100 : 2000);
    const T far = static_cast<T>(std::is_same_v<T, float> ? 1e35 : 1e300);
    if (k == 0) {
      x.max = x.min;  // zero size
    } else if (k == 1) {
      x = B{};
    } else if (k == 2) {
      x.max[r.below(D)] = inf();
    } else if (k == 3) {
      x.min[r.below(D)] = -inf();
    } else if (k == 4) {  // huge
      for (std::size_t i = 0; i < D; ++i) {
        x.min[i] = -far;
        x.max[i] = far;
      }
    } else if (k == 5) {  // very far
      for (std::size_t i = 0; i < D; ++i) {
        x.min[i] = far;
        x.max[i] = far;
      }
    } else if (k == 6) {  // a needle
      x.max[0] = static_cast<T>(x.min[0] + 1000);
    }
    return x;
  }

  B moved(const B& o) {
    const std::uint64_t k = r.below(10);
    if (k < 6 && hhg::is_bounded(o)) {  // a small move or a resize over a factor up to 64
      B x = o;
      const double f = k == 5 ? std::ldexp(1.0, static_cast<int>(r.below(13)) - 6) : 1.0;
      for (std::size_t i = 0; i < D; ++i) {
        const double edge = static_cast<double>(x.max[i]) - static_cast<double>(x.min[i]);
        const double d = r.uniform(-0.3, 0.3) * (edge + 0.1);
        x.min[i] = static_cast<T>(x.min[i] + d);
        const T hi = static_cast<T>(x.min[i] + edge * f);
        x.max[i] = std::isfinite(hi) ? std::max(x.min[i], hi) : x.min[i];
      }
      return x;
    }
    return k == 6 ? o : random_box();
  }

  B bad_box() {
    B x = random_box();
    const std::size_t i = r.below(D);
    switch (r.below(3)) {
      case 0: x.min[i] = std::numeric_limits<T>::quiet_NaN(); break;
      case 1: x.max[i] = std::numeric_limits<T>::quiet_NaN(); break;
      default: x.min[i] = static_cast<T>(1), x.max[i] = static_cast<T>(0); break;
    }
    return x;
  }

  handle random_live() {
    auto it = live.begin();
    std::advance(it, static_cast<std::ptrdiff_t>(r.below(live.size())));
    return it->second.first;
  }

  handle bad_handle() {
    const std::uint64_t k = r.below(4);
    if (k == 1 && !dead.empty()) {
      const handle h = dead[r.below(dead.size())];
      if (!live.count(h.index) || live[h.index].first != h) return h;
    }
    if (k == 2) return handle{static_cast<std::uint32_t>(live.size() + dead.size() + 1000), 1};
    if (k == 3 && !live.empty()) {
      handle h = random_live();
      h.generation += 1 + static_cast<std::uint32_t>(r.below(3));
      return h;
    }
    return handle{};
  }

  template <class V>
  void shuffle(std::vector<V>& v) {
    for (std::size_t i = v.size(); i-- > 1;) std::swap(v[i], v[r.below(i + 1)]);
  }

  template <class F>
  void both(F&& f) {
    f(a);
    f(b);
  }

  template <class F>
  void expect_error(const char* what, F&& f) {
    for (G* g : {&a, &b}) {
      bool threw = false;
      try {
        f(*g);
      } catch (const hhg::error&) {
        threw = true;
      }
      require(threw, std::string(what) + " did not throw");
    }
  }

  void check(bool detect) {
    for (G* g : {&a, &b}) {
      try {
        g->validate();
      } catch (const std::exception& e) {
        fail(std::string("validate(): ") + e.what());
      }
      require(g->size() == live.size(), "size() differs from the model");
      for (const auto& entry : live) {
        require(g->contains(entry.second.first), "a live handle is not contained");
        require(g->get(entry.second.first) == entry.second.second, "get() differs from the model");
      }
      for (std::size_t k = 0; k < std::min<std::size_t>(dead.size(), 40); ++k) {
        const handle h = dead[dead.size() - 1 - k];
        if (!live.count(h.index) || live[h.index].first != h) require(!g->contains(h), "a stale handle is contained");
      }
    }
    if (!detect) return;
    std::vector<handle_pair> pa, pb, pc;
    G twin(a);  // the same state: its for_each_pair gives a's find_pairs order
    a.find_pairs(pa);
    b.find_pairs(pb);
    require(pa == pb, "find_pairs differs between one worker and the pool (pairs or order)");
    twin.for_each_pair([&pc](handle x, handle y) { pc.push_back({x, y}); });
    require(pa == pc, "for_each_pair differs from find_pairs (pairs or order)");
    std::vector<std::pair<handle, B>> v;
    for (const auto& entry : live) v.push_back(entry.second);
    std::vector<handle_pair> want;
    for (std::size_t i = 0; i < v.size(); ++i)
      for (std::size_t j = i + 1; j < v.size(); ++j)
        if (hhg::overlaps(v[i].second, v[j].second)) want.push_back({v[i].first, v[j].first});
    hhg::canonicalize(want);
    hhg::canonicalize(pa);
    require(pa == want, "pairs differ from brute force: " + std::to_string(pa.size()) + " found, " +
                            std::to_string(want.size()) + " expected");
  }

  void insert_one() {
    const B x = random_box();
    const handle h = a.insert(x);
    require(b.insert(x) == h, "insert: the two structures gave different handles");
    require(!live.count(h.index), "insert: a live slot was given out again");
    live[h.index] = {h, x};
    trail += "i";
  }

  void insert_span() {
    std::size_t k = r.below(4) == 0 ? r.below(3) : 1 + r.below(r.below(3) == 0 ? 400 : 80);
    if (live.empty() && r.below(2)) k = 256 + r.below(300);  // into an empty structure: the bulk activation
    std::vector<B> bs;
    for (std::size_t i = 0; i < k; ++i) bs.push_back(random_box());
    if (k > 0 && r.below(6) == 0) {
      bs[r.below(k)] = bad_box();
      expect_error("insert(span) with a bad box", [&bs](G& g) { g.insert(std::span<const B>(bs)); });
      trail += "I!";
      return;
    }
    const std::vector<handle> hs = a.insert(std::span<const B>(bs));
    require(b.insert(std::span<const B>(bs)) == hs, "insert(span): the two structures gave different handles");
    require(hs.size() == k, "insert(span): a handle per box");
    for (std::size_t i = 0; i < k; ++i) {
      require(!live.count(hs[i].index), "insert(span): a live slot was given out again");
      live[hs[i].index] = {hs[i], bs[i]};
    }
    trail += "I" + std::to_string(k);
  }

  void remove_one() {
    const handle h = random_live();
    both([h](G& g) { g.remove(h); });
    live.erase(h.index);
    dead.push_back(h);
    trail += "r";
  }

  void move_one() {
    const handle h = random_live();
    const B x = moved(live[h.index].second);
    both([h, &x](G& g) { g.move(h, x); });
    live[h.index].second = x;
    trail += "m";
  }

  void bad_single() {
    const handle h = bad_handle();
    const B x = random_box(), bad = bad_box();
    switch (r.below(5)) {
      case 0: expect_error("remove(bad handle)", [h](G& g) { g.remove(h); }); break;
      case 1: expect_error("move(bad handle)", [h, &x](G& g) { g.move(h, x); }); break;
      case 2: expect_error("insert(bad box)", [&bad](G& g) { g.insert(bad); }); break;
      case 3: expect_error("get(bad handle)", [h](G& g) { (void)g.get(h); }); break;
      default:
        if (live.empty()) break;
        const handle l = random_live();
        expect_error("move(bad box)", [l, &bad](G& g) { g.move(l, bad); });
    }
    trail += "!";
  }

  // The handles of a batch move: every live object in slot order, or
  // shuffled, reversed, a part, a suffix, with repeats, or a few.
  std::vector<handle> batch_handles(std::uint64_t kind) {
    std::vector<handle> hs;
    for (const auto& entry : live) hs.push_back(entry.second.first);
    const std::size_t n = hs.size();
    if (kind == 1) shuffle(hs);
    if (kind == 2) hs.resize(n * (5 + r.below(5)) / 10);
    if (kind == 3) {
      for (std::size_t i = 0; i < 1 + n / 10; ++i) hs.push_back(hs[r.below(n)]);
      if (r.below(2)) shuffle(hs);
    }
    if (kind == 4) {
      std::vector<handle> few;
      for (std::size_t i = 0, k = r.below(20); i < k; ++i) few.push_back(hs[r.below(n)]);
      hs = few;
    }
    if (kind == 5) std::reverse(hs.begin(), hs.end());
    if (kind == 6) hs.erase(hs.begin(), hs.begin() + static_cast<std::ptrdiff_t>(n * r.below(5) / 10));
    if (kind == 7) std::erase_if(hs, [this](handle h) { return !hhg::is_bounded(live[h.index].second); });
    return hs;
  }

  // Small moves (a time step), or moved() boxes; a handle given twice gets
  // its next box from its last one.
  std::vector<B> batch_boxes(const std::vector<handle>& hs) {
    const bool coherent = r.below(2) != 0;
    std::map<std::uint32_t, B> now;
    std::vector<B> bs;
    for (const handle h : hs) {
      const B& o = now.count(h.index) ? now[h.index] : live[h.index].second;
      B x = coherent && r.below(20) != 0 ? o : moved(o);
      if (coherent && hhg::is_bounded(x))
        for (std::size_t i = 0; i < D; ++i) {
          const T d = static_cast<T>(r.uniform(-0.02, 0.02));
          x.min[i] = static_cast<T>(x.min[i] + d);
          x.max[i] = std::max(x.min[i], static_cast<T>(x.max[i] + d));
        }
      bs.push_back(x);
      now[h.index] = x;
    }
    return bs;
  }

  void batch() {
    if (live.empty()) return;
    const std::uint64_t kind = r.below(8);
    std::vector<handle> hs = batch_handles(kind);
    std::vector<B> bs = batch_boxes(hs);
    if (!hs.empty() && r.below(6) == 0) {  // a bad entry: nothing changes
      const std::size_t at = r.below(hs.size());
      if (r.below(2))
        hs[at] = bad_handle();
      else
        bs[at] = bad_box();
      expect_error("a batch move with a bad entry",
                   [&hs, &bs](G& g) { g.move(std::span<const handle>(hs), std::span<const B>(bs)); });
      trail += "B!";
      return;
    }
    if (!hs.empty() && r.below(30) == 0)
      expect_error("a batch move with one box too few", [&hs, &bs](G& g) {
        g.move(std::span<const handle>(hs), std::span<const B>(bs).first(bs.size() - 1));
      });
    both([&hs, &bs](G& g) { g.move(std::span<const handle>(hs), std::span<const B>(bs)); });
    for (std::size_t i = 0; i < hs.size(); ++i) live[hs[i].index].second = bs[i];
    trail += "B" + std::to_string(kind) + ":" + std::to_string(hs.size());
  }

  void structure() {
    const std::uint64_t k = r.below(6);
    if (k == 0) {  // copy construction and assignment
      G c(a);
      a = c;
      G d(b);
      b = std::move(d);
    } else if (k == 1) {  // move construction and assignment
      G c(std::move(a));
      a = std::move(c);
      G d(std::move(b));
      b = std::move(d);
    } else if (k == 2) {  // a copy keeps the old state while the original changes
      const G c(a);
      const auto before = live;
      if (!live.empty()) remove_one();
      require(c.size() == before.size(), "a copy's size changed with the original");
      for (const auto& entry : before)
        require(c.get(entry.second.first) == entry.second.second, "a copy's box changed with the original");
      c.validate();
    } else if (k == 3) {
      both([](G& g) { g.update(); });
    } else {
      std::swap(a, b);  // the pool's structure is now the serial one and back
      std::swap(a, b);
    }
    b.set_executor(pool);
    trail += "C" + std::to_string(k);
  }

  void clear() {
    both([](G& g) { g.clear(); });
    for (const auto& entry : live) dead.push_back(entry.second.first);
    live.clear();
    trail += "X";
  }

  // One step on `a` with an allocation failing (b is then made a copy of a).
  void out_of_memory() {
    const std::uint64_t kind = r.below(6), k = 1 + r.below(r.below(2) ? 8 : 200);
    bool failed = false;
    if (kind == 0) {
      const B x = random_box();
      handle h{};
      failed = oom(k, [&] { h = a.insert(x); });
      if (!failed) live[h.index] = {h, x};
    } else if (kind == 1) {
      std::vector<B> bs;
      std::size_t n = 1 + r.below(300);
      if (!a.stats().grids_active && cfg.activation_threshold < 1000)  // often just past the activation
        n = cfg.activation_threshold + 1 - std::min(a.size(), cfg.activation_threshold) + r.below(3);
      for (std::size_t i = 0; i < n; ++i) bs.push_back(random_box());
      std::vector<handle> hs;
      failed = oom(k, [&] { hs = a.insert(std::span<const B>(bs)); });
      for (std::size_t i = 0; i < hs.size(); ++i) live[hs[i].index] = {hs[i], bs[i]};
    } else if (kind == 2 && !live.empty()) {
      const handle h = random_live();
      failed = oom(k, [&] { a.remove(h); });
      if (!failed) {
        live.erase(h.index);
        dead.push_back(h);
      }
    } else if (kind == 3 && !live.empty()) {
      const handle h = random_live();
      const B x = moved(live[h.index].second);
      failed = oom(k, [&] { a.move(h, x); });
      if (!failed) live[h.index].second = x;
    } else if (kind == 4 && !live.empty()) {  // each object keeps its old box or gets one of its new ones
      const std::vector<handle> hs = batch_handles(r.below(8));
      const std::vector<B> bs = batch_boxes(hs);
      failed = oom(k, [&] { a.move(std::span<const handle>(hs), std::span<const B>(bs)); });
      std::map<std::uint32_t, std::vector<B>> given;
      for (std::size_t i = 0; i < hs.size(); ++i) given[hs[i].index].push_back(bs[i]);
      for (const auto& entry : given) {
        auto& model = live[entry.first];
        const B now = a.get(model.first);
        require(now == model.second || std::find(entry.second.begin(), entry.second.end(), now) != entry.second.end(),
                "a batch move that ran out of memory gave an object a box it was never given");
        model.second = now;
      }
    } else {
      std::vector<handle_pair> out;
      failed = oom(k, [&] { a.find_pairs(out); });
    }
    trail += "O" + std::to_string(kind) + (failed ? "!" : "");
    b = a;
    b.set_executor(pool);
  }

  void run(int steps) {
    for (int step = 0; step < steps; ++step) {
      if (r.below(50) == 0) target = std::vector<std::size_t>{0, 10, 33, 70, 150, 300}[r.below(6)];
      const std::uint64_t k = r.below(100);
      const std::size_t n = live.size();
      if (r.below(oom ? 40 : 400) == 0)  // (with out-of-memory steps: often, for activations into freed slots)
        clear();
      else if (k < 8)
        bad_single();
      else if (k < 12 && oom)
        out_of_memory();
      else if (k < 16)
        structure();
      else if (k < 28)
        batch();
      else if (k < 33)
        insert_span();
      else if (n == 0 || (n < target && k < 60))
        insert_one();
      else if (n > target && k < 60)
        remove_one();
      else
        move_one();
      if (trail.size() > 300) trail.erase(0, trail.size() - 200);
      check(live.size() < 150 || step % 8 == 0);
    }
    check(true);
  }
};

// The configurations the driver runs with, by number: small thresholds (every
// path at test sizes), the rebuild strategy, early or immediate activation,
// factor 2 and the smallest grids, the thesis' growth and cell capacity 3.
inline std::pair<config, bool> fuzz_config(int variant) {
  config c;
  if (variant & 2) c.strategy = hhg::update_strategy::rebuild;
  if (variant & 4) c.activation_threshold = (variant & 8) ? 0 : 5;
  if (variant & 8) {
    c.hierarchy_factor = 2;
    c.initial_cells = {4, 4, 4};
    c.minimal_grid_density = 1;
  }
  if (variant & 16) {
    c.growth = hhg::growth_rule::every_axis;
    c.adaptive_factor = false;
    c.cell_capacity = 3;
  }
  return {c, (variant & 1) != 0};
}

}  // namespace hhg_test
