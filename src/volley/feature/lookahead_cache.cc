#include "volley/feature/internal/lookahead_cache.h"

#include <algorithm>
#include <cstring>

#include "volley/feature/internal/disk_reader.h"
#include "volley/feature/internal/slot_copy.h"

namespace volley::feature_internal {

LookaheadCache::LookaheadCache(size_t row_bytes, size_t byte_budget, std::vector<int64_t> rank)
    : row_bytes_(row_bytes),
      capacity_(row_bytes == 0 ? 0 : static_cast<int64_t>(byte_budget / row_bytes)) {
  const auto rows = static_cast<int64_t>(rank.size());
  capacity_ = std::min<int64_t>({capacity_, rows, 0x7fffffff});
  rows_ = Buffer::allocate(static_cast<size_t>(capacity_) * row_bytes_);
  row_.resize(static_cast<size_t>(rows));
  published_slot_ = std::make_unique<std::atomic<int32_t>[]>(static_cast<size_t>(rows));
  for (size_t id = 0; id < rank.size(); ++id) {
    row_[id].rank = rank[id];
    published_slot_[id].store(-1, std::memory_order_relaxed);
  }
  slot_id_ = std::make_unique<std::atomic<int64_t>[]>(static_cast<size_t>(capacity_));
  version_ = std::make_unique<std::atomic<uint32_t>[]>(static_cast<size_t>(capacity_));
  for (int64_t slot = 0; slot < capacity_; ++slot) {
    slot_id_[slot].store(-1, std::memory_order_relaxed);
    version_[slot].store(0, std::memory_order_relaxed);
  }
  free_.reserve(static_cast<size_t>(capacity_));
  for (int64_t slot = capacity_ - 1; slot >= 0; --slot) free_.push_back(static_cast<int32_t>(slot));
}

void LookaheadCache::prefill(const DiskReader& reader, std::span<const int64_t> hottest) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto count = std::min<size_t>(hottest.size(), free_.size());
  std::vector<int64_t> ids;
  std::vector<std::byte*> into;
  for (size_t i = 0; i < count; ++i) {
    const int64_t id = hottest[i];
    if (row_[static_cast<size_t>(id)].slot >= 0) continue;
    const int32_t slot = free_.back();
    free_.pop_back();
    place(id, slot);
    ids.push_back(id);
    into.push_back(rows_.data() + static_cast<size_t>(slot) * row_bytes_);
  }
  reader.read(ids, into);
  for (const int64_t id : ids) publish(id, row_[static_cast<size_t>(id)].slot);
}

void LookaheadCache::unpublish(int32_t slot) {
  const uint32_t version = version_[slot].load(std::memory_order_relaxed);
  if ((version & 1U) == 0) version_[slot].store(version + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  const int64_t id = slot_id_[slot].load(std::memory_order_relaxed);
  if (id >= 0) published_slot_[id].store(-1, std::memory_order_relaxed);
  slot_id_[slot].store(-1, std::memory_order_relaxed);
}

void LookaheadCache::publish(int64_t id, int32_t slot) {
  slot_id_[slot].store(id, std::memory_order_relaxed);
  const uint32_t version = version_[slot].load(std::memory_order_relaxed);
  version_[slot].store((version | 1U) + 1, std::memory_order_release);  // even: readable
  published_slot_[id].store(slot, std::memory_order_release);
}

int64_t LookaheadCache::key_of(const Row& row) const {
  if (row.first_use >= 0) return uses_[static_cast<size_t>(row.first_use)].batch;
  return kUnannounced + row.rank;
}

void LookaheadCache::place(int64_t id, int32_t slot) {
  Row& row = row_[static_cast<size_t>(id)];
  row.slot = slot;
  row.key = key_of(row);
  heap_.push({row.key, id, slot});
}

void LookaheadCache::compact_heap() {
  std::vector<Entry> entries;
  entries.reserve(static_cast<size_t>(capacity_));
  for (int32_t slot = 0; slot < static_cast<int32_t>(capacity_); ++slot) {
    const int64_t id = slot_id_[slot].load(std::memory_order_relaxed);  // published slots
    if (id >= 0) entries.push_back({row_[static_cast<size_t>(id)].key, id, slot});
  }
  heap_ = std::priority_queue<Entry>(std::less<Entry>(), std::move(entries));
}

void LookaheadCache::rekey(int64_t id) {
  Row& row = row_[static_cast<size_t>(id)];
  if (row.slot < 0) return;
  const int64_t key = key_of(row);
  if (key == row.key) return;
  const bool lowered = key < row.key;
  row.key = key;
  // A lowered key (an announced use) keeps its old, larger heap entry; victim() pushes the live
  // key when that entry reaches the top. Only raised keys are pushed now: half the pushes.
  if (lowered) return;
  heap_.push({key, id, row.slot});
  if (heap_.size() > 4 * static_cast<size_t>(capacity_) + 1024) compact_heap();
}

bool LookaheadCache::victim(Entry& worst) {
  // Every cached row has an entry >= its live key, so an entry equal to its row's live key and
  // slot on top is the largest live key. A stale entry is dropped, and the live key pushed when
  // lower (a lowered key, see rekey; at worst a duplicate entry).
  while (!heap_.empty()) {
    const Entry top = heap_.top();
    const Row& row = row_[static_cast<size_t>(top.id)];
    if (row.slot == top.slot && row.key == top.key) {
      worst = top;
      return true;
    }
    heap_.pop();
    if (row.slot == top.slot && row.key < top.key) heap_.push({row.key, top.id, top.slot});
  }
  return false;
}

int32_t LookaheadCache::evict() {
  const Entry top = heap_.top();
  heap_.pop();
  row_[static_cast<size_t>(top.id)].slot = -1;
  unpublish(top.slot);
  return top.slot;
}

bool LookaheadCache::admits(int64_t id, int64_t key) {
  if (!free_.empty()) return true;
  Entry worst{};
  return victim(worst) && !(worst < Entry{key, id, 0});  // else it would be the first to go
}

int32_t LookaheadCache::take_slot() {
  if (free_.empty()) return evict();
  const int32_t slot = free_.back();
  free_.pop_back();
  return slot;
}

int64_t LookaheadCache::take_cached(std::vector<int64_t>& ids, std::vector<std::byte*>& into) {
  size_t kept = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    const int64_t id = ids[i];
    const int32_t slot = published_slot_[id].load(std::memory_order_acquire);
    if (slot >= 0) {
      const uint32_t before = version_[slot].load(std::memory_order_acquire);
      if ((before & 1U) == 0 && slot_id_[slot].load(std::memory_order_relaxed) == id) {
        slot_copy(into[i], rows_.data() + static_cast<size_t>(slot) * row_bytes_, row_bytes_);
        std::atomic_thread_fence(std::memory_order_acquire);
        if (version_[slot].load(std::memory_order_relaxed) == before) continue;  // a hit
      }
    }
    ids[kept] = ids[i];
    into[kept] = into[i];
    ++kept;
  }
  const auto taken = static_cast<int64_t>(ids.size() - kept);
  ids.resize(kept);
  into.resize(kept);
  return taken;
}

