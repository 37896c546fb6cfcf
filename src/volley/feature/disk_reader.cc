#include "volley/feature/internal/disk_reader.h"

#include <fcntl.h>
#include <liburing.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>
#include <utility>
#include <vector>

#include "volley/core/error.h"

namespace volley::feature_internal {
namespace {

constexpr size_t kAlign = DiskReader::kAlignment;

int64_t mtime_ns(const struct stat& info) {
  return static_cast<int64_t>(info.st_mtim.tv_sec) * 1000000000 + info.st_mtim.tv_nsec;
}

// One coalesced read: file bytes [begin, begin + length), holding the rows at sorted positions
// [first, last).
struct Run {
  uint64_t begin;
  size_t length;
  size_t needed;  // bytes that must arrive (the last row's end - begin)
  size_t first;
  size_t last;
};

struct AlignedFree {
  void operator()(std::byte* pointer) const { std::free(pointer); }
};
using Staging = std::unique_ptr<std::byte, AlignedFree>;

Staging allocate_staging(size_t bytes) {
  auto* pointer = static_cast<std::byte*>(std::aligned_alloc(kAlign, bytes));
  VOLLEY_REQUIRE(pointer != nullptr, RuntimeError,
                 "out of memory allocating {} bytes of disk staging memory", bytes);
  return Staging(pointer);
}

// A ring and staging slots per thread, shared by every reader the thread uses. A forked child
// inherits its parent's thread-local ring (the same kernel ring): it makes its own on first use.
struct ThreadRing {
  io_uring ring{};
  bool ready = false;
  pid_t owner = 0;
  Staging staging = allocate_staging(DiskReader::kQueueDepth * DiskReader::kMaxReadBytes);

  ThreadRing() { open(); }
  ~ThreadRing() {
    if (ready) io_uring_queue_exit(&ring);
  }
  void open() {
    ready = io_uring_queue_init(DiskReader::kQueueDepth, &ring, 0) == 0;
    owner = getpid();
  }
  // After a failure with reads possibly still in flight: a fresh ring, and the old staging
  // memory is left to the kernel's late writes (leaked on purpose; failures are rare).
  void reset() {
    if (ready) io_uring_queue_exit(&ring);
    (void)staging.release();
    staging = allocate_staging(DiskReader::kQueueDepth * DiskReader::kMaxReadBytes);
    open();
  }
};

ThreadRing& thread_ring() {
  thread_local ThreadRing ring;
  if (ring.owner != getpid()) {  // a forked child: the parent's ring is not ours to use
    if (ring.ready) io_uring_queue_exit(&ring.ring);  // unmaps this process's view only
    ring.open();
  }
  return ring;
}

// Reads [offset, offset + length) with pread, retrying partial reads; returns the bytes read
// (less than `length` only at the end of the file).
size_t pread_fully(int fd, std::byte* into, size_t length, uint64_t offset,
                   const std::string& path) {
  size_t done = 0;
  while (done < length) {
    const ssize_t got = ::pread(fd, into + done, length - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    VOLLEY_REQUIRE(got >= 0, IoError, "cannot read {} bytes at offset {} of '{}': {}",
                   length - done, offset + done, path, internal::errno_text(errno));
    if (got == 0) break;
    done += static_cast<size_t>(got);
  }
  return done;
}

}  // namespace

std::string io_uring_refusal() {
  static const std::string refusal = [] {
    io_uring ring{};
    const int result = io_uring_queue_init(8, &ring, 0);
    if (result < 0) return "io_uring refused: " + internal::errno_text(-result);
    io_uring_queue_exit(&ring);
    return std::string();
  }();
  return refusal;
}

DiskReader::DiskReader(std::string path, size_t data_offset, size_t row_bytes, int64_t num_rows,
                       bool allow_io_uring)
    : path_(std::move(path)),
      data_offset_(data_offset),
      row_bytes_(row_bytes),
      num_rows_(num_rows) {
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT);
  direct_ = fd_ >= 0;
  if (fd_ < 0) fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);  // O_DIRECT refused (tmpfs)
  VOLLEY_REQUIRE(fd_ >= 0, IoError, "cannot open '{}' for the disk tier: {}", path_,
                 internal::errno_text(errno));
  struct stat info {};
  if (fstat(fd_, &info) != 0) {
    const int error_number = errno;
    ::close(fd_);
    throw IoError(fmt::format("cannot stat '{}': {}", path_, internal::errno_text(error_number)));
  }
  file_bytes_ = info.st_size;
  mtime_ns_ = mtime_ns(info);
  const size_t needed = data_offset_ + static_cast<size_t>(num_rows_) * row_bytes_;
  if (static_cast<size_t>(file_bytes_) < needed) {
    ::close(fd_);
    throw IoError(
        fmt::format("'{}': truncated: {} rows of {} bytes from offset {} need {} bytes, "
                    "the file has {}",
                    path_, num_rows_, row_bytes_, data_offset_, needed, file_bytes_));
  }
  if (!direct_) posix_fadvise(fd_, 0, 0, POSIX_FADV_RANDOM);
  uring_refusal_ = allow_io_uring ? io_uring_refusal() : "io_uring not asked for";
  use_uring_ = uring_refusal_.empty();
}

