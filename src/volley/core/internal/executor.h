// volley/core/internal/executor.h — the seam between a GPU kernel's logic and where it runs
// (internal to Volley's GPU code).
//
// A kernel is written once, as a `VOLLEY_HOST_DEVICE` body of one item: a small struct of spans
// and plain values with `void operator()(int64_t i) const` and a `kName` for error messages. It
// never sees a stream, an allocator or a device id. An *executor* runs it:
//
//   CudaExecutor (core/cuda/cuda_executor.cuh, nvcc): a grid-stride kernel on the executor's
//                stream; scans with CUB; memory from the CUDA runtime.
//   HostExecutor (core/internal/host_executor.h, any C++ compiler): the same body on host
//                threads, items in a seeded shuffled order; "device" and "pinned" memory are
//                ordinary host memory, so UVA addressing runs the very same code.
//
// Both have the same members, so a kernel driver is a template on the executor:
//   void set_stream(void* stream);                 // a cudaStream_t as void* (host: ignored)
//   template <class Body> void for_each(int64_t n, const Body& body);  // body(i), i < n
//   template <class Body> void for_each_counted(DeviceCount n, const Body& body);
//                                                  // body(i), i < n's value read on the device
//   void exclusive_scan(const int64_t* in, int64_t* out, int64_t n);   // int64 prefix sums
//   void fill(void* data, int byte, size_t bytes);                     // memset, stream-ordered
//   void copy(void* to, const void* from, size_t bytes);               // any direction
//   void upload(void* to, const void* host_from, size_t bytes);  // from pageable host memory
//   int64_t read(const int64_t* from);             // waits for the stream, reads one value
//   void read(const int64_t* from, int64_t* to, int64_t n);  // the same, n values
//   void synchronize();                            // waits for the stream
//   Buffer allocate(Memory memory, size_t bytes);  // scratch: device or pinned host memory
// Atomics in bodies go through core/internal/atomics.h (cuda::atomic_ref), never atomicCAS.
#pragma once

#include <algorithm>
#include <cstddef>

#include "volley/core/buffer.h"

namespace volley::internal {

enum class Memory { kDevice, kPinned };

// An item count that lives in device memory, written by earlier work on the stream: the launch
// runs *end - *begin items (begin null: *end), never more than `bound`, an upper bound the host
// knows and sizes the launch by. A kernel driver that knows its sizes only as bounds launches
// with these and never waits for the device to learn them.
struct DeviceCount {
  const int64_t* end = nullptr;
  const int64_t* begin = nullptr;
  int64_t bound = 0;
};

// One named piece of an executor's working memory kept between calls: reserve() returns the
// current allocation when it is large enough and nobody else holds it (steady-state batches
// allocate nothing). It grows by at least 1.5x, keeping its first `keep` bytes (copied in
// stream order). A buffer handed to a caller (a slice in an Array) is never overwritten while
// held: Buffer::use_count() shows it, and reserve() then allocates a fresh one.
// Not thread-safe: one owner per Scratch. The executor must outlive it.
template <class Executor>
class Scratch {
 public:
  Scratch(Executor& executor, Memory memory) : executor_(&executor), memory_(memory) {}

  std::byte* reserve(size_t bytes, size_t keep = 0) {
    bytes = std::max<size_t>(bytes, 1);
    const bool shared = buffer_.use_count() > 1;  // a caller still holds (a view of) it
    if (!buffer_.empty() && !shared && buffer_.size() >= bytes) return buffer_.data();
    size_t grown = buffer_.empty() ? bytes : std::max(bytes, buffer_.size() + buffer_.size() / 2);
    grown = (grown + 255) & ~size_t{255};
    Buffer fresh = executor_->allocate(memory_, grown);
    ++allocations_;
    keep = std::min(keep, buffer_.size());
    if (keep > 0) executor_->copy(fresh.data(), buffer_.data(), keep);
    // Queued work may still use the old allocation: wait before freeing it (growth is rare).
    if (!buffer_.empty() && !shared) executor_->synchronize();
    buffer_ = std::move(fresh);
    return buffer_.data();
  }

  template <typename T>
  T* as() const {
    return reinterpret_cast<T*>(buffer_.data());
  }
  std::byte* data() const { return buffer_.data(); }
  size_t capacity() const { return buffer_.size(); }
  const Buffer& buffer() const { return buffer_; }
  int allocations() const { return allocations_; }  // how many allocations reserve() made

 private:
  Executor* executor_;
  Memory memory_;
  Buffer buffer_;
  int allocations_ = 0;
};

}  // namespace volley::internal
