#include "volley/core/buffer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <random>
#include <utility>

#include "volley/core/cuda_device.h"
#include "volley/core/error.h"
#include "volley/core/host_pool.h"
#include "volley/core/internal/cuda_memory.h"
#include "volley/core/internal/emulated_device.h"

namespace volley {

std::string_view location_name(Location location) {
  switch (location) {
    case Location::kHost:
      return "host";
    case Location::kSharedMemory:
      return "shared_memory";
    case Location::kMappedFile:
      return "mapped_file";
    case Location::kPinnedHost:
      return "pinned_host";
    case Location::kCuda:
      return "cuda";
    case Location::kExternal:
      return "external";
  }
  return "unknown";
}

namespace internal {

class Storage {
 public:
  Storage(std::byte* data, size_t size, Location location)
      : data(data), size(size), location(location) {}
  virtual ~Storage() = default;
  std::byte* data;
  size_t size;
  Location location;
  bool writable = true;
  int device = -1;
  std::string name;
  std::string file_path;   // kMappedFile: the file
  size_t file_offset = 0;  // kMappedFile: the file offset of `data`
};

namespace {

// Small blocks from the C library's heap; large ones from the host pool (host_pool.h), so that
// per-batch outputs reuse mapped pages instead of faulting in fresh ones.
class HostStorage final : public Storage {
 public:
  explicit HostStorage(size_t bytes) : Storage(nullptr, bytes, Location::kHost) {
    if (bytes == 0) return;
    if (bytes >= kHostPoolMinBytes) {
      data = static_cast<std::byte*>(host_pool_allocate(bytes, &pooled_bytes_));
      return;
    }
    const size_t rounded = (bytes + 63) / 64 * 64;
    data = static_cast<std::byte*>(std::aligned_alloc(64, rounded));
    VOLLEY_REQUIRE(data != nullptr, RuntimeError, "out of memory allocating {} bytes", bytes);
  }
  ~HostStorage() override {
    if (pooled_bytes_ != 0) {
      host_pool_release(data, pooled_bytes_);
    } else {
      std::free(data);
    }
  }

 private:
  size_t pooled_bytes_ = 0;  // the pool block's size; 0 for heap memory
};

// Shared-memory segment layout: a 64-byte header (magic, owner count, payload size), then the
// payload. The owner count lives in the segment so that the last owner in any process unlinks it.
struct SharedHeader {
  uint64_t magic;
  std::atomic<int64_t> owners;
  uint64_t payload_bytes;
};
constexpr uint64_t kSharedMagic = 0x564f4c4c45595348ULL;  // "VOLLEYSH"
constexpr size_t kSharedHeaderBytes = 64;
static_assert(sizeof(SharedHeader) <= kSharedHeaderBytes);
static_assert(std::atomic<int64_t>::is_always_lock_free);

class SharedStorage final : public Storage {
 public:
  SharedStorage(std::string segment_name, void* mapping, size_t mapped_bytes)
      : Storage(static_cast<std::byte*>(mapping) + kSharedHeaderBytes,
                mapped_bytes - kSharedHeaderBytes, Location::kSharedMemory),
        mapping_(mapping),
        mapped_bytes_(mapped_bytes) {
    name = std::move(segment_name);
  }
  ~SharedStorage() override {
    auto* header = static_cast<SharedHeader*>(mapping_);
    if (header->owners.fetch_sub(1) == 1) shm_unlink(name.c_str());
    munmap(mapping_, mapped_bytes_);
  }

 private:
  void* mapping_;
  size_t mapped_bytes_;
};

// Memfd segment layout: a 64-byte header (magic, token, payload size), then the payload. The
// kernel counts owners (descriptors and mappings), so the header only lets attach_shared check
// that the descriptor it opened is the segment the handle names (a pid or descriptor number can
// be reused by an unrelated file once its holder is gone).
struct MemfdHeader {
  uint64_t magic;
  uint64_t token;
  uint64_t payload_bytes;
};
constexpr uint64_t kMemfdMagic = 0x564f4c4c45594d46ULL;  // "VOLLEYMF"
static_assert(sizeof(MemfdHeader) <= kSharedHeaderBytes);

class MemfdStorage final : public Storage {
 public:
  MemfdStorage(int fd, void* mapping, size_t mapped_bytes, uint64_t token)
      : Storage(static_cast<std::byte*>(mapping) + kSharedHeaderBytes,
                mapped_bytes - kSharedHeaderBytes, Location::kSharedMemory),
        fd_(fd),
        mapping_(mapping),
        mapped_bytes_(mapped_bytes) {
    name = fmt::format("memfd:{}:{}:{}:{:x}", getpid(), fd, size, token);
  }
  ~MemfdStorage() override {
    munmap(mapping_, mapped_bytes_);
    close(fd_);
  }

