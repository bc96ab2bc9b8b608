// bench/literal_hash_grids.hpp: the thesis' data layout, written literally, as a
// baseline for measuring hhg's layout (docs/hash_grids.md, "Data layout").
//
// Schornbaum 2009, section 3.1: a dense array of cells per grid, each cell
// {pointer to a neighbour-offset array, pointer to a heap-allocated
// std::vector of object pointers (reserve 16), index in the occupied list};
// one offset array shared by all inner cells, one allocated per outer cell;
// objects referenced by pointer; occupied cells in insertion order;
// Algorithm 2 (update), 3 (placement), 4 (detection: first 13 offsets within a
// grid, all 27 in coarser grids). 3D, double, no activation threshold, no
// unbounded objects: a measurement baseline, not a library component.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <list>
#include <memory>
#include <utility>
#include <vector>

#include "hhg/box.hpp"

namespace hhg::bench {

class literal_hash_grids {
 public:
  using box_type = box<3, double>;

  ~literal_hash_grids() {
    for (grid* g : grids_) delete g;
  }

  std::uint32_t insert(const box_type& b) {
    bodies_.push_back(std::make_unique<body>());
    body* o = bodies_.back().get();
    o->b = b;
    o->id = static_cast<std::uint32_t>(bodies_.size() - 1);
    add(o);
    return o->id;
  }

  // Algorithm 2 for one object.
  void move(std::uint32_t id, const box_type& b) {
    body* o = bodies_[id].get();
    o->b = b;
    const double s = size(b);
    grid* g = o->g;
    if (s < g->cell_size && s >= g->cell_size / kFactor) {
      const std::size_t h = g->hash(b);
      if (h != o->hash) {
        g->remove(o);
        g->add(o, h);
      }
    } else {
      g->remove(o);
      add(o);
    }
  }

  void find_pairs(std::vector<std::pair<std::uint32_t, std::uint32_t>>& out) {
    out.clear();
    for (auto gi = grids_.begin(); gi != grids_.end(); ++gi) {
      grid* g = *gi;
      for (cell* c : g->occupied) {
        const auto& v = *c->bodies;
        for (std::size_t i = 0; i < v.size(); ++i)
          for (std::size_t j = i + 1; j < v.size(); ++j) test(v[i], v[j], out);
        for (int k = 0; k < 13; ++k) {
          const cell* n = c + c->offsets[k];
          if (!n->bodies) continue;
          for (body* a : v)
            for (body* b : *n->bodies) test(a, b, out);
        }
        for (auto hi = std::next(gi); hi != grids_.end(); ++hi) {
          grid* h = *hi;
          for (body* a : v) {
            const cell* ch = &h->cells[h->hash(a->b)];
            for (int k = 0; k < 27; ++k) {
              const cell* n = ch + ch->offsets[k];
              if (!n->bodies) continue;
              for (body* b : *n->bodies) test(a, b, out);
            }
          }
        }
      }
    }
  }

  std::size_t bytes() const {
    std::size_t total = bodies_.size() * (sizeof(body) + sizeof(void*) + 16);
    for (const grid* g : grids_) total += g->bytes();
    return total;
  }

 private:
  static constexpr double kFactor = 2.0;
  static constexpr std::size_t kInitialCells = 16, kDensity = 8, kCellReserve = 16;
  struct grid;
  struct body {
    box_type b;
    std::uint32_t id = 0;
    grid* g = nullptr;
    std::size_t hash = 0, index = 0;
  };
  struct cell {
    const int* offsets = nullptr;
    std::vector<body*>* bodies = nullptr;
    std::size_t occupied_index = 0;
  };
  struct grid {
    double cell_size, inv;
    std::size_t n;  // cells per axis
    std::vector<cell> cells;
    std::vector<cell*> occupied;
    std::array<int, 27> inner{};
    std::vector<std::unique_ptr<int[]>> outer;
    std::size_t count = 0;

