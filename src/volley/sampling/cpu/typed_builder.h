// volley/sampling/cpu/typed_builder.h — the CPU kernel's maps and its disjoint builder
// (internal); the builder floor (TypedHopEdges, TypedSubgraphBuilder) is
// volley/sampling/subgraph_builder.h.
//
// SlotMap maps a node of one type to its local id: one slot per node, reset in O(1) by a
// generation stamp. TypedDisjointBuilder gives each seed a tree of its own: a node reached from
// two seeds gets two local ids and `batch` holds each node's tree. It dedupes one tree at a time
// in a table sized to that tree (a few KiB, in L1) rather than in one map keyed by (tree, node)
// over the whole batch, whose lookups missed the caches: a run of one edge type's edges whose
// targets are in non-decreasing tree order (a frontier is appended that way) adds a *segment* to
// the source type, which records where each tree's new nodes lie; mapping a tree's edges
// re-inserts the tree's earlier nodes of that type (found through the segments) into the table,
// then maps the new neighbors. A homogeneous batch has one segment per hop. The local ids are
// the ones a map keyed by (tree, node) would give: first seen, in edge order.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "volley/core/error.h"
#include "volley/sampling/cpu/neighbor_kernel.h"
#include "volley/sampling/subgraph_builder.h"

namespace volley::cpu {

// The CPU sampler's map of one node type: one slot per node, reset in O(1) by the scratch's
// generation stamp.
struct SlotMap {
  NeighborScratch::Slot* slots;
  uint32_t generation;
  int32_t insert(int64_t id, int32_t local) {
    auto& slot = slots[id];
    if (slot.stamp == generation) return slot.local;
    slot = {generation, local};
    return -1;
  }
  // The local id recorded for `id` in this batch, or -1.
  int32_t find(int64_t id) const {
    const auto& slot = slots[id];
    return slot.stamp == generation ? slot.local : -1;
  }
  void prefetch(int64_t id) const { __builtin_prefetch(slots + id); }
};

// The slot maps of a batch over node types of `num_nodes` nodes: O(1) unless the counts
// changed.
inline std::vector<SlotMap> start_slot_maps(std::span<const int64_t> num_nodes,
                                            NeighborScratch& scratch) {
  auto& slots = scratch.slots;
  bool fits = slots.size() == num_nodes.size();
  for (size_t t = 0; fits && t < num_nodes.size(); ++t) {
    fits = slots[t].size() == static_cast<size_t>(num_nodes[t]);
  }
  if (!fits) {  // new maps zeroed, kept ones cleared: the generation starts again
    slots.resize(num_nodes.size());
    for (size_t t = 0; t < num_nodes.size(); ++t) {
      if (slots[t].size() == static_cast<size_t>(num_nodes[t])) {
        std::fill(slots[t].begin(), slots[t].end(), NeighborScratch::Slot{0, 0});
      } else {
        assign_on_huge_pages(slots[t], static_cast<size_t>(num_nodes[t]), {0, 0});
      }
    }
    scratch.generation = 0;
  }
  if (++scratch.generation == 0) {  // wrapped: clear stale stamps
    for (auto& list : slots) std::fill(list.begin(), list.end(), NeighborScratch::Slot{0, 0});
    scratch.generation = 1;
  }
  std::vector<SlotMap> maps(num_nodes.size());
  for (size_t t = 0; t < num_nodes.size(); ++t) maps[t] = {slots[t].data(), scratch.generation};
  return maps;
}

// Each seed grows its own tree (see above).
class TypedDisjointBuilder : public TypedHopEdges {
 public:
  // `trees`: the number of seeds (trees are numbered 0.. in seed order).
  TypedDisjointBuilder(TypedLists& lists, size_t trees, NeighborScratch& scratch)
      : TypedHopEdges(lists, scratch.neighbors),
        table_(scratch.tree_table),
        segments_(scratch.tree_segments),
        trees_(trees) {
    segments_.resize(lists.nodes.size());
    for (auto& list : segments_) list.clear();
    for (auto* batch : lists.batch) batch->clear();
  }

  // Seed `id` of `type` is the root of tree `tree` (seeds of one type in increasing trees);
  // always added: returns -1.
  int32_t add_seed(int type, int64_t id, int64_t tree) {
    lists_.nodes[static_cast<size_t>(type)]->push_back(id);
    lists_.batch[static_cast<size_t>(type)]->push_back(tree);
    return -1;
  }

  // The seeds of each type are its first segment.
  void start() {
    for (size_t t = 0; t < lists_.nodes.size(); ++t) {
      const auto& batch = *lists_.batch[t];
      if (batch.empty()) continue;
      open_segment(t);
      for (size_t i = 0; i < batch.size(); ++i) fill_to(t, batch[i], i);
      close_segment(t, batch.size());
    }
    start_hops();
  }

  const int64_t* batch(int type) const { return lists_.batch[static_cast<size_t>(type)]->data(); }

