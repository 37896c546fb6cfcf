// volley/feature/cuda/gather_driver.h — the row gather of FeatureStore's GPU tiers (the own
// cache shard, peers' shards, pinned host memory or the pinned staging of rows read from the
// disk), written once for both executors
// (core/internal/executor.h): gather_kernel.cu runs it with the CUDA executor,
// gather_kernel_host.cc with the host executor (gpu-host tests).
//
// Item t of a launch copies part of one row: `lanes` items (a power of two <= 32, the fewest
// that cover the row with kPerLane vectors each) share row t / lanes; lane t % lanes moves
// vectors lane, lane + lanes, ... so a row is read and written in consecutive 16-byte (or
// narrower) pieces — coalesced from device memory, full PCIe transactions from pinned host
// memory. A lane loads its (up to) kPerLane vectors before it stores any, so each thread has
// that many reads in flight: random rows are latency-bound, and one read per thread leaves the
// memory system idle. On the CUDA executor consecutive threads are consecutive items, and its
// grid-stride loop keeps each thread on one lane. The id → (tier, slot) lookup happens in the
// body.
#pragma once

#include <vector_types.h>  // uint4, uint2 (plain structs; the host compiler reads them too)

#include <cstdint>
#include <type_traits>

#include "volley/core/host_device.h"
#include "volley/core/internal/atomics.h"
#include "volley/feature/internal/cuda_gather_kernel.h"

namespace volley::feature_internal {

// Entry type of the lookup: int32_t, int64_t, or void (no lookup: the slot of a row is its id).
// Slots route as DeviceGatherPlan says: the own shard, a peer's shard or the pinned tier (or
// the gather's staging of rows read from the disk).
template <typename Vector, typename Entry>
struct GatherBody {
  static constexpr const char* kName = "gather rows";
  static constexpr int kPerLane = 4;  // vectors a lane loads before it stores
  DeviceGatherPlan plan;
  const int64_t* ids;
  std::byte* out;
  int64_t vectors_per_row;
  int lane_shift;                 // lanes = 1 << lane_shift
  unsigned long long* first_bad;  // min position of an out-of-range id (atomic), or null

  VOLLEY_HOST_DEVICE void operator()(int64_t item) const {
    const int lanes = 1 << lane_shift;
    const int64_t row = item >> lane_shift;
    const int lane = static_cast<int>(item & (lanes - 1));
    const int64_t id = ids[row];
    auto* destination = reinterpret_cast<Vector*>(out + row * static_cast<int64_t>(plan.row_bytes));
    if (id < 0 || id >= plan.num_rows) {
      if (lane == 0 && first_bad != nullptr) {
        internal::atomic_min(first_bad, static_cast<unsigned long long>(row));
      }
      for (int64_t v = lane; v < vectors_per_row; v += lanes) destination[v] = Vector{};
      return;
    }
    const auto row_bytes = static_cast<int64_t>(plan.row_bytes);
    int64_t slot = id;
    if constexpr (!std::is_void_v<Entry>) {
      slot = static_cast<int64_t>(static_cast<const Entry*>(plan.lookup)[id]);
    }
    const std::byte* source;
    if (slot >= plan.hot_rows) {
      const int64_t cold = plan.cold_by_position ? row : slot - plan.pinned_first;
      source = plan.pinned_rows + cold * row_bytes;
    } else if (plan.shards == 1) {  // one device in the clique: no division
      source = plan.shard_rows[0] + slot * row_bytes;
    } else {
      source = plan.shard_rows[slot % plan.shards] + (slot / plan.shards) * row_bytes;
    }
    const auto* from = reinterpret_cast<const Vector*>(source);
    for (int64_t first = lane; first < vectors_per_row; first += lanes * kPerLane) {
      Vector part[kPerLane] = {};
      for (int k = 0; k < kPerLane; ++k) {
        const int64_t v = first + k * lanes;
        if (v < vectors_per_row) part[k] = from[v];
      }
      for (int k = 0; k < kPerLane; ++k) {
        const int64_t v = first + k * lanes;
        if (v < vectors_per_row) destination[v] = part[k];
      }
    }
  }
};

// The widest access (16, 8, 4, 2 or 1 bytes) that the row size and every base pointer allow.
inline size_t vector_bytes(const DeviceGatherPlan& plan, const void* out) {
  const uintptr_t bits = plan.row_bytes | reinterpret_cast<uintptr_t>(out) |
                         plan.shard_address_bits | reinterpret_cast<uintptr_t>(plan.pinned_rows);
  for (size_t width : {16, 8, 4, 2}) {
    if ((bits & (width - 1)) == 0) return width;
  }
  return 1;
}

template <typename Vector, class Executor>
void launch_with_vector(Executor& executor, const DeviceGatherPlan& plan, const int64_t* ids,
                        int64_t count, std::byte* out, unsigned long long* first_bad) {
  const auto vectors_per_row = static_cast<int64_t>(plan.row_bytes / sizeof(Vector));
  constexpr int64_t kPerLane = GatherBody<Vector, void>::kPerLane;
  int lane_shift = 0;
  while (lane_shift < 5 && (int64_t{1} << lane_shift) * kPerLane < vectors_per_row) ++lane_shift;
  const int64_t items = count << lane_shift;
  if (plan.lookup == nullptr) {
    executor.for_each(
        items, GatherBody<Vector, void>{plan, ids, out, vectors_per_row, lane_shift, first_bad});
  } else if (plan.lookup_is_32bit) {
    executor.for_each(
        items, GatherBody<Vector, int32_t>{plan, ids, out, vectors_per_row, lane_shift, first_bad});
  } else {
    executor.for_each(
        items, GatherBody<Vector, int64_t>{plan, ids, out, vectors_per_row, lane_shift, first_bad});
  }
}

// Queues out[i] = row(ids[i]) on the executor (rows of out-of-range ids zero-filled). With
// `first_bad` (a device word), sets it to ~0 first, and the lowest position of an
// out-of-range id lands there.
template <class Executor>
void gather_with(Executor& executor, const DeviceGatherPlan& plan, const int64_t* ids,
                 int64_t count, void* out, unsigned long long* first_bad) {
  if (first_bad != nullptr) executor.fill(first_bad, 0xff, sizeof(unsigned long long));
  auto* bytes = static_cast<std::byte*>(out);
  switch (vector_bytes(plan, out)) {
    case 16:
      return launch_with_vector<uint4>(executor, plan, ids, count, bytes, first_bad);
    case 8:
      return launch_with_vector<uint2>(executor, plan, ids, count, bytes, first_bad);
    case 4:
      return launch_with_vector<unsigned>(executor, plan, ids, count, bytes, first_bad);
    case 2:
      return launch_with_vector<unsigned short>(executor, plan, ids, count, bytes, first_bad);
    default:
      return launch_with_vector<unsigned char>(executor, plan, ids, count, bytes, first_bad);
  }
}

}  // namespace volley::feature_internal
