// tests/test_methods_registry.cpp: hhg::all_methods, the method registry.
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>

#include "hhg/error.hpp"
#include "hhg/methods.hpp"

namespace {

TEST(MethodsRegistry, NamesAreUniqueAndTheDefaultComesFirst) {
  const auto names = hhg::all_methods::names();
  ASSERT_GT(names.size(), 1u);
  EXPECT_EQ(names[0], "hhg");
  const std::set<std::string_view> unique(names.begin(), names.end());
  EXPECT_EQ(unique.size(), names.size());
}

TEST(MethodsRegistry, WithCallsTheNamedMethodForEveryName) {
  for (const std::string_view name : hhg::all_methods::names()) {
    const std::string got = hhg::all_methods::with<2, float>(name, [](auto id) {
      using M = typename decltype(id)::type;
      static_assert(M::dimension == 2);
      return std::string(M::method_name);
    });
    EXPECT_EQ(got, name);
  }
}

// The result is returned by value: a heap-owning result stays valid after the
// call (it used to be an rvalue reference to a local of with(): ASan caught it).
TEST(MethodsRegistry, WithReturnsMoveOnlyResultsByValue) {
  auto p = hhg::all_methods::with<3, double>("sap", [](auto id) {  // one result type for every method
    using M = typename decltype(id)::type;
    return std::make_unique<std::string>(std::string(M::method_name) + std::string(100, '!'));
  });
  static_assert(std::is_same_v<decltype(p), std::unique_ptr<std::string>>);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(*p, "sap" + std::string(100, '!'));
  const std::string long_name = hhg::all_methods::with<3, double>("pivot-chunked", [](auto) {
    return std::string(100, 'x');  // beyond the small-string buffer
  });
  EXPECT_EQ(long_name, std::string(100, 'x'));
}

TEST(MethodsRegistry, UnknownNameThrowsUnknownMethodListingTheNames) {
  try {
    hhg::all_methods::with<3, double>("nope", [](auto) { return 1; });
    FAIL() << "no exception";
  } catch (const hhg::error& e) {
    EXPECT_EQ(e.code(), hhg::errc::unknown_method);
    EXPECT_NE(std::string(e.what()).find("unknown method 'nope'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("sap"), std::string::npos);
  }
  bool called = false;
  EXPECT_THROW((hhg::all_methods::with<2, double>("", [&](auto) { called = true; })), hhg::error);
  EXPECT_FALSE(called);
}

}  // namespace
