// What the README and the headers say matches what the code does: the README's
// library example compiles without warnings under -Wall -Wextra, and the note
// of config.hpp on the third initial_cells value in 2D matches validate_config.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "hhg/config.hpp"
#include "hhg/error.hpp"
#include "hhg/hash_grids.hpp"

namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

TEST(Docs, ReadmeLibraryExampleCompilesWithoutWarnings) {
  const fs::path source = HHG_SOURCE_DIR;
  const std::string readme = slurp(source / "README.md");
  const std::size_t section = readme.find("## Library example");
  ASSERT_NE(section, std::string::npos);
  const std::size_t begin = readme.find("```cpp\n", section);
  ASSERT_NE(begin, std::string::npos);
  const std::size_t end = readme.find("```", begin + 7);
  ASSERT_NE(end, std::string::npos);
  std::string snippet = readme.substr(begin + 7, end - begin - 7);
  // the #include lines at file scope, the statements in main()
  std::string includes, body;
  std::size_t pos = 0;
  while (pos < snippet.size()) {
    std::size_t nl = snippet.find('\n', pos);
    if (nl == std::string::npos) nl = snippet.size();
    const std::string line = snippet.substr(pos, nl - pos);
    (line.rfind("#include", 0) == 0 ? includes : body) += line + "\n";
    pos = nl + 1;
  }
  const fs::path dir = fs::temp_directory_path() / ("hhg_docs_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path cpp = dir / "readme_example.cpp";
  std::ofstream(cpp) << includes << "#include <vector>\n\nint main() {\n" << body << "  return 0;\n}\n";
  const fs::path log = dir / "compiler.txt";
  const std::string cmd = std::string(HHG_CXX_COMPILER) + " -std=c++20 -Wall -Wextra -Werror -fsyntax-only -I'" +
                          (source / "include").string() + "' '" + cpp.string() + "' > '" + log.string() + "' 2>&1";
  const int status = std::system(cmd.c_str());
  EXPECT_EQ(status, 0) << slurp(log) << "\n--- the example:\n" << slurp(cpp);
  EXPECT_EQ(slurp(log), "");
  if (!HasFailure()) fs::remove_all(dir);
}

TEST(Docs, ConfigThirdInitialCellsValueIn2DIsCheckedAsDocumented) {
  hhg::config c;
  c.initial_cells = {16, 16, 6};  // the third value is not used in 2D, but checked
  EXPECT_THROW(hhg::validate_config(c), hhg::error);
  EXPECT_THROW((hhg::hash_grids<2, double>(c)), hhg::error);
  c.initial_cells = {16, 32, 16};
  EXPECT_NO_THROW(hhg::validate_config(c));
  hhg::hash_grids<2, double> g(c);
  EXPECT_EQ(g.size(), 0u);
}

TEST(Docs, SubprojectKeepsTheParentsBuildType) {
  // hhg sets CMAKE_BUILD_TYPE=Release only as the top-level project
  const fs::path dir = fs::temp_directory_path() / ("hhg_subproject_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "CMakeLists.txt")
      << "cmake_minimum_required(VERSION 3.20)\nproject(parent CXX)\n"
      << "add_subdirectory(\"" << HHG_SOURCE_DIR << "\" hhg)\n"
      << "file(WRITE \"${CMAKE_BINARY_DIR}/build_type.txt\" \"[${CMAKE_BUILD_TYPE}]\")\n";
  const fs::path log = dir / "cmake.txt";
  const std::string cmd = std::string("'") + HHG_CMAKE_COMMAND + "' -S '" + dir.string() + "' -B '" +
                          (dir / "build").string() + "' > '" + log.string() + "' 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << slurp(log);
  EXPECT_EQ(slurp(dir / "build" / "build_type.txt"), "[]") << slurp(log);
  if (!HasFailure()) fs::remove_all(dir);
}

}  // namespace
