#include "volley/feature/internal/lookahead_cache.h"

#include <algorithm>
#include <cstring>

#include "volley/feature/internal/disk_reader.h"

namespace volley::feature_internal {

LookaheadCache::LookaheadCache(size_t row_bytes, size_t byte_budget, std::vector<int64_t> rank)
    : row_bytes_(row_bytes),
      capacity_(row_bytes == 0 ? 0 : static_cast<int64_t>(byte_budget / row_bytes)),
      rank_(std::move(rank)) {
  capacity_ = std::min<int64_t>({capacity_, static_cast<int64_t>(rank_.size()), 0x7fffffff});
  rows_ = Buffer::allocate(static_cast<size_t>(capacity_) * row_bytes_);
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
    if (slot_of_.count(id) != 0) continue;
    const int32_t slot = free_.back();
    free_.pop_back();
    slot_of_[id] = slot;
    key_[id] = key_of(id);
    order_.insert(key_[id]);
    ids.push_back(id);
    into.push_back(rows_.data() + static_cast<size_t>(slot) * row_bytes_);
  }
  reader.read(ids, into);
}

LookaheadCache::Key LookaheadCache::key_of(int64_t id) const {
  auto uses = uses_.find(id);
  if (uses != uses_.end() && !uses->second.empty()) return Key{0, *uses->second.begin(), id};
  return Key{1, rank_[static_cast<size_t>(id)], id};
}

void LookaheadCache::rekey(int64_t id) {
  auto cached = key_.find(id);
  if (cached == key_.end()) return;
  order_.erase(cached->second);
  cached->second = key_of(id);
  order_.insert(cached->second);
}

bool LookaheadCache::read(int64_t id, std::byte* into) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto slot = slot_of_.find(id);
  if (slot == slot_of_.end()) return false;
  std::memcpy(into, rows_.data() + static_cast<size_t>(slot->second) * row_bytes_, row_bytes_);
  return true;
}

void LookaheadCache::insert(std::span<const int64_t> ids, std::span<const std::byte* const> rows) {
  if (capacity_ == 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t i = 0; i < ids.size(); ++i) {
    const int64_t id = ids[i];
    if (slot_of_.count(id) != 0) continue;
    const Key key = key_of(id);
    int32_t slot = -1;
    if (!free_.empty()) {
      slot = free_.back();
      free_.pop_back();
    } else {
      const Key victim = *order_.rbegin();
      if (key > victim) continue;  // it would be the first to go: not admitted
      const int64_t old = std::get<2>(victim);
      order_.erase(victim);
      key_.erase(old);
      slot = slot_of_[old];
      slot_of_.erase(old);
    }
    std::memcpy(rows_.data() + static_cast<size_t>(slot) * row_bytes_, rows[i], row_bytes_);
    slot_of_[id] = slot;
    key_[id] = key;
    order_.insert(key);
  }
}

void LookaheadCache::announce(int64_t batch, std::span<const int64_t> ids) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto [it, fresh] = announced_.try_emplace(batch, ids.begin(), ids.end());
  if (!fresh) return;
  for (const int64_t id : ids) {
    uses_[id].insert(batch);
    rekey(id);
  }
}

void LookaheadCache::begin(int64_t batch) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = announced_.find(batch);
  if (it == announced_.end()) return;
  for (const int64_t id : it->second) {
    auto uses = uses_.find(id);
    uses->second.erase(uses->second.find(batch));
    if (uses->second.empty()) uses_.erase(uses);
    rekey(id);
  }
  announced_.erase(it);
}

}  // namespace volley::feature_internal
