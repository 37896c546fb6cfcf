// volley/loader/batch_source.h — where the loader's batches come from, and how they leave it.
//
// The loader pipeline (neighbor_loader.h: shuffling, batching, worker threads, ordered bounded
// queue, buffer recycling) does not care whether the graph and features are in this process or
// spread over servers. It asks a BatchSource to sample a subgraph and to gather rows:
//   LocalBatchSource   a Csr and FeatureStores in this process (the default);
//   dist::DistGraph    partitions served over gRPC (volley/dist/client.h).
// A typed graph (node and edge types, a heterogeneous one) is read through a TypedBatchSource, the
// same seam for the typed pipeline:
//   TypedSamplerSource       a HeteroNeighborSampler (CPU or GPU) of this process;
//   dist::DistHeteroSource   heterogeneous partitions served over gRPC
//   (volley/dist/hetero_client.h).
// A BatchStream is what a consumer iterates: an Epoch (batch.h) of the CPU or CUDA pipeline, or
// batches streamed from a server (server-client mode, volley/dist/client.h).
//
// Contract for implementers: every method may be called from many worker threads at once; an
// exception fails the one batch being built (the loader rethrows it from next()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "volley/core/dtype.h"
#include "volley/feature/feature_store.h"
#include "volley/graph/csr.h"
#include "volley/sampling/hetero_sampler.h"
#include "volley/sampling/neighbor_sampler.h"

namespace volley {

struct Batch;

class BatchSource {
 public:
  virtual ~BatchSource() = default;

  // Nodes of the whole graph (ids are in [0, num_nodes())).
  virtual int64_t num_nodes() const = 0;
  // ValueError for sampler options this source cannot serve (see validate_sampler_options).
  virtual void validate(const NeighborSamplerOptions& options) const = 0;
  // The subgraph of `seeds` for batch `batch_index`: exactly sample_neighbors' result on the
  // whole graph.
  virtual void sample(std::span<const int64_t> seeds, const NeighborSamplerOptions& options,
                      uint64_t batch_index, SampledSubgraph& out) const = 0;
  // Temporal sampling: seed_times[i] is the time of seeds[i] (sample_neighbors' seed_times
  // overload). The default throws ValueError: a source that samples by time overrides it.
  virtual void sample_temporal(std::span<const int64_t> seeds, std::span<const int64_t> seed_times,
                               const NeighborSamplerOptions& options, uint64_t batch_index,
                               SampledSubgraph& out) const;

  // Features: width 0 when there are none.
  virtual int64_t feature_width() const = 0;
  virtual DType feature_dtype() const = 0;
  // Rows `ids` into `out` (ids.size() × feature_width() elements of `out_dtype`).
  virtual void gather_features(std::span<const int64_t> ids, DType out_dtype,
                               std::byte* out) const = 0;
  virtual bool has_labels() const = 0;
  // Labels of `ids` as int64 into `out`.
  virtual void gather_labels(std::span<const int64_t> ids, int64_t* out) const = 0;

  // Link prediction (LinkLoader, NegativeSampler's EdgeOracle). Sources that cannot answer keep
  // the defaults, which throw ValueError "this source cannot check edges" / "... give degrees".
  //
  // Edge existence for a batch of pairs: out[i] = 1 when src[i] → dst[i] is an edge of the whole
  // graph, 0 otherwise, in NegativeSampler::has_edge's meaning (d ∈ row(s) for an out-neighbor
  // CSR, s ∈ row(d) for the default in-neighbor one). src.size() == dst.size() (ValueError
  // otherwise); IndexError naming the pair and its position for an id out of [0, num_nodes()).
  // `out` holds src.size() bytes. One call should answer many pairs at once (a remote source asks
  // each owning server once per call).
  virtual void has_edges(std::span<const int64_t> src, std::span<const int64_t> dst,
                         uint8_t* out) const;
  // The CSR row length of every node ([num_nodes()]; in-degree for the default orientation):
  // the mass of degree-based negative sampling. Called once per loader, not per batch.
  virtual std::vector<int64_t> degrees() const;
  // The node time of every node ([num_nodes()], int64): the bound of temporal negatives
  // (node-time link sampling). Called once per loader. The default throws ValueError "this
  // source cannot give node times".
  virtual std::vector<int64_t> node_times() const;
};

// A graph and optional feature / label stores of this process.
class LocalBatchSource final : public BatchSource {
 public:
  // `features` [N, D] and `labels` [N] (integer) must have N = graph.num_nodes() rows
  // (ValueError naming what was given otherwise).
  LocalBatchSource(Csr graph, std::optional<FeatureStore> features,
                   std::optional<FeatureStore> labels);

