// volley/dist/internal/server_state.h — the state and handlers of a dist::Server (internal;
// server.cc answers the unary calls, server_streams.cc the batch streams).
//
// A partition of either kind is served through one view: its node types (a homogeneous
// partition has one, unnamed) and its edge types (one, unnamed), each with its owned id range,
// tables and rows. The calls that name a type (SampleHop's edge_type, GetRows' and NodeData's
// node_type) resolve it against that view, and the rest of each handler is written once; only
// Info's reply layout, the link calls (HasEdges, GetRows(DEGREES): homogeneous) and the source
// a server-client stream's loader samples (a DistGraph or a DistHeteroSource over the peers)
// depend on the kind.
#pragma once

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "volley/dist/client.h"
#include "volley/dist/hetero_client.h"
#include "volley/dist/internal/hetero_times.h"
#include "volley/dist/internal/server_requests.h"
#include "volley/dist/internal/service_core.h"
#include "volley/dist/server.h"
#include "volley/dist/volley.grpc.pb.h"
#include "volley/partition/hetero_partition.h"
#include "volley/partition/partition.h"

namespace volley::dist {

class NodeDataService;

namespace internal {

// Reply size estimates stop growing here (no overflow for any fanout).
constexpr int64_t kSaturated = int64_t{1} << 60;

// One node type as the handlers see it.
struct ServedType {
  std::string name;             // "" for a homogeneous partition's only type
  int64_t first = 0, rows = 0;  // owned global ids [first, first + rows)
  const std::optional<Array>* features = nullptr;
  const std::optional<Array>* labels = nullptr;
  const std::optional<Array>* node_time = nullptr;  // by global id (typed) / owned row (not)
  int64_t num_classes = 0;
};

// One edge type as the handlers see it: rows are owned nodes of type `dst`.
struct ServedEdges {
  const Csr* csr = nullptr;
  int dst = 0;
  int64_t max_degree = 0;  // of this part's rows
};

}  // namespace internal

namespace rpc_base = ::volley::rpc;
using ServerService =
    rpc_base::PartitionService::WithCallbackMethod_SampleEpoch<rpc_base::PartitionService::Service>;

struct Server::State final : ServerService, internal::ServiceCore {
  std::string directory;
  std::shared_ptr<const Partition> partition;       // a homogeneous partition, or null
  std::shared_ptr<const HeteroPartition> typed;     // a heterogeneous partition, or null
  std::unique_ptr<internal::HeteroHopTimes> times;  // typed: the directory's time files
  std::vector<internal::ServedType> types;
  std::vector<internal::ServedEdges> edges;
  int64_t num_edges_total = 0;  // homogeneous: the whole graph's (Info)

  std::mutex peers_mutex;  // the peers as one graph, connected on the first stream
  std::shared_ptr<const DistGraph> peers;
  std::shared_ptr<const DistHeteroGraph> typed_peers;
  std::shared_ptr<const NodeDataService> node_data_peers;  // the peers' tables (AGGREGATE)

  std::once_flag rows_sorted_once;  // HasEdges: binary search in sorted rows, else a scan
  bool rows_sorted = false;

  // Loads part `part` of either kind (see Server's constructor) and fills the view.
  void load(const std::string& path, int64_t part, ServerOptions& server_options);

  // The owned range of node type `type`.
  internal::OwnedRange owned(int type) const;
  // The node type a call names: "" for a homogeneous partition, a known name for a typed one;
  // else INVALID_ARGUMENT listing what the partition has.
  grpc::Status node_type(const std::string& name, int& type) const;
  // The edge type a SampleHop names, likewise.
  grpc::Status edge_type(const std::string& name, int& index) const;
  // Owned ids of node type `type` from `bytes` (OUT_OF_RANGE names a typed partition's type).
  grpc::Status owned_ids(int type, const std::string& bytes, std::vector<int64_t>& ids,
                         const char* field) const;

  // --- unary calls (server.cc) ---------------------------------------------------------------
  grpc::Status Info(grpc::ServerContext* context, const rpc_base::InfoRequest*,
                    rpc_base::InfoReply* reply) override;
  grpc::Status Health(grpc::ServerContext* context, const rpc_base::HealthRequest*,
                      rpc_base::HealthReply* reply) override;
  grpc::Status SampleHop(grpc::ServerContext* context, const rpc_base::HopRequest* request,
                         rpc_base::HopReply* reply) override;
  grpc::Status GetRows(grpc::ServerContext* context, const rpc_base::RowsRequest* request,
                       rpc_base::RowsReply* reply) override;
  grpc::Status NodeData(grpc::ServerContext* context, const rpc_base::NodeDataRequest* request,
                        rpc_base::NodeDataReply* reply) override;
  grpc::Status HasEdges(grpc::ServerContext* context, const rpc_base::EdgesRequest* request,
                        rpc_base::EdgesReply* reply) override;

  void fill_info(rpc_base::InfoReply& reply) const;
  void fill_typed_info(rpc_base::InfoReply& reply) const;
  grpc::Status sample_hop_into(const rpc_base::HopRequest& request, std::vector<int64_t>& targets,
                               SamplerScratch& scratch, HopSample& sample,
                               rpc_base::HopReply& reply);
  grpc::Status get_rows_into(const rpc_base::RowsRequest& request, std::vector<int64_t>& ids,
                             rpc_base::RowsReply& reply);
  grpc::Status node_times_into(int type, std::span<const int64_t> ids, rpc_base::RowsReply& reply);

  // --- server-client streams (server_streams.cc) --------------------------------------------
  grpc::ServerWriteReactor<rpc_base::BatchMessage>* SampleEpoch(
      grpc::CallbackServerContext* context, const rpc_base::EpochRequest* request) override;

  // A stream call's checks, in order: the input type against the partition's kind
  // (INVALID_ARGUMENT: a typed partition needs one, a homogeneous one takes none), the cap on
  // open streams, protocol and fingerprint, peers to sample across (FAILED_PRECONDITION without).
  grpc::Status check_stream_call(const rpc_base::EpochRequest& request) const;
  // The loader of a SampleEpoch stream over the peers as one graph (either kind).
  std::unique_ptr<NeighborLoader> epoch_loader(const rpc_base::EpochRequest& request,
                                               std::vector<int64_t> inputs);
  std::shared_ptr<const DistGraph> peer_graph(double client_deadline);
  std::shared_ptr<const DistHeteroGraph> typed_peer_graph(double client_deadline);

  // --- NodeData AGGREGATE (server_aggregate.cc) -----------------------------------------------
  // The owned rows of request.target() from request.name()'s rows over this part's
  // in-neighbors, the other parts' rows fetched from the peers (ValueError without peers, for a
  // typed partition, weighted "gcn", a missing table or a target of another shape).
  grpc::Status aggregate_node_data(const rpc_base::NodeDataRequest& request);
  // The peers' node tables, connected once (this part's own entry is its own address).
  std::shared_ptr<const NodeDataService> peer_node_data();
};

}  // namespace volley::dist
