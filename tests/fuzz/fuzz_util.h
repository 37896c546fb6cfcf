// tests/fuzz/fuzz_util.h — what the libFuzzer targets share: the input written to a file (the
// readers under test open paths), and the rule that a Volley error is an acceptable outcome
// while a crash, a sanitizer report, a hang or any other exception is a finding.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "volley/core/error.h"

namespace volley::fuzz {

// A private directory for this process's scratch files (under /dev/shm when it exists: fast),
// removed at exit. Held by a pointer that is never freed, so that the exit handler can still
// read it after static destructors ran.
inline const std::string& scratch_dir() {
  static const std::string* const dir = [] {
    const std::filesystem::path base = std::filesystem::is_directory("/dev/shm")
                                           ? std::filesystem::path("/dev/shm")
                                           : std::filesystem::temp_directory_path();
    auto* path = new std::string((base / ("volley-fuzz-" + std::to_string(getpid()))).string());
    std::filesystem::create_directories(*path);
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(scratch_dir(), ignored);
    });
    return path;
  }();
  return *dir;
}

// Writes the fuzzer's bytes to `name` inside scratch_dir(); returns the path.
inline std::string write_input(const std::string& name, const uint8_t* data, size_t size) {
  const std::string path = scratch_dir() + "/" + name;
  std::ofstream stream(path, std::ios::binary | std::ios::trunc);
  stream.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path;
}

// Runs `body`; a volley::Error (a refused input) is fine, anything else escapes and aborts.
template <typename Body>
int run_one(Body&& body) {
  try {
    body();
  } catch (const volley::Error&) {
  }
  return 0;
}

}  // namespace volley::fuzz
