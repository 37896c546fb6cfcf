#include "volley/feature/internal/disk_tier.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <numeric>

#include "volley/core/error.h"
#include "volley/feature/cpu/gather_kernel.h"
#include "volley/feature/internal/slot_copy.h"
#include "volley/feature/internal/store_state.h"

namespace volley::feature_internal {

SieveCache::SieveCache(int64_t num_rows, size_t row_bytes, size_t byte_budget)
    : capacity_(row_bytes == 0 ? 0 : static_cast<int64_t>(byte_budget / row_bytes)),
      row_bytes_(row_bytes) {
  capacity_ = std::min<int64_t>({capacity_, num_rows, int64_t{0x7fffffff}});
  rows_ = Buffer::allocate(static_cast<size_t>(capacity_) * row_bytes_);
  slot_of_ = std::make_unique<std::atomic<int32_t>[]>(static_cast<size_t>(num_rows));
  for (int64_t id = 0; id < num_rows; ++id) slot_of_[id].store(-1, std::memory_order_relaxed);
  const auto slots = static_cast<size_t>(capacity_);
  id_of_ = std::make_unique<std::atomic<int64_t>[]>(slots);
  version_ = std::make_unique<std::atomic<uint32_t>[]>(slots);
  visited_ = std::make_unique<std::atomic<uint8_t>[]>(slots);
  for (size_t s = 0; s < slots; ++s) {
    id_of_[s].store(-1, std::memory_order_relaxed);
    version_[s].store(0, std::memory_order_relaxed);
    visited_[s].store(0, std::memory_order_relaxed);
  }
  prev_.assign(slots, -1);
  next_.assign(slots, -1);
}

bool SieveCache::read(int64_t id, std::byte* into) const {
  const int32_t slot = slot_of_[id].load(std::memory_order_acquire);
  if (slot < 0) return false;
  const uint32_t before = version_[slot].load(std::memory_order_acquire);
  if ((before & 1U) != 0 || id_of_[slot].load(std::memory_order_relaxed) != id) return false;
  slot_copy(into, rows_.data() + static_cast<size_t>(slot) * row_bytes_, row_bytes_);
  std::atomic_thread_fence(std::memory_order_acquire);
  if (version_[slot].load(std::memory_order_relaxed) != before ||
      id_of_[slot].load(std::memory_order_relaxed) != id) {
    return false;
  }
  visited_[slot].store(1, std::memory_order_relaxed);
  return true;
}

void SieveCache::unlink(int32_t slot) {
  const int32_t older = prev_[slot];
  const int32_t newer = next_[slot];
  if (older >= 0) next_[older] = newer;
  if (newer >= 0) prev_[newer] = older;
  if (head_ == slot) head_ = older;
  if (tail_ == slot) tail_ = newer;
  prev_[slot] = next_[slot] = -1;
}

void SieveCache::push_head(int32_t slot) {
  prev_[slot] = head_;
  next_[slot] = -1;
  if (head_ >= 0) next_[head_] = slot;
  head_ = slot;
  if (tail_ < 0) tail_ = slot;
}

int32_t SieveCache::evict() {
  int32_t hand = hand_ >= 0 ? hand_ : tail_;
  while (visited_[hand].load(std::memory_order_relaxed) != 0) {
    visited_[hand].store(0, std::memory_order_relaxed);
    hand = next_[hand] >= 0 ? next_[hand] : tail_;
  }
  hand_ = next_[hand];  // -1: start from the tail next time
  unlink(hand);
  const int64_t old_id = id_of_[hand].load(std::memory_order_relaxed);
  if (old_id >= 0) slot_of_[old_id].store(-1, std::memory_order_release);
  return hand;
}

void SieveCache::insert(std::span<const int64_t> ids, std::span<const std::byte* const> rows) {
  if (capacity_ == 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t i = 0; i < ids.size(); ++i) {
    const int64_t id = ids[i];
    if (slot_of_[id].load(std::memory_order_relaxed) >= 0) continue;
    const int32_t slot = used_ < capacity_ ? static_cast<int32_t>(used_++) : evict();
    const uint32_t version = version_[slot].load(std::memory_order_relaxed);
    version_[slot].store(version + 1, std::memory_order_relaxed);  // odd: being rewritten
    std::atomic_thread_fence(std::memory_order_release);
    id_of_[slot].store(id, std::memory_order_relaxed);
    slot_copy(rows_.data() + static_cast<size_t>(slot) * row_bytes_, rows[i], row_bytes_);
    version_[slot].store(version + 2, std::memory_order_release);
    visited_[slot].store(0, std::memory_order_relaxed);
    push_head(slot);
    slot_of_[id].store(slot, std::memory_order_release);
  }
}

namespace {

size_t physical_ram_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_bytes = sysconf(_SC_PAGESIZE);
  return pages > 0 && page_bytes > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page_bytes)
                                     : 0;
}

}  // namespace

bool wants_disk_tier(const Array& matrix, const FeatureStoreOptions& options) {
  const bool mapped = matrix.buffer().location() == Location::kMappedFile &&
                      !matrix.buffer().file_path().empty() && matrix.numel() > 0;
  switch (options.source_reads) {
    case SourceReads::kMapped:
      return false;
    case SourceReads::kDisk:
      VOLLEY_REQUIRE(mapped, ValueError,
                     "the disk tier reads a mapped .npy file; this matrix lives in {} memory "
                     "(open it with FeatureStore::from_npy)",
                     location_name(matrix.buffer().location()));
      return true;
    case SourceReads::kAuto:
      break;
  }
  return mapped && static_cast<double>(matrix.nbytes()) >
                       kDiskTierRamShare * static_cast<double>(physical_ram_bytes());
}

