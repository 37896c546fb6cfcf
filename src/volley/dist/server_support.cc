// The server's helpers: limit checks and the batch message. See internal/server_support.h.
#include "volley/dist/internal/server_support.h"

#include <malloc.h>

#include <string>

#include "volley/dist/internal/wire.h"
#include "volley/dist/volley.grpc.pb.h"

namespace volley::dist::internal {

namespace rpc = ::volley::rpc;

void after_call(size_t request_bytes) {
  if (request_bytes > kKeepBufferBytes) malloc_trim(0);
}

void release_hop_buffers(std::vector<int64_t>& targets, SamplerScratch& scratch, HopSample& sample,
                         size_t request_bytes) {
  if (targets.capacity() * sizeof(int64_t) > kKeepBufferBytes ||
      sample.neighbors.capacity() * sizeof(int64_t) > kKeepBufferBytes) {
    scratch = SamplerScratch();
  }
  release_if_large(targets);
  release_if_large(sample.counts);
  release_if_large(sample.neighbors);
  release_if_large(sample.edge_ids);
  after_call(request_bytes);
}

std::shared_ptr<grpc::ServerCredentials> server_credentials(const TlsOptions& tls) {
  VOLLEY_REQUIRE(tls.cert_file.empty() == tls.key_file.empty(), ValueError,
                 "TLS needs both a certificate and its key, got certificate '{}' and key '{}'",
                 tls.cert_file, tls.key_file);
  if (tls.cert_file.empty()) {
    VOLLEY_REQUIRE(tls.ca_file.empty(), ValueError,
                   "a client CA ('{}') asks for mutual TLS, which needs the server's own "
                   "certificate and key too",
                   tls.ca_file);
    return grpc::InsecureServerCredentials();
  }
  grpc::SslServerCredentialsOptions ssl(
      tls.ca_file.empty() ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                          : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  if (!tls.ca_file.empty()) ssl.pem_root_certs = read_pem(tls.ca_file, "TLS client CA file");
  ssl.pem_key_cert_pairs.push_back(
      {read_pem(tls.key_file, "TLS key file"), read_pem(tls.cert_file, "TLS certificate file")});
  return grpc::SslServerCredentials(ssl);
}

// ValueError for limits out of their ranges (a reply must stay far below protobuf's 2 GiB).
void check_limits(const ServerLimits& limits) {
  constexpr int64_t kGiB = int64_t{1} << 30;
  VOLLEY_REQUIRE(limits.max_request_bytes >= (1 << 20) && limits.max_request_bytes <= kGiB,
                 ValueError, "max_request_bytes must be in [1 MiB, 1 GiB], got {}",
                 limits.max_request_bytes);
  VOLLEY_REQUIRE(limits.max_reply_bytes >= (64 << 10) && limits.max_reply_bytes <= kGiB, ValueError,
                 "max_reply_bytes must be in [64 KiB, 1 GiB], got {}", limits.max_reply_bytes);
  VOLLEY_REQUIRE(limits.max_ids_per_call >= 1, ValueError,
                 "max_ids_per_call must be at least 1, got {}", limits.max_ids_per_call);
}

// `batch` (of an epoch of `num_batches`) as a stream message.
void apply_epoch_times(const rpc::EpochRequest& request, LoaderOptions& options) {
  if (options.sampler.time_source == TimeSource::kNone) {
    VOLLEY_REQUIRE(request.input_time().empty(), ValueError,
                   "input_time was given, but no time_source (\"edge\" or \"node\")");
    return;
  }
  std::vector<int64_t> times;
  VOLLEY_REQUIRE(unpack(request.input_time(), times), ValueError,
                 "input_time has {} bytes, not a multiple of 8", request.input_time().size());
  options.input_time = Array::from_vector(times);
}

void fill_batch_message(const Batch& batch, int64_t num_batches, rpc::BatchMessage& message) {
  message.Clear();
  message.set_index(batch.index);
  message.set_batch_size(batch.batch_size);
  message.set_num_batches(num_batches);
  auto bytes_of = [](const Array& array, std::string* out) {  // undefined (typed batch): none
    if (array.defined())
      out->assign(reinterpret_cast<const char*>(array.raw_data()), array.nbytes());
  };
  bytes_of(batch.nodes, message.mutable_nodes());
  bytes_of(batch.input_ids, message.mutable_input_ids());
  bytes_of(batch.edge_index, message.mutable_edge_index());
  bytes_of(batch.edge_ids, message.mutable_edge_ids());
  for (int64_t v : batch.nodes_per_hop) message.add_nodes_per_hop(v);
  for (int64_t v : batch.edges_per_hop) message.add_edges_per_hop(v);
  if (batch.x.defined()) {
    bytes_of(batch.x, message.mutable_x());
    message.set_x_dtype(std::string(dtype_name(batch.x.dtype())));
    message.set_x_width(batch.x.ndim() == 2 ? batch.x.dim(1) : 1);
  }
  if (batch.y.defined()) {
    bytes_of(batch.y, message.mutable_y());
    message.set_has_y(true);
  }
  if (batch.batch_ids.defined()) bytes_of(batch.batch_ids, message.mutable_batch());
  for (const NodeTypeBatch& part : batch.node_types) {
    rpc::TypedNodes* nodes = message.add_node_types();
    bytes_of(part.nodes, nodes->mutable_nodes());
    for (int64_t v : part.nodes_per_hop) nodes->add_nodes_per_hop(v);
    if (part.batch_ids.defined()) bytes_of(part.batch_ids, nodes->mutable_batch());
    for (const auto& [name, rows] : part.attrs) {  // the source's fields: x and y
      if (name == "x") {
        bytes_of(rows, nodes->mutable_x());
        nodes->set_x_dtype(std::string(dtype_name(rows.dtype())));
        nodes->set_x_width(rows.ndim() == 2 ? rows.dim(1) : 1);
      } else if (name == "y") {
        bytes_of(rows, nodes->mutable_y());
        nodes->set_has_y(true);
      }
    }
  }
  for (const EdgeTypeBatch& part : batch.edge_types) {
    rpc::TypedEdges* edges = message.add_edge_types();
    bytes_of(part.edge_index, edges->mutable_edge_index());
    bytes_of(part.edge_ids, edges->mutable_edge_ids());
    for (int64_t v : part.edges_per_hop) edges->add_edges_per_hop(v);
  }
}

}  // namespace volley::dist::internal

namespace volley::dist::internal {
namespace {

// See decode_error_interceptor (server_support.h). gRPC's sync server decodes a request before
// the handler runs; when that fails the handler is skipped and the call ends with INTERNAL and
// protobuf's InitializationErrorString(), which is empty for proto3 messages.
// Whether `method` ("/volley.rpc.PartitionService/SampleHop") is one of the service's.
bool is_service_method(const std::string& method) {
  const std::string prefix = std::string("/") + rpc::PartitionService::service_full_name() + "/";
  if (method.rfind(prefix, 0) != 0) return false;
  const google::protobuf::ServiceDescriptor* service =
      rpc::HopRequest::descriptor()->file()->FindServiceByName("PartitionService");
  return service != nullptr && service->FindMethodByName(method.substr(prefix.size())) != nullptr;
}

class DecodeErrorInterceptor final : public grpc::experimental::Interceptor {
 public:
  DecodeErrorInterceptor(grpc::experimental::ServerRpcInfo* info, int64_t part)
      : method_(info->method() != nullptr ? info->method() : "?"), part_(part) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    using grpc::experimental::InterceptionHookPoints;
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
      const grpc::Status status = methods->GetSendStatus();
      // gRPC's answers to an undecodable request: INTERNAL (unary handlers) or UNIMPLEMENTED
      // (callback streaming handlers), both without a message.
      const bool silent = status.error_message().empty() &&
                          (status.error_code() == grpc::StatusCode::INTERNAL ||
                           status.error_code() == grpc::StatusCode::UNIMPLEMENTED);
      if (silent && is_service_method(method_)) {
        methods->ModifySendStatus(grpc::Status(
            grpc::StatusCode::INVALID_ARGUMENT,
            fmt::format("part {}: the request to {} could not be decoded (malformed protobuf: "
                        "not the message this method takes)",
                        part_, method_)));
      } else if (silent) {
        methods->ModifySendStatus(grpc::Status(
            status.error_code(),
            fmt::format("part {}: this server has no method {}", part_, quoted(method_, 200))));
      }
    }
    methods->Proceed();
  }

 private:
  std::string method_;
  int64_t part_;
};

class DecodeErrorFactory final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit DecodeErrorFactory(int64_t part) : part_(part) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    return new DecodeErrorInterceptor(info, part_);
  }

 private:
  int64_t part_;
};

}  // namespace

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> decode_error_interceptor(
    int64_t part) {
  return std::make_unique<DecodeErrorFactory>(part);
}

}  // namespace volley::dist::internal
