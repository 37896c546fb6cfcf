// volley/sampling/cuda/neighbor_kernels.h — the per-item bodies of the GPU neighbor sampler,
// written once for both executors (core/internal/executor.h): nvcc compiles them into CUDA
// kernels (neighbor_sampler.cu), g++ runs them on the host executor (neighbor_sampler_host.cc)
// in the gpu-host tests. Each body reads and writes only the arrays it is given.
//
// One hop, in launch order (neighbor_driver.h drives them):
//   CountBody          target i: how many neighbors it gets (pick.h's pick_count);
//   PickBody           target i: pick.h's pick_positions (the CPU kernel's draws in its order)
//                      at its offset, or where a run of its row starts (all, or temporal last);
//   FillBody           edge j: its target's row, its edge id and neighbor (an item per edge, so
//                      that a hub's row is read by many threads, not one);
//   InsertBody         position j: insert key[j] with value base + j (atomic min), so a key's
//                      entry ends at the position of its first occurrence (or an earlier local id);
//   FlagFirstBody      j is a first occurrence iff its key's entry holds base + j;
//   AssignBody         first occurrences append their node and store the final local id;
//   ColumnsBody        every edge reads its neighbor's local id from the table.
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
// Item j: inserts keys[j] with value base + j (seeds and re-insertion with base 0; a hop's
// neighbors with base = nodes so far).
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

// Item i < count: counts[i] = picks of frontier[i]; item 0 also zeroes counts[count], so the
// exclusive scan's last element is the total.
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

template <typename Index>
struct CountBody {
  static constexpr const char* kName = "sampler count";
  GraphRows<Index> graph;
  const int64_t* frontier;
  int64_t count;
  PickRule rule;
  int64_t* counts;
  int64_t tree_size = 0;
  TemporalRows time = {};
  VOLLEY_HOST_DEVICE void operator()(int64_t i) const {
    if (i == 0) counts[count] = 0;
    const int64_t target = node_of_key(frontier[i], tree_size);
    const int64_t begin = graph.indptr[target];
    const int64_t degree = graph.indptr[target + 1] - begin;
    if (time.active()) {
      counts[i] = temporal_pick_count(
          admissible_of(graph, time, frontier[i], tree_size, begin, degree), rule, time.last);
      return;
    }
    counts[i] =
        pick_count(degree, graph.weights != nullptr ? graph.weights + begin : nullptr, rule);
  }
};

// Target i's picks are [offsets[i], offsets[i + 1]) of the hop's output. A target whose picks
// are a run of its row (every neighbor, or the temporal "last" window) writes the run's first
// position to bases[i] and draws nothing; any other writes bases[i] = -1 and its drawn positions
// into edge_ids at its offset (the same slices of cols, as doubles, and rows are the draws'
// scratch). FillBody then reads the rows edge by edge, so a hub's thousands of neighbors are
// spread over the whole device instead of one thread. (bases: the hop's counts buffer, free
// once scanned into offsets.)
template <typename Index>
struct PickBody {
  static constexpr const char* kName = "sampler pick";
  GraphRows<Index> graph;
  const int64_t* frontier;
  PickRule rule;
  const int64_t* offsets;
  int64_t* bases;
  int64_t* rows;
  int64_t* cols;
  int64_t* edge_ids;
  int64_t tree_size = 0;
  TemporalRows time = {};
  VOLLEY_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t start = offsets[i];
    const int64_t picks = offsets[i + 1] - start;
    bases[i] = 0;
    if (picks == 0) return;
    const int64_t target = node_of_key(frontier[i], tree_size);
    const int64_t begin = graph.indptr[target];
    const int64_t degree = graph.indptr[target + 1] - begin;
    int64_t* positions = edge_ids + start;
    auto* keys = reinterpret_cast<double*>(cols + start);
    if (time.active()) {
      const int64_t admissible = admissible_of(graph, time, frontier[i], tree_size, begin, degree);
      if (time.last) {
        bases[i] = admissible - picks;
      } else if (!takes_all(admissible, rule)) {
        bases[i] = -1;
        pick_positions(target, admissible, nullptr, rule, picks, positions, keys, rows + start);
      }
      return;
    }
    if (takes_all(degree, rule)) return;
    bases[i] = -1;
    pick_positions(target, degree, graph.weights != nullptr ? graph.weights + begin : nullptr, rule,
                   picks, positions, keys, rows + start);
  }
};

