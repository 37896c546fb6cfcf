// volley/dist/internal/hetero_client_state.h — what DistHeteroGraph's files share (internal): the
// state of a connected DistHeteroGraph and the per-type row gather (hetero_rows.cc).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "volley/dist/hetero_client.h"
#include "volley/dist/internal/client_calls.h"
#include "volley/dist/internal/hetero_times.h"
#include "volley/sampling/hetero_sampler.h"

namespace volley::dist {

struct DistHeteroGraph::State : internal::PartClients {
  HeteroServiceInfo info;
  std::vector<std::vector<int64_t>> max_degree;  // [part][edge type]
  std::shared_ptr<const HeteroPartition> local;  // worker mode: sampled and gathered in-process
  std::unique_ptr<internal::HeteroHopTimes> local_times;  // the local part's directory's
};

namespace internal {

// The pick options of one typed hop of edge type `type` (its rows `csr`): the heterogeneous
// sampler's (hetero_sampler.h) — its per-edge-type stream seed, weights only where the edge type
// has them. The server and the worker's local part both sample with these.
inline NeighborSamplerOptions hetero_hop_options(const EdgeType& type, const Csr& csr, bool replace,
                                                 bool weighted, uint64_t seed) {
  NeighborSamplerOptions options;
  options.replace = replace;
  options.weighted = weighted && csr.has_weights();
  options.seed = edge_type_stream_seed(seed, type);
  return options;
}

// What the Info answer of a heterogeneous server describes; ValueError for a homogeneous one
// (hetero_client.cc).
HeteroServiceInfo hetero_service_info(const rpc::InfoReply& reply, const std::string& address);

// Rows of `ids` (new ids of node type `type`) from their owners into `out` (`row_bytes` a row,
// rows of `out_dtype`); the local part's (worker mode) from memory. IndexError naming the type
// for an id outside its range; the calls' errors.
void gather_typed_rows(const DistHeteroGraph::State& state, int type, rpc::RowsRequest::Kind kind,
                       std::span<const int64_t> ids, DType out_dtype, size_t row_bytes,
                       std::byte* out);

}  // namespace internal
}  // namespace volley::dist
