// volley/dist/internal/service_core.h — the gRPC plumbing of the partition Server (internal;
// internal/server_state.h, a partition of either kind): the options' checks, the access token,
// the protocol / fingerprint / reply size checks, the request counters and Health, the
// translation of errors into statuses, the gRPC server's construction (limits, keepalive,
// quota, threads), the host of its batch streams (internal/epoch_stream.h: the pump, the cap on
// open streams) and the shutdown.
//
//   struct Server::State final : rpc::PartitionService::Service, internal::ServiceCore {
//     grpc::Status SampleHop(...) override {
//       return serve(context, [&] { ... check_request(...) ... });
//     }
//   };
//   state.served_part = part; state.fingerprint = ...; state.options = std::move(options);
//   state.start(state, "volley-serve");      // listens; IoError when it cannot
//
// Thread safety: serve(), the checks and the counters may be used from any handler thread;
// start() once, before any call; shutdown() and wait() from any thread.
#pragma once

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "volley/core/error.h"
#include "volley/dist/internal/epoch_stream.h"
#include "volley/dist/internal/node_tables.h"
#include "volley/dist/internal/server_support.h"
#include "volley/dist/internal/wire.h"
#include "volley/dist/server.h"
#include "volley/dist/volley.grpc.pb.h"

namespace volley::dist::internal {

// The options of a server's calls to its peers while it serves a client that waits
// `client_deadline` s for each message (0: unknown): calls to peers must end before the client's
// own deadline, so that a stuck peer is reported as such and not taken for this server being
// stuck. nullopt: `peer` as it is; else `peer` with at most half the client's deadline (for a
// connection of that request's own).
inline std::optional<ClientOptions> peer_options_within(const ClientOptions& peer,
                                                        double client_deadline) {
  const double wanted = client_deadline > 0 ? client_deadline / 2 : 0;
  if (wanted <= 0 || wanted >= peer.deadline_seconds) return std::nullopt;
  ClientOptions shorter = peer;
  shorter.deadline_seconds = wanted;
  shorter.connect_seconds = std::min(shorter.connect_seconds, wanted);
  return shorter;
}

// ValueError for options out of range (threads, max_epoch_streams, limits, memory_limit_bytes)
// or peers that do not list one address per part; caps max_ids_per_call at what a request can
// carry; empties this part's own peer entry (served in-process) and gives the peer client the
// server's token and TLS when it has none of its own.
void prepare_server_options(ServerOptions& options, int64_t part, int64_t num_parts);

class ServiceCore : public StreamHost {
 public:
  // Set before start().
  int64_t served_part = 0;
  std::string fingerprint;
  std::string dataset_name;
  ServerOptions options;  // prepared (prepare_server_options)

  NodeTables node_tables;  // NodeData's tables (both servers answer it the same way)

  std::atomic<int64_t> requests{0};
  std::atomic<int64_t> failed{0};
  std::atomic<int64_t> streams{0};  // streams open (Health's active_streams)

  // Token, then the handler; a Volley error becomes the status of its kind, anything else
  // INTERNAL, naming the part. Failed calls are counted; long messages cut (gRPC's metadata
  // limit).
  template <typename Handler>
  grpc::Status serve(grpc::ServerContextBase* context, Handler&& handler) {
    requests.fetch_add(1, std::memory_order_relaxed);
    grpc::Status status;
    if (!options.token.empty() && !token_matches(*context)) {
      status = grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                            fmt::format("part {}: missing or wrong access token (metadata '{}')",
                                        served_part, kTokenKey));
    } else {
      try {
        status = handler();
      } catch (const Error& e) {
        status = grpc::Status(status_code_for(e.kind()),
                              fmt::format("part {}: {}", served_part, e.what()));
      } catch (const std::exception& e) {
        status = grpc::Status(grpc::StatusCode::INTERNAL,
                              fmt::format("part {}: internal error: {}", served_part, e.what()));
      }
    }
    if (!status.ok()) counted_failure(status);
    return status;
  }

  // NodeData over `range` (the rows this part owns of the request's node type): the checks,
  // then node_tables' answer.
  grpc::Status answer_node_data(const rpc::NodeDataRequest& request, const OwnedRange& range,
                                rpc::NodeDataReply& reply) {
    if (auto status = check_request(request.protocol(), request.fingerprint()); !status.ok())
      return status;
    const grpc::Status status = node_tables.answer(request, range, options.limits, reply);
    after_call(request.ids().size() + request.values().size() + request.state().size());
    return status;
  }

  // FAILED_PRECONDITION for another protocol version or dataset fingerprint.
  grpc::Status check_request(uint32_t protocol, const std::string& request_fingerprint) const;
  // INVALID_ARGUMENT when a reply of `bytes` would exceed max_reply_bytes.
  grpc::Status check_reply_size(int64_t bytes, const char* what) const;
  // Health's answer.
  void answer_health(rpc::HealthReply& reply) const;
  // The handler threads (options.threads, or the default).
  int threads() const;

  // --- batch streams (StreamHost) ---
  int64_t stream_opened() override { return streams.fetch_add(1); }
  void stream_closed() override { streams.fetch_sub(1); }
  void count_failure() override { failed.fetch_add(1, std::memory_order_relaxed); }
  int64_t part() const override { return served_part; }
  int64_t max_message_bytes() const override { return options.limits.max_reply_bytes; }
  TaskQueue& pump() override { return *pump_; }
  // RESOURCE_EXHAUSTED ("busy") when a stream being opened is one more than max_epoch_streams
  // (default 4 × threads) allow at once.
  grpc::Status check_stream_capacity() const;

  // Builds and starts the gRPC server of `service` (and the streams' pump); IoError when it
  // cannot listen.
  void start(grpc::Service& service, const char* quota_name);
  int port() const { return port_; }
  std::string address() const;  // "host:port" to give clients
  ServerStats stats() const { return {requests.load(), failed.load(), streams.load()}; }
  // Stops listening, waits up to `grace_seconds` for calls in flight, runs the streams' last
  // tasks (joining the pump), then wakes wait(). Idempotent.
  void shutdown(double grace_seconds);
  void wait();

 private:
  bool token_matches(const grpc::ServerContextBase& context) const;
  void counted_failure(grpc::Status& status);

  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<TaskQueue> pump_;  // runs the batch streams' work (max(4, threads / 2))
  int port_ = 0;
  std::mutex shutdown_mutex_;
  std::condition_variable shut_down_changed_;
  bool stopping_ = false;
  bool shut_down_ = false;
};

}  // namespace volley::dist::internal
