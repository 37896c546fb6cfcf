// The CUDA loader's dtype conversion on a CUDA device: convert_driver.h's bodies run by the CUDA
// executor (CUDA builds only; convert_kernel_host.cc runs them on the host executor).
#include <memory>

#include "volley/core/cuda/cuda_executor.cuh"
#include "volley/loader/cuda/convert_driver.h"
#include "volley/loader/internal/cuda_convert.h"

namespace volley::loader_internal {

bool launch_convert(const std::byte* in, DType from, std::byte* out, DType to, int64_t count,
                    int device, void* stream) {
  if (count == 0) return true;
  cuda::DeviceGuard guard(device);
  // Per thread and device (the loader's producer thread keeps one).
  thread_local int executor_device = -1;
  thread_local std::unique_ptr<cuda::CudaExecutor> executor;
  if (executor_device != device) {
    executor = std::make_unique<cuda::CudaExecutor>(device);
    executor_device = device;
  }
  executor->set_stream(stream);
  return convert_with(*executor, in, from, out, to, count);
}

}  // namespace volley::loader_internal
