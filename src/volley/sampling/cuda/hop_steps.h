// volley/sampling/cuda/hop_steps.h — one expansion of a frontier over one Csr (count, pick,
// relabel), the building block of both GPU sampler drivers: the homogeneous one
// (neighbor_driver.h: one expansion per hop) and the heterogeneous one (hetero_driver.h: one per
// hop and edge type). A template on the executor (core/internal/executor.h); the bodies are in
// neighbor_kernels.h.
//
//   Tally<Executor> tally(executor);         // the batch's sizes, in device memory
//   NodeList<Executor> nodes(executor);      // a node list and its global id → local id table
//   EdgeLists<Executor> edges(executor);     // rows, cols, edge ids
//   HopSteps<Executor> steps(executor);      // the scratch of one expansion
//   tally.start(marks); tally.take(nodes.levels, seed_count, hops + 2); ...; tally.upload();
//   nodes.start(executor);                   // after uploading the seeds into nodes.nodes
//   per hop: next_level() on every list, steps.expand(...), end_level() on every list
//   tally.read();                            // the batch's one wait: every list's sizes
//
// Sizes live on the device. A list's size after each level is a mark in the batch's tally, which
// the bodies read; the host keeps only upper bounds (Levels), so a hop is launched without
// waiting for the device. An expansion's edge count is bounded by frontier bound × fanout; it is
// read back instead (a wait) when there is no such bound (fanout -1) or the bound would size
// buffers past kBoundedEdges, and a node count is read back when its bound reaches the int32
// limit. Bounds only size buffers and launches: every body stops at the live count.
//
// expand(), in the executor's stream order:
//   1. count    one item per frontier bound (CountBody, zeros past the live targets); exclusive
//               scan → each target's output offset, the total at the bound;
//   2. pick     one item per target (PickBody) draws its positions at its offset (or notes
//               where its run of the row starts), then one item per edge (FillBody) writes
//               row, edge id and neighbor: the edge order is the CPU's — targets in node-list
//               order, each target's neighbors in pick order;
//   3. relabel  first appearance in that order, with the source list's hash table global id →
//               value: earlier nodes hold their local id (< B, a bound of the nodes so far);
//               neighbor j inserts B + j with an atomic min, so a new node's entry ends up
//               holding the position of its first occurrence; j is a first occurrence iff the
//               entry equals B + j; an exclusive scan of those flags numbers the new nodes in
//               position order; first occurrences append their node at the list's live size and
//               store the final local id in the table; every edge reads its column from the
//               table; one item (TallyBody) writes the lists' new sizes.
// A table lives through the batch (cleared once, grown by rehashing when an expansion could fill
// more than half of it); all buffers are Scratch kept between batches.
// Not thread-safe: the driver that owns these serialises its batches.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "volley/core/internal/executor.h"
#include "volley/sampling/cuda/neighbor_kernels.h"
#include "volley/sampling/internal/cuda_sampler_backend.h"

namespace volley::sampling_internal {

// The most edges an expansion sizes its buffers for without reading its count back.
constexpr int64_t kBoundedEdges = int64_t{1} << 24;

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

// A list's size level by level: marks[0] = 0, marks[1] = its first size (the seeds), and
// marks[h + 2] its size after hop h. The marks are in device memory (the batch's Tally); the
// host knows upper bounds of each level's growth (exact where a count was read back).
struct Levels {
  int64_t* marks = nullptr;
  size_t offset = 0;            // of marks[0] in the tally
  std::vector<int64_t> growth;  // growth[k] >= marks[k] - marks[k - 1]
  int64_t bound = 0;            // >= the current size
  size_t level = 1;
  bool grown = true;  // marks[level] is written (else the size is still marks[level - 1])

