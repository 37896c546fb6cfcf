// tests/cpp/test_util.h — helpers shared by the C++ tests: error messages, temporary
// directories and lines over a pipe to a forked child. Small graphs are in test_graphs.h.
#pragma once

#include <gtest/gtest.h>
#include <poll.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace volley {

// The message of the exception of type E that f() throws, or "<no exception>".
template <typename E, typename F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const E& error) {
    return error.what();
  }
  return "<no exception>";
}

// Writes `text` and a newline to `fd` (a pipe between a test and a process it forked).
inline void write_line(int fd, const std::string& text) {
  const std::string line = text + "\n";
  ASSERT_EQ(write(fd, line.data(), line.size()), static_cast<ssize_t>(line.size()));
}

// One line from `fd`, without its newline; what came so far once 30 s pass without a byte, or
// the pipe closes (never a hang).
inline std::string read_line(int fd) {
  std::string line;
  char c = 0;
  pollfd ready{.fd = fd, .events = POLLIN, .revents = 0};
  while (poll(&ready, 1, 30000) == 1 && read(fd, &c, 1) == 1 && c != '\n') line += c;
  return line;
}

// A fresh directory under the system's temporary directory ("<prefix>-XXXXXX"), removed with
// everything in it when the object goes.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "volley-test") {
    std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    EXPECT_NE(mkdtemp(pattern.data()), nullptr) << pattern;
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // The path of `name` inside the directory.
  std::string operator/(const std::string& name) const {
    return (std::filesystem::path(path_) / name).string();
  }

 private:
  std::string path_;
};

// A test with its own temporary directory, `dir_` (a new one per test).
class TempDirTest : public ::testing::Test {
 protected:
  explicit TempDirTest(const std::string& prefix = "volley-test") : temp_(prefix) {}
  // The path of `name` inside dir_.
  std::string path(const std::string& name) const { return temp_ / name; }

  TempDir temp_;
  const std::string dir_ = temp_.path();
};

}  // namespace volley
