// volley/dist/hetero_server.h — one partition of a HETEROGENEOUS partitioned dataset
// (hetero_partition.h, format version 2), served over gRPC (volley.proto).
//
// A HeteroServer answers, with the protocol of server.h:
//   Info       heterogeneous = true, every node type (its partition book, feature and label
//              dtypes) and edge type (total edges, weights, this part's largest degree);
//   Health     liveness and request counts;
//   SampleHop  one hop of ONE edge type (HopRequest.edge_type, "src__relation__dst"): targets
//              are new global ids of its destination type owned here; per target the picks
//              (new global ids of its source type) and edge ids, exactly as HeteroNeighborSampler
//              (hetero_sampler.h) picks them over the renumbered whole graph: the homogeneous
//              pick rules over that edge type's rows with the stream seed
//              edge_type_stream_seed(seed, edge type), counter (target id within its type, hop,
//              batch); `weighted` samples ∝ weight the edge types that have weights;
//              temporal (HopRequest.time_source, target_times): an edge type timed in the
//              partitioned directory (hetero_partition.h, load_hetero_partition_times: its
//              source type's node times or its edge times, read at start) is sampled over its
//              rows sorted by time, admitting entries no later than each target's time, as the
//              local sampler; an untimed edge type without a time constraint;
//   GetRows    FEATURES / LABELS of owned ids of RowsRequest.node_type; NODE_TIME (int64) of
//              owned ids of a node type with node times; DEGREES is refused (per edge type).
//   SampleHeteroBatches  server-client mode (with ServerOptions::peers): the batches of the
//              caller's seeds (in epoch order) sampled across all parts (this one in-process, the
//              peers through a DistHeteroGraph) and gathered, streamed in order (temporal and
//              disjoint too: HeteroBatchesRequest's time fields; TypedNodes.batch), one batch
//              made when the reader has room for it: a callback stream that holds no thread
//              while its reader pauses (internal/epoch_stream.h, as SampleEpoch's), at most
//              max_epoch_streams open (RESOURCE_EXHAUSTED "busy" beyond); FAILED_PRECONDITION
//              without peers.
// SampleEpoch and HasEdges answer UNIMPLEMENTED (homogeneous only, for now).
//
//   HeteroServer server("/data/mag-2", 0, {.listen = "0.0.0.0:5000"});
//   server.wait();
//
// Errors of a request (status, message naming the part and the value): INVALID_ARGUMENT for a
// missing or unknown edge / node type (the known ones listed), fanout / hop out of range (weighted
// sampling of an edge type without weights is NOT an error: uniform, as the local sampler), bad
// time fields (parse_hop_times: source, strategy, target_times not one per target, weighted);
// OUT_OF_RANGE for a target / id outside the type's owned range ("node type 'paper': part 0:
// targets[0] = 312 is not owned here (this part owns [0, 150))"); FAILED_PRECONDITION for
// another protocol version or dataset fingerprint. Limits, token, TLS and peers as server.h's
// ServerOptions (default_concurrency unused: a stream makes its batches one by one). Thread safety:
// all methods may be called from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "volley/dist/server.h"
#include "volley/partition/hetero_partition.h"

namespace volley::dist {

class HeteroServer {
 public:
  // Loads part `part` of the heterogeneous partitioned dataset at `directory` and starts serving
  // at once. IoError when the address cannot be bound or the files are bad, IndexError for a bad
  // part, ValueError for bad options or a time file of the wrong dtype or length (naming the
  // type).
  HeteroServer(const std::string& directory, int64_t part, ServerOptions options = {});
  ~HeteroServer();  // shutdown()
  HeteroServer(const HeteroServer&) = delete;
  HeteroServer& operator=(const HeteroServer&) = delete;

  int port() const;
  std::string address() const;  // "host:port" to give clients
  int64_t part() const;
  const std::string& fingerprint() const;
  bool authenticated() const;
  std::shared_ptr<const HeteroPartition> partition() const;
  ServerStats stats() const;

  // As Server::shutdown / Server::wait.
  void shutdown(double grace_seconds = 1.0);
  void wait();

  struct State;

 private:
  std::unique_ptr<State> state_;
};

}  // namespace volley::dist
