// volley/dist/hetero_client.h — the trainer's side of a HETEROGENEOUS distributed service:
// heterogeneous neighbor sampling and per-type feature gathering across the parts of a
// heterogeneous partitioned dataset (hetero_partition.h) served by dist::Server
// (server.h, which serves either kind).
//
//   auto graph = DistHeteroGraph::connect({"10.0.0.1:5000", "10.0.0.2:5000"});
//   HeteroSamplerOptions options{.fanouts = {15, 10}, .seed = 42};
//   HeteroSampledSubgraph batch = graph->sample({{"paper", seed_ids}}, options, /*batch=*/0);
//   Array x = graph->gather_features("paper", batch.nodes[graph->info().node_type_index("paper")],
//                                    DType::kFloat32);
//
// Ids are the NEW ids of each node type (the partitioned dataset's renumbering; map old ids with
// "T.node_map.npy"). sample() returns exactly what HeteroNeighborSampler (hetero_sampler.h)
// returns over the whole renumbered graph with the same seeds, options and batch index, bit for
// bit: per hop, every edge type's frontier (the nodes of its destination type first reached at
// the previous hop) is split by owner (the type's partition book) and sent, all edge types and
// parts of the hop at once, as typed SampleHop calls; the answers are merged in edge-type order,
// each in frontier order, and relabeled as the local sampler does.
//
// Disjoint sampling (options.disjoint): every seed grows its own tree, as the local sampler's;
// the frontier holds (tree, node) pairs, so a target may be asked for once per tree. Temporal
// sampling (options.time_source, the seeds' times in HeteroSeeds::times or, by node time, the
// seeds' own node times fetched from their owners): the seed time travels with the frontier
// (HopRequest.target_times) and each server samples the edge types timed in the partitioned
// directory (its root's "T.node_time.npy" / "S__R__D.edge_time.npy", hetero_times.h) over rows
// sorted by time, the others unconstrained; the batch carries `batch` (the tree of every node).
// ValueError as the local sampler for fanouts (an edge type the service lacks, lists of
// different lengths), seeds (unknown node type, a type given twice, a duplicate seed when not
// disjoint), times (of the wrong length; missing, naming the seeds' type, when sampling by edge
// time or by node time for a type without node times; none served of the asked kind);
// IndexError for a seed outside its type's range, or an id of gather_* outside the type's range
// (naming the type). Call failures as client.h
// says (ConnectionError, TimeoutError, PermissionError, ValueError naming the part and address).
// Thread safety: immutable after connect(); any number of threads may sample and gather.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "volley/dist/client.h"
#include "volley/loader/batch_source.h"
#include "volley/partition/hetero_partition.h"
#include "volley/partition/partition_book.h"
#include "volley/sampling/hetero_sampler.h"

namespace volley::dist {

// What the servers serve (client.h: the one description of either kind, here a typed one).
using HeteroNodeTypeService = NodeTypeService;
using HeteroServiceInfo = TypedServiceInfo;

class DistHeteroGraph {
 public:
  // Connects to `addresses` (addresses[p] serves part p of a heterogeneous partitioned dataset;
  // "a|b" lists its replicas, as DistGraph's) and checks every server: protocol, part,
  // heterogeneous, same fingerprint (ValueError naming the address otherwise). Waits up to
  // options.connect_seconds for servers still starting. Worker mode: `local_directory` and
  // `local_part` name the part this process holds, loaded (ValueError for one without the
  // other, as DistGraph::connect).
  static std::shared_ptr<const DistHeteroGraph> connect(
      std::vector<std::string> addresses, ClientOptions options = {},
      const std::string& local_directory = "", std::optional<int64_t> local_part = std::nullopt);
  // Worker mode: `local` (part local->part, e.g. an in-process Server's hetero_partition(), with
  // its dataset `fingerprint`) is sampled and gathered in-process, without RPC; its address may
  // be "". ValueError when the servers serve another dataset or the part counts differ.
  static std::shared_ptr<const DistHeteroGraph> connect(
      std::vector<std::string> addresses, ClientOptions options,
      std::shared_ptr<const HeteroPartition> local, std::string fingerprint);
  ~DistHeteroGraph();

  const HeteroServiceInfo& info() const;
  const std::vector<std::string>& addresses() const;
  int64_t num_parts() const;
  // The part held in-process (worker mode), or -1.
  int64_t local_part() const;

  // One batch (see above). Fanouts resolve as HeteroNeighborSampler's over the service's edge
  // types.
  HeteroSampledSubgraph sample(const std::vector<HeteroSeeds>& seeds,
                               const HeteroSamplerOptions& options, uint64_t batch_index) const;

  // Feature rows of `ids` (new ids of `node_type`) as a new [ids.size(), D] array of
  // `out_dtype`; labels as int64 [ids.size()]. ValueError when the type has none.
  Array gather_features(std::string_view node_type, std::span<const int64_t> ids,
                        DType out_dtype) const;
  Array gather_labels(std::string_view node_type, std::span<const int64_t> ids) const;

  struct State;

 private:
  explicit DistHeteroGraph(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// A DistHeteroGraph as the typed loaders read it (loader/batch_source.h): every batch sampled
// with `options` (the fanouts resolved here: ValueError as DistHeteroGraph::sample), and, for
// every node type that has them, its features (as `feature_dtype`; nullopt: as stored) and its
// labels (int64) gathered into the batch as the fields "x" and "y" (`features` / `labels` false:
// not gathered). The loaders' batches over it equal their batches over the whole renumbered
// graph, as DistHeteroGraph::sample equals the local sampler.
class DistHeteroSource final : public TypedBatchSource {
 public:
  DistHeteroSource(std::shared_ptr<const DistHeteroGraph> graph, HeteroSamplerOptions options,
                   std::optional<DType> feature_dtype = std::nullopt, bool features = true,
                   bool labels = true);

  const std::vector<NodeTypeInfo>& node_types() const override { return node_types_; }
  const std::vector<EdgeType>& edge_types() const override;
  int64_t num_edges(int edge_type) const override;
  const NeighborSamplerOptions& options() const override { return options_; }
  void sample(const std::vector<HeteroSeeds>& groups, uint64_t seed, uint64_t batch_index,
              HeteroSampledSubgraph& out, HeteroSamplerScratch& scratch) const override;
  void gather_fields(int type, std::span<const int64_t> ids,
                     std::vector<std::pair<std::string, Array>>& out) const override;

 private:
  std::shared_ptr<const DistHeteroGraph> graph_;
  HeteroSamplerOptions options_;
  std::vector<NodeTypeInfo> node_types_;
  std::optional<DType> feature_dtype_;
  bool features_ = true;
  bool labels_ = true;
};

}  // namespace volley::dist
