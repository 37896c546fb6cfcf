// volley/sampling/cpu/neighbor_kernel.h — the CPU neighbor-sampling kernel (internal).
//
// Callers use volley/sampling/neighbor_sampler.h; this header exists so the kernel's scratch
// type is in one place. The random-stream layout and the pick rules' host/device twin are in
// internal/pick.h (shared with the CUDA kernel).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "volley/core/error.h"
#include "volley/core/host_pool.h"
#include "volley/core/philox.h"
#include "volley/sampling/cpu/time_filter.h"
#include "volley/sampling/internal/pick.h"
#include "volley/sampling/neighbor_sampler.h"
#include "volley/sampling/subgraph_builder.h"

namespace volley::cpu {

// The Philox counter of each target's random stream, shared with the CUDA kernel.
using sampling_internal::neighbor_stream_counter;

// `list` replaced by `size` copies of `value` in fresh memory advised to be backed by
// transparent huge pages before it is first touched: the maps below are read at random over
// tens of MiB, where 4 KiB pages make nearly every lookup a page walk.
template <typename T>
void assign_on_huge_pages(std::vector<T>& list, size_t size, const T& value) {
  std::vector<T>().swap(list);
  list.reserve(size);
  advise_huge_pages(list.data(), size * sizeof(T));
  list.assign(size, value);
}

// Per-thread working memory of the kernel: the global -> local id maps of each node type (a slot
// per graph node, reset in O(1) by a generation stamp) and the working lists of a batch.
struct NeighborScratch {
  struct Slot {
    uint32_t stamp;
    int32_t local;
  };
  std::vector<std::vector<Slot>> slots;  // per node type
  uint32_t generation = 0;
  std::vector<int64_t> picked;
  std::vector<int64_t> neighbors;  // global ids of one hop's sampled neighbors
  std::vector<uint64_t> bitmap;
  std::vector<double> keys;
  std::vector<int64_t> admissible;   // temporal sampling of an unsorted row: admissible positions
  std::vector<PrefixQuery> queries;  // temporal sampling of sorted rows: a chunk's searches
  std::vector<int64_t> prefixes;     // and their answers
  // Disjoint sampling (TypedDisjointBuilder): one tree's table (node -> local id; node -1:
  // empty) and, per node type, where each tree's nodes lie.
  struct TreeSlot {
    int64_t node, local;
  };
  std::vector<TreeSlot> tree_table;
  std::vector<std::vector<int64_t>> tree_segments;
  std::vector<int64_t> seed_times;  // a typed temporal batch's time of each tree
  TypedLists lists;                 // a homogeneous batch's lists
  // The last homogeneous batch's edges and nodes: the next batch's fresh lists are reserved
  // for as many (grown from nothing, each list was copied several times a batch).
  size_t last_edges = 0, last_nodes = 0;
};

// One edge type of a typed batch: rows of `csr` are nodes of type `dst`, its indices nodes of
// type `src`.
struct TypedEdges {
  const Csr* csr = nullptr;
  int src = 0, dst = 0;
  uint64_t stream_seed = 0;          // the Philox key of its picks (the options' seed, homogeneous)
  const int64_t* fanouts = nullptr;  // one per hop
  bool weighted = false;             // picks by csr's weights
  TimeFilter filter;                 // active: temporal picks (the seed_times are per tree)
};

// The filter of `graph`'s edge times (by_edge) or node times, its trees' times `seed_times`
// (strategy uniform).
TimeFilter graph_time_filter(const Csr& graph, bool by_edge, const int64_t* seed_times);

// A scratch from the process-wide stock for a call that brought none (see SamplerScratch in
// neighbor_sampler.h for the bound); it goes back when the pointer is dropped.
std::shared_ptr<NeighborScratch> borrow_scratch();

// `seed_times`: one per seed when options.time_source is set (checked by the caller), else empty.
void sample_neighbors_cpu(const Csr& graph, std::span<const int64_t> seeds,
                          std::span<const int64_t> seed_times,
                          const NeighborSamplerOptions& options, uint64_t batch_index,
                          NeighborScratch& scratch, HostSubgraph& out);

// The typed kernel: `seeds` (ids checked by the caller, trees numbered in order across groups)
// expanded over `edges` for `hops` hops into `out`; disjoint: a tree per seed. ValueError for a
// repeated seed (not disjoint), naming the type when it has a name.
void sample_typed_cpu(std::span<const TypedEdges> edges, std::span<const int64_t> num_nodes,
                      std::span<const TypedSeeds> seeds, size_t hops, bool disjoint,
                      const NeighborSamplerOptions& options, uint64_t batch_index,
                      NeighborScratch& scratch, TypedLists& out);

// One hop for targets held by rows [first_node, first_node + graph.num_nodes()) of `graph`
// (row r is node first_node + r; neighbor ids are global): see sample_hop in neighbor_sampler.h.
// `times` (checked by the caller) make it a temporal hop; default-constructed: untimed.
void sample_hop_cpu(const Csr& graph, int64_t first_node, std::span<const int64_t> targets, int hop,
                    int64_t fanout, const NeighborSamplerOptions& options, uint64_t batch_index,
                    const HopTimes& times, NeighborScratch& scratch, HopSample& out);

}  // namespace volley::cpu
