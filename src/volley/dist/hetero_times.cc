// The timestamps of a heterogeneous partitioned directory and the typed hop over one part
// (internal/hetero_times.h): what a HeteroServer's SampleHop and a worker's in-process part
// sample, so both pick exactly as HeteroNeighborSampler does.
#include "volley/dist/internal/hetero_times.h"

#include <fmt/format.h>

#include <filesystem>

#include "volley/core/error.h"
#include "volley/dist/internal/hetero_client_state.h"
#include "volley/graph/io/npy.h"

namespace volley::dist::internal {
namespace {

// `directory`/`file` when present: 1-d int64 of `expected` entries (ValueError naming `what` and
// the file otherwise).
std::optional<Array> read_times(const std::string& directory, const std::string& file,
                                int64_t expected, const std::string& what) {
  const std::filesystem::path path = std::filesystem::path(directory) / file;
  if (!std::filesystem::exists(path)) return std::nullopt;
  Array time = read_npy(path.string(), /*memory_map=*/true);
  VOLLEY_REQUIRE(time.dtype() == DType::kInt64 && time.ndim() == 1 && time.numel() == expected,
                 ValueError,
                 "{}: the times of {} must be a 1-d int64 array of {} entries (one per {}), got "
                 "{}",
                 path.string(), what, expected,
                 what.starts_with("node") ? "node of the type, by new id" : "edge, by edge id",
                 time.describe());
  return time;
}

}  // namespace

HeteroPartitionTimes::HeteroPartitionTimes(std::shared_ptr<const HeteroPartition> partition)
    : partition_(std::move(partition)) {
  const HeteroPartitionManifest& manifest = partition_->manifest;
  for (const NodeTypeInfo& type : manifest.node_types) {
    node_time_.push_back(read_times(manifest.directory, type.name + ".node_time.npy",
                                    type.num_nodes, fmt::format("node type '{}'", type.name)));
  }
  for (size_t e = 0; e < manifest.edge_types.size(); ++e) {
    const EdgeType& type = manifest.edge_types[e];
    edge_time_.push_back(read_times(manifest.directory, type.name() + ".edge_time.npy",
                                    manifest.num_edges[e],
                                    fmt::format("edge type {}", type.name())));
  }
  by_node_.resize(edge_time_.size());
  by_edge_.resize(edge_time_.size());
}

const Csr* HeteroPartitionTimes::timed_rows(size_t e, TimeSource source) const {
  const HeteroGraph& graph = partition_->data.graph;
  const EdgeType& type = graph.edge_types()[e];
  const Array* node_time = nullptr;
  const Array* edge_time = nullptr;
  if (source == TimeSource::kNode) {
    const auto& time = node_time_[static_cast<size_t>(graph.node_type_index(type.src))];
    if (time) node_time = &*time;
  } else if (source == TimeSource::kEdge && edge_time_[e]) {
    edge_time = &*edge_time_[e];
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

void sample_typed_hop(const HeteroPartition& partition, const HeteroPartitionTimes& times,
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
