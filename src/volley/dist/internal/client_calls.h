// volley/dist/internal/client_calls.h — what the client's files share (internal): the state of a
// connected client of either kind, one RPC in flight, the fan-out of one request to every part, and
// the mapping of a failed call to the Volley error that names the part and address.
#pragma once

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <latch>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "volley/dist/client.h"
#include "volley/dist/internal/wire.h"
#include "volley/dist/server.h"
#include "volley/dist/volley.grpc.pb.h"

namespace volley::dist {

namespace rpc = ::volley::rpc;

namespace internal {

// A channel to `address` with the message size limits, keepalive, reconnect backoff and retry
// policy every client call uses.
std::shared_ptr<grpc::Channel> make_channel(const std::string& address,
                                            const ClientOptions& options);

// Sets the call's deadline (`seconds` from now) and the access token.
void prepare(grpc::ClientContext& context, const ClientOptions& options, double seconds);

// Throws the Volley error for a failed call to `address` (part `part`, or -1 for "the server").
[[noreturn]] void fail(const grpc::Status& status, const std::string& address, int64_t part,
                       const char* call, double deadline_seconds);

// ValueError for no addresses, or a deadline or connect time that is not > 0 (every client's
// connect checks these first).
void check_client_options(const std::vector<std::string>& addresses, const ClientOptions& options);

// A dtype name from a server; ValueError naming the server for an unknown one.
DType parse_dtype(const std::string& name, const std::string& address);

// Checks an Info answer from `address` (part `part`, or -1 for "the server"): ConnectionError
// when nobody answered within connect_seconds, the call's own error otherwise, ValueError for
// another protocol version.
void check_info(const grpc::Status& status, const rpc::InfoReply& reply, const std::string& address,
                int64_t part, double connect_seconds);

// What an Info answer from `address` describes, for a client of the kind `typed` asks for
// (service_connect.cc): a homogeneous server's as the one-type case. ValueError naming the
// address for a server of the other kind (saying which client connects to it), an unknown dtype
// or orientation, a node type whose book has another part count, or an edge type between
// unknown node types.
TypedServiceInfo service_description(const rpc::InfoReply& reply, const std::string& address,
                                     bool typed);

// The flat form (ServiceInfo) of a homogeneous description.
ServiceInfo flat_service_info(const TypedServiceInfo& service);

// What a local part's rows of one node type (a Dataset's or a NodeTypeData's) are, as a server's
// Info describes them.
template <typename Data>
void describe_rows(const Data& data, NodeTypeService& out) {
  out.feature_dim = data.features ? data.features->dim(1) : 0;
  if (data.features) out.feature_dtype = data.features->dtype();
  if (data.labels) out.label_dtype = data.labels->dtype();
  out.num_classes = data.num_classes;
}

// The servers of one part: its replicas (an address "host:port|host:port" lists several), each
// with its own channel. Calls are spread over the replicas in turn; a replica whose call failed
// as a server's failure (unreachable, no answer within the deadline, cancelled by a server that
// shut down) is passed over from then on, and the call is made again on another (run_waves): a call
// is a pure function of its request, so any replica gives the same answer. When every replica has
// failed, the next call tries them all again.
class PartServers {
 public:
  static constexpr size_t kMaxReplicas = 64;
  // ValueError for an empty address among the replicas or more than kMaxReplicas.
  PartServers(const std::string& address, const ClientOptions& options);

  size_t size() const { return addresses_.size(); }
  const std::string& address(size_t replica) const { return addresses_[replica]; }
  rpc::PartitionService::Stub* stub(size_t replica) const { return stubs_[replica].get(); }
  // The replica for the next call: the next live one in turn.
  size_t pick() const;
  // After a call to `replica` ended with `status`: whether it is to be made again on another
  // replica (the status a server's failure, and another replica live); marks `replica` failed.
  bool fail_over(size_t replica, const grpc::Status& status) const;

 private:
  uint64_t every_replica() const;  // the mask of all replicas

