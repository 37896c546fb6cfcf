// `volley serve` of a heterogeneous partition: a gRPC service answering typed SampleHop and
// GetRows calls, and streaming typed batches (a callback stream). See hetero_server.h.
#include "volley/dist/hetero_server.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <mutex>

#include "volley/core/version.h"
#include "volley/dist/hetero_client.h"
#include "volley/dist/internal/epoch_stream.h"
#include "volley/dist/internal/hetero_client_state.h"
#include "volley/dist/internal/hetero_times.h"
#include "volley/dist/internal/server_requests.h"
#include "volley/dist/internal/server_support.h"
#include "volley/dist/internal/service_core.h"
#include "volley/dist/internal/wire.h"
#include "volley/dist/volley.grpc.pb.h"
#include "volley/feature/gather.h"
#include "volley/sampling/hetero_sampler.h"

namespace volley::dist {

namespace rpc = ::volley::rpc;
using internal::pack;

namespace {

constexpr int64_t kSaturated = int64_t{1} << 60;

grpc::Status refuse(grpc::StatusCode code, std::string message) {
  return grpc::Status(code, std::move(message));
}

// A SampleHeteroBatches stream's batches: the caller's seeds in batch_size slices, each sampled
// across every part (`graph`) and gathered, in order, one when the client has room for it.
class TypedBatches final : public internal::StreamProducer<rpc::HeteroBatchMessage> {
 public:
  TypedBatches(std::shared_ptr<const DistHeteroGraph> graph,
               const rpc::HeteroBatchesRequest& request, std::vector<int64_t> seeds,
               std::vector<int64_t> seed_times, HeteroSamplerOptions sampler)
      : graph_(std::move(graph)),
        request_(request),
        seeds_(std::move(seeds)),
        seed_times_(std::move(seed_times)),
        sampler_(std::move(sampler)) {}

  bool next(rpc::HeteroBatchMessage& message) override {
    const auto size = static_cast<size_t>(request_.batch_size());
    if (begin_ >= seeds_.size()) return false;
    const std::span<const int64_t> batch =
        std::span<const int64_t>(seeds_).subspan(begin_, std::min(size, seeds_.size() - begin_));
    const std::span<const int64_t> times =
        seed_times_.empty() ? std::span<const int64_t>()
                            : std::span<const int64_t>(seed_times_).subspan(begin_, batch.size());
    const HeteroSampledSubgraph sub = graph_->sample(
        {{request_.node_type(), batch, times}}, sampler_, request_.first_batch_index() + index_);
    message.set_index(index_);
    internal::fill_hetero_batch(*graph_, sub, request_, message);
    begin_ += batch.size();
    ++index_;
    return true;
  }
  // A peer that failed (unreachable, no answer in time); other errors are the request's.
  bool blames_peer(const Error& error) const override {
    return error.kind() == ErrorKind::kTimeout || error.kind() == ErrorKind::kConnection;
  }

