// The CUDA loader's dtype conversion on the host executor: convert_kernel.cu's bodies compiled by
// the host compiler, run on host threads in a shuffled order (the host-executor device, gpu-host
// tests).
#include "volley/core/internal/host_executor.h"
#include "volley/loader/cuda/convert_driver.h"
#include "volley/loader/internal/cuda_convert.h"

namespace volley::loader_internal {

bool launch_host_convert(const std::byte* in, DType from, std::byte* out, DType to, int64_t count,
                         const internal::HostExecutorOptions& options) {
  if (count == 0) return true;
  internal::HostExecutor executor(options);
  return convert_with(executor, in, from, out, to, count);
}

}  // namespace volley::loader_internal