 private:
  int fd_;
  void* mapping_;
  size_t mapped_bytes_;
};

class MappedStorage final : public Storage {
 public:
  MappedStorage(void* mapping, size_t mapped_bytes, size_t skip, size_t length, bool can_write)
      : Storage(static_cast<std::byte*>(mapping) + skip, length, Location::kMappedFile),
        mapping_(mapping),
        mapped_bytes_(mapped_bytes) {
    writable = can_write;
  }
  ~MappedStorage() override {
    if (mapping_ != nullptr) munmap(mapping_, mapped_bytes_);
  }

 private:
  void* mapping_;
  size_t mapped_bytes_;
};

class ExternalStorage final : public Storage {
 public:
  ExternalStorage(void* ptr, size_t bytes, std::shared_ptr<void> keep_alive, Location where)
      : Storage(static_cast<std::byte*>(ptr), bytes, where), keep_alive_(std::move(keep_alive)) {}

 private:
  std::shared_ptr<void> keep_alive_;
};

class CudaStorage final : public Storage {
 public:
  CudaStorage(size_t bytes, Location where, int device_ordinal) : Storage(nullptr, bytes, where) {
    device = device_ordinal;
    if (bytes == 0) return;
    if (cuda_emulated()) {  // the host-executor device: host memory, tagged as device / pinned
      if (where == Location::kCuda) check_emulated_ordinal(device);
      emulated_ = true;
      data = static_cast<std::byte*>(emulated_allocate(bytes));
      return;
    }
    data = static_cast<std::byte*>(where == Location::kPinnedHost
                                       ? cuda_allocate_pinned(bytes)
                                       : cuda_allocate_device(bytes, device));
  }
  ~CudaStorage() override {
    if (data == nullptr) return;
    if (emulated_) {
      emulated_free(data);
    } else if (location == Location::kPinnedHost) {
      cuda_free_pinned(data);
    } else {
      cuda_free_device(data, device);
    }
  }