void LookaheadCache::insert(std::span<const int64_t> ids, std::span<const std::byte* const> rows) {
  if (capacity_ == 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t i = 0; i < ids.size(); ++i) {
    const int64_t id = ids[i];
    const Row& row = row_[static_cast<size_t>(id)];
    // (A reserved row is cached twice meanwhile; commit() frees the second slot.)
    if (row.slot >= 0 || !admits(id, key_of(row))) continue;
    const int32_t slot = take_slot();
    slot_copy(rows_.data() + static_cast<size_t>(slot) * row_bytes_, rows[i], row_bytes_);
    place(id, slot);
    publish(id, slot);
  }
}

void LookaheadCache::announce(int64_t batch, std::span<const int64_t> ids) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto [entry, fresh] = announced_.try_emplace(batch);
  if (!fresh) return;
  entry->second.reserve(ids.size());
  for (const int64_t id : ids) {
    int32_t use = -1;
    if (free_uses_.empty()) {
      use = static_cast<int32_t>(uses_.size());
      uses_.push_back({});
    } else {
      use = free_uses_.back();
      free_uses_.pop_back();
    }
    Row& row = row_[static_cast<size_t>(id)];
    // Linked in batch order: after the latest earlier use (usually the last one).
    int32_t after = row.last_use;
    while (after >= 0 && uses_[static_cast<size_t>(after)].batch > batch)
      after = uses_[static_cast<size_t>(after)].prev;
    const int32_t before = after >= 0 ? uses_[static_cast<size_t>(after)].next : row.first_use;
    uses_[static_cast<size_t>(use)] = {batch, id, after, before};
    (after >= 0 ? uses_[static_cast<size_t>(after)].next : row.first_use) = use;
    (before >= 0 ? uses_[static_cast<size_t>(before)].prev : row.last_use) = use;
    entry->second.push_back(use);
    rekey(id);
  }
}

void LookaheadCache::unlink_use(int32_t use) {
  const Use& u = uses_[static_cast<size_t>(use)];
  Row& row = row_[static_cast<size_t>(u.id)];
  (u.prev >= 0 ? uses_[static_cast<size_t>(u.prev)].next : row.first_use) = u.next;
  (u.next >= 0 ? uses_[static_cast<size_t>(u.next)].prev : row.last_use) = u.prev;
  free_uses_.push_back(use);
}

void LookaheadCache::begin(int64_t batch) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto entry = announced_.find(batch);
  if (entry == announced_.end()) return;
  for (const int32_t use : entry->second) {
    const int64_t id = uses_[static_cast<size_t>(use)].id;
    unlink_use(use);
    rekey(id);
  }
  announced_.erase(entry);
}

void LookaheadCache::reserve(std::span<const int64_t> ids, size_t from, size_t max_rows,
                             Reservation& out) {
  out.ids.clear();
  out.slots.clear();
  out.into.clear();
  std::lock_guard<std::mutex> lock(mutex_);
  size_t i = from;
  for (; i < ids.size() && out.ids.size() < max_rows; ++i) {
    const int64_t id = ids[i];
    Row& row = row_[static_cast<size_t>(id)];
    if (row.slot != -1 || !admits(id, key_of(row))) continue;  // cached, reserved, not admitted
    const int32_t slot = take_slot();
    row.slot = kReserved;
    out.ids.push_back(id);
    out.slots.push_back(slot);
    out.into.push_back(rows_.data() + static_cast<size_t>(slot) * row_bytes_);
  }
  out.next = i;
}

void LookaheadCache::commit(const Reservation& reservation) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t i = 0; i < reservation.ids.size(); ++i) {
    const int64_t id = reservation.ids[i];
    if (row_[static_cast<size_t>(id)].slot >= 0) {  // a gather cached it meanwhile
      free_.push_back(reservation.slots[i]);
      continue;
    }
    place(id, reservation.slots[i]);
    publish(id, reservation.slots[i]);
  }
}

void LookaheadCache::release(const Reservation& reservation) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t i = 0; i < reservation.ids.size(); ++i) {
    Row& row = row_[static_cast<size_t>(reservation.ids[i])];
    if (row.slot == kReserved) row.slot = -1;
    free_.push_back(reservation.slots[i]);
  }
}

}  // namespace volley::feature_internal
