// volley/dist/internal/wire.h — what the client and the server share about the wire (internal).
//
// Packed id lists (little-endian int64, or int32 where every id fits, in protobuf `bytes`), the
// sampling options as a message, the mapping between Volley's error kinds and gRPC status codes,
// and the channel / call settings both sides agree on.
#pragma once

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "volley/core/error.h"
#include "volley/dist/volley.pb.h"
#include "volley/sampling/neighbor_sampler.h"

namespace volley::dist::internal {

// The metadata key carrying the access token.
inline constexpr const char* kTokenKey = "volley-token";

// `values` as packed bytes (the wire's byte order is the host's: Volley runs on little-endian
// machines only, x86-64 and aarch64).
template <typename T>
void pack(std::span<const T> values, std::string* out) {
  out->assign(reinterpret_cast<const char*>(values.data()), values.size_bytes());
}

// Appends packed bytes to a vector of T; false, with `out` unchanged, when the length is not a
// multiple of sizeof(T).
template <typename T>
bool append(const std::string& bytes, std::vector<T>& out) {
  if (bytes.size() % sizeof(T) != 0) return false;
  const size_t before = out.size();
  out.resize(before + bytes.size() / sizeof(T));
  if (!bytes.empty()) std::memcpy(out.data() + before, bytes.data(), bytes.size());
  return true;
}

// Packed bytes as a vector of T; false when the length is not a multiple of sizeof(T).
template <typename T>
bool unpack(const std::string& bytes, std::vector<T>& out) {
  if (bytes.size() % sizeof(T) != 0) return false;
  out.clear();
  return append(bytes, out);
}

// Non-negative ids as packed bytes of the narrowest width that holds them all: 4 bytes (int32)
// when every id is below 2^31, else 8 (int64). Returns the width written. Halves a hop reply's
// bytes on graphs of fewer than 2^31 nodes and edges (every copy, the kernel's included).
inline uint32_t pack_ids(std::span<const int64_t> ids, std::string* out) {
  uint64_t bits = 0;
  for (const int64_t id : ids) bits |= static_cast<uint64_t>(id);
  if (bits >= (uint64_t{1} << 31)) {
    pack(ids, out);
    return 8;
  }
  out->resize(ids.size() * sizeof(int32_t));
  char* bytes = out->data();
  for (size_t i = 0; i < ids.size(); ++i) {
    const auto id = static_cast<int32_t>(ids[i]);
    std::memcpy(bytes + i * sizeof(int32_t), &id, sizeof(int32_t));
  }
  return 4;
}

// Appends packed ids of `width` bytes each (pack_ids; 0 is read as 8) to `out`. False, with
// `out` unchanged, when the width is neither 4 nor 8 or the length is not a multiple of it.
inline bool append_ids(const std::string& bytes, uint32_t width, std::vector<int64_t>& out) {
  if (width == 0 || width == 8) return append(bytes, out);
  if (width != 4 || bytes.size() % width != 0) return false;
  const size_t before = out.size(), count = bytes.size() / width;
  out.resize(before + count);
  for (size_t i = 0; i < count; ++i) {
    int32_t id;
    std::memcpy(&id, bytes.data() + i * sizeof(int32_t), sizeof(int32_t));
    out[before + i] = id;
  }
  return true;
}

// A server handler's error as the status the client maps back to the same kind.
inline grpc::StatusCode status_code_for(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kValue:
      return grpc::StatusCode::INVALID_ARGUMENT;
    case ErrorKind::kIndex:
      return grpc::StatusCode::OUT_OF_RANGE;
    case ErrorKind::kConnection:
      return grpc::StatusCode::UNAVAILABLE;
    case ErrorKind::kTimeout:
      return grpc::StatusCode::DEADLINE_EXCEEDED;
    case ErrorKind::kPermission:
      return grpc::StatusCode::PERMISSION_DENIED;
    case ErrorKind::kIo:
    case ErrorKind::kRuntime:
    case ErrorKind::kInternal:
      return grpc::StatusCode::INTERNAL;
  }
  return grpc::StatusCode::INTERNAL;
}

inline ErrorKind error_kind_for(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::FAILED_PRECONDITION:
    case grpc::StatusCode::UNIMPLEMENTED:
      return ErrorKind::kValue;
    case grpc::StatusCode::OUT_OF_RANGE:
      return ErrorKind::kIndex;
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::CANCELLED:
    case grpc::StatusCode::ABORTED:
      return ErrorKind::kConnection;
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return ErrorKind::kTimeout;
    case grpc::StatusCode::UNAUTHENTICATED:
    case grpc::StatusCode::PERMISSION_DENIED:
      return ErrorKind::kPermission;
    case grpc::StatusCode::RESOURCE_EXHAUSTED:  // a server out of threads or memory (busy)
      return ErrorKind::kConnection;
    default:
      return ErrorKind::kRuntime;
  }
}

