// apps/hhg/methods.hpp: the pair-finding methods as the tool shows them.
//
// The list of methods is hhg::all_methods (include/hhg/methods.hpp), the one
// registry; this file only adds a one-line summary per name for --help. A test
// (tests/test_cli_methods.cpp) checks that every registry name has a summary
// and every summary a registry name. An unknown name is an hhg::error
// (errc::unknown_method) from the registry.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hhg/methods.hpp"

namespace hhg::cli {

/// One line per method for --help, keyed by hhg::all_methods' names.
inline const std::vector<std::pair<std::string_view, std::string_view>>& method_summaries() {
  static const std::vector<std::pair<std::string_view, std::string_view>> kSummaries = {
      {"hhg", "hierarchical hash grid (default)"},
      {"brute", "all-pairs check, O(N^2): the reference"},
      {"sap", "sweep and prune: sorted axes kept by insertion sort, persistent pair set"},
      {"kdtree", "linear kd-tree (Morton codes, element splitting, sorted-array sweep; seed 002)"},
      {"uniform", "uniform spatial hashing (Teschner et al. 2003): one cell size, objects in every cell they overlap"},
      {"multilevel", "multilevel hashing (Eitz & Lixu 2007): a power-of-two cell size per object class"},
      {"hierarchical", "hierarchical hashing (Pouchol et al. 2009): top-down additive keys, has-children pruning"},
      {"pivot", "pivot-table hashing (Pozzer et al.; parallel, seed 004): counting-sorted dense grid"},
      {"pivot-chunked", "pivot-table hashing with a chunked, paged pivot table (memory follows the objects)"},
      {"grid", "strong uniform-grid baseline: dense cells of the largest object's size, counting sort every detection"},
  };
  return kSummaries;
}

/// The registry's names, in registry order (the first is the default).
inline std::vector<std::string> method_names() {
  std::vector<std::string> names;
  for (const std::string_view n : all_methods::names()) names.emplace_back(n);
  return names;
}

/// The summary of `name`, empty when there is none.
inline std::string_view method_summary(std::string_view name) {
  for (const auto& [n, s] : method_summaries())
    if (n == name) return s;
  return {};
}

/// "hhg: ...; brute: ..." for --help, in registry order.
inline std::string method_help() {
  std::string s;
  for (const std::string_view n : all_methods::names()) {
    if (!s.empty()) s += "; ";
    s += std::string(n) + ": " + std::string(method_summary(n));
  }
  return s;
}

/// Calls f(std::type_identity<M<D, double>>{}) for the method called `name`;
/// throws hhg::error(errc::unknown_method) for a name not in the registry.
template <int D, class F>
auto with_method(std::string_view name, F&& f) {
  return all_methods::with<D, double>(name, std::forward<F>(f));
}

}  // namespace hhg::cli
