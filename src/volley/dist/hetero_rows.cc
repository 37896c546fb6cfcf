// DistHeteroGraph's view of its service (internal/service_view.h: node types, edge types, the
// local part's rows), its row gathers (features, labels and node times of one node type, through
// the gather both clients share) and DistHeteroSource, the typed loaders' source.
#include <vector>

#include "volley/dist/internal/hetero_client_state.h"
#include "volley/dist/internal/service_view.h"
#include "volley/dist/internal/wire.h"
#include "volley/feature/gather.h"

namespace volley::dist {

namespace internal {

ServiceView view_of(const DistHeteroGraph::State& state) {
  ServiceView service{state.options, state.addresses, state.servers, state.limits,
                      state.info.fingerprint};
  service.local_part = state.local_part;
  for (const HeteroNodeTypeService& type : state.info.node_types) {
    service.books.push_back(&type.book);
    service.type_names.push_back(type.name);
  }
  for (const EdgeType& type : state.info.edge_types) {
    service.edges.push_back(
        {state.info.node_type_index(type.src), state.info.node_type_index(type.dst), type.name()});
  }
  service.max_degree = [&state](size_t part, size_t e) {
    const auto& longest = state.max_degree[part];
    return e < longest.size() ? longest[e] : int64_t{-1};
  };
  service.local_rows = [&state](int type, rpc::RowsRequest::Kind kind, std::span<const int64_t> ids,
                                DType out_dtype, std::byte* rows) {
    const auto t = static_cast<size_t>(type);
    const int64_t first = state.info.node_types[t].book.begin(state.local_part);
    std::vector<int64_t> local_ids(ids.begin(), ids.end());
    for (int64_t& id : local_ids) id -= first;
    if (kind == rpc::RowsRequest::NODE_TIME) {  // the directory's times, by global id
      const auto& times = state.local_times->node_time(t);
      VOLLEY_REQUIRE(times.has_value(), ValueError,
                     "node type '{}' has no node times in the local part's directory",
                     state.info.node_types[t].name);
      const int64_t* time = times->data<int64_t>();
      auto* out = reinterpret_cast<int64_t*>(rows);
      for (size_t i = 0; i < ids.size(); ++i) out[i] = time[ids[i]];
      return;
    }
    const NodeTypeData& data = state.local->data.node_data[t];
    gather_rows(*(kind == rpc::RowsRequest::FEATURES ? data.features : data.labels), local_ids,
                out_dtype, rows);
  };
  return service;
}

void gather_typed_rows(const DistHeteroGraph::State& state, int type, rpc::RowsRequest::Kind kind,
                       std::span<const int64_t> ids, DType out_dtype, size_t row_bytes,
                       std::byte* out) {
  gather_across(view_of(state), type, kind, ids, out_dtype, row_bytes, out);
}

}  // namespace internal

using internal::gather_typed_rows;

Array DistHeteroGraph::gather_features(std::string_view node_type, std::span<const int64_t> ids,
                                       DType out_dtype) const {
  const int type = state_->info.node_type_index(node_type);
  const HeteroNodeTypeService& info = state_->info.node_types[static_cast<size_t>(type)];
  VOLLEY_REQUIRE(info.feature_dim > 0, ValueError, "node type '{}' has no features", info.name);
  Array out = Array::empty(out_dtype, {static_cast<int64_t>(ids.size()), info.feature_dim});
  gather_typed_rows(*state_, type, rpc::RowsRequest::FEATURES, ids, out_dtype,
                    static_cast<size_t>(info.feature_dim) * dtype_size(out_dtype), out.raw_data());
  return out;
}

Array DistHeteroGraph::gather_labels(std::string_view node_type,
                                     std::span<const int64_t> ids) const {
  const int type = state_->info.node_type_index(node_type);
  const HeteroNodeTypeService& info = state_->info.node_types[static_cast<size_t>(type)];
  VOLLEY_REQUIRE(info.label_dtype.has_value(), ValueError, "node type '{}' has no labels",
                 info.name);
  Array out = Array::empty(DType::kInt64, {static_cast<int64_t>(ids.size())});
  gather_typed_rows(*state_, type, rpc::RowsRequest::LABELS, ids, DType::kInt64, sizeof(int64_t),
                    out.raw_data());
  return out;
}

DistHeteroSource::DistHeteroSource(std::shared_ptr<const DistHeteroGraph> graph,
                                   HeteroSamplerOptions options, std::optional<DType> feature_dtype,
                                   bool features, bool labels)
    : graph_(std::move(graph)),
      options_(std::move(options)),
      feature_dtype_(feature_dtype),
      features_(features),
      labels_(labels) {
  VOLLEY_REQUIRE(graph_ != nullptr, ValueError, "the typed loader needs a source, got none");
  const HeteroServiceInfo& info = graph_->info();
  resolve_hetero_fanouts(info.edge_types, options_);  // ValueError for fanouts it cannot serve
  VOLLEY_REQUIRE(options_.time_source == TimeSource::kNone || !options_.weighted, ValueError,
                 "temporal sampling does not support weighted sampling yet");
  for (const HeteroNodeTypeService& type : info.node_types) {
    node_types_.push_back({type.name, type.book.num_nodes()});
  }
}

const std::vector<EdgeType>& DistHeteroSource::edge_types() const {
  return graph_->info().edge_types;
}

int64_t DistHeteroSource::num_edges(int edge_type) const {
  return graph_->info().num_edges.at(static_cast<size_t>(edge_type));
}

void DistHeteroSource::sample(const std::vector<HeteroSeeds>& groups, uint64_t seed,
                              uint64_t batch_index, HeteroSampledSubgraph& out,
                              HeteroSamplerScratch& /*scratch*/) const {
  HeteroSamplerOptions options = options_;
  options.seed = seed;
  out = graph_->sample(groups, options, batch_index);
}

void DistHeteroSource::gather_fields(int type, std::span<const int64_t> ids,
                                     std::vector<std::pair<std::string, Array>>& out) const {
  const HeteroNodeTypeService& info = graph_->info().node_types.at(static_cast<size_t>(type));
  if (features_ && info.feature_dim > 0) {
    out.emplace_back(
        "x", graph_->gather_features(info.name, ids, feature_dtype_.value_or(info.feature_dtype)));
  }
  if (labels_ && info.label_dtype) out.emplace_back("y", graph_->gather_labels(info.name, ids));
}

}  // namespace volley::dist