  std::vector<std::string> addresses_;
  std::vector<std::unique_ptr<rpc::PartitionService::Stub>> stubs_;
  mutable std::atomic<uint64_t> turn_{0};
  mutable std::atomic<uint64_t> failed_{0};  // bit r: replica r failed
};

// Every part's servers (null: the local part, served in-process).
using Servers = std::vector<std::unique_ptr<PartServers>>;

// The stub of the replica of part `part` that `call` goes to (recorded in call.replica).
template <typename CallType>
rpc::PartitionService::Stub* stub_for(const Servers& servers, int64_t part, CallType& call) {
  const PartServers& replicas = *servers[static_cast<size_t>(part)];
  call.replica = replicas.pick();
  return replicas.stub(call.replica);
}

// One RPC in flight (`replica`: the replica of its part it went to).
template <typename Request, typename Reply>
struct Call {
  grpc::ClientContext context;
  Request request;
  Reply reply;
  grpc::Status status;
  size_t replica = 0;
};

// The completion callback of an asynchronous call: stores its status, counts `done` down.
template <typename CallType>
auto record_status(CallType& call, std::latch& done) {
  return [&done, raw = &call](grpc::Status status) {
    raw->status = std::move(status);
    done.count_down();
  };
}

using InfoCall = Call<rpc::InfoRequest, rpc::InfoReply>;

// Info from every replica of every part (a null part is skipped; calls[p] stays empty), all in
// flight at once, in two rounds: first without waiting for a connection, so that a failed TLS
// handshake is reported at once (tls_failure: ConnectionError naming the address, the part and
// the reason); then, for the servers that were not listening yet, waiting for them up to
// options.connect_seconds. calls[p][r] is replica r's; the callers check each call's status
// (check_info).
std::vector<std::vector<std::unique_ptr<InfoCall>>> info_from_all(const Servers& servers,
                                                                  const ClientOptions& options);

// What a failed first connection attempt (UNAVAILABLE, `message` gRPC's) says about TLS: the
// reason in words when the TLS handshake failed (the server's certificate does not verify, TLS
// on one side only, the server refused this client's certificate), empty otherwise (e.g.
// nobody listens yet). `client_tls`: whether this client uses TLS; `client_certificate`:
// whether it presents a certificate.
std::string tls_failure(const std::string& message, bool client_tls, bool client_certificate);

// Checks the Info answers of the parts (calls[p] empty: the local part, not asked): each from
// a server of the part its address stands for, of `servers.size()` parts, all of one dataset
// (the fingerprint of the first answer, or `fingerprint` when given, which `reference` names:
// "the local partition"). Then each(p, reply) for every part's first answer. Errors as
// check_info, and ValueError naming the address for a part out of order or another dataset.
void check_parts(const std::vector<std::vector<std::unique_ptr<InfoCall>>>& calls,
                 const Servers& servers, const ClientOptions& options, std::string fingerprint,
                 std::string reference,
                 const std::function<void(int64_t, const rpc::InfoReply&)>& each);

// Every part's servers for `addresses` (addresses[p] those of part p; the local part's, `local`,
// null and its address may be empty). ValueError naming a part without an address.
Servers connect_parts(const std::vector<std::string>& addresses, const ClientOptions& options,
                      int64_t local);

// What one call to a part may carry: its server's limits (Info), capped by the client's own
// message limit. max_degree < 0: unknown (a server that does not say).
struct PartLimits {
  int64_t max_ids = ServerLimits{}.max_ids_per_call;
  int64_t max_reply_bytes = ServerLimits{}.max_reply_bytes;
  int64_t max_request_bytes = ServerLimits{}.max_request_bytes;  // less room for the fields
  int64_t max_degree = -1;
};

// The limits an Info answer states (defaults where it states none).
PartLimits part_limits(const rpc::InfoReply& reply, const ClientOptions& options);

// Targets per call so that replies of `bytes_per_target` (at most) and requests of
// `request_bytes_per_target` a target stay under `limits`; at least 1.
int64_t targets_per_call(const PartLimits& limits, int64_t bytes_per_target,
                         int64_t request_bytes_per_target = 8);

// What every client of the service holds, whatever the graph kind: its options, and per part an
// address entry, a connection and the limits its server stated. The clients' states extend it.
struct PartClients {
  ClientOptions options;
  std::vector<std::string> addresses;
  Servers servers;                 // per part (null for the local part)
  std::vector<PartLimits> limits;  // per part
  int64_t local_part = -1;         // worker mode: the part read in-process (-1: none)

