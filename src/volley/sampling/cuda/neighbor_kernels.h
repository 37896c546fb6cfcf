// volley/sampling/cuda/neighbor_kernels.h — the per-item bodies of the GPU neighbor sampler,
// written once for both executors (core/internal/executor.h): nvcc compiles them into CUDA
// kernels (neighbor_sampler.cu), g++ runs them on the host executor (neighbor_sampler_host.cc)
// in the gpu-host tests. Each body reads and writes only the arrays it is given.
//
// One hop, in launch order (hop_steps.h drives them):
//   CountBody          target i: how many neighbors it gets (pick.h's pick_count);
//   PickBody           target i: pick.h's pick_positions (the CPU kernel's draws in its order)
//                      at its offset, or where a run of its row starts (all, or temporal last);
//   FillBody           edge j: its target's row, its edge id and neighbor (an item per edge, so
//                      that a hub's row is read by many threads, not one);
//   InsertBody         position j: insert key[j] with value base + j (atomic min), so a key's
//                      entry ends at the position of its first occurrence (or an earlier local id);
//   FlagFirstBody      j is a first occurrence iff its key's entry holds base + j;
//   AssignBody         first occurrences append their node and store the final local id;
//   ColumnsBody        every edge reads its neighbor's local id from the table;
//   TallyBody          one item: the lists' new sizes.
// Sizes live in device memory (the batch's tally, hop_steps.h): the bodies read a frontier's
// bounds and the lists' sizes there, so the host launches a hop knowing only upper bounds and
// never waits for the device in between. CountBody and FlagFirstBody run over the bound (+ 1)
// and write zeros past the live items, so their scans' last element is the total.
#pragma once

#include <cstdint>

#include "volley/core/host_device.h"
#include "volley/core/internal/atomics.h"
#include "volley/sampling/internal/pick.h"

