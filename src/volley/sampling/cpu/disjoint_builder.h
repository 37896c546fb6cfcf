// volley/sampling/cpu/disjoint_builder.h — disjoint sampling's subgraph builder for the CPU kernel
// (internal). Each seed grows its own tree: a node reached from two seeds gets two local ids, and
// out.batch holds each node's tree (its seed's position). The builder has SubgraphBuilder's
// interface (HopEdges: frontier, add_edge, finish; and end_hop) and output, with plain node ids
// in out.nodes.
//
// Why not SubgraphBuilder over a map keyed by (tree, node): such a map holds every node of the
// batch (a million for 1,024 seeds and fanouts 15,10,5), so each of a hop's neighbors missed the
// caches on a random slot of a table of tens of MiB. A neighbor is only ever compared with nodes
// of its own tree, and a hop's edges come tree by tree (each hop's new nodes are appended in the
// order of their targets, seeds first), so end_hop dedupes one tree at a time in a table sized to
// that tree (a few KiB, in L1): it re-inserts the tree's earlier nodes, found through the
// per-level offsets the builder keeps, then maps the tree's new neighbors. The local ids are the
// ones the (tree, node) map gave: first seen, in edge order.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <span>
#include <vector>

#include "volley/core/error.h"
#include "volley/sampling/cpu/neighbor_kernel.h"
#include "volley/sampling/subgraph_builder.h"

namespace volley::cpu {

class DisjointBuilder : public HopEdges {
 public:
  // Seed i is tree i's root (local id i, out.batch[i] == i). IndexError for a seed out of
  // [0, num_nodes); repeated seeds are separate trees.
  DisjointBuilder(std::span<const int64_t> seeds, int64_t num_nodes, NeighborScratch& scratch,
                  HostSubgraph& out)
      : HopEdges(scratch.neighbors, out),
        table_(scratch.tree_table),
        levels_(scratch.tree_levels),
        trees_(seeds.size()) {
    for (size_t i = 0; i < seeds.size(); ++i) check_seed(seeds[i], i, num_nodes);
    out.nodes.assign(seeds.begin(), seeds.end());
    out.batch.resize(seeds.size());
    std::iota(out.batch.begin(), out.batch.end(), int64_t{0});
    levels_.resize(trees_ + 1);  // level 0: tree r's seed is local id r
    std::iota(levels_.begin(), levels_.end(), int64_t{0});
    start();
  }

  // Ends the hop: maps its neighbors to local ids tree by tree (a node new to its tree gets the
  // next local id and joins the next frontier), records the hop's counters and the new level.
  void end_hop() {
    const size_t count = neighbors_.size();
    const size_t edges_before = out_.cols.size();
    const size_t before = out_.nodes.size();
    resize_with_headroom(out_.cols, edges_before + count);
    resize_with_headroom(out_.nodes, before + count);  // room for every neighbor to be new
    resize_with_headroom(out_.batch, before + count);
    const size_t level = levels_.size() / (trees_ + 1) - 1;  // the frontier's level
    levels_.resize(levels_.size() + trees_ + 1);
    const int64_t* frontier = levels_.data() + level * (trees_ + 1);
    int64_t* next = levels_.data() + (level + 1) * (trees_ + 1);
    const int64_t* rows = out_.rows.data() + edges_before;
    size_t size = before, begin = 0;
    for (size_t tree = 0; tree < trees_; ++tree) {
      next[tree] = static_cast<int64_t>(size);
      size_t end = begin;  // the tree's edges: their targets are its frontier nodes
      while (end < count && rows[end] < frontier[tree + 1]) ++end;
      if (end > begin) size = map_tree(tree, level, begin, end, edges_before, size);
      begin = end;
    }
    next[trees_] = static_cast<int64_t>(size);
    out_.nodes.resize(size);
    out_.batch.resize(size);
    close_hop(count);
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

  // Maps the neighbors of edges [begin, end) of this hop (after `edges_before` earlier edges), all
  // in `tree`, against the tree's nodes of levels 0..level; new nodes go from local id `size` on.
  // Returns the next free local id.
  size_t map_tree(size_t tree, size_t level, size_t begin, size_t end, size_t edges_before,
                  size_t size) {
    const size_t stride = trees_ + 1;
    size_t known = 0;
    for (size_t l = 0; l <= level; ++l) {
      known += static_cast<size_t>(levels_[l * stride + tree + 1] - levels_[l * stride + tree]);
    }
    Table table = start_table(known + (end - begin));
    int64_t* nodes = out_.nodes.data();
    for (size_t l = 0; l <= level; ++l) {
      for (int64_t p = levels_[l * stride + tree]; p < levels_[l * stride + tree + 1]; ++p) {
        table.insert(nodes[p], p);
      }
    }
    int64_t* batch = out_.batch.data();
    int64_t* cols = out_.cols.data() + edges_before;
    const int64_t* neighbors = neighbors_.data();
    for (size_t j = begin; j < end; ++j) {
      const int64_t fresh = static_cast<int64_t>(size);
      const int64_t earlier = table.insert(neighbors[j], fresh);
      if (earlier < 0) nodes[size] = neighbors[j], batch[size++] = static_cast<int64_t>(tree);
      cols[j] = earlier < 0 ? fresh : earlier;
    }
    return size;
  }

  std::vector<NeighborScratch::TreeSlot>& table_;
  // (levels + 1) rows of trees + 1 offsets: tree r's nodes of level l are the local ids
  // [levels_[l * (trees + 1) + r], levels_[l * (trees + 1) + r + 1]).
  std::vector<int64_t>& levels_;
  size_t trees_;
};

}  // namespace volley::cpu
