// dist::Server's server-client streams (see server.h): SampleEpoch over a homogeneous partition,
// SampleHeteroBatches over a heterogeneous one, each a callback stream (internal/epoch_stream.h)
// whose batches are sampled across every part (this one in-process, the peers as one graph).
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <mutex>

#include "volley/dist/internal/epoch_stream.h"
#include "volley/dist/internal/hetero_client_state.h"
#include "volley/dist/internal/server_state.h"
#include "volley/dist/internal/server_support.h"
#include "volley/dist/internal/wire.h"
#include "volley/sampling/hetero_sampler.h"

namespace volley::dist {

namespace rpc = ::volley::rpc;

namespace {

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
      : source_(std::move(graph), std::move(sampler),
                request.feature_dtype().empty()
                    ? std::nullopt
                    : std::optional<DType>(dtype_from_name(request.feature_dtype())),
                request.features(), request.labels()),
        request_(request),
        seeds_(std::move(seeds)),
        seed_times_(std::move(seed_times)) {}

  bool next(rpc::HeteroBatchMessage& message) override {
    const auto size = static_cast<size_t>(request_.batch_size());
    if (begin_ >= seeds_.size()) return false;
    const std::span<const int64_t> batch =
        std::span<const int64_t>(seeds_).subspan(begin_, std::min(size, seeds_.size() - begin_));
    const std::span<const int64_t> times =
        seed_times_.empty() ? std::span<const int64_t>()
                            : std::span<const int64_t>(seed_times_).subspan(begin_, batch.size());
    source_.sample({{request_.node_type(), batch, times}}, source_.options().seed,
                   request_.first_batch_index() + static_cast<uint64_t>(index_), sub_, scratch_);
    message.set_index(index_);
    internal::fill_hetero_batch(source_, sub_, message);
    begin_ += batch.size();
    ++index_;
    return true;
  }
  // A peer that failed (unreachable, no answer in time); other errors are the request's.
  bool blames_peer(const Error& error) const override {
    return error.kind() == ErrorKind::kTimeout || error.kind() == ErrorKind::kConnection;
  }

 private:
  DistHeteroSource source_;  // the typed loaders' source: sampling, then x and y as asked
  const rpc::HeteroBatchesRequest& request_;
  std::vector<int64_t> seeds_, seed_times_;
  HeteroSampledSubgraph sub_;
  HeteroSamplerScratch scratch_;
  size_t begin_ = 0;
  int64_t index_ = 0;
};

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
  if (request.features()) loader_options.feature_dtype = dtype_from_name(request.feature_dtype());
  internal::apply_epoch_times(request, loader_options);
  return loader_options;
}

}  // namespace

grpc::Status Server::State::check_stream_call(bool typed_call, uint32_t protocol,
                                              const std::string& request_fingerprint) const {
  if (typed_call != (typed != nullptr)) {
    return refuse(grpc::StatusCode::UNIMPLEMENTED,
                  typed_call
                      ? fmt::format("SampleHeteroBatches: this server serves part {} of a "
                                    "homogeneous partitioned dataset; stream its batches with "
                                    "SampleEpoch",
                                    served_part)
                      : fmt::format("SampleEpoch: this server serves part {} of a heterogeneous "
                                    "partitioned dataset; stream typed batches with "
                                    "SampleHeteroBatches",
                                    served_part));
  }
  if (auto status = check_stream_capacity(); !status.ok()) return status;
  if (auto status = check_request(protocol, request_fingerprint); !status.ok()) return status;
  if (!options.peers.empty()) return grpc::Status::OK;
  return refuse(grpc::StatusCode::FAILED_PRECONDITION,
                fmt::format("part {}: this server was started without peers; server-client "
                            "mode needs the addresses of every part's server (--peers)",
                            served_part));
}

// The peers as one graph, this part in-process (connected once), with calls that end within half
// the client's deadline (internal::peer_options_within: a stream's own connection then).
std::shared_ptr<const DistGraph> Server::State::peer_graph(double client_deadline) {
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

std::shared_ptr<const DistHeteroGraph> Server::State::typed_peer_graph(double client_deadline) {
  if (auto shorter = internal::peer_options_within(options.peer_client, client_deadline)) {
    return DistHeteroGraph::connect(options.peers, *shorter, typed, fingerprint);
  }
  std::lock_guard lock(peers_mutex);
  if (!typed_peers) {
    typed_peers = DistHeteroGraph::connect(options.peers, options.peer_client, typed, fingerprint);
  }
  return typed_peers;
}

// An epoch of a loader over the peers as one graph (this part in-process), batch by batch.
grpc::ServerWriteReactor<rpc::BatchMessage>* Server::State::SampleEpoch(
    grpc::CallbackServerContext* context, const rpc::EpochRequest* request) {
  return internal::start_stream<rpc::BatchMessage>(*this, [this, context, request](auto& producer) {
    return serve(context, [&]() -> grpc::Status {
      if (auto status = check_stream_call(false, request->protocol(), request->fingerprint());
          !status.ok())
        return status;
      std::vector<int64_t> inputs;
      if (!internal::unpack(request->input_nodes(), inputs)) {
        return refuse(grpc::StatusCode::INVALID_ARGUMENT,
                      fmt::format("part {}: input_nodes has {} bytes, not a multiple of 8",
                                  served_part, request->input_nodes().size()));
      }
      LoaderOptions loader_options = epoch_loader_options(*request, options.default_concurrency);
      auto source = std::make_shared<internal::Subset>(peer_graph(request->deadline_seconds()),
                                                       request->features(), request->labels());
      // The caller's seeds as sent: an empty list is an epoch without batches (as in PyG).
      auto loader = std::make_unique<NeighborLoader>(source, Array::from_vector(inputs),
                                                     loader_options);  // validates all
      producer = internal::epoch_producer(std::move(loader), request->epoch());
      return grpc::Status::OK;
    });
  });
}

// The batches of the caller's seeds (in epoch order) sampled across every part and gathered.
grpc::ServerWriteReactor<rpc::HeteroBatchMessage>* Server::State::SampleHeteroBatches(
    grpc::CallbackServerContext* context, const rpc::HeteroBatchesRequest* request) {
  return internal::start_stream<rpc::HeteroBatchMessage>(*this, [this, context,
                                                                 request](auto& producer) {
    return serve(context, [&]() -> grpc::Status {
      if (auto status = check_stream_call(true, request->protocol(), request->fingerprint());
          !status.ok())
        return status;
      std::vector<int64_t> seeds;
      if (!internal::unpack(request->seeds(), seeds) || request->batch_size() < 1) {
        return refuse(grpc::StatusCode::INVALID_ARGUMENT,
                      fmt::format("part {}: seeds of {} bytes (int64 each) / batch_size {} "
                                  "(>= 1) invalid",
                                  served_part, request->seeds().size(), request->batch_size()));
      }
      std::shared_ptr<const DistHeteroGraph> graph = typed_peer_graph(request->deadline_seconds());
      graph->info().node_type_index(request->node_type());  // ValueError naming the types
      std::vector<int64_t> seed_times;
      HeteroSamplerOptions sampler =
          internal::hetero_batches_sampler(*request, seeds.size(), seed_times);
      producer = std::make_unique<TypedBatches>(std::move(graph), *request, std::move(seeds),
                                                std::move(seed_times), std::move(sampler));
      return grpc::Status::OK;
    });
  });
}

}  // namespace volley::dist
