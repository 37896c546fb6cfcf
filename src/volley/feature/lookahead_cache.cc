#include "volley/feature/internal/lookahead_cache.h"

#include <algorithm>
#include <cstring>

#include "volley/feature/internal/disk_reader.h"

namespace volley::feature_internal {

LookaheadCache::LookaheadCache(size_t row_bytes, size_t byte_budget, std::vector<int64_t> rank)
    : row_bytes_(row_bytes),
      capacity_(row_bytes == 0 ? 0 : static_cast<int64_t>(byte_budget / row_bytes)),
      rank_(std::move(rank)) {
  const auto rows = static_cast<int64_t>(rank_.size());
  capacity_ = std::min<int64_t>({capacity_, rows, 0x7fffffff});
  rows_ = Buffer::allocate(static_cast<size_t>(capacity_) * row_bytes_);
  slot_of_.assign(static_cast<size_t>(rows), -1);
  first_use_.assign(static_cast<size_t>(rows), -1);
  last_use_.assign(static_cast<size_t>(rows), -1);
  slot_key_.assign(static_cast<size_t>(capacity_), Key{0, 0, -1});
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
    if (slot_of_[static_cast<size_t>(id)] >= 0) continue;
    const int32_t slot = free_.back();
    free_.pop_back();
    place(id, slot);
    ids.push_back(id);
    into.push_back(rows_.data() + static_cast<size_t>(slot) * row_bytes_);
  }
  reader.read(ids, into);
}

LookaheadCache::Key LookaheadCache::key_of(int64_t id) const {
  const int32_t use = first_use_[static_cast<size_t>(id)];
  if (use >= 0) return Key{0, uses_[static_cast<size_t>(use)].batch, id};
  return Key{1, rank_[static_cast<size_t>(id)], id};
}

void LookaheadCache::place(int64_t id, int32_t slot) {
  slot_of_[static_cast<size_t>(id)] = slot;
  slot_key_[static_cast<size_t>(slot)] = key_of(id);
  heap_.emplace(slot_key_[static_cast<size_t>(slot)], slot);
}

void LookaheadCache::rekey(int64_t id) {
  const int32_t slot = slot_of_[static_cast<size_t>(id)];
  if (slot < 0) return;
  const Key key = key_of(id);
  Key& live = slot_key_[static_cast<size_t>(slot)];
  if (key == live) return;
  const bool lowered = key < live;
  live = key;
  // A lowered key (an announced use) keeps its old, larger heap entry; victim() pushes the live
  // key when that entry reaches the top. Only raised keys are pushed now: half the pushes.
  if (lowered) return;
  heap_.emplace(key, slot);
  if (heap_.size() > 4 * static_cast<size_t>(capacity_) + 1024) {  // drop the stale entries
    std::vector<std::pair<Key, int32_t>> entries;
    for (int32_t s = 0; s < static_cast<int32_t>(capacity_); ++s) {
      if (std::get<2>(slot_key_[static_cast<size_t>(s)]) >= 0)
        entries.emplace_back(slot_key_[static_cast<size_t>(s)], s);
    }
    heap_ = std::priority_queue<std::pair<Key, int32_t>>(std::less<std::pair<Key, int32_t>>(),
                                                         std::move(entries));
  }
}

bool LookaheadCache::victim(Key& worst) {
  // Every cached row has an entry >= its live key, so an entry equal to its live key on top is
  // the largest live key. A stale entry is dropped, and its slot's live key pushed when lower
  // (a lowered key, see rekey; for a slot reused since, at worst a duplicate entry).
  while (!heap_.empty()) {
    const auto [key, slot] = heap_.top();
    const Key live = slot_key_[static_cast<size_t>(slot)];
    if (key == live) break;
    heap_.pop();
    if (std::get<2>(live) >= 0 && live < key) heap_.emplace(live, slot);
  }
  if (heap_.empty()) return false;
  worst = heap_.top().first;
  return true;
}

int32_t LookaheadCache::evict() {
  const int32_t slot = heap_.top().second;
  heap_.pop();
  slot_of_[static_cast<size_t>(std::get<2>(slot_key_[static_cast<size_t>(slot)]))] = -1;
  slot_key_[static_cast<size_t>(slot)] = Key{0, 0, -1};
  return slot;
}

int64_t LookaheadCache::take_cached(std::vector<int64_t>& ids, std::vector<std::byte*>& into) {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t kept = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    const int32_t slot = slot_of_[static_cast<size_t>(ids[i])];
    if (slot >= 0) {
      std::memcpy(into[i], rows_.data() + static_cast<size_t>(slot) * row_bytes_, row_bytes_);
      continue;
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
    if (slot_of_[static_cast<size_t>(id)] >= 0) continue;  // (a reserved row: cached twice,
    int32_t slot = -1;                                     // commit() frees the second)
    if (!free_.empty()) {
      slot = free_.back();
      free_.pop_back();
    } else {
      Key worst;
      if (!victim(worst) || key_of(id) > worst) continue;  // it would be the first to go
      slot = evict();
    }
    std::memcpy(rows_.data() + static_cast<size_t>(slot) * row_bytes_, rows[i], row_bytes_);
    place(id, slot);
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
    // Linked in batch order: after the latest earlier use (usually the last one).
    int32_t after = last_use_[static_cast<size_t>(id)];
    while (after >= 0 && uses_[static_cast<size_t>(after)].batch > batch)
      after = uses_[static_cast<size_t>(after)].prev;
    const int32_t before =
        after >= 0 ? uses_[static_cast<size_t>(after)].next : first_use_[static_cast<size_t>(id)];
    uses_[static_cast<size_t>(use)] = {batch, id, after, before};
    (after >= 0 ? uses_[static_cast<size_t>(after)].next : first_use_[static_cast<size_t>(id)]) =
        use;
    (before >= 0 ? uses_[static_cast<size_t>(before)].prev : last_use_[static_cast<size_t>(id)]) =
        use;
    entry->second.push_back(use);
    rekey(id);
  }
}

void LookaheadCache::unlink_use(int32_t use) {
  const Use& u = uses_[static_cast<size_t>(use)];
  const auto id = static_cast<size_t>(u.id);
  (u.prev >= 0 ? uses_[static_cast<size_t>(u.prev)].next : first_use_[id]) = u.next;
  (u.next >= 0 ? uses_[static_cast<size_t>(u.next)].prev : last_use_[id]) = u.prev;
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
    if (slot_of_[static_cast<size_t>(id)] != -1) continue;  // cached or reserved
    int32_t slot = -1;
    if (!free_.empty()) {
      slot = free_.back();
      free_.pop_back();
    } else {
      Key worst;
      if (!victim(worst) || key_of(id) > worst) continue;  // the policy would not admit it
      slot = evict();
    }
    slot_of_[static_cast<size_t>(id)] = kReserved;
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
    if (slot_of_[static_cast<size_t>(id)] >= 0) {  // a gather cached it meanwhile
      free_.push_back(reservation.slots[i]);
      continue;
    }
    place(id, reservation.slots[i]);
  }
}

void LookaheadCache::release(const Reservation& reservation) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t i = 0; i < reservation.ids.size(); ++i) {
    const auto id = static_cast<size_t>(reservation.ids[i]);
    if (slot_of_[id] == kReserved) slot_of_[id] = -1;
    free_.push_back(reservation.slots[i]);
  }
}

}  // namespace volley::feature_internal
