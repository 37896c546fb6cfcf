// volley/core/internal/emulated_device.h — the host-executor device (internal; tests and the
// GPU front ends).
//
// When cuda_emulated() (volley/core/cuda_device.h) is true, one emulated CUDA device, ordinal 0,
// stands in for a GPU: Buffer::allocate_device / allocate_pinned give ordinary host memory
// (still tagged Location::kCuda / kPinnedHost, so every GPU branch is taken), streams and events
// are no-ops, cuda_copy is memmove, and the GPU front ends (CUDA sampler, GPU feature tiers,
// CUDA loader) run their kernels through the host executor (host_executor.h) instead of the
// CUDA executor. Work is synchronous, so stream order holds trivially.
//
// Turned on by the environment variable VOLLEY_HOST_EXECUTOR=1 (read at the first query), or by
// set_cuda_emulated() in C++ tests. A user never gets it by default. Only builds with the host
// executor (the CUDA toolkit's CCCL headers at build time, VOLLEY_WITH_GPU_HOST) can emulate.
#pragma once

#include <cstddef>

namespace volley::internal {

// Whether this build can emulate (has the host executor's kernels).
bool cuda_emulation_built();
// Turns the emulated device on or off for the process (tests only; set it before placing any
// GPU data: memory allocated in one mode is freed as allocated, but data placed with a real
// device cannot be used emulated, nor the reverse). RuntimeError when turning it on in a build
// without the host executor.
void set_cuda_emulated(bool on);

// Host memory standing in for device or pinned memory (256-byte aligned; >= 1 byte).
void* emulated_allocate(size_t bytes);
void emulated_free(void* pointer) noexcept;
// The emulated device's free memory: the host's available physical memory (sysconf).
size_t host_available_memory();

// Turns emulation on for a scope and restores the previous state (tests).
class ScopedCudaEmulation {
 public:
  explicit ScopedCudaEmulation(bool on = true);
  ~ScopedCudaEmulation();
  ScopedCudaEmulation(const ScopedCudaEmulation&) = delete;
  ScopedCudaEmulation& operator=(const ScopedCudaEmulation&) = delete;

 private:
  bool previous_;
};

}  // namespace volley::internal