size_t cache_budget(const FeatureStoreOptions& options) {
  if (options.cache_bytes != Buffer::npos) return options.cache_bytes;
  return static_cast<size_t>(kDefaultCacheRamShare * static_cast<double>(physical_ram_bytes()));
}

std::shared_ptr<DiskTier> open_disk_tier(const Array& matrix, const FeatureStoreOptions& options,
                                         size_t cache_bytes) {
  auto tier = std::make_shared<DiskTier>();
  const Buffer& buffer = matrix.buffer();
  const int64_t rows = matrix.dim(0);
  const size_t row_bytes = rows == 0 ? 0 : matrix.nbytes() / static_cast<size_t>(rows);
  tier->reader = std::make_unique<DiskReader>(buffer.file_path(), buffer.file_offset(), row_bytes,
                                              rows, options.allow_io_uring);
  if (options.cache_policy == CachePolicy::kDynamic && cache_bytes >= row_bytes) {
    tier->cache = std::make_unique<SieveCache>(rows, row_bytes, cache_bytes);
  }
  if (options.cache_policy == CachePolicy::kLookahead && cache_bytes >= row_bytes) {
    std::vector<int64_t> order = placement_order(options.hot_order, rows);
    if (order.empty()) {  // no hot order: id order
      order.resize(static_cast<size_t>(rows));
      std::iota(order.begin(), order.end(), int64_t{0});
    }
    std::vector<int64_t> rank(static_cast<size_t>(rows));
    for (size_t r = 0; r < order.size(); ++r)
      rank[static_cast<size_t>(order[r])] = static_cast<int64_t>(r);
    tier->lookahead = std::make_unique<LookaheadCache>(row_bytes, cache_bytes, std::move(rank));
    const auto take = std::min(order.size(), static_cast<size_t>(tier->lookahead->capacity()));
    tier->lookahead->prefill(*tier->reader, std::span(order).first(take));
    if (options.read_ahead) {
      tier->read_ahead = std::make_unique<ReadAhead>(*tier->reader, *tier->lookahead, row_bytes);
    }
  }
  return tier;
}

void read_source_rows(const DiskTier& disk, std::span<const int64_t> ids,
                      std::span<std::byte* const> destinations, int64_t faster_hits) {
  std::vector<int64_t> miss_ids;
  std::vector<std::byte*> miss_rows;
  int64_t hits = faster_hits;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (disk.cache && disk.cache->read(ids[i], destinations[i])) {
      ++hits;
      continue;
    }
    miss_ids.push_back(ids[i]);
    miss_rows.push_back(destinations[i]);
  }
  if (disk.lookahead) hits += disk.lookahead->take_cached(miss_ids, miss_rows);  // one lock
  disk.reader->read(miss_ids, miss_rows);
  if (disk.cache || disk.lookahead) {
    std::vector<const std::byte*> filled(miss_rows.begin(), miss_rows.end());
    if (disk.cache) disk.cache->insert(miss_ids, filled);
    if (disk.lookahead) disk.lookahead->insert(miss_ids, filled);
  }
  disk.hits.fetch_add(hits, std::memory_order_relaxed);
  disk.misses.fetch_add(static_cast<int64_t>(miss_ids.size()), std::memory_order_relaxed);
}

void gather_with_disk(const FeatureStore::State& state, std::span<const int64_t> ids,
                      DType out_dtype, std::byte* out) {
  const size_t out_row_bytes = static_cast<size_t>(state.width) * dtype_size(out_dtype);
  const bool convert = out_dtype != state.dtype;
  const auto source = static_cast<int>(state.tiers.size() - 1);
  // Rows of the disk tier are staged here when they need converting.
  Buffer staging = convert ? Buffer::allocate(ids.size() * state.row_bytes) : Buffer();
  std::vector<int64_t> source_ids;
  std::vector<std::byte*> source_rows;
  std::vector<size_t> converted;  // positions staged for conversion
  int64_t hits = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    const RowLocation where = locate_host(state, ids[i]);
    if (where.tier != source) {
      gather_kernel(state.map, ids.subspan(i, 1), out_dtype, out + i * out_row_bytes,
                    StoreMode::kCached, 0);
      ++hits;
      continue;
    }
    if (convert) converted.push_back(i);
    source_ids.push_back(ids[i]);
    source_rows.push_back(convert ? staging.data() + i * state.row_bytes : out + i * out_row_bytes);
  }
  read_source_rows(*state.disk, source_ids, source_rows, hits);
  if (convert) {
    RowMap staged = state.map;
    staged.bases[0] = staging.data();
    staged.lookup = nullptr;
    for (const size_t i : converted) {
      const auto position = static_cast<int64_t>(i);
      gather_kernel(staged, std::span<const int64_t>(&position, 1), out_dtype,
                    out + i * out_row_bytes, StoreMode::kCached, 0);
    }
  }
}

}  // namespace volley::feature_internal
