// `volley serve`'s engine: one partition behind a synchronous gRPC service. See server.h.
#include "volley/dist/server.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/resource_quota.h>
#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include "volley/core/parallel.h"
#include "volley/core/version.h"
#include "volley/dist/internal/epoch_stream.h"
#include "volley/dist/internal/server_requests.h"
#include "volley/dist/internal/server_support.h"
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
// Per-thread buffers larger than this are released after the call that grew them.
constexpr size_t kKeepBufferBytes = size_t{16} << 20;
// Reply size estimates stop growing here (no overflow for any fanout).
constexpr int64_t kSaturated = int64_t{1} << 60;

grpc::Status refuse(grpc::StatusCode code, const std::string& message) {
  return grpc::Status(code, message);
}

}  // namespace

struct Server::State final
    : rpc::PartitionService::WithCallbackMethod_SampleEpoch<rpc::PartitionService::Service>,
      internal::EpochStreamHost {
  std::string directory;
  std::shared_ptr<const Partition> partition;
  std::string fingerprint;
  std::string dataset_name;
  int64_t num_edges_total = 0;
  int64_t max_degree = 0;   // of this part's nodes
  int64_t max_streams = 0;  // epoch streams open at once (options.max_epoch_streams resolved)
  ServerOptions options;
  std::unique_ptr<internal::TaskQueue> pump_queue;  // runs the epoch streams' work
  std::unique_ptr<grpc::Server> server;
  int port = 0;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  std::atomic<int64_t> requests{0};
  std::atomic<int64_t> failed{0};
  std::atomic<int64_t> streams{0};

  std::mutex peers_mutex;
  std::shared_ptr<const DistGraph> peers;  // connected on the first SampleEpoch

  std::mutex shutdown_mutex;
  std::condition_variable shut_down_changed;
  bool stopping = false;
  bool shut_down = false;

  int64_t first() const { return partition->first_node(); }
  int64_t rows() const { return partition->data.graph.num_nodes(); }

  // Token, then the handler; a Volley error becomes the status of its kind, anything else
  // INTERNAL. Failed calls are counted.
  template <typename Handler>
  grpc::Status serve(grpc::ServerContextBase* context, Handler&& handler) {
    requests.fetch_add(1, std::memory_order_relaxed);
    grpc::Status status;
    if (!options.token.empty() && !token_matches(context)) {
      status = refuse(grpc::StatusCode::UNAUTHENTICATED,
                      fmt::format("part {}: missing or wrong access token (metadata '{}')",
                                  partition->part, internal::kTokenKey));
    } else {
      try {
        status = handler();
      } catch (const Error& e) {
        status = refuse(internal::status_code_for(e.kind()),
                        fmt::format("part {}: {}", partition->part, e.what()));
      } catch (const std::exception& e) {
        status = refuse(grpc::StatusCode::INTERNAL,
                        fmt::format("part {}: internal error: {}", partition->part, e.what()));
      }
    }
    if (!status.ok()) {
      failed.fetch_add(1, std::memory_order_relaxed);
      // A message quoting a request (a huge dtype name, say) is cut: gRPC's metadata limit.
      if (status.error_message().size() > 2048) {
        status = grpc::Status(status.error_code(), internal::quoted(status.error_message(), 2048));
      }
    }
    return status;
  }

  bool token_matches(grpc::ServerContextBase* context) const {
    const auto& metadata = context->client_metadata();
    const auto found = metadata.find(internal::kTokenKey);
    if (found == metadata.end()) return false;
    const std::string_view given(found->second.data(), found->second.size());
    const std::string& expected = options.token;
    // Constant time in the token's content.
    unsigned char difference = given.size() == expected.size() ? 0 : 1;
    for (size_t i = 0; i < expected.size(); ++i) {
      difference |= static_cast<unsigned char>(expected[i] ^ (i < given.size() ? given[i] : 0));
    }
    return difference == 0;
  }

  grpc::Status check_request(uint32_t protocol, const std::string& request_fingerprint) const {
    if (protocol != kProtocolVersion) {
      return refuse(grpc::StatusCode::FAILED_PRECONDITION,
                    fmt::format("part {}: protocol version {} requested, this server speaks {} "
                                "(Volley {}); run the same Volley version everywhere",
                                partition->part, protocol, kProtocolVersion, kVolleyVersion));
    }
    if (request_fingerprint != fingerprint) {
      return refuse(grpc::StatusCode::FAILED_PRECONDITION,
                    fmt::format("part {}: the request is for dataset fingerprint '{}', this "
                                "server serves '{}' ({})",
                                partition->part, internal::quoted(request_fingerprint), fingerprint,
                                dataset_name));
    }
    return grpc::Status::OK;
  }

  // Owned ids (internal/server_requests.h).
  grpc::Status owned_ids(const std::string& bytes, std::vector<int64_t>& ids,
                         const char* field) const {
    const internal::OwnedRange range{partition->part, first(), rows(),
                                     options.limits.max_ids_per_call};
    return internal::owned_ids(range, bytes, ids, field);
  }

  // INVALID_ARGUMENT when a reply of `bytes` would exceed max_reply_bytes.
  grpc::Status check_reply_size(int64_t bytes, const char* what) const {
    if (bytes <= options.limits.max_reply_bytes) return grpc::Status::OK;
    return refuse(grpc::StatusCode::INVALID_ARGUMENT,
                  fmt::format("part {}: the {} reply would be {}{} bytes, more than the {} one "
                              "reply may (max_reply_bytes); split the call",
                              partition->part, what, bytes >= kSaturated ? "over " : "",
                              std::min(bytes, kSaturated), options.limits.max_reply_bytes));
  }

  // After a call with a large request: the request arrived in many small pieces, freed into
  // glibc's arenas by now; give them back to the system.
  static void after_call(size_t request_bytes) {
    if (request_bytes > kKeepBufferBytes) malloc_trim(0);
  }

  // Per-thread buffers that grew past kKeepBufferBytes are released: a large call does not leave
  // its peak behind.
  template <typename T>
  static void release_if_large(std::vector<T>& buffer) {
    if (buffer.capacity() * sizeof(T) > kKeepBufferBytes) std::exchange(buffer, {});
  }

  // The peers as one graph. Calls to peers must end before the client's own deadline (its wait
  // for a batch, `client_deadline` s; 0: unknown), so that a stuck peer is reported as such and
  // not taken for this server being stuck: their deadline is at most half the client's (a
  // stream's own connection then).
  std::shared_ptr<const DistGraph> peer_graph(double client_deadline) {
    const double wanted = client_deadline > 0 ? client_deadline / 2 : 0;
    if (wanted > 0 && wanted < options.peer_client.deadline_seconds) {
      ClientOptions shorter = options.peer_client;
      shorter.deadline_seconds = wanted;
      shorter.connect_seconds = std::min(shorter.connect_seconds, wanted);
      return DistGraph::connect(options.peers, shorter, partition, fingerprint);
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
      reply->set_status("serving");
      reply->set_requests(requests.load());
      reply->set_failed_requests(failed.load());
      reply->set_active_streams(streams.load());
      reply->set_uptime_seconds(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
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
      if (targets.capacity() * sizeof(int64_t) > kKeepBufferBytes ||
          sample.neighbors.capacity() * sizeof(int64_t) > kKeepBufferBytes) {
        scratch = SamplerScratch();
      }
      release_if_large(targets);
      release_if_large(sample.counts);
      release_if_large(sample.neighbors);
      release_if_large(sample.edge_ids);
      after_call(request->targets().size());
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
      release_if_large(rows_asked);
      after_call(request->rows().size() * 2);
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
      release_if_large(ids);
      after_call(request->ids().size());
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

  // --- server-client epoch streams (internal/epoch_stream.h) ---------------------------------

  grpc::ServerWriteReactor<rpc::BatchMessage>* SampleEpoch(
      grpc::CallbackServerContext* context, const rpc::EpochRequest* request) override {
    return internal::start_epoch_stream(*this, *context, *request);
  }

  int64_t stream_opened() override { return streams.fetch_add(1); }
  void stream_closed() override { streams.fetch_sub(1); }
  void count_failure() override { failed.fetch_add(1, std::memory_order_relaxed); }
  int64_t part() const override { return partition->part; }
  int64_t max_message_bytes() const override { return options.limits.max_reply_bytes; }
  internal::TaskQueue& pump() override { return *pump_queue; }

  grpc::Status open_epoch(grpc::CallbackServerContext& context, const rpc::EpochRequest& request,
                          std::unique_ptr<NeighborLoader>& loader) override {
    return serve(&context, [&]() -> grpc::Status {
      // A paused stream holds no thread, but its prefetched batches and its epoch's workers:
      // the number open at once is capped.
      if (const int64_t open = streams.load() - 1; open >= max_streams) {
        return refuse(grpc::StatusCode::RESOURCE_EXHAUSTED,
                      fmt::format("part {}: busy: {} epoch streams are open, the most this "
                                  "server keeps (max_epoch_streams); try again later",
                                  partition->part, open));
      }
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
      loader = std::make_unique<NeighborLoader>(source, Array::from_vector(inputs),
                                                loader_options);  // validates all
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

namespace {

// ValueError for options out of range; caps max_ids_per_call at what a request can carry.
void check_server_options(ServerOptions& options) {
  VOLLEY_REQUIRE(options.threads >= 0, ValueError, "threads must be >= 0, got {}", options.threads);
  VOLLEY_REQUIRE(options.max_epoch_streams >= 0, ValueError,
                 "max_epoch_streams must be >= 0, got {}", options.max_epoch_streams);
  check_limits(options.limits);
  options.limits.max_ids_per_call =
      std::min(options.limits.max_ids_per_call, options.limits.max_request_bytes / 8);
  VOLLEY_REQUIRE(options.memory_limit_bytes >= (int64_t{64} << 20), ValueError,
                 "memory_limit_bytes must be at least 64 MiB, got {}", options.memory_limit_bytes);
}

}  // namespace

Server::Server(const std::string& directory, int64_t part, ServerOptions options)
    : state_(std::make_unique<State>()) {
  State& state = *state_;
  check_server_options(options);
  state.directory = directory;
  const PartitionManifest manifest = read_partition_manifest(directory);
  VOLLEY_REQUIRE(part >= 0 && part < manifest.book.num_parts(), IndexError,
                 "part {} out of range: '{}' has {} parts", part, directory,
                 manifest.book.num_parts());
  VOLLEY_REQUIRE(options.peers.empty() ||
                     static_cast<int64_t>(options.peers.size()) == manifest.book.num_parts(),
                 ValueError,
                 "peers must list one address per part ({} parts, in part order; this part's "
                 "own entry may be empty), got {}",
                 manifest.book.num_parts(), options.peers.size());
  state.partition = std::make_shared<const Partition>(load_partition(directory, part));
  state.fingerprint = dataset_fingerprint(directory);
  state.dataset_name = manifest.name;
  state.num_edges_total = manifest.num_edges;
  const Csr& graph = state.partition->data.graph;
  for (int64_t row = 0; row < graph.num_nodes(); ++row) {
    state.max_degree = std::max(state.max_degree, graph.degree(row));
  }
  if (!options.peers.empty()) options.peers[static_cast<size_t>(part)] = "";  // served locally
  if (options.peer_client.token.empty()) options.peer_client.token = options.token;
  // Peers are servers of the same deployment: verified by the same CA, shown the same
  // certificate.
  if (options.peer_client.tls.ca_file.empty() && !options.tls.ca_file.empty()) {
    options.peer_client.tls = options.tls;
  }
  const std::shared_ptr<grpc::ServerCredentials> credentials =
      internal::server_credentials(options.tls);
  const int threads =
      options.threads > 0 ? options.threads : std::max(32, 8 * default_num_threads());
  state.options = std::move(options);
  state.max_streams =
      state.options.max_epoch_streams > 0 ? state.options.max_epoch_streams : int64_t{4} * threads;
  state.pump_queue = std::make_unique<internal::TaskQueue>(std::max(4, threads / 2));

  grpc::ServerBuilder builder;
  builder.AddListeningPort(state.options.listen, credentials, &state.port);
  builder.RegisterService(&state);
  {
    std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> hooks;
    hooks.push_back(internal::decode_error_interceptor(part));
    builder.experimental().SetInterceptorCreators(std::move(hooks));
  }
  const ServerLimits& limits = state.options.limits;
  builder.SetMaxReceiveMessageSize(static_cast<int>(limits.max_request_bytes));
  // Replies are checked against max_reply_bytes before they are built; gRPC's own check is a
  // backstop with room for the message's framing.
  builder.SetMaxSendMessageSize(static_cast<int>(limits.max_reply_bytes + (1 << 20)));
  grpc::ResourceQuota quota("volley-serve");
  quota.Resize(static_cast<size_t>(state.options.memory_limit_bytes));
  quota.SetMaxThreads(threads + 4);  // + gRPC's own pollers
  builder.SetResourceQuota(quota);
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::NUM_CQS, 1);
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MIN_POLLERS, 1);
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS,
                              std::max(2, threads / 2));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, internal::kKeepaliveMs);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, internal::kKeepaliveTimeoutMs);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
                             internal::kKeepaliveMs / 2);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, 4 * threads);
  // gRPC sets SO_REUSEPORT by default: a second server on a busy port would then start quietly
  // and the kernel would split connections between the two (a client could reach the wrong
  // part). Binding a port in use must fail instead.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  state.server = builder.BuildAndStart();
  VOLLEY_REQUIRE(state.server != nullptr && state.port != 0, IoError,
                 "cannot listen on '{}': the address is malformed, not local, or in use (give "
                 "host:port, e.g. 127.0.0.1:5000; port 0 picks a free port)",
                 state.options.listen);
}

