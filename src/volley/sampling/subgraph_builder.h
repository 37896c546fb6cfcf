// volley/sampling/subgraph_builder.h — builds a sampled subgraph on the host hop by hop: the
// seed map, the relabel of sampled neighbors to local ids, the per-hop counters. One node list
// per node type and one edge list per edge type (TypedLists): a homogeneous batch is the
// one-type case (HostSubgraph's lists), a heterogeneous one fills HeteroSampledSubgraph's.
//
// One builder for every sampler that produces a subgraph on the host: the CPU kernel (a slot map
// per node type sized to the graph; its disjoint builder, cpu/typed_builder.h, shares
// TypedHopEdges) and the distributed sampler's merge (a hash map sized to the batch) fill it the
// same way, so their outputs agree bit for bit.
//
//   TypedLists lists;
//   point_at(out, lists);                                   // a HostSubgraph: one type
//   TypedSubgraphBuilder<Map> builder(lists, maps, neighbors);
//   place_seeds(builder, groups);                           // ValueError for a repeated seed
//   builder.start();
//   for each hop:
//     for each edge type e (source type s, destination type d):
//       builder.begin_edges(e, s, d);
//       for i in [frontier_begin(d), frontier_end(d)): builder.add_edge(i, neighbor, edge_id)
//       builder.end_edges();      // neighbors -> local ids of type s (first seen, edge order)
//     builder.end_hop();          // the types' new nodes are the next frontiers
//   builder.finish();             // ValueError when a type outgrew int32 local ids
//
// A hop's frontiers are fixed when it starts: nodes that an edge type adds during the hop are
// expanded at the next one. Local ids are given in edge order, edge type by edge type. The
// builder does not own `lists`, the maps or `neighbors`; it is used by one thread at a time.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "volley/core/error.h"
#include "volley/sampling/hetero_sampler.h"
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

// Where a builder writes: per node type and per edge type, the lists of a HostSubgraph (one
// type) or of a HeteroSampledSubgraph, not owned. `batch` is written by disjoint sampling only.
struct TypedLists {
  std::vector<std::vector<int64_t>*> nodes, batch, nodes_per_hop;  // per node type
  std::vector<int64_t*> num_seeds;
  std::vector<std::vector<int64_t>*> rows, cols, edge_ids, edges_per_hop;  // per edge type
};

// `lists` pointed at `out`'s: one node type, one edge type (a homogeneous batch).
inline void point_at(HostSubgraph& out, TypedLists& lists) {
  lists.nodes.assign(1, &out.nodes);
  lists.batch.assign(1, &out.batch);
  lists.nodes_per_hop.assign(1, &out.nodes_per_hop);
  lists.num_seeds.assign(1, &out.num_seeds);
  lists.rows.assign(1, &out.rows);
  lists.cols.assign(1, &out.cols);
  lists.edge_ids.assign(1, &out.edge_ids);
  lists.edges_per_hop.assign(1, &out.edges_per_hop);
}

// `lists` pointed at `out`'s, `out` sized to `types` node types and `edge_types` edge types
// (its `batch` lists only when `disjoint`).
inline void point_at(HeteroSampledSubgraph& out, size_t types, size_t edge_types, bool disjoint,
                     TypedLists& lists) {
  for (auto* part : {&out.nodes, &out.nodes_per_hop}) part->resize(types);
  for (auto* part : {&out.rows, &out.cols, &out.edge_ids, &out.edges_per_hop}) {
    part->resize(edge_types);
  }
  out.batch.resize(disjoint ? types : 0);
  out.num_seeds.assign(types, 0);
  for (auto* pointers : {&lists.nodes, &lists.batch, &lists.nodes_per_hop, &lists.rows, &lists.cols,
                         &lists.edge_ids, &lists.edges_per_hop}) {
    pointers->clear();
  }
  lists.num_seeds.clear();
  for (size_t t = 0; t < types; ++t) {
    lists.nodes.push_back(&out.nodes[t]);
    lists.nodes_per_hop.push_back(&out.nodes_per_hop[t]);
    lists.num_seeds.push_back(&out.num_seeds[t]);
    if (disjoint) lists.batch.push_back(&out.batch[t]);
  }
  for (size_t e = 0; e < edge_types; ++e) {
    lists.rows.push_back(&out.rows[e]);
    lists.cols.push_back(&out.cols[e]);
    lists.edge_ids.push_back(&out.edge_ids[e]);
    lists.edges_per_hop.push_back(&out.edges_per_hop[e]);
  }
}

