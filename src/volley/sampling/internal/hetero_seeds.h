// volley/sampling/internal/hetero_seeds.h — the seed checks of the heterogeneous sampler, shared
// by its CPU path (hetero_sampler.cc, hetero_times.cc) and its CUDA front end
// (hetero_cuda_sampler.cc), so both refuse the same seeds and times with the same messages and
// give the same trees their seed times.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "volley/core/error.h"
#include "volley/sampling/hetero_sampler.h"

namespace volley::sampling_internal {

// The node type index of seed group `group`, marked in `given` (a flag per node type): the
// graph's ValueError for an unknown type, ValueError for a type given twice. `Graph`:
// HeteroGraph or CudaHeteroGraph.
template <class Graph>
int claim_seed_type(const Graph& graph, const HeteroSeeds& group, std::vector<bool>& given) {
  const int type = graph.node_type_index(group.node_type);
  VOLLEY_REQUIRE(!given[static_cast<size_t>(type)], ValueError,
                 "seeds of node type '{}' are given twice", group.node_type);
  given[static_cast<size_t>(type)] = true;
  return type;
}

// IndexError unless seed `position` of `group` is in [0, count).
inline void check_seed_id(const HeteroSeeds& group, size_t position, int64_t count) {
  const int64_t id = group.ids[position];
  VOLLEY_REQUIRE(id >= 0 && id < count, IndexError,
                 "seed id {} of node type '{}' at position {} out of range for {} nodes", id,
                 group.node_type, position, count);
}

// The checks of `times` against `options` that need no graph (ValueError): times without
// temporal sampling, weighted temporal sampling, times of the other kind. Returns whether the
// options sample by time.
inline bool check_time_options(const HeteroSamplerOptions& options, const HeteroTimes& times) {
  const bool given = !times.node_time.empty() || !times.edge_time.empty();
  if (options.time_source == TimeSource::kNone) {
    VOLLEY_REQUIRE(!given, ValueError,
                   "times were given, but the options ask for no temporal sampling (set "
                   "time_source / time_attr)");
    return false;
  }
  VOLLEY_REQUIRE(!options.weighted, ValueError,
                 "temporal sampling does not support weighted sampling yet");
  const bool by_edge = options.time_source == TimeSource::kEdge;
  VOLLEY_REQUIRE(by_edge ? times.node_time.empty() : times.edge_time.empty(), ValueError,
                 "{} times were given, but temporal sampling is by {} time",
                 by_edge ? "node" : "edge", by_edge ? "edge" : "node");
  return true;
}

// Temporal sampling: appends the time of each seed of `group` (node type `type`) to `out`, the
// times of its trees: the group's own times, or without them by node time its seeds' node times
// (`node_time`: per node type, null where untimed; empty by edge time). ValueError for times of
// the wrong length, or none to default to.
inline void append_seed_times(const HeteroSeeds& group, int type, TimeSource source,
                              const std::vector<const int64_t*>& node_time,
                              std::vector<int64_t>& out) {
  if (!group.times.empty()) {
    VOLLEY_REQUIRE(group.times.size() == group.ids.size(), ValueError,
                   "seeds of node type '{}': {} times for {} seeds (one time per seed)",
                   group.node_type, group.times.size(), group.ids.size());
    out.insert(out.end(), group.times.begin(), group.times.end());
    return;
  }
  const int64_t* own = node_time.empty() ? nullptr : node_time[static_cast<size_t>(type)];
  VOLLEY_REQUIRE(
      own != nullptr || group.ids.empty(), ValueError,
      "seeds of node type '{}' need a time each (seed times / input_time): {}", group.node_type,
      source == TimeSource::kEdge ? "sampling by edge time has no node time to default to"
                                  : "the node type has no node time to default to");
  for (const int64_t id : group.ids) out.push_back(own[id]);
}

// Per node type (graph order): the node time `times` gives it when sampling by node time, else
// null; empty unless by node time. `Graph`: HeteroGraph or CudaHeteroGraph (the times checked).
template <class Graph>
std::vector<const int64_t*> seed_node_times(const Graph& graph, const HeteroSamplerOptions& options,
                                            const HeteroTimes& times) {
  std::vector<const int64_t*> result;
  if (options.time_source != TimeSource::kNode) return result;
  result.assign(static_cast<size_t>(graph.num_node_types()), nullptr);
  for (const auto& [name, time] : times.node_time) {
    result[static_cast<size_t>(graph.node_type_index(name))] = time.template data<int64_t>();
  }
  return result;
}

}  // namespace volley::sampling_internal
