// DistHeteroGraph (hetero_client.h): connecting to the servers of a heterogeneous partitioned
// dataset (the local part, in worker mode, held in-process with its times) and what they serve.
#include "volley/dist/hetero_client.h"

#include <algorithm>
#include <cstring>
#include <latch>

#include "volley/dist/internal/hetero_client_state.h"
#include "volley/dist/internal/wire.h"

namespace volley::dist {

int HeteroServiceInfo::node_type_index(std::string_view name) const {
  for (size_t t = 0; t < node_types.size(); ++t) {
    if (node_types[t].name == name) return static_cast<int>(t);
  }
  std::string known;
  for (const auto& type : node_types) known += (known.empty() ? "" : ", ") + type.name;
  throw ValueError(
      fmt::format("unknown node type {} (node types: {})", internal::quoted(name, 64), known));
}

namespace internal {

// The service an Info answer of a heterogeneous server describes (also ServerClientLoader).
HeteroServiceInfo hetero_service_info(const rpc::InfoReply& reply, const std::string& address) {
  VOLLEY_REQUIRE(reply.heterogeneous(), ValueError,
                 "{} serves part {} of the homogeneous partitioned dataset '{}': connect with "
                 "DistGraph (Python: DistNeighborLoader with plain input_nodes)",
                 address, reply.part(), internal::quoted(reply.dataset_name(), 64));
  HeteroServiceInfo info;
  info.dataset_name = reply.dataset_name();
  info.fingerprint = reply.fingerprint();
  for (const rpc::NodeTypeInfo& type : reply.node_types()) {
    HeteroNodeTypeService& out = info.node_types.emplace_back();
    out.name = type.name();
    out.book = PartitionBook(std::vector<int64_t>(type.offsets().begin(), type.offsets().end()));
    VOLLEY_REQUIRE(out.book.num_parts() == reply.num_parts(), ValueError,
                   "{}: node type '{}' has a book of {} parts, the dataset {}", address, out.name,
                   out.book.num_parts(), reply.num_parts());
    out.feature_dim = type.feature_dim();
    if (out.feature_dim > 0)
      out.feature_dtype = internal::parse_dtype(type.feature_dtype(), address);
    if (!type.label_dtype().empty())
      out.label_dtype = internal::parse_dtype(type.label_dtype(), address);
    out.num_classes = type.num_classes();
    out.has_node_time = type.has_node_time();
  }
  for (const rpc::EdgeTypeInfo& type : reply.edge_types()) {
    info.edge_types.push_back({type.src(), type.relation(), type.dst()});
    info.num_edges.push_back(type.num_edges());
    info.has_weights.push_back(type.has_weights());
    info.has_edge_time.push_back(type.has_edge_time());
    info.node_type_index(type.src());  // both ends must be known node types
    info.node_type_index(type.dst());
  }
  return info;
}

}  // namespace internal

namespace {

// What the local partition (worker mode) describes, as a server's Info would.
HeteroServiceInfo local_service_info(const HeteroPartition& local,
                                     const internal::HeteroHopTimes& times,
                                     std::string fingerprint) {
  const HeteroPartitionManifest& manifest = local.manifest;
  HeteroServiceInfo info;
  info.dataset_name = manifest.name;
  info.fingerprint = std::move(fingerprint);
  for (size_t t = 0; t < manifest.node_types.size(); ++t) {
    HeteroNodeTypeService& out = info.node_types.emplace_back();
    const NodeTypeData& data = local.data.node_data[t];
    out.name = manifest.node_types[t].name;
    out.book = manifest.books[t];
    out.feature_dim = data.features ? data.features->dim(1) : 0;
    if (data.features) out.feature_dtype = data.features->dtype();
    if (data.labels) out.label_dtype = data.labels->dtype();
    out.num_classes = data.num_classes;
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

// Info from every remote server at once (waiting for servers still starting), checked against
// each other and the local part.
void handshake(DistHeteroGraph::State& state) {
  const auto calls = internal::info_from_all(state.servers, state.options);
  const bool local = state.local_part >= 0;
  internal::check_parts(
      calls, state.servers, state.options, local ? state.info.fingerprint : "",
      local ? "the local partition" : "", [&](int64_t p, const rpc::InfoReply& reply) {
        const auto part = static_cast<size_t>(p);
        if (state.info.fingerprint.empty()) {
          state.info = internal::hetero_service_info(reply, state.addresses[part]);
        } else {
          internal::hetero_service_info(reply, state.addresses[part]);
        }
        state.limits[part] = internal::part_limits(reply, state.options);
        for (const rpc::EdgeTypeInfo& type : reply.edge_types()) {
          state.max_degree[part].push_back(type.max_degree());
        }
      });
}

}  // namespace

std::shared_ptr<const DistHeteroGraph> DistHeteroGraph::connect(std::vector<std::string> addresses,
                                                                ClientOptions options) {
  return connect(std::move(addresses), std::move(options), nullptr, "");
}

std::shared_ptr<const DistHeteroGraph> DistHeteroGraph::connect(std::vector<std::string> addresses,
                                                                ClientOptions options,
                                                                const std::string& local_directory,
                                                                int64_t local_part) {
  auto local =
      std::make_shared<const HeteroPartition>(load_hetero_partition(local_directory, local_part));
  return connect(std::move(addresses), std::move(options), std::move(local),
                 dataset_fingerprint(local_directory));
}

std::shared_ptr<const DistHeteroGraph> DistHeteroGraph::connect(
    std::vector<std::string> addresses, ClientOptions options,
    std::shared_ptr<const HeteroPartition> local, std::string fingerprint) {
  internal::check_client_options(addresses, options);
  auto state = std::make_unique<State>();
  state->options = std::move(options);
  state->addresses = std::move(addresses);
  const auto parts = static_cast<size_t>(state->num_parts());
  if (local) {
    VOLLEY_REQUIRE(local->manifest.num_parts == state->num_parts(), ValueError,
                   "the local partition belongs to a dataset of {} parts, but {} addresses were "
                   "given; list one per part",
                   local->manifest.num_parts, parts);
    state->local_part = local->part;
    state->local_times = std::make_unique<internal::HeteroHopTimes>(local);
    state->info = local_service_info(*local, *state->local_times, std::move(fingerprint));
    state->local = std::move(local);
  }
  state->limits.resize(parts);
  state->max_degree.resize(parts);
  state->servers = internal::connect_parts(state->addresses, state->options, state->local_part);
  handshake(*state);
  return std::shared_ptr<const DistHeteroGraph>(new DistHeteroGraph(std::move(state)));
}

DistHeteroGraph::DistHeteroGraph(std::unique_ptr<State> state) : state_(std::move(state)) {}
DistHeteroGraph::~DistHeteroGraph() = default;
const HeteroServiceInfo& DistHeteroGraph::info() const { return state_->info; }
const std::vector<std::string>& DistHeteroGraph::addresses() const { return state_->addresses; }
int64_t DistHeteroGraph::num_parts() const { return state_->num_parts(); }
int64_t DistHeteroGraph::local_part() const { return state_->local_part; }

}  // namespace volley::dist