// Seeds of one node type; `name` (empty for a homogeneous graph) is named by errors.
struct TypedSeeds {
  int type = 0;
  std::span<const int64_t> ids;
  std::string_view name;
};

// What every builder shares: the frontiers, a hop's edges of one edge type (add_edge), the
// counters and the int32 bound on local ids.
class TypedHopEdges {
 public:
  size_t frontier_begin(int type) const { return frontier_begin_[static_cast<size_t>(type)]; }
  size_t frontier_end(int type) const { return frontier_end_[static_cast<size_t>(type)]; }
  const int64_t* nodes(int type) const { return lists_.nodes[static_cast<size_t>(type)]->data(); }

  // Starts edge type `e`'s edges of the current hop: neighbors of type `src`, targets of type
  // `dst`.
  void begin_edges(int e, int src, int dst) {
    edge_type_ = static_cast<size_t>(e);
    src_ = static_cast<size_t>(src);
    dst_ = static_cast<size_t>(dst);
    rows_ = lists_.rows[static_cast<size_t>(e)];
    edge_ids_ = lists_.edge_ids[static_cast<size_t>(e)];
    edges_before_ = rows_->size();
    neighbors_.clear();
  }

  // Appends one edge: local target (in the destination type's frontier), neighbor's global id
  // (or a CSR position the caller turns into one before end_edges) and the edge's id.
  void add_edge(size_t target, int64_t neighbor, int64_t edge_id) {
    neighbors_.push_back(neighbor);
    rows_->push_back(static_cast<int64_t>(target));
    edge_ids_->push_back(edge_id);
  }

  // Appends `count` edges of local target `target` at once.
  void add_edges(size_t target, const int64_t* neighbors, const int64_t* edge_ids, size_t count) {
    neighbors_.insert(neighbors_.end(), neighbors, neighbors + count);
    edge_ids_->insert(edge_ids_->end(), edge_ids, edge_ids + count);
    rows_->insert(rows_->end(), count, static_cast<int64_t>(target));
  }

  // The current edge type's neighbors, in edge order.
  std::vector<int64_t>& neighbors() { return neighbors_; }

  // IndexError naming `seed` and its position when it is not a node of [0, num_nodes).
  static void check_seed(int64_t seed, size_t position, int64_t num_nodes) {
    VOLLEY_REQUIRE(seed >= 0 && seed < num_nodes, IndexError,
                   "seed id {} at position {} out of range for a graph with {} nodes", seed,
                   position, num_nodes);
  }

  // The hop ends: every type's new nodes are its next frontier.
  void end_hop() {
    for (size_t t = 0; t < frontier_end_.size(); ++t) {
      const size_t size = lists_.nodes[t]->size();
      lists_.nodes_per_hop[t]->push_back(static_cast<int64_t>(size - frontier_end_[t]));
      frontier_begin_[t] = frontier_end_[t];
      frontier_end_[t] = size;
    }
  }

  // ValueError when a type holds 2^31 nodes or more (local ids are int32).
  void finish() const {
    for (size_t t = 0; t < lists_.nodes.size(); ++t) {
      VOLLEY_REQUIRE(lists_.nodes[t]->size() < (size_t{1} << 31), ValueError,
                     "batch reached {} nodes{}, more than the 2^31 a batch may hold; use fewer "
                     "seeds or smaller fanouts",
                     lists_.nodes[t]->size(), lists_.nodes.size() > 1 ? " of one type" : "");
    }
  }

 protected:
  // `neighbors`: caller-owned scratch for one edge type's neighbors (reused across batches).
  TypedHopEdges(TypedLists& lists, std::vector<int64_t>& neighbors)
      : lists_(lists), neighbors_(neighbors) {
    const size_t types = lists.nodes.size();
    for (size_t t = 0; t < types; ++t) lists.nodes[t]->clear();
    for (size_t e = 0; e < lists.rows.size(); ++e) {
      lists.rows[e]->clear();
      lists.cols[e]->clear();
      lists.edge_ids[e]->clear();
      lists.edges_per_hop[e]->clear();
    }
    frontier_begin_.assign(types, 0);
    frontier_end_.assign(types, 0);
  }