Server::~Server() { shutdown(0.5); }

int Server::port() const { return state_->port; }

std::string Server::address() const {
  std::string host = state_->options.listen.substr(0, state_->options.listen.rfind(':'));
  if (host.empty() || host == "0.0.0.0" || host == "[::]" || host == "::") host = "127.0.0.1";
  return fmt::format("{}:{}", host, state_->port);
}

int64_t Server::part() const { return state_->partition->part; }
const std::string& Server::fingerprint() const { return state_->fingerprint; }
bool Server::authenticated() const { return !state_->options.token.empty(); }
std::shared_ptr<const Partition> Server::partition() const { return state_->partition; }

ServerStats Server::stats() const {
  return {state_->requests.load(), state_->failed.load(), state_->streams.load()};
}

void Server::shutdown(double grace_seconds) {
  State& state = *state_;
  {
    std::lock_guard lock(state.shutdown_mutex);
    if (state.stopping) return;
    state.stopping = true;
  }
  if (state.server) {
    state.server->Shutdown(std::chrono::system_clock::now() +
                           std::chrono::duration_cast<std::chrono::system_clock::duration>(
                               std::chrono::duration<double>(std::max(0.0, grace_seconds))));
    state.server->Wait();
  }
  if (state.pump_queue) state.pump_queue->stop();  // the streams' last tasks, then join
  {
    std::lock_guard lock(state.shutdown_mutex);
    state.shut_down = true;
  }
  state.shut_down_changed.notify_all();
}

void Server::wait() {
  std::unique_lock lock(state_->shutdown_mutex);
  state_->shut_down_changed.wait(lock, [&] { return state_->shut_down; });
}

}  // namespace volley::dist