// Item j < total, one per picked edge of the hop: finds its target (the last i with offsets[i]
// <= j), its position in the target's row (bases[i] + its rank, or the drawn one in edge_ids[j])
// and writes row (local id of the target), edge id and neighbor (global id, or key when
// disjoint) at j.
template <typename Index>
struct FillBody {
  static constexpr const char* kName = "sampler fill";
  GraphRows<Index> graph;
  const int64_t* frontier;
  int64_t count;        // frontier size; offsets has count + 1 entries
  int64_t first_local;  // local id of frontier[0]
  const int64_t* offsets;
  const int64_t* bases;
  int64_t* rows;
  int64_t* edge_ids;
  int64_t* neighbors;
  int64_t tree_size = 0;
  VOLLEY_HOST_DEVICE void operator()(int64_t j) const {
    int64_t low = 0, high = count;  // offsets[low] <= j < offsets[high]
    while (high - low > 1) {
      const int64_t middle = low + (high - low) / 2;
      if (offsets[middle] <= j) {
        low = middle;
      } else {
        high = middle;
      }
    }
    const int64_t target = node_of_key(frontier[low], tree_size);
    const int64_t tree = frontier[low] - target;  // root * tree_size; 0 unless disjoint
    const int64_t base = bases[low];
    const int64_t k = graph.indptr[target] + (base >= 0 ? base + j - offsets[low] : edge_ids[j]);
    neighbors[j] = tree + static_cast<int64_t>(graph.indices[k]);
    edge_ids[j] = graph.edge_ids != nullptr ? graph.edge_ids[k] : k;
    rows[j] = first_local + low;
  }
};

// Item j < count: flags[j] = 1 iff neighbors[j] is its first occurrence; item 0 also zeroes
// flags[count] (the scan's total).
struct FlagFirstBody {
  static constexpr const char* kName = "sampler flag";
  Table table;
  const int64_t* neighbors;
  int64_t count;
  int64_t base;
  int64_t* flags;
  VOLLEY_HOST_DEVICE void operator()(int64_t j) const {
    if (j == 0) flags[count] = 0;
    const unsigned long long slot =
        table_find(table, static_cast<unsigned long long>(neighbors[j]));
    flags[j] = table.values[slot] == static_cast<unsigned long long>(base + j) ? 1 : 0;
  }
};

// First occurrence j becomes node base + ranks[j]; its table entry takes that local id.
struct AssignBody {
  static constexpr const char* kName = "sampler assign";
  Table table;
  const int64_t* neighbors;
  int64_t base;
  const int64_t* flags;
  const int64_t* ranks;
  int64_t* nodes;
  VOLLEY_HOST_DEVICE void operator()(int64_t j) const {
    if (flags[j] == 0) return;
    const int64_t local = base + ranks[j];
    nodes[local] = neighbors[j];
    table.values[table_find(table, static_cast<unsigned long long>(neighbors[j]))] =
        static_cast<unsigned long long>(local);
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

struct ColumnsBody {
  static constexpr const char* kName = "sampler columns";
  Table table;
  const int64_t* neighbors;
  int64_t* cols;
  VOLLEY_HOST_DEVICE void operator()(int64_t j) const {
    cols[j] = static_cast<int64_t>(
        table.values[table_find(table, static_cast<unsigned long long>(neighbors[j]))]);
  }
};

}  // namespace volley::sampling_internal
