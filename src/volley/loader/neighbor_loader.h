// volley/loader/neighbor_loader.h — the batch pipeline: seeds → sample → gather → ready batches.
//
// An epoch shuffles the input nodes (seeded), cuts them into batches, and runs the batches
// through a pool of worker threads. Each worker takes a whole batch — samples its subgraph,
// gathers features and labels of every sampled node into the batch's own memory — and hands it
// to a bounded reorder queue; the consumer receives batches strictly in order. No Python worker
// processes, no pickling.
//
//   NeighborLoader loader(graph, features, labels, train_idx,
//                         {.batch_size = 1024, .shuffle = true, .num_threads = 2,
//                          .sampler = {.fanouts = {15, 10, 5}}});
//   auto epoch = loader.start_epoch(0);
//   while (auto batch = epoch->next()) { ... batch->x ... }
//
// Determinism: batch b of epoch e is a pure function of (inputs, options, e, b): the shuffle is
// keyed by (seed, e) and sampling by (mix(seed, e), b), whatever the thread count.
// Memory: each batch owns its arrays (shared, reference-counted Buffers). The pipeline recycles
// a batch's feature memory for a later batch (of this or a later epoch) only once nobody else
// holds it, so arrays handed out stay valid as long as they are referenced.
// Failure: an exception in a worker (e.g. a bad id) is rethrown by next() for the batch where it
// happened, after which the epoch is finished. Destroying the epoch (or stop()) early stops the
// workers and joins them; a worker mid-batch finishes that batch first.
// Thread safety: one consumer per epoch; a NeighborLoader may run several epochs concurrently.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "volley/core/array.h"
#include "volley/feature/feature_store.h"
#include "volley/graph/csr.h"
#include "volley/loader/batch_source.h"
#include "volley/sampling/neighbor_sampler.h"

namespace volley {

struct LoaderOptions {
  int64_t batch_size = 1;
  bool shuffle = false;
  bool drop_last = false;
  int num_threads = 0;  // worker threads; 0 = hardware threads
  int prefetch = 0;     // batches in flight or ready ahead of the consumer; 0 = 2 × threads
  uint64_t seed = 0;
  NeighborSamplerOptions sampler;  // sampler.seed is ignored: the loader derives it from `seed`
  DType feature_dtype = DType::kFloat32;  // dtype of batch.x (features converted on gather)
  // Called by a worker before it builds batch `index` (from the worker thread). An exception it
  // throws fails that batch like any other error: the seam for instrumentation and fault
  // injection in tests.
  std::function<void(int64_t index)> on_batch_start;
};

// One mini-batch. Arrays live in host memory.
struct Batch {
  int64_t index = 0;       // position of the batch in its epoch
  int64_t batch_size = 0;  // number of seeds
  Array nodes;             // int64 [n]: global ids, seeds first (PyG n_id)
  Array input_ids;         // int64 [batch_size]: positions of the seeds in input_nodes
  Array edge_index;        // int64 [2, E]: local ids, row 0 = sources (neighbors), row 1 = targets
  Array edge_ids;          // int64 [E] (PyG e_id)
  Array x;                 // [n, D] in options.feature_dtype, when the loader has features
  Array y;                 // int64 [n], when the loader has labels
  std::vector<int64_t> nodes_per_hop;  // PyG num_sampled_nodes
  std::vector<int64_t> edges_per_hop;  // PyG num_sampled_edges
};

class Epoch;

class NeighborLoader {
 public:
  // `features` [N, D] and `labels` [N] (int64 or any integer dtype) are optional and must have
  // N = graph.num_nodes() rows; each is a FeatureStore (tiered, shared, mapped) or an Array,
  // which converts to a single-tier store without a copy. `input_nodes` (int64) lists the seed
  // nodes; empty means all nodes. Throws ValueError / IndexError for inconsistent arguments,
  // naming them.
  NeighborLoader(Csr graph, std::optional<FeatureStore> features,
                 std::optional<FeatureStore> labels, std::optional<Array> input_nodes,
                 LoaderOptions options);
  // The same pipeline over any BatchSource (e.g. partitions served over gRPC).
  NeighborLoader(std::shared_ptr<const BatchSource> source, std::optional<Array> input_nodes,
                 LoaderOptions options);

  int64_t num_batches() const;
  int64_t num_inputs() const { return input_nodes_.numel(); }
  const LoaderOptions& options() const { return options_; }

  // Starts epoch `epoch_index` (workers begin at once).
  std::unique_ptr<Epoch> start_epoch(int64_t epoch_index) const;

 private:
  friend class Epoch;
  struct Shared;
  std::shared_ptr<const Shared> shared_;
  Array input_nodes_;
  LoaderOptions options_;
};

class Epoch final : public BatchStream {
 public:
  ~Epoch() override;
  Epoch(const Epoch&) = delete;
  Epoch& operator=(const Epoch&) = delete;

  // The next batch in order, or nullopt after the last. Blocks until it is ready. Rethrows a
  // worker's exception for the batch that failed.
  std::optional<Batch> next() override;
  // Stops the workers (idempotent); next() then returns nullopt.
  void stop() override;
  int64_t num_batches() const override { return num_batches_; }

 private:
  friend class NeighborLoader;
  Epoch(std::shared_ptr<const NeighborLoader::Shared> shared, Array order, LoaderOptions options,
        uint64_t sampler_seed);
  void worker_loop();
  Batch make_batch(int64_t index, SampledSubgraph& subgraph);

  std::shared_ptr<const NeighborLoader::Shared> shared_;
  Array order_;  // int64: input positions in epoch order
  LoaderOptions options_;
  uint64_t sampler_seed_;
  int64_t num_batches_;

  std::mutex mutex_;
  std::condition_variable ready_changed_;
  std::condition_variable space_changed_;
  int64_t next_to_claim_ = 0;
  int64_t next_to_deliver_ = 0;
  std::map<int64_t, Batch> ready_;
  std::map<int64_t, std::exception_ptr> failed_;
  // Feature buffers of delivered batches, recycled once no one else holds them (large batches
  // would otherwise pay for fresh pages — faults and zeroing — every time). The pool belongs to
  // the loader, so later epochs reuse the buffers of earlier ones.
  Buffer acquire_feature_buffer(size_t bytes);
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

// Deterministic permutation of [0, n) keyed by `seed` (Fisher–Yates on Philox draws).
Array seeded_permutation(int64_t n, uint64_t seed);

// What every loader over one graph shares (this one and the CUDA loader, cuda_loader.h), so that
// both cut the same batches and sample them with the same seeds.
namespace loader_internal {
// `input_nodes` (1-d int64, distinct, in [0, num_nodes)) as given, or all nodes when absent or
// empty. IndexError / ValueError naming the offending id and position.
Array checked_input_nodes(const std::optional<Array>& input_nodes, int64_t num_nodes);
// Positions into the input nodes in the order epoch `epoch` visits them (int64 [num_inputs]).
Array epoch_order(int64_t num_inputs, bool shuffle, uint64_t seed, int64_t epoch);
// The sampler seed of epoch `epoch` (batch b is then sampled with batch index b).
uint64_t epoch_sampler_seed(uint64_t seed, int64_t epoch);
}  // namespace loader_internal

}  // namespace volley