  int64_t num_parts() const { return static_cast<int64_t>(addresses.size()); }
  [[noreturn]] void fail_call(const grpc::Status& status, int64_t part, const char* call) const {
    fail(status, addresses[static_cast<size_t>(part)], part, call, options.deadline_seconds);
  }
};

// What a client of either graph kind holds once connected: the service's one description
// (TypedServiceInfo; the homogeneous one-type case for DistGraph), the longest row of every edge
// type at every part, and in worker mode the local part's rows. The clients' states extend it.
struct ServiceClient : PartClients {
  TypedServiceInfo service;
  std::vector<std::vector<int64_t>> max_degree;  // [part][edge type]; -1: unknown
  // Worker mode: rows of `kind` of the nodes `ids` of node type `type` (owned by the local part)
  // into `rows`, as the servers answer GetRows.
  std::function<void(int type, rpc::RowsRequest::Kind kind, std::span<const int64_t> ids,
                     DType out_dtype, std::byte* rows)>
      local_rows;
};

// Either client's connect from a partitioned directory (`Client`: DistGraph, DistHeteroGraph):
// worker mode with part `local_part` of `local_directory`, loaded by `load` (load_partition,
// load_hetero_partition), or no local part when neither is given; ValueError for one without
// the other.
template <typename Client, typename Load>
std::shared_ptr<const Client> connect_from_directory(std::vector<std::string> addresses,
                                                     ClientOptions options,
                                                     const std::string& local_directory,
                                                     std::optional<int64_t> local_part, Load load) {
  if (!local_part) {
    VOLLEY_REQUIRE(local_directory.empty(), ValueError,
                   "local_directory '{}' given without local_part", local_directory);
    return Client::connect(std::move(addresses), std::move(options), nullptr, "");
  }
  VOLLEY_REQUIRE(!local_directory.empty(), ValueError,
                 "local_part {} given without local_directory", *local_part);
  using Local = decltype(load(local_directory, *local_part, {}));
  return Client::connect(std::move(addresses), std::move(options),
                         std::make_shared<const Local>(load(local_directory, *local_part, {})),
                         dataset_fingerprint(local_directory));
}

// ValueError unless the local part belongs to a dataset of `parts` parts (`local_parts`).
void check_local_parts(int64_t local_parts, int64_t parts);

// Connects `state` (its options, addresses and local_part set; its service already described
// when it has a local part) to the servers of every other part and checks them: Info from all at
// once (info_from_all, waiting for servers still starting), each checked (check_parts: protocol,
// part, dataset) and described as a client of the kind `typed` asks for (service_description);
// the first answer describes the service when no local part did, counts the local part cannot
// know (an edge type's num_edges of 0) come from the answers. Sets limits and max_degree.
void connect_service(ServiceClient& state, bool typed);

// Rows of `kind` of `ids` (ids of node type `type`) into `out` (`row_bytes` a row, rows of
// `out_dtype`): gather_across (service_view.h) over the client's service.
void gather_service_rows(const ServiceClient& state, int type, rpc::RowsRequest::Kind kind,
                         std::span<const int64_t> ids, DType out_dtype, size_t row_bytes,
                         std::byte* out);

}  // namespace internal

struct DistGraph::State : internal::ServiceClient {
  ServiceInfo info;  // the flat form of `service`
  std::shared_ptr<const Partition> local;
  // Link prediction (link_client.cc): the degrees, fetched on first use; whether the local
  // part's rows are sorted.
  mutable std::mutex link_mutex;
  mutable std::optional<std::vector<int64_t>> degrees;
  mutable std::once_flag local_sorted_once;
  mutable bool local_sorted = false;
};

namespace internal {

// One call's share of a request: targets [begin, end) of part `part`.
struct Piece {
  int64_t part;
  size_t begin;
  size_t end;
};

// Runs `pieces` as asynchronous calls, `wave` at a time: `send(piece, slot, done)` starts one
// (its callback counts `done` down) on servers[piece.part]'s next replica, `local()` runs once,
// while the first wave is in flight (also when there is no piece), and after every call of a
// wave has ended (a call that failed over, PartServers::fail_over, made again on another
// replica) `receive(piece, call)` takes the answers in piece order. An error of `local()` is
// rethrown after its wave (the calls reference the caller's frame: never leave before they end).
template <typename CallType, typename PieceType, typename Send, typename Receive, typename Local>
void run_waves(const Servers& servers, const std::vector<PieceType>& pieces, size_t wave,
               Send&& send, Receive&& receive, Local&& local) {
  size_t next = 0;
  bool local_done = false;
  do {
    const size_t end = std::min(pieces.size(), next + wave);
    std::vector<std::unique_ptr<CallType>> calls(end - next);
    std::latch done(static_cast<std::ptrdiff_t>(end - next));
    for (size_t i = next; i < end; ++i) send(pieces[i], calls[i - next], done);
    std::exception_ptr local_error;
    if (!local_done) {
      local_done = true;
      try {
        local();
      } catch (...) {
        local_error = std::current_exception();
      }
    }
    done.wait();
    if (local_error) std::rethrow_exception(local_error);
    for (std::vector<size_t> again;; again.clear()) {  // failed over: made again elsewhere
      for (size_t i = next; i < end; ++i) {
        const CallType& call = *calls[i - next];
        const auto& part = *servers[static_cast<size_t>(pieces[i].part)];
        if (!call.status.ok() && part.fail_over(call.replica, call.status)) again.push_back(i);
      }
      if (again.empty()) break;
      std::latch retried(static_cast<std::ptrdiff_t>(again.size()));
      for (const size_t i : again) send(pieces[i], calls[i - next], retried);
      retried.wait();
    }
    for (size_t i = next; i < end; ++i) receive(pieces[i], *calls[i - next]);
    next = end;
  } while (next < pieces.size());
}

// One request fanned out to the parts that have work (`targets[p]` not empty), each remote
// part's targets cut into calls of at most `per_call(p)` targets (the server's limits), run by
// run_waves: `local()` serves the local part (only when it has targets), `receive` takes the
// answers in piece order (each part's pieces in target order). At most max(8, parts with work)
// calls are in flight at once: a usual request is one wave of one call a part.
// `state` is any client's state with num_parts() and local_part (-1: none).
template <typename CallType, typename State, typename PerCall, typename Send, typename Receive,
          typename Local>
void fan_out(const State& state, const std::vector<std::vector<int64_t>>& targets,
             PerCall&& per_call, Send&& send, Receive&& receive, Local&& local) {
  std::vector<Piece> pieces;
  for (int64_t p = 0; p < state.num_parts(); ++p) {
    const size_t count = targets[static_cast<size_t>(p)].size();
    if (p == state.local_part || count == 0) continue;
    const auto step = static_cast<size_t>(std::max<int64_t>(1, per_call(p)));
    for (size_t begin = 0; begin < count; begin += step) {
      pieces.push_back({p, begin, std::min(count, begin + step)});
    }
  }
  const bool has_local =
      state.local_part >= 0 && !targets[static_cast<size_t>(state.local_part)].empty();
  int64_t busy_parts = 0;
  for (const auto& list : targets) busy_parts += !list.empty();
  run_waves<CallType>(state.servers, pieces, static_cast<size_t>(std::max<int64_t>(8, busy_parts)),
                      send, receive, [&] {
                        if (has_local) local();
                      });
}

}  // namespace internal
}  // namespace volley::dist
