// volley/loader/internal/lookahead_window.h — the CPU loader's lookahead window over one epoch
// (LoaderOptions::lookahead, over tables in a kLookahead store): batches sampled ahead of the one
// being built, announced to the stores, and kept until their own worker builds them, so that
// every batch is sampled exactly once. One window for both graph kinds: `Subgraph` is a
// SampledSubgraph (the features, gathered at the batch's nodes) or a HeteroSampledSubgraph (each
// store a node type's table, gathered at that type's nodes).
//
//   LookaheadWindow window({{store, nodes_of}}, tag, batches, depth,
//                          [&](int64_t b, SampledSubgraph& out) {
//                            source.sample(seeds_of(b), options, b, out);
//                          });
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
#include <span>
#include <vector>

#include "volley/feature/feature_store.h"
#include "volley/sampling/hetero_sampler.h"
#include "volley/sampling/neighbor_sampler.h"

namespace volley::loader_internal {

template <class Subgraph>
class LookaheadWindowOf {
 public:
  using SampleBatch = std::function<void(int64_t index, Subgraph& out)>;
  // A store the window steers, and the rows of a sampled batch that its gather will read.
  struct Target {
    FeatureStore store;
    std::function<std::span<const int64_t>(const Subgraph&)> rows;
  };
  // Batch b is announced to every target's store as tag + b (its rows of b); the epoch has
  // `num_batches` batches; take(i) first samples the batches up to i + depth. `sample` is called
  // from the workers, outside any lock.
  LookaheadWindowOf(std::vector<Target> targets, int64_t tag, int64_t num_batches, int64_t depth,
                    SampleBatch sample);
  // Batches announced but never built leave the stores' windows (call once the workers are gone).
  ~LookaheadWindowOf();
  LookaheadWindowOf(const LookaheadWindowOf&) = delete;
  LookaheadWindowOf& operator=(const LookaheadWindowOf&) = delete;

  // Samples and announces the batches up to index + depth that no worker has claimed yet, then
  // waits until batch `index` is sampled (by this or another worker), moves its subgraph into
  // `out` and takes the batch out of the stores' windows (FeatureStore::begin_batch). Rethrows
  // the exception that sampling batch `index` raised.
  void take(int64_t index, Subgraph& out);

  // Batches sampled and not yet taken (tests: the memory bound).
  int64_t kept() const;

 private:
  struct Slot {
    bool done = false;
    Subgraph subgraph;
    std::exception_ptr error;
  };
  void sample_and_announce(int64_t index);
  void begin(int64_t index) const;

  std::vector<Target> targets_;
  int64_t tag_;
  int64_t num_batches_;
  int64_t depth_;
  SampleBatch sample_;
  mutable std::mutex mutex_;
  std::condition_variable done_changed_;
  int64_t next_to_claim_ = 0;
  std::map<int64_t, Slot> slots_;  // claimed and not taken
};

// The homogeneous window (the features, at the batch's nodes) and the typed one.
using LookaheadWindow = LookaheadWindowOf<SampledSubgraph>;
using TypedLookaheadWindow = LookaheadWindowOf<HeteroSampledSubgraph>;

// The target of a homogeneous loader's features: gathered at every node of the batch.
LookaheadWindow::Target batch_nodes_target(FeatureStore store);

}  // namespace volley::loader_internal