  void start(int64_t* at, size_t at_offset, int64_t first) {
    marks = at;
    offset = at_offset;
    growth.assign({0, first});
    bound = first;
    level = 1;
    grown = true;
  }
  // The mark holding the current size, and the size as a launch count.
  const int64_t* size_mark() const { return marks + level - (grown ? 0 : 1); }
  internal::DeviceCount size() const { return {size_mark(), nullptr, bound}; }
  // The nodes the previous level added: the frontier of this level's hop.
  internal::DeviceCount previous() const {
    return {marks + level - 1, marks + level - 2, growth[level - 1]};
  }
  // Opens the next level (a hop); growth writes marks[level].
  void next_level() {
    ++level;
    growth.push_back(0);
    grown = false;
  }
  void grew(int64_t by) {
    growth[level] += by;
    bound += by;
    grown = true;
  }
  // Closes the level: a list that did not grow keeps its size.
  template <class Executor>
  void end_level(Executor& executor) {
    if (!grown) executor.copy(marks + level, marks + level - 1, sizeof(int64_t));
    grown = true;
  }
  // Each level's growth, from the tally read back: {marks[1], marks[2] - marks[1], ...}.
  std::vector<int64_t> counts(const std::vector<int64_t>& tally) const {
    std::vector<int64_t> out;
    for (size_t k = 1; k <= level; ++k) out.push_back(tally[offset + k] - tally[offset + k - 1]);
    return out;
  }
  int64_t size_in(const std::vector<int64_t>& tally) const { return tally[offset + level]; }
};

// The sizes of one batch's lists (each a Levels' marks), in one device array: uploaded when the
// batch starts, read back when it ends.
template <class Executor>
class Tally {
 public:
  explicit Tally(Executor& executor)
      : executor_(executor), marks_(executor, internal::Memory::kDevice) {}

  // Room for `marks` marks, handed out by take().
  void start(size_t marks) {
    host_.assign(marks, 0);
    marks_.reserve(marks * sizeof(int64_t));
    used_ = 0;
  }
  // `count` marks for `levels`, starting at size `first`.
  void take(Levels& levels, int64_t first, size_t count) {
    levels.start(marks_.template as<int64_t>() + used_, used_, first);
    host_[used_ + 1] = first;
    used_ += count;
  }
  void upload() { executor_.upload(marks_.data(), host_.data(), used_ * sizeof(int64_t)); }
  // Every mark (waits for the stream).
  const std::vector<int64_t>& read() {
    executor_.read(marks_.template as<int64_t>(), host_.data(), static_cast<int64_t>(used_));
    return host_;
  }

 private:
  Executor& executor_;
  internal::Scratch<Executor> marks_;
  std::vector<int64_t> host_;
  size_t used_ = 0;
};

// One node list of a batch (all nodes, or one node type's) with its global id (or disjoint key)
// → local id table. Its size is levels' (device marks, host bound).
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

  // A cleared table of `entries` (a power of two) holding the list's nodes → local id.
  void reset_table(Executor& executor, int64_t entries) {
    capacity = entries;
    const size_t bytes = static_cast<size_t>(entries) * 2 * sizeof(unsigned long long);
    table_memory.reserve(bytes);
    executor.fill(table_memory.data(), 0xff, bytes);
    executor.for_each_counted(levels.size(), InsertBody{table(), nodes.template as<int64_t>(), 0});
  }

  // Starts a batch whose seeds are in `nodes` and whose levels were taken from the tally: the
  // table the last batch ended with (no rehash in steady state), at least 1024 entries and 4
  // per seed.
  void start(Executor& executor) {
    reset_table(executor, std::max(next_power_of_two(4 * levels.bound),
                                   std::max<int64_t>(last_capacity, 1024)));
  }
  // Ends a batch: remembers the table size for the next one.
  void finish() { last_capacity = capacity; }

  internal::Scratch<Executor> nodes, table_memory;
  Levels levels;
  int64_t capacity = 0;       // table entries
  int64_t last_capacity = 0;  // the table size the last batch ended with
};

// The edges of a batch (all, or one edge type's): levels' size of int64 at the front of each.
template <class Executor>
struct EdgeLists {
  explicit EdgeLists(Executor& executor)
      : rows(executor, internal::Memory::kDevice),
        cols(executor, internal::Memory::kDevice),
        edge_ids(executor, internal::Memory::kDevice) {}

  // Room for `edges` edges (fresh buffers if the caller holds the last batch's).
  void start(int64_t edges) {
    for (auto* list : {&rows, &cols, &edge_ids})
      list->reserve(static_cast<size_t>(std::max<int64_t>(edges, 1)) * sizeof(int64_t));
  }

  internal::Scratch<Executor> rows, cols, edge_ids;
  Levels levels;
};

