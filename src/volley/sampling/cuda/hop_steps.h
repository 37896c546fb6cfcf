// volley/sampling/cuda/hop_steps.h — one expansion of a frontier over one Csr (count, pick,
// relabel), the building block of both GPU sampler drivers: the homogeneous one
// (neighbor_driver.h: one expansion per hop) and the heterogeneous one (hetero_driver.h: one per
// hop and edge type). A template on the executor (core/internal/executor.h); the bodies are in
// neighbor_kernels.h.
//
//   NodeList<Executor> nodes(executor);      // a node list and its global id → local id table
//   EdgeLists<Executor> edges(executor);     // rows, cols, edge ids
//   HopSteps<Executor> steps(executor);      // the scratch of one expansion
//   nodes.start(executor, seed_count, ...);  // after uploading the seeds into nodes.nodes
//   int64_t new_edges = steps.expand(graph, frontier, sources, edges, rule, tree_size, time);
//
// expand(), in the executor's stream order:
//   1. count    one item per frontier target (CountBody); exclusive scan → each target's output
//               offset; the total E is read back (first wait);
//   2. pick     one item per target (PickBody) draws its positions at its offset (or notes
//               where its run of the row starts), then one item per edge (FillBody) writes
//               row, edge id and neighbor: the edge order is the CPU's — targets in node-list
//               order, each target's neighbors in pick order;
//   3. relabel  first appearance in that order, with the source list's hash table global id →
//               value: earlier nodes hold their local id (< n, the nodes so far); neighbor j
//               inserts n + j with an atomic min, so a new node's entry ends up holding the
//               position of its first occurrence; j is a first occurrence iff the entry equals
//               n + j; an exclusive scan of those flags numbers the new nodes in position order
//               (second wait, for their count); first occurrences append their node and store
//               the final local id in the table; then every edge reads its column from the table.
// A table lives through the batch (cleared once, grown by rehashing when an expansion could fill
// more than half of it); all buffers are Scratch kept between batches.
// Not thread-safe: the driver that owns these serialises its batches.
#pragma once

#include <algorithm>
#include <cstdint>

#include "volley/core/internal/executor.h"
#include "volley/sampling/cuda/neighbor_kernels.h"
#include "volley/sampling/internal/cuda_sampler_backend.h"

namespace volley::sampling_internal {

inline int64_t next_power_of_two(int64_t value) {
  int64_t power = 1;
  while (power < value) power <<= 1;
  return power;
}

// The kernels' view of a placed Csr (DeviceGraphView) with its index type.
template <typename Index>
GraphRows<Index> graph_rows(const DeviceGraphView& view) {
  GraphRows<Index> graph;
  graph.indptr = view.indptr;
  graph.indices = static_cast<const Index*>(view.indices);
  graph.edge_ids = view.edge_ids;
  graph.weights = view.weights;
  return graph;
}

// One node list of a batch (all nodes, or one node type's) with its global id (or disjoint key)
// → local id table. `count` nodes are valid at the front of `nodes`.
template <class Executor>
struct NodeList {
  explicit NodeList(Executor& executor)
      : nodes(executor, internal::Memory::kDevice),
        table_memory(executor, internal::Memory::kDevice) {}

  Table table() const {
    Table view;
    view.keys = table_memory.template as<unsigned long long>();
    view.values = view.keys + capacity;
    view.mask = static_cast<unsigned long long>(capacity - 1);
    return view;
  }

  // A cleared table of `entries` (a power of two) holding nodes[0, count) → local id.
  void reset_table(Executor& executor, int64_t entries) {
    capacity = entries;
    const size_t bytes = static_cast<size_t>(entries) * 2 * sizeof(unsigned long long);
    table_memory.reserve(bytes);
    executor.fill(table_memory.data(), 0xff, bytes);
    executor.for_each(count, InsertBody{table(), nodes.template as<int64_t>(), 0});
  }

  // Starts a batch whose `seed_count` seeds are already in `nodes`: the table the last batch
  // ended with (no rehash in steady state), at least 1024 entries and 4 per seed.
  void start(Executor& executor, int64_t seed_count) {
    count = seed_count;
    reset_table(executor, std::max(next_power_of_two(4 * seed_count),
                                   std::max<int64_t>(last_capacity, 1024)));
  }
  // Ends a batch: remembers the table size for the next one.
  void finish() { last_capacity = capacity; }

  internal::Scratch<Executor> nodes, table_memory;
  int64_t count = 0;
  int64_t capacity = 0;       // table entries
  int64_t last_capacity = 0;  // the table size the last batch ended with
};

// The edges of a batch (all, or one edge type's): `count` int64 at the front of each.
template <class Executor>
struct EdgeLists {
  explicit EdgeLists(Executor& executor)
      : rows(executor, internal::Memory::kDevice),
        cols(executor, internal::Memory::kDevice),
        edge_ids(executor, internal::Memory::kDevice) {}

  // Room for `edges` edges (fresh buffers if the caller holds the last batch's).
  void start(int64_t edges) {
    count = 0;
    for (auto* list : {&rows, &cols, &edge_ids})
      list->reserve(static_cast<size_t>(std::max<int64_t>(edges, 1)) * sizeof(int64_t));
  }

  internal::Scratch<Executor> rows, cols, edge_ids;
  int64_t count = 0;
};

// A frontier: `size` consecutive nodes of a node list, the first of local id `first`.
struct Frontier {
  const int64_t* nodes = nullptr;  // nodes[0, size): global ids (or disjoint keys)
  int64_t first = 0;
  int64_t size = 0;
};

template <class Executor>
class HopSteps {
 public:
  explicit HopSteps(Executor& executor)
      : executor_(executor),
        neighbors_(executor, internal::Memory::kDevice),
        counts_(executor, internal::Memory::kDevice),
        offsets_(executor, internal::Memory::kDevice),
        flags_(executor, internal::Memory::kDevice),
        ranks_(executor, internal::Memory::kDevice) {}

