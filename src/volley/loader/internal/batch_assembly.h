// volley/loader/internal/batch_assembly.h — the step every host loader shares: a sampled
// subgraph (and the source it came from) → a Batch's node, edge, feature, label and attribute
// arrays. NeighborLoader (seed nodes) and LinkLoader (the end points of supervision edges) both
// sample, then call BatchAssembly::fill.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "volley/core/buffer.h"
#include "volley/loader/batch.h"
#include "volley/loader/batch_source.h"
#include "volley/loader/neighbor_loader.h"  // LoaderAttributes, TypedAttributes

namespace volley::loader_internal {

// A loader's source and attribute tables, and the pool of recycled batch buffers shared by all
// its epochs. Thread safety: fill() and fill_typed() may run on many worker threads at once.
struct BatchAssembly {
  std::shared_ptr<const BatchSource> source;
  LoaderAttributes attributes;
  // Typed graphs: the source, the index of the seeds' node type, the tables per type.
  std::shared_ptr<const TypedBatchSource> typed_source;
  int input_type = 0;
  TypedAttributes typed_attributes;

  // Sets batch.nodes (= subgraph.nodes, shared), edge_index ([2, E]: row 0 the neighbors, row 1
  // the targets), edge_ids, nodes_per_hop, edges_per_hop, batch_ids, x (in `feature_dtype`, when
  // the source has features), y (when it has labels) and the attribute tables. `threads` and
  // `prefetch` (the epoch's) bound how many recycled buffers are kept.
  void fill(const SampledSubgraph& subgraph, DType feature_dtype, int threads, int64_t prefetch,
            Batch& batch) const;

  // Typed batches: samples the seed `groups` (one per node type; times: one per seed, temporal
  // sampling; empty: none, or the seeds' own node times) with the random streams of `seed` and
  // batch index `index` (TypedBatchSource::sample, a scratch per thread), lets `edit` change the
  // sampled subgraph (a link batch removes edges; null: none), then sets batch.node_types and
  // batch.edge_types, gathers typed_attributes and adds the source's own fields.
  void fill_typed(const std::vector<HeteroSeeds>& groups, uint64_t seed, int64_t index, int threads,
                  int64_t prefetch, Batch& batch,
                  const std::function<void(HeteroSampledSubgraph&)>& edit = nullptr) const;
  // Its two steps: the sampling (a scratch per thread), and the batch of a sampled subgraph.
  void sample_typed(const std::vector<HeteroSeeds>& groups, uint64_t seed, int64_t index,
                    HeteroSampledSubgraph& out) const;
  void fill_typed(const HeteroSampledSubgraph& sub, int threads, int64_t prefetch,
                  Batch& batch) const;

  // A buffer of `bytes` from the pool: feature buffers of delivered batches are recycled once
  // no one else holds them (large batches would otherwise pay for fresh pages — faults and
  // zeroing — every time).
  Buffer acquire(size_t bytes, int threads, int64_t prefetch) const;

 private:
  using Tables = std::vector<std::pair<std::string, FeatureStore>>;
  void gather_attributes(const SampledSubgraph& subgraph, int threads, int64_t prefetch,
                         Batch& batch) const;
  // `tables` at `rows` into `out` (one Array each, in pooled buffers).
  void gather_tables(const Tables& tables, std::span<const int64_t> rows, int threads,
                     int64_t prefetch, std::vector<std::pair<std::string, Array>>& out) const;
  size_t num_tables() const;

  mutable std::mutex pool_mutex_;
  mutable std::vector<Buffer> pool_;
};

// ValueError naming a table whose row count is not `num_nodes` (node tables) or `num_edges`
// (edge tables), or that lives on a GPU.
void check_attributes(const LoaderAttributes& attributes, int64_t num_nodes, int64_t num_edges);
// The same for a typed graph's tables (ValueError naming the type): at most one entry per node
// (edge) type of `source`, each table with the type's node (edge) count of rows.
void check_attributes(const TypedAttributes& attributes, const TypedBatchSource& source);

}  // namespace volley::loader_internal