// Seeds into `list.nodes` (reserved by the caller): for disjoint sampling (tree_size > 0) as keys
// (first_root + i) * tree_size + seeds[i] — seed i roots tree first_root + i — else the ids.
template <class Executor>
void upload_seeds(Executor& executor, NodeList<Executor>& list, std::span<const int64_t> seeds,
                  int64_t first_root, int64_t tree_size) {
  const size_t bytes = seeds.size() * sizeof(int64_t);
  if (bytes == 0) return;
  if (tree_size == 0) {
    executor.upload(list.nodes.data(), seeds.data(), bytes);
    return;
  }
  std::vector<int64_t> keys(seeds.size());
  for (size_t i = 0; i < seeds.size(); ++i)
    keys[i] = (first_root + static_cast<int64_t>(i)) * tree_size + seeds[i];
  executor.upload(list.nodes.data(), keys.data(), bytes);
}

// Disjoint sampling, at the end of a batch: `list`'s keys split in place into nodes and, into
// `trees` (grown to the list's bound), each node's tree.
template <class Executor>
void split_trees(Executor& executor, NodeList<Executor>& list, int64_t tree_size,
                 internal::Scratch<Executor>& trees) {
  trees.reserve(static_cast<size_t>(list.levels.bound) * sizeof(int64_t));
  executor.for_each_counted(
      list.levels.size(),
      SplitKeysBody{tree_size, list.nodes.template as<int64_t>(), trees.template as<int64_t>()});
}

// A frontier: the nodes the previous level added to a node list (Levels::previous()).
struct Frontier {
  const int64_t* nodes = nullptr;  // the list: global ids (or disjoint keys)
  internal::DeviceCount count;     // [*count.begin, *count.end) of it; count.bound >= its size
  FrontierRows rows() const { return {nodes, count.begin, count.end}; }
};

template <class Executor>
Frontier frontier_of(const NodeList<Executor>& list) {
  return {list.nodes.template as<int64_t>(), list.levels.previous()};
}

template <class Executor>
class HopSteps {
 public:
  explicit HopSteps(Executor& executor)
      : executor_(executor),
        neighbors_(executor, internal::Memory::kDevice),
        counts_(executor, internal::Memory::kDevice),
        offsets_(executor, internal::Memory::kDevice),
        flags_(executor, internal::Memory::kDevice),
        ranks_(executor, internal::Memory::kDevice),
        lane_keys_(executor, internal::Memory::kDevice),
        lane_positions_(executor, internal::Memory::kDevice),
        lane_sizes_(executor, internal::Memory::kDevice) {}

  // Expands `frontier` over `graph` with `rule`: appends its edges to `edges` (rows: local ids
  // in the frontier's list; cols: local ids in `sources`) and the neighbors not yet in `sources`
  // to it, in first-appearance order; both lists' levels grow (on the device, and their
  // bounds). `frontier.nodes` may point into `sources.nodes` (a homogeneous graph, or an edge
  // type whose ends have one type); it is read before `sources` grows.
  template <typename Index>
  void expand(const GraphRows<Index>& graph, const Frontier& frontier, NodeList<Executor>& sources,
              EdgeLists<Executor>& edges, const PickRule& rule, int64_t tree_size,
              const TemporalRows& time) {
    if (rule.fanout == 0 || frontier.count.bound == 0) return;
    const int64_t added = count(graph, frontier, rule, tree_size, time);
    if (added == 0) return;
    const size_t kept = static_cast<size_t>(edges.levels.bound) * sizeof(int64_t);
    const size_t needed = static_cast<size_t>(edges.levels.bound + added) * sizeof(int64_t);
    edges.rows.reserve(needed, kept);
    edges.cols.reserve(needed, kept);
    edges.edge_ids.reserve(needed, kept);
    neighbors_.reserve(static_cast<size_t>(added) * sizeof(int64_t));
    pick(graph, frontier, edges, added, rule, tree_size, time);
    relabel(sources, edges, total(frontier), added, rule.fanout < 0);
  }

