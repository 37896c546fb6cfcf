// volley/loader/internal/lookahead_window.h — the CPU loader's lookahead window over one epoch
// (LoaderOptions::lookahead, over features in a kLookahead store): batches sampled ahead of the
// one being built, announced to the store, and kept until their own worker builds them, so that
// every batch is sampled exactly once.
//
//   LookaheadWindow window(store, tag, batches, depth, [&](int64_t b, SampledSubgraph& out) {
//     source.sample(seeds_of(b), options, b, out);
//   });
//   window.take(index, subgraph);   // on the worker building batch `index`, before its gather
//
// Sampling is a pure function of (seed, batch index), so a batch sampled ahead by any worker is
// bit-identical to the one its own worker would have sampled: the batches are the same with and
// without the window, whatever the thread count.
// Memory: the kept sampler output (node ids, edges; no feature rows) of at most depth + the
// epoch's prefetch batches: those claimed ahead of the oldest batch not yet built.
// Failure: an exception sampling batch b (on whichever worker sampled it) is rethrown by take(b),
// on b's own worker; other batches are unaffected. Never a hang: a claimed batch is always
// finished (sampled or failed) by the worker that claimed it, which waits on nobody.
// Thread safety: take() is called from any number of workers at once, once per batch index.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <mutex>

#include "volley/feature/feature_store.h"
#include "volley/sampling/neighbor_sampler.h"

namespace volley::loader_internal {

class LookaheadWindow {
 public:
  using SampleBatch = std::function<void(int64_t index, SampledSubgraph& out)>;
  // Batch b is announced to `store` as tag + b; the epoch has `num_batches` batches; take(i)
  // first samples the batches up to i + depth. `sample` is called from the workers, outside any
  // lock.
  LookaheadWindow(FeatureStore store, int64_t tag, int64_t num_batches, int64_t depth,
                  SampleBatch sample);
  // Batches announced but never built leave the store's window (call once the workers are gone).
  ~LookaheadWindow();
  LookaheadWindow(const LookaheadWindow&) = delete;
  LookaheadWindow& operator=(const LookaheadWindow&) = delete;

  // Samples and announces the batches up to index + depth that no worker has claimed yet, then
  // waits until batch `index` is sampled (by this or another worker), moves its subgraph into
  // `out` and takes the batch out of the store's window (FeatureStore::begin_batch). Rethrows
  // the exception that sampling batch `index` raised.
  void take(int64_t index, SampledSubgraph& out);

  // Batches sampled and not yet taken (tests: the memory bound).
  int64_t kept() const;

 private:
  struct Slot {
    bool done = false;
    SampledSubgraph subgraph;
    std::exception_ptr error;
  };
  void sample_and_announce(int64_t index);

  FeatureStore store_;
  int64_t tag_;
  int64_t num_batches_;
  int64_t depth_;
  SampleBatch sample_;
  mutable std::mutex mutex_;
  std::condition_variable done_changed_;
  int64_t next_to_claim_ = 0;
  std::map<int64_t, Slot> slots_;  // claimed and not taken
};

}  // namespace volley::loader_internal
