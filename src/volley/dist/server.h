// volley/dist/server.h — one partition of a partitioned dataset, homogeneous (partition.h) or
// heterogeneous (hetero_partition.h, format version 2), served over gRPC. The kind is read from
// the directory; a homogeneous partition is served as the one-type case of a typed one (one
// unnamed node type and edge type), so every call below is answered by one code path.
//
// A Server answers (volley.proto):
//   Info         protocol version, dataset name and fingerprint, partition book, dtypes; a
//                heterogeneous partition: heterogeneous = true, every node type (its partition
//                book, feature and label dtypes, node times) and edge type (total edges,
//                weights, this part's largest degree, edge times);
//   Health       liveness and request counts;
//   SampleHop    one hop of neighbor sampling for owned nodes (what DistGraph::sample merges):
//                of ONE edge type of a heterogeneous partition (HopRequest.edge_type,
//                "src__relation__dst": targets are owned ids of its destination type, picks ids
//                of its source type), exactly as HeteroNeighborSampler picks them over the
//                renumbered whole graph (the stream seed edge_type_stream_seed(seed, edge type);
//                `weighted` samples the edge types that have weights by weight, the others
//                uniformly; temporal: an edge type timed in the partitioned directory over its
//                rows sorted by time, an untimed one without a constraint);
//   GetRows      FEATURES / LABELS of owned ids (of RowsRequest.node_type when heterogeneous),
//                NODE_TIME (int64) of owned ids of a type with node times, DEGREES
//                (homogeneous only: a typed partition's degrees are per edge type);
//   NodeData     node tables held by this part (internal/node_tables.h); AGGREGATE computes
//                one table's owned rows from another's over this part's in-neighbors, the
//                other parts' rows fetched from `peers` (server_aggregate.cc);
//   HasEdges     edge checks of link prediction (homogeneous only);
//   SampleEpoch  server-client mode: a whole epoch of a trainer's seeds sampled across all
//                partitions (the server is itself a client of `peers`: a DistGraph, or for a
//                heterogeneous partition a DistHeteroSource, the typed loaders' source, with
//                EpochRequest.input_type naming the seeds' type) and gathered, streamed back
//                batch by batch with flow control as back-pressure. A callback stream: a reader
//                that pauses holds no server thread; at most max_epoch_streams are open
//                (RESOURCE_EXHAUSTED "busy" beyond); FAILED_PRECONDITION without peers.
// A call of the other kind (HasEdges to a heterogeneous partition, SampleEpoch with an input
// type to a homogeneous one or without one to a heterogeneous one) is refused, naming what is
// served.
//
//   Server server("/data/products-2", 0, {.listen = "0.0.0.0:5000", .token = "s3cret"});
//   server.wait();   // until shutdown() or destruction
//
// Security: TLS (and mutual TLS) with ServerOptions::tls (client.h, TlsOptions). The default
// listen address is loopback ("127.0.0.1:0", port chosen by the system:
// see port()). With a token every call must carry it (metadata "volley-token") or is refused
// with UNAUTHENTICATED; without one the server serves anyone who reaches the port and says so
// (authenticated() == false, and `volley serve` prints a warning).
// Robustness: every request is checked (ids owned by this part, fanouts, dtypes, protocol,
// fingerprint, node and edge types: an unknown or missing one is refused listing the known ones)
// and a bad one is refused with INVALID_ARGUMENT / OUT_OF_RANGE naming the value ("node type
// 'paper': part 0: targets[0] = 312 is not owned here (this part owns [0, 150))");
// a handler's exception never leaves the handler. Garbage on the port closes that connection
// only.
// Limits (ServerLimits below; the Info reply advertises them and DistGraph splits its calls to
// stay under them, so users never meet them): a request above max_request_bytes is refused by
// gRPC (RESOURCE_EXHAUSTED); a call listing more than max_ids_per_call ids, or whose reply
// would exceed max_reply_bytes (computed from the ids, degrees and fanout *before* anything is
// allocated), is refused with INVALID_ARGUMENT naming both figures; so is a SampleHop with
// replace=true and a fanout above max_fanout() (the reply of one target must fit). An epoch
// stream's batch message above max_reply_bytes ends the stream with INVALID_ARGUMENT. Memory of
// one call is therefore at most about max_request_bytes + 2 × max_reply_bytes (the reply and its
// serialized copy) plus the sampler's scratch for max_ids_per_call targets; per-thread buffers
// above 16 MiB are released after the call, so a large call does not leave its peak behind.
// The whole server is further bounded by the gRPC resource quota (memory_limit_bytes) and the
// thread cap (threads).
// Thread safety: all methods may be called from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "volley/dist/client.h"
#include "volley/partition/hetero_partition.h"
#include "volley/partition/partition.h"

