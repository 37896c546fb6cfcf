// Connecting a client of either graph kind (internal/client_calls.h): the one description of what
// the servers serve (TypedServiceInfo, a homogeneous service as its one-type case) read from
// their Info answers, and the handshake that checks every server.
#include <algorithm>
#include <utility>

#include "volley/dist/internal/client_calls.h"

namespace volley::dist {

int TypedServiceInfo::node_type_index(std::string_view name) const {
  for (size_t t = 0; t < node_types.size(); ++t) {
    if (node_types[t].name == name) return static_cast<int>(t);
  }
  std::string known;
  for (const auto& type : node_types) known += (known.empty() ? "" : ", ") + type.name;
  throw ValueError(
      fmt::format("unknown node type {} (node types: {})", internal::quoted(name, 64), known));
}

namespace internal {
namespace {

// A node type's rows as `message` states them (an InfoReply for the one type of a homogeneous
// service, a NodeTypeInfo for a typed one's).
template <typename Message>
void read_rows(const Message& message, const std::string& address, NodeTypeService& out) {
  out.feature_dim = message.feature_dim();
  if (out.feature_dim > 0) out.feature_dtype = parse_dtype(message.feature_dtype(), address);
  if (!message.label_dtype().empty()) out.label_dtype = parse_dtype(message.label_dtype(), address);
  out.num_classes = message.num_classes();
  out.has_node_time = message.has_node_time();
}

// An edge type's counts as `message` states them (an InfoReply, an EdgeTypeInfo), likewise.
template <typename Message>
void read_edges(const Message& message, TypedServiceInfo& out) {
  out.num_edges.push_back(message.num_edges());
  out.has_weights.push_back(message.has_weights());
  out.has_edge_time.push_back(message.has_edge_time());
}

}  // namespace

TypedServiceInfo service_description(const rpc::InfoReply& reply, const std::string& address,
                                     bool typed) {
  VOLLEY_REQUIRE(!typed || reply.heterogeneous(), ValueError,
                 "{} serves part {} of the homogeneous partitioned dataset '{}': connect with "
                 "DistGraph (Python: DistNeighborLoader with plain input_nodes)",
                 address, reply.part(), quoted(reply.dataset_name(), 64));
  VOLLEY_REQUIRE(typed || !reply.heterogeneous(), ValueError,
                 "{} serves part {} of the heterogeneous partitioned dataset '{}': connect with "
                 "DistHeteroGraph (Python: DistNeighborLoader with input_nodes=(node type, ids))",
                 address, reply.part(), quoted(reply.dataset_name(), 64));
  TypedServiceInfo info;
  info.dataset_name = reply.dataset_name();
  info.fingerprint = reply.fingerprint();
  if (!typed) {  // the one-type case: the reply's own fields describe its node and edge type
    NodeTypeService& type = info.node_types.emplace_back();
    type.book = PartitionBook(std::vector<int64_t>(reply.offsets().begin(), reply.offsets().end()));
    read_rows(reply, address, type);
    info.edge_types.push_back({"", "", ""});
    read_edges(reply, info);
  }
  for (const rpc::NodeTypeInfo& type : reply.node_types()) {
    NodeTypeService& out = info.node_types.emplace_back();
    out.name = type.name();
    out.book = PartitionBook(std::vector<int64_t>(type.offsets().begin(), type.offsets().end()));
    VOLLEY_REQUIRE(out.book.num_parts() == reply.num_parts(), ValueError,
                   "{}: node type '{}' has a book of {} parts, the dataset {}", address, out.name,
                   out.book.num_parts(), reply.num_parts());
    read_rows(type, address, out);
  }
  for (const rpc::EdgeTypeInfo& type : reply.edge_types()) {
    info.edge_types.push_back({type.src(), type.relation(), type.dst()});
    read_edges(type, info);
    info.node_type_index(type.src());  // both ends must be known node types
    info.node_type_index(type.dst());
  }
  VOLLEY_REQUIRE(
      reply.orientation().empty() || reply.orientation() == "in" || reply.orientation() == "out",
      ValueError, "server {} reports an unknown orientation '{}'", address,
      quoted(reply.orientation(), 64));
  info.orientation = reply.orientation() == "out" ? Orientation::kOut : Orientation::kIn;
  return info;
}

ServiceInfo flat_service_info(const TypedServiceInfo& service) {
  const NodeTypeService& type = service.node_types.at(0);
  ServiceInfo info;
  info.dataset_name = service.dataset_name;
  info.fingerprint = service.fingerprint;
  info.book = type.book;
  info.num_edges = service.num_edges.at(0);
  info.feature_dim = type.feature_dim;
  info.feature_dtype = type.feature_dtype;
  info.label_dtype = type.label_dtype;
  info.num_classes = type.num_classes;
  info.has_weights = service.has_weights.at(0);
  info.orientation = service.orientation;
  info.has_edge_time = service.has_edge_time.at(0);
  info.has_node_time = type.has_node_time;
  return info;
}

void check_local_parts(int64_t local_parts, int64_t parts) {
  VOLLEY_REQUIRE(local_parts == parts, ValueError,
                 "the local partition belongs to a dataset of {} parts, but {} addresses were "
                 "given; list one per part",
                 local_parts, parts);
}

void connect_service(ServiceClient& state, bool typed) {
  const auto parts = static_cast<size_t>(state.num_parts());
  state.servers = connect_parts(state.addresses, state.options, state.local_part);
  state.limits.resize(parts);
  state.max_degree.resize(parts);
  const auto calls = info_from_all(state.servers, state.options);
  const std::string local = state.local_part >= 0 ? state.service.fingerprint : "";
  check_parts(
      calls, state.servers, state.options, local, local.empty() ? "" : "the local partition",
      [&](int64_t p, const rpc::InfoReply& reply) {
        const auto part = static_cast<size_t>(p);
        state.limits[part] = part_limits(reply, state.options);
        if (!typed) state.max_degree[part] = {state.limits[part].max_degree};
        for (const rpc::EdgeTypeInfo& type : reply.edge_types()) {
          state.max_degree[part].push_back(type.max_degree());
        }
        TypedServiceInfo described = service_description(reply, state.addresses[part], typed);
        if (state.service.fingerprint.empty()) {
          state.service = std::move(described);
          return;
        }
        auto& counts = state.service.num_edges;
        for (size_t e = 0; e < std::min(counts.size(), described.num_edges.size()); ++e) {
          if (counts[e] == 0) counts[e] = described.num_edges[e];
        }
      });
}

}  // namespace internal
}  // namespace volley::dist
