// volley/sampling/subgraph_builder.h — builds a HostSubgraph (the host vectors of a
// SampledSubgraph) hop by hop: the seed map, the relabel of sampled neighbors to local ids, and
// the per-hop counters.
//
// One builder for every sampler that produces a subgraph on the host: the CPU kernel
// (a map sized to the graph) and the distributed sampler's merge (a hash map sized to the batch)
// fill it the same way, so their outputs agree bit for bit. What does not depend on the map
// (a hop's edges, the frontier, the counters) is HopEdges, which the CPU kernel's builder for
// disjoint sampling (cpu/disjoint_builder.h, one small map per tree) shares.
//
//   SubgraphBuilder builder(seeds, graph.num_nodes(), map, neighbors, out);  // seeds first
//   for (int64_t fanout : options.fanouts) {
//     for (size_t i = builder.frontier_begin(); i < builder.frontier_end(); ++i)
//       for (each picked edge of out.nodes[i]) builder.add_edge(i, neighbor, edge_id);
//     builder.end_hop();  // neighbors → local ids (first seen, in edge order); counters
//   }
//   builder.finish();     // ValueError when the batch outgrew int32 local ids
//   SampledSubgraph result = out.finish();  // the vectors as host arrays, no copy
//
// `Map` maps a global id to a local id for one batch; it must be empty when the builder starts:
//   int32_t insert(int64_t id, int32_t local)  records id → local and returns -1, or returns
//                                              the local id already recorded for id;
//   void prefetch(int64_t id) const            a hint that `id` is looked up soon.
// `neighbors` is caller-owned scratch (reused across batches to avoid allocations): the global
// ids of the current hop's edges, in edge order. The builder does not own `map`, `neighbors` or
// `out`; it is used by one thread at a time.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "volley/core/error.h"
#include "volley/sampling/neighbor_sampler.h"

namespace volley {

// `list` resized to `size`, its capacity grown by half at least when it must grow: after clear(),
// resize() would reserve exactly this batch's size, and every later, slightly larger batch of a
// recycled output would map (and fault) it anew.
template <typename T>
void resize_with_headroom(std::vector<T>& list, size_t size) {
  if (size > list.capacity()) list.reserve(std::max(size, list.capacity() * 3 / 2));
  list.resize(size);
}

// What every host subgraph builder shares: the current hop's edges (add_edge), its frontier, the
// per-hop counters and the int32 bound on local ids (finish). A builder puts the seeds in
// out.nodes and calls start(); its end_hop maps the hop's neighbors, then calls close_hop().
class HopEdges {
 public:
  // The current hop's frontier: local ids [frontier_begin(), frontier_end()) of out.nodes (the
  // nodes the previous hop added; the seeds for the first hop).
  size_t frontier_begin() const { return frontier_begin_; }
  size_t frontier_end() const { return frontier_end_; }

  // Appends one edge of the current hop: local target (in the frontier), neighbor's global id and
  // the edge's id.
  void add_edge(size_t target, int64_t neighbor, int64_t edge_id) {
    neighbors_.push_back(neighbor);
    out_.rows.push_back(static_cast<int64_t>(target));
    out_.edge_ids.push_back(edge_id);
  }

  // Appends `count` edges of local target `target` at once.
  void add_edges(size_t target, const int64_t* neighbors, const int64_t* edge_ids, size_t count) {
    neighbors_.insert(neighbors_.end(), neighbors, neighbors + count);
    out_.edge_ids.insert(out_.edge_ids.end(), edge_ids, edge_ids + count);
    out_.rows.insert(out_.rows.end(), count, static_cast<int64_t>(target));
  }

  // IndexError naming `seed` and its position when it is not a node of [0, num_nodes).
  static void check_seed(int64_t seed, size_t position, int64_t num_nodes) {
    VOLLEY_REQUIRE(seed >= 0 && seed < num_nodes, IndexError,
                   "seed id {} at position {} out of range for a graph with {} nodes", seed,
                   position, num_nodes);
  }

