// volley/feature/internal/read_ahead.h — reads the rows of announced batches into a
// LookaheadCache on a thread of its own (FeatureStoreOptions::read_ahead; internal to
// src/volley/feature).
//
// announce_batch(b, ids) queues b's rows; the thread takes batches in order, each once it is at
// most kAheadBatches past the latest batch begun (rows read further ahead displace hot rows for
// longer: measured worse), and, chunk by chunk,
// reserves cache slots for the rows the policy would admit now (LookaheadCache::reserve), reads
// them from the disk tier straight into those slots (DiskReader: io_uring, O_DIRECT) and commits
// them, so that b's gather finds them cached. begin_batch(b) drops the queued requests of
// batches <= b and waits for a chunk of such a batch in flight (then its gather reads the rest
// itself): rows are never read twice on purpose.
// Bounds: rows land in the cache's own slots (memory stays within cache_bytes, plus the reader's
// staging for this thread and at most kMaxQueued batches' ids; a request beyond is dropped, its
// batch gathered as without read-ahead); a slow disk shows as back-pressure: settle() waits for
// the chunk of its batch in flight.
// Failure: a failed read (a truncated or changed file) frees its slots and is otherwise dropped:
// the batch's own gather reads those rows and raises the error there. Every read has the
// reader's timeout, so no wait here is unbounded.
// Thread safety: request() and settle() from any number of threads.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <mutex>
#include <span>
#include <thread>
#include <utility>
#include <vector>

#include "volley/feature/internal/disk_reader.h"
#include "volley/feature/internal/lookahead_cache.h"

namespace volley::feature_internal {

class ReadAhead {
 public:
  static constexpr size_t kMaxQueued = 32;                // batches waiting to be read ahead
  static constexpr int64_t kAheadBatches = 2;             // read up to latest begun + this
  static constexpr size_t kChunkBytes = size_t{4} << 20;  // rows reserved and read at once
  static constexpr size_t kMaxChunkRows = 4096;

  // Reads rows of `reader` into `cache` (both must outlive this object).
  ReadAhead(const DiskReader& reader, LookaheadCache& cache, size_t row_bytes);
  // Stops the thread after the chunk in flight.
  ~ReadAhead();
  ReadAhead(const ReadAhead&) = delete;
  ReadAhead& operator=(const ReadAhead&) = delete;

  // Queues batch `batch`'s rows (copied); never blocks. Not queued: a batch at or before the
  // latest settled one, or any while kMaxQueued wait (counted by dropped()).
  void request(int64_t batch, std::span<const int64_t> ids);
  // Batch `batch` is about to be gathered: see above.
  void settle(int64_t batch);

  // Waits until no queued batch is near enough to read and none is being read (tests).
  void drain();

  int64_t rows_read() const;     // rows read into the cache so far
  int64_t failed_reads() const;  // chunks whose read failed
  int64_t dropped() const;       // requests not queued because kMaxQueued were waiting

 private:
  void run();
  bool near(int64_t batch) const;  // whether `batch` may be read now (under mutex_)
  bool read_chunk(const std::vector<int64_t>& ids, size_t& next);

  const DiskReader& reader_;
  LookaheadCache& cache_;
  size_t chunk_rows_;
  mutable std::mutex mutex_;
  std::condition_variable queued_;   // a request arrived, or stopping
  std::condition_variable changed_;  // queue space freed, a chunk or a batch finished
  std::deque<std::pair<int64_t, std::vector<int64_t>>> queue_;
  int64_t settled_ = std::numeric_limits<int64_t>::min();  // latest batch settled
  int64_t reading_ = std::numeric_limits<int64_t>::max();  // batch of the chunk in flight
  bool stopping_ = false;
  bool busy_ = false;  // a batch taken from the queue is being read
  int64_t rows_read_ = 0;
  int64_t failed_reads_ = 0;
  int64_t dropped_ = 0;
  std::thread thread_;  // last: started once the members above exist
};

}  // namespace volley::feature_internal
