// volley/dist/internal/server_requests.h — the server's request checks and link-prediction
// answers (internal; server_requests.cc), kept out of server.cc's handlers.
#pragma once

#include <grpcpp/support/status.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "volley/dist/volley.pb.h"
#include "volley/graph/csr.h"
#include "volley/partition/partition.h"
#include "volley/sampling/neighbor_sampler.h"

namespace volley::dist::internal {

// The part a handler serves: its number, its rows (global ids [first, first + rows)) and the
// ids one call may list.
struct OwnedRange {
  int64_t part;
  int64_t first;
  int64_t rows;
  int64_t max_ids;
};

// Unpacks owned ids (global) from `bytes` into `ids`; INVALID_ARGUMENT for a size that is no
// multiple of 8 or more than max_ids ids (checked before anything is allocated), OUT_OF_RANGE
// naming the first id not owned. `field` names the request field in messages.
grpc::Status owned_ids(const OwnedRange& range, const std::string& bytes, std::vector<int64_t>& ids,
                       const char* field);

// The most bytes a SampleHop reply for `targets` (owned, global) may take: 4 a target (its
// count) and 16 a pick, with every pick the sampler could make. Saturates at `saturated`.
int64_t hop_reply_bound(const Csr& graph, int64_t first, std::span<const int64_t> targets,
                        int64_t fanout, bool replace, int64_t saturated);

// HasEdges' answer for owned `rows` (global, checked) and the packed `others`: found[i] = 1
// when others[i] is in row rows[i] (binary search when `rows_sorted`, a scan otherwise).
// INVALID_ARGUMENT when `others` is not one int64 per row, or the reply (a byte a pair) would
// exceed `max_reply_bytes`.
grpc::Status answer_has_edges(const Csr& graph, const OwnedRange& range, bool rows_sorted,
                              std::span<const int64_t> rows, const std::string& others,
                              int64_t max_reply_bytes, rpc::EdgesReply& reply);

// GetRows(DEGREES): the row length of each owned id (global, checked), int64, into `reply`.
void answer_degrees(const Csr& graph, int64_t first, std::span<const int64_t> ids,
                    rpc::RowsReply& reply);

// INVALID_ARGUMENT naming the edge type when a SampleHop to a homogeneous partition names one.
grpc::Status untyped_hop(const std::string& edge_type, int64_t part);

// The times of a temporal SampleHop (time_source or target_times set, either partition kind;
// `sampler` read from the request by options_from_wire): `target_times` (the caller's buffer,
// unpacked). INVALID_ARGUMENT naming the part and value for target_times without a time_source,
// target_times not one int64 per target, or `weighted`.
grpc::Status parse_hop_times(const rpc::HopRequest& request, int64_t part, size_t num_targets,
                             NeighborSamplerOptions& sampler, std::vector<int64_t>& target_times);

// A temporal SampleHop (time_source or target_times set): `times` (target_times: the caller's
// buffer, unpacked) for `partition`, as `sampler` (read from the request) asks.
// INVALID_ARGUMENT as parse_hop_times;
// FAILED_PRECONDITION when the partition lacks the times asked for, or "last" meets rows not
// sorted by them. Messages name the part and the offending value.
grpc::Status temporal_hop(const Partition& partition, const rpc::HopRequest& request,
                          size_t num_targets, NeighborSamplerOptions& sampler,
                          std::vector<int64_t>& target_times, HopTimes& times);

}  // namespace volley::dist::internal
