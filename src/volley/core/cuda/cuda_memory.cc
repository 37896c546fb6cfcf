// CUDA build: pinned and device allocations for Buffer. Plain C++ against the CUDA runtime
// (no device code, so no nvcc needed for this file).
#include <cuda_runtime.h>

#include <cstring>
#include <string>

#include "volley/core/error.h"
#include "volley/core/internal/cuda_memory.h"

namespace volley::internal {
namespace {
void check(cudaError_t status, const char* what, size_t bytes) {
  if (status != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free error state
    const std::string size = bytes == 0 ? "" : fmt::format(" of {} bytes", bytes);
    throw RuntimeError(fmt::format("{}{} failed: {} ({})", what, size, cudaGetErrorString(status),
                                   static_cast<int>(status)));
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

namespace {

// Runs `call` (returning a cudaError_t) with `device` current, restores the previous device,
// then checks the call's status.
template <typename Call>
void on_device(int device, const char* what, size_t bytes, Call call) {
  int previous = 0;
  check(cudaGetDevice(&previous), "cudaGetDevice", bytes);
  check(cudaSetDevice(device), "cudaSetDevice", bytes);
  const cudaError_t status = call();
  cudaSetDevice(previous);
  check(status, what, bytes);
}

// The same for a release in a destructor: nothing is checked (nothing may throw).
template <typename Call>
void on_device_unchecked(int device, Call call) noexcept {
  int previous = 0;
  if (cudaGetDevice(&previous) != cudaSuccess) return;
  cudaSetDevice(device);
  call();
  cudaSetDevice(previous);
}

}  // namespace

void* cuda_allocate_device(size_t bytes, int device) {
  void* pointer = nullptr;
  on_device(device, "cudaMalloc", bytes, [&] { return cudaMalloc(&pointer, bytes); });
  return pointer;
}

void cuda_free_device(void* pointer, int device) noexcept {
  on_device_unchecked(device, [&] { cudaFree(pointer); });
}

void cuda_ipc_get_handle(void* pointer, int device, unsigned char* handle) {
  static_assert(sizeof(cudaIpcMemHandle_t) == kCudaIpcHandleBytes);
  cudaIpcMemHandle_t ipc{};
  on_device(device, "cudaIpcGetMemHandle", 0, [&] { return cudaIpcGetMemHandle(&ipc, pointer); });
  std::memcpy(handle, &ipc, sizeof(ipc));
}

void* cuda_ipc_open(const unsigned char* handle, int device) {
  cudaIpcMemHandle_t ipc{};
  std::memcpy(&ipc, handle, sizeof(ipc));
  void* pointer = nullptr;
  on_device(device, "cudaIpcOpenMemHandle", 0,
            [&] { return cudaIpcOpenMemHandle(&pointer, ipc, cudaIpcMemLazyEnablePeerAccess); });
  return pointer;
}

void cuda_ipc_close(void* pointer, int device) noexcept {
  on_device_unchecked(device, [&] { cudaIpcCloseMemHandle(pointer); });
}

void cuda_host_register(void* pointer, size_t bytes) {
  check(cudaHostRegister(pointer, bytes, cudaHostRegisterPortable | cudaHostRegisterMapped),
        "cudaHostRegister", bytes);
}

void cuda_host_unregister(void* pointer) noexcept { cudaHostUnregister(pointer); }

}  // namespace volley::internal
