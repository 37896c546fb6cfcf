// dist::Server's server-client stream (see server.h): SampleEpoch over a partition of either
// kind, a callback stream (internal/epoch_stream.h) of a loader's epoch whose batches are
// sampled across every part (this one in-process, the peers as one graph).
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <mutex>

#include "volley/dist/internal/epoch_stream.h"
#include "volley/dist/internal/server_state.h"
#include "volley/dist/internal/server_support.h"
#include "volley/dist/internal/wire.h"

namespace volley::dist {

namespace rpc = ::volley::rpc;

namespace {

grpc::Status refuse(grpc::StatusCode code, std::string message) {
  return grpc::Status(code, std::move(message));
}

// The loader options a SampleEpoch request asks for (validated by the loader).
LoaderOptions epoch_loader_options(const rpc::EpochRequest& request, int default_concurrency) {
  LoaderOptions loader_options;
  loader_options.batch_size = request.batch_size();
  loader_options.shuffle = request.shuffle();
  loader_options.drop_last = request.drop_last();
  loader_options.seed = request.seed();
  loader_options.num_threads =
      request.concurrency() > 0 ? request.concurrency() : default_concurrency;
  VOLLEY_REQUIRE(loader_options.num_threads >= 0 && loader_options.num_threads <= 256, ValueError,
                 "concurrency must be in [0, 256], got {}", loader_options.num_threads);
  loader_options.sampler = internal::options_from_wire(request.sampler());
  if (request.features() && !request.feature_dtype().empty())  // typed: "" is as stored
    loader_options.feature_dtype = dtype_from_name(request.feature_dtype());
  internal::apply_epoch_times(request, loader_options);
  return loader_options;
}

}  // namespace

grpc::Status Server::State::check_stream_call(const rpc::EpochRequest& request) const {
  if (request.input_type().empty() == (typed != nullptr)) {
    return refuse(grpc::StatusCode::INVALID_ARGUMENT,
                  typed ? fmt::format("SampleEpoch: this server serves part {} of a heterogeneous "
                                      "partitioned dataset; name the input nodes' type "
                                      "(input_type)",
                                      served_part)
                        : fmt::format("SampleEpoch: this server serves part {} of a homogeneous "
                                      "partitioned dataset; it has no node type '{}'",
                                      served_part, internal::quoted(request.input_type(), 64)));
  }
  if (auto status = check_stream_capacity(); !status.ok()) return status;
  if (auto status = check_request(request.protocol(), request.fingerprint()); !status.ok())
    return status;
  if (!options.peers.empty()) return grpc::Status::OK;
  return refuse(grpc::StatusCode::FAILED_PRECONDITION,
                fmt::format("part {}: this server was started without peers; server-client "
                            "mode needs the addresses of every part's server (--peers)",
                            served_part));
}

namespace {

// The peers as one graph of either kind (`Graph`: DistGraph, DistHeteroGraph), this part
// in-process, connected once into `cached`; with calls that end within half the client's
// deadline (internal::peer_options_within) a stream's own connection instead.
template <typename Graph, typename Part>
std::shared_ptr<const Graph> peers_as_one(const ServerOptions& options, std::mutex& mutex,
                                          std::shared_ptr<const Graph>& cached,
                                          const std::shared_ptr<const Part>& part,
                                          const std::string& fingerprint, double client_deadline) {
  if (auto shorter = internal::peer_options_within(options.peer_client, client_deadline)) {
    return Graph::connect(options.peers, *shorter, part, fingerprint);
  }
  std::lock_guard lock(mutex);
  if (!cached) cached = Graph::connect(options.peers, options.peer_client, part, fingerprint);
  return cached;
}

}  // namespace

std::shared_ptr<const DistGraph> Server::State::peer_graph(double client_deadline) {
  return peers_as_one(options, peers_mutex, peers, partition, fingerprint, client_deadline);
}

std::shared_ptr<const DistHeteroGraph> Server::State::typed_peer_graph(double client_deadline) {
  return peers_as_one(options, peers_mutex, typed_peers, typed, fingerprint, client_deadline);
}

// The loader of a SampleEpoch stream: the homogeneous loader over the peers as one graph, or the
// typed loader over the peers' DistHeteroSource (x in the asked dtype, or as stored).
std::unique_ptr<NeighborLoader> Server::State::epoch_loader(const rpc::EpochRequest& request,
                                                            std::vector<int64_t> inputs) {
  LoaderOptions loader_options = epoch_loader_options(request, options.default_concurrency);
  // The caller's seeds as sent: an empty list is an epoch without batches (as in PyG).
  Array input_nodes = Array::from_vector(inputs);
  if (!typed) {
    auto source = std::make_shared<internal::Subset>(peer_graph(request.deadline_seconds()),
                                                     request.features(), request.labels());
    return std::make_unique<NeighborLoader>(source, input_nodes, loader_options);  // validates
  }
  if (request.input_time().empty()) loader_options.input_time.reset();  // the seeds' node times
  std::optional<DType> x_dtype;
  if (!request.feature_dtype().empty()) x_dtype = dtype_from_name(request.feature_dtype());
  auto source = std::make_shared<DistHeteroSource>(typed_peer_graph(request.deadline_seconds()),
                                                   loader_options.sampler, x_dtype,
                                                   request.features(), request.labels());
  return std::make_unique<NeighborLoader>(source, request.input_type(), input_nodes,
                                          loader_options);
}

// An epoch of a loader over the peers as one graph (this part in-process), batch by batch.
grpc::ServerWriteReactor<rpc::BatchMessage>* Server::State::SampleEpoch(
    grpc::CallbackServerContext* context, const rpc::EpochRequest* request) {
  return internal::start_stream(*this, [this, context, request](auto& producer) {
    return serve(context, [&]() -> grpc::Status {
      if (auto status = check_stream_call(*request); !status.ok()) return status;
      std::vector<int64_t> inputs;
      if (!internal::unpack(request->input_nodes(), inputs)) {
        return refuse(grpc::StatusCode::INVALID_ARGUMENT,
                      fmt::format("part {}: input_nodes has {} bytes, not a multiple of 8",
                                  served_part, request->input_nodes().size()));
      }
      producer = internal::epoch_producer(epoch_loader(*request, std::move(inputs)),
                                          request->epoch(), request->first_batch());
      return grpc::Status::OK;
    });
  });
}

}  // namespace volley::dist
