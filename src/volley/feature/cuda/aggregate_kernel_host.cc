// Whole-graph aggregation on the host executor: aggregate_kernel.cu's bodies compiled by the host
// compiler, run on host threads in a shuffled order (gpu-host tests, the emulated device).
#include "volley/core/internal/host_executor.h"
#include "volley/feature/cuda/aggregate_driver.h"

namespace volley::feature_internal {

void launch_host_aggregate(const AggregatePlan& plan,
                           const internal::HostExecutorOptions& options) {
  internal::HostExecutor executor(options);
  aggregate_with(executor, plan);
}

}  // namespace volley::feature_internal
