// volley/dist/internal/client_calls.h — what the client's files share (internal): the state of a
// connected DistGraph, one RPC in flight, the fan-out of one request to every part, and the
// mapping of a failed call to the Volley error that names the part and address.
#pragma once

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <exception>
#include <latch>
#include <memory>
#include <string>
#include <vector>

#include "volley/dist/client.h"
#include "volley/dist/internal/wire.h"
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

// A dtype name from a server; ValueError naming the server for an unknown one.
DType parse_dtype(const std::string& name, const std::string& address);

// Checks an Info answer from `address` (part `part`, or -1 for "the server"): ConnectionError
// when nobody answered within connect_seconds, the call's own error otherwise, ValueError for
// another protocol version.
void check_info(const grpc::Status& status, const rpc::InfoReply& reply, const std::string& address,
                int64_t part, double connect_seconds);

// What an Info answer from `address` describes.
ServiceInfo service_info(const rpc::InfoReply& reply, const std::string& address);

// One RPC in flight.
template <typename Request, typename Reply>
struct Call {
  grpc::ClientContext context;
  Request request;
  Reply reply;
  grpc::Status status;
};

// The completion callback of an asynchronous call: stores its status, counts `done` down.
template <typename CallType>
auto record_status(CallType& call, std::latch& done) {
  return [&done, raw = &call](grpc::Status status) {
    raw->status = std::move(status);
    done.count_down();
  };
}

}  // namespace internal

struct DistGraph::State {
  ClientOptions options;
  std::vector<std::string> addresses;
  ServiceInfo info;
  std::vector<std::unique_ptr<rpc::PartitionService::Stub>> stubs;  // null for the local part
  std::shared_ptr<const Partition> local;
  int64_t local_part = -1;

  int64_t num_parts() const { return info.book.num_parts(); }

  [[noreturn]] void fail_call(const grpc::Status& status, int64_t part, const char* call) const {
    internal::fail(status, addresses[static_cast<size_t>(part)], part, call,
                   options.deadline_seconds);
  }
};

namespace internal {

// One request fanned out to the parts that have work (`targets[p]` not empty): `send(p, done)`
// starts an asynchronous call to each remote part (its callback counts `done` down), `local()`
// serves the local part meanwhile, then every call is waited for. An error of `local()` is
// rethrown after the wait (the calls reference the caller's frame: never leave before they end).
template <typename Send, typename Local>
void fan_out(const DistGraph::State& state, const std::vector<std::vector<int64_t>>& targets,
             Send&& send, Local&& local) {
  const int64_t parts = state.num_parts();
  int64_t remote = 0;
  for (int64_t p = 0; p < parts; ++p) {
    remote += p != state.local_part && !targets[static_cast<size_t>(p)].empty();
  }
  std::latch done(remote);
  for (int64_t p = 0; p < parts; ++p) {
    if (p == state.local_part || targets[static_cast<size_t>(p)].empty()) continue;
    send(p, done);
  }
  std::exception_ptr local_error;
  if (state.local_part >= 0 && !targets[static_cast<size_t>(state.local_part)].empty()) {
    try {
      local();
    } catch (...) {
      local_error = std::current_exception();
    }
  }
  done.wait();
  if (local_error) std::rethrow_exception(local_error);
}

}  // namespace internal
}  // namespace volley::dist