 private:
  bool emulated_ = false;
};

std::string unique_segment_name() {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t salt = std::random_device{}();
  return fmt::format("/volley-{}-{}-{:x}", getpid(), counter.fetch_add(1), salt & 0xffffffffULL);
}

class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) close(fd_);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

// The parts of a memfd handle "memfd:<pid>:<fd>:<bytes>:<token hex>".
struct MemfdHandle {
  long pid = 0;
  int fd = -1;
  size_t bytes = 0;
  uint64_t token = 0;
};

MemfdHandle parse_memfd_handle(const std::string& name) {
  MemfdHandle handle;
  const char* cursor = name.data() + 6;  // past "memfd:"
  const char* end = name.data() + name.size();
  const auto field = [&](auto& value, int base) {
    const auto [next, error] = std::from_chars(cursor, end, value, base);
    const bool ok = error == std::errc() && next != cursor;
    cursor = next;
    return ok;
  };
  const auto colon = [&] { return cursor < end && *cursor++ == ':'; };
  const bool ok = field(handle.pid, 10) && colon() && field(handle.fd, 10) && colon() &&
                  field(handle.bytes, 10) && colon() && field(handle.token, 16) && cursor == end;
  VOLLEY_REQUIRE(ok && handle.pid > 0 && handle.fd >= 0, ValueError,
                 "'{}' is not a shared-memory handle (expected memfd:<pid>:<fd>:<bytes>:<token>)",
                 name);
  return handle;
}

uint64_t random_token() {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t salt =
      (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  // splitmix64 of (salt + counter): distinct per segment, unpredictable across processes.
  uint64_t z = salt + 0x9e3779b97f4a7c15ULL * (counter.fetch_add(1) + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace
}  // namespace internal

Buffer Buffer::allocate(size_t bytes) {
  Buffer buffer;
  buffer.storage_ = std::make_shared<internal::HostStorage>(bytes);
  buffer.data_ = buffer.storage_->data;
  buffer.size_ = bytes;
  return buffer;
}

Buffer Buffer::zeros(size_t bytes) {
  Buffer buffer = allocate(bytes);
  if (bytes > 0) std::memset(buffer.data(), 0, bytes);
  return buffer;
}

Buffer Buffer::create_shared(size_t bytes, const std::string& name) {
  const std::string segment = name.empty() ? internal::unique_segment_name() : name;
  VOLLEY_REQUIRE(segment.size() >= 2 && segment[0] == '/' &&
                     segment.find('/', 1) == std::string::npos && segment.size() < 250,
                 ValueError, "shared-memory name '{}' must start with '/' and contain no other '/'",
                 segment);
  internal::FileDescriptor fd(shm_open(segment.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600));
  VOLLEY_REQUIRE(fd.get() >= 0, IoError, "cannot create shared-memory segment '{}': {}", segment,
                 internal::errno_text(errno));
  const size_t mapped_bytes = internal::kSharedHeaderBytes + bytes;
  if (ftruncate(fd.get(), static_cast<off_t>(mapped_bytes)) != 0) {
    const int error_number = errno;
    shm_unlink(segment.c_str());
    throw IoError(fmt::format("cannot size shared-memory segment '{}' to {} bytes: {}", segment,
                              mapped_bytes, internal::errno_text(error_number)));
  }
  void* mapping = mmap(nullptr, mapped_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (mapping == MAP_FAILED) {
    const int error_number = errno;
    shm_unlink(segment.c_str());
    throw IoError(fmt::format("cannot map shared-memory segment '{}' ({} bytes): {}", segment,
                              mapped_bytes, internal::errno_text(error_number)));
  }
  auto* header = new (mapping) internal::SharedHeader{};
  header->payload_bytes = bytes;
  header->owners.store(1);
  header->magic = internal::kSharedMagic;
  Buffer buffer;
  buffer.storage_ = std::make_shared<internal::SharedStorage>(segment, mapping, mapped_bytes);
  buffer.data_ = buffer.storage_->data;
  buffer.size_ = bytes;
  return buffer;
}

Buffer Buffer::create_shareable(size_t bytes) {
  const int raw_fd = memfd_create("volley", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  VOLLEY_REQUIRE(raw_fd >= 0, IoError, "cannot create a shared-memory segment (memfd_create): {}",
                 internal::errno_text(errno));
  internal::FileDescriptor fd(raw_fd);
  const size_t mapped_bytes = internal::kSharedHeaderBytes + bytes;
  VOLLEY_REQUIRE(ftruncate(fd.get(), static_cast<off_t>(mapped_bytes)) == 0, IoError,
                 "cannot size a shared-memory segment to {} bytes: {}", mapped_bytes,
                 internal::errno_text(errno));
  // Nobody may resize it later: a shrink would turn every reader's access into SIGBUS.
  VOLLEY_REQUIRE(fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) == 0,
                 IoError, "cannot seal a shared-memory segment: {}", internal::errno_text(errno));
  void* mapping = mmap(nullptr, mapped_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  VOLLEY_REQUIRE(mapping != MAP_FAILED, IoError,
                 "cannot map a shared-memory segment ({} bytes): {}", mapped_bytes,
                 internal::errno_text(errno));
  const uint64_t token = internal::random_token();
  auto* header = new (mapping) internal::MemfdHeader{};
  header->magic = internal::kMemfdMagic;
  header->token = token;
  header->payload_bytes = bytes;
  Buffer buffer;
  buffer.storage_ =
      std::make_shared<internal::MemfdStorage>(fd.release(), mapping, mapped_bytes, token);
  buffer.data_ = buffer.storage_->data;
  buffer.size_ = bytes;
  return buffer;
}

Buffer Buffer::attach_memfd(const std::string& name) {
  using namespace internal;  // NOLINT(google-build-using-namespace): this file's helpers
  const MemfdHandle handle = parse_memfd_handle(name);
  const std::string path = fmt::format("/proc/{}/fd/{}", handle.pid, handle.fd);
  FileDescriptor fd(open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (fd.get() < 0) {
    const int error_number = errno;
    throw IoError(fmt::format(
        "cannot attach shared-memory segment '{}': {} ({}); the process holding the handle must "
        "be alive, run as the same user, and still hold the buffer",
        name,
        error_number == ENOENT ? fmt::format("process {} is gone or no longer holds it", handle.pid)
                               : fmt::format("cannot open {}", path),
        errno_text(error_number)));
  }
  struct stat info {};
  VOLLEY_REQUIRE(fstat(fd.get(), &info) == 0, IoError, "cannot stat shared-memory segment '{}': {}",
                 name, errno_text(errno));
  const size_t mapped_bytes = kSharedHeaderBytes + handle.bytes;
  VOLLEY_REQUIRE(S_ISREG(info.st_mode) && static_cast<size_t>(info.st_size) == mapped_bytes,
                 IoError,
                 "shared-memory segment '{}' is gone: descriptor {} of process {} is now another "
                 "file",
                 name, handle.fd, handle.pid);
  void* mapping = mmap(nullptr, mapped_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  VOLLEY_REQUIRE(mapping != MAP_FAILED, IoError, "cannot map shared-memory segment '{}': {}", name,
                 errno_text(errno));
  const auto* header = static_cast<const MemfdHeader*>(mapping);
  if (header->magic != kMemfdMagic || header->token != handle.token ||
      header->payload_bytes != handle.bytes) {
    munmap(mapping, mapped_bytes);
    throw IoError(fmt::format(
        "shared-memory segment '{}' is gone: descriptor {} of process {} is now another segment",
        name, handle.fd, handle.pid));
  }
  Buffer buffer;
  buffer.storage_ =
      std::make_shared<MemfdStorage>(fd.release(), mapping, mapped_bytes, handle.token);
  buffer.data_ = buffer.storage_->data;
  buffer.size_ = handle.bytes;
  return buffer;
}

Buffer Buffer::attach_shared(const std::string& name) {
  if (name.rfind("memfd:", 0) == 0) return attach_memfd(name);
  internal::FileDescriptor fd(shm_open(name.c_str(), O_RDWR, 0600));
  VOLLEY_REQUIRE(fd.get() >= 0, IoError, "cannot attach shared-memory segment '{}': {}", name,
                 internal::errno_text(errno));
  struct stat info {};
  VOLLEY_REQUIRE(fstat(fd.get(), &info) == 0, IoError, "cannot stat shared-memory segment '{}': {}",
                 name, internal::errno_text(errno));
  const auto mapped_bytes = static_cast<size_t>(info.st_size);
  VOLLEY_REQUIRE(mapped_bytes >= internal::kSharedHeaderBytes, IoError,
                 "shared-memory segment '{}' is not a Volley segment ({} bytes, no header)", name,
                 mapped_bytes);
  void* mapping = mmap(nullptr, mapped_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  VOLLEY_REQUIRE(mapping != MAP_FAILED, IoError, "cannot map shared-memory segment '{}': {}", name,
                 internal::errno_text(errno));
  auto* header = static_cast<internal::SharedHeader*>(mapping);
  const bool valid = header->magic == internal::kSharedMagic &&
                     header->payload_bytes + internal::kSharedHeaderBytes == mapped_bytes;
  // Join the owners only while the segment is alive (owners > 0): a count of zero means its last
  // owner is unlinking it right now.
  int64_t owners = valid ? header->owners.load() : 0;
  while (owners > 0 && !header->owners.compare_exchange_weak(owners, owners + 1)) {
  }
  if (!valid || owners <= 0) {
    munmap(mapping, mapped_bytes);
    throw IoError(fmt::format("shared-memory segment '{}' is {}", name,
                              valid ? "being released by its last owner" : "not a Volley segment"));
  }
  Buffer buffer;
  buffer.storage_ = std::make_shared<internal::SharedStorage>(name, mapping, mapped_bytes);
  buffer.data_ = buffer.storage_->data;
  buffer.size_ = buffer.storage_->size;
  return buffer;
}

namespace internal {
namespace {

// Why a map was refused, and the way out, for the error message.
std::string map_failure_advice(int error_number, MapMode mode) {
  if (error_number != ENOMEM) return "";
  if (mode == MapMode::kCopyOnWrite) {
    return "; a writable copy-on-write view is refused by the kernel's commit limit "
           "(vm.overcommit_memory): map it read-only (MapMode::kReadOnly), or read it through a "
           "feature store's disk tier (volley.Feature(path, cache_bytes=...))";
  }
  return "; the process is out of address space or map areas: raise `ulimit -v` or "
         "vm.max_map_count, or read it through a feature store's disk tier "
         "(volley.Feature(path, cache_bytes=...))";
}

}  // namespace
}  // namespace internal

Buffer Buffer::map_file(const std::string& path, size_t offset, size_t length, MapMode mode) {
  internal::FileDescriptor fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  VOLLEY_REQUIRE(fd.get() >= 0, IoError, "cannot open '{}': {}", path, internal::errno_text(errno));
  struct stat info {};
  VOLLEY_REQUIRE(fstat(fd.get(), &info) == 0, IoError, "cannot stat '{}': {}", path,
                 internal::errno_text(errno));
  const auto file_bytes = static_cast<size_t>(info.st_size);
  VOLLEY_REQUIRE(offset <= file_bytes, IoError,
                 "'{}': offset {} is past the end of the file ({} bytes)", path, offset,
                 file_bytes);
  if (length == npos) length = file_bytes - offset;
  VOLLEY_REQUIRE(length <= file_bytes - offset, IoError,
                 "'{}': truncated: expected {} bytes from offset {}, the file has {} bytes", path,
                 length, offset, file_bytes);
  const bool copy_on_write = mode == MapMode::kCopyOnWrite;
  Buffer buffer;
  if (length == 0) {
    buffer.storage_ = std::make_shared<internal::MappedStorage>(nullptr, 0, 0, 0, copy_on_write);
    buffer.storage_->file_path = path;
    return buffer;
  }
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t aligned_offset = offset / page * page;
  const size_t skip = offset - aligned_offset;
  const size_t mapped_bytes = skip + length;
  // Read-only pages are shared with the page cache and never charged against the commit limit.
  // A copy-on-write view is private (the file is never modified) and MAP_NORESERVE, so only the
  // pages actually written need memory.
  const int protection = copy_on_write ? PROT_READ | PROT_WRITE : PROT_READ;
  const int flags = copy_on_write ? MAP_PRIVATE | MAP_NORESERVE : MAP_SHARED;
  void* mapping =
      mmap(nullptr, mapped_bytes, protection, flags, fd.get(), static_cast<off_t>(aligned_offset));
  if (mapping == MAP_FAILED) {
    const int error_number = errno;
    throw IoError(fmt::format("cannot map '{}' ({} bytes{}): {}{}", path, mapped_bytes,
                              copy_on_write ? ", copy-on-write" : ", read-only",
                              internal::errno_text(error_number),
                              internal::map_failure_advice(error_number, mode)));
  }
  auto storage =
      std::make_shared<internal::MappedStorage>(mapping, mapped_bytes, skip, length, copy_on_write);
  storage->file_path = path;
  storage->file_offset = offset;
  buffer.storage_ = std::move(storage);
  buffer.data_ = buffer.storage_->data;
  buffer.size_ = length;
  return buffer;
}

Buffer Buffer::allocate_pinned(size_t bytes) {
  Buffer buffer;
  buffer.storage_ = std::make_shared<internal::CudaStorage>(bytes, Location::kPinnedHost, -1);
  buffer.data_ = buffer.storage_->data;
  buffer.size_ = bytes;
  return buffer;
}

Buffer Buffer::allocate_device(size_t bytes, int device) {
  VOLLEY_REQUIRE(device >= 0, ValueError, "CUDA device ordinal must be >= 0, got {}", device);
  Buffer buffer;
  buffer.storage_ = std::make_shared<internal::CudaStorage>(bytes, Location::kCuda, device);
  buffer.data_ = buffer.storage_->data;
  buffer.size_ = bytes;
  return buffer;
}

Buffer Buffer::borrow(void* data, size_t bytes, std::shared_ptr<void> keep_alive, bool writable,
                      Location location, int device, std::string shared_name) {
  VOLLEY_REQUIRE(data != nullptr || bytes == 0, ValueError,
                 "cannot borrow {} bytes from a null pointer", bytes);
  Buffer buffer;
  auto storage =
      std::make_shared<internal::ExternalStorage>(data, bytes, std::move(keep_alive), location);
  storage->writable = writable;
  storage->device = device;
  storage->name = std::move(shared_name);
  buffer.storage_ = std::move(storage);
  buffer.data_ = static_cast<std::byte*>(data);
  buffer.size_ = bytes;
  return buffer;
}

Location Buffer::location() const { return storage_ ? storage_->location : Location::kHost; }

int Buffer::device() const { return storage_ ? storage_->device : -1; }

bool Buffer::writable() const { return storage_ ? storage_->writable : true; }

bool Buffer::host_accessible() const { return location() != Location::kCuda; }

size_t Buffer::offset() const {
  return storage_ && storage_->data != nullptr ? static_cast<size_t>(data_ - storage_->data) : 0;
}

const std::string& Buffer::shared_name() const {
  static const std::string kEmpty;
  return storage_ ? storage_->name : kEmpty;
}

const std::string& Buffer::file_path() const {
  static const std::string kEmpty;
  return storage_ && storage_->location == Location::kMappedFile ? storage_->file_path : kEmpty;
}

size_t Buffer::file_offset() const {
  if (!storage_ || storage_->location != Location::kMappedFile) return 0;
  return storage_->file_offset + offset();
}

Buffer Buffer::slice(size_t offset, size_t length) const {
  VOLLEY_REQUIRE(offset <= size_ && length <= size_ - offset, IndexError,
                 "slice [{}, {}) out of range for a buffer of {} bytes", offset, offset + length,
                 size_);
  Buffer view = *this;
  view.data_ = data_ + offset;
  view.size_ = length;
  return view;
}

}  // namespace volley
