// volley/feature/internal/lookahead_cache.h — the kLookahead row cache in front of a disk tier
// (feature_store.h, "Disk tier"): Belady's rule over the batches a loader has announced.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <queue>
#include <span>
#include <vector>

#include "volley/core/buffer.h"

namespace volley::feature_internal {

class DiskReader;

// A fixed number of row slots. A cached row's key is (its first announced batch) when an
// announced batch uses it, else (kUnannounced + its rank in the hot order), then its id: the
// largest key is evicted first, and a missed row is not admitted when its own key is larger than
// every cached one's. This is cache_hits_window_belady (cache_simulation.h) with bypass, batch by
// batch. Bookkeeping is one 32-byte record per row (its slot, announced uses, rank and live key:
// one cache miss where separate arrays cost four or five); keys live in a max-heap with lazy
// deletion (a raised key is pushed; a lowered one only when its old entry reaches the top); each
// row's announced uses in a list sorted by batch. take_cached takes no lock: a slot's version is
// odd while its row is replaced, and a copy is kept only when the version and the slot's row are
// the same before and after it (as SieveCache, disk_tier.h). Every other member takes one mutex.
// Thread-safe.
class LookaheadCache {
 public:
  // `rank[id]`: the row's position in the hot order (0: the hottest), num_rows entries.
  LookaheadCache(size_t row_bytes, size_t byte_budget, std::vector<int64_t> rank);
  int64_t capacity() const { return capacity_; }
  // Reads the `capacity()` hottest rows (`hottest`, in order) into the cache.
  void prefill(const DiskReader& reader, std::span<const int64_t> hottest);
  // Copies every cached row ids[i] into into[i] and removes it from both lists (order kept);
  // returns how many. Lock-free.
  int64_t take_cached(std::vector<int64_t>& ids, std::vector<std::byte*>& into);
  // Offers rows ids[i] (bytes at rows[i]) read from the disk; admits those worth keeping.
  void insert(std::span<const int64_t> ids, std::span<const std::byte* const> rows);
  // Batch `batch` (in [0, 2^62)) will gather `ids` (a batch announced twice: the second call is
  // ignored).
  void announce(int64_t batch, std::span<const int64_t> ids);
  // Batch `batch` is being gathered: its uses leave the window (unknown batch: nothing).
  void begin(int64_t batch);

  // Read-ahead (read_ahead.h). reserve() scans ids[from, ...) and takes a slot for each row that
  // is neither cached nor reserved and that the policy would admit now (a free slot, or evicting
  // a row with a larger key), until `max_rows` are taken; `next` is where the scan stopped. A
  // reserved slot is nobody's (not cached, never evicted) until commit() caches its row (its
  // bytes written at into[i]; a row a gather cached meanwhile keeps that copy and the slot is
  // freed) or release() frees it (a failed read).
  struct Reservation {
    std::vector<int64_t> ids;
    std::vector<int32_t> slots;
    std::vector<std::byte*> into;
    size_t next = 0;
  };
  void reserve(std::span<const int64_t> ids, size_t from, size_t max_rows, Reservation& out);
  void commit(const Reservation& reservation);
  void release(const Reservation& reservation);

 private:
  static constexpr int32_t kReserved = -2;                   // Row::slot: being read ahead
  static constexpr int64_t kUnannounced = int64_t{1} << 62;  // keys of rows no batch announced
  struct Row {
    int32_t slot = -1;       // its slot, -1 or kReserved
    int32_t first_use = -1;  // its earliest Use or -1
    int32_t last_use = -1;   // its latest Use or -1
    int32_t unused = 0;
    int64_t rank = 0;  // in the hot order
    int64_t key = 0;   // while cached: the key its heap entries are checked against
  };
  struct Entry {  // a heap entry; stale when the row's slot or key changed since
    int64_t key;
    int64_t id;
    int32_t slot;
    bool operator<(const Entry& other) const {
      return key != other.key ? key < other.key : id < other.id;
    }
  };
  struct Use {
    int64_t batch;
    int64_t id;
    int32_t prev;  // towards earlier batches of the same row, or -1
    int32_t next;
  };
  int64_t key_of(const Row& row) const;
  void rekey(int64_t id);
  void place(int64_t id, int32_t slot);
  // The largest (key, id) cached, false when no cached row can be evicted (all slots reserved).
  bool victim(Entry& worst);
  // Evicts the row of the largest key and returns its slot (victim() returned true).
  int32_t evict();
  // Whether a row of key `key` would be admitted now: a free slot, or a cached row to evict.
  bool admits(int64_t id, int64_t key);
  int32_t take_slot();
  // Seqlock steps of a slot (under mutex_): unpublish makes its version odd (its row is leaving);
  // publish, once the slot holds row `id`'s bytes, makes it even again and maps id to it.
  void unpublish(int32_t slot);
  void publish(int64_t id, int32_t slot);
  void unlink_use(int32_t use);
  void compact_heap();

  size_t row_bytes_;
  int64_t capacity_;
  Buffer rows_;
  std::mutex mutex_;
  std::vector<Row> row_;  // per row id
  // What take_cached reads without the lock: per row its published slot or -1; per slot its row
  // id or -1, and its version (odd while its row is replaced).
  std::unique_ptr<std::atomic<int32_t>[]> published_slot_;
  std::unique_ptr<std::atomic<int64_t>[]> slot_id_;
  std::unique_ptr<std::atomic<uint32_t>[]> version_;
  std::vector<int32_t> free_;  // unused slots
  std::priority_queue<Entry> heap_;
  std::vector<Use> uses_;  // pool
  std::vector<int32_t> free_uses_;
  std::map<int64_t, std::vector<int32_t>> announced_;  // batch → its Uses, until begin()
};

}  // namespace volley::feature_internal