DiskReader::~DiskReader() {
  if (fd_ >= 0) ::close(fd_);
}

std::string DiskReader::describe() const {
  const char* cache = direct_ ? "O_DIRECT" : "page cache (O_DIRECT refused)";
  if (use_uring_) return fmt::format("io_uring, {}, {} reads in flight", cache, kQueueDepth);
  return fmt::format("pread, {} ({})", cache, uring_refusal_);
}

namespace {

// The coalesced reads for rows `ids` in sorted order `order`.
std::vector<Run> plan_runs(std::span<const int64_t> ids, const std::vector<size_t>& order,
                           size_t data_offset, size_t row_bytes, bool direct) {
  std::vector<Run> runs;
  for (size_t p = 0; p < order.size(); ++p) {
    const uint64_t row_begin = data_offset + static_cast<uint64_t>(ids[order[p]]) * row_bytes;
    const uint64_t row_end = row_begin + row_bytes;
    const uint64_t begin = direct ? row_begin / kAlign * kAlign : row_begin;
    const uint64_t end = direct ? (row_end + kAlign - 1) / kAlign * kAlign : row_end;
    if (!runs.empty()) {
      Run& run = runs.back();
      const uint64_t run_end = run.begin + run.length;
      if (begin <= run_end && std::max(end, run_end) - run.begin <= DiskReader::kMaxReadBytes) {
        run.length = std::max(end, run_end) - run.begin;
        run.needed = std::max<size_t>(run.needed, row_end - run.begin);
        run.last = p + 1;
        continue;
      }
    }
    VOLLEY_REQUIRE(end - begin <= DiskReader::kMaxReadBytes, ValueError,
                   "disk tier rows of {} bytes exceed the largest read ({} bytes)", row_bytes,
                   DiskReader::kMaxReadBytes);
    runs.push_back(
        {begin, static_cast<size_t>(end - begin), static_cast<size_t>(row_end - begin), p, p + 1});
  }
  return runs;
}

// Reads `runs` through `ring`, at most kQueueDepth in flight, and calls
// complete(run, staging, bytes read) as each finishes. Every read in flight is drained before a
// failure is thrown, so the ring stays usable; a wait past kReadTimeoutSeconds resets it.
template <typename Complete>
void read_with_uring(ThreadRing& ring, int fd, const std::vector<Run>& runs,
                     const std::string& path, Complete&& complete) {
  constexpr unsigned kQueueDepth = DiskReader::kQueueDepth;
  constexpr size_t kMaxReadBytes = DiskReader::kMaxReadBytes;
  constexpr int kReadTimeoutSeconds = DiskReader::kReadTimeoutSeconds;
  std::vector<unsigned> free_slots(kQueueDepth);
  std::iota(free_slots.begin(), free_slots.end(), 0U);
  std::vector<size_t> slot_run(kQueueDepth);
  size_t next = 0;
  unsigned in_flight = 0;
  std::string failure;
  auto slot_memory = [&](unsigned slot) { return ring.staging.get() + slot * kMaxReadBytes; };
  while ((next < runs.size() && failure.empty()) || in_flight > 0) {
    while (failure.empty() && next < runs.size() && !free_slots.empty()) {
      io_uring_sqe* sqe = io_uring_get_sqe(&ring.ring);
      if (sqe == nullptr) break;
      const unsigned slot = free_slots.back();
      free_slots.pop_back();
      slot_run[slot] = next;
      io_uring_prep_read(sqe, fd, slot_memory(slot), static_cast<unsigned>(runs[next].length),
                         runs[next].begin);
      io_uring_sqe_set_data64(sqe, slot);
      ++next;
      ++in_flight;
    }
    const int submitted = io_uring_submit(&ring.ring);
    if (submitted < 0 && failure.empty()) {
      failure = "io_uring submit: " + internal::errno_text(-submitted);
    }
    if (in_flight == 0) break;
    __kernel_timespec timeout{.tv_sec = kReadTimeoutSeconds, .tv_nsec = 0};
    io_uring_cqe* cqe = nullptr;
    const int waited = io_uring_wait_cqe_timeout(&ring.ring, &cqe, &timeout);
    if (waited < 0) {
      ring.reset();
      throw IoError(
          fmt::format("'{}': disk read did not complete within {} s ({}); {} reads "
                      "were in flight",
                      path, kReadTimeoutSeconds, internal::errno_text(-waited), in_flight));
    }
    const auto slot = static_cast<unsigned>(io_uring_cqe_get_data64(cqe));
    const int result = cqe->res;
    io_uring_cqe_seen(&ring.ring, cqe);
    --in_flight;
    free_slots.push_back(slot);
    if (!failure.empty()) continue;
    const Run& run = runs[slot_run[slot]];
    try {
      VOLLEY_REQUIRE(result >= 0, IoError, "cannot read {} bytes at offset {} of '{}': {}",
                     run.length, run.begin, path, internal::errno_text(-result));
      complete(run, slot_memory(slot), static_cast<size_t>(result));
    } catch (const Error& error) {
      failure = error.what();  // drain the reads in flight before throwing
    }
  }
  if (!failure.empty()) throw IoError(failure);
}

}  // namespace

