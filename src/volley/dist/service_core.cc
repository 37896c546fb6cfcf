// The gRPC plumbing both partition servers share (internal/service_core.h).
#include "volley/dist/internal/service_core.h"

#include <grpcpp/resource_quota.h>

#include <algorithm>
#include <cmath>
#include <string_view>
#include <utility>
#include <vector>

#include "volley/core/parallel.h"
#include "volley/core/version.h"
#include "volley/dist/internal/wire.h"

namespace volley::dist::internal {
namespace {

// Reply size estimates stop growing here (no overflow for any fanout).
constexpr int64_t kSaturated = int64_t{1} << 60;

}  // namespace

void prepare_server_options(ServerOptions& options, int64_t part, int64_t num_parts) {
  VOLLEY_REQUIRE(options.threads >= 0, ValueError, "threads must be >= 0, got {}", options.threads);
  VOLLEY_REQUIRE(options.max_epoch_streams >= 0, ValueError,
                 "max_epoch_streams must be >= 0, got {}", options.max_epoch_streams);
  check_limits(options.limits);
  VOLLEY_REQUIRE(options.limits.max_node_data_bytes >= 0, ValueError,
                 "max_node_data_bytes must be >= 0 (0: half the memory), got {}",
                 options.limits.max_node_data_bytes);
  options.limits.max_ids_per_call =
      std::min(options.limits.max_ids_per_call, options.limits.max_request_bytes / 8);
  VOLLEY_REQUIRE(options.memory_limit_bytes >= (int64_t{64} << 20), ValueError,
                 "memory_limit_bytes must be at least 64 MiB, got {}", options.memory_limit_bytes);
  VOLLEY_REQUIRE(options.peers.empty() || static_cast<int64_t>(options.peers.size()) == num_parts,
                 ValueError,
                 "peers must list one address per part ({} parts, in part order; this part's "
                 "own entry may be empty), got {}",
                 num_parts, options.peers.size());
  if (!options.peers.empty()) options.peers[static_cast<size_t>(part)] = "";  // in-process
  if (options.peer_client.token.empty()) options.peer_client.token = options.token;
  // Peers are servers of the same deployment: verified by the same CA, shown the same
  // certificate.
  if (options.peer_client.tls.ca_file.empty() && !options.tls.ca_file.empty()) {
    options.peer_client.tls = options.tls;
  }
}

bool ServiceCore::token_matches(const grpc::ServerContextBase& context) const {
  const auto& metadata = context.client_metadata();
  const auto found = metadata.find(kTokenKey);
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

void ServiceCore::counted_failure(grpc::Status& status) {
  failed.fetch_add(1, std::memory_order_relaxed);
  // A message quoting a request (a huge dtype name, say) is cut: gRPC's metadata limit.
  if (status.error_message().size() > 2048) {
    status = grpc::Status(status.error_code(), quoted(status.error_message(), 2048));
  }
}

grpc::Status ServiceCore::check_request(uint32_t protocol,
                                        const std::string& request_fingerprint) const {
  if (protocol != kProtocolVersion) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        fmt::format("part {}: protocol version {} requested, this server speaks "
                                    "{} (Volley {}); run the same Volley version everywhere",
                                    served_part, protocol, kProtocolVersion, volley::kVersion));
  }
  if (request_fingerprint != fingerprint) {
    return grpc::Status(
        grpc::StatusCode::FAILED_PRECONDITION,
        fmt::format("part {}: the request is for dataset fingerprint '{}', this "
                    "server serves '{}' ({})",
                    served_part, quoted(request_fingerprint), fingerprint, dataset_name));
  }
  return grpc::Status::OK;
}

grpc::Status ServiceCore::check_reply_size(int64_t bytes, const char* what) const {
  if (bytes <= options.limits.max_reply_bytes) return grpc::Status::OK;
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                      fmt::format("part {}: the {} reply would be {}{} bytes, more than the {} "
                                  "one reply may (max_reply_bytes); split the call",
                                  served_part, what, bytes >= kSaturated ? "over " : "",
                                  std::min(bytes, kSaturated), options.limits.max_reply_bytes));
}

void ServiceCore::answer_health(rpc::HealthReply& reply) const {
  reply.set_status("serving");
  reply.set_requests(requests.load());
  reply.set_failed_requests(failed.load());
  reply.set_active_streams(streams.load());
  reply.set_uptime_seconds(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count());
}

int ServiceCore::threads() const {
  return options.threads > 0 ? options.threads : std::max(32, 8 * default_num_threads());
}