namespace volley::sampling_internal {

// --- global id → value hash table (open addressing, linear probing) ---------------------------
constexpr unsigned long long kEmptyKey = ~0ull;  // empty key; also the initial (max) value

struct Table {
  unsigned long long* keys;
  unsigned long long* values;
  unsigned long long mask;  // capacity - 1 (capacity a power of two)
};

VOLLEY_HOST_DEVICE inline unsigned long long hash_id(unsigned long long x) {  // murmur3 finaliser
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

// Inserts `key` (if absent) and lowers its value to `value`. Items of one launch race here.
VOLLEY_HOST_DEVICE inline void table_insert_min(Table table, unsigned long long key,
                                                unsigned long long value) {
  unsigned long long slot = hash_id(key) & table.mask;
  while (true) {
    const unsigned long long previous =
        internal::atomic_compare_exchange(&table.keys[slot], kEmptyKey, key);
    if (previous == kEmptyKey || previous == key) {
      internal::atomic_min(&table.values[slot], value);
      return;
    }
    slot = (slot + 1) & table.mask;
  }
}

// The slot of `key`, which must be present (inserted by an earlier launch).
VOLLEY_HOST_DEVICE inline unsigned long long table_find(Table table, unsigned long long key) {
  unsigned long long slot = hash_id(key) & table.mask;
  while (table.keys[slot] != key) slot = (slot + 1) & table.mask;
  return slot;
}

// --- bodies -----------------------------------------------------------------------------------
// A frontier as the bodies see it: nodes[*begin + i] for i < *end - *begin, the sizes read from
// the batch's tally.
struct FrontierRows {
  const int64_t* nodes;  // the node list (global ids, or disjoint keys)
  const int64_t* begin;  // local id of the frontier's first node
  const int64_t* end;    // one past its last
  VOLLEY_HOST_DEVICE int64_t first() const { return *begin; }
  VOLLEY_HOST_DEVICE int64_t size() const { return *end - *begin; }
  VOLLEY_HOST_DEVICE int64_t at(int64_t i) const { return nodes[*begin + i]; }
};

// Item j: inserts keys[j] with value base + j (seeds and re-insertion with base 0; a hop's
// neighbors with base = a bound of the nodes so far, above every local id in the table).
struct InsertBody {
  static constexpr const char* kName = "sampler insert";
  Table table;
  const int64_t* keys;
  int64_t base;
  VOLLEY_HOST_DEVICE void operator()(int64_t j) const {
    table_insert_min(table, static_cast<unsigned long long>(keys[j]),
                     static_cast<unsigned long long>(base + j));
  }
};

// Disjoint sampling: frontier entries are keys root * tree_size + node (tree_size 0: nodes).
VOLLEY_HOST_DEVICE inline int64_t node_of_key(int64_t key, int64_t tree_size) {
  return tree_size > 0 ? key % tree_size : key;
}

// Temporal sampling: the admissible prefix of frontier key `key`'s row [begin, begin + degree).
template <typename Index>
VOLLEY_HOST_DEVICE inline int64_t admissible_of(const GraphRows<Index>& graph,
                                                const TemporalRows& time, int64_t key,
                                                int64_t tree_size, int64_t begin, int64_t degree) {
  return admissible_prefix(time, graph.indices + begin,
                           time.edge_time != nullptr ? time.edge_time + begin : nullptr, degree,
                           time.seed_times[key / tree_size]);
}

// Item i <= the frontier's bound: counts[i] = picks of the frontier's node i, 0 past its size
// (so the exclusive scan's element at the bound is the total).
template <typename Index>
struct CountBody {
  static constexpr const char* kName = "sampler count";
  GraphRows<Index> graph;
  FrontierRows frontier;
  PickRule rule;
  int64_t* counts;
  int64_t tree_size = 0;
  TemporalRows time = {};
  VOLLEY_HOST_DEVICE void operator()(int64_t i) const {
    if (i >= frontier.size()) {
      counts[i] = 0;
      return;
    }
    const int64_t key = frontier.at(i);
    const int64_t target = node_of_key(key, tree_size);
    const int64_t begin = graph.indptr[target];
    const int64_t degree = graph.indptr[target + 1] - begin;
    if (time.active()) {
      counts[i] = temporal_pick_count(admissible_of(graph, time, key, tree_size, begin, degree),
                                      rule, time.last);
      return;
    }
    counts[i] =
        pick_count(degree, graph.weights != nullptr ? graph.weights + begin : nullptr, rule);
  }
};

// Weighted sampling without replacement of a row that draws (k == fanout picks among more
// positive weights; the rule of a weighted graph): its keys can be drawn by many items.
VOLLEY_HOST_DEVICE inline bool draws_in_lanes(int64_t degree, int64_t picks, const PickRule& rule) {
  return !rule.replace && picks == rule.fanout && !takes_all(degree, rule);
}

// Target i's picks are [offsets[i], offsets[i + 1]) of the hop's output, which starts at
// *edge_base of the edge lists. A target whose picks are a run of its row (every neighbor, or
// the temporal "last" window) writes the run's first position to bases[i] and draws nothing; any
// other writes bases[i] = -1 and its drawn positions into edge_ids at its offset (the same
// slices of cols, as doubles, and rows are the draws' scratch). FillBody then reads the rows
// edge by edge, so a hub's thousands of neighbors are spread over the whole device instead of
// one thread. (bases: the hop's counts buffer, free once scanned into offsets.)
template <typename Index>
struct PickBody {
  static constexpr const char* kName = "sampler pick";
  static constexpr int64_t kLocalPicks = 32;  // picks drawn in thread-local scratch
  GraphRows<Index> graph;
  FrontierRows frontier;
  PickRule rule;
  const int64_t* offsets;
  int64_t* bases;
  const int64_t* edge_base;
  int64_t* rows;
  int64_t* cols;
  int64_t* edge_ids;
  int64_t tree_size = 0;
  TemporalRows time = {};
  bool weighted_lanes = false;  // WeightedLanesBody draws the rows draws_in_lanes() names
  bool writes_rows = false;     // each pick's row (the target's local id), for FillBody
  VOLLEY_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t start = *edge_base + offsets[i];
    const int64_t picks = offsets[i + 1] - offsets[i];
    bases[i] = 0;
    if (picks == 0) return;
    if (writes_rows) {
      const int64_t local = frontier.first() + i;
      for (int64_t p = 0; p < picks; ++p) rows[start + p] = local;
    }
    const int64_t key = frontier.at(i);
    const int64_t target = node_of_key(key, tree_size);
    const int64_t begin = graph.indptr[target];
    const int64_t degree = graph.indptr[target + 1] - begin;
    if (time.active()) {
      const int64_t admissible = admissible_of(graph, time, key, tree_size, begin, degree);
      if (time.last) {
        bases[i] = admissible - picks;
      } else if (!takes_all(admissible, rule)) {
        bases[i] = -1;
        draw(target, admissible, nullptr, picks, start);
      }
      return;
    }
    if (takes_all(degree, rule)) return;
    bases[i] = -1;
    if (weighted_lanes && draws_in_lanes(degree, picks, rule)) return;
    draw(target, degree, graph.weights != nullptr ? graph.weights + begin : nullptr, picks, start);
  }

  // pick_positions into edge_ids at `start`. Up to kLocalPicks picks draw in the thread's own
  // memory (Floyd's sorted inserts and the heaps move entries back and forth: a round trip to
  // L2 each in the output arrays); more use the output slices as scratch.
  VOLLEY_HOST_DEVICE void draw(int64_t target, int64_t degree, const float* row_weights,
                               int64_t picks, int64_t start) const {
    int64_t* positions = edge_ids + start;
    if (picks > kLocalPicks) {
      pick_positions(target, degree, row_weights, rule, picks, positions,
                     reinterpret_cast<double*>(cols + start), rows + start);
      return;
    }
    int64_t local_positions[kLocalPicks], local_order[kLocalPicks];
    double local_keys[kLocalPicks];
    pick_positions(target, degree, row_weights, rule, picks, local_positions, local_keys,
                   local_order);
    for (int64_t p = 0; p < picks; ++p) positions[p] = local_positions[p];
  }
};

// Weighted rows without replacement (draws_in_lanes) drawn by `lanes` items per target, so a
// hub's thousands of keys are not one thread's work: lane l of target i offers the positions of
// pairs l, l + lanes, ... (positions 2·pair and 2·pair + 1, one Philox block, uniform_pair) to a
// BestKeys of its own at slot i · lanes + l of the candidate arrays (k entries a slot), and
// WeightedMergeBody offers target i's slots again: the row's k best, which pick_weighted_keys
// finds in one pass over the row.
template <typename Index>
struct WeightedLanesBody {
  static constexpr const char* kName = "sampler weighted lanes";
  GraphRows<Index> graph;
  FrontierRows frontier;
  PickRule rule;
  const int64_t* offsets;
  int64_t lanes;
  double* keys;        // [bound · lanes · k]
  int64_t* positions;  // [bound · lanes · k]
  int64_t* sizes;      // [bound · lanes]
  int64_t tree_size = 0;
  VOLLEY_HOST_DEVICE void operator()(int64_t item) const {
    const int64_t i = item / lanes;
    if (i >= frontier.size()) return;
    const int64_t target = node_of_key(frontier.at(i), tree_size);
    const int64_t begin = graph.indptr[target];
    const int64_t degree = graph.indptr[target + 1] - begin;
    if (!draws_in_lanes(degree, offsets[i + 1] - offsets[i], rule)) return;
    const int64_t k = rule.fanout;
    BestKeys best{keys + item * k, positions + item * k, k};
    const float* row_weights = graph.weights + begin;
    for (int64_t pair = item % lanes; 2 * pair < degree; pair += lanes) {
      double u[2];
      uniform_pair(rule, target, pair, u);
      for (int64_t p = 2 * pair; p < 2 * pair + 2 && p < degree; ++p) {
        if (row_weights[p] > 0.0f) {
          best.offer(weighted_key(1.0 - u[p - 2 * pair], row_weights[p]), p);
        }
      }
    }
    sizes[item] = best.size;
  }
};

// Target i < the frontier's size drawn in lanes: its k best over its lanes' bests, sorted by
// position, into edge_ids at its output offset (what PickBody writes for other rows).
template <typename Index>
struct WeightedMergeBody {
  static constexpr const char* kName = "sampler weighted merge";
  static constexpr int64_t kMaxPicks = PickBody<Index>::kLocalPicks;
  GraphRows<Index> graph;
  FrontierRows frontier;
  PickRule rule;
  const int64_t* offsets;
  int64_t lanes;
  const double* keys;
  const int64_t* positions;
  const int64_t* sizes;
  const int64_t* edge_base;
  int64_t* edge_ids;
  int64_t tree_size = 0;
  VOLLEY_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t target = node_of_key(frontier.at(i), tree_size);
    const int64_t degree = graph.indptr[target + 1] - graph.indptr[target];
    if (!draws_in_lanes(degree, offsets[i + 1] - offsets[i], rule)) return;
    const int64_t k = rule.fanout;
    double best_keys[kMaxPicks];
    int64_t best_positions[kMaxPicks];
    BestKeys best{best_keys, best_positions, k};
    for (int64_t slot = i * lanes; slot < (i + 1) * lanes; ++slot) {
      for (int64_t r = 0; r < sizes[slot]; ++r)
        best.offer(keys[slot * k + r], positions[slot * k + r]);
    }
    best.sort_positions();
    int64_t* out = edge_ids + *edge_base + offsets[i];
    for (int64_t r = 0; r < k; ++r) out[r] = best_positions[r];
  }
};