// The contents of a PEM file named by TlsOptions; IoError naming `what` and the file otherwise.
std::string read_pem(const std::string& path, const char* what);

// Marks a server's error that is its peer's failure, not its own (server-client mode).
inline constexpr const char* kPeerFailure = "is serving, but its peer failed:";

// `text` as an error message may quote it: at most `limit` bytes, then how much was left out.
// (A request's fingerprint or dtype can be a megabyte; gRPC refuses status messages that big.)
inline std::string quoted(std::string_view text, size_t limit = 80) {
  if (text.size() <= limit) return std::string(text);
  return fmt::format("{}... ({} bytes)", text.substr(0, limit), text.size());
}

// The sampling options on the wire: every request that samples carries them as one
// SamplerOptions (volley.proto), written here and read below, so that a new option is one field
// there and one line in each of these. `with_fanouts` false: a hop request, which carries its
// one fanout itself.
inline void options_to_wire(const NeighborSamplerOptions& options, rpc::SamplerOptions* out,
                            bool with_fanouts = true) {
  if (with_fanouts) {
    for (const int64_t fanout : options.fanouts) out->add_fanouts(fanout);
    for (const auto& [type, list] : options.fanouts_by_type) {
      rpc::EdgeTypeFanouts* entry = out->add_fanouts_by_type();
      entry->set_edge_type(type.name());
      for (const int64_t fanout : list) entry->add_fanouts(fanout);
    }
  }
  out->set_replace(options.replace);
  out->set_weighted(options.weighted);
  out->set_seed(options.seed);
  out->set_disjoint(options.disjoint);
  if (options.time_source != TimeSource::kNone) {
    out->set_time_source(options.time_source == TimeSource::kEdge ? "edge" : "node");
    out->set_temporal_strategy(temporal_strategy_name(options.temporal_strategy));
  }
}

// The options a request's SamplerOptions give. ValueError naming the value for a time_source
// other than "edge" / "node" (or none), a temporal_strategy other than "uniform" / "last" (or
// none), or an edge type name that is not "src__relation__dst". The samplers check the rest.
inline NeighborSamplerOptions options_from_wire(const rpc::SamplerOptions& wire) {
  NeighborSamplerOptions options;
  options.fanouts.assign(wire.fanouts().begin(), wire.fanouts().end());
  for (const rpc::EdgeTypeFanouts& entry : wire.fanouts_by_type()) {
    options.fanouts_by_type.emplace_back(
        EdgeType::from_name(entry.edge_type()),
        std::vector<int64_t>(entry.fanouts().begin(), entry.fanouts().end()));
  }
  options.replace = wire.replace();
  options.weighted = wire.weighted();
  options.seed = wire.seed();
  options.disjoint = wire.disjoint();
  const std::string& source = wire.time_source();
  VOLLEY_REQUIRE(source.empty() || source == "edge" || source == "node", ValueError,
                 "time_source must be \"edge\" or \"node\", got {}", quoted(source, 32));
  if (!source.empty())
    options.time_source = source == "edge" ? TimeSource::kEdge : TimeSource::kNode;
  const std::string& strategy = wire.temporal_strategy();
  VOLLEY_REQUIRE(strategy.empty() || strategy == "uniform" || strategy == "last", ValueError,
                 "temporal_strategy must be \"uniform\" or \"last\", got {}", quoted(strategy, 32));
  if (strategy == "last") options.temporal_strategy = TemporalStrategy::kLast;
  return options;
}

// Room left in a message limit for everything but the packed ids or rows (framing, the other
// fields).
inline constexpr int64_t kMessageSlack = int64_t{64} << 10;

// Keepalive pings find a peer that vanished without closing its connections (a host that died,
// a cable pulled) in about 15 s even when no call is in flight.
inline constexpr int kKeepaliveMs = 10'000;
inline constexpr int kKeepaliveTimeoutMs = 5'000;

// `seconds` as a clock duration for a deadline or a wait: NaN or negative is none, and at most a
// year (a longer one, e.g. 1e23 s, would overflow the clocks' integer ticks).
inline std::chrono::nanoseconds bounded_wait(double seconds) {
  constexpr double kLongest = 365.0 * 24 * 3600;
  const double bounded = std::isnan(seconds) ? 0.0 : std::clamp(seconds, 0.0, kLongest);
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::duration<double>(bounded));
}

}  // namespace volley::dist::internal
