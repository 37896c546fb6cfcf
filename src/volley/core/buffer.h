// volley/core/buffer.h — owned bytes that know where they live.
//
// A Buffer is a cheap, copyable handle (shared ownership) to a block of bytes in one of these
// locations:
//   kHost          pageable heap memory, 64-byte aligned;
//   kSharedMemory  a POSIX shared-memory segment (/dev/shm) with a name that another process can
//                  attach to; the segment is unlinked when the last owner in any process lets go;
//   kMappedFile    a memory map of a file region (never copied into RAM up front); reported
//                  read-only; pages are private copy-on-write, so the file is never modified;
//   kPinnedHost    page-locked host memory a GPU reads directly (CUDA builds only);
//   kCuda          device memory on CUDA device `device()` (CUDA builds only);
//   kExternal      memory owned by someone else (a numpy array, a torch tensor), kept alive by a
//                  handle the Buffer holds.
//
//   Buffer a = Buffer::allocate(1 << 20);
//   Buffer s = Buffer::create_shared(1 << 20);         // s.shared_name() == "/volley-..."
//   Buffer t = Buffer::attach_shared(s.shared_name());  // in another process: same bytes
//
// Thread safety: handles may be copied and destroyed concurrently; the bytes themselves are not
// synchronised. Errors: IoError for failing system calls (with errno text), ValueError for bad
// arguments, RuntimeError when a CUDA location is asked of a build without CUDA.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

namespace volley {

enum class Location { kHost, kSharedMemory, kMappedFile, kPinnedHost, kCuda, kExternal };

std::string_view location_name(Location location);

namespace internal {
class Storage;
}

class Buffer {
 public:
  // An empty buffer: data() == nullptr, size() == 0.
  Buffer() = default;

  // Uninitialised heap memory, 64-byte aligned.
  static Buffer allocate(size_t bytes);
  // Zero-filled heap memory.
  static Buffer zeros(size_t bytes);
  // A new shared-memory segment of `bytes` (zero-filled). `name` must start with '/' and contain
  // no other '/'; empty picks a unique "/volley-<pid>-<n>-<random>".
  static Buffer create_shared(size_t bytes, const std::string& name = "");
  // Attaches to a segment made by create_shared (in this or another process) while it is alive.
  static Buffer attach_shared(const std::string& name);
  // Maps `length` bytes of `path` from `offset` read-only (length == npos: to the end of file).
  static Buffer map_file(const std::string& path, size_t offset = 0, size_t length = npos);
  // Page-locked host memory (CUDA builds; RuntimeError otherwise).
  static Buffer allocate_pinned(size_t bytes);
  // Device memory on CUDA device `device` (CUDA builds; RuntimeError otherwise).
  static Buffer allocate_device(size_t bytes, int device);
  // Wraps memory owned elsewhere; `keep_alive` is held until the last copy of this Buffer goes.
  static Buffer borrow(void* data, size_t bytes, std::shared_ptr<void> keep_alive,
                       bool writable = true, Location location = Location::kExternal,
                       int device = -1);

  static constexpr size_t npos = static_cast<size_t>(-1);

  std::byte* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  Location location() const;
  // CUDA device ordinal for kCuda, -1 otherwise.
  int device() const;
  // Whether the bytes may be written (false for mapped files and read-only borrows).
  bool writable() const;
  // Whether the CPU can dereference data() (false only for kCuda).
  bool host_accessible() const;
  // Name of the shared-memory segment ("" unless kSharedMemory).
  const std::string& shared_name() const;

  // How many Buffer handles (views included) share these bytes; 0 for an empty buffer. A pool
  // may recycle a buffer whose count shows it holds the only handle.
  long use_count() const { return storage_.use_count(); }

  // A view of [offset, offset + length) sharing ownership with this buffer.
  Buffer slice(size_t offset, size_t length) const;

 private:
  std::shared_ptr<internal::Storage> storage_;
  std::byte* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace volley