// Item j < the hop's edge count, one per picked edge: finds its target (from the row PickBody
// wrote, or as the last i with offsets[i] <= j; offsets has bound + 1 entries, constant past the
// frontier's size), its position in the target's row (bases[i] + its rank, or the drawn one in
// edge_ids) and writes row (local id of the target), edge id and neighbor (global id, or key
// when disjoint), the edges at *edge_base + j, the neighbor at j.
template <typename Index>
struct FillBody {
  static constexpr const char* kName = "sampler fill";
  GraphRows<Index> graph;
  FrontierRows frontier;
  int64_t bound;  // offsets has bound + 1 entries
  const int64_t* offsets;
  const int64_t* bases;
  const int64_t* edge_base;
  int64_t* rows;
  int64_t* edge_ids;
  int64_t* neighbors;
  int64_t tree_size = 0;
  bool rows_written = false;  // PickBody wrote each edge's row: its target is rows[out] - first
  VOLLEY_HOST_DEVICE void operator()(int64_t j) const {
    const int64_t out = *edge_base + j;
    const int64_t first = frontier.first();
    int64_t low = 0;
    if (rows_written) {
      low = rows[out] - first;
    } else {
      int64_t high = bound;  // offsets[low] <= j < offsets[high]
      while (high - low > 1) {
        const int64_t middle = low + (high - low) / 2;
        if (offsets[middle] <= j) {
          low = middle;
        } else {
          high = middle;
        }
      }
      rows[out] = first + low;
    }
    const int64_t key = frontier.at(low);
    const int64_t target = node_of_key(key, tree_size);
    const int64_t tree = key - target;  // root * tree_size; 0 unless disjoint
    const int64_t base = bases[low];
    const int64_t k = graph.indptr[target] + (base >= 0 ? base + j - offsets[low] : edge_ids[out]);
    neighbors[j] = tree + static_cast<int64_t>(graph.indices[k]);
    edge_ids[out] = graph.edge_ids != nullptr ? graph.edge_ids[k] : k;
  }
};

