// NodeData AGGREGATE (internal/server_state.h): a server aggregates the rows it owns. Its
// part's CSR rows are its own nodes and name global ids; the rows of its own nodes come from
// its table, the other parts' rows it needs (each once, sorted) from the peers' tables through
// a NodeDataService (split by owner under each server's limits), and, for "gcn", their degrees
// from the peers as one DistGraph. feature/aggregate.h's kernel then runs over those rows by
// position, with the same operations as over one whole graph.
#include <algorithm>
#include <vector>

#include "volley/dist/internal/server_state.h"
#include "volley/dist/node_state_client.h"
#include "volley/feature/aggregate.h"

namespace volley::dist {

namespace {

// The other parts' ids among the CSR's neighbors (sorted, unique), and every CSR position's row
// in [own rows; those ids].
std::vector<int64_t> fetched_ids(const Csr& graph, int64_t first, std::vector<int64_t>& positions) {
  const int64_t rows = graph.num_nodes();
  std::vector<int64_t> ids;
  for (int64_t k = 0; k < graph.num_edges(); ++k) {
    const int64_t u = graph.neighbor(k);
    if (u < first || u >= first + rows) ids.push_back(u);
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  positions.resize(static_cast<size_t>(graph.num_edges()));
  for (int64_t k = 0; k < graph.num_edges(); ++k) {
    const int64_t u = graph.neighbor(k);
    positions[static_cast<size_t>(k)] =
        u >= first && u < first + rows
            ? u - first
            : rows + (std::lower_bound(ids.begin(), ids.end(), u) - ids.begin());
  }
  return ids;
}

}  // namespace

std::shared_ptr<const NodeDataService> Server::State::peer_node_data() {
  std::lock_guard lock(peers_mutex);
  if (!node_data_peers) {
    std::vector<std::string> addresses = options.peers;
    addresses[static_cast<size_t>(served_part)] = address();  // itself: never asked for rows
    node_data_peers = NodeDataService::connect(std::move(addresses), options.peer_client);
  }
  return node_data_peers;
}

grpc::Status Server::State::aggregate_node_data(const rpc_base::NodeDataRequest& request) {
  if (auto status = check_request(request.protocol(), request.fingerprint()); !status.ok())
    return status;
  VOLLEY_REQUIRE(!typed, ValueError,
                 "part {} serves a heterogeneous partitioning: aggregation on the servers needs "
                 "a homogeneous one (a typed graph's neighbors are per edge type)",
                 served_part);
  const AggregateOptions aggregate_options{.op = aggregation_from_name(request.aggregation()),
                                           .weighted = request.weighted(),
                                           .self_loops = request.self_loops()};
  const bool gcn = aggregate_options.op == Aggregation::kGcn;
  VOLLEY_REQUIRE(!(gcn && request.weighted()), ValueError,
                 "weighted 'gcn' on the servers needs every node's weighted degree, which they "
                 "do not serve: aggregate 'sum' or 'mean' weighted, or 'gcn' unweighted");
  VOLLEY_REQUIRE(request.target() != request.name(), ValueError,
                 "node data '{}' cannot be aggregated into itself (the peers read its rows "
                 "while they change): name another target",
                 internal::quoted(request.name(), 64));
  auto source = node_tables.existing("", request.name(), served_part);
  auto target = node_tables.existing("", request.target(), served_part);
  VOLLEY_REQUIRE(target->dim() == source->dim() && target->dtype() == DType::kFloat32, ValueError,
                 "node data '{}' is {} of dim {}; the aggregation of '{}' needs float32 of dim {}",
                 internal::quoted(request.target(), 64), dtype_name(target->dtype()), target->dim(),
                 internal::quoted(request.name(), 64), source->dim());
  const Csr& graph = *edges[0].csr;
  const internal::OwnedRange range = owned(0);
  std::vector<int64_t> positions;
  const std::vector<int64_t> ids = fetched_ids(graph, range.first, positions);
  VOLLEY_REQUIRE(ids.empty() || !options.peers.empty(), ValueError,
                 "part {} was started without peers: aggregating reads the other parts' rows "
                 "(start every server with --peers)",
                 served_part);
  const int64_t rows = range.rows, dim = source->dim();
  Array x = Array::empty(DType::kFloat32, {rows + static_cast<int64_t>(ids.size()), dim});
  std::vector<int64_t> own(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) own[static_cast<size_t>(r)] = r;
  source->pull(own, DType::kFloat32, reinterpret_cast<std::byte*>(x.data<float>()));
  std::vector<float> degrees;
  if (!ids.empty()) {
    RemoteNodeState::open(peer_node_data(), request.name(), "")
        .pull(ids, DType::kFloat32, reinterpret_cast<std::byte*>(x.data<float>() + rows * dim));
    if (gcn) {
      const std::vector<int64_t> all = peer_graph(0)->degrees();
      degrees.reserve(ids.size());
      for (const int64_t u : ids) {
        // As the kernel counts a row's degree: the self loop's 1, then one per edge.
        float degree = request.self_loops() ? 1.0f : 0.0f;
        for (int64_t e = 0; e < all[static_cast<size_t>(u)]; ++e) degree += 1.0f;
        degrees.push_back(degree);
      }
    }
  }
  std::vector<float> out(static_cast<size_t>(rows * dim));
  aggregate_into(graph, x, SourceRows{.positions = positions, .degrees = degrees},
                 aggregate_options, out.data());
  target->push(own, out, WriteOp::kAssign);
  return grpc::Status::OK;
}

}  // namespace volley::dist
