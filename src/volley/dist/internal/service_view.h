// volley/dist/internal/service_view.h — what both clients share (internal): a connected service
// of either kind as one view, the distributed sampler over it (sample_across, dist_sampler.cc)
// and the row gather (gather_across, feature_client.cc).
//
// DistGraph (one node type, one edge type) and DistHeteroGraph (a node type's book per type, an
// edge type's rows per type) describe their service as a ServiceView. Per
// hop, every edge type's frontier (the nodes of its destination type first reached at the
// previous hop) is split by owner; every edge type's and part's SampleHop calls are in flight at
// once while the local part (worker mode) is sampled in-process; the answers are merged edge
// type by edge type, each in frontier order, through the CPU sampler's TypedSubgraphBuilder, so
// the batch equals the local sampler's over the whole renumbered graph, bit for bit. Disjoint
// (and temporal) batches run over tree-qualified keys (tree × the type's node count + node),
// each target travelling with its tree's seed time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "volley/dist/client.h"
#include "volley/dist/internal/client_calls.h"
#include "volley/sampling/subgraph_builder.h"

namespace volley::dist::internal {

// What sample_across and gather_across read of a connected service.
struct ServiceView {
  const ClientOptions& options;
  const std::vector<std::string>& addresses;
  const Servers& servers;                 // per part (null: the local part)
  const std::vector<PartLimits>& limits;  // per part
  const std::string& fingerprint;
  int64_t local_part = -1;  // worker mode: the part sampled in-process (sample_local)
  std::vector<const PartitionBook*> books;  // per node type: new ids [begin(p), end(p)) on p
  std::vector<std::string> type_names;      // per node type: RowsRequest.node_type ("": one type)
  struct Edges {
    int src = 0, dst = 0;
    std::string name;  // HopRequest.edge_type: "src__relation__dst", "" for a homogeneous one
  };
  std::vector<Edges> edges;  // per edge type
  // The longest row of edge type e at part p (-1: unknown).
  std::function<int64_t(size_t part, size_t edge_type)> max_degree;
  // Worker mode: edge type e's picks at hop `hop` of `targets` (owned by the local part; `times`:
  // each target's tree's seed time, temporal sampling) into `out`, as the servers pick.
  std::function<void(size_t edge_type, int hop, int64_t fanout, std::span<const int64_t> targets,
                     std::span<const int64_t> times, HopSample& out)>
      sample_local;
  // Worker mode: rows of `kind` of the nodes `ids` of node type `type` (owned by the local part)
  // into `rows`, as the servers answer GetRows.
  std::function<void(int type, rpc::RowsRequest::Kind kind, std::span<const int64_t> ids,
                     DType out_dtype, std::byte* rows)>
      local_rows;

  int64_t num_parts() const { return static_cast<int64_t>(addresses.size()); }
  [[noreturn]] void fail_call(const grpc::Status& status, int64_t part, const char* call) const {
    fail(status, addresses[static_cast<size_t>(part)], part, call, options.deadline_seconds);
  }
};

// The view of either client's state (feature_client.cc): its service's node types and edge
// types, its local part's rows (ServiceClient::local_rows). sample_local is the caller's.
ServiceView view_of(const ServiceClient& state);

// One batch into `lists` (a HostSubgraph's or a HeteroSampledSubgraph's, TypedLists): the seed
// `groups` (ids checked by the caller; ValueError for a repeated one unless disjoint), `fanouts`
// per edge type (one per hop), `options` (replace, weighted, seed, disjoint, times), batch index
// `batch_index`; temporal: `tree_times` holds each seed's time (its position over all groups).
// ValueError when tree-qualified keys would pass 2^62; the calls' errors (client.h), and
// RuntimeError naming the part for a malformed answer.
void sample_across(const ServiceView& service, std::span<const TypedSeeds> groups,
                   const std::vector<std::vector<int64_t>>& fanouts,
                   const NeighborSamplerOptions& options, uint64_t batch_index,
                   std::span<const int64_t> tree_times, TypedLists& lists);

// Rows of `kind` of `ids` (ids of node type `type`) from their owners into `out` (`row_bytes` a
// row, of `out_dtype`), in calls under each server's limits, all parts at once; the local part's
// (worker mode) through local_rows. IndexError for an id outside its type's range (naming the
// type when it has a name), ValueError for a row larger than a reply may carry; the calls'
// errors, and RuntimeError naming the part for a malformed answer.
void gather_across(const ServiceView& service, int type, rpc::RowsRequest::Kind kind,
                   std::span<const int64_t> ids, DType out_dtype, size_t row_bytes, std::byte* out);

}  // namespace volley::dist::internal