// Item j <= the hop's edge bound: flags[j] = 1 iff neighbors[j] is its first occurrence, 0 past
// the *count live neighbors (the scan's element at the bound is the count of new nodes).
struct FlagFirstBody {
  static constexpr const char* kName = "sampler flag";
  Table table;
  const int64_t* neighbors;
  const int64_t* count;
  int64_t base;
  int64_t* flags;
  VOLLEY_HOST_DEVICE void operator()(int64_t j) const {
    if (j >= *count) {
      flags[j] = 0;
      return;
    }
    const unsigned long long slot =
        table_find(table, static_cast<unsigned long long>(neighbors[j]));
    flags[j] = table.values[slot] == static_cast<unsigned long long>(base + j) ? 1 : 0;
  }
};

// First occurrence j becomes node *node_base + ranks[j]; its table entry takes that local id.
struct AssignBody {
  static constexpr const char* kName = "sampler assign";
  Table table;
  const int64_t* neighbors;
  const int64_t* node_base;
  const int64_t* flags;
  const int64_t* ranks;
  int64_t* nodes;
  VOLLEY_HOST_DEVICE void operator()(int64_t j) const {
    if (flags[j] == 0) return;
    const int64_t local = *node_base + ranks[j];
    nodes[local] = neighbors[j];
    table.values[table_find(table, static_cast<unsigned long long>(neighbors[j]))] =
        static_cast<unsigned long long>(local);
  }
};

// Edge j's column: its neighbor's local id, at *edge_base + j.
struct ColumnsBody {
  static constexpr const char* kName = "sampler columns";
  Table table;
  const int64_t* neighbors;
  const int64_t* edge_base;
  int64_t* cols;
  VOLLEY_HOST_DEVICE void operator()(int64_t j) const {
    cols[*edge_base + j] = static_cast<int64_t>(
        table.values[table_find(table, static_cast<unsigned long long>(neighbors[j]))]);
  }
};

// One item, after an expansion: the node list's size *nodes_to = *nodes_from + *fresh and the
// edge lists' *edges_to = *edges_from + *added (`from` may be `to`: a list grown twice in a hop).
struct TallyBody {
  static constexpr const char* kName = "sampler tally";
  const int64_t* nodes_from;
  const int64_t* fresh;
  int64_t* nodes_to;
  const int64_t* edges_from;
  const int64_t* added;
  int64_t* edges_to;
  VOLLEY_HOST_DEVICE void operator()(int64_t) const {
    *nodes_to = *nodes_from + *fresh;
    *edges_to = *edges_from + *added;
  }
};

// Disjoint sampling, at the end of a batch: key j → node and tree (batch).
struct SplitKeysBody {
  static constexpr const char* kName = "sampler split keys";
  int64_t tree_size;
  int64_t* nodes;
  int64_t* batch;
  VOLLEY_HOST_DEVICE void operator()(int64_t j) const {
    batch[j] = nodes[j] / tree_size;
    nodes[j] -= batch[j] * tree_size;
  }
};

}  // namespace volley::sampling_internal
