// volley/dist/client.h — the trainer's side of the distributed service: sampling and feature
// gathering across partitions served by `volley serve` (server.h), over gRPC.
//
// Two deployment modes (as GraphLearn-for-PyTorch has them):
//   worker         every trainer process serves its own partition (a Server in-process) and
//                  holds it: DistGraph::connect(addresses, options, local_part). Nodes it owns
//                  are sampled and gathered locally, the rest by RPC to the other trainers.
//   server-client  trainers hold no data: ServerClientLoader asks one server to sample and
//                  gather a whole epoch of the trainer's seeds and receives the batches as a
//                  gRPC stream (flow control is the back-pressure: the server samples at most a
//                  few batches ahead of the reader).
//
//   auto graph = DistGraph::connect({"10.0.0.1:5000", "10.0.0.2:5000"}, {.token = token});
//   NeighborLoader loader(graph, train_ids, {.batch_size = 1024, .num_threads = 8,
//                                            .sampler = {.fanouts = {15, 10, 5}}});
//   // the same batches, bit for bit, as NeighborLoader over the whole (renumbered) graph
//
// How one batch is sampled (DistGraph::sample, the one-type case of the sampler both clients
// share, internal/service_view.h): per hop, the frontier is split by owner (the partition book,
// K + 1 offsets), owned-here nodes are sampled in-process, the rest go out as asynchronous
// SampleHop RPCs to their partitions, all in flight at once; the answers are merged in frontier
// order and relabeled exactly as the single-machine sampler does. Sampling stays a
// pure function of (seeds, options, batch index): the result equals sample_neighbors on the
// whole renumbered graph. Many batches are in flight when the loader runs several workers
// (LoaderOptions::num_threads: the concurrency; RPC waits cost no CPU, so it may exceed cores).
//
// Failure: every call has a deadline (ClientOptions::deadline_seconds). A server that is down or
// dies mid-call raises ConnectionError, one that does not answer in time TimeoutError, a wrong
// or missing token PermissionError, a server of another dataset or protocol version ValueError —
// each naming the partition and address — in the training loop, never a hang. connect() waits
// up to connect_seconds for servers that are still starting.
//
// Replicas: a part's address may list several servers, "host:port|host:port". Calls are spread
// over them in turn, and a call that fails as a server's failure (unreachable, no answer in time,
// cancelled by a server that shut down) is made again on another replica before its answer is
// read (internal/client_calls.h, PartServers): the batches are the same, none lost or repeated.
// When every replica of a part has failed, the call's error is raised as above.
//
// Thread safety: a DistGraph is immutable after connect(); any number of threads may sample and
// gather concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "volley/graph/hetero_graph.h"
#include "volley/loader/neighbor_loader.h"
#include "volley/partition/partition.h"

namespace volley::dist {

// The wire protocol version (volley.proto); client and servers must match.
inline constexpr uint32_t kProtocolVersion = 4;

// TLS for the service (PEM files; read once, when the server starts or the client connects;
// IoError naming a file that cannot be read). The token still authorizes every call.
//   server: cert_file + key_file serve over TLS; with ca_file too, every client must present a
//           certificate signed by that CA (mutual TLS), and the server's calls to its peers
//           (server-client mode) verify them against ca_file and present cert_file.
//   client: ca_file verifies the servers (their certificates must name the host or IP the
//           address gives); cert_file + key_file present a client certificate (mutual TLS).
// A TLS client meeting a plaintext server, or the reverse, or a certificate that does not
// verify, fails like an unreachable server (ConnectionError, within connect_seconds).
struct TlsOptions {
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
};

struct ClientOptions {
  std::string token;               // sent with every call; "" = none
  TlsOptions tls;                  // TLS when tls.ca_file is given
  double deadline_seconds = 30.0;  // per call (per batch message for epoch streams)
  double connect_seconds = 30.0;   // how long connect() waits for servers to come up
  int64_t max_message_bytes = int64_t{512} << 20;
};

// One node type of a service: who owns which ids, and what rows its nodes have.
struct NodeTypeService {
  std::string name;         // "" in the homogeneous form
  PartitionBook book;       // new ids [book.begin(p), book.end(p)) live on part p
  int64_t feature_dim = 0;  // 0: no features
  DType feature_dtype = DType::kFloat32;
  std::optional<DType> label_dtype;
  int64_t num_classes = 0;
  bool has_node_time = false;  // the partitioned dataset holds its node times
};

// What the servers serve, as agreed at connect(), of either graph kind: the one description both
// clients read (DistHeteroGraph as HeteroServiceInfo). A heterogeneous dataset's node types and
// edge types in the dataset's order; a homogeneous one is its one-type case, one node type named
// "" and one edge type ("", "", ""), whose flat form DistGraph reports as ServiceInfo.
struct TypedServiceInfo {
  std::string dataset_name;
  std::string fingerprint;  // CRC-32 of partition.json, hex
  std::vector<NodeTypeService> node_types;
  std::vector<EdgeType> edge_types;
  std::vector<int64_t> num_edges;              // per edge type
  std::vector<bool> has_weights;               // per edge type
  std::vector<bool> has_edge_time;             // per edge type
  Orientation orientation = Orientation::kIn;  // of the CSR rows (homogeneous)