  // Expands `frontier` over `graph` with `rule`: appends its edges to `edges` (rows: local ids
  // in the frontier's list; cols: local ids in `sources`) and the neighbors not yet in `sources`
  // to it, in first-appearance order. Returns the edges added. `frontier.nodes` may point into
  // `sources.nodes` (a homogeneous graph, or an edge type whose ends have one type); it is read
  // before `sources` grows.
  template <typename Index>
  int64_t expand(const GraphRows<Index>& graph, const Frontier& frontier,
                 NodeList<Executor>& sources, EdgeLists<Executor>& edges, const PickRule& rule,
                 int64_t tree_size, const TemporalRows& time) {
    if (rule.fanout == 0 || frontier.size == 0) return 0;
    const int64_t added = count(graph, frontier, rule, tree_size, time);
    if (added == 0) return 0;
    const size_t kept = static_cast<size_t>(edges.count) * sizeof(int64_t);
    const size_t needed = static_cast<size_t>(edges.count + added) * sizeof(int64_t);
    edges.rows.reserve(needed, kept);
    edges.cols.reserve(needed, kept);
    edges.edge_ids.reserve(needed, kept);
    neighbors_.reserve(static_cast<size_t>(added) * sizeof(int64_t));
    pick(graph, frontier, edges, added, rule, tree_size, time);
    relabel(sources, edges, added);
    edges.count += added;
    return added;
  }

 private:
  // Counts and offsets of the frontier; returns its edge count.
  template <typename Index>
  int64_t count(const GraphRows<Index>& graph, const Frontier& frontier, const PickRule& rule,
                int64_t tree_size, const TemporalRows& time) {
    const size_t frontier_bytes = static_cast<size_t>(frontier.size + 1) * sizeof(int64_t);
    counts_.reserve(frontier_bytes);
    offsets_.reserve(frontier_bytes);
    executor_.for_each(frontier.size,
                       CountBody<Index>{graph, frontier.nodes, frontier.size, rule,
                                        counts_.template as<int64_t>(), tree_size, time});
    executor_.exclusive_scan(counts_.template as<int64_t>(), offsets_.template as<int64_t>(),
                             frontier.size + 1);
    return executor_.read(offsets_.template as<int64_t>() + frontier.size);
  }

  // Picks `added` edges into edges.rows / edge_ids / neighbors_ at edges.count (PickBody per
  // target, then FillBody per edge).
  template <typename Index>
  void pick(const GraphRows<Index>& graph, const Frontier& frontier, EdgeLists<Executor>& edges,
            int64_t added, const PickRule& rule, int64_t tree_size, const TemporalRows& time) {
    const int64_t* offsets = offsets_.template as<int64_t>();
    int64_t* bases = counts_.template as<int64_t>();  // free since the scan
    int64_t* rows = edges.rows.template as<int64_t>() + edges.count;
    int64_t* edge_ids = edges.edge_ids.template as<int64_t>() + edges.count;
    executor_.for_each(frontier.size,
                       PickBody<Index>{graph, frontier.nodes, rule, offsets, bases, rows,
                                       edges.cols.template as<int64_t>() + edges.count, edge_ids,
                                       tree_size, time});
    executor_.for_each(
        added, FillBody<Index>{graph, frontier.nodes, frontier.size, frontier.first, offsets, bases,
                               rows, edge_ids, neighbors_.template as<int64_t>(), tree_size});
  }

  // Numbers the new nodes among the `added` neighbors (appended to `sources`) and fills the
  // columns at edges.count.
  void relabel(NodeList<Executor>& sources, EdgeLists<Executor>& edges, int64_t added) {
    const int64_t base = sources.count;
    const int64_t bound = base + added;  // most nodes the list can hold now
    if (2 * bound > sources.capacity) sources.reset_table(executor_, next_power_of_two(2 * bound));
    const int64_t* neighbors = neighbors_.template as<int64_t>();
    executor_.for_each(added, InsertBody{sources.table(), neighbors, base});
    const size_t flag_bytes = static_cast<size_t>(added + 1) * sizeof(int64_t);
    auto* flags = reinterpret_cast<int64_t*>(flags_.reserve(flag_bytes));
    auto* ranks = reinterpret_cast<int64_t*>(ranks_.reserve(flag_bytes));
    executor_.for_each(added, FlagFirstBody{sources.table(), neighbors, added, base, flags});
    executor_.exclusive_scan(flags, ranks, added + 1);
    const int64_t fresh = executor_.read(ranks + added);
    if (base + fresh >= (int64_t{1} << 31)) throw_batch_too_large(base + fresh);
    sources.nodes.reserve(static_cast<size_t>(base + fresh) * sizeof(int64_t),
                          static_cast<size_t>(base) * sizeof(int64_t));
    executor_.for_each(added, AssignBody{sources.table(), neighbors, base, flags, ranks,
                                         sources.nodes.template as<int64_t>()});
    executor_.for_each(added, ColumnsBody{sources.table(), neighbors,
                                          edges.cols.template as<int64_t>() + edges.count});
    sources.count = base + fresh;
  }

  Executor& executor_;
  internal::Scratch<Executor> neighbors_, counts_, offsets_, flags_, ranks_;
};

}  // namespace volley::sampling_internal
