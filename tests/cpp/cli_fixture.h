// tests/cpp/cli_fixture.h — runs the `volley` binary (VOLLEY_CLI_PATH) as a user would, in a
// fresh temporary directory per test.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "test_util.h"

namespace volley::testing_cli {

// The last line of a command's output, parsed as JSON (the bench commands end with one).
inline nlohmann::json last_json_line(const std::string& out) {
  const auto end = out.find_last_not_of('\n');
  const auto start = out.rfind('\n', end);
  return nlohmann::json::parse(out.substr(start == std::string::npos ? 0 : start + 1));
}

struct Result {
  int exit_code;
  std::string out;
  std::string err;
};

class CliFixture : public TempDirTest {
 protected:
  CliFixture() : TempDirTest("volley-cli-test") {}

  static std::string slurp(const std::string& file) {
    std::ifstream stream(file);
    std::stringstream text;
    text << stream.rdbuf();
    return text.str();
  }

  // Runs `volley ARGUMENTS` with progress bars off; captures exit code, stdout and stderr.
  // `environment` ("NAME=value ...") is set for that run only.
  Result run(const std::string& arguments, const std::string& environment = "") const {
    const std::string command =
        fmt::format("VOLLEY_PROGRESS=0 {} '{}' {} >'{}' 2>'{}'", environment, VOLLEY_CLI_PATH,
                    arguments, path("stdout"), path("stderr"));
    const int status = std::system(command.c_str());
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(path("stdout")),
            slurp(path("stderr"))};
  }
};

inline const std::string kCora = std::string(VOLLEY_SOURCE_DIR) + "/data/cora";

}  // namespace volley::testing_cli