  // The index of node type `name`; ValueError listing the node types when unknown.
  int node_type_index(std::string_view name) const;
};

// What the servers serve, as agreed at connect(): the flat form of a homogeneous service.
struct ServiceInfo {
  std::string dataset_name;
  std::string fingerprint;  // CRC-32 of partition.json, hex
  PartitionBook book;
  int64_t num_edges = 0;
  int64_t feature_dim = 0;  // 0: no features
  DType feature_dtype = DType::kFloat32;
  std::optional<DType> label_dtype;
  int64_t num_classes = 0;
  bool has_weights = false;
  Orientation orientation = Orientation::kIn;  // of the CSR rows (has_edges asks the row's owner)
  bool has_edge_time = false;  // the parts hold edge times (temporal sampling by edge time)
  bool has_node_time = false;  // the partitioned dataset holds node times
};

// CRC-32 (hex) of a partitioned dataset's partition.json (homogeneous or heterogeneous): what
// servers and clients compare.
std::string dataset_fingerprint(const std::string& directory);

class DistGraph final : public BatchSource {
 public:
  // Connects to `addresses` (addresses[p] serves part p, "a|b" its replicas; every part needs
  // one, except `local_part` in worker mode, whose address may be "") and checks that every
  // server (every replica) speaks this protocol, serves the part its position says, and serves
  // the same dataset (fingerprint) — ValueError naming the address otherwise. Worker mode:
  // `local_directory` and `local_part` name the partition this process holds (memory-mapped,
  // sampled and gathered without RPC).
  static std::shared_ptr<const DistGraph> connect(std::vector<std::string> addresses,
                                                  ClientOptions options = {},
                                                  const std::string& local_directory = "",
                                                  std::optional<int64_t> local_part = std::nullopt);
  // Worker mode with a partition already loaded (a server shares its own).
  static std::shared_ptr<const DistGraph> connect(std::vector<std::string> addresses,
                                                  ClientOptions options,
                                                  std::shared_ptr<const Partition> local,
                                                  std::string fingerprint);
  ~DistGraph() override;

  const ServiceInfo& info() const;
  const std::vector<std::string>& addresses() const;
  // The partition held in-process (worker mode), or -1.
  int64_t local_part() const;

