// GPU tiers over the disk (feature_store.h, "GPU tiers over the disk"): the device cache as
// gpu_tiers.cc places it and, instead of a pinned copy of the rows no clique caches, the mapped
// file itself, read at each gather through the store's disk tier (disk_tier.cc: row cache, then
// io_uring / pread) into a pinned staging buffer that the one GPU gather kernel reads by batch
// position (DeviceGatherPlan::cold_by_position).
#include <algorithm>
#include <vector>

#include "volley/core/buffer.h"
#include "volley/core/error.h"
#include "volley/feature/internal/disk_tier.h"
#include "volley/feature/internal/store_state.h"

namespace volley::feature_internal {

bool wants_gpu_disk(const Array& matrix, const FeatureStoreOptions& options) {
  const bool pinned_listed =
      std::any_of(options.tiers.begin(), options.tiers.end(),
                  [](const TierSpec& spec) { return spec.location == Location::kPinnedHost; });
  if (pinned_listed) {
    VOLLEY_REQUIRE(options.source_reads != SourceReads::kDisk, ValueError,
                   "source_reads disk keeps the cold rows of GPU tiers on the disk; a "
                   "pinned_host tier copies them to pinned memory: list the cuda tier alone, "
                   "or leave source_reads automatic");
    return false;
  }
  if (!wants_disk_tier(matrix, options)) return false;  // ValueError: kDisk, not a mapped file
  VOLLEY_REQUIRE(options.cache_policy != CachePolicy::kStatic, ValueError,
                 "GPU tiers over the disk take cache_policy dynamic or lookahead for the host row "
                 "cache in front of the disk, not static (a host tier of the hottest rows: the "
                 "device cache holds those)");
  return true;
}

void read_disk_rows(const FeatureStore::State& state, std::span<const int64_t> ids,
                    std::byte* destination) {
  std::vector<std::byte*> destinations(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) destinations[i] = destination + i * state.row_bytes;
  state.disk->reader->read(ids, destinations);
}

Buffer stage_disk_rows(const FeatureStore::State& state, int device,
                       std::span<const int64_t> host_ids, DeviceGatherPlan& plan) {
  const FeatureStore::State::DeviceView& view = *state.view_of(device);
  std::vector<int64_t> cold_ids;
  std::vector<size_t> positions;
  int64_t cached = 0;
  for (size_t i = 0; i < host_ids.size(); ++i) {
    const int64_t id = host_ids[i];
    if (id < 0 || id >= state.num_rows) continue;  // zero-filled by the kernel
    const int64_t slot =
        state.host_lookup.empty() ? id : state.host_lookup[static_cast<size_t>(id)];
    if (slot < view.hot_rows) {
      ++cached;
      continue;
    }
    cold_ids.push_back(id);
    positions.push_back(i);
  }
  if (cold_ids.empty()) {
    state.disk->hits.fetch_add(cached, std::memory_order_relaxed);
    return {};
  }
  Buffer staging = Buffer::allocate_pinned(host_ids.size() * state.row_bytes);
  std::vector<std::byte*> destinations(positions.size());
  for (size_t k = 0; k < positions.size(); ++k)
    destinations[k] = staging.data() + positions[k] * state.row_bytes;
  read_source_rows(*state.disk, cold_ids, destinations, cached);
  plan.pinned_rows = staging.data();
  plan.cold_by_position = true;
  return staging;
}

}  // namespace volley::feature_internal