 private:
  // Counts and offsets of the frontier (offsets[bound] is its edge count, on the device);
  // returns an upper bound of that count, or the count read back.
  template <typename Index>
  int64_t count(const GraphRows<Index>& graph, const Frontier& frontier, const PickRule& rule,
                int64_t tree_size, const TemporalRows& time) {
    const int64_t bound = frontier.count.bound;
    const size_t frontier_bytes = static_cast<size_t>(bound + 1) * sizeof(int64_t);
    counts_.reserve(frontier_bytes);
    offsets_.reserve(frontier_bytes);
    executor_.for_each(
        bound + 1, CountBody<Index>{graph, frontier.rows(), rule, counts_.template as<int64_t>(),
                                    tree_size, time});
    executor_.exclusive_scan(counts_.template as<int64_t>(), offsets_.template as<int64_t>(),
                             bound + 1);
    const bool bounded = rule.fanout > 0 && bound <= kBoundedEdges / rule.fanout;
    return bounded ? bound * rule.fanout : executor_.read(total(frontier));
  }
  // The frontier's edge count on the device: the offsets' element at its bound.
  const int64_t* total(const Frontier& frontier) const {
    return offsets_.template as<int64_t>() + frontier.count.bound;
  }

  // Picks the hop's edges (at most `added`) into edges.rows / edge_ids / neighbors_ at the edge
  // lists' live size (PickBody per target, then FillBody per edge).
  template <typename Index>
  void pick(const GraphRows<Index>& graph, const Frontier& frontier, EdgeLists<Executor>& edges,
            int64_t added, const PickRule& rule, int64_t tree_size, const TemporalRows& time) {
    const int64_t* offsets = offsets_.template as<int64_t>();
    int64_t* bases = counts_.template as<int64_t>();  // free since the scan
    const int64_t* edge_base = edges.levels.size_mark();
    int64_t* rows = edges.rows.template as<int64_t>();
    int64_t* edge_ids = edges.edge_ids.template as<int64_t>();
    const int64_t lanes = weighted_lanes(graph, frontier, rule, time);
    PickBody<Index> pick_body{graph,    frontier.rows(), rule, offsets,
                              bases,    edge_base,       rows, edges.cols.template as<int64_t>(),
                              edge_ids, tree_size,       time};
    pick_body.weighted_lanes = lanes > 0;
    // A bounded fanout: each target writes its few rows, and an edge finds its target there
    // instead of searching the offsets (a hub's whole row, fanout -1, stays spread over edges).
    pick_body.writes_rows = rule.fanout > 0 && rule.fanout <= PickBody<Index>::kLocalPicks;
    executor_.for_each_counted(frontier.count, pick_body);
    if (lanes > 0)
      draw_weighted_in_lanes(graph, frontier, rule, lanes, edge_base, edge_ids, tree_size);
    FillBody<Index> fill_body{graph,    frontier.rows(), frontier.count.bound,
                              offsets,  bases,           edge_base,
                              rows,     edge_ids,        neighbors_.template as<int64_t>(),
                              tree_size};
    fill_body.rows_written = pick_body.writes_rows;
    executor_.for_each_counted({total(frontier), nullptr, added}, fill_body);
  }

  // Lanes per target for weighted rows without replacement (WeightedLanesBody): 32, fewer when
  // the candidate arrays would pass kLaneBytes; 0 when the hop draws no such rows or the
  // fanout is past what a lane keeps in its own memory (then one item draws each row).
  template <typename Index>
  static int64_t weighted_lanes(const GraphRows<Index>& graph, const Frontier& frontier,
                                const PickRule& rule, const TemporalRows& time) {
    constexpr int64_t kLaneBytes = int64_t{1} << 29;
    if (graph.weights == nullptr || time.active() || rule.replace || rule.fanout <= 0 ||
        rule.fanout > PickBody<Index>::kLocalPicks) {
      return 0;
    }
    for (int64_t lanes = 32; lanes >= 4; lanes /= 2) {
      if (frontier.count.bound * lanes * (rule.fanout * 16 + 8) <= kLaneBytes) return lanes;
    }
    return 0;
  }

