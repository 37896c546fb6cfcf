// DistHeteroGraph (hetero_client.h): connecting through the connect both clients share
// (internal/client_calls.h, connect_service), the local part, in worker mode, held in-process
// with its times and rows; sample: the seeds checked and timed, then the distributed sampler of
// both clients (internal/service_view.h) over the typed service; its row gathers (one node
// type's, through the gather both clients share); and DistHeteroSource, the typed loaders' source.
#include "volley/dist/hetero_client.h"

#include <cstdint>
#include <memory>
#include <vector>

#include "volley/dist/internal/client_calls.h"
#include "volley/dist/internal/hetero_times.h"
#include "volley/dist/internal/service_view.h"
#include "volley/dist/internal/wire.h"
#include "volley/feature/gather.h"

namespace volley::dist {

// The state of either client (client_calls.h: its typed service, limits, longest rows, local
// rows), and in worker mode the local part with that part's times.
struct DistHeteroGraph::State : internal::ServiceClient {
  std::shared_ptr<const HeteroPartition> local;  // worker mode: sampled and gathered in-process
  std::unique_ptr<internal::HeteroHopTimes> local_times;  // the local part's directory's
};

// --- connecting ----------------------------------------------------------------------------

namespace {

// What the local partition (worker mode) describes, as a server's Info would.
TypedServiceInfo local_typed_service(const HeteroPartition& local,
                                     const internal::HeteroHopTimes& times,
                                     std::string fingerprint) {
  const HeteroPartitionManifest& manifest = local.manifest;
  TypedServiceInfo info;
  info.dataset_name = manifest.name;
  info.fingerprint = std::move(fingerprint);
  for (size_t t = 0; t < manifest.node_types.size(); ++t) {
    NodeTypeService& out = info.node_types.emplace_back();
    out.name = manifest.node_types[t].name;
    out.book = manifest.books[t];
    internal::describe_rows(local.data.node_data[t], out);
    out.has_node_time = times.node_time(t).has_value();
  }
  info.edge_types = manifest.edge_types;
  info.num_edges = manifest.num_edges;
  for (int e = 0; e < local.data.graph.num_edge_types(); ++e) {
    info.has_weights.push_back(local.data.graph.edges(e).has_weights());
    info.has_edge_time.push_back(times.edge_time(static_cast<size_t>(e)).has_value());
  }
  return info;
}

// Rows of `kind` of `ids` (node type `type`, owned by the local part) into `rows`, as its server
// answers GetRows: node times from the directory, by global id.
void local_typed_rows(const DistHeteroGraph::State& state, int type, rpc::RowsRequest::Kind kind,
                      std::span<const int64_t> ids, DType out_dtype, std::byte* rows) {
  const auto t = static_cast<size_t>(type);
  if (kind == rpc::RowsRequest::NODE_TIME) {
    const auto& times = state.local_times->node_time(t);
    VOLLEY_REQUIRE(times.has_value(), ValueError,
                   "node type '{}' has no node times in the local part's directory",
                   state.service.node_types[t].name);
    const int64_t* time = times->data<int64_t>();
    auto* out = reinterpret_cast<int64_t*>(rows);
    for (size_t i = 0; i < ids.size(); ++i) out[i] = time[ids[i]];
    return;
  }
  const int64_t first = state.service.node_types[t].book.begin(state.local_part);
  std::vector<int64_t> local_ids(ids.begin(), ids.end());
  for (int64_t& id : local_ids) id -= first;
  const NodeTypeData& data = state.local->data.node_data[t];
  gather_rows(*(kind == rpc::RowsRequest::FEATURES ? data.features : data.labels), local_ids,
              out_dtype, rows);
}

}  // namespace

std::shared_ptr<const DistHeteroGraph> DistHeteroGraph::connect(std::vector<std::string> addresses,
                                                                ClientOptions options,
                                                                const std::string& local_directory,
                                                                std::optional<int64_t> local_part) {
  return internal::connect_from_directory<DistHeteroGraph>(
      std::move(addresses), std::move(options), local_directory, local_part, load_hetero_partition);
}

std::shared_ptr<const DistHeteroGraph> DistHeteroGraph::connect(
    std::vector<std::string> addresses, ClientOptions options,
    std::shared_ptr<const HeteroPartition> local, std::string fingerprint) {
  internal::check_client_options(addresses, options);
  auto state = std::make_unique<State>();
  state->options = std::move(options);
  state->addresses = std::move(addresses);
  if (local) {
    internal::check_local_parts(local->manifest.num_parts, state->num_parts());
    state->local_part = local->part;
    state->local_times = std::make_unique<internal::HeteroHopTimes>(local);
    state->service = local_typed_service(*local, *state->local_times, std::move(fingerprint));
    state->local = std::move(local);
    state->local_rows = [raw = state.get()](int type, rpc::RowsRequest::Kind kind,
                                            std::span<const int64_t> ids, DType out_dtype,
                                            std::byte* rows) {
      local_typed_rows(*raw, type, kind, ids, out_dtype, rows);
    };
  }
  internal::connect_service(*state, /*typed=*/true);
  return std::shared_ptr<const DistHeteroGraph>(new DistHeteroGraph(std::move(state)));
}

DistHeteroGraph::DistHeteroGraph(std::unique_ptr<State> state) : state_(std::move(state)) {}
DistHeteroGraph::~DistHeteroGraph() = default;
const HeteroServiceInfo& DistHeteroGraph::info() const { return state_->service; }
const std::vector<std::string>& DistHeteroGraph::addresses() const { return state_->addresses; }
int64_t DistHeteroGraph::num_parts() const { return state_->num_parts(); }
int64_t DistHeteroGraph::local_part() const { return state_->local_part; }

// --- sampling ------------------------------------------------------------------------------

namespace {

// The time of each seed of `group` (node type `type`) onto `tree_times`: its given times, else
// (by node time) the seeds' own node times, from the local part's directory or their owners.
void add_seed_times(const DistHeteroGraph::State& state, const HeteroSamplerOptions& options,
                    const HeteroSeeds& group, size_t type, std::vector<int64_t>& tree_times) {
  if (!group.times.empty()) {
    VOLLEY_REQUIRE(group.times.size() == group.ids.size(), ValueError,
                   "seeds of node type '{}': {} times for {} seeds (one time per seed)",
                   group.node_type, group.times.size(), group.ids.size());
    tree_times.insert(tree_times.end(), group.times.begin(), group.times.end());
    return;
  }
  if (group.ids.empty()) return;
  const bool by_node = options.time_source == TimeSource::kNode;
  VOLLEY_REQUIRE(by_node && state.service.node_types[type].has_node_time, ValueError,
                 "seeds of node type '{}' need a time each (seed times / input_time): {}",
                 group.node_type,
                 by_node ? "the node type has no node time to default to"
                         : "sampling by edge time has no node time to default to");
  const size_t before = tree_times.size();
  tree_times.resize(before + group.ids.size());
  if (state.local_times && state.local_times->node_time(type)) {  // every id's, in-process
    const int64_t* own = state.local_times->node_time(type)->data<int64_t>();
    for (size_t i = 0; i < group.ids.size(); ++i) tree_times[before + i] = own[group.ids[i]];
    return;
  }
  internal::gather_service_rows(state, static_cast<int>(type), rpc::RowsRequest::NODE_TIME,
                                group.ids, DType::kInt64, sizeof(int64_t),
                                reinterpret_cast<std::byte*>(tree_times.data() + before));
}

// The typed service (internal/service_view.h), its local part (worker mode) sampled with
// `options` as the servers sample it.
internal::ServiceView service_view(const DistHeteroGraph::State& state,
                                   const HeteroSamplerOptions& options, uint64_t batch_index) {
  internal::ServiceView service = internal::view_of(state);
  service.sample_local = [&state, &options, batch_index](
                             size_t e, int hop, int64_t fanout, std::span<const int64_t> targets,
                             std::span<const int64_t> times, HopSample& out) {
    thread_local SamplerScratch scratch;
    const internal::TypedHop typed{.edge_type = e,
                                   .targets = targets,
                                   .hop = hop,
                                   .fanout = fanout,
                                   .replace = options.replace,
                                   .weighted = options.weighted,
                                   .seed = options.seed,
                                   .batch = batch_index,
                                   .time_source = options.time_source,
                                   .temporal_strategy = options.temporal_strategy,
                                   .target_times = times};
    internal::sample_typed_hop(*state.local, *state.local_times, typed, out, &scratch);
  };
  return service;
}

}  // namespace

HeteroSampledSubgraph DistHeteroGraph::sample(const std::vector<HeteroSeeds>& seeds,
                                              const HeteroSamplerOptions& options,
                                              uint64_t batch_index) const {
  VOLLEY_REQUIRE(options.time_source == TimeSource::kNone || !options.weighted, ValueError,
                 "temporal sampling does not support weighted sampling yet");
  const State& state = *state_;
  const auto fanouts = resolve_hetero_fanouts(state.service.edge_types, options);
  const bool temporal = options.time_source != TimeSource::kNone;
  const size_t types = state.service.node_types.size();
  // The seeds, checked as HeteroNeighborSampler checks them, and their times (temporal).
  std::vector<TypedSeeds> groups;
  std::vector<bool> given(types, false);
  std::vector<int64_t> tree_times;
  for (const HeteroSeeds& group : seeds) {
    const auto type = static_cast<size_t>(state.service.node_type_index(group.node_type));
    VOLLEY_REQUIRE(!given[type], ValueError, "seeds of node type '{}' are given twice",
                   group.node_type);
    given[type] = true;
    const int64_t n = state.service.node_types[type].book.num_nodes();
    for (size_t i = 0; i < group.ids.size(); ++i) {
      VOLLEY_REQUIRE(group.ids[i] >= 0 && group.ids[i] < n, IndexError,
                     "seed id {} of node type '{}' at position {} out of range for {} nodes",
                     group.ids[i], group.node_type, i, n);
    }
    groups.push_back({.type = static_cast<int>(type), .ids = group.ids, .name = group.node_type});
    if (temporal) add_seed_times(state, options, group, type, tree_times);
  }
  HeteroSampledSubgraph out;
  TypedLists lists;
  point_at(out, types, state.service.edge_types.size(), options.disjoint || temporal, lists);
  internal::sample_across(service_view(state, options, batch_index), groups, fanouts, options,
                          batch_index, tree_times, lists);
  return out;
}

// --- rows and the typed loaders' source -------------------------------------------------------

Array DistHeteroGraph::gather_features(std::string_view node_type, std::span<const int64_t> ids,
                                       DType out_dtype) const {
  const int type = state_->service.node_type_index(node_type);
  const HeteroNodeTypeService& info = state_->service.node_types[static_cast<size_t>(type)];
  VOLLEY_REQUIRE(info.feature_dim > 0, ValueError, "node type '{}' has no features", info.name);
  Array out = Array::empty(out_dtype, {static_cast<int64_t>(ids.size()), info.feature_dim});
  internal::gather_service_rows(*state_, type, rpc::RowsRequest::FEATURES, ids, out_dtype,
                                static_cast<size_t>(info.feature_dim) * dtype_size(out_dtype),
                                out.raw_data());
  return out;
}

Array DistHeteroGraph::gather_labels(std::string_view node_type,
                                     std::span<const int64_t> ids) const {
  const int type = state_->service.node_type_index(node_type);
  const HeteroNodeTypeService& info = state_->service.node_types[static_cast<size_t>(type)];
  VOLLEY_REQUIRE(info.label_dtype.has_value(), ValueError, "node type '{}' has no labels",
                 info.name);
  Array out = Array::empty(DType::kInt64, {static_cast<int64_t>(ids.size())});
  internal::gather_service_rows(*state_, type, rpc::RowsRequest::LABELS, ids, DType::kInt64,
                                sizeof(int64_t), out.raw_data());
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
