// volley/dist/internal/hetero_times.h — the timestamps of a heterogeneous partitioned directory
// and the typed hop (internal; the HeteroServer and a worker's in-process part share it).
//
// Times are optional files at the partitioned directory's root (hetero_partition.h), written
// after partitioning (Python: volley.hetero_partition.write_times):
//   T.node_time.npy      int64 [N_T]  the node time of every NEW id of node type T
//   S__R__D.edge_time.npy int64 [E]   the time of every edge of that type, by edge id
// Every part reads the whole arrays: a neighbor owned elsewhere is admitted by its own time.
//
//   HeteroPartitionTimes times(partition);          // reads the files present (memory-mapped)
//   sample_typed_hop(*partition, &times, hop, out);  // what SampleHop answers
//
// An edge type is timed under TimeSource::kNode when its source type has node times, under
// kEdge when it has edge times; its hop then reads the part's rows with the time of every entry
// attached and rows sorted by it (attach_entry_times, hetero_sampler.h: the local sampler's
// order), computed on first use and kept. Errors: ValueError naming the type and file for a
// time file that is not 1-d int64 or has the wrong length; IndexError (attach_entry_times) for a
// neighbor or edge id beyond the times. Thread safety: all methods may be called concurrently.
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

class HeteroPartitionTimes {
 public:
  // Reads the time files of `partition`'s directory (partition->manifest.directory).
  explicit HeteroPartitionTimes(std::shared_ptr<const HeteroPartition> partition);

  // Node type t's node times (by new id), or none.
  const std::optional<Array>& node_time(size_t t) const { return node_time_[t]; }
  // Edge type e's edge times (by edge id), or none.
  const std::optional<Array>& edge_time(size_t e) const { return edge_time_[e]; }
  // The rows of edge type e a hop by `source` times reads: null when e is untimed under it.
  const Csr* timed_rows(size_t e, TimeSource source) const;

 private:
  std::shared_ptr<const HeteroPartition> partition_;
  std::vector<std::optional<Array>> node_time_, edge_time_;
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
void sample_typed_hop(const HeteroPartition& partition, const HeteroPartitionTimes& times,
                      const TypedHop& hop, HopSample& out, SamplerScratch* scratch);

}  // namespace volley::dist::internal
