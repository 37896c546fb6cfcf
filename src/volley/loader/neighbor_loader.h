// volley/loader/neighbor_loader.h — the batch pipeline: seeds → sample → gather → ready batches.
//
// An epoch shuffles the input nodes (seeded), cuts them into batches, and runs the batches
// through a pool of worker threads (the producers of an Epoch, batch.h). Each worker takes a whole
// batch — samples its subgraph, gathers features and labels of every sampled node into the batch's
// own memory — and hands it to a bounded reorder queue; the consumer receives batches strictly in
// order. No Python worker processes, no pickling.
//
//   NeighborLoader loader(graph, features, labels, train_idx,
//                         {.batch_size = 1024, .shuffle = true, .num_threads = 2,
//                          .sampler = {.fanouts = {15, 10, 5}}});
//   auto epoch = loader.start_epoch(0);
//   while (auto batch = epoch->next()) { ... batch->x ... }
//
// Determinism: batch b of epoch e is a pure function of (inputs, options, e, b): the shuffle is
// keyed by (seed, e) and sampling by (mix(seed, e), b), whatever the thread count. One RNG
// (Philox) decides everything, the split over data-parallel ranks included (options.rank).
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
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "volley/core/array.h"
#include "volley/feature/feature_store.h"
#include "volley/graph/csr.h"
#include "volley/loader/batch.h"
#include "volley/loader/batch_source.h"
#include "volley/sampling/cuda_graph.h"
#include "volley/sampling/hetero_sampler.h"
#include "volley/sampling/neighbor_sampler.h"

namespace volley {

class CudaNeighborLoader;  // cuda_loader.h

struct LoaderOptions {
  int64_t batch_size = 1;
  bool shuffle = false;
  bool drop_last = false;
  int num_threads = 0;  // worker threads; 0 = hardware threads
  int prefetch = 0;     // batches in flight or ready ahead of the consumer; 0 = 2 × threads
  // Features in a kLookahead store (feature_store.h) — for a typed graph, any node type's tables
  // in such stores: before building batch i the loader samples batches up to i + lookahead
  // (sampling is a pure function of the seed and batch index) and announces their rows to the
  // stores, whose caches keep the rows used soonest (and, with the store's read_ahead, read
  // their missing rows ahead). Each batch is sampled once: the sampler
  // output of the batches ahead is kept until their worker builds them, so the batches are
  // bit-identical to a loader without lookahead, whatever the thread count. Memory: the store's
  // cache_bytes, the prefetched batches, plus the sampler output (ids and edges, no feature
  // rows) of at most lookahead + prefetch batches. 0: none. Other stores, the GPU loaders, the
  // link loaders and homogeneous temporal sampling ignore it.
  int lookahead = 8;
  uint64_t seed = 0;
  // Data-parallel training: this process is rank `rank` of `world_size` (0 <= rank <
  // world_size). With world_size > 1 every epoch takes the single-process epoch order of all
  // input nodes (shuffled or not, the same on every rank), pads it by repeating its first
  // positions to a multiple of world_size (drop_last: cuts the tail instead) and gives rank r
  // the positions r, r + world_size, ... (torch's DistributedSampler split): ranks are disjoint
  // up to the padding, equally long, and cover every input each epoch. Rank r samples with
  // seeds of its own (mix(seed, r)); Batch::input_ids still index the full input list.
  int rank = 0;
  int world_size = 1;
  NeighborSamplerOptions sampler;  // sampler.seed is ignored: the loader derives it from `seed`
  // Temporal sampling (sampler.time_source set; PyG's input_time): int64 [num input nodes], the
  // time of each input node, by position (an input node may then repeat, at other times). Needed
  // exactly when sampler.time_source is set (ValueError naming what is missing or extra, or a
  // length other than the input count). CPU loaders over a LocalBatchSource only.
  std::optional<Array> input_time;
  DType feature_dtype = DType::kFloat32;  // dtype of batch.x (features converted on gather)
  // Called by a worker before it builds batch `index` (from the worker thread). An exception it
  // throws fails that batch like any other error: the seam for instrumentation and fault
  // injection in tests.
  std::function<void(int64_t index)> on_batch_start;
};

// Further per-node and per-edge tables carried into every batch (PyG carries every attribute
// of a Data): node tables have one row per graph node and are gathered at the batch's nodes,
// edge tables one row per graph edge (the edge ids of the graph) and are gathered at its
// edge_ids. Any dtype, [N] or [N, D]; gathered as stored (no conversion) through
// FeatureStore::gather, on the batch's worker thread. Host stores only.
struct LoaderAttributes {
  std::vector<std::pair<std::string, FeatureStore>> node;
  std::vector<std::pair<std::string, FeatureStore>> edge;
};

// A typed graph's tables carried into every batch (LoaderAttributes per type): node[t] holds
// the tables of node type t (rows: its nodes), edge[e] those of edge type e (rows: its edge ids),
// in graph order; a shorter list leaves the last types without tables. Host stores only.
struct TypedAttributes {
  std::vector<std::vector<std::pair<std::string, FeatureStore>>> node;
  std::vector<std::vector<std::pair<std::string, FeatureStore>>> edge;
};

class NeighborLoader {
 public:
  // `features` [N, D] and `labels` [N] (int64 or any integer dtype) are optional and must have
  // N = graph.num_nodes() rows; each is a FeatureStore (tiered, shared, mapped) or an Array,
  // which converts to a single-tier store without a copy. `input_nodes` (int64) lists the seed
  // nodes; std::nullopt means all nodes, an empty array none (no batches, as in PyG). `options` are
  // checked here, once (check_loader_options and the source's sampler checks). Throws ValueError /
  // IndexError for inconsistent arguments, naming them and the offending value.
  // `attributes`: ValueError naming a table whose row count is not the graph's node (edge)
  // count, or that lives on a GPU.
  NeighborLoader(Csr graph, std::optional<FeatureStore> features,
                 std::optional<FeatureStore> labels, std::optional<Array> input_nodes,
                 LoaderOptions options, LoaderAttributes attributes = {});
  // The same pipeline over any BatchSource (e.g. partitions served over gRPC).
  NeighborLoader(std::shared_ptr<const BatchSource> source, std::optional<Array> input_nodes,
                 LoaderOptions options);
  // The same batches built on a GPU: the device follows where the data lives — a graph placed
  // for CUDA sampling (GPU or UVA, CudaGraph::mode()) and `features` / `labels` in GPU tiers of
  // its device; every array of a batch in device memory. The arguments, errors and stream rules
  // are CudaNeighborLoader's (cuda_loader.h), which builds the batches.
  NeighborLoader(CudaGraph graph, std::optional<FeatureStore> features,
                 std::optional<FeatureStore> labels, std::optional<Array> input_nodes,
                 LoaderOptions options);

