// volley/feature/internal/cuda_gather_kernel.h — the seam between FeatureStore's GPU-tier front
// end (gpu_tiers.cc, every build) and its kernel: one body (cuda/gather_driver.h) run by
//   * the CUDA executor: launch_device_gather (cuda/gather_kernel.cu in CUDA builds,
//     cuda_gather_stub.cc otherwise, which throws);
//   * the host executor: launch_host_gather (cuda/gather_kernel_host.cc, builds with the CUDA
//     toolkit's CCCL headers, VOLLEY_WITH_GPU_HOST), over a plan of host pointers (gpu-host
//     tests).
#pragma once

#include <cstddef>
#include <cstdint>

#include "volley/core/internal/host_executor.h"

namespace volley::feature_internal {

// Where the rows of a FeatureStore's GPU tiers live, as the kernel sees them.
struct DeviceGatherPlan {
  const std::byte* device_rows = nullptr;  // device tier, hot_rows × row_bytes
  const std::byte* pinned_rows = nullptr;  // pinned host tier (device-readable), the rest
  // Per row: slot s >= 0 in the device tier or ~s in the pinned tier (int32 or int64 entries);
  // null: rows [0, hot_rows) are device slots, the rest pinned slot id - hot_rows.
  const void* lookup = nullptr;
  bool lookup_is_32bit = true;
  int64_t hot_rows = 0;
  int64_t num_rows = 0;
  size_t row_bytes = 0;
  int device = 0;
};

// Queues out[i] = row(ids[i]), i < count, on `stream` (rows of out-of-range ids zero-filled).
// With `check`, waits for the stream and returns the position of the first out-of-range id, or
// -1 when there is none; without, returns -1 at once.
int64_t launch_device_gather(const DeviceGatherPlan& plan, const int64_t* ids, int64_t count,
                             void* out, void* stream, bool check);

// The same on the host executor, synchronously: the plan's tiers, the lookup, ids and out are
// host memory.
int64_t launch_host_gather(const DeviceGatherPlan& plan, const int64_t* ids, int64_t count,
                           void* out, bool check,
                           const internal::HostExecutorOptions& options = {});

}  // namespace volley::feature_internal