namespace volley::dist {

// What one call may ask of a server (see "Limits" above). Defaults suit every dataset: the
// client splits larger gathers and hops into calls under them.
struct ServerLimits {
  int64_t max_request_bytes = int64_t{512} << 20;  // a request message, as received
  int64_t max_reply_bytes = int64_t{64} << 20;     // a reply (or batch) message, as sent
  int64_t max_ids_per_call = int64_t{1} << 23;     // ids / targets listed in one request
  // Node tables (NodeData) the server holds at once; 0: half the machine's memory.
  int64_t max_node_data_bytes = 0;
  // The largest fanout one target may ask with replace=true: its picks must fit one reply
  // (16 bytes a pick: neighbor and edge id).
  int64_t max_fanout() const { return (max_reply_bytes - 4) / 16; }
};

struct ServerOptions {
  std::string listen = "127.0.0.1:0";  // host:port; port 0 = any free port
  std::string token;                   // "" = unauthenticated
  TlsOptions tls;                      // TLS when tls.cert_file is given (see client.h)
  int threads = 0;  // RPC handler threads at most; 0 = 8 × hardware, >= 32; a call finding
                    // none free gets RESOURCE_EXHAUSTED, which clients retry with backoff.
  // Epoch streams (server-client mode) open at once; 0 = 4 × threads. A stream holds no handler
  // thread while its reader pauses (its work runs on a pump pool of max(4, threads / 2) threads
  // only while a batch is fetched), but it keeps its prefetched batches and its epoch's
  // workers: one more is refused as busy (RESOURCE_EXHAUSTED, "busy").
  int64_t max_epoch_streams = 0;
  ServerLimits limits;
  int64_t memory_limit_bytes = int64_t{4} << 30;  // gRPC resource quota
  // Addresses of every partition's server, in part order (this one's entry may be ""): needed
  // only for SampleEpoch (server-client mode). Connected on first use.
  std::vector<std::string> peers;
  ClientOptions peer_client;    // deadline and token for calls to peers
  int default_concurrency = 0;  // batches one SampleEpoch stream samples at once; 0 = hardware
};

struct ServerStats {
  int64_t requests = 0;
  int64_t failed_requests = 0;
  int64_t active_streams = 0;
};

class Server {
 public:
  // Loads part `part` of the partitioned dataset at `directory` (memory-mapped; either kind) and
  // starts serving at once. IoError when the address cannot be bound or the files are bad,
  // IndexError for a bad part, ValueError for bad options or a time file of the wrong dtype or
  // length (naming the type).
  Server(const std::string& directory, int64_t part, ServerOptions options = {});
  ~Server();  // shutdown()
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // The port bound (useful with port 0) and "host:port" to give clients.
  int port() const;
  std::string address() const;
  int64_t part() const;
  const std::string& fingerprint() const;
  bool authenticated() const;
  bool heterogeneous() const;
  // The partition served: partition() for a homogeneous one, hetero_partition() for a
  // heterogeneous one (the other is null).
  std::shared_ptr<const Partition> partition() const;
  std::shared_ptr<const HeteroPartition> hetero_partition() const;
  ServerStats stats() const;

  // Stops accepting calls, cancels streams, waits up to `grace_seconds` for calls in flight
  // (negative or NaN: none; at most a year).
  // Idempotent.
  void shutdown(double grace_seconds = 1.0);
  // Blocks until shutdown() (from another thread or a signal handler's thread).
  void wait();

  struct State;

 private:
  std::unique_ptr<State> state_;
};

}  // namespace volley::dist
