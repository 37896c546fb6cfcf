// The output side of writing a partitioned dataset (homogeneous or heterogeneous): checking the
// target, a staging directory beside it, the open-file limit, and the final rename.
#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>

#include "volley/core/files.h"
#include "volley/partition/internal/partitioned_dataset.h"

namespace volley::internal {

namespace fs = std::filesystem;

// Creates the empty staging directory `staging` (removing one a crashed run left).
void prepare_output(const std::string& staging) {
  std::error_code error;
  fs::remove_all(staging, error);
  fs::create_directories(staging, error);
  if (error || !fs::is_directory(staging)) {
    throw IoError(fmt::format("cannot create the partitioned dataset directory '{}': {}", staging,
                              error ? error.message() : "a file of that name exists"));
  }
}

namespace {

// `output` without trailing slashes ("out/" -> "out"), so that "<output>.partial-PID" is a
// sibling.
std::string output_path(const std::string& output) {
  std::string path = output;
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

// Refuses, before anything is written, an output that exists and is neither an empty directory
// nor a partitioned dataset (it would be replaced).
void check_output(const std::string& output) {
  std::error_code error;
  if (!fs::exists(output, error)) return;
  if (!fs::is_directory(output, error)) {
    throw IoError(
        fmt::format("cannot write the partitioned dataset to '{}': a file of that name "
                    "exists",
                    output));
  }
  if (fs::is_empty(output, error) || is_partitioned_directory(output)) return;
  throw IoError(
      fmt::format("'{}' exists and is not a partitioned dataset directory; refusing "
                  "to replace it (remove it or choose another output)",
                  output));
}

// Raises the soft limit on open files so that `needed` fit (partitioning writes up to 3 files of
// each of K parts at once); IoError naming both numbers when the hard limit is too low.
void ensure_open_files(int64_t num_parts) {
  const auto needed = static_cast<rlim_t>(3 * num_parts + 64);
  struct rlimit limit {};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= needed) return;
  if (limit.rlim_max != RLIM_INFINITY && limit.rlim_max < needed) {
    throw IoError(
        fmt::format("partitioning into {} parts keeps about {} files open at once; the "
                    "limit on open files is {} (hard limit {}): raise it (ulimit -n) "
                    "or choose fewer parts",
                    num_parts, needed, limit.rlim_cur, limit.rlim_max));
  }
  limit.rlim_cur = needed;
  if (setrlimit(RLIMIT_NOFILE, &limit) != 0) {
    throw IoError(
        fmt::format("partitioning into {} parts keeps about {} files open at once; "
                    "cannot raise the limit on open files to that: {}",
                    num_parts, needed, internal::errno_text(errno)));
  }
}

// Moves the finished `staging` directory onto `output`; an existing output (checked by
// check_output) is moved aside first and removed after.
void publish(const std::string& staging, const std::string& output) {
  std::error_code error;
  std::string old;
  if (fs::exists(output, error)) {
    old = fmt::format("{}.old-{}", output, getpid());
    fs::remove_all(old, error);
    fs::rename(output, old, error);
    if (error) {
      throw IoError(fmt::format("cannot replace '{}': {}", output, error.message()));
    }
  }
  fs::rename(staging, output, error);
  if (error) {
    const std::string reason = error.message();
    if (!old.empty()) fs::rename(old, output, error);
    throw IoError(fmt::format("cannot move '{}' to '{}': {}", staging, output, reason));
  }
  if (!old.empty()) fs::remove_all(old, error);
}

}  // namespace

void write_staged(const std::string& output, int64_t num_parts,
                  const std::function<void(const std::string& staging)>& write) {
  const std::string target = output_path(output);
  check_output(target);
  ensure_open_files(num_parts);
  const std::string staging = fmt::format("{}.partial-{}", target, getpid());
  try {
    write(staging);
    publish(staging, target);
  } catch (...) {
    std::error_code ignored;
    fs::remove_all(staging, ignored);
    throw;
  }
}

}  // namespace volley::internal
