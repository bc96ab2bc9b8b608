// The method names of the `hhg` tool come from the one registry
// (hhg::all_methods, include/hhg/methods.hpp): the tool's --help summaries
// match it name for name, an unknown name is an error in every place that
// takes one, and every registry name is accepted by `pairs` and `replay`.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "../apps/hhg/methods.hpp"
#include "cli_support.hpp"
#include "hhg/broad_phase.hpp"
#include "hhg/brute_force.hpp"
#include "hhg/error.hpp"
#include "hhg/methods.hpp"
#include "hhg/scenes.hpp"

namespace {

using hhg_cli_test::cli_result;
using hhg_cli_test::contains;

TEST(CliMethods, EveryRegistryNameHasASummaryAndViceVersa) {
  std::set<std::string_view> registry, summarized;
  for (const std::string_view n : hhg::all_methods::names()) {
    EXPECT_TRUE(registry.insert(n).second) << "name twice in the registry: " << n;
    EXPECT_FALSE(hhg::cli::method_summary(n).empty()) << "no --help summary for " << n;
  }
  for (const auto& [n, s] : hhg::cli::method_summaries()) {
    EXPECT_TRUE(summarized.insert(n).second) << "summary twice: " << n;
    EXPECT_TRUE(registry.contains(n)) << "summary of a method not in the registry: " << n;
    EXPECT_FALSE(s.empty()) << n;
  }
  EXPECT_EQ(registry, summarized);
  // the tool's list is the registry's, in its order (the first is the default)
  const auto names = hhg::cli::method_names();
  ASSERT_EQ(names.size(), hhg::all_methods::size);
  for (std::size_t i = 0; i < names.size(); ++i) EXPECT_EQ(names[i], hhg::all_methods::names()[i]);
  EXPECT_EQ(names.front(), "hhg");
}

TEST(CliMethods, WithMethodPicksTheNamedTypeAndRefusesUnknownNames) {
  for (const std::string_view n : hhg::all_methods::names()) {
    const std::string got = hhg::cli::with_method<2>(n, [](auto id) {
      using M = typename decltype(id)::type;
      static_assert(M::dimension == 2);
      static_assert(std::is_same_v<typename M::scalar, double>);
      return std::string(M::method_name);
    });
    EXPECT_EQ(got, n);
  }
  for (const char* bad : {"", "HHG", "nope", "hhg ", "pivot_chunked"}) {
    bool called = false;
    try {
      hhg::cli::with_method<3>(bad, [&](auto) { called = true; });
      ADD_FAILURE() << "no error for '" << bad << "'";
    } catch (const hhg::error& e) {
      EXPECT_EQ(e.code(), hhg::errc::unknown_method) << bad;
    }
    EXPECT_FALSE(called) << bad;
  }
}

TEST(CliMethods, WithReturnsAValueNotAReferenceToADeadOne) {
  // all_methods::with used to return std::move(*optional) through decltype(auto):
  // a reference to a destroyed local (a double free in `hhg bench`'s children)
  static_assert(!std::is_reference_v<decltype(hhg::all_methods::with<3, double>("hhg", [](auto) { return 1; }))>);
  static_assert(!std::is_reference_v<decltype(hhg::cli::with_method<3>("hhg", [](auto) { return 1; }))>);
  for (const std::string_view n : hhg::all_methods::names()) {
    const std::vector<std::string> v = hhg::cli::with_method<3>(n, [](auto id) {
      return std::vector<std::string>(50, std::string(100, 'x') + decltype(id)::type::method_name);
    });
    ASSERT_EQ(v.size(), 50u);
    EXPECT_EQ(v[49], std::string(100, 'x') + std::string(n));
  }
}

// --- the contract every registry method satisfies ----------------------------

static_assert(std::is_same_v<hhg::pair_callback, hhg::function_ref<void(hhg::handle, hhg::handle)>>);
static_assert(std::is_base_of_v<hhg::detail::table_method<3, double>, hhg::brute_force<3, double>>);

template <class M>
void check_contract_and_bytes() {
  static_assert(hhg::dynamic_broad_phase<M>);
  M m;
  const std::size_t empty = m.bytes();
  hhg::scenes::rng r(42);
  std::vector<hhg::handle> hs;
  for (int i = 0; i < 500; ++i) {
    typename M::box_type b;
    for (int a = 0; a < M::dimension; ++a) {
      b.min[a] = static_cast<typename M::scalar>(r.uniform(0, 20));
      b.max[a] = b.min[a] + 1;
    }
    hs.push_back(m.insert(b));
  }
  std::size_t count = 0;
  m.for_each_pair([&](hhg::handle, hhg::handle) { ++count; });
  std::vector<hhg::handle_pair> out;
  m.find_pairs(out);
  EXPECT_EQ(out.size(), count) << M::method_name;
  // bytes() is part of the contract: capacity held grows with what is stored
  EXPECT_GT(m.bytes(), empty) << M::method_name;
  EXPECT_GE(m.bytes(), 500 * sizeof(typename M::box_type)) << M::method_name;
}

TEST(CliMethods, EveryRegistryMethodHasBytesInTheContract) {
  for (const std::string_view n : hhg::all_methods::names()) {
    hhg::all_methods::with<3, double>(n, [](auto id) { check_contract_and_bytes<typename decltype(id)::type>(); });
    hhg::all_methods::with<2, float>(n, [](auto id) { check_contract_and_bytes<typename decltype(id)::type>(); });
  }
}

TEST(CliMethods, BruteForceSharesTheTableMethodChecks) {
  hhg::brute_force<3, double> bf;
  const hhg::handle h = bf.insert({{0, 0, 0}, {1, 1, 1}});
  EXPECT_THROW(bf.insert({{0, 0, 0}, {-1, 1, 1}}), hhg::error);  // min > max
  EXPECT_EQ(bf.size(), 1u);
  bf.remove(h);
  EXPECT_THROW(bf.remove(h), hhg::error);  // stale
  EXPECT_THROW(bf.move(h, {{0, 0, 0}, {1, 1, 1}}), hhg::error);
  EXPECT_EQ(bf.size(), 0u);
}

class cli_methods : public hhg_cli_test::cli_fixture {
 protected:
  cli_methods() : cli_fixture("hhg_cli_methods_") {}
  cli_result run(const std::string& args, const std::string& input = "") {
    return run_tool(args, write("stdin.txt", input));
  }
};

TEST_F(cli_methods, EveryRegistryMethodRunsPairsAndReplay) {
  for (const std::string_view n : hhg::all_methods::names()) {
    const std::string name(n);
    cli_result r = run("pairs --method " + name, "0 0 0 1 1 1\n1 1 1 2 2 2\n5 5 5 6 6 6\n");
    EXPECT_EQ(r.status, 0) << name << ": " << r.err;
    EXPECT_EQ(r.out, "0 1\n") << name;
    r = run("replay --method " + name, "add 7 0 0 0 1 1 1\nadd 9 1 1 1 2 2 2\npairs\n");
    EXPECT_EQ(r.status, 0) << name << ": " << r.err;
    EXPECT_EQ(r.out, "7 9\n--\n") << name;
  }
  // --help lists every method with its summary
  const cli_result help = run("pairs --help");
  for (const std::string_view n : hhg::all_methods::names())
    EXPECT_TRUE(contains(help.out, std::string(hhg::cli::method_summary(n)))) << n;
}

TEST_F(cli_methods, UnknownMethodIsAnErrorEverywhere) {
  for (const char* args : {"pairs --method nope", "replay --method nope", "pairs --method HHG",
                           "bench --methods nope --n 10 --steps 1", "bench --methods hhg,nope --n 10 --steps 1"}) {
    const cli_result r = run(args, "0 0 0 1 1 1\n");
    EXPECT_EQ(r.status, 2) << args;
    EXPECT_EQ(r.out, "") << args;
    EXPECT_EQ(r.err.rfind("hhg: ", 0), 0u) << args << ": " << r.err;
    EXPECT_TRUE(contains(r.err, "nope") || contains(r.err, "HHG")) << args << ": " << r.err;
  }
}

}  // namespace
