// volley/dist/internal/hetero_times.h — what a typed hop over one heterogeneous partition reads,
// and the hop itself (internal; the Server's typed SampleHop and a worker's in-process part share
// it).
//
// Times are the optional files at the partitioned directory's root (hetero_partition.h,
// load_hetero_partition_times): node times per node type by new id, edge times per edge type by
// edge id, whole arrays in every part.
//
//   HeteroHopTimes times(partition);                // reads the files present (memory-mapped)
//   sample_typed_hop(*partition, times, hop, out);  // what SampleHop answers
//
// An edge type is timed under TimeSource::kNode when its source type has node times, under
// kEdge when it has edge times; its hop then reads the part's rows with the time of every entry
// attached and rows sorted by it (attach_entry_times, hetero_sampler.h: the local sampler's
// order), computed on first use and kept. Errors: load_hetero_partition_times's (a time file
// of the wrong dtype or length, naming the type); IndexError (attach_entry_times) for a neighbor
// or edge id beyond the times. Thread safety: all methods may be called concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "volley/partition/hetero_partition.h"
#include "volley/sampling/hetero_sampler.h"
#include "volley/sampling/neighbor_sampler.h"

namespace volley::dist::internal {

class HeteroHopTimes {
 public:
  // Reads the time files of `partition`'s directory (partition->manifest.directory).
  explicit HeteroHopTimes(std::shared_ptr<const HeteroPartition> partition);

  // Node type t's node times (by new id), or none.
  const std::optional<Array>& node_time(size_t t) const { return times_.node_time[t]; }
  // Edge type e's edge times (by edge id), or none.
  const std::optional<Array>& edge_time(size_t e) const { return times_.edge_time[e]; }
  // The rows of edge type e a hop by `source` times reads: null when e is untimed under it.
  const Csr* timed_rows(size_t e, TimeSource source) const;

 private:
  std::shared_ptr<const HeteroPartition> partition_;
  HeteroPartitionTimes times_;
  mutable std::mutex mutex_;
  mutable std::vector<std::unique_ptr<Csr>> by_node_, by_edge_;  // per edge type, on first use
};

// One hop of one edge type over a part's rows, as HopRequest asks it.
struct TypedHop {
  size_t edge_type = 0;              // index in the partition's graph
  std::span<const int64_t> targets;  // new ids of its destination type, owned by the part
  int hop = 0;
  int64_t fanout = 0;
  bool replace = false, weighted = false;
  uint64_t seed = 0, batch = 0;
  // Temporal: the kind of times and one time per target (empty: untimed).
  TimeSource time_source = TimeSource::kNone;
  TemporalStrategy temporal_strategy = TemporalStrategy::kUniform;
  std::span<const int64_t> target_times;
};

// The picks of `hop` into `out`: HeteroNeighborSampler's for those targets (its stream seed and
// pick rules; weights where the edge type has them; temporal over the timed rows when the edge
// type is timed, unconstrained otherwise). Errors as sample_hop (neighbor_sampler.h).
void sample_typed_hop(const HeteroPartition& partition, const HeteroHopTimes& times,
                      const TypedHop& hop, HopSample& out, SamplerScratch* scratch);

}  // namespace volley::dist::internal
