// volley/sampling/cpu/disjoint_map.h — disjoint sampling's keys and map for the CPU kernel
// (internal). A node reached in the tree of seed position `root` has the key
// root * tree_size + node (tree_size: the graph's node count), so the same node in two trees gets
// two local ids; TreeKeys splits a key back without a division, FlatMap maps keys to local ids
// for SubgraphBuilder (its Map contract: insert / prefetch).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "volley/sampling/cpu/neighbor_kernel.h"

namespace volley::cpu {

// Disjoint sampling's keys root * tree_size + node split without a division per key (they are
// split several times per expanded node): a multiply-high by floor((2^64 - 1) / tree_size)
// gives the root or one less, and one correction makes it exact. tree_size 0: keys are nodes.
class TreeKeys {
 public:
  struct Split {
    int64_t root, node;
  };
  explicit TreeKeys(int64_t tree_size)
      : size_(static_cast<uint64_t>(tree_size)),
        reciprocal_(tree_size > 0 ? ~uint64_t{0} / static_cast<uint64_t>(tree_size) : 0) {}
  Split split(int64_t key) const {
    if (size_ == 0) return {0, key};
    const auto k = static_cast<uint64_t>(key);
    uint64_t root = static_cast<uint64_t>((static_cast<unsigned __int128>(k) * reciprocal_) >> 64);
    uint64_t node = k - root * size_;
    if (node >= size_) ++root, node -= size_;
    return {static_cast<int64_t>(root), static_cast<int64_t>(node)};
  }

 private:
  uint64_t size_;
  uint64_t reciprocal_;
};

// Disjoint sampling's map: keys are tree-qualified ids (root * num_nodes + node), so the same
// node reached from two seeds gets two local ids. Open addressing with linear probing over the
// scratch's table (reused across batches, reset in O(1) by a generation stamp), kept at most
// half full: one cache line per lookup, like the slot map of non-disjoint sampling.
struct FlatMap {
  std::vector<NeighborScratch::FlatSlot>* table;
  uint32_t generation;
  int shift;  // 64 - log2(table size)
  size_t size = 0;

  size_t home(int64_t key) const {
    return static_cast<size_t>((static_cast<uint64_t>(key) * 0x9E3779B97F4A7C15ull) >> shift);
  }
  int32_t insert(int64_t key, int32_t local) {
    if (2 * (size + 1) > table->size()) grow();
    const size_t mask = table->size() - 1;
    for (size_t i = home(key);; i = (i + 1) & mask) {
      auto& slot = (*table)[i];
      if (slot.stamp != generation) {
        slot = {key, local, generation};
        ++size;
        return -1;
      }
      if (slot.key == key) return slot.local;
    }
  }
  void prefetch(int64_t key) const { __builtin_prefetch(table->data() + home(key)); }
  void grow() {
    std::vector<NeighborScratch::FlatSlot> old = std::move(*table);
    assign_on_huge_pages(*table, old.size() * 2, {0, 0, 0});
    --shift;
    const size_t mask = table->size() - 1;
    for (const auto& slot : old) {
      if (slot.stamp != generation) continue;
      size_t i = home(slot.key);
      while ((*table)[i].stamp == generation) i = (i + 1) & mask;
      (*table)[i] = slot;
    }
  }
};

// The number of nodes a tree holds at most with these fanouts (fanout -1 counted as 32), capped.
inline size_t expected_tree_size(const std::vector<int64_t>& fanouts) {
  constexpr size_t kCap = 4096;
  size_t total = 1, level = 1;
  for (const int64_t fanout : fanouts) {
    level = std::min(kCap, level * static_cast<size_t>(fanout < 0 ? 32 : fanout));
    total = std::min(kCap, total + level);
  }
  return total;
}

// A map for `roots` trees: a table of twice the keys they may hold (expected_tree_size), up to
// kMaxStart slots (past it the table grows as keys come, each doubling a rehash); a larger
// table from earlier batches is kept.
inline FlatMap start_flat_map(const std::vector<int64_t>& fanouts, size_t roots,
                              NeighborScratch& scratch) {
  constexpr size_t kMaxStart = size_t{1} << 22;
  const size_t wanted = std::min(kMaxStart, 2 * roots * expected_tree_size(fanouts));
  size_t capacity = 1024;
  while (capacity < wanted) capacity *= 2;
  auto& table = scratch.flat;
  if (table.size() < capacity) {
    assign_on_huge_pages(table, capacity, {0, 0, 0});
    scratch.flat_generation = 0;
  }
  if (++scratch.flat_generation == 0) {  // wrapped: clear stale stamps
    std::fill(table.begin(), table.end(), NeighborScratch::FlatSlot{0, 0, 0});
    scratch.flat_generation = 1;
  }
  int bits = 0;  // log2 of the table size
  while ((size_t{1} << bits) < table.size()) ++bits;
  return {&table, scratch.flat_generation, 64 - bits};
}

}  // namespace volley::cpu
