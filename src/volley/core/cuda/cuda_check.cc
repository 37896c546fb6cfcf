// CUDA build: error reporting and the device guard of cuda_check.h (plain C++ on the runtime).
#include "volley/core/cuda/cuda_check.h"

#include "volley/core/error.h"

namespace volley::cuda {

void throw_cuda_error(cudaError_t status, const char* what, const char* file, int line) {
  cudaGetLastError();  // clear the non-sticky error so later calls do not report it again
  throw RuntimeError(fmt::format("{} failed: {} ({}) at {}:{}", what, cudaGetErrorString(status),
                                 cudaGetErrorName(status), file, line));
}

DeviceGuard::DeviceGuard(int device) {
  VOLLEY_CUDA_CHECK(cudaGetDevice(&previous_));
  if (previous_ != device) {
    VOLLEY_CUDA_CHECK(cudaSetDevice(device));
    switched_ = true;
  }
}

DeviceGuard::~DeviceGuard() {
  if (switched_) cudaSetDevice(previous_);
}

}  // namespace volley::cuda
