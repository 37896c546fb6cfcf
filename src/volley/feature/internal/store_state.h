// volley/feature/internal/store_state.h — what a FeatureStore holds (feature_store.cc: host
// tiers and the CPU gather; gpu_tiers.cc: GPU tiers and the CUDA gather).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "volley/feature/cpu/gather_kernel.h"
#include "volley/feature/feature_store.h"
#include "volley/feature/internal/cuda_gather_kernel.h"

namespace volley {
namespace feature_internal {
struct DiskTier;
}

struct FeatureStore::State {
  std::vector<Tier> tiers;
  int64_t num_rows = 0;
  int64_t width = 1;
  int64_t ndim = 2;
  DType dtype = DType::kFloat32;
  size_t row_bytes = 0;
  Buffer lookup;  // host tiers: empty for identity; else uint32 or uint64 packed entries
  bool lookup_is_32bit = false;
  std::string shared_name;
  feature_internal::RowMap map;  // bases of tiers and the lookup, for the CPU kernel
  // The file a tier maps (its reads are guarded: a truncated file is an IoError, not SIGBUS),
  // or empty when no tier is a mapped file.
  std::string mapped_file;
  // The disk tier (internal/disk_tier.h): the last tier is read from its file, not its map.
  std::shared_ptr<const feature_internal::DiskTier> disk;

  // GPU tiers (device >= 0): tiers = {the cache shard of each device, in `views` order (kCuda),
  // pinned rows (kPinnedHost)}. Rows are ranked by placement slot (hot order, then id order);
  // each peer-access clique caches slots [0, its hot_rows) dealt round-robin over its members'
  // shards, and the pinned tier holds slots [pinned_first, num_rows). One device: one clique of
  // one shard. Over the disk (`disk` set): the last tier is the mapped matrix itself (every row,
  // in id order), and a gather reads the rows its device's clique does not cache through `disk`.
  struct DeviceView {
    int device = 0;
    int clique = 0;        // index into `cliques`
    int64_t hot_rows = 0;  // slots its clique caches
    Buffer shard_table;    // on `device`: the clique's shard pointers, in member order
    uintptr_t shard_address_bits = 0;
    Buffer lookup;  // on `device`: the placement slot of every row; empty in id order
  };
  int device = -1;                        // the first device of `views`
  std::vector<DeviceView> views;          // one per device, in the order the caller gave
  std::vector<std::vector<int>> cliques;  // view indices, members in shard order
  int64_t pinned_first = 0;
  bool device_lookup_is_32bit = true;
  std::vector<int64_t> host_lookup;  // the same slots on the host (locate()); empty in id order

  bool on_cuda() const { return device >= 0; }
  // The view of `device`, or null when the store has no shard there.
  const DeviceView* view_of(int cuda_device) const;
  // What the kernel on `cuda_device` (a device of `views`) reads.
  feature_internal::DeviceGatherPlan plan(int cuda_device) const;
};

namespace feature_internal {

// The order rows are placed in: `hot_order`'s ids, then every unlisted row in id order; empty
// when there is no hot order (id order). ValueError / IndexError for a malformed hot order.
std::vector<int64_t> placement_order(const std::optional<Array>& hot_order, int64_t num_rows);

// Whether `options` asks for GPU tiers (a kCuda or kPinnedHost tier).
bool wants_gpu_tiers(const FeatureStoreOptions& options);
// Fills `state` (shape fields set) with the GPU tiers of `matrix` (gpu_tiers.cc).
void build_gpu_tiers(const Array& matrix, const FeatureStoreOptions& options,
                     FeatureStore::State& state);
// The GPU gather (gpu_tiers.cc); arguments as FeatureStore::gather(ids, out, options).
void gather_on_gpu(const FeatureStore::State& state, const Array& ids, const Array& out,
                   const GatherOptions& options);
// Tier and slot of row `id` (in range) as a gather on `device` reads it (-1: the first device);
// ValueError for a device that holds no shard of the store.
RowLocation locate_on_gpu(const FeatureStore::State& state, int64_t id, int device);

// GPU tiers over the disk (gpu_disk_tier.cc). Whether the rows no clique caches stay in the file
// of `matrix`, read through a disk tier, instead of a pinned copy: options.source_reads as for a
// host store, and only when no pinned_host tier is listed. ValueError for source_reads kDisk
// with a pinned_host tier or over a matrix that is not a mapped file, and for cache_policy
// kStatic when the disk is chosen.
bool wants_gpu_disk(const Array& matrix, const FeatureStoreOptions& options);
// Rows `ids` read from the disk tier's file into `destination`, one after another.
void read_disk_rows(const FeatureStore::State& state, std::span<const int64_t> ids,
                    std::byte* destination);
// For a gather on `device` (a device of the store): the rows of `host_ids` that its clique does
// not cache, read through the disk tier (row cache, then the disk) into a new pinned buffer at
// their batch positions, and `plan` pointed at it (cold_by_position). Empty (plan unchanged)
// when the clique caches every row; out-of-range ids are skipped (the kernel zero-fills them).
// IoError from the disk before anything is written.
Buffer stage_disk_rows(const FeatureStore::State& state, int device,
                       std::span<const int64_t> host_ids, DeviceGatherPlan& plan);

// Tier and slot of row `id` of a host store (id in range).
inline RowLocation locate_host(const FeatureStore::State& state, int64_t id) {
  if (state.lookup.empty()) return {0, id};
  if (state.lookup_is_32bit) {
    const uint32_t entry = reinterpret_cast<const uint32_t*>(state.lookup.data())[id];
    return {static_cast<int>(entry >> kTierShift32),
            static_cast<int64_t>(entry & ((1U << kTierShift32) - 1))};
  }
  const uint64_t entry = reinterpret_cast<const uint64_t*>(state.lookup.data())[id];
  return {static_cast<int>(entry >> kTierShift64),
          static_cast<int64_t>(entry & ((uint64_t{1} << kTierShift64) - 1))};
}

}  // namespace feature_internal
}  // namespace volley
