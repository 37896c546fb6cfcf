// volley/core/cuda/cuda_check.h — the CUDA plumbing every cuda/ folder uses (internal).
//
// Checked calls and launches (a failure throws volley::RuntimeError with the CUDA error name
// and string, the call and its file:line), and a scoped device switch. Include only from files
// in cuda/ folders: it pulls in the CUDA runtime.
//
//   VOLLEY_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream));
//   my_kernel<<<grid, block, 0, stream>>>(...);
//   VOLLEY_CUDA_CHECK_LAUNCH("my_kernel");
#pragma once

#include <cuda_runtime.h>

namespace volley::cuda {

// Throws RuntimeError "<what> failed: <string> (<name>) at <file>:<line>", after clearing the
// runtime's last (non-sticky) error.
[[noreturn]] void throw_cuda_error(cudaError_t status, const char* what, const char* file,
                                   int line);

inline void check(cudaError_t status, const char* what, const char* file, int line) {
  if (status != cudaSuccess) [[unlikely]] {
    throw_cuda_error(status, what, file, line);
  }
}

// Makes `device` current for the scope; restores the previous device after (unchecked there:
// destructors do not throw).
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
  bool switched_ = false;
};

}  // namespace volley::cuda

#define VOLLEY_CUDA_CHECK(call) ::volley::cuda::check((call), #call, __FILE__, __LINE__)
// After a <<<...>>> launch: launch-configuration errors surface here, with the kernel's name.
#define VOLLEY_CUDA_CHECK_LAUNCH(kernel_name) \
  ::volley::cuda::check(cudaGetLastError(), "launch of " kernel_name, __FILE__, __LINE__)
