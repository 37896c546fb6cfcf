// volley/feature/internal/cuda_aggregate_kernel.h — the seam between aggregate() (aggregate.cc,
// every build) and its GPU kernel: one body (cuda/aggregate_driver.h) run by
//   * the CUDA executor: launch_device_aggregate (cuda/aggregate_kernel.cu in CUDA builds,
//     cuda_aggregate_stub.cc otherwise, which throws);
//   * the host executor: launch_host_aggregate (cuda/aggregate_kernel_host.cc, builds with the
//     CUDA toolkit's CCCL headers, VOLLEY_WITH_GPU_HOST), where "device" memory is host memory
//     (gpu-host tests, the emulated device).
// Both give, bit for bit, what the CPU aggregate() gives: each output element is summed by one
// item in CSR order with the CPU's operations in the CPU's order (no fused multiply-adds).
#pragma once

#include <cstdint>

#include "volley/core/internal/host_executor.h"

namespace volley::feature_internal {

// One aggregation as the kernel sees it: the CSR and weights in host memory (the launcher
// uploads them), x and out in memory the executor's device reads and writes.
struct AggregatePlan {
  const int64_t* indptr = nullptr;  // [rows + 1]
  const void* indices = nullptr;    // [edges], int32 or int64, every id < sources (checked)
  bool indices_32bit = false;
  const float* weights = nullptr;  // [edges] float32, or null: 1
  int64_t rows = 0;
  int64_t sources = 0;
  int64_t edges = 0;
  int64_t dim = 0;
  int op = 0;                // Aggregation: 0 sum, 1 mean, 2 gcn
  bool self_loops = false;   // gcn only
  const float* x = nullptr;  // [sources, dim]
  float* out = nullptr;      // [rows, dim]
  int device = 0;
};

// Runs the aggregation on `stream` of plan.device and waits for it (the uploaded CSR is freed
// on return).
void launch_device_aggregate(const AggregatePlan& plan, void* stream);

// The same on the host executor, synchronously.
void launch_host_aggregate(const AggregatePlan& plan,
                           const internal::HostExecutorOptions& options = {});

}  // namespace volley::feature_internal