  // The seeds are placed: they are the first frontiers.
  void start_hops() {
    for (size_t t = 0; t < frontier_end_.size(); ++t) {
      const auto size = static_cast<int64_t>(lists_.nodes[t]->size());
      *lists_.num_seeds[t] = size;
      lists_.nodes_per_hop[t]->assign(1, size);
      frontier_end_[t] = static_cast<size_t>(size);
    }
    neighbors_.clear();
  }

  // The current edge type's edges of this hop are mapped: records their count.
  void close_edges() {
    const size_t count = rows_->size() - edges_before_;
    lists_.edges_per_hop[edge_type_]->push_back(static_cast<int64_t>(count));
    neighbors_.clear();
  }

  TypedLists& lists_;
  std::vector<int64_t>& neighbors_;
  std::vector<int64_t>* rows_ = nullptr;
  std::vector<int64_t>* edge_ids_ = nullptr;
  size_t edges_before_ = 0;
  size_t edge_type_ = 0, src_ = 0, dst_ = 0;  // of the edges begin_edges started

 private:
  std::vector<size_t> frontier_begin_, frontier_end_;
};

// One local id per (type, node), through `Map` (one per node type, empty when the builder
// starts):
//   int32_t insert(int64_t id, int32_t local)  records id -> local and returns -1, or returns
//                                              the local id already recorded for id;
//   void prefetch(int64_t id) const            a hint that `id` is looked up soon.
template <typename Map>
class TypedSubgraphBuilder : public TypedHopEdges {
 public:
  // `maps`: one per node type, not owned.
  TypedSubgraphBuilder(TypedLists& lists, std::span<Map> maps, std::vector<int64_t>& neighbors)
      : TypedHopEdges(lists, neighbors), maps_(maps) {}

  // Seed `id` of `type` gets the next local id of its type; returns -1, or the local id an
  // equal earlier seed got (the seed is then not added). `tree` is unused.
  int32_t add_seed(int type, int64_t id, int64_t /*tree*/) {
    auto& nodes = *lists_.nodes[static_cast<size_t>(type)];
    const int32_t earlier =
        maps_[static_cast<size_t>(type)].insert(id, static_cast<int32_t>(nodes.size()));
    if (earlier < 0) nodes.push_back(id);
    return earlier;
  }
  void start() { start_hops(); }

  // Maps the current edge type's neighbors (global ids of its source type) to local ids in edge
  // order: a node not seen before gets the type's next local id and joins its next frontier.
  void end_edges() {
    constexpr size_t kAhead = 16;  // the map outgrows the caches in large batches
    Map& map = maps_[src_];
    auto& nodes = *lists_.nodes[src_];
    auto& cols = *lists_.cols[edge_type_];
    const size_t count = neighbors_.size();
    const size_t edges_before = cols.size();
    resize_with_headroom(cols, edges_before + count);
    // Room for every neighbor to be new, written through a pointer (no push_back in the loop).
    size_t size = nodes.size();
    resize_with_headroom(nodes, size + count);
    int64_t* node_ids = nodes.data();
    int64_t* out = cols.data() + edges_before;
    const int64_t* neighbors = neighbors_.data();
    for (size_t j = 0; j < count; ++j) {
      if (j + kAhead < count) map.prefetch(neighbors[j + kAhead]);
      const int64_t neighbor = neighbors[j];
      const auto fresh = static_cast<int32_t>(size);
      const int32_t earlier = map.insert(neighbor, fresh);
      if (earlier < 0) node_ids[size++] = neighbor;
      out[j] = earlier < 0 ? fresh : earlier;
    }
    nodes.resize(size);
    close_edges();
  }

 private:
  std::span<Map> maps_;
};

// The seeds of every group placed in order (tree t: the t-th seed over all groups); ValueError
// for a seed equal to an earlier one of its type (a builder that keeps one local id per node),
// naming the type when it has a name.
template <typename Builder>
void place_seeds(Builder& builder, std::span<const TypedSeeds> groups) {
  int64_t tree = 0;
  for (const TypedSeeds& group : groups) {
    for (size_t i = 0; i < group.ids.size(); ++i, ++tree) {
      const int32_t earlier = builder.add_seed(group.type, group.ids[i], tree);
      if (earlier < 0) continue;
      if (group.name.empty()) {
        throw ValueError(
            fmt::format("duplicate seed id {} at positions {} and {}; seeds must be distinct",
                        group.ids[i], earlier, i));
      }
      throw ValueError(fmt::format("duplicate seed {} of node type '{}' at positions {} and {}",
                                   group.ids[i], group.name, earlier, i));
    }
  }
}

}  // namespace volley
