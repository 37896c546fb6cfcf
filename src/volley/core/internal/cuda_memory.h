// volley/core/internal/cuda_memory.h — the CUDA allocation seam of Buffer.
//
// Implemented in core/cuda/cuda_memory.cc when built with CUDA, and by stubs that throw
// volley::RuntimeError ("built without CUDA") otherwise. Every CUDA call is checked.
#pragma once

#include <cstddef>

namespace volley::internal {

bool cuda_available();  // built with CUDA and at least one device visible
void* cuda_allocate_pinned(size_t bytes);
void cuda_free_pinned(void* pointer) noexcept;
void* cuda_allocate_device(size_t bytes, int device);
void cuda_free_device(void* pointer, int device) noexcept;

// CUDA IPC (core/ipc.h). A cudaIpcMemHandle_t is 64 opaque bytes.
constexpr size_t kCudaIpcHandleBytes = 64;
// The IPC handle of device memory from cuda_allocate_device (cudaIpcGetMemHandle).
void cuda_ipc_get_handle(void* pointer, int device, unsigned char* handle);
// Opens another process's device memory on `device` (cudaIpcOpenMemHandle, lazy peer access);
// closed with cuda_ipc_close.
void* cuda_ipc_open(const unsigned char* handle, int device);
void cuda_ipc_close(void* pointer, int device) noexcept;
// Page-locks `bytes` of host memory at `pointer` for this process (cudaHostRegister, portable
// and mapped); undone by cuda_host_unregister.
void cuda_host_register(void* pointer, size_t bytes);
void cuda_host_unregister(void* pointer) noexcept;

}  // namespace volley::internal
