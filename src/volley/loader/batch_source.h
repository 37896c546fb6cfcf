// volley/loader/batch_source.h — where the loader's batches come from, and how they leave it.
//
// The loader pipeline (neighbor_loader.h: shuffling, batching, worker threads, ordered bounded
// queue, buffer recycling) does not care whether the graph and features are in this process or
// spread over servers. It asks a BatchSource to sample a subgraph and to gather rows:
//   LocalBatchSource   a Csr and FeatureStores in this process (the default);
//   dist::DistGraph    partitions served over gRPC (volley/dist/client.h).
// A BatchStream is what a consumer iterates: an Epoch (batch.h) of the CPU or CUDA pipeline, or
// batches streamed from a server (server-client mode, volley/dist/client.h).
//
// Contract for implementers: every method may be called from many worker threads at once; an
// exception fails the one batch being built (the loader rethrows it from next()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "volley/core/dtype.h"
#include "volley/feature/feature_store.h"
#include "volley/graph/csr.h"
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
