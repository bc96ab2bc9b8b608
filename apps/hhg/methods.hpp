// apps/hhg/methods.hpp: every pair-finding method the tool offers, by name.
//
// One place lists them: `hhg pairs --method`, `hhg replay --method` and the
// help text read this table. A method is any class template M<D, T> that
// satisfies hhg::dynamic_broad_phase (include/hhg/broad_phase.hpp) and is
// default-constructible. To add one: include its header and add one line to
// kMethods and one branch to with_method.
#pragma once

#include <string>
#include <type_traits>
#include <vector>

#include "hhg/brute_force.hpp"
#include "hhg/hash_grids.hpp"
#include "hhg/hierarchical_hashing.hpp"
#include "hhg/linear_kdtree.hpp"
#include "hhg/pivot_hashing.hpp"
#include "hhg/spatial_hashing.hpp"
#include "hhg/sweep_and_prune.hpp"

namespace hhg::cli {

struct method_info {
  const char* name;
  const char* summary;
};

/// The methods, in the order the help text lists them; the first is the default.
inline const std::vector<method_info>& methods() {
  static const std::vector<method_info> kMethods = {
      {"hhg", "hierarchical hash grid (default)"},
      {"brute", "all-pairs check, O(N^2): the reference"},
      {"sap", "sweep and prune: sorted axes kept by insertion sort, persistent pair set"},
      {"kdtree", "linear kd-tree (Morton codes, element splitting, sorted-array sweep; seed 002)"},
      {"uniform", "uniform spatial hashing (Teschner et al. 2003): one cell size, objects in every cell they overlap"},
      {"multilevel", "multilevel hashing (Eitz & Lixu 2007): a power-of-two cell size per object class"},
      {"hierarchical", "hierarchical hashing (Pouchol et al. 2009): top-down additive keys, has-children pruning"},
      {"pivot", "pivot-table hashing (Pozzer et al.; parallel, seed 004): counting-sorted dense grid"},
      {"pivot-chunked", "pivot-table hashing with a chunked, paged pivot table (memory follows the objects)"},
  };
  return kMethods;
}

inline std::vector<std::string> method_names() {
  std::vector<std::string> names;
  for (const method_info& m : methods()) names.emplace_back(m.name);
  return names;
}

/// "hhg: ...; brute: ..." for --help.
inline std::string method_help() {
  std::string s;
  for (const method_info& m : methods()) {
    if (!s.empty()) s += "; ";
    s += std::string(m.name) + ": " + m.summary;
  }
  return s;
}

/// Calls f(std::type_identity<M<D, double>>{}) for the method called `name`
/// (names are checked by CLI11 before this runs).
template <int D, class F>
decltype(auto) with_method(const std::string& name, F&& f) {
  if (name == "brute") return f(std::type_identity<brute_force<D, double>>{});
  if (name == "sap") return f(std::type_identity<sweep_and_prune<D, double>>{});
  if (name == "kdtree") return f(std::type_identity<linear_kdtree<D, double>>{});
  if (name == "uniform") return f(std::type_identity<uniform_hashing<D, double>>{});
  if (name == "multilevel") return f(std::type_identity<multilevel_hashing<D, double>>{});
  if (name == "hierarchical") return f(std::type_identity<hierarchical_hashing<D, double>>{});
  if (name == "pivot") return f(std::type_identity<pivot_hashing<D, double>>{});
  if (name == "pivot-chunked") return f(std::type_identity<pivot_chunked<D, double>>{});
  return f(std::type_identity<hash_grids<D, double>>{});
}

}  // namespace hhg::cli
