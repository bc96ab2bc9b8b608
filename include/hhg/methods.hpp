// hhg/methods.hpp: every pair-finding method, by name: the one list that the
// command-line tool, the benchmark, the tests and the Python module read.
//
// A method is a class template M<D, T> satisfying hhg::dynamic_broad_phase
// (hhg/broad_phase.hpp), default-constructible, with a static `method_name`.
// To add one: include its header and add it to `all_methods`.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "hhg/brute_force.hpp"
#include "hhg/error.hpp"
#include "hhg/hash_grids.hpp"
#include "hhg/hierarchical_hashing.hpp"
#include "hhg/linear_kdtree.hpp"
#include "hhg/pivot_hashing.hpp"
#include "hhg/spatial_hashing.hpp"
#include "hhg/sweep_and_prune.hpp"
#include "hhg/uniform_grid.hpp"

namespace hhg {

/// A list of method class templates.
template <template <int, class> class... Ms>
struct method_list {
  static constexpr std::size_t size = sizeof...(Ms);
  /// Their names, in list order.
  static constexpr std::array<std::string_view, size> names() { return {Ms<3, double>::method_name...}; }
  /// Calls f(std::type_identity<M<D, T>>{}) with the method named `name` and
  /// returns its result. Throws hhg::error(errc::unknown_method) for any other name.
  template <int D, class T, class F>
  static decltype(auto) with(std::string_view name, F&& f) {
    using R = decltype(f(std::type_identity<typename first<Ms...>::template type<D, T>>{}));
    // (one call per method, in list order; f runs for the first match only)
    if constexpr (std::is_void_v<R>) {
      bool found = false;
      const auto one = [&]<class M>(std::type_identity<M> m) {
        if (!found && name == M::method_name) {
          f(m);
          found = true;
        }
      };
      (one(std::type_identity<Ms<D, T>>{}), ...);
      if (!found) unknown(name);
    } else {
      std::optional<R> r;
      const auto one = [&]<class M>(std::type_identity<M> m) {
        if (!r && name == M::method_name) r.emplace(f(m));
      };
      (one(std::type_identity<Ms<D, T>>{}), ...);
      if (!r) unknown(name);
      return R(std::move(*r));  // a prvalue: decltype(auto) must not deduce R&& to the local
    }
  }

 private:
  template <template <int, class> class M, template <int, class> class...>
  struct first_of {
    template <int D, class T>
    using type = M<D, T>;
  };
  template <template <int, class> class... Ns>
  using first = first_of<Ns...>;
  [[noreturn]] static void unknown(std::string_view name) {
    std::string list;
    for (std::string_view n : names()) list += (list.empty() ? "" : ", ") + std::string(n);
    throw error(errc::unknown_method, "unknown method '" + std::string(name) + "' (methods: " + list + ")");
  }
};

/// Every method; the first is the default.
using all_methods = method_list<hash_grids, brute_force, sweep_and_prune, linear_kdtree, uniform_hashing,
                                multilevel_hashing, hierarchical_hashing, pivot_hashing, pivot_chunked, uniform_grid>;

}  // namespace hhg
