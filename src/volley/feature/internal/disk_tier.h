// volley/feature/internal/disk_tier.h — the disk tier of a FeatureStore and the SIEVE row cache
// in front of it (feature_store.h, "Disk tier"; internal to src/volley/feature).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "volley/core/buffer.h"
#include "volley/feature/feature_store.h"
#include "volley/feature/internal/disk_reader.h"
#include "volley/feature/internal/lookahead_cache.h"
#include "volley/feature/internal/read_ahead.h"

namespace volley::feature_internal {

// A fixed number of row slots with SIEVE eviction (Zhang et al., NSDI '24): new rows enter at
// the head of a queue, a hit only sets the slot's visited bit, and the hand walks from the tail
// towards the head, clearing visited bits and evicting the first unvisited row. Lookups take no
// lock: a slot's version is odd while it is rewritten, and a copy is kept only when the version
// and the slot's id are the same before and after it. Inserts take one mutex.
class SieveCache {
 public:
  SieveCache(int64_t num_rows, size_t row_bytes, size_t byte_budget);
  int64_t capacity() const { return capacity_; }
  // Copies row `id` into `into` when cached (marks it visited); false otherwise.
  bool read(int64_t id, std::byte* into) const;
  // Caches rows ids[i] (bytes at rows[i]); rows already cached are skipped.
  void insert(std::span<const int64_t> ids, std::span<const std::byte* const> rows);

 private:
  void unlink(int32_t slot);
  void push_head(int32_t slot);
  int32_t evict();

  int64_t capacity_;
  size_t row_bytes_;
  Buffer rows_;
  std::unique_ptr<std::atomic<int32_t>[]> slot_of_;   // per row id: its slot or -1
  std::unique_ptr<std::atomic<int64_t>[]> id_of_;     // per slot: its row id or -1
  std::unique_ptr<std::atomic<uint32_t>[]> version_;  // per slot: odd while being rewritten
  mutable std::unique_ptr<std::atomic<uint8_t>[]> visited_;
  std::vector<int32_t> prev_;  // towards the tail (older); under mutex_
  std::vector<int32_t> next_;  // towards the head (newer)
  int32_t head_ = -1;
  int32_t tail_ = -1;
  int32_t hand_ = -1;
  int64_t used_ = 0;
  std::mutex mutex_;
};

// What a store's disk tier holds: the reader of the source tier's file, the dynamic or the
// lookahead cache (either or both may be null), the lookahead cache's read-ahead thread (null
// unless asked for; declared after what it reads, so it stops first) and counters.
struct DiskTier {
  std::unique_ptr<DiskReader> reader;
  std::unique_ptr<SieveCache> cache;
  std::unique_ptr<LookaheadCache> lookahead;
  std::unique_ptr<ReadAhead> read_ahead;
  mutable std::atomic<int64_t> hits{0};
  mutable std::atomic<int64_t> misses{0};
};

// Whether `matrix` with `options` gets a disk tier (ValueError for kDisk over a matrix that is
// not a mapped file).
bool wants_disk_tier(const Array& matrix, const FeatureStoreOptions& options);
// The disk tier over mapped `matrix`: the cache is a SieveCache of `cache_bytes` when the policy
// is kDynamic, a LookaheadCache pre-filled with the hottest rows when it is kLookahead (none for
// less than a row), with a ReadAhead when options.read_ahead.
std::shared_ptr<DiskTier> open_disk_tier(const Array& matrix, const FeatureStoreOptions& options,
                                         size_t cache_bytes);
// The row-cache budget `options` asks for (npos: the default share of RAM).
size_t cache_budget(const FeatureStoreOptions& options);
// Rows ids[i] of the source tier (in range) into destinations[i]: from the row cache where it
// holds them, the others read from the disk and offered to the cache. Counts the cache's hits
// plus `faster_hits` (rows the caller served from faster tiers) and the rows read.
void read_source_rows(const DiskTier& disk, std::span<const int64_t> ids,
                      std::span<std::byte* const> destinations, int64_t faster_hits);
// The CPU gather of a store with a disk tier (ids already checked).
void gather_with_disk(const FeatureStore::State& state, std::span<const int64_t> ids,
                      DType out_dtype, std::byte* out);

}  // namespace volley::feature_internal
