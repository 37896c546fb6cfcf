// `volley serve`'s engine: one partition of either kind behind a gRPC service (see server.h).
// The unary calls; the server-client streams are in server_streams.cc.
#include "volley/dist/server.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <mutex>

#include "volley/core/version.h"
#include "volley/dist/internal/server_requests.h"
#include "volley/dist/internal/server_state.h"
#include "volley/dist/internal/server_support.h"
#include "volley/dist/internal/wire.h"
#include "volley/feature/gather.h"
#include "volley/sampling/negative_sampler.h"

namespace volley::dist {

namespace rpc = ::volley::rpc;
using internal::kSaturated;
using internal::pack;

namespace {

grpc::Status refuse(grpc::StatusCode code, std::string message) {
  return grpc::Status(code, std::move(message));
}

int64_t largest_degree(const Csr& csr) {
  int64_t largest = 0;
  for (int64_t row = 0; row < csr.num_nodes(); ++row) largest = std::max(largest, csr.degree(row));
  return largest;
}

}  // namespace

// --- the partition as one view ----------------------------------------------------------------

void Server::State::load(const std::string& path, int64_t part, ServerOptions& server_options) {
  directory = path;
  served_part = part;
  fingerprint = dataset_fingerprint(path);
  if (is_hetero_partitioned_directory(path)) {
    typed = std::make_shared<const HeteroPartition>(load_hetero_partition(path, part));
    internal::prepare_server_options(server_options, part, typed->manifest.num_parts);
    dataset_name = typed->manifest.name;
    times = std::make_unique<internal::HeteroHopTimes>(typed);
    const HeteroGraph& graph = typed->data.graph;
    for (int t = 0; t < graph.num_node_types(); ++t) {
      const NodeTypeInfo& info = graph.node_types()[static_cast<size_t>(t)];
      const NodeTypeData& data = typed->data.node_data[static_cast<size_t>(t)];
      types.push_back({info.name, typed->first_node(info.name), info.num_nodes, &data.features,
                       &data.labels, &times->node_time(static_cast<size_t>(t)), data.num_classes});
    }
    for (int e = 0; e < graph.num_edge_types(); ++e) {
      const EdgeType& type = graph.edge_types()[static_cast<size_t>(e)];
      edges.push_back(
          {&graph.edges(e), graph.node_type_index(type.dst), largest_degree(graph.edges(e))});
    }
    return;
  }
  const PartitionManifest manifest = read_partition_manifest(path);
  VOLLEY_REQUIRE(part >= 0 && part < manifest.book.num_parts(), IndexError,
                 "part {} out of range: '{}' has {} parts", part, path, manifest.book.num_parts());
  internal::prepare_server_options(server_options, part, manifest.book.num_parts());
  partition = std::make_shared<const Partition>(load_partition(path, part));
  dataset_name = manifest.name;
  num_edges_total = manifest.num_edges;
  const Dataset& data = partition->data;
  types.push_back({"", partition->first_node(), data.graph.num_nodes(), &data.features,
                   &data.labels, &partition->node_time, data.num_classes});
  edges.push_back({&data.graph, 0, largest_degree(data.graph)});
}

internal::OwnedRange Server::State::owned(int type) const {
  const internal::ServedType& served = types[static_cast<size_t>(type)];
  return {served_part, served.first, served.rows, options.limits.max_ids_per_call};
}

grpc::Status Server::State::node_type(const std::string& name, int& type) const {
  type = 0;
  if (!typed) {
    if (name.empty()) return grpc::Status::OK;
    return refuse(grpc::StatusCode::INVALID_ARGUMENT,
                  fmt::format("part {}: node type {} named, but this partition is homogeneous "
                              "(leave node_type empty)",
                              served_part, internal::quoted(name, 64)));
  }
  type = typed->data.graph.find_node_type(name);
  if (type >= 0) return grpc::Status::OK;
  return refuse(
      grpc::StatusCode::INVALID_ARGUMENT,
      fmt::format("part {}: unknown node type {} (this heterogeneous partition has "
                  "node types: {}; RowsRequest.node_type names one)",
                  served_part, internal::quoted(name), typed->data.graph.node_type_list()));
}

grpc::Status Server::State::edge_type(const std::string& name, int& index) const {
  index = 0;
  if (!typed) return internal::untyped_hop(name, served_part);
  const HeteroGraph& graph = typed->data.graph;
  if (name.empty()) {
    return refuse(grpc::StatusCode::INVALID_ARGUMENT,
                  fmt::format("part {}: this server serves a heterogeneous partition: a "
                              "SampleHop must name its edge type (one of: {})",
                              served_part, graph.edge_type_list()));
  }
  try {
    index = graph.find_edge_type(EdgeType::from_name(name));
  } catch (const Error&) {
    index = -1;  // not "src__relation__dst"
  }
  if (index >= 0) return grpc::Status::OK;
  return refuse(grpc::StatusCode::INVALID_ARGUMENT,
                fmt::format("part {}: unknown edge type {} (edge types: {})", served_part,
                            internal::quoted(name), graph.edge_type_list()));
}

grpc::Status Server::State::owned_ids(int type, const std::string& bytes, std::vector<int64_t>& ids,
                                      const char* field) const {
  grpc::Status status = internal::owned_ids(owned(type), bytes, ids, field);
  if (status.error_code() != grpc::StatusCode::OUT_OF_RANGE || !typed) return status;
  return refuse(status.error_code(),
                fmt::format("node type '{}': {}", types[static_cast<size_t>(type)].name,
                            status.error_message()));
}

// --- Info, Health ---------------------------------------------------------------------------

grpc::Status Server::State::Info(grpc::ServerContext* context, const rpc::InfoRequest*,
                                 rpc::InfoReply* reply) {
  return serve(context, [&] {
    // Answered whatever protocol the client speaks, so it can say what does not match.
    reply->set_protocol(kProtocolVersion);
    reply->set_volley_version(volley::kVersion);
    reply->set_dataset_name(dataset_name);
    reply->set_fingerprint(fingerprint);
    reply->set_part(served_part);
    reply->set_authenticated(!options.token.empty());
    reply->set_can_sample_epochs(!options.peers.empty());
    reply->set_max_request_bytes(options.limits.max_request_bytes);
    reply->set_max_reply_bytes(options.limits.max_reply_bytes);
    reply->set_max_ids_per_call(options.limits.max_ids_per_call);
    if (typed) {
      fill_typed_info(*reply);
    } else {
      fill_info(*reply);
    }
    return grpc::Status::OK;
  });
}

void Server::State::fill_info(rpc::InfoReply& reply) const {
  const Dataset& data = partition->data;
  reply.set_num_parts(partition->book.num_parts());
  for (int64_t offset : partition->book.offsets()) reply.add_offsets(offset);
  reply.set_num_edges(num_edges_total);
  reply.set_feature_dim(data.features ? data.features->dim(1) : 0);
  if (data.features) reply.set_feature_dtype(std::string(dtype_name(data.features->dtype())));
  if (data.labels) reply.set_label_dtype(std::string(dtype_name(data.labels->dtype())));
  reply.set_num_classes(data.num_classes);
  reply.set_has_weights(data.graph.has_weights());
  reply.set_max_degree(edges[0].max_degree);
  reply.set_orientation(std::string(orientation_name(data.graph.orientation())));
  reply.set_has_edge_time(data.graph.has_edge_time());
  reply.set_has_node_time(partition->node_time.has_value());
}

void Server::State::fill_typed_info(rpc::InfoReply& reply) const {
  const HeteroPartitionManifest& manifest = typed->manifest;
  reply.set_num_parts(manifest.num_parts);
  reply.set_heterogeneous(true);
  for (size_t t = 0; t < manifest.node_types.size(); ++t) {
    rpc::NodeTypeInfo* info = reply.add_node_types();
    info->set_name(manifest.node_types[t].name);
    for (const int64_t offset : manifest.books[t].offsets()) info->add_offsets(offset);
    const internal::ServedType& served = types[t];
    info->set_feature_dim(*served.features ? (*served.features)->dim(1) : 0);
    if (*served.features) {
      info->set_feature_dtype(std::string(dtype_name((*served.features)->dtype())));
    }
    if (*served.labels) info->set_label_dtype(std::string(dtype_name((*served.labels)->dtype())));
    info->set_num_classes(served.num_classes);
    info->set_has_node_time(served.node_time->has_value());
  }
  for (size_t e = 0; e < manifest.edge_types.size(); ++e) {
    rpc::EdgeTypeInfo* info = reply.add_edge_types();
    info->set_src(manifest.edge_types[e].src);
    info->set_relation(manifest.edge_types[e].relation);
    info->set_dst(manifest.edge_types[e].dst);
    info->set_num_edges(manifest.num_edges[e]);
    info->set_has_weights(edges[e].csr->has_weights());
    info->set_max_degree(edges[e].max_degree);
    info->set_has_edge_time(times->edge_time(e).has_value());
  }
}

grpc::Status Server::State::Health(grpc::ServerContext* context, const rpc::HealthRequest*,
                                   rpc::HealthReply* reply) {
  return serve(context, [&] {
    answer_health(*reply);
    return grpc::Status::OK;
  });
}

// --- SampleHop ------------------------------------------------------------------------------

grpc::Status Server::State::SampleHop(grpc::ServerContext* context, const rpc::HopRequest* request,
                                      rpc::HopReply* reply) {
  return serve(context, [&] {
    if (auto status = check_request(request->protocol(), request->fingerprint()); !status.ok())
      return status;
    thread_local std::vector<int64_t> targets;
    thread_local SamplerScratch scratch;
    thread_local HopSample sample;
    const grpc::Status status = sample_hop_into(*request, targets, scratch, sample, *reply);
    internal::release_hop_buffers(targets, scratch, sample, request->targets().size());
    return status;
  });
}

// SampleHop's work, with the caller's (per-thread) buffers: the edge type named (none for a
// homogeneous partition), its targets owned here, then the homogeneous sampler's hop over its
// rows (typed: that edge type's stream seed and times, internal/hetero_times.h).
grpc::Status Server::State::sample_hop_into(const rpc::HopRequest& request,
                                            std::vector<int64_t>& targets, SamplerScratch& scratch,
                                            HopSample& sample, rpc::HopReply& reply) {
  int e = 0;
  if (auto status = edge_type(request.edge_type(), e); !status.ok()) return status;
  const internal::ServedEdges& served = edges[static_cast<size_t>(e)];
  if (auto status = owned_ids(served.dst, request.targets(), targets, "targets"); !status.ok())
    return status;
  NeighborSamplerOptions sampler;
  try {
    sampler = internal::options_from_wire(request.sampler());
  } catch (const ValueError& error) {
    return refuse(grpc::StatusCode::INVALID_ARGUMENT,
                  fmt::format("part {}: {}", served_part, error.what()));
  }
  if (request.hop() >= 256 || request.fanout() < -1) {
    return refuse(grpc::StatusCode::INVALID_ARGUMENT,
                  fmt::format("part {}: hop {} / fanout {} invalid (hop < 256, fanout >= -1)",
                              served_part, request.hop(), request.fanout()));
  }
  // A typed partition samples the edge types without weights uniformly, as the local sampler.
  if (sampler.weighted && !typed && !served.csr->has_weights()) {
    return refuse(
        grpc::StatusCode::INVALID_ARGUMENT,
        fmt::format("part {}: weighted sampling asked, but the graph has no weights", served_part));
  }
  if (sampler.replace && request.fanout() > options.limits.max_fanout()) {
    return refuse(grpc::StatusCode::INVALID_ARGUMENT,
                  fmt::format("part {}: fanout {} with replacement is more than the {} picks "
                              "one target may have (max_fanout, from max_reply_bytes {})",
                              served_part, request.fanout(), options.limits.max_fanout(),
                              options.limits.max_reply_bytes));
  }
  const int64_t first = types[static_cast<size_t>(served.dst)].first;
  if (auto status =
          check_reply_size(internal::hop_reply_bound(*served.csr, first, targets, request.fanout(),
                                                     sampler.replace, kSaturated),
                           "SampleHop");
      !status.ok())
    return status;
  thread_local std::vector<int64_t> target_times;
  target_times.clear();
  const bool temporal = sampler.time_source != TimeSource::kNone || !request.target_times().empty();
  if (typed) {
    if (temporal) {
      if (auto status = internal::parse_hop_times(request, served_part, targets.size(), sampler,
                                                  target_times);
          !status.ok())
        return status;
    }
    internal::TypedHop hop{.edge_type = static_cast<size_t>(e),
                           .targets = targets,
                           .hop = static_cast<int>(request.hop()),
                           .fanout = request.fanout(),
                           .replace = sampler.replace,
                           .weighted = sampler.weighted,
                           .seed = sampler.seed,
                           .batch = request.batch(),
                           .time_source = sampler.time_source,
                           .temporal_strategy = sampler.temporal_strategy,
                           .target_times = target_times};
    internal::sample_typed_hop(*typed, *times, hop, sample, &scratch);
  } else if (!temporal) {
    sample_hop(*served.csr, first, targets, static_cast<int>(request.hop()), request.fanout(),
               sampler, request.batch(), sample, &scratch);
  } else {
    HopTimes hop_times;
    if (auto status = internal::temporal_hop(*partition, request, targets.size(), sampler,
                                             target_times, hop_times);
        !status.ok())
      return status;
    sample_hop(*served.csr, first, targets, static_cast<int>(request.hop()), request.fanout(),
               sampler, request.batch(), hop_times, sample, &scratch);
  }
  pack(std::span<const int32_t>(sample.counts), reply.mutable_counts());
  reply.set_neighbor_bytes(internal::pack_ids(sample.neighbors, reply.mutable_neighbors()));
  reply.set_edge_id_bytes(internal::pack_ids(sample.edge_ids, reply.mutable_edge_ids()));
  return grpc::Status::OK;
}

// --- GetRows, NodeData, HasEdges --------------------------------------------------------------

grpc::Status Server::State::GetRows(grpc::ServerContext* context, const rpc::RowsRequest* request,
                                    rpc::RowsReply* reply) {
  return serve(context, [&] {
    if (auto status = check_request(request->protocol(), request->fingerprint()); !status.ok())
      return status;
    thread_local std::vector<int64_t> ids;
    const grpc::Status status = get_rows_into(*request, ids, *reply);
    internal::release_if_large(ids);
    internal::after_call(request->ids().size());
    return status;
  });
}

// GetRows' work, with the caller's (per-thread) id buffer.
grpc::Status Server::State::get_rows_into(const rpc::RowsRequest& request,
                                          std::vector<int64_t>& ids, rpc::RowsReply& reply) {
  int type = 0;
  if (auto status = node_type(request.node_type(), type); !status.ok()) return status;
  const internal::ServedType& served = types[static_cast<size_t>(type)];
  // "node type 'paper'" in a typed partition's messages; nothing in a homogeneous one's.
  const std::string of_type = typed ? fmt::format(" of node type '{}'", served.name) : "";
  if (request.kind() == rpc::RowsRequest::DEGREES) {
    if (typed) {
      return refuse(grpc::StatusCode::INVALID_ARGUMENT,
                    fmt::format("part {}: degrees of a heterogeneous partition are per edge "
                                "type and not served yet",
                                served_part));
    }
    if (auto status = owned_ids(type, request.ids(), ids, "ids"); !status.ok()) return status;
    if (auto status = check_reply_size(8 * static_cast<int64_t>(ids.size()), "GetRows");
        !status.ok())
      return status;
    internal::answer_degrees(*edges[0].csr, served.first, ids, reply);
    return grpc::Status::OK;
  }
  if (request.kind() == rpc::RowsRequest::NODE_TIME) {
    if (auto status = owned_ids(type, request.ids(), ids, "ids"); !status.ok()) return status;
    return node_times_into(type, ids, reply);
  }
  const bool features = request.kind() == rpc::RowsRequest::FEATURES;
  if (!features && request.kind() != rpc::RowsRequest::LABELS) {
    return refuse(
        grpc::StatusCode::INVALID_ARGUMENT,
        fmt::format("part {}: unknown row kind {}", served_part, static_cast<int>(request.kind())));
  }
  const std::optional<Array>& table = features ? *served.features : *served.labels;
  const char* what = features ? "features" : "labels";
  if (!table) {
    return refuse(
        grpc::StatusCode::FAILED_PRECONDITION,
        fmt::format("part {}: {} has no {}", served_part,
                    typed ? fmt::format("node type '{}'", served.name) : "the dataset", what));
  }
  const DType out_dtype =
      request.out_dtype().empty() ? table->dtype() : dtype_from_name(request.out_dtype());
  if (!gather_supports(table->dtype(), out_dtype)) {
    return refuse(grpc::StatusCode::INVALID_ARGUMENT,
                  fmt::format("part {}: {}{} of dtype {} cannot be delivered as {}", served_part,
                              what, of_type, dtype_name(table->dtype()), dtype_name(out_dtype)));
  }
  if (auto status = owned_ids(type, request.ids(), ids, "ids"); !status.ok()) return status;
  const int64_t width = table->ndim() == 2 ? table->dim(1) : 1;
  const int64_t row_bytes = width * static_cast<int64_t>(dtype_size(out_dtype));
  if (auto status = check_reply_size(static_cast<int64_t>(ids.size()) * row_bytes, "GetRows");
      !status.ok())
    return status;
  for (int64_t& id : ids) id -= served.first;
  std::string* rows = reply.mutable_rows();
  rows->resize(ids.size() * static_cast<size_t>(row_bytes));
  gather_rows(*table, ids, out_dtype, reinterpret_cast<std::byte*>(rows->data()));
  reply.set_dtype(std::string(dtype_name(out_dtype)));
  reply.set_width(width);
  return grpc::Status::OK;
}

// GetRows(NODE_TIME): the node time of each (owned, checked) id of node type `type`.
grpc::Status Server::State::node_times_into(int type, std::span<const int64_t> ids,
                                            rpc::RowsReply& reply) {
  const internal::ServedType& served = types[static_cast<size_t>(type)];
  if (!served.node_time->has_value()) {
    return refuse(grpc::StatusCode::FAILED_PRECONDITION,
                  typed ? fmt::format("part {}: node type '{}' has no node times (no "
                                      "{}.node_time.npy in the partitioned directory)",
                                      served_part, served.name, served.name)
                        : fmt::format("part {}: the partition has no node times (no "
                                      "node_time.npy in the partitioned directory)",
                                      served_part));
  }
  if (auto status = check_reply_size(static_cast<int64_t>(ids.size()) * 8, "GetRows"); !status.ok())
    return status;
  const int64_t* all = (*served.node_time)->data<int64_t>();  // by global id
  std::vector<int64_t> out(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) out[i] = all[ids[i]];
  pack(std::span<const int64_t>(out), reply.mutable_rows());
  reply.set_dtype("int64");
  reply.set_width(1);
  return grpc::Status::OK;
}

grpc::Status Server::State::NodeData(grpc::ServerContext* context,
                                     const rpc::NodeDataRequest* request,
                                     rpc::NodeDataReply* reply) {
  return serve(context, [&] {
    int type = 0;
    if (auto status = node_type(request->node_type(), type); !status.ok()) return status;
    if (request->op() == rpc::NodeDataRequest::AGGREGATE) return aggregate_node_data(*request);
    return answer_node_data(*request, owned(type), *reply);
  });
}

grpc::Status Server::State::HasEdges(grpc::ServerContext* context, const rpc::EdgesRequest* request,
                                     rpc::EdgesReply* reply) {
  return serve(context, [&] {
    if (typed) {
      return refuse(grpc::StatusCode::UNIMPLEMENTED,
                    fmt::format("HasEdges: this server serves part {} of a heterogeneous "
                                "partitioned dataset, whose edge checks are not served (link "
                                "prediction over it draws uniform or weighted negatives)",
                                served_part));
    }
    if (auto status = check_request(request->protocol(), request->fingerprint()); !status.ok())
      return status;
    thread_local std::vector<int64_t> rows_asked;
    if (auto status = owned_ids(0, request->rows(), rows_asked, "rows"); !status.ok())
      return status;
    const Csr& graph = *edges[0].csr;
    std::call_once(rows_sorted_once, [&] { rows_sorted = csr_rows_sorted(graph); });
    const grpc::Status status =
        internal::answer_has_edges(graph, owned(0), rows_sorted, rows_asked, request->others(),
                                   options.limits.max_reply_bytes, *reply);
    internal::release_if_large(rows_asked);
    internal::after_call(request->rows().size() * 2);
    return status;
  });
}

// --- the public face ---------------------------------------------------------------------------

Server::Server(const std::string& directory, int64_t part, ServerOptions options)
    : state_(std::make_unique<State>()) {
  State& state = *state_;
  state.load(directory, part, options);
  state.options = std::move(options);
  state.start(state, state.typed ? "volley-serve-hetero" : "volley-serve");
}

Server::~Server() { shutdown(0.5); }

int Server::port() const { return state_->port(); }
std::string Server::address() const { return state_->address(); }
int64_t Server::part() const { return state_->served_part; }
const std::string& Server::fingerprint() const { return state_->fingerprint; }
bool Server::authenticated() const { return !state_->options.token.empty(); }
bool Server::heterogeneous() const { return state_->typed != nullptr; }
std::shared_ptr<const Partition> Server::partition() const { return state_->partition; }
std::shared_ptr<const HeteroPartition> Server::hetero_partition() const { return state_->typed; }
ServerStats Server::stats() const { return state_->stats(); }

void Server::shutdown(double grace_seconds) { state_->shutdown(grace_seconds); }

void Server::wait() { state_->wait(); }

}  // namespace volley::dist