void DiskReader::read(std::span<const int64_t> ids,
                      std::span<std::byte* const> destinations) const {
  if (ids.empty()) return;
  struct stat info {};
  VOLLEY_REQUIRE(fstat(fd_, &info) == 0, IoError, "cannot stat '{}': {}", path_,
                 internal::errno_text(errno));
  VOLLEY_REQUIRE(info.st_size == file_bytes_ && mtime_ns(info) == mtime_ns_, IoError,
                 "'{}' changed on disk since it was opened (size {} → {} bytes): reopen it", path_,
                 file_bytes_, info.st_size);
  std::vector<size_t> order(ids.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ids[a] < ids[b]; });
  const std::vector<Run> runs = plan_runs(ids, order, data_offset_, row_bytes_, direct_);

  // Copies a completed run's rows out of `staging`.
  auto deliver = [&](const Run& run, const std::byte* staging) {
    for (size_t p = run.first; p < run.last; ++p) {
      const size_t i = order[p];
      const uint64_t row_begin = data_offset_ + static_cast<uint64_t>(ids[i]) * row_bytes_;
      std::memcpy(destinations[i], staging + (row_begin - run.begin), row_bytes_);
    }
  };
  auto check_length = [&](const Run& run, size_t got) {
    VOLLEY_REQUIRE(got >= run.needed, IoError,
                   "'{}': short read: {} of {} bytes at offset {} (the file has {} bytes; was it "
                   "truncated?)",
                   path_, got, run.needed, run.begin, file_bytes_);
  };

  ThreadRing& ring = thread_ring();
  if (!use_uring_ || !ring.ready) {
    std::byte* staging = ring.staging.get();
    for (const Run& run : runs) {
      check_length(run, pread_fully(fd_, staging, run.length, run.begin, path_));
      deliver(run, staging);
    }
    return;
  }
  read_with_uring(ring, fd_, runs, path_, [&](const Run& run, std::byte* staging, size_t got) {
    if (got > 0 && got < run.needed) {  // a partial read: finish it synchronously
      got += pread_fully(fd_, staging + got, run.length - got, run.begin + got, path_);
    }
    check_length(run, got);
    deliver(run, staging);
  });
}

}  // namespace volley::feature_internal
