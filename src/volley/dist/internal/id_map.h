// volley/dist/internal/id_map.h — global id → local id of one batch, sized to the batch.
//
// The distributed sampler's merge must not keep an array sized to the whole graph per worker
// thread (8 bytes × nodes × threads: 6 GB for a 100M-node graph and 8 workers — the "arrays
// sized to the whole graph on every machine" of GraphLearn-for-PyTorch). This open-addressing
// table (linear probing, power-of-two capacity kept at most half full, reset in O(1) by a
// generation stamp) holds only the batch's nodes, and stays in cache for typical batches.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace volley::dist::internal {

class IdMap {
 public:
  // Empties the map (O(1) but for a stamp wrap every 2^32 batches).
  void clear() {
    size_ = 0;
    if (++generation_ == 0) {
      std::fill(entries_.begin(), entries_.end(), Entry{});
      generation_ = 1;
    }
  }

  // Records id → local and returns -1, or returns the local id already recorded for id.
  int32_t insert(int64_t id, int32_t local) {
    if (2 * (size_ + 1) > entries_.size()) grow();
    for (size_t at = slot_of(id);; at = (at + 1) & mask_) {
      Entry& entry = entries_[at];
      if (entry.stamp != generation_) {
        entry = {id, local, generation_};
        ++size_;
        return -1;
      }
      if (entry.id == id) return entry.local;
    }
  }

  // Prefetches the slot `id` would use (a hint; no effect on results).
  void prefetch(int64_t id) const {
    if (!entries_.empty()) __builtin_prefetch(&entries_[slot_of(id)]);
  }

  size_t size() const { return size_; }

 private:
  struct Entry {
    int64_t id = 0;
    int32_t local = 0;
    uint32_t stamp = 0;
  };

  size_t slot_of(int64_t id) const {
    // Fibonacci hashing: ids of one partition are contiguous; the multiply spreads them.
    return static_cast<size_t>((static_cast<uint64_t>(id) * 0x9e3779b97f4a7c15ULL) >> shift_) &
           mask_;
  }

  void grow() {
    std::vector<Entry> old;
    old.swap(entries_);
    const size_t capacity = std::max<size_t>(1024, old.size() * 2);
    entries_.assign(capacity, Entry{});
    mask_ = capacity - 1;
    shift_ = 64 - __builtin_ctzll(capacity);
    const uint32_t live = generation_;
    generation_ = 1;
    size_ = 0;
    for (const Entry& entry : old) {
      if (entry.stamp == live) insert(entry.id, entry.local);
    }
  }

  std::vector<Entry> entries_;
  size_t mask_ = 0;
  int shift_ = 64;
  size_t size_ = 0;
  uint32_t generation_ = 1;
};

}  // namespace volley::dist::internal
