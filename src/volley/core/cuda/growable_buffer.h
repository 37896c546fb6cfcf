// volley/core/cuda/growable_buffer.h — the workspace allocator of the CUDA kernels (internal).
//
// A GrowableBuffer is one named piece of working memory (device or pinned host) that a kernel
// driver keeps between calls: reserve() returns the current allocation when it is large enough
// and nobody else holds it, so steady-state batches make no cudaMalloc at all. It grows by at
// least 1.5x when asked for more, copying the bytes to keep on the caller's stream. A buffer
// handed to a caller (as a slice in an Array) is never overwritten while the caller holds it:
// Buffer::use_count() shows it, and reserve() then allocates a fresh one instead.
//
//   GrowableBuffer nodes(Location::kCuda, device);
//   auto* p = reinterpret_cast<int64_t*>(nodes.reserve(n * 8, stream));
//
// Not thread-safe: one owner (a sampler, a feature store's gather state) per buffer.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "volley/core/buffer.h"

namespace volley::cuda {

class GrowableBuffer {
 public:
  // `location` is Location::kCuda (device memory on `device`) or Location::kPinnedHost.
  GrowableBuffer(Location location, int device) : location_(location), device_(device) {}

  // At least `bytes` (>= 1) of memory. When a new allocation is needed, its first `keep` bytes
  // are copied from the old one on `stream` (stream-ordered), and the old one is released after
  // `stream` has finished with it.
  std::byte* reserve(size_t bytes, cudaStream_t stream, size_t keep = 0);

  std::byte* data() const { return buffer_.data(); }
  size_t capacity() const { return buffer_.size(); }
  const Buffer& buffer() const { return buffer_; }
  // How many allocations reserve() has made (tests check steady-state reuse).
  int allocations() const { return allocations_; }

 private:
  Location location_;
  int device_;
  Buffer buffer_;
  int allocations_ = 0;
};

}  // namespace volley::cuda
