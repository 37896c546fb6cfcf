#include "volley/feature/internal/read_ahead.h"

#include <algorithm>

namespace volley::feature_internal {

ReadAhead::ReadAhead(const DiskReader& reader, LookaheadCache& cache, size_t row_bytes)
    : reader_(reader),
      cache_(cache),
      chunk_rows_(
          std::clamp<size_t>(kChunkBytes / std::max<size_t>(row_bytes, 1), 1, kMaxChunkRows)),
      thread_([this] { run(); }) {}

ReadAhead::~ReadAhead() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  queued_.notify_all();
  changed_.notify_all();
  thread_.join();
}

void ReadAhead::request(int64_t batch, std::span<const int64_t> ids) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (stopping_ || batch <= settled_) return;
  if (queue_.size() >= kMaxQueued) {  // bounded: this batch is gathered without read-ahead
    ++dropped_;
    return;
  }
  queue_.emplace_back(batch, std::vector<int64_t>(ids.begin(), ids.end()));
  queued_.notify_one();
}

bool ReadAhead::near(int64_t batch) const {
  return settled_ == std::numeric_limits<int64_t>::min() || batch - settled_ <= kAheadBatches;
}

void ReadAhead::settle(int64_t batch) {
  std::unique_lock<std::mutex> lock(mutex_);
  settled_ = std::max(settled_, batch);
  const auto before = queue_.size();
  std::erase_if(queue_, [&](const auto& request) { return request.first <= settled_; });
  if (queue_.size() != before) changed_.notify_all();
  queued_.notify_all();  // batches now near enough to read
  changed_.wait(lock, [&] { return reading_ > batch; });
}

void ReadAhead::drain() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] {
    return stopping_ || ((queue_.empty() || !near(queue_.front().first)) && !busy_);
  });
}

int64_t ReadAhead::rows_read() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return rows_read_;
}

int64_t ReadAhead::dropped() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return dropped_;
}

int64_t ReadAhead::failed_reads() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return failed_reads_;
}

// Reserves, reads and commits the next chunk of `ids` from `next`; false when the read failed.
bool ReadAhead::read_chunk(const std::vector<int64_t>& ids, size_t& next) {
  LookaheadCache::Reservation reservation;
  cache_.reserve(ids, next, chunk_rows_, reservation);
  next = reservation.next;
  if (reservation.ids.empty()) return true;
  try {
    reader_.read(reservation.ids, reservation.into);
  } catch (...) {  // the batch's own gather reads these rows and raises the error there
    cache_.release(reservation);
    return false;
  }
  cache_.commit(reservation);
  std::lock_guard<std::mutex> lock(mutex_);
  rows_read_ += static_cast<int64_t>(reservation.ids.size());
  return true;
}

void ReadAhead::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    queued_.wait(lock,
                 [&] { return stopping_ || (!queue_.empty() && near(queue_.front().first)); });
    if (stopping_) return;
    auto [batch, ids] = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    changed_.notify_all();
    size_t next = 0;
    bool ok = true;
    while (ok && next < ids.size() && !stopping_ && batch > settled_) {
      reading_ = batch;
      lock.unlock();
      ok = read_chunk(ids, next);
      lock.lock();
      reading_ = std::numeric_limits<int64_t>::max();
      if (!ok) ++failed_reads_;
      changed_.notify_all();
    }
    busy_ = false;
    changed_.notify_all();
  }
}

}  // namespace volley::feature_internal
