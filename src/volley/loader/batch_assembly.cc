// volley/loader/batch_assembly.cc — see internal/batch_assembly.h.
#include "volley/loader/internal/batch_assembly.h"

#include <cstring>
#include <span>
#include <string>
#include <utility>

#include "volley/feature/feature_store.h"

namespace volley::loader_internal {

Buffer BatchAssembly::acquire(size_t bytes, int threads, int64_t prefetch) const {
  const size_t tables = 1 + attributes.node.size() + attributes.edge.size();
  const size_t capacity =
      tables * (2 * static_cast<size_t>(threads) + static_cast<size_t>(prefetch) + 2);
  std::lock_guard lock(pool_mutex_);
  // The smallest free buffer that fits; failing that, replace a free one that is too small.
  Buffer* best = nullptr;
  Buffer* free_small = nullptr;
  for (Buffer& buffer : pool_) {
    if (buffer.use_count() != 1) continue;  // a batch (or a user's tensor) still holds it
    if (buffer.size() >= bytes) {
      if (best == nullptr || buffer.size() < best->size()) best = &buffer;
    } else {
      free_small = &buffer;
    }
  }
  if (best != nullptr) return best->slice(0, bytes);
  Buffer fresh = allocate_gather_buffer(bytes + bytes / 4);  // headroom: batch sizes vary
  if (free_small != nullptr) {
    *free_small = fresh;
  } else if (pool_.size() < capacity) {
    pool_.push_back(fresh);
  }
  return fresh.slice(0, bytes);
}

void BatchAssembly::fill(const SampledSubgraph& subgraph, DType feature_dtype, int threads,
                         int64_t prefetch, Batch& batch) const {
  const int64_t num_nodes = subgraph.num_nodes();
  const int64_t num_edges = subgraph.num_edges();
  batch.nodes = subgraph.nodes;  // shared, not copied
  batch.edge_index = Array::empty(DType::kInt64, {2, num_edges});
  int64_t* edge_index = batch.edge_index.data<int64_t>();
  const size_t edge_bytes = static_cast<size_t>(num_edges) * sizeof(int64_t);
  if (num_edges > 0) {
    std::memcpy(edge_index, subgraph.cols.raw_data(), edge_bytes);
    std::memcpy(edge_index + num_edges, subgraph.rows.raw_data(), edge_bytes);
  }
  batch.edge_ids = subgraph.edge_ids;
  batch.nodes_per_hop = subgraph.nodes_per_hop;
  batch.edges_per_hop = subgraph.edges_per_hop;
  const std::span<const int64_t> nodes = subgraph.nodes.span<int64_t>();
  if (const int64_t width = source->feature_width(); width > 0) {
    const size_t bytes = static_cast<size_t>(num_nodes * width) * dtype_size(feature_dtype);
    batch.x = Array(acquire(bytes, threads, prefetch), feature_dtype, {num_nodes, width});
    source->gather_features(nodes, feature_dtype, batch.x.raw_data());
  }
  if (source->has_labels()) {
    batch.y = Array::empty(DType::kInt64, {num_nodes});
    source->gather_labels(nodes, batch.y.data<int64_t>());
  }
  batch.batch_ids = subgraph.batch;
  gather_attributes(subgraph, threads, prefetch, batch);
}

void BatchAssembly::gather_attributes(const SampledSubgraph& subgraph, int threads,
                                      int64_t prefetch, Batch& batch) const {
  const auto gather = [&](const auto& tables, const Array& ids, auto& out) {
    out.clear();
    const std::span<const int64_t> rows =
        ids.defined() ? ids.span<int64_t>() : std::span<const int64_t>();
    const auto count = static_cast<int64_t>(rows.size());
    for (const auto& [name, store] : tables) {
      const int64_t width = store.width();
      const size_t bytes = static_cast<size_t>(count * width) * dtype_size(store.dtype());
      std::vector<int64_t> shape{count};
      if (store.ndim() == 2) shape.push_back(width);
      Array values(acquire(bytes, threads, prefetch), store.dtype(), shape);
      GatherOptions options;
      options.threads = 1;  // batch-level parallelism: each worker gathers its own batch
      if (count > 0) store.gather(rows, values.raw_data(), options);
      out.emplace_back(name, std::move(values));
    }
  };
  gather(attributes.node, subgraph.nodes, batch.node_attrs);
  gather(attributes.edge, subgraph.edge_ids, batch.edge_attrs);
}

void check_attributes(const LoaderAttributes& attributes, int64_t num_nodes, int64_t num_edges) {
  const auto check = [](const auto& tables, int64_t rows, const char* what) {
    for (const auto& [name, store] : tables) {
      VOLLEY_REQUIRE(store.defined() && store.num_rows() == rows && !store.on_cuda(), ValueError,
                     "{} attribute '{}' must be a host table of {} rows, got {}", what, name, rows,
                     store.defined() ? store.describe() : std::string("an empty store"));
    }
  };
  check(attributes.node, num_nodes, "node");
  check(attributes.edge, num_edges, "edge");
}

}  // namespace volley::loader_internal