  // ValueError when the batch holds 2^31 nodes or more (local ids are int32).
  void finish() const {
    VOLLEY_REQUIRE(out_.nodes.size() < (size_t{1} << 31), ValueError,
                   "batch reached {} nodes, more than the 2^31 a batch may hold; use fewer seeds "
                   "or smaller fanouts",
                   out_.nodes.size());
  }

 protected:
  HopEdges(std::vector<int64_t>& neighbors, HostSubgraph& out) : neighbors_(neighbors), out_(out) {}

  // The seeds are out.nodes: clears the rest of `out`, the seeds are the first frontier.
  void start() {
    out_.num_seeds = static_cast<int64_t>(out_.nodes.size());
    out_.rows.clear();
    out_.cols.clear();
    out_.edge_ids.clear();
    out_.nodes_per_hop.assign(1, out_.num_seeds);
    out_.edges_per_hop.clear();
    neighbors_.clear();
    frontier_end_ = out_.nodes.size();
  }

  // The hop's `count` neighbors are mapped (out.cols, new nodes in out.nodes): records the hop's
  // counters; the new nodes are the next frontier.
  void close_hop(size_t count) {
    neighbors_.clear();
    out_.edges_per_hop.push_back(static_cast<int64_t>(count));
    out_.nodes_per_hop.push_back(static_cast<int64_t>(out_.nodes.size() - frontier_end_));
    frontier_begin_ = frontier_end_;
    frontier_end_ = out_.nodes.size();
  }

  std::vector<int64_t>& neighbors_;
  HostSubgraph& out_;

 private:
  size_t frontier_begin_ = 0;
  size_t frontier_end_ = 0;
};

template <typename Map>
class SubgraphBuilder : public HopEdges {
 public:
  // Puts `seeds` first in out.nodes (local ids 0..) and clears the rest of `out`. IndexError for
  // a seed out of [0, num_nodes), ValueError for a repeated seed (naming both positions).
  SubgraphBuilder(std::span<const int64_t> seeds, int64_t num_nodes, Map& map,
                  std::vector<int64_t>& neighbors, HostSubgraph& out)
      : HopEdges(neighbors, out), map_(map) {
    auto& nodes = out.nodes;
    nodes.clear();
    nodes.reserve(seeds.size() * 8);
    for (size_t i = 0; i < seeds.size(); ++i) {
      const int64_t seed = seeds[i];
      check_seed(seed, i, num_nodes);
      const int32_t earlier = map.insert(seed, static_cast<int32_t>(i));
      VOLLEY_REQUIRE(earlier < 0, ValueError,
                     "duplicate seed id {} at positions {} and {}; seeds must be distinct", seed,
                     earlier, i);
      nodes.push_back(seed);
    }
    start();
  }

  // Ends the hop: maps its neighbors to local ids in edge order (a node not seen before gets the
  // next local id and joins out.nodes, so the next frontier), records the hop's counters.
  void end_hop() {
    constexpr size_t kAhead = 16;  // the map outgrows the caches in large batches
    auto& nodes = out_.nodes;
    const size_t count = neighbors_.size();
    const size_t edges_before = out_.cols.size();
    resize_with_headroom(out_.cols, edges_before + count);
    // Room for every neighbor to be new, written through a pointer (no push_back in the loop:
    // its capacity check and call are most of the loop when the compiler does not inline it).
    size_t size = nodes.size();
    resize_with_headroom(nodes, size + count);
    int64_t* node_ids = nodes.data();
    int64_t* cols = out_.cols.data() + edges_before;
    const int64_t* neighbors = neighbors_.data();
    for (size_t j = 0; j < count; ++j) {
      if (j + kAhead < count) map_.prefetch(neighbors[j + kAhead]);
      const int64_t neighbor = neighbors[j];
      const auto fresh = static_cast<int32_t>(size);
      const int32_t earlier = map_.insert(neighbor, fresh);
      if (earlier < 0) node_ids[size++] = neighbor;
      cols[j] = earlier < 0 ? fresh : earlier;
    }
    nodes.resize(size);
    close_hop(count);
  }

 private:
  Map& map_;
};

}  // namespace volley
