// volley/sampling/internal/hetero_seeds.h — the seed checks of the heterogeneous sampler, shared
// by its CPU path (hetero_sampler.cc) and its CUDA front end (hetero_cuda_sampler.cc), so both
// refuse the same seeds with the same messages.
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

}  // namespace volley::sampling_internal
