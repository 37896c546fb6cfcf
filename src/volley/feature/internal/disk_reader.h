// volley/feature/internal/disk_reader.h — reads rows of a file straight from the disk (the
// feature store's disk tier; internal to src/volley/feature).
//
// A DiskReader reads fixed-size rows of a file region with io_uring and O_DIRECT, bypassing the
// page cache: the requested rows are sorted, rows whose 4 KiB-aligned byte ranges touch are
// coalesced into one read (at most kMaxReadBytes), and up to kQueueDepth reads are kept in
// flight. Each read lands in a 4 KiB-aligned staging slot (O_DIRECT needs aligned offsets,
// lengths and memory; rows of most widths are not aligned in an .npy file) and its rows are
// copied to their destinations as it completes. Where io_uring is refused (containers, seccomp:
// detected once, at open) it reads with pread; where O_DIRECT is refused (tmpfs, some network
// file systems) it reads through the page cache with POSIX_FADV_RANDOM.
//
// Bad files never hang: every wait has a timeout (kReadTimeoutSeconds: IoError), a short read
// names the file and its size (truncated), and a file whose size or modification time changed
// since open is refused ("changed on disk").
//
// Thread safety: read() may be called from any number of threads at once (each call uses its own
// ring and staging memory, cached per thread).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace volley::feature_internal {

class DiskReader {
 public:
  static constexpr unsigned kQueueDepth = 64;
  static constexpr size_t kMaxReadBytes = size_t{128} << 10;
  static constexpr size_t kAlignment = 4096;
  static constexpr int kReadTimeoutSeconds = 60;

  // Rows [0, num_rows) of `row_bytes` each, the first at byte `data_offset` of `path`. IoError
  // when the file cannot be opened or is shorter than the rows. `allow_io_uring` false forces
  // the pread path (tests, and the user's choice).
  DiskReader(std::string path, size_t data_offset, size_t row_bytes, int64_t num_rows,
             bool allow_io_uring = true);
  ~DiskReader();
  DiskReader(const DiskReader&) = delete;
  DiskReader& operator=(const DiskReader&) = delete;

  // destinations[i] receives row ids[i] (row_bytes bytes). Ids must be in range (the caller
  // checked them); duplicates are read once. IoError for a failed, short or timed-out read, or a
  // file changed on disk since open.
  void read(std::span<const int64_t> ids, std::span<std::byte* const> destinations) const;

  bool uses_io_uring() const { return use_uring_; }
  bool uses_direct_io() const { return direct_; }
  const std::string& path() const { return path_; }
  // "io_uring, O_DIRECT, 64 reads in flight" or "pread (io_uring refused: ...)".
  std::string describe() const;

 private:
  std::string path_;
  size_t data_offset_;
  size_t row_bytes_;
  int64_t num_rows_;
  int fd_ = -1;
  bool direct_ = false;
  bool use_uring_ = false;
  off_t file_bytes_ = 0;
  int64_t mtime_ns_ = 0;
  std::string uring_refusal_;
};

// Whether this process may use io_uring (probed once): "" when it may, else why not ("io_uring
// refused: Operation not permitted"). Shown by `volley info`.
std::string io_uring_refusal();

}  // namespace volley::feature_internal
