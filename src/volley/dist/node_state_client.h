// volley/dist/node_state_client.h — node tables (feature/node_state.h) held by the partition
// servers: each server keeps the rows of the nodes it owns, and a RemoteNodeState splits every
// call by owner (the partition book of the table's node type), one NodeData RPC per part and
// piece, all in flight at once, under each server's limits, with the service's token and TLS.
//
//   auto service = NodeDataService::connect({"10.0.0.1:5000", "10.0.0.2:5000"}, {.token = t});
//   RemoteNodeState emb = RemoteNodeState::create(service, "emb", "author",
//                                                 {.dim = 64, .state_slots = 2}, Init::kNormal,
//                                                 0.1, seed, /*exist_ok=*/true);
//   emb.pull(ids, DType::kFloat32, out);   // ids: new (partitioned) global ids of "author"
//   emb.step(ids, grads, {.kind = OptimizerKind::kAdam, .lr = 0.01});
//
// The same table, bit for bit, as one NodeState of the whole node type: rows are initialised
// keyed by their global ids, pushes keep position order within each owner, and a step reaches
// every server with one step number (the first server's call advances its count; a server
// without rows in the step still counts it), so SparseAdam's bias correction matches.
//
// Contracts: NodeTable's (node_state.h) per server — a row is never seen half written, writes to
// one row are serialised — but a call is split over the servers and not atomic as a whole.
// Errors: ValueError naming the table for an unknown node type, a missing table (open) or one
// that exists (create without exist_ok, or of another shape); IndexError naming the first id
// out of the type's range and its position; the call errors of client.h (ConnectionError,
// TimeoutError, PermissionError) naming the part and address. A server restarted loses its
// tables (they live in its memory): checkpoint with snapshot() / restore().
// Thread safety: any number of threads may use one RemoteNodeState (and one service) at once.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "volley/dist/client.h"
#include "volley/feature/aggregate.h"
#include "volley/feature/node_state.h"

namespace volley::dist {

// The servers of one partitioned dataset (homogeneous or heterogeneous), connected for node
// tables.
class NodeDataService {
 public:
  // Connects and checks the servers as DistGraph::connect does (protocol, part order, one
  // dataset). No local part: every call goes over RPC.
  static std::shared_ptr<const NodeDataService> connect(std::vector<std::string> addresses,
                                                        ClientOptions options = {});
  ~NodeDataService();

  const std::vector<std::string>& addresses() const;
  // The node types ("" alone for a homogeneous dataset) and their node counts.
  std::vector<std::string> node_types() const;
  int64_t num_nodes(const std::string& node_type) const;

  struct State;
  const State& state() const { return *state_; }

 private:
  explicit NodeDataService(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

class RemoteNodeState final : public NodeTable {
 public:
  // Creates table `name` of `node_type` ("" in a homogeneous dataset) on every server: the
  // type's rows, options.dim / dtype / state_slots (options.rows and shared are ignored),
  // initialised as NodeState::initialize(init, scale, seed) over the whole type. exist_ok:
  // an existing table of the same dim, dtype and slots is opened instead.
  static RemoteNodeState create(std::shared_ptr<const NodeDataService> service,
                                const std::string& name, const std::string& node_type,
                                const NodeStateOptions& options, Init init, double scale,
                                uint64_t seed, bool exist_ok);
  // The table as the servers hold it; ValueError when a server has none.
  static RemoteNodeState open(std::shared_ptr<const NodeDataService> service,
                              const std::string& name, const std::string& node_type);
  // Drops the table on every server (other clients' handles then fail with ValueError).
  void remove();

  const std::string& name() const;
  const std::string& node_type() const;

  int64_t rows() const override;
  int64_t dim() const override;
  DType dtype() const override;
  int state_slots() const override;
  int64_t steps() const override;  // the first server's count (every server counts each step)

  void pull(std::span<const int64_t> ids, DType out_dtype, std::byte* out) const override;
  void push(std::span<const int64_t> ids, std::span<const float> values, WriteOp op) override;
  int64_t step(std::span<const int64_t> ids, std::span<const float> grads,
               const OptimizerStep& step) override;
  NodeStateSnapshot snapshot(int64_t begin = 0, int64_t end = -1) const override;
  void restore(const NodeStateSnapshot& snapshot, int64_t first_row = 0) override;

  // This table's rows = the aggregation of `source`'s rows (feature/aggregate.h) over the
  // served partitioning's graph, computed by the servers: each its own rows, with the other
  // parts' rows it needs fetched from its peers (the servers were started with peers). One
  // server after the other, so that no server's handler threads all wait on peers; each one's
  // share must end within the deadline. Homogeneous partitionings. ValueError (from the
  // servers) for a typed partitioning, a server without peers, weighted "gcn" (the servers do
  // not serve weighted degrees), `source` being this table, or this table not float32 of
  // source's dim.
  void aggregate_from(const RemoteNodeState& source, const AggregateOptions& options);

  struct State;

 private:
  explicit RemoteNodeState(std::shared_ptr<const State> state);
  std::shared_ptr<const State> state_;
};

}  // namespace volley::dist
