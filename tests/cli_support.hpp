// Running the built `hhg` tool (HHG_CLI_PATH) from the tests: each test gets
// its own folder under the system's temporary directory (removed when the test
// passes, kept for inspection when it fails); the tool runs through the shell
// with its input and output in files of that folder.
#pragma once

#ifdef HHG_CLI_PATH

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
    if (!HasFailure()) fs::remove_all(dir_, ec);
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
    cmd += quote(HHG_CLI_PATH);
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

  fs::path dir_;

 private:
  std::string prefix_;
};

}  // namespace hhg_cli_test

#endif  // HHG_CLI_PATH