 private:
  std::shared_ptr<const DistHeteroGraph> graph_;
  const rpc::HeteroBatchesRequest& request_;
  std::vector<int64_t> seeds_, seed_times_;
  HeteroSamplerOptions sampler_;
  size_t begin_ = 0;
  int64_t index_ = 0;
};

}  // namespace

struct HeteroServer::State final
    : rpc::PartitionService::WithCallbackMethod_SampleHeteroBatches<rpc::PartitionService::Service>,
      internal::ServiceCore {
  std::shared_ptr<const HeteroPartition> partition;
  std::vector<int64_t> max_degree;                  // per edge type, of this part's rows
  std::unique_ptr<internal::HeteroHopTimes> times;  // the directory's time files
  std::mutex peers_mutex;
  std::shared_ptr<const DistHeteroGraph> peers;  // server-client mode, connected on first use

  const HeteroGraph& graph() const { return partition->data.graph; }

  // The node type named `name` ("" or unknown: INVALID_ARGUMENT listing the types), or -1.
  grpc::Status node_type(const std::string& name, int& type) const {
    type = graph().find_node_type(name);
    if (type >= 0) return grpc::Status::OK;
    return refuse(grpc::StatusCode::INVALID_ARGUMENT,
                  fmt::format("part {}: unknown node type {} (this heterogeneous partition has "
                              "node types: {}; RowsRequest.node_type names one)",
                              part(), internal::quoted(name), graph().node_type_list()));
  }

  // Owned ids of node type `type` from `bytes`.
  grpc::Status owned_ids(int type, const std::string& bytes, std::vector<int64_t>& ids,
                         const char* field) const {
    const NodeTypeInfo& info = graph().node_types()[static_cast<size_t>(type)];
    const int64_t first = partition->first_node(info.name);
    const internal::OwnedRange range{part(), first, info.num_nodes,
                                     options.limits.max_ids_per_call};
    grpc::Status status = internal::owned_ids(range, bytes, ids, field);
    if (status.error_code() == grpc::StatusCode::OUT_OF_RANGE) {
      return refuse(status.error_code(),
                    fmt::format("node type '{}': {}", info.name, status.error_message()));
    }
    return status;
  }

  // --- handlers ---------------------------------------------------------------------------

  grpc::Status Info(grpc::ServerContext* context, const rpc::InfoRequest*,
                    rpc::InfoReply* reply) override {
    return serve(context, [&] {
      reply->set_protocol(kProtocolVersion);
      reply->set_volley_version(volley::kVersion);
      reply->set_dataset_name(partition->manifest.name);
      reply->set_fingerprint(fingerprint);
      reply->set_part(part());
      reply->set_num_parts(partition->manifest.num_parts);
      reply->set_authenticated(!options.token.empty());
      reply->set_max_request_bytes(options.limits.max_request_bytes);
      reply->set_max_reply_bytes(options.limits.max_reply_bytes);
      reply->set_max_ids_per_call(options.limits.max_ids_per_call);
      reply->set_heterogeneous(true);
      const HeteroPartitionManifest& manifest = partition->manifest;
      for (size_t t = 0; t < manifest.node_types.size(); ++t) {
        rpc::NodeTypeInfo* info = reply->add_node_types();
        info->set_name(manifest.node_types[t].name);
        for (const int64_t offset : manifest.books[t].offsets()) info->add_offsets(offset);
        const NodeTypeData& data = partition->data.node_data[t];
        info->set_feature_dim(data.features ? data.features->dim(1) : 0);
        if (data.features) info->set_feature_dtype(std::string(dtype_name(data.features->dtype())));
        if (data.labels) info->set_label_dtype(std::string(dtype_name(data.labels->dtype())));
        info->set_num_classes(data.num_classes);
        info->set_has_node_time(times->node_time(t).has_value());
      }
      for (size_t e = 0; e < manifest.edge_types.size(); ++e) {
        rpc::EdgeTypeInfo* info = reply->add_edge_types();
        info->set_src(manifest.edge_types[e].src);
        info->set_relation(manifest.edge_types[e].relation);
        info->set_dst(manifest.edge_types[e].dst);
        info->set_num_edges(manifest.num_edges[e]);
        info->set_has_weights(graph().edges(static_cast<int>(e)).has_weights());
        info->set_max_degree(max_degree[e]);
        info->set_has_edge_time(times->edge_time(e).has_value());
      }
      return grpc::Status::OK;
    });
  }

  grpc::Status Health(grpc::ServerContext* context, const rpc::HealthRequest*,
                      rpc::HealthReply* reply) override {
    return serve(context, [&] {
      answer_health(*reply);
      return grpc::Status::OK;
    });
  }

  grpc::Status SampleHop(grpc::ServerContext* context, const rpc::HopRequest* request,
                         rpc::HopReply* reply) override {
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

  // The edge type a SampleHop names; INVALID_ARGUMENT for none or an unknown one.
  grpc::Status edge_type(const std::string& name, int& index) const {
    index = -1;
    if (name.empty()) {
      return refuse(grpc::StatusCode::INVALID_ARGUMENT,
                    fmt::format("part {}: this server serves a heterogeneous partition: a "
                                "SampleHop must name its edge type (one of: {})",
                                part(), graph().edge_type_list()));
    }
    try {
      index = graph().find_edge_type(EdgeType::from_name(name));
    } catch (const Error&) {
      index = -1;  // not "src__relation__dst"
    }
    if (index >= 0) return grpc::Status::OK;
    return refuse(grpc::StatusCode::INVALID_ARGUMENT,
                  fmt::format("part {}: unknown edge type {} (edge types: {})", part(),
                              internal::quoted(name), graph().edge_type_list()));
  }

  grpc::Status sample_hop_into(const rpc::HopRequest& request, std::vector<int64_t>& targets,
                               SamplerScratch& scratch, HopSample& sample, rpc::HopReply& reply) {
    int e = -1;
    if (auto status = edge_type(request.edge_type(), e); !status.ok()) return status;
    const EdgeType& type = graph().edge_types()[static_cast<size_t>(e)];
    const Csr& csr = graph().edges(e);
    const int dst = graph().node_type_index(type.dst);
    if (auto status = owned_ids(dst, request.targets(), targets, "targets"); !status.ok())
      return status;
    if (request.hop() >= 256 || request.fanout() < -1) {
      return refuse(grpc::StatusCode::INVALID_ARGUMENT,
                    fmt::format("part {}: hop {} / fanout {} invalid (hop < 256, fanout >= -1)",
                                part(), request.hop(), request.fanout()));
    }
    NeighborSamplerOptions timing;  // the hop's time options (temporal when asked)
    thread_local std::vector<int64_t> target_times;
    target_times.clear();
    if (!request.time_source().empty() || !request.target_times().empty()) {
      if (auto status =
              internal::parse_hop_times(request, part(), targets.size(), timing, target_times);
          !status.ok())
        return status;
    }
    if (request.replace() && request.fanout() > options.limits.max_fanout()) {
      return refuse(grpc::StatusCode::INVALID_ARGUMENT,
                    fmt::format("part {}: fanout {} with replacement is more than the {} picks "
                                "one target may have (max_fanout)",
                                part(), request.fanout(), options.limits.max_fanout()));
    }
    const int64_t first = partition->first_node(type.dst);
    if (auto status =
            check_reply_size(internal::hop_reply_bound(csr, first, targets, request.fanout(),
                                                       request.replace(), kSaturated),
                             "SampleHop");
        !status.ok())
      return status;
    internal::TypedHop hop{.edge_type = static_cast<size_t>(e),
                           .targets = targets,
                           .hop = static_cast<int>(request.hop()),
                           .fanout = request.fanout(),
                           .replace = request.replace(),
                           .weighted = request.weighted(),
                           .seed = request.seed(),
                           .batch = request.batch(),
                           .time_source = timing.time_source,
                           .temporal_strategy = timing.temporal_strategy,
                           .target_times = target_times};
    internal::sample_typed_hop(*partition, *times, hop, sample, &scratch);
    pack(std::span<const int32_t>(sample.counts), reply.mutable_counts());
    pack(std::span<const int64_t>(sample.neighbors), reply.mutable_neighbors());
    pack(std::span<const int64_t>(sample.edge_ids), reply.mutable_edge_ids());
    return grpc::Status::OK;
  }

  // --- server-client batches ----------------------------------------------------------------

  // The peers as one graph, this part in-process (connected once), with calls that end within
  // half the client's deadline (internal::peer_options_within: a stream's own connection then).
  std::shared_ptr<const DistHeteroGraph> peer_graph(double client_deadline) {
    if (auto shorter = internal::peer_options_within(options.peer_client, client_deadline)) {
      return DistHeteroGraph::connect(options.peers, *shorter, partition, fingerprint);
    }
    std::lock_guard lock(peers_mutex);
    if (!peers) {
      peers = DistHeteroGraph::connect(options.peers, options.peer_client, partition, fingerprint);
    }
    return peers;
  }

  // A homogeneous partition's calls, refused by name (gRPC's default names nothing).
  grpc::Status SampleEpoch(grpc::ServerContext*, const rpc::EpochRequest*,
                           grpc::ServerWriter<rpc::BatchMessage>*) override {
    return refuse(grpc::StatusCode::UNIMPLEMENTED,
                  fmt::format("SampleEpoch: this server serves part {} of a heterogeneous "
                              "partitioned dataset; stream typed batches with "
                              "SampleHeteroBatches",
                              part()));
  }
  grpc::Status HasEdges(grpc::ServerContext*, const rpc::EdgesRequest*, rpc::EdgesReply*) override {
    return refuse(grpc::StatusCode::UNIMPLEMENTED,
                  fmt::format("HasEdges: this server serves part {} of a heterogeneous "
                              "partitioned dataset, whose edge checks are not served (link "
                              "prediction over it draws uniform or weighted negatives)",
                              part()));
  }

  // --- server-client batch streams (internal/epoch_stream.h) ---------------------------------

  grpc::ServerWriteReactor<rpc::HeteroBatchMessage>* SampleHeteroBatches(
      grpc::CallbackServerContext* context, const rpc::HeteroBatchesRequest* request) override {
    return internal::start_stream<rpc::HeteroBatchMessage>(
        *this, [this, context, request](auto& producer) {
          return open_batches(*context, *request, producer);
        });
  }

  // Checks a SampleHeteroBatches call and builds its stream's producer.
  grpc::Status open_batches(
      grpc::CallbackServerContext& context, const rpc::HeteroBatchesRequest& request,
      std::unique_ptr<internal::StreamProducer<rpc::HeteroBatchMessage>>& producer) {
    return serve(&context, [&]() -> grpc::Status {
      if (auto status = check_stream_capacity(); !status.ok()) return status;
      if (auto status = check_request(request.protocol(), request.fingerprint()); !status.ok())
        return status;
      if (options.peers.empty()) {
        return refuse(grpc::StatusCode::FAILED_PRECONDITION,
                      fmt::format("part {}: this server was started without peers; "
                                  "server-client mode needs every part's address (--peers)",
                                  part()));
      }
      std::vector<int64_t> seeds;
      if (!internal::unpack(request.seeds(), seeds) || request.batch_size() < 1) {
        return refuse(grpc::StatusCode::INVALID_ARGUMENT,
                      fmt::format("part {}: seeds of {} bytes (int64 each) / batch_size {} "
                                  "(>= 1) invalid",
                                  part(), request.seeds().size(), request.batch_size()));
      }
      std::shared_ptr<const DistHeteroGraph> graph = peer_graph(request.deadline_seconds());
      graph->info().node_type_index(request.node_type());  // ValueError naming the types
      std::vector<int64_t> seed_times;
      HeteroSamplerOptions sampler =
          internal::hetero_batches_sampler(request, seeds.size(), seed_times);
      producer = std::make_unique<TypedBatches>(std::move(graph), request, std::move(seeds),
                                                std::move(seed_times), std::move(sampler));
      return grpc::Status::OK;
    });
  }

  grpc::Status GetRows(grpc::ServerContext* context, const rpc::RowsRequest* request,
                       rpc::RowsReply* reply) override {
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

  grpc::Status NodeData(grpc::ServerContext* context, const rpc::NodeDataRequest* request,
                        rpc::NodeDataReply* reply) override {
    return serve(context, [&] {
      int type = -1;
      if (auto status = node_type(request->node_type(), type); !status.ok()) return status;
      const NodeTypeInfo& info = graph().node_types()[static_cast<size_t>(type)];
      return answer_node_data(*request,
                              {part(), partition->first_node(info.name), info.num_nodes,
                               options.limits.max_ids_per_call},
                              *reply);
    });
  }

  grpc::Status get_rows_into(const rpc::RowsRequest& request, std::vector<int64_t>& ids,
                             rpc::RowsReply& reply) {
    int type = -1;
    if (auto status = node_type(request.node_type(), type); !status.ok()) return status;
    const std::string& name = graph().node_types()[static_cast<size_t>(type)].name;
    const int64_t first = partition->first_node(name);
    if (auto status = owned_ids(type, request.ids(), ids, "ids"); !status.ok()) return status;
    if (request.kind() == rpc::RowsRequest::DEGREES) {
      return refuse(grpc::StatusCode::INVALID_ARGUMENT,
                    fmt::format("part {}: degrees of a heterogeneous partition are per edge "
                                "type and not served yet",
                                part()));
    }
    if (request.kind() == rpc::RowsRequest::NODE_TIME) return node_times_into(type, ids, reply);
    const bool features = request.kind() == rpc::RowsRequest::FEATURES;
    if (!features && request.kind() != rpc::RowsRequest::LABELS) {
      return refuse(
          grpc::StatusCode::INVALID_ARGUMENT,
          fmt::format("part {}: unknown row kind {}", part(), static_cast<int>(request.kind())));
    }
    const NodeTypeData& data = partition->data.node_data[static_cast<size_t>(type)];
    const std::optional<Array>& table = features ? data.features : data.labels;
    if (!table) {
      return refuse(grpc::StatusCode::FAILED_PRECONDITION,
                    fmt::format("part {}: node type '{}' has no {}", part(), name,
                                features ? "features" : "labels"));
    }
    const DType out_dtype =
        request.out_dtype().empty() ? table->dtype() : dtype_from_name(request.out_dtype());
    if (!gather_supports(table->dtype(), out_dtype)) {
      return refuse(grpc::StatusCode::INVALID_ARGUMENT,
                    fmt::format("part {}: {} of node type '{}' (dtype {}) cannot be delivered "
                                "as {}",
                                part(), features ? "features" : "labels", name,
                                dtype_name(table->dtype()), dtype_name(out_dtype)));
    }
    const int64_t width = table->ndim() == 2 ? table->dim(1) : 1;
    const int64_t row_bytes = width * static_cast<int64_t>(dtype_size(out_dtype));
    if (auto status = check_reply_size(static_cast<int64_t>(ids.size()) * row_bytes, "GetRows");
        !status.ok())
      return status;
    for (int64_t& id : ids) id -= first;
    std::string* rows = reply.mutable_rows();
    rows->resize(ids.size() * static_cast<size_t>(row_bytes));
    gather_rows(*table, ids, out_dtype, reinterpret_cast<std::byte*>(rows->data()));
    reply.set_dtype(std::string(dtype_name(out_dtype)));
    reply.set_width(width);
    return grpc::Status::OK;
  }

  // GetRows(NODE_TIME): the node time of each (owned, checked) id of node type `type`.
  grpc::Status node_times_into(int type, std::span<const int64_t> ids, rpc::RowsReply& reply) {
    const std::optional<Array>& time = times->node_time(static_cast<size_t>(type));
    if (!time) {
      return refuse(grpc::StatusCode::FAILED_PRECONDITION,
                    fmt::format("part {}: node type '{}' has no node times (no {}.node_time.npy "
                                "in the partitioned directory)",
                                part(), graph().node_types()[static_cast<size_t>(type)].name,
                                graph().node_types()[static_cast<size_t>(type)].name));
    }
    if (auto status = check_reply_size(static_cast<int64_t>(ids.size()) * 8, "GetRows");
        !status.ok())
      return status;
    const int64_t* all = time->data<int64_t>();
    std::vector<int64_t> out(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) out[i] = all[ids[i]];
    pack(std::span<const int64_t>(out), reply.mutable_rows());
    reply.set_dtype("int64");
    reply.set_width(1);
    return grpc::Status::OK;
  }
};

HeteroServer::HeteroServer(const std::string& directory, int64_t part, ServerOptions options)
    : state_(std::make_unique<State>()) {
  State& state = *state_;
  state.partition = std::make_shared<const HeteroPartition>(load_hetero_partition(directory, part));
  internal::prepare_server_options(options, part, state.partition->manifest.num_parts);
  state.served_part = part;
  state.fingerprint = dataset_fingerprint(directory);
  state.dataset_name = state.partition->manifest.name;
  state.times = std::make_unique<internal::HeteroHopTimes>(state.partition);
  const HeteroGraph& graph = state.partition->data.graph;
  for (int e = 0; e < graph.num_edge_types(); ++e) {
    const Csr& csr = graph.edges(e);
    int64_t largest = 0;
    for (int64_t row = 0; row < csr.num_nodes(); ++row)
      largest = std::max(largest, csr.degree(row));
    state.max_degree.push_back(largest);
  }
  state.options = std::move(options);
  state.start(state, "volley-serve-hetero");
}

HeteroServer::~HeteroServer() { shutdown(0.5); }

int HeteroServer::port() const { return state_->port(); }
std::string HeteroServer::address() const { return state_->address(); }
int64_t HeteroServer::part() const { return state_->partition->part; }
const std::string& HeteroServer::fingerprint() const { return state_->fingerprint; }
bool HeteroServer::authenticated() const { return !state_->options.token.empty(); }
std::shared_ptr<const HeteroPartition> HeteroServer::partition() const { return state_->partition; }
ServerStats HeteroServer::stats() const { return state_->stats(); }
void HeteroServer::shutdown(double grace_seconds) { state_->shutdown(grace_seconds); }
void HeteroServer::wait() { state_->wait(); }

}  // namespace volley::dist
