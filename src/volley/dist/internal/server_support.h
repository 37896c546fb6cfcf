// volley/dist/internal/server_support.h — the server's helpers (internal): the batch source an
// epoch stream samples from, limit checks and the batch message.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include <grpcpp/security/server_credentials.h>
#include <grpcpp/support/server_interceptor.h>

#include "volley/dist/server.h"
#include "volley/dist/volley.pb.h"
#include "volley/loader/neighbor_loader.h"

namespace volley::dist::internal {

// A BatchSource that hides features or labels the client did not ask for.
class Subset final : public BatchSource {
 public:
  Subset(std::shared_ptr<const BatchSource> inner, bool features, bool labels)
      : inner_(std::move(inner)), features_(features), labels_(labels) {}
  int64_t num_nodes() const override { return inner_->num_nodes(); }
  void validate(const NeighborSamplerOptions& options) const override { inner_->validate(options); }
  void sample(std::span<const int64_t> seeds, const NeighborSamplerOptions& options,
              uint64_t batch_index, SampledSubgraph& out) const override {
    inner_->sample(seeds, options, batch_index, out);
  }
  void sample_temporal(std::span<const int64_t> seeds, std::span<const int64_t> seed_times,
                       const NeighborSamplerOptions& options, uint64_t batch_index,
                       SampledSubgraph& out) const override {
    inner_->sample_temporal(seeds, seed_times, options, batch_index, out);
  }
  int64_t feature_width() const override { return features_ ? inner_->feature_width() : 0; }
  DType feature_dtype() const override { return inner_->feature_dtype(); }
  void gather_features(std::span<const int64_t> ids, DType out_dtype,
                       std::byte* out) const override {
    inner_->gather_features(ids, out_dtype, out);
  }
  bool has_labels() const override { return labels_ && inner_->has_labels(); }
  void gather_labels(std::span<const int64_t> ids, int64_t* out) const override {
    inner_->gather_labels(ids, out);
  }

 private:
  std::shared_ptr<const BatchSource> inner_;
  bool features_;
  bool labels_;
};

// A SampleEpoch request's input times into `options` (options.sampler already read from the
// request, options_from_wire). ValueError for input_time not whole int64s, or input_time without
// a time_source (the loader then checks input_time against the input nodes).
void apply_epoch_times(const rpc::EpochRequest& request, LoaderOptions& options);

// ValueError for limits out of their ranges (a reply must stay far below protobuf's 2 GiB).
void check_limits(const ServerLimits& limits);

// The credentials `tls` asks for: plaintext without a certificate, TLS with one, mutual TLS
// with a CA too. ValueError for a key without a certificate or the reverse, IoError for a file
// that cannot be read.
std::shared_ptr<grpc::ServerCredentials> server_credentials(const TlsOptions& tls);

// An interceptor factory for the server: a request gRPC cannot decode as its method's message
// (malformed protobuf) is answered INVALID_ARGUMENT "part P: the request to <method> could not be
// decoded ..." instead of gRPC's INTERNAL with an empty message. It rewrites only a status that
// is INTERNAL with an empty message, which the handlers never send (their errors always say
// what went wrong).
std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> decode_error_interceptor(
    int64_t part);

// The servers' buffer policy (both kinds of partition): per-thread buffers that grew past
// kKeepBufferBytes are released after the call that grew them, and after a call with a large
// request glibc's arenas are trimmed (the request arrived in many small pieces), so that a
// large call does not leave its peak behind.
inline constexpr size_t kKeepBufferBytes = size_t{16} << 20;
template <typename T>
void release_if_large(std::vector<T>& buffer) {
  if (buffer.capacity() * sizeof(T) > kKeepBufferBytes) std::exchange(buffer, {});
}
void after_call(size_t request_bytes);
// A SampleHop's per-thread buffers after the call (a scratch sized by a large call is dropped
// too), then after_call(request_bytes).
void release_hop_buffers(std::vector<int64_t>& targets, SamplerScratch& scratch, HopSample& sample,
                         size_t request_bytes);

// `batch` (of an epoch of `num_batches`) as a stream message.
void fill_batch_message(const Batch& batch, int64_t num_batches,
                        ::volley::rpc::BatchMessage& message);

}  // namespace volley::dist::internal
