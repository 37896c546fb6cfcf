// volley/sampling/subgraph_builder.h — the start of a sampled subgraph, shared by every sampler
// that builds one: the CPU kernel (a seed map sized to the graph) and the distributed sampler's
// merge (a hash map sized to the batch, src/volley/dist).
//
//   struct Map { int32_t insert(int64_t id, int32_t local); } map;  // -1, or the earlier local id
//   start_subgraph(seeds, graph.num_nodes(), map, out);             // out.nodes == seeds
//
// Header-only (a template over the map); runs on the calling thread; no allocation beyond
// out's vectors.
#pragma once

#include <cstdint>
#include <span>

#include "volley/core/error.h"
#include "volley/sampling/neighbor_sampler.h"

namespace volley {

// Puts `seeds` first in out.nodes (local ids 0..) through `map` and clears the rest of `out`.
// `map.insert(id, local)` records id → local and returns -1, or returns the local id already
// recorded for id. IndexError for a seed out of [0, num_nodes), ValueError for a repeated seed
// (naming both positions). Shared by the CPU sampler (a map sized to the graph) and the
// distributed sampler's merge (a hash map sized to the batch).
template <typename Map>
void start_subgraph(std::span<const int64_t> seeds, int64_t num_nodes, Map& map,
                    SampledSubgraph& out) {
  auto& nodes = out.nodes;
  nodes.clear();
  nodes.reserve(seeds.size() * 8);
  for (size_t i = 0; i < seeds.size(); ++i) {
    const int64_t seed = seeds[i];
    VOLLEY_REQUIRE(seed >= 0 && seed < num_nodes, IndexError,
                   "seed id {} at position {} out of range for a graph with {} nodes", seed, i,
                   num_nodes);
    const int32_t earlier = map.insert(seed, static_cast<int32_t>(i));
    VOLLEY_REQUIRE(earlier < 0, ValueError,
                   "duplicate seed id {} at positions {} and {}; seeds must be distinct", seed,
                   earlier, i);
    nodes.push_back(seed);
  }
  out.num_seeds = static_cast<int64_t>(seeds.size());
  out.rows.clear();
  out.cols.clear();
  out.edge_ids.clear();
  out.nodes_per_hop.assign(1, out.num_seeds);
  out.edges_per_hop.clear();
}

}  // namespace volley