  // The same pipeline over a typed graph (a heterogeneous one; the homogeneous pipeline's
  // policy, workers and ordered queue): `source` (batch_source.h: a sampler of this process or
  // a service; its options are the sampling options: options.sampler is ignored) samples the
  // seeds `input_nodes` of node type `input_type` (nullopt: every node of it); each Batch is
  // typed (node_types, edge_types; the parts as HeteroNeighborSampler returns them, copied to
  // host arrays) with `attributes` and the source's own fields gathered per type.
  // options.input_time: temporal sampling, one time per input node (optional by node time: the
  // seeds' own). Lookahead does not apply. ValueError / IndexError as above (an unknown input
  // type naming the known ones; attribute tables: loader_internal::check_attributes).
  NeighborLoader(std::shared_ptr<const TypedBatchSource> source, const std::string& input_type,
                 std::optional<Array> input_nodes, LoaderOptions options,
                 TypedAttributes attributes = {});
  // The same over a sampler of this process (TypedSamplerSource).
  NeighborLoader(std::shared_ptr<HeteroNeighborSampler> sampler, const std::string& input_type,
                 std::optional<Array> input_nodes, LoaderOptions options,
                 TypedAttributes attributes = {});

  // Whether batches are built on a GPU (the CudaGraph constructor).
  bool on_cuda() const { return cuda_ != nullptr; }

  // Batches per epoch of this rank.
  int64_t num_batches() const;
  // All input nodes (every rank's).
  int64_t num_inputs() const { return input_nodes_.numel(); }
  const LoaderOptions& options() const { return options_; }
  // Positions into the input nodes that this rank visits in epoch `epoch_index`, in batch order
  // (int64): what the batches' input_ids list, concatenated.
  Array epoch_positions(int64_t epoch_index) const;

  // Starts epoch `epoch_index` (workers begin at once). Any number of epochs, in any order,
  // from one loader.
  // `first_batch` > 0 resumes the epoch there: its batches [first_batch, num_batches()), each
  // the same as in a whole epoch.
  std::unique_ptr<Epoch> start_epoch(int64_t epoch_index, int64_t first_batch = 0) const;

