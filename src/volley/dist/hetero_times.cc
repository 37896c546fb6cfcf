// The timed rows of a heterogeneous partition and the typed hop over one part
// (internal/hetero_times.h): what a Server's typed SampleHop and a worker's in-process part
// sample, so both pick exactly as HeteroNeighborSampler does.
#include "volley/dist/internal/hetero_times.h"

#include <fmt/format.h>

#include "volley/core/error.h"

namespace volley::dist::internal {
namespace {

// The pick options of one typed hop of edge type `type` (its rows `csr`): the heterogeneous
// sampler's (hetero_sampler.h) — its per-edge-type stream seed, weights only where the edge type
// has them.
NeighborSamplerOptions hetero_hop_options(const EdgeType& type, const Csr& csr, bool replace,
                                          bool weighted, uint64_t seed) {
  NeighborSamplerOptions options;
  options.replace = replace;
  options.weighted = weighted && csr.has_weights();
  options.seed = edge_type_stream_seed(seed, type);
  return options;
}

}  // namespace

HeteroHopTimes::HeteroHopTimes(std::shared_ptr<const HeteroPartition> partition)
    : partition_(std::move(partition)), times_(load_hetero_partition_times(partition_->manifest)) {
  by_node_.resize(times_.edge_time.size());
  by_edge_.resize(times_.edge_time.size());
}

const Csr* HeteroHopTimes::timed_rows(size_t e, TimeSource source) const {
  const HeteroGraph& graph = partition_->data.graph;
  const EdgeType& type = graph.edge_types()[e];
  const Array* node_time = nullptr;
  const Array* edge_time = nullptr;
  if (source == TimeSource::kNode) {
    const auto& time = times_.node_time[static_cast<size_t>(graph.node_type_index(type.src))];
    if (time) node_time = &*time;
  } else if (source == TimeSource::kEdge && times_.edge_time[e]) {
    edge_time = &*times_.edge_time[e];
  }
  if (node_time == nullptr && edge_time == nullptr) return nullptr;
  std::lock_guard lock(mutex_);
  std::unique_ptr<Csr>& rows = (source == TimeSource::kNode ? by_node_ : by_edge_)[e];
  if (!rows) {
    rows = std::make_unique<Csr>(
        attach_entry_times(graph.edges(static_cast<int>(e)), node_time, edge_time, type));
  }
  return rows.get();
}

void sample_typed_hop(const HeteroPartition& partition, const HeteroHopTimes& times,
                      const TypedHop& hop, HopSample& out, SamplerScratch* scratch) {
  const HeteroGraph& graph = partition.data.graph;
  const EdgeType& type = graph.edge_types()[hop.edge_type];
  const Csr& csr = graph.edges(static_cast<int>(hop.edge_type));
  const int64_t first = partition.first_node(type.dst);
  NeighborSamplerOptions options =
      hetero_hop_options(type, csr, hop.replace, hop.weighted, hop.seed);
  const Csr* timed = hop.time_source == TimeSource::kNone
                         ? nullptr
                         : times.timed_rows(hop.edge_type, hop.time_source);
  if (timed == nullptr) {  // untimed, or an edge type without times: unconstrained
    sample_hop(csr, first, hop.targets, hop.hop, hop.fanout, options, hop.batch, out, scratch);
    return;
  }
  // Every entry carries its time as edge_time (the source's node time by kNode), rows sorted.
  options.time_source = TimeSource::kEdge;
  options.temporal_strategy = hop.temporal_strategy;
  HopTimes hop_times;
  hop_times.target_times = hop.target_times;
  hop_times.edge_time = timed->edge_time()->span<int64_t>();
  hop_times.rows_sorted = true;
  sample_hop(*timed, first, hop.targets, hop.hop, hop.fanout, options, hop.batch, hop_times, out,
             scratch);
}

}  // namespace volley::dist::internal
