// CUDA build: pinned and device allocations for Buffer. Plain C++ against the CUDA runtime
// (no device code, so no nvcc needed for this file).
#include <cuda_runtime.h>

#include "volley/core/error.h"
#include "volley/core/internal/cuda_memory.h"

namespace volley::internal {
namespace {
void check(cudaError_t status, const char* what, size_t bytes) {
  if (status != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free error state
    throw RuntimeError(fmt::format("{} of {} bytes failed: {} ({})", what, bytes,
                                   cudaGetErrorString(status), static_cast<int>(status)));
  }
}
}  // namespace

bool cuda_available() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return count > 0;
}

void* cuda_allocate_pinned(size_t bytes) {
  void* pointer = nullptr;
  check(cudaHostAlloc(&pointer, bytes, cudaHostAllocPortable | cudaHostAllocMapped),
        "cudaHostAlloc", bytes);
  return pointer;
}

void cuda_free_pinned(void* pointer) noexcept { cudaFreeHost(pointer); }

void* cuda_allocate_device(size_t bytes, int device) {
  int previous = 0;
  check(cudaGetDevice(&previous), "cudaGetDevice", bytes);
  check(cudaSetDevice(device), "cudaSetDevice", bytes);
  void* pointer = nullptr;
  const cudaError_t status = cudaMalloc(&pointer, bytes);
  cudaSetDevice(previous);
  check(status, "cudaMalloc", bytes);
  return pointer;
}

void cuda_free_device(void* pointer, int device) noexcept {
  int previous = 0;
  if (cudaGetDevice(&previous) != cudaSuccess) return;
  cudaSetDevice(device);
  cudaFree(pointer);
  cudaSetDevice(previous);
}

}  // namespace volley::internal
