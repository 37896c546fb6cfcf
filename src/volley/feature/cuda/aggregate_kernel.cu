// Whole-graph aggregation on a CUDA device: aggregate_driver.h's bodies run by the CUDA executor
// (CUDA builds only; aggregate_kernel_host.cc runs them on the host executor).
#include "volley/core/cuda/cuda_executor.cuh"
#include "volley/feature/cuda/aggregate_driver.h"

namespace volley::feature_internal {

void launch_device_aggregate(const AggregatePlan& plan, void* stream) {
  cuda::DeviceGuard guard(plan.device);
  cuda::CudaExecutor executor(plan.device);
  executor.set_stream(stream);
  aggregate_with(executor, plan);
}

}  // namespace volley::feature_internal