  template <typename Index>
  void draw_weighted_in_lanes(const GraphRows<Index>& graph, const Frontier& frontier,
                              const PickRule& rule, int64_t lanes, const int64_t* edge_base,
                              int64_t* edge_ids, int64_t tree_size) {
    const int64_t slots = frontier.count.bound * lanes;
    auto* keys = reinterpret_cast<double*>(
        lane_keys_.reserve(static_cast<size_t>(slots * rule.fanout) * sizeof(double)));
    auto* positions = reinterpret_cast<int64_t*>(
        lane_positions_.reserve(static_cast<size_t>(slots * rule.fanout) * sizeof(int64_t)));
    auto* sizes = reinterpret_cast<int64_t*>(
        lane_sizes_.reserve(static_cast<size_t>(slots) * sizeof(int64_t)));
    const int64_t* offsets = offsets_.template as<int64_t>();
    executor_.for_each(slots, WeightedLanesBody<Index>{graph, frontier.rows(), rule, offsets, lanes,
                                                       keys, positions, sizes, tree_size});
    executor_.for_each_counted(
        frontier.count, WeightedMergeBody<Index>{graph, frontier.rows(), rule, offsets, lanes, keys,
                                                 positions, sizes, edge_base, edge_ids, tree_size});
  }

  // Numbers the new nodes among the hop's neighbors (at most `added`; appended to `sources`),
  // fills the columns and writes both lists' new sizes. `total`: the hop's edge count on the
  // device; `exact`: read the new node count back.
  void relabel(NodeList<Executor>& sources, EdgeLists<Executor>& edges, const int64_t* total,
               int64_t added, bool exact) {
    const int64_t base = sources.levels.bound;  // above every local id so far
    const int64_t bound = base + added;         // most nodes the list can hold now
    if (2 * bound > sources.capacity) sources.reset_table(executor_, next_power_of_two(2 * bound));
    const int64_t* neighbors = neighbors_.template as<int64_t>();
    const internal::DeviceCount live{total, nullptr, added};
    executor_.for_each_counted(live, InsertBody{sources.table(), neighbors, base});
    const size_t flag_bytes = static_cast<size_t>(added + 1) * sizeof(int64_t);
    auto* flags = reinterpret_cast<int64_t*>(flags_.reserve(flag_bytes));
    auto* ranks = reinterpret_cast<int64_t*>(ranks_.reserve(flag_bytes));
    executor_.for_each(added + 1, FlagFirstBody{sources.table(), neighbors, total, base, flags});
    executor_.exclusive_scan(flags, ranks, added + 1);
    const int64_t fresh = new_nodes(sources, ranks + added, added, exact);
    sources.nodes.reserve(static_cast<size_t>(base + fresh) * sizeof(int64_t),
                          static_cast<size_t>(base) * sizeof(int64_t));
    executor_.for_each_counted(
        live, AssignBody{sources.table(), neighbors, sources.levels.size_mark(), flags, ranks,
                         sources.nodes.template as<int64_t>()});
    executor_.for_each_counted(live,
                               ColumnsBody{sources.table(), neighbors, edges.levels.size_mark(),
                                           edges.cols.template as<int64_t>()});
    executor_.for_each(
        1, TallyBody{sources.levels.size_mark(), ranks + added,
                     sources.levels.marks + sources.levels.level, edges.levels.size_mark(), total,
                     edges.levels.marks + edges.levels.level});
    sources.levels.grew(fresh);
    edges.levels.grew(added);
  }

  // A bound of the new nodes (at most one per edge), or their count read back from the device
  // (`exact`, or when the bound reaches the int32 limit of a batch's nodes).
  int64_t new_nodes(const NodeList<Executor>& sources, const int64_t* fresh_total, int64_t added,
                    bool exact) {
    constexpr int64_t kLimit = int64_t{1} << 31;
    if (!exact && sources.levels.bound + added < kLimit) return added;
    const int64_t fresh = executor_.read(fresh_total);
    if (sources.levels.bound + fresh >= kLimit) {
      const int64_t nodes = executor_.read(sources.levels.size_mark()) + fresh;
      if (nodes >= kLimit) throw_batch_too_large(nodes);
    }
    return fresh;
  }

  Executor& executor_;
  internal::Scratch<Executor> neighbors_, counts_, offsets_, flags_, ranks_;
  internal::Scratch<Executor> lane_keys_, lane_positions_, lane_sizes_;  // weighted lanes
};

}  // namespace volley::sampling_internal
