// A unary call with raw bytes as the request (no protobuf encoding): how the tests and the
// service fuzz target send requests that the generated stub could not produce.
#pragma once

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <future>
#include <memory>
#include <string>

namespace volley::dist_test {

// Sends `bytes` to `method` ("/volley.rpc.PartitionService/SampleHop", ...) over `channel` with a
// `deadline_seconds` deadline and `token` as the access token (none when empty); returns the
// call's status and, when `reply` is given, the reply's bytes.
inline grpc::Status raw_call(const std::shared_ptr<grpc::Channel>& channel,
                             const std::string& method, const std::string& bytes,
                             double deadline_seconds = 5.0, const std::string& token = "",
                             std::string* reply = nullptr) {
  grpc::GenericStub stub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::milliseconds(static_cast<int64_t>(deadline_seconds * 1000)));
  if (!token.empty()) context.AddMetadata("volley-token", token);
  grpc::Slice slice(bytes);
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  std::promise<grpc::Status> done;
  stub.UnaryCall(&context, method, grpc::StubOptions(), &request, &response,
                 [&done](grpc::Status status) { done.set_value(std::move(status)); });
  grpc::Status status = done.get_future().get();
  if (reply != nullptr) {
    reply->clear();
    std::vector<grpc::Slice> slices;
    if (status.ok() && response.Dump(&slices).ok()) {
      for (const grpc::Slice& piece : slices) {
        reply->append(reinterpret_cast<const char*>(piece.begin()), piece.size());
      }
    }
  }
  return status;
}

}  // namespace volley::dist_test
