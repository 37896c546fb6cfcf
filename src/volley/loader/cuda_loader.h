// volley/loader/cuda_loader.h — the batch pipeline on a CUDA GPU: seeds → sample → gather, with
// every array of a batch in device memory, prepared ahead of the training step. NeighborLoader's
// CudaGraph constructor (neighbor_loader.h) is the one entry that picks it from where the data
// lives; this class is what it runs.
//
// The same batches as NeighborLoader (neighbor_loader.h) — the same seeds per batch, sampled
// with the same seeds (the CUDA sampler equals the CPU sampler bit for bit), the same feature
// and label rows — but produced on the GPU: a background thread samples and gathers the next
// `prefetch` batches on a stream of its own, while the consumer trains on the current one.
//
//   CudaGraph graph = CudaGraph::place(csr, {.mode = CudaSamplingMode::kGpu, .device = 0});
//   FeatureStore x = FeatureStore::build(features, {.tiers = {{.location = Location::kCuda}}});
//   CudaNeighborLoader loader(graph, x, labels, train_idx,
//                             {.batch_size = 1024, .shuffle = true,
//                              .sampler = {.fanouts = {15, 10, 5}}});
//   auto epoch = loader.start_epoch(0);                   // the one Epoch type (batch.h)
//   while (auto batch = epoch->next_on(consumer_stream)) { ... batch->x ... }
//
// Streams and readiness: batch i is built on the loader's stream and an event is recorded after
// its last kernel. next_on(consumer_stream) makes `consumer_stream` wait for that event
// (cudaStreamWaitEvent: the host does not block): work queued on `consumer_stream` afterwards
// sees the finished batch. Using the arrays on another stream needs the caller's own event.
// Memory: each batch owns one device allocation (from a stream-ordered pool) holding all its
// arrays; it is freed when the last handle to any of its arrays goes, in stream order on the
// consumer stream given to next_on() — after the work queued there. A batch's memory is therefore
// never reused while the consumer holds it or has work pending on it on that stream (as with
// torch's caching allocator, use on other streams needs record-stream care from the caller).
// Determinism: batch b of epoch e equals the CPU loader's batch b of epoch e for the same
// inputs and options (LoaderOptions.seed, shuffle, batch_size, drop_last, rank, world_size,
// sampler): the epoch order and rank split are the CPU loader's (loader_internal).
// Dtypes: x in options.feature_dtype, converted on the GPU after the gather (the conversions and
// rounding of the CPU gather, gather.h); y in the labels' stored dtype.
// Errors: ValueError / IndexError for inconsistent arguments (as NeighborLoader); a failure
// while building batch b is rethrown by next_on() for batch b, after which the epoch is over;
// RuntimeError for CUDA failures and in a build without CUDA.
// Thread safety: one consumer per epoch; a loader may run several epochs (each has its own
// stream, thread and sampler).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "volley/core/array.h"
#include "volley/feature/feature_store.h"
#include "volley/loader/batch.h"
#include "volley/loader/neighbor_loader.h"  // LoaderOptions
#include "volley/sampling/neighbor_sampler.h"

namespace volley {

// Samples `seeds` (batch `batch_index`) and gathers `features` / `labels` rows of every sampled
// node (each optional, num_rows == graph nodes), on `stream`, into one new device allocation
// the batch owns; `input_ids` (host, may be empty: then undefined) is copied there too. The
// sampler's own working memory is free for its next call (in `stream` order) when this
// returns. The ready event is recorded on `stream`; the release stream is `stream` until
// hand_over().
// `sampler` must sample on a GPU (a CudaGraph); `features` / `labels` must be GPU stores on its
// device (ValueError otherwise).
// `x_dtype`: the dtype of batch.x (default: the features' stored dtype), converted on the
// device as gather_rows converts on the CPU (the caller checks gather_supports).
// `seed_times` (temporal sampling, host memory): the time of each seed, as for
// NeighborSampler::sample(seeds, seed_times, ...), which checks them; std::nullopt samples
// without time. Disjoint (so temporal) batches carry batch_ids in the same allocation.
Batch sample_device_batch(NeighborSampler& sampler, std::span<const int64_t> seeds,
                          uint64_t batch_index, const FeatureStore* features,
                          const FeatureStore* labels, void* stream,
                          std::span<const int64_t> input_ids = {},
                          std::optional<DType> x_dtype = std::nullopt,
                          std::optional<std::span<const int64_t>> seed_times = std::nullopt);

// Rows `ids` (int64 [n], host or device memory of the store's device) of `store` into a new
// device array owned like a batch's, queued on `stream` (ready in its order; freed in its
// order). Host ids are checked on the host (IndexError); device ids must be in range (rows of
// out-of-range ids are zero-filled).
Array gather_to_device(const FeatureStore& store, const Array& ids, void* stream);

class CudaNeighborLoader {
 public:
  // `features` and `labels` (optional) must have graph.num_nodes() rows in GPU tiers
  // (FeatureStore with a kCuda and/or kPinnedHost tier) of the graph's device; `input_nodes` as for
  // NeighborLoader. options.num_threads is ignored (one producer thread per epoch);
  // options.prefetch is the number of batches built ahead (0: 2); options.feature_dtype is the
  // dtype of x (ValueError when gather_supports refuses it); options.on_batch_start is called as
  // in NeighborLoader. Temporal sampling (options.sampler.time_source, options.input_time) as in
  // NeighborLoader, with the CUDA sampler's condition: the placed graph's rows sorted by the time
  // in use (ValueError naming the first unsorted row); input nodes may then repeat.
  CudaNeighborLoader(CudaGraph graph, std::optional<FeatureStore> features,
                     std::optional<FeatureStore> labels, std::optional<Array> input_nodes,
                     LoaderOptions options);

  int64_t num_batches() const;
  int64_t num_inputs() const { return input_nodes_.numel(); }
  const Array& input_nodes() const { return input_nodes_; }  // checked; all nodes when none given
  const LoaderOptions& options() const { return options_; }
  const CudaGraph& graph() const { return graph_; }

  // Starts epoch `epoch_index`: its producer thread begins building batches at once, on a
  // stream of its own; the batches come out of the same ordered queue as the CPU loader's.
  // `first_batch` > 0 resumes the epoch there: its batches [first_batch, num_batches()), each
  // the same as in a whole epoch.
  std::unique_ptr<Epoch> start_epoch(int64_t epoch_index, int64_t first_batch = 0) const;

 private:
  CudaGraph graph_;
  std::optional<FeatureStore> features_, labels_;
  Array input_nodes_;
  LoaderOptions options_;
};

}  // namespace volley
