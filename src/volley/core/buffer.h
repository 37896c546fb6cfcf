// volley/core/buffer.h — owned bytes that know where they live.
//
// A Buffer is a cheap, copyable handle (shared ownership) to a block of bytes in one of these
// locations:
//   kHost          pageable memory, 64-byte aligned (>= 256 KiB: recycled, see host_pool.h);
//   kSharedMemory  memory another process can attach to by name, either
//                  - an anonymous memfd segment (create_shareable; preferred): no name in
//                    /dev/shm at all, so nothing can leak even when every process holding it is
//                    killed — the kernel frees it with the last descriptor and mapping; or
//                  - a POSIX shared-memory segment (create_shared) in /dev/shm, unlinked when the
//                    last owner in any process lets go (leaks if every owner is killed);
//   kMappedFile    a memory map of a file region (never copied into RAM up front). By default
//                  mapped PROT_READ: the kernel charges nothing against the commit limit, so a
//                  file of any size opens whatever the RAM (a write through data() faults).
//                  MapMode::kCopyOnWrite asks for a writable view instead: private pages with
//                  MAP_NORESERVE, so the file is never modified and only written pages count;
//   kPinnedHost    page-locked host memory a GPU reads directly (CUDA builds only);
//   kCuda          device memory on CUDA device `device()` (CUDA builds only);
//   kExternal      memory owned by someone else (a numpy array, a torch tensor), kept alive by a
//                  handle the Buffer holds.
//
//   Buffer a = Buffer::allocate(1 << 20);
//   Buffer s = Buffer::create_shared(1 << 20);         // s.shared_name() == "/volley-..."
//   Buffer t = Buffer::attach_shared(s.shared_name());  // in another process: same bytes
//   Buffer m = Buffer::create_shareable(1 << 20);      // m.shared_name() == "memfd:<pid>:..."
//   Buffer u = Buffer::attach_shared(m.shared_name());  // another process of the same user
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

// How map_file maps: read-only (the default: never charged against the commit limit), or a
// private writable copy-on-write view (MAP_NORESERVE; writes stay in this process).
enum class MapMode { kReadOnly, kCopyOnWrite };

std::string_view location_name(Location location);

namespace internal {
class Storage;
}

class Buffer {
 public:
  // An empty buffer: data() == nullptr, size() == 0.
  Buffer() = default;

  // Uninitialised host memory, 64-byte aligned (from 256 KiB: the host pool's, host_pool.h).
  static Buffer allocate(size_t bytes);
  // Zero-filled heap memory.
  static Buffer zeros(size_t bytes);
  // A new shared-memory segment of `bytes` (zero-filled). `name` must start with '/' and contain
  // no other '/'; empty picks a unique "/volley-<pid>-<n>-<random>".
  static Buffer create_shared(size_t bytes, const std::string& name = "");
  // A new anonymous shared segment of `bytes` (zero-filled, pages committed on first touch),
  // backed by memfd_create: nothing appears in /dev/shm, and the memory is freed when the last
  // process holding a descriptor or mapping lets go — normal exit, exception or kill -9 alike.
  // shared_name() is a handle "memfd:<pid>:<fd>:<bytes>:<token>" naming this process's
  // descriptor; attach_shared() opens it through /proc/<pid>/fd/<fd>, which works from any
  // process of the same user while process <pid> still holds the buffer.
  static Buffer create_shareable(size_t bytes);
  // Attaches to a segment made by create_shared or create_shareable (in this or another process)
  // while it is alive; `name` is the creator's shared_name(). A buffer attached to a memfd handle
  // keeps its own descriptor, and its shared_name() names the attaching process, so it can be
  // handed on after the creator is gone. Throws IoError naming the handle when the segment is
  // gone (for memfd: the process that held the handle exited), is not a Volley segment, or
  // cannot be mapped; ValueError for a malformed memfd handle.
  static Buffer attach_shared(const std::string& name);
  // Maps `length` bytes of `path` from `offset` (length == npos: to the end of file), read-only
  // unless `mode` asks for a copy-on-write view (then writable() is true). Opening never depends
  // on RAM: nothing is read up front and a read-only map is not charged against the commit limit.
  // IoError for a missing / short file or a refused map; the message names the file, the size
  // and what to do about it.
  static Buffer map_file(const std::string& path, size_t offset = 0, size_t length = npos,
                         MapMode mode = MapMode::kReadOnly);
  // Page-locked host memory (CUDA builds; RuntimeError otherwise).
  static Buffer allocate_pinned(size_t bytes);
  // Device memory on CUDA device `device` (CUDA builds; RuntimeError otherwise).
  static Buffer allocate_device(size_t bytes, int device);
  // Wraps memory owned elsewhere; `keep_alive` is held until the last copy of this Buffer goes.
  // `shared_name`, when given, is what shared_name() returns (core/ipc.h names its shareable
  // device and pinned blocks so).
  static Buffer borrow(void* data, size_t bytes, std::shared_ptr<void> keep_alive,
                       bool writable = true, Location location = Location::kExternal,
                       int device = -1, std::string shared_name = "");

  static constexpr size_t npos = static_cast<size_t>(-1);

  std::byte* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  Location location() const;
  // CUDA device ordinal for kCuda, -1 otherwise.
  int device() const;
  // Whether the bytes may be written (false for read-only mapped files and read-only borrows).
  bool writable() const;
  // Whether the CPU can dereference data() (false only for kCuda).
  bool host_accessible() const;
  // Name of the shared-memory segment (kSharedMemory): a /dev/shm name ("/volley-...") or a
  // memfd handle ("memfd:..."); either one is what attach_shared() takes. For device or pinned
  // memory another process can open (core/ipc.h): its IPC handle ("ipc:..."), what open_ipc
  // takes. "" otherwise.
  const std::string& shared_name() const;
  // Byte offset of data() from the start of the underlying allocation (non-zero for slices):
  // with shared_name(), it locates a view inside a shared segment.
  size_t offset() const;
  // kMappedFile: the mapped file's path and the file offset of data() (what a reader that
  // bypasses the map, such as the feature store's disk tier, opens); "" and 0 otherwise.
  const std::string& file_path() const;
  size_t file_offset() const;

  // How many Buffer handles (views included) share these bytes; 0 for an empty buffer. A pool
  // may recycle a buffer whose count shows it holds the only handle.
  long use_count() const { return storage_.use_count(); }

  // A view of [offset, offset + length) sharing ownership with this buffer.
  Buffer slice(size_t offset, size_t length) const;

 private:
  static Buffer attach_memfd(const std::string& name);

  std::shared_ptr<internal::Storage> storage_;
  std::byte* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace volley
