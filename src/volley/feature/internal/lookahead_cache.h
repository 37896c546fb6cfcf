// volley/feature/internal/lookahead_cache.h — the kLookahead row cache in front of a disk tier
// (feature_store.h, "Disk tier"): Belady's rule over the batches a loader has announced.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <span>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "volley/core/buffer.h"

namespace volley::feature_internal {

class DiskReader;

// A fixed number of row slots. A cached row's key is (0, its first announced batch) when an
// announced batch uses it, else (1, its rank in the hot order): the largest key is evicted
// first, and a missed row is not admitted when its own key is larger than every cached one's.
// This is cache_hits_window_belady (cache_simulation.h) with bypass, batch by batch. Every
// member takes one mutex: thread-safe.
class LookaheadCache {
 public:
  // `rank[id]`: the row's position in the hot order (0: the hottest), num_rows entries.
  LookaheadCache(size_t row_bytes, size_t byte_budget, std::vector<int64_t> rank);
  int64_t capacity() const { return capacity_; }
  // Reads the `capacity()` hottest rows (`hottest`, in order) into the cache.
  void prefill(const DiskReader& reader, std::span<const int64_t> hottest);
  // Copies row `id` into `into` when cached; false otherwise.
  bool read(int64_t id, std::byte* into);
  // Offers rows ids[i] (bytes at rows[i]) read from the disk; admits those worth keeping.
  void insert(std::span<const int64_t> ids, std::span<const std::byte* const> rows);
  // Batch `batch` will gather `ids` (a batch announced twice: the second call is ignored).
  void announce(int64_t batch, std::span<const int64_t> ids);
  // Batch `batch` is being gathered: its uses leave the window (unknown batch: nothing).
  void begin(int64_t batch);

 private:
  using Key = std::tuple<int, int64_t, int64_t>;
  Key key_of(int64_t id) const;
  void rekey(int64_t id);

  size_t row_bytes_;
  int64_t capacity_;
  std::vector<int64_t> rank_;
  Buffer rows_;
  std::mutex mutex_;
  std::unordered_map<int64_t, int32_t> slot_of_;              // cached id → slot
  std::unordered_map<int64_t, Key> key_;                      // cached id → its key in order_
  std::set<Key> order_;                                       // cached rows' keys
  std::vector<int32_t> free_;                                 // unused slots
  std::unordered_map<int64_t, std::multiset<int64_t>> uses_;  // id → announced batches
  std::map<int64_t, std::vector<int64_t>> announced_;         // batch → its ids, until begin()
};

}  // namespace volley::feature_internal
