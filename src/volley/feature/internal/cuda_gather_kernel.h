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

// Where the rows of a FeatureStore's GPU tiers live, as the kernel on `device` sees them.
// Rows are ranked by placement slot (hottest first). The device cache of the gathering
// device's peer-access clique holds slots [0, hot_rows), dealt round-robin over the clique's
// `shards` devices: slot s is row s / shards of shard s % shards (the device's own shard or a
// peer's, read over peer access). Pinned host memory holds slots [pinned_first, num_rows)
// (pinned_first <= hot_rows; slots in between are also in the cache). One device alone is the
// one-shard case: its cache holds slots [0, hot_rows), pinned memory the rest. With
// cold_by_position (GPU tiers over the disk) the pinned rows are instead one gather's staging
// of the rows it read from the disk: the row of position i of the batch, when its slot is not
// in the cache, is pinned_rows' row i.
struct DeviceGatherPlan {
  const std::byte* const* shard_rows = nullptr;  // device-readable table of `shards` pointers
  int shards = 1;
  uintptr_t shard_address_bits = 0;        // the OR of the shard pointers (vector width)
  const std::byte* pinned_rows = nullptr;  // pinned host tier (device-readable)
  int64_t pinned_first = 0;                // the slot of pinned_rows' first row
  bool cold_by_position = false;           // pinned_rows by batch position, not by slot
  // Per row: its placement slot (int32 or int64 entries); null: the slot is the id.
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