  int64_t num_nodes() const override { return graph_.num_nodes(); }
  void validate(const NeighborSamplerOptions& options) const override;
  void sample(std::span<const int64_t> seeds, const NeighborSamplerOptions& options,
              uint64_t batch_index, SampledSubgraph& out) const override;
  void sample_temporal(std::span<const int64_t> seeds, std::span<const int64_t> seed_times,
                       const NeighborSamplerOptions& options, uint64_t batch_index,
                       SampledSubgraph& out) const override;
  int64_t feature_width() const override;
  DType feature_dtype() const override;
  void gather_features(std::span<const int64_t> ids, DType out_dtype,
                       std::byte* out) const override;
  bool has_labels() const override { return labels_.has_value(); }
  void gather_labels(std::span<const int64_t> ids, int64_t* out) const override;
  // Binary search in sorted rows (learnt once, on the first call), a scan otherwise.
  void has_edges(std::span<const int64_t> src, std::span<const int64_t> dst,
                 uint8_t* out) const override;
  std::vector<int64_t> degrees() const override;
  // The graph's node_time (ValueError when it has none).
  std::vector<int64_t> node_times() const override;

  const Csr& graph() const { return graph_; }

 private:
  Csr graph_;
  mutable std::once_flag rows_sorted_once_;
  mutable bool rows_sorted_ = true;
  std::optional<FeatureStore> features_;
  std::optional<FeatureStore> labels_;
};

// A typed graph as the typed loaders read it (NeighborLoader and LinkLoader over node types).
// Its sampling options are its own, bound when it was made; the loader gives each batch the
// seed of its epoch. Contract for implementers as BatchSource's.
class TypedBatchSource {
 public:
  virtual ~TypedBatchSource() = default;

  // The node types (name, node count) and edge types, in graph order; edges of edge type `e`.
  virtual const std::vector<NodeTypeInfo>& node_types() const = 0;
  virtual const std::vector<EdgeType>& edge_types() const = 0;
  virtual int64_t num_edges(int edge_type) const = 0;
  // The options every batch is sampled with (time_source and disjoint are what loaders read).
  virtual const NeighborSamplerOptions& options() const = 0;
  // The batch of the seed `groups` with the random streams of `seed` and `batch_index` into
  // `out`: HeteroNeighborSampler::sample_with_seed's result over the whole graph (errors as it
  // states). `scratch`: the calling worker's, for a source that can reuse it.
  virtual void sample(const std::vector<HeteroSeeds>& groups, uint64_t seed, uint64_t batch_index,
                      HeteroSampledSubgraph& out, HeteroSamplerScratch& scratch) const = 0;
  // Node fields the source holds itself (a service's features and labels, as "x" and "y") of the
  // nodes `ids` of node type `type`, appended to `out`. The default adds none: a local graph's
  // tables are the loader's attributes (TypedAttributes, neighbor_loader.h).
  virtual void gather_fields(int type, std::span<const int64_t> ids,
                             std::vector<std::pair<std::string, Array>>& out) const;
};

// The typed parts of `batch` (node_types, edge_types: ids, per-hop counts, trees and edges, no
// tables) from a sampled typed subgraph: what every typed batch carries, in graph order.
void set_typed_parts(const HeteroSampledSubgraph& sub, Batch& batch);

// A HeteroNeighborSampler of this process (its options, on the CPU or a GPU).
class TypedSamplerSource final : public TypedBatchSource {
 public:
  // ValueError for a null sampler.
  explicit TypedSamplerSource(std::shared_ptr<HeteroNeighborSampler> sampler);

  const std::vector<NodeTypeInfo>& node_types() const override;
  const std::vector<EdgeType>& edge_types() const override;
  int64_t num_edges(int edge_type) const override;
  const NeighborSamplerOptions& options() const override;
  void sample(const std::vector<HeteroSeeds>& groups, uint64_t seed, uint64_t batch_index,
              HeteroSampledSubgraph& out, HeteroSamplerScratch& scratch) const override;

 private:
  std::shared_ptr<HeteroNeighborSampler> sampler_;
};

// Batches of one epoch, in order.
class BatchStream {
 public:
  virtual ~BatchStream() = default;
  // The next batch, or nullopt after the last. Blocks until it is ready; rethrows the error of a
  // batch that failed (after which the stream is finished).
  virtual std::optional<Batch> next() = 0;
  // The same, handed over to `consumer_stream` (a cudaStream_t as void*): a batch in device
  // memory is ready in that stream's order and its memory is freed in it (Batch::hand_over).
  // Streams of host batches ignore it: next().
  virtual std::optional<Batch> next_on(void* consumer_stream);  // (defined in epoch.cc)
  // Stops producing batches (idempotent); next() then returns nullopt.
  virtual void stop() = 0;
  virtual int64_t num_batches() const = 0;
};

}  // namespace volley
