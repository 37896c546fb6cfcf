// volley/core/cuda/cuda_executor.cuh — runs kernel bodies on a CUDA device (internal; nvcc
// only). The executor seam is described in core/internal/executor.h.
//
// for_each(n, body) launches a grid-stride kernel of 256-thread blocks on the executor's stream
// (at most 32 blocks per SM; one item per thread when the grid covers n); scans use CUB with
// scratch the executor keeps; every call and launch is checked (RuntimeError naming the body).
//
//   CudaExecutor executor(device);
//   executor.set_stream(stream);               // the caller's cudaStream_t, as void*
//   executor.for_each(n, CountBody{...});
//   int64_t total = executor.read(counts + n);  // waits for the stream
//
// Not thread-safe: one owner (a sampler, a gather call), like the stream it runs on.
#pragma once

#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <cstdint>

#include "volley/core/buffer.h"
#include "volley/core/cuda/cuda_check.h"
#include "volley/core/internal/executor.h"

namespace volley::cuda {

template <class Body>
__global__ void for_each_kernel(int64_t n, Body body) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    body(i);
  }
}

// The counted form: the item count is read on the device (executor.h, DeviceCount).
template <class Body>
__global__ void for_each_counted_kernel(const int64_t* end, const int64_t* begin, int64_t bound,
                                        Body body) {
  const int64_t n = min(*end - (begin != nullptr ? *begin : 0), bound);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    body(i);
  }
}

class CudaExecutor {
 public:
  static constexpr int kBlock = 256;

  explicit CudaExecutor(int device) : device_(device) {
    DeviceGuard guard(device_);
    VOLLEY_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, device_));
  }
  // (Freeing the staging arena's pinned memory waits for the device's work on it.)
  CudaExecutor(const CudaExecutor&) = delete;
  CudaExecutor& operator=(const CudaExecutor&) = delete;

  int device() const { return device_; }
  cudaStream_t stream() const { return stream_; }
  void set_stream(void* stream) { stream_ = static_cast<cudaStream_t>(stream); }

  template <class Body>
  void for_each(int64_t n, const Body& body) {
    if (n <= 0) return;
    for_each_kernel<Body><<<grid(n), kBlock, 0, stream_>>>(n, body);
    check(cudaGetLastError(), Body::kName, __FILE__, __LINE__);
  }
  template <class Body>
  void for_each_counted(internal::DeviceCount n, const Body& body) {
    if (n.bound <= 0) return;
    for_each_counted_kernel<Body>
        <<<grid(n.bound), kBlock, 0, stream_>>>(n.end, n.begin, n.bound, body);
    check(cudaGetLastError(), Body::kName, __FILE__, __LINE__);
  }

  template <typename T>  // a template, so files that never scan instantiate no CUB kernel
  void exclusive_scan(const T* in, T* out, int64_t n) {
    size_t temp_bytes = 0;
    VOLLEY_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, temp_bytes, in, out, n, stream_));
    void* temp = grow(scan_temp_, internal::Memory::kDevice, temp_bytes);
    VOLLEY_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(temp, temp_bytes, in, out, n, stream_));
  }

  void fill(void* data, int byte, size_t bytes) {
    VOLLEY_CUDA_CHECK(cudaMemsetAsync(data, byte, bytes, stream_));
  }
  void copy(void* to, const void* from, size_t bytes) {
    if (bytes == 0) return;
    VOLLEY_CUDA_CHECK(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDefault, stream_));
  }
  // Stages through pinned memory so the copy is asynchronous: uploads take consecutive pieces
  // of one staging arena, which is recycled when the executor next waits for the stream (an
  // upload waits only when the arena is full).
  void upload(void* to, const void* host_from, size_t bytes) {
    if (bytes == 0) return;
    const size_t piece = (bytes + 255) & ~size_t{255};
    if (staged_ + piece > staging_.size()) {
      synchronize();  // every earlier upload has run: the arena is free
      if (piece > staging_.size()) {
        staging_ = allocate(internal::Memory::kPinned,
                            std::max({piece, 2 * staging_.size(), size_t{1} << 20}));
      }
    }
    std::byte* staging = staging_.data() + staged_;
    staged_ += piece;
    std::copy_n(static_cast<const std::byte*>(host_from), bytes, staging);
    copy(to, staging, bytes);
  }
  int64_t read(const int64_t* from) {
    int64_t value = 0;
    read(from, &value, 1);
    return value;
  }
  void read(const int64_t* from, int64_t* to, int64_t n) {
    const size_t bytes = static_cast<size_t>(n) * sizeof(int64_t);
    auto* words = static_cast<int64_t*>(grow(readback_, internal::Memory::kPinned, bytes));
    copy(words, from, bytes);
    synchronize();
    std::copy_n(words, n, to);
  }
  void synchronize() {
    VOLLEY_CUDA_CHECK(cudaStreamSynchronize(stream_));
    staged_ = 0;
  }
  Buffer allocate(internal::Memory memory, size_t bytes) {
    return memory == internal::Memory::kDevice ? Buffer::allocate_device(bytes, device_)
                                               : Buffer::allocate_pinned(bytes);
  }

 private:
  // `buffer` with at least `bytes`; a smaller one is replaced after the stream is done with it.
  void* grow(Buffer& buffer, internal::Memory memory, size_t bytes) {
    if (buffer.size() >= std::max<size_t>(bytes, 1)) return buffer.data();
    if (!buffer.empty()) synchronize();
    buffer = allocate(memory, std::max<size_t>(bytes, 256));
    return buffer.data();
  }

  // Blocks for n items: one item per thread, at most 32 blocks per SM (grid-stride beyond).
  unsigned grid(int64_t n) const {
    const int64_t wanted = (n + kBlock - 1) / kBlock;
    return static_cast<unsigned>(
        std::min<int64_t>(wanted, static_cast<int64_t>(std::max(sm_count_, 1)) * 32));
  }

  int device_;
  int sm_count_ = 0;
  cudaStream_t stream_ = nullptr;
  size_t staged_ = 0;  // bytes of staging_ taken by uploads since the last wait
  Buffer scan_temp_, staging_, readback_;
};

}  // namespace volley::cuda