namespace {

// After a TLS server failed to start on `listen`: when the same address takes a plaintext server,
// the fault is the TLS files (read as PEM, but a key that does not match the certificate, or a
// key or certificate gRPC cannot use): ValueError naming them, not the address.
void check_tls_listens(const std::string& listen, const TlsOptions& tls) {
  grpc::ServerBuilder probe;
  int port = 0;
  probe.AddListeningPort(listen, grpc::InsecureServerCredentials(), &port);
  probe.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  grpc::AsyncGenericService any;  // a server needs a service to start
  probe.RegisterAsyncGenericService(&any);
  const std::unique_ptr<grpc::ServerCompletionQueue> queue = probe.AddCompletionQueue();
  const std::unique_ptr<grpc::Server> plain = probe.BuildAndStart();
  if (plain != nullptr) plain->Shutdown();
  queue->Shutdown();
  void* tag = nullptr;
  bool ok = false;
  while (queue->Next(&tag, &ok)) {
  }
  if (plain == nullptr || port == 0) return;  // the address itself: reported by the caller
  throw ValueError(fmt::format(
      "cannot serve TLS on '{}': the key '{}' does not match the certificate '{}', or one of "
      "them is not a key or certificate gRPC can use (the address itself is fine)",
      listen, tls.key_file, tls.cert_file));
}

}  // namespace

void ServiceCore::start(grpc::Service& service, const char* quota_name) {
  pump_ = std::make_unique<TaskQueue>(std::max(4, threads() / 2));
  const int handler_threads = threads();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.listen, server_credentials(options.tls), &port_);
  builder.RegisterService(&service);
  {
    std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> hooks;
    hooks.push_back(decode_error_interceptor(served_part));
    builder.experimental().SetInterceptorCreators(std::move(hooks));
  }
  const ServerLimits& limits = options.limits;
  builder.SetMaxReceiveMessageSize(static_cast<int>(limits.max_request_bytes));
  // Replies are checked against max_reply_bytes before they are built; gRPC's own check is a
  // backstop with room for the message's framing.
  builder.SetMaxSendMessageSize(static_cast<int>(limits.max_reply_bytes + (1 << 20)));
  grpc::ResourceQuota quota(quota_name);
  quota.Resize(static_cast<size_t>(options.memory_limit_bytes));
  quota.SetMaxThreads(handler_threads + 4);  // + gRPC's own pollers
  builder.SetResourceQuota(quota);
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::NUM_CQS, 1);
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MIN_POLLERS, 1);
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS,
                              std::max(2, handler_threads / 2));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, kKeepaliveMs);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, kKeepaliveTimeoutMs);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
                             kKeepaliveMs / 2);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, 4 * handler_threads);
  // gRPC sets SO_REUSEPORT by default: a second server on a busy port would then start quietly
  // and the kernel would split connections between the two (a client could reach the wrong
  // part). Binding a port in use must fail instead.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  server_ = builder.BuildAndStart();
  if ((server_ == nullptr || port_ == 0) && !options.tls.cert_file.empty()) {
    check_tls_listens(options.listen, options.tls);
  }
  VOLLEY_REQUIRE(server_ != nullptr && port_ != 0, IoError,
                 "cannot listen on '{}': the address is malformed, not local, or in use (give "
                 "host:port, e.g. 127.0.0.1:5000; port 0 picks a free port)",
                 options.listen);
}

std::string ServiceCore::address() const {
  const std::string& listen = options.listen;
  const size_t colon = listen.rfind(':');
  std::string host = colon == std::string::npos ? listen : listen.substr(0, colon);
  if (host.empty() || host == "0.0.0.0" || host == "[::]" || host == "::") host = "127.0.0.1";
  return fmt::format("{}:{}", host, port_);
}

grpc::Status ServiceCore::check_stream_capacity() const {
  // A paused stream holds no thread, but its prefetched batches and its epoch's workers: the
  // number open at once is capped.
  const int64_t open_before = streams.load() - 1;
  const int64_t most =
      options.max_epoch_streams > 0 ? options.max_epoch_streams : int64_t{4} * threads();
  if (open_before < most) return grpc::Status::OK;
  return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                      fmt::format("part {}: busy: {} batch streams are open, the most this "
                                  "server keeps (max_epoch_streams); try again later",
                                  served_part, open_before));
}

void ServiceCore::shutdown(double grace_seconds) {
  {
    std::lock_guard lock(shutdown_mutex_);
    if (stopping_) return;
    stopping_ = true;
  }
  if (server_) {
    server_->Shutdown(std::chrono::system_clock::now() +
                      std::chrono::duration_cast<std::chrono::system_clock::duration>(
                          internal::bounded_wait(grace_seconds)));
    server_->Wait();
  }
  if (pump_) pump_->stop();  // after gRPC stopped: the streams' last tasks run, then it joins
  {
    std::lock_guard lock(shutdown_mutex_);
    shut_down_ = true;
  }
  shut_down_changed_.notify_all();
}

void ServiceCore::wait() {
  std::unique_lock lock(shutdown_mutex_);
  shut_down_changed_.wait(lock, [&] { return shut_down_; });
}

}  // namespace volley::dist::internal
