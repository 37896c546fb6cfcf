// volley/loader/batch_assembly.cc — see internal/batch_assembly.h.
#include "volley/loader/internal/batch_assembly.h"

#include <algorithm>
#include <cstring>
#include <span>
#include <string>
#include <utility>

#include "volley/feature/feature_store.h"

namespace volley::loader_internal {

size_t BatchAssembly::num_tables() const {
  size_t tables = 1 + attributes.node.size() + attributes.edge.size();
  for (const auto* lists : {&typed_attributes.node, &typed_attributes.edge}) {
    for (const Tables& list : *lists) tables += list.size();
  }
  return tables;
}

Buffer BatchAssembly::acquire(size_t bytes, int threads, int64_t prefetch) const {
  const size_t tables = num_tables();
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
  const auto rows = [](const Array& ids) {
    return ids.defined() ? ids.span<int64_t>() : std::span<const int64_t>();
  };
  gather_tables(attributes.node, rows(subgraph.nodes), threads, prefetch, batch.node_attrs);
  gather_tables(attributes.edge, rows(subgraph.edge_ids), threads, prefetch, batch.edge_attrs);
}

void BatchAssembly::gather_tables(const Tables& tables, std::span<const int64_t> rows, int threads,
                                  int64_t prefetch,
                                  std::vector<std::pair<std::string, Array>>& out) const {
  out.clear();
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
}

void BatchAssembly::sample_typed(const std::vector<HeteroSeeds>& groups, uint64_t seed,
                                 int64_t index, HeteroSampledSubgraph& out) const {
  thread_local HeteroSamplerScratch scratch;  // global -> local maps per node type, per thread
  typed_source->sample(groups, seed, static_cast<uint64_t>(index), out, scratch);
}

void BatchAssembly::fill_typed(const std::vector<HeteroSeeds>& groups, uint64_t seed, int64_t index,
                               int threads, int64_t prefetch, Batch& batch,
                               const std::function<void(HeteroSampledSubgraph&)>& edit) const {
  thread_local HeteroSampledSubgraph sub;  // one per worker thread, reused across its batches
  sample_typed(groups, seed, index, sub);
  if (edit) edit(sub);
  fill_typed(sub, threads, prefetch, batch);
}

void BatchAssembly::fill_typed(const HeteroSampledSubgraph& sub, int threads, int64_t prefetch,
                               Batch& batch) const {
  const auto table = [](const auto& lists, size_t t) -> const Tables& {
    static const Tables none;
    return t < lists.size() ? lists[t] : none;
  };
  set_typed_parts(sub, batch);
  for (size_t t = 0; t < sub.nodes.size(); ++t) {
    auto& attrs = batch.node_types[t].attrs;
    gather_tables(table(typed_attributes.node, t), sub.nodes[t], threads, prefetch, attrs);
    typed_source->gather_fields(static_cast<int>(t), sub.nodes[t], attrs);
  }
  for (size_t e = 0; e < sub.rows.size(); ++e) {
    gather_tables(table(typed_attributes.edge, e), sub.edge_ids[e], threads, prefetch,
                  batch.edge_types[e].attrs);
  }
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

void check_attributes(const TypedAttributes& attributes, const TypedBatchSource& source) {
  const auto check = [](const auto& lists, size_t types, const auto& name_of, const auto& rows_of,
                        const char* what) {
    VOLLEY_REQUIRE(lists.size() <= types, ValueError, "{} tables for {} {} types, the graph has {}",
                   what, lists.size(), what, types);
    for (size_t t = 0; t < lists.size(); ++t) {
      for (const auto& [name, store] : lists[t]) {
        VOLLEY_REQUIRE(store.defined() && store.num_rows() == rows_of(t) && !store.on_cuda(),
                       ValueError,
                       "{} attribute '{}' of type {} must be a host table of {} rows, "
                       "got {}",
                       what, name, name_of(t), rows_of(t),
                       store.defined() ? store.describe() : std::string("an empty store"));
      }
    }
  };
  const auto& node_types = source.node_types();
  const auto& edge_types = source.edge_types();
  check(
      attributes.node, node_types.size(), [&](size_t t) { return node_types[t].name; },
      [&](size_t t) { return node_types[t].num_nodes; }, "node");
  check(
      attributes.edge, edge_types.size(), [&](size_t e) { return edge_types[e].name(); },
      [&](size_t e) { return source.num_edges(static_cast<int>(e)); }, "edge");
}

}  // namespace volley::loader_internal

namespace volley {

void set_typed_parts(const HeteroSampledSubgraph& sub, Batch& batch) {
  batch.node_types.assign(sub.nodes.size(), {});
  for (size_t t = 0; t < sub.nodes.size(); ++t) {
    NodeTypeBatch& part = batch.node_types[t];
    part.nodes = Array::from_vector(sub.nodes[t]);
    part.nodes_per_hop = sub.nodes_per_hop[t];
    if (t < sub.batch.size()) part.batch_ids = Array::from_vector(sub.batch[t]);
  }
  batch.edge_types.assign(sub.rows.size(), {});
  for (size_t e = 0; e < sub.rows.size(); ++e) {
    EdgeTypeBatch& part = batch.edge_types[e];
    const auto count = static_cast<int64_t>(sub.rows[e].size());
    part.edge_index = Array::empty(DType::kInt64, {2, count});
    int64_t* edge_index = part.edge_index.data<int64_t>();
    std::copy(sub.cols[e].begin(), sub.cols[e].end(), edge_index);  // row 0: the neighbors
    std::copy(sub.rows[e].begin(), sub.rows[e].end(), edge_index + count);
    part.edge_ids = Array::from_vector(sub.edge_ids[e]);
    part.edges_per_hop = sub.edges_per_hop[e];
  }
}

void TypedBatchSource::gather_fields(int /*type*/, std::span<const int64_t> /*ids*/,
                                     std::vector<std::pair<std::string, Array>>& /*out*/) const {}

TypedSamplerSource::TypedSamplerSource(std::shared_ptr<HeteroNeighborSampler> sampler)
    : sampler_(std::move(sampler)) {
  VOLLEY_REQUIRE(sampler_ != nullptr, ValueError, "the typed loader needs a sampler, got none");
}

const std::vector<NodeTypeInfo>& TypedSamplerSource::node_types() const {
  return sampler_->node_types();
}

const std::vector<EdgeType>& TypedSamplerSource::edge_types() const {
  return sampler_->edge_types();
}

int64_t TypedSamplerSource::num_edges(int edge_type) const {
  return sampler_->num_edges(edge_type);
}

const NeighborSamplerOptions& TypedSamplerSource::options() const { return sampler_->options(); }

void TypedSamplerSource::sample(const std::vector<HeteroSeeds>& groups, uint64_t seed,
                                uint64_t batch_index, HeteroSampledSubgraph& out,
                                HeteroSamplerScratch& scratch) const {
  sampler_->sample_with_seed(groups, seed, batch_index, out, scratch);
}

}  // namespace volley
