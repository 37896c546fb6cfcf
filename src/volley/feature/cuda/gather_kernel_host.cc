// The GPU row gather on the host executor: gather_kernel.cu's body compiled by the host
// compiler, run on host threads in a shuffled order (gpu-host tests).
#include "volley/core/internal/host_executor.h"
#include "volley/feature/cuda/gather_driver.h"

namespace volley::feature_internal {

int64_t launch_host_gather(const DeviceGatherPlan& plan, const int64_t* ids, int64_t count,
                           void* out, bool check, const internal::HostExecutorOptions& options) {
  if (count == 0) return -1;
  internal::HostExecutor executor(options);
  unsigned long long first_bad = ~0ull;
  gather_with(executor, plan, ids, count, out, check ? &first_bad : nullptr);
  if (!check) return -1;
  return first_bad == ~0ull ? -1 : static_cast<int64_t>(first_bad);
}

}  // namespace volley::feature_internal