  // BatchSource: what the loader uses.
  int64_t num_nodes() const override;
  void validate(const NeighborSamplerOptions& options) const override;
  void sample(std::span<const int64_t> seeds, const NeighborSamplerOptions& options,
              uint64_t batch_index, SampledSubgraph& out) const override;
  // Temporal sampling (options.time_source set; seed_times[i] the time of seeds[i]): each hop's
  // targets travel with their tree's seed time (HopRequest.target_times), and the result equals
  // sample_neighbors(seed_times) on the whole renumbered graph with its times. ValueError when
  // the service lacks the times asked for (ServiceInfo::has_edge_time / has_node_time), for a
  // length mismatch, or subgraph_type other than directional; a part whose rows are not sorted
  // by that time refuses "last" (ValueError naming the part). options.disjoint (untimed) is
  // sampled the same way through sample().
  void sample_temporal(std::span<const int64_t> seeds, std::span<const int64_t> seed_times,
                       const NeighborSamplerOptions& options, uint64_t batch_index,
                       SampledSubgraph& out) const override;
  int64_t feature_width() const override;
  DType feature_dtype() const override;
  void gather_features(std::span<const int64_t> ids, DType out_dtype,
                       std::byte* out) const override;
  bool has_labels() const override;
  void gather_labels(std::span<const int64_t> ids, int64_t* out) const override;
  // Link prediction (link_client.cc): each pair is asked of the owner of its CSR row (the
  // destination of an "in" graph's edge) in HasEdges calls under that server's limits, all parts
  // at once; the local part (worker mode) answers in-process. Errors as BatchSource says, and
  // the call errors above.
  void has_edges(std::span<const int64_t> src, std::span<const int64_t> dst,
                 uint8_t* out) const override;
  // Fetched once (GetRows of kind DEGREES from every part) and kept; later calls copy it.
  std::vector<int64_t> degrees() const override;

  // Convenience forms: a new subgraph / a new [ids.size(), D] array.
  SampledSubgraph sample(std::span<const int64_t> seeds, const NeighborSamplerOptions& options,
                         uint64_t batch_index) const;
  Array gather_features(std::span<const int64_t> ids, DType out_dtype) const;
  Array gather_labels(std::span<const int64_t> ids) const;

  struct State;

 private:
  explicit DistGraph(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// What the batches of a ServerClientLoader carry besides their subgraph, and of which seeds.
struct StreamedFields {
  bool features = true;  // x (of every node type that has features), when the service has them
  bool labels = true;    // y (int64), likewise
  // A heterogeneous partitioned dataset: the node type of the input nodes (required there; ""
  // for a homogeneous one). The batches are then typed (Batch::node_types / edge_types, x and y
  // among each node type's attrs), sampled with options.sampler (typed fanouts) by the typed
  // loader over the service's DistHeteroSource, and equal its batches in this process.
  std::string input_type;
  // Typed batches: every node type's x in this dtype (nullopt: as stored, as the local typed
  // loader gives it). Homogeneous batches: LoaderOptions::feature_dtype.
  std::optional<DType> typed_feature_dtype;
};

// Server-client mode: the loader for a trainer that holds no data, of either graph kind. Each
// epoch is one SampleEpoch stream from the server at `address` ("a|b": any of these servers,
// each started with the peers; a stream whose server fails, unreachable or without a batch
// within the deadline, is opened again on another from the first batch not yet delivered, so
// the epoch completes with the same batches); the batches equal NeighborLoader's
// over the whole graph with the same inputs and options (temporal and disjoint sampling included:
// options.input_time travels with the rank's inputs, ValueError as DistGraph::validate when the
// service lacks the times). The server samples `options.num_threads`
// batches at once (0: its default). Errors as above; a stream that stops delivering raises
// TimeoutError after deadline_seconds without a batch.
class ServerClientLoader {
 public:
  // Connects (checks protocol and that the server can sample epochs) and validates the inputs
  // against the service (IndexError for an input id out of range, ValueError as NeighborLoader;
  // ValueError for an input type a homogeneous service does not have, or a typed service's
  // unknown or missing one, naming its node types).
  ServerClientLoader(std::string address, ClientOptions client, std::optional<Array> input_nodes,
                     LoaderOptions options, StreamedFields fields = {});
  ~ServerClientLoader();

  int64_t num_batches() const;
  int64_t num_inputs() const;
  // What the server serves: a homogeneous service's info (typed_info() null), or a typed one's.
  const ServiceInfo& info() const;
  const TypedServiceInfo* typed_info() const;
  // `first_batch` > 0 resumes the epoch there (the server starts its stream at that batch;
  // ValueError unless 0 <= first_batch <= num_batches()).
  std::unique_ptr<BatchStream> start_epoch(int64_t epoch_index, int64_t first_batch = 0) const;

  struct State;

 private:
  std::shared_ptr<const State> state_;
};

}  // namespace volley::dist