 private:
  struct Shared;
  struct EpochWork;
  // Opens `work`'s lookahead window over the tables in kLookahead stores (none: no window).
  void open_window(EpochWork& work) const;
  std::shared_ptr<const Shared> shared_;
  std::shared_ptr<const CudaNeighborLoader> cuda_;  // set: the GPU pipeline builds the batches
  Array input_nodes_;
  LoaderOptions options_;
};

// Deterministic permutation of [0, n) keyed by `seed` (Fisher–Yates on Philox draws).
Array seeded_permutation(int64_t n, uint64_t seed);

// What every loader over one graph shares (this one and the CUDA loader, cuda_loader.h), so that
// both cut the same batches and sample them with the same seeds.
namespace loader_internal {
// `input_nodes` (1-d int64, distinct, in [0, num_nodes)) as given — an empty array is no seeds
// (the epoch has no batch) — or all nodes when absent (nullopt). IndexError / ValueError naming
// the offending id and position.
Array checked_input_nodes(const std::optional<Array>& input_nodes, int64_t num_nodes,
                          bool distinct = true);
// Whether the sampler grows a tree per seed (disjoint or temporal sampling): then an input node
// may repeat (a tree each; temporal: at different times), as PyG allows; else inputs are distinct.
bool grows_trees(const NeighborSamplerOptions& sampler);
// The LoaderOptions::input_time checks against `num_inputs` input nodes (ValueError as stated
// there), and the seed times of a batch: input_time at `positions`.
void check_input_time(const LoaderOptions& options, int64_t num_inputs);
std::vector<int64_t> seed_times_at(const Array& input_time, std::span<const int64_t> positions);
// A typed loader's input nodes of node type `input_type` (among `types`), checked as above with
// the options of the sampler that samples them (repeated seeds allowed when it samples trees;
// options.input_time optional: by node time, the seeds' own). ValueError naming an unknown type
// and the known ones.
struct TypedInputs {
  int type = 0;  // the index of input_type in `types`
  Array inputs;  // the input nodes (all of the type when none are given)
};
TypedInputs checked_typed_inputs(const std::vector<NodeTypeInfo>& types,
                                 const std::string& input_type,
                                 const std::optional<Array>& input_nodes,
                                 const LoaderOptions& options,
                                 const NeighborSamplerOptions& sampler);
// Positions into the input nodes in the order epoch `epoch` visits them (int64 [num_inputs]).
Array epoch_order(int64_t num_inputs, bool shuffle, uint64_t seed, int64_t epoch);
// The sampler seed of epoch `epoch` (batch b is then sampled with batch index b).
uint64_t epoch_sampler_seed(uint64_t seed, int64_t epoch);

// The policy every loader applies to its options (CPU, CUDA, server-client), in one place.
// ValueError naming the offending value: batch_size < 1, num_threads, prefetch or lookahead < 0,
// rank outside [0, world_size), world_size < 1, or fewer input nodes than one per rank.
void check_loader_options(const LoaderOptions& options, int64_t num_inputs);
// Input nodes one rank visits per epoch: num_inputs for one rank; else num_inputs / world_size
// rounded up (padded) or, with drop_last, down.
int64_t inputs_per_rank(int64_t num_inputs, const LoaderOptions& options);
// Batches per epoch of one rank.
int64_t num_batches(int64_t num_inputs, const LoaderOptions& options);
// Positions into the input nodes that options.rank visits in epoch `epoch`, in batch order
// (int64 [inputs_per_rank]); see LoaderOptions::rank.
Array epoch_positions(int64_t num_inputs, const LoaderOptions& options, int64_t epoch);
// The sampler seed of epoch `epoch` for options.rank.
uint64_t epoch_sampler_seed(const LoaderOptions& options, int64_t epoch);

// For a loader that shuffles and samples by itself elsewhere (a server's: dist
// ServerClientLoader), what to ask it for so that its batches are options.rank's share of epoch
// `epoch`. One rank: the inputs, shuffle and seed as they are. Several ranks: the rank's inputs
// in batch order, no shuffle, the rank's seed, and the positions that map the batches'
// input_ids back into `input_nodes` (remap_input_ids).
struct EpochShare {
  Array input_nodes;
  bool shuffle = false;
  uint64_t seed = 0;
  Array positions;  // undefined for one rank
};
EpochShare epoch_share(const Array& input_nodes, const LoaderOptions& options, int64_t epoch);
// batch.input_ids[i] = positions[batch.input_ids[i]]; nothing when `positions` is undefined.
// RuntimeError for an input id outside `positions` (a malformed batch).
void remap_input_ids(Batch& batch, const Array& positions);
}  // namespace loader_internal

}  // namespace volley
