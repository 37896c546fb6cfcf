// CUDA build: GrowableBuffer (plain C++ on the CUDA runtime).
#include "volley/core/cuda/growable_buffer.h"

#include <algorithm>

#include "volley/core/cuda/cuda_check.h"
#include "volley/core/error.h"

namespace volley::cuda {

std::byte* GrowableBuffer::reserve(size_t bytes, cudaStream_t stream, size_t keep) {
  bytes = std::max<size_t>(bytes, 1);
  const bool shared = buffer_.use_count() > 1;  // a caller still holds (a view of) it
  if (!buffer_.empty() && !shared && buffer_.size() >= bytes) return buffer_.data();
  size_t grown = buffer_.empty() ? bytes : std::max(bytes, buffer_.size() + buffer_.size() / 2);
  grown = (grown + 255) & ~size_t{255};
  Buffer fresh = location_ == Location::kCuda ? Buffer::allocate_device(grown, device_)
                                              : Buffer::allocate_pinned(grown);
  ++allocations_;
  keep = std::min(keep, buffer_.size());
  if (keep > 0) {
    VOLLEY_CUDA_CHECK(
        cudaMemcpyAsync(fresh.data(), buffer_.data(), keep, cudaMemcpyDefault, stream));
  }
  // Work queued on `stream` may still use the old allocation: wait before freeing it (growth
  // is rare; steady state never gets here). A caller-held buffer is the caller's to release.
  if (!buffer_.empty() && !shared) VOLLEY_CUDA_CHECK(cudaStreamSynchronize(stream));
  buffer_ = std::move(fresh);
  return buffer_.data();
}

}  // namespace volley::cuda
