// volley/feature/internal/store_state.h — what a FeatureStore holds (feature_store.cc: host
// tiers and the CPU gather; gpu_tiers.cc: GPU tiers and the CUDA gather).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
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

  // GPU tiers (device >= 0): tiers = {device rows (kCuda), pinned rows (kPinnedHost)}.
  int device = -1;
  int64_t hot_rows = 0;  // rows in the device tier
  Buffer device_lookup;  // kCuda; empty without a hot order
  bool device_lookup_is_32bit = true;
  std::vector<int64_t> host_lookup;  // the same entries on the host (locate())

  bool on_cuda() const { return device >= 0; }
  feature_internal::DeviceGatherPlan plan() const;
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
RowLocation locate_on_gpu(const FeatureStore::State& state, int64_t id);

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