    grid(double c, std::size_t cells_per_axis) : cell_size(c), inv(1.0 / c), n(cells_per_axis) { init(); }
    ~grid() {
      for (cell* c : occupied) delete c->bodies;
    }
    void init() {
      cells.assign(n * n * n, cell{});
      outer.clear();
      occupied.clear();
      occupied.reserve(256);
      const auto idx = [&](long x, long y, long z) {
        const long m = static_cast<long>(n);
        return ((x + m) % m) + ((y + m) % m) * m + ((z + m) % m) * m * m;
      };
      int k = 0;
      for (int dz = -1; dz <= 1; ++dz)
        for (int dy = -1; dy <= 1; ++dy)
          for (int dx = -1; dx <= 1; ++dx)
            inner[k++] = static_cast<int>(dx + dy * static_cast<long>(n) + dz * static_cast<long>(n * n));
      for (std::size_t z = 0; z < n; ++z)
        for (std::size_t y = 0; y < n; ++y)
          for (std::size_t x = 0; x < n; ++x) {
            cell& c = cells[x + y * n + z * n * n];
            if (x > 0 && y > 0 && z > 0 && x + 1 < n && y + 1 < n && z + 1 < n) {
              c.offsets = inner.data();
              continue;
            }
            outer.emplace_back(new int[27]);
            int* o = outer.back().get();
            const long self = idx(static_cast<long>(x), static_cast<long>(y), static_cast<long>(z));
            int j = 0;
            for (int dz = -1; dz <= 1; ++dz)
              for (int dy = -1; dy <= 1; ++dy)
                for (int dx = -1; dx <= 1; ++dx)
                  o[j++] = static_cast<int>(
                      idx(static_cast<long>(x) + dx, static_cast<long>(y) + dy, static_cast<long>(z) + dz) - self);
            c.offsets = o;
          }
    }
    std::size_t hash(const box_type& b) const {
      const auto m = static_cast<long>(n) - 1;
      const long x = static_cast<long>(std::floor(b.min[0] * inv)) & m;
      const long y = static_cast<long>(std::floor(b.min[1] * inv)) & m;
      const long z = static_cast<long>(std::floor(b.min[2] * inv)) & m;
      return static_cast<std::size_t>(x + y * (m + 1) + z * (m + 1) * (m + 1));
    }
    void add(body* o, std::size_t h) {
      cell& c = cells[h];
      if (!c.bodies) {
        c.bodies = new std::vector<body*>();
        c.bodies->reserve(kCellReserve);
        c.occupied_index = occupied.size();
        occupied.push_back(&c);
      }
      o->g = this;
      o->hash = h;
      o->index = c.bodies->size();
      c.bodies->push_back(o);
      ++count;
    }
    void remove(body* o) {
      cell& c = cells[o->hash];
      auto& v = *c.bodies;
      v[o->index] = v.back();
      v[o->index]->index = o->index;
      v.pop_back();
      --count;
      if (v.empty()) {
        delete c.bodies;
        c.bodies = nullptr;
        occupied[c.occupied_index] = occupied.back();
        occupied[c.occupied_index]->occupied_index = c.occupied_index;
        occupied.pop_back();
      }
    }
    void grow() {
      std::vector<body*> all;
      for (cell* c : occupied) {
        all.insert(all.end(), c->bodies->begin(), c->bodies->end());
        delete c->bodies;
      }
      n *= 2;
      count = 0;
      init();
      for (body* o : all) add(o, hash(o->b));
    }
    std::size_t bytes() const {
      return cells.size() * sizeof(cell) + (outer.size() + 1) * 27 * sizeof(int) + outer.size() * 16 +
             occupied.capacity() * sizeof(cell*) +
             occupied.size() * (sizeof(std::vector<body*>) + 16 + kCellReserve * sizeof(body*));
    }
  };

  static double size(const box_type& b) {
    return std::max({b.max[0] - b.min[0], b.max[1] - b.min[1], b.max[2] - b.min[2]});
  }

  // Algorithm 3
  void add(body* o) {
    const double s = size(o->b);
    grid* g = nullptr;
    if (grids_.empty()) {
      g = new grid(s * std::sqrt(kFactor), kInitialCells);
      grids_.push_back(g);
    } else {
      auto it = grids_.begin();
      for (; it != grids_.end(); ++it) {
        if (s < (*it)->cell_size) {
          double x = (*it)->cell_size / kFactor;
          if (s >= x) {
            g = *it;
          } else {
            while (s < x) x /= kFactor;
            g = new grid(x * kFactor, kInitialCells);
            grids_.insert(it, g);
          }
          break;
        }
      }
      if (!g) {
        double x = grids_.back()->cell_size;
        while (s >= x) x *= kFactor;
        g = new grid(x, kInitialCells);
        grids_.push_back(g);
      }
    }
    g->add(o, g->hash(o->b));
    if (g->count > g->cells.size() / kDensity) g->grow();
  }

  static void test(const body* a, const body* b, std::vector<std::pair<std::uint32_t, std::uint32_t>>& out) {
    if (overlaps(a->b, b->b)) out.emplace_back(a->id, b->id);
  }

  std::list<grid*> grids_;
  std::vector<std::unique_ptr<body>> bodies_;
};

}  // namespace hhg::bench