  // Maps the current edge type's neighbors (global ids of its source type) to local ids tree by
  // tree (a node new to its tree gets the type's next local id and joins its next frontier).
  void end_edges() {
    const size_t s = src_;
    auto& cols = *lists_.cols[edge_type_];
    auto& nodes = *lists_.nodes[s];
    auto& batch = *lists_.batch[s];
    const size_t count = neighbors_.size();
    const size_t edges_before = cols.size();
    const size_t before = nodes.size();
    resize_with_headroom(cols, edges_before + count);
    resize_with_headroom(nodes, before + count);  // room for every neighbor to be new
    resize_with_headroom(batch, before + count);
    // The targets' trees (the destination's batch list; `batch` itself when src == dst, whose
    // entries below `before` are not written here).
    const int64_t* target_trees = lists_.batch[dst_]->data();
    const int64_t* rows = rows_->data() + edges_before_;
    size_t size = before;
    int64_t last = -1;
    for (size_t begin = 0; begin < count;) {
      const int64_t tree = target_trees[rows[begin]];
      size_t end = begin + 1;
      while (end < count && target_trees[rows[end]] == tree) ++end;
      if (tree < last || last < 0) {  // a new run of non-decreasing trees
        if (last >= 0) close_segment(s, size);
        open_segment(s);
      }
      fill_to(s, tree, size);
      size = map_tree(s, tree, begin, end, edges_before, size);
      last = tree;
      begin = end;
    }
    if (last >= 0) close_segment(s, size);
    nodes.resize(size);
    batch.resize(size);
    close_edges();
  }

 private:
  // The table of one tree: open addressing with linear probing, at most half full.
  struct Table {
    NeighborScratch::TreeSlot* slots;
    size_t mask;
    int shift;  // 64 - log2(slots)
    // Records node -> local and returns -1, or returns the local id already recorded for node.
    int64_t insert(int64_t node, int64_t local) {
      for (size_t i = (static_cast<uint64_t>(node) * 0x9E3779B97F4A7C15ull) >> shift;;
           i = (i + 1) & mask) {
        auto& slot = slots[i];
        if (slot.node < 0) {
          slot = {node, local};
          return -1;
        }
        if (slot.node == node) return slot.local;
      }
    }
  };

  // A cleared table for `keys` distinct nodes at most.
  Table start_table(size_t keys) {
    int bits = 4;
    while ((size_t{1} << bits) < 2 * keys) ++bits;
    const size_t capacity = size_t{1} << bits;
    if (table_.size() < capacity) table_.resize(capacity);
    std::fill_n(table_.begin(), capacity, NeighborScratch::TreeSlot{-1, 0});
    return {table_.data(), capacity - 1, 64 - bits};
  }

  // Segments of type t: rows of trees_ + 1 offsets; tree r's nodes of a segment are the local
  // ids [row[r], row[r + 1]). The last row is open while a run is mapped: filled up to filled_.
  void open_segment(size_t t) {
    segments_[t].resize(segments_[t].size() + trees_ + 1);
    filled_ = 0;
  }
  // Trees up to `tree` start at local id `at` or earlier: offsets (filled_, tree] are `at`.
  void fill_to(size_t t, int64_t tree, size_t at) {
    int64_t* row = segments_[t].data() + segments_[t].size() - (trees_ + 1);
    for (auto r = static_cast<size_t>(tree); filled_ <= r; ++filled_) {
      row[filled_] = static_cast<int64_t>(at);
    }
  }
  void close_segment(size_t t, size_t end) { fill_to(t, static_cast<int64_t>(trees_), end); }

  // Maps the neighbors of this edge type's edges [begin, end) (after `edges_before` earlier
  // edges), all in `tree`, against the tree's earlier nodes of type t (the closed segments); new
  // nodes go from local id `size` on. Returns the next free local id.
  size_t map_tree(size_t t, int64_t tree, size_t begin, size_t end, size_t edges_before,
                  size_t size) {
    const size_t stride = trees_ + 1, closed = segments_[t].size() / stride - 1;
    const int64_t* segment = segments_[t].data();
    const auto r = static_cast<size_t>(tree);
    size_t known = 0;
    for (size_t g = 0; g < closed; ++g) {
      known += static_cast<size_t>(segment[g * stride + r + 1] - segment[g * stride + r]);
    }
    Table table = start_table(known + (end - begin));
    int64_t* nodes = lists_.nodes[t]->data();
    for (size_t g = 0; g < closed; ++g) {
      for (int64_t p = segment[g * stride + r]; p < segment[g * stride + r + 1]; ++p) {
        table.insert(nodes[p], p);
      }
    }
    int64_t* batch = lists_.batch[t]->data();
    int64_t* cols = lists_.cols[edge_type_]->data() + edges_before;
    const int64_t* neighbors = neighbors_.data();
    for (size_t j = begin; j < end; ++j) {
      const auto fresh = static_cast<int64_t>(size);
      const int64_t earlier = table.insert(neighbors[j], fresh);
      if (earlier < 0) nodes[size] = neighbors[j], batch[size++] = tree;
      cols[j] = earlier < 0 ? fresh : earlier;
    }
    return size;
  }

  std::vector<NeighborScratch::TreeSlot>& table_;
  std::vector<std::vector<int64_t>>& segments_;  // per node type
  size_t trees_;
  size_t filled_ = 0;
};

}  // namespace volley::cpu
