// Running the built `hhg` tool (HHG_CLI_PATH) from the tests: each test gets
// its own folder under the system's temporary directory (removed when the test
// passes, kept for inspection when it fails); the tool runs through the shell
// with its input and output in files of that folder.
//
// When the tool is not built (HHG_BUILD_APPS=OFF, so no HHG_CLI_PATH), every
// test of a cli_fixture is skipped with the reason shown (GTEST_SKIP), instead
// of compiling to nothing.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>

namespace hhg_cli_test {

namespace fs = std::filesystem;

/// The built tool, or "" when it is not built.
#ifdef HHG_CLI_PATH
inline constexpr const char* tool_path = HHG_CLI_PATH;
#else
inline constexpr const char* tool_path = "";
#endif

struct cli_result {
  int status = -1;  // exit status (-1 when killed by a signal; 124 when `timeout` stopped it)
  std::string out;
  std::string err;
};

inline std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

inline std::string quote(const fs::path& p) {
  std::string s = "'";
  s += p.string();
  s += "'";
  return s;
}

inline bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

class cli_fixture : public ::testing::Test {
 protected:
  explicit cli_fixture(std::string prefix) : prefix_(std::move(prefix)) {}

  void SetUp() override {
    if (tool_path[0] == '\0') GTEST_SKIP() << "the hhg tool is not built (configure with -DHHG_BUILD_APPS=ON)";
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = prefix_;
    name += std::to_string(::getpid());
    name += '_';
    name += info->name();
    dir_ = fs::temp_directory_path() / name;
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty() && !HasFailure()) fs::remove_all(dir_, ec);
  }

  fs::path write(const std::string& name, const std::string& content) {
    const fs::path p = dir_ / name;
    std::ofstream f(p, std::ios::binary);
    f << content;
    return p;
  }

  /// Runs `WRAPPER hhg ARGS < INPUT` (WRAPPER: e.g. "timeout 120 ", or empty).
  cli_result run_tool(const std::string& args, const fs::path& input, const std::string& wrapper = "") {
    const fs::path out = dir_ / "stdout.txt", err = dir_ / "stderr.txt";
    std::string cmd = wrapper;
    cmd += quote(tool_path);
    cmd += ' ';
    cmd += args;
    cmd += " < ";
    cmd += quote(input);
    cmd += " > ";
    cmd += quote(out);
    cmd += " 2> ";
    cmd += quote(err);
    const int raw = std::system(cmd.c_str());
    cli_result r;
    r.status = raw != -1 && WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
  }

  /// Runs `hhg ARGS` through the shell with `redirects` appended verbatim (e.g.
  /// "< in > /dev/full"); standard error is captured (unless redirected).
  cli_result run_shell(const std::string& args, const std::string& redirects) {
    const fs::path err = dir_ / "stderr.txt";
    std::string cmd = quote(tool_path);
    cmd += ' ';
    cmd += args;
    cmd += ' ';
    cmd += redirects;
    cmd += " 2> ";
    cmd += quote(err);
    const int raw = std::system(cmd.c_str());
    cli_result r;
    r.status = raw != -1 && WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
    r.err = slurp(err);
    return r;
  }

  /// 0 when Python's json module parses `file` with strict constants (no NaN,
  /// Infinity); the exit status of /usr/bin/python3 otherwise (-1: no Python).
  int python_strict_json(const fs::path& file) {
    if (!fs::exists("/usr/bin/python3")) return -1;
    const std::string cmd =
        "/usr/bin/python3 -c 'import json,sys\n"
        "def bad(c): raise ValueError(\"non-standard constant \" + c)\n"
        "json.loads(open(sys.argv[1], encoding=\"utf-8\").read(), parse_constant=bad)' " +
        quote(file) + " 2> " + quote(dir_ / "python_err.txt");
    const int raw = std::system(cmd.c_str());
    return raw != -1 && WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  }

  fs::path dir_;

 private:
  std::string prefix_;
};

}  // namespace hhg_cli_test
