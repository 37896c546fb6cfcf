// `volley serve`'s engine: one partition behind a synchronous gRPC service. See server.h.
#include "volley/dist/server.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>

#include "volley/core/parallel.h"
#include "volley/core/version.h"
#include "volley/dist/internal/epoch_stream.h"
#include "volley/dist/internal/server_requests.h"
#include "volley/dist/internal/server_support.h"
#include "volley/dist/internal/service_core.h"
#include "volley/dist/internal/wire.h"
#include "volley/dist/volley.grpc.pb.h"
#include "volley/feature/gather.h"
#include "volley/sampling/negative_sampler.h"

namespace volley::dist {

namespace rpc = ::volley::rpc;
using internal::check_limits;
using internal::fill_batch_message;
using internal::pack;
using internal::Subset;
using internal::unpack;

namespace {

constexpr const char* kVolleyVersion = volley::kVersion;
// Reply size estimates stop growing here (no overflow for any fanout).
constexpr int64_t kSaturated = int64_t{1} << 60;

grpc::Status refuse(grpc::StatusCode code, const std::string& message) {
  return grpc::Status(code, message);
}

}  // namespace

struct Server::State final
    : rpc::PartitionService::WithCallbackMethod_SampleEpoch<rpc::PartitionService::Service>,
      internal::ServiceCore {
  std::string directory;
  std::shared_ptr<const Partition> partition;
  int64_t num_edges_total = 0;
  int64_t max_degree = 0;  // of this part's nodes

  std::mutex peers_mutex;
  std::shared_ptr<const DistGraph> peers;  // connected on the first SampleEpoch

  int64_t first() const { return partition->first_node(); }
  int64_t rows() const { return partition->data.graph.num_nodes(); }

  // Owned ids (internal/server_requests.h).
  grpc::Status owned_ids(const std::string& bytes, std::vector<int64_t>& ids,
                         const char* field) const {
    const internal::OwnedRange range{partition->part, first(), rows(),
                                     options.limits.max_ids_per_call};
    return internal::owned_ids(range, bytes, ids, field);
  }

  // The peers as one graph, with calls that end within half the client's deadline
  // (internal::peer_options_within: a stream's own connection then).
  std::shared_ptr<const DistGraph> peer_graph(double client_deadline) {
    if (auto shorter = internal::peer_options_within(options.peer_client, client_deadline)) {
      return DistGraph::connect(options.peers, *shorter, partition, fingerprint);
    }
    std::lock_guard lock(peers_mutex);
    if (!peers) {
      std::vector<std::string> addresses = options.peers;
      peers = DistGraph::connect(std::move(addresses), options.peer_client, partition, fingerprint);
    }
    return peers;
  }

  // --- handlers ---------------------------------------------------------------------------

  grpc::Status Info(grpc::ServerContext* context, const rpc::InfoRequest*,
                    rpc::InfoReply* reply) override {
    return serve(context, [&] {
      // Answered whatever protocol the client speaks, so it can say what does not match.
      const Dataset& data = partition->data;
      reply->set_protocol(kProtocolVersion);
      reply->set_volley_version(kVolleyVersion);
      reply->set_dataset_name(dataset_name);
      reply->set_fingerprint(fingerprint);
      reply->set_part(partition->part);
      reply->set_num_parts(partition->book.num_parts());
      for (int64_t offset : partition->book.offsets()) reply->add_offsets(offset);
      reply->set_num_edges(num_edges_total);
      reply->set_feature_dim(data.features ? data.features->dim(1) : 0);
      if (data.features) reply->set_feature_dtype(std::string(dtype_name(data.features->dtype())));
      if (data.labels) reply->set_label_dtype(std::string(dtype_name(data.labels->dtype())));
      reply->set_num_classes(data.num_classes);
      reply->set_has_weights(data.graph.has_weights());
      reply->set_authenticated(!options.token.empty());
      reply->set_can_sample_epochs(!options.peers.empty());
      reply->set_max_request_bytes(options.limits.max_request_bytes);
      reply->set_max_reply_bytes(options.limits.max_reply_bytes);
      reply->set_max_ids_per_call(options.limits.max_ids_per_call);
      reply->set_max_degree(max_degree);
      reply->set_orientation(std::string(orientation_name(data.graph.orientation())));
      reply->set_has_edge_time(data.graph.has_edge_time());
      reply->set_has_node_time(partition->node_time.has_value());
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

  // SampleHop's work, with the caller's (per-thread) buffers.
  grpc::Status sample_hop_into(const rpc::HopRequest& request, std::vector<int64_t>& targets,
                               SamplerScratch& scratch, HopSample& sample, rpc::HopReply& reply) {
    if (auto status = internal::untyped_hop(request, partition->part); !status.ok()) return status;
    if (auto status = owned_ids(request.targets(), targets, "targets"); !status.ok()) return status;
    if (request.hop() >= 256 || request.fanout() < -1) {
      return refuse(grpc::StatusCode::INVALID_ARGUMENT,
                    fmt::format("part {}: hop {} / fanout {} invalid (hop < 256, fanout >= -1)",
                                partition->part, request.hop(), request.fanout()));
    }
    if (request.weighted() && !partition->data.graph.has_weights()) {
      return refuse(grpc::StatusCode::INVALID_ARGUMENT,
                    fmt::format("part {}: weighted sampling asked, but the graph has no weights",
                                partition->part));
    }
    if (request.replace() && request.fanout() > options.limits.max_fanout()) {
      return refuse(grpc::StatusCode::INVALID_ARGUMENT,
                    fmt::format("part {}: fanout {} with replacement is more than the {} picks "
                                "one target may have (max_fanout, from max_reply_bytes {})",
                                partition->part, request.fanout(), options.limits.max_fanout(),
                                options.limits.max_reply_bytes));
    }
    if (auto status = check_reply_size(
            internal::hop_reply_bound(partition->data.graph, first(), targets, request.fanout(),
                                      request.replace(), kSaturated),
            "SampleHop");
        !status.ok())
      return status;
    NeighborSamplerOptions sampler;
    sampler.replace = request.replace();
    sampler.weighted = request.weighted();
    sampler.seed = request.seed();
    if (request.time_source().empty() && request.target_times().empty()) {
      sample_hop(partition->data.graph, first(), targets, static_cast<int>(request.hop()),
                 request.fanout(), sampler, request.batch(), sample, &scratch);
    } else {
      thread_local std::vector<int64_t> target_times;
      HopTimes times;
      if (auto status = internal::temporal_hop(*partition, request, targets.size(), sampler,
                                               target_times, times);
          !status.ok())
        return status;
      sample_hop(partition->data.graph, first(), targets, static_cast<int>(request.hop()),
                 request.fanout(), sampler, request.batch(), times, sample, &scratch);
    }
    pack(std::span<const int32_t>(sample.counts), reply.mutable_counts());
    pack(std::span<const int64_t>(sample.neighbors), reply.mutable_neighbors());
    pack(std::span<const int64_t>(sample.edge_ids), reply.mutable_edge_ids());
    return grpc::Status::OK;
  }

  std::once_flag rows_sorted_once;  // HasEdges: binary search in sorted rows, else a scan
  bool rows_sorted = false;

  grpc::Status HasEdges(grpc::ServerContext* context, const rpc::EdgesRequest* request,
                        rpc::EdgesReply* reply) override {
    return serve(context, [&] {
      if (auto status = check_request(request->protocol(), request->fingerprint()); !status.ok())
        return status;
      thread_local std::vector<int64_t> rows_asked;
      if (auto status = owned_ids(request->rows(), rows_asked, "rows"); !status.ok()) return status;
      const Csr& graph = partition->data.graph;
      std::call_once(rows_sorted_once, [&] { rows_sorted = csr_rows_sorted(graph); });
      const grpc::Status status = internal::answer_has_edges(
          graph, {partition->part, first(), rows(), options.limits.max_ids_per_call}, rows_sorted,
          rows_asked, request->others(), options.limits.max_reply_bytes, *reply);
      internal::release_if_large(rows_asked);
      internal::after_call(request->rows().size() * 2);
      return status;
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

  // GetRows' work, with the caller's (per-thread) id buffer.
  grpc::Status get_rows_into(const rpc::RowsRequest& request, std::vector<int64_t>& ids,
                             rpc::RowsReply& reply) {
    const Dataset& data = partition->data;
    if (request.kind() == rpc::RowsRequest::DEGREES) {
      if (auto status = owned_ids(request.ids(), ids, "ids"); !status.ok()) return status;
      if (auto status = check_reply_size(8 * static_cast<int64_t>(ids.size()), "GetRows");
          !status.ok())
        return status;
      internal::answer_degrees(data.graph, first(), ids, reply);
      return grpc::Status::OK;
    }
    const bool features = request.kind() == rpc::RowsRequest::FEATURES;
    if (!features && request.kind() != rpc::RowsRequest::LABELS) {
      return refuse(grpc::StatusCode::INVALID_ARGUMENT,
                    fmt::format("part {}: unknown row kind {}", partition->part,
                                static_cast<int>(request.kind())));
    }
    const std::optional<Array>& table = features ? data.features : data.labels;
    if (!table) {
      return refuse(grpc::StatusCode::FAILED_PRECONDITION,
                    fmt::format("part {}: the dataset has no {}", partition->part,
                                features ? "features" : "labels"));
    }
    const DType out_dtype =
        request.out_dtype().empty() ? table->dtype() : dtype_from_name(request.out_dtype());
    if (!gather_supports(table->dtype(), out_dtype)) {
      return refuse(grpc::StatusCode::INVALID_ARGUMENT,
                    fmt::format("part {}: {} of dtype {} cannot be delivered as {}",
                                partition->part, features ? "features" : "labels",
                                dtype_name(table->dtype()), dtype_name(out_dtype)));
    }
    if (auto status = owned_ids(request.ids(), ids, "ids"); !status.ok()) return status;
    const int64_t width = table->ndim() == 2 ? table->dim(1) : 1;
    const int64_t row_bytes = width * static_cast<int64_t>(dtype_size(out_dtype));
    if (auto status = check_reply_size(static_cast<int64_t>(ids.size()) * row_bytes, "GetRows");
        !status.ok())
      return status;
    for (int64_t& id : ids) id -= first();
    std::string* rows = reply.mutable_rows();
    rows->resize(ids.size() * static_cast<size_t>(row_bytes));
    gather_rows(*table, ids, out_dtype, reinterpret_cast<std::byte*>(rows->data()));
    reply.set_dtype(std::string(dtype_name(out_dtype)));
    reply.set_width(width);
    return grpc::Status::OK;
  }

  grpc::Status NodeData(grpc::ServerContext* context, const rpc::NodeDataRequest* request,
                        rpc::NodeDataReply* reply) override {
    return serve(context, [&] {
      if (!request->node_type().empty()) {
        return refuse(grpc::StatusCode::INVALID_ARGUMENT,
                      fmt::format("part {}: node type '{}' named, but this partition is "
                                  "homogeneous (leave node_type empty)",
                                  partition->part, internal::quoted(request->node_type(), 64)));
      }
      return answer_node_data(
          *request, {partition->part, first(), rows(), options.limits.max_ids_per_call}, *reply);
    });
  }

  // A heterogeneous partition's call, refused by name (gRPC's default names nothing).
  grpc::Status SampleHeteroBatches(grpc::ServerContext*, const rpc::HeteroBatchesRequest*,
                                   grpc::ServerWriter<rpc::HeteroBatchMessage>*) override {
    return refuse(grpc::StatusCode::UNIMPLEMENTED,
                  fmt::format("SampleHeteroBatches: this server serves part {} of a "
                              "homogeneous partitioned dataset; stream its batches with "
                              "SampleEpoch",
                              partition->part));
  }

  // --- server-client epoch streams (internal/epoch_stream.h) ---------------------------------

  grpc::ServerWriteReactor<rpc::BatchMessage>* SampleEpoch(
      grpc::CallbackServerContext* context, const rpc::EpochRequest* request) override {
    return internal::start_stream<rpc::BatchMessage>(
        *this, [this, context, request](auto& producer) {
          return open_epoch(*context, *request, producer);
        });
  }

  // Checks a SampleEpoch call and builds its stream's producer: the epoch of a loader over the
  // peers as one graph (this part in-process).
  grpc::Status open_epoch(grpc::CallbackServerContext& context, const rpc::EpochRequest& request,
                          std::unique_ptr<internal::StreamProducer<rpc::BatchMessage>>& producer) {
    return serve(&context, [&]() -> grpc::Status {
      if (auto status = check_stream_capacity(); !status.ok()) return status;
      if (auto status = check_request(request.protocol(), request.fingerprint()); !status.ok())
        return status;
      if (options.peers.empty()) {
        return refuse(grpc::StatusCode::FAILED_PRECONDITION,
                      fmt::format("part {}: this server was started without peers; server-client "
                                  "mode needs the addresses of every part's server (--peers)",
                                  partition->part));
      }
      std::vector<int64_t> inputs;
      if (!unpack(request.input_nodes(), inputs)) {
        return refuse(grpc::StatusCode::INVALID_ARGUMENT,
                      fmt::format("part {}: input_nodes has {} bytes, not a multiple of 8",
                                  partition->part, request.input_nodes().size()));
      }
      LoaderOptions loader_options = epoch_loader_options(request);
      auto source = std::make_shared<Subset>(peer_graph(request.deadline_seconds()),
                                             request.features(), request.labels());
      // The caller's seeds as sent: an empty list is an epoch without batches (as in PyG).
      auto loader = std::make_unique<NeighborLoader>(source, Array::from_vector(inputs),
                                                     loader_options);  // validates all
      producer = internal::epoch_producer(std::move(loader), request.epoch());
      return grpc::Status::OK;
    });
  }

  LoaderOptions epoch_loader_options(const rpc::EpochRequest& request) const {
    LoaderOptions loader_options;
    loader_options.batch_size = request.batch_size();
    loader_options.shuffle = request.shuffle();
    loader_options.drop_last = request.drop_last();
    loader_options.seed = request.seed();
    loader_options.num_threads =
        request.concurrency() > 0 ? request.concurrency() : options.default_concurrency;
    VOLLEY_REQUIRE(loader_options.num_threads >= 0 && loader_options.num_threads <= 256, ValueError,
                   "concurrency must be in [0, 256], got {}", loader_options.num_threads);
    loader_options.sampler.fanouts.assign(request.fanouts().begin(), request.fanouts().end());
    loader_options.sampler.replace = request.replace();
    loader_options.sampler.weighted = request.weighted();
    if (request.features()) loader_options.feature_dtype = dtype_from_name(request.feature_dtype());
    internal::apply_epoch_times(request, loader_options);
    return loader_options;
  }
};

Server::Server(const std::string& directory, int64_t part, ServerOptions options)
    : state_(std::make_unique<State>()) {
  State& state = *state_;
  state.directory = directory;
  const PartitionManifest manifest = read_partition_manifest(directory);
  VOLLEY_REQUIRE(part >= 0 && part < manifest.book.num_parts(), IndexError,
                 "part {} out of range: '{}' has {} parts", part, directory,
                 manifest.book.num_parts());
  internal::prepare_server_options(options, part, manifest.book.num_parts());
  state.partition = std::make_shared<const Partition>(load_partition(directory, part));
  state.served_part = part;
  state.fingerprint = dataset_fingerprint(directory);
  state.dataset_name = manifest.name;
  state.num_edges_total = manifest.num_edges;
  const Csr& graph = state.partition->data.graph;
  for (int64_t row = 0; row < graph.num_nodes(); ++row) {
    state.max_degree = std::max(state.max_degree, graph.degree(row));
  }
  state.options = std::move(options);
  state.start(state, "volley-serve");
}

Server::~Server() { shutdown(0.5); }

int Server::port() const { return state_->port(); }
std::string Server::address() const { return state_->address(); }
int64_t Server::part() const { return state_->partition->part; }
const std::string& Server::fingerprint() const { return state_->fingerprint; }
bool Server::authenticated() const { return !state_->options.token.empty(); }
std::shared_ptr<const Partition> Server::partition() const { return state_->partition; }
ServerStats Server::stats() const { return state_->stats(); }

void Server::shutdown(double grace_seconds) { state_->shutdown(grace_seconds); }

void Server::wait() { state_->wait(); }

}  // namespace volley::dist
