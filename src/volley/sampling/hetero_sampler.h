// volley/sampling/hetero_sampler.h — multi-hop neighbor sampling over a HeteroGraph (PyG's
// heterogeneous NeighborLoader semantics), seedable, on the CPU.
//
//   HeteroSamplerOptions options{.fanouts = {15, 10}, .seed = 42};   // every edge type
//   options.fanouts_by_type = {{{"author", "writes", "paper"}, {5, 5}}, ...};  // or per type
//   HeteroNeighborSampler sampler(graph, options);
//   HeteroSampledSubgraph batch = sampler.sample({{"paper", seed_ids}}, /*batch_index=*/0);
//   batch.nodes[graph.node_type_index("author")]  // global author ids in the batch
//
// Semantics (the homogeneous sampler's, neighbor_sampler.h, per type):
//   * Fanouts: `fanouts` (one list for every edge type) or `fanouts_by_type` (a list per edge
//     type; when it is non-empty `fanouts` is the default for the edge types it misses, and
//     with `fanouts` empty a missing edge type is a ValueError, as in PyG). Every list has the
//     same length, the number of hops (0..255); -1 takes all neighbors, 0 none. No hops (no
//     fanouts at all, or empty lists; PyG's num_neighbors=[]) gives the seeds alone.
//   * Hop h expands, for each edge type (graph order) with fanout k = its list[h], every node
//     of the edge type's destination type first reached at hop h - 1 (hop 0: the seeds), in
//     node-list order; its picks (the pick rules of neighbor_sampler.h over that edge type's
//     Csr row, in pick order) are source-type nodes. Each node is expanded once per edge type
//     into its type, at the hop that first reached it. A newly reached node is appended to its
//     type's node list at once; nodes reached during hop h are expanded at hop h + 1 only.
//   * `weighted`: edge types with weights sample ∝ weight (neighbor_sampler.h's rules), the
//     others uniformly.
//   * Random streams: Philox keyed by a per-edge-type seed (options.seed mixed with a hash of
//     the edge type's name), counter (node, hop, batch) as in the homogeneous sampler; so the
//     result is a pure function of (graph, seeds, options, batch index), bit-identical for any
//     thread count (one batch runs on the calling thread).
//   * Output, per node type t (graph order): nodes[t] (global ids of type t; its seeds first in
//     input order), num_seeds[t], nodes_per_hop[t] (size hops + 1). Per edge type e: rows[e]
//     (local index, in the destination type's list, of each edge's target), cols[e] (local
//     index in the source type's list of its neighbor), edge_ids[e] (the Csr's edge id),
//     edges_per_hop[e] (size hops). PyG's edge_index of type e is [cols[e]; rows[e]].
//
// Disjoint sampling (options.disjoint, PyG's `disjoint`): every seed grows a tree of its own. A
// node's identity in the batch is (tree, type, id): a node reached from two seeds appears twice,
// once per tree, and seeds may repeat. Trees are numbered by the seed's position among all
// seeds (the groups in the order given, each in input order); batch[t][i] is the tree of
// nodes[t][i]. The picks of a target are those of the same target in a non-disjoint batch (the
// random stream is keyed by the global id, not the tree). Otherwise as above.
//
// Temporal sampling (options.time_source set; PyG's time_attr / input_time / temporal_strategy):
//   * every seed has a time (HeteroSeeds::times; by node time a seed group without times takes
//     its seeds' own node times, as pyg-lib does), and the time travels down its tree;
//   * the timestamps are a HeteroTimes: kNode gives a time per node of some node types, kEdge a
//     time per edge of some edge types. An entry of edge type e (a neighbor u of target v) is
//     admissible when its time — u's node time (kNode, u of e's source type) or the edge's time
//     (kEdge) — is <= the time of v's tree. Entries of a type without times are always
//     admissible (as in pyg-lib, which samples those types without a time constraint).
//     Seeds are not checked;
//   * sampling is disjoint whatever options.disjoint says (as in PyG);
//   * the pick rules apply to a target's admissible entries as if they were its whole row
//     (uniform, with or without replacement), except with TemporalStrategy::kLast: the
//     min(k, admissible) most recent ones (k == -1: all), no draws;
//   * a timed edge type's rows are stably sorted by time at construction (sort_rows_by_time,
//     kept when already sorted), as PyG sorts its CSC: the admissible entries of a row are a
//     prefix found by binary search, and -1 / "all admissible" lists them in time order;
//   * not with `weighted` (ValueError).
//
// Errors (ValueError unless stated; messages name the type): a fanout < -1, lists of different
// lengths, more than 255 hops, fanouts for an edge type the graph does not have (the known ones
// listed), a missing edge type without default; seeds of an unknown
// node type, a seed type given twice, a duplicate seed (naming both positions); IndexError for
// a seed outside its type's range. Temporal: times without time_source or of the other kind, a
// time array of a type the graph lacks, not 1-d int64 host memory or of the wrong length (naming
// the type, the expected and the given shape), a type given twice, kNode without any node type
// timed, a seed group whose times are missing (kEdge, or kNode on an untimed type) or of the
// wrong length; IndexError for an edge id beyond its edge type's times. An empty seed set gives
// an empty batch.
// On a GPU (HeteroNeighborSampler over a CudaHeteroGraph, cuda_graph.h): the same batches,
// element for element, for the same (seeds, options, batch index) — each (hop, edge type) is one
// expansion by the homogeneous GPU sampler's kernels (cuda/hetero_driver.h) — returned in host
// memory; disjoint and temporal sampling too. Temporal sampling reads the times the CPU sampler
// reads: place the timed graph, CudaHeteroGraph::place(attach_hetero_times(graph, options,
// times)), and give the sampler the same `times` (seeds without times take their node times
// from it). Disjoint sampling numbers a node of tree r as r * S + id on the device, S the largest
// node type's count: a batch whose trees × S passes int64 is refused (ValueError naming S and
// the trees). The other errors as above.
// Thread safety: a HeteroNeighborSampler may be shared by threads (a call that finds its
// scratch busy uses a fresh one); sample_hetero_neighbors is reentrant.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "volley/graph/hetero_graph.h"
#include "volley/sampling/cuda_graph.h"
#include "volley/sampling/neighbor_sampler.h"

namespace volley {

// The sampler's options are the homogeneous sampler's (neighbor_sampler.h), one struct for both
// kinds: `fanouts` those of every edge type (or the default of fanouts_by_type), disjoint trees
// (see above; forced on by temporal sampling), temporal sampling (see above). subgraph_type must
// stay kDirectional (ValueError): the typed sampler returns the sampled edges.
using HeteroSamplerOptions = NeighborSamplerOptions;

// The timestamps of temporal sampling. Arrays are 1-d int64 in host memory, shared (no copy).
struct HeteroTimes {
  // TimeSource::kNode: per timed node type, one time per node of that type.
  std::vector<std::pair<std::string, Array>> node_time;
  // TimeSource::kEdge: per timed edge type, one time per edge, indexed by edge id (the COO order
  // of PyG's data[edge_type].time, which the Csr's edge ids record). An edge type without an
  // entry here uses its Csr's edge_time (CSR order) when it has one.
  std::vector<std::pair<EdgeType, Array>> edge_time;
};

struct HeteroSampledSubgraph {
  // Per node type, in graph order.
  std::vector<std::vector<int64_t>> nodes;
  std::vector<int64_t> num_seeds;
  std::vector<std::vector<int64_t>> nodes_per_hop;
  // Per edge type, in graph order.
  std::vector<std::vector<int64_t>> rows, cols, edge_ids;
  std::vector<std::vector<int64_t>> edges_per_hop;
  // Disjoint / temporal sampling: per node type, the tree (seed position) of each node; else
  // empty.
  std::vector<std::vector<int64_t>> batch;

  int64_t total_nodes() const;
  int64_t total_edges() const;
};

// Seeds of one node type; `times` (temporal sampling): one per id, or empty (see above).
struct HeteroSeeds {
  std::string node_type;
  std::span<const int64_t> ids;
  std::span<const int64_t> times = {};
};

// The seed of edge type `type`'s random streams (options.seed mixed with a hash of its name):
// expanding target v of that type at hop h of batch b draws what sample_hop (neighbor_sampler.h)
// draws for v with this seed, over the type's Csr. The distributed sampler's servers use it.
uint64_t edge_type_stream_seed(uint64_t seed, const EdgeType& type);

// The fanout list of every edge type (graph order) the options give; ValueError as above.
std::vector<std::vector<int64_t>> resolve_hetero_fanouts(const HeteroGraph& graph,
                                                         const HeteroSamplerOptions& options);
// The same over a list of edge types (a client that holds no graph).
std::vector<std::vector<int64_t>> resolve_hetero_fanouts(const std::vector<EdgeType>& edge_types,
                                                         const HeteroSamplerOptions& options);

// Reusable working memory (a global→local map per node type). Optional.
class HeteroSamplerScratch {
 public:
  HeteroSamplerScratch();
  ~HeteroSamplerScratch();
  HeteroSamplerScratch(HeteroSamplerScratch&&) noexcept;
  HeteroSamplerScratch& operator=(HeteroSamplerScratch&&) noexcept;
  struct State;
  State& state() { return *state_; }

 private:
  std::unique_ptr<State> state_;
};

// The graph a temporal sampler reads: each timed edge type's Csr with the time of every entry
// attached as its edge_time (the source node's time by kNode) and its rows sorted by it; the
// other edge types as they are. `graph` itself when options.time_source is kNone. ValueError /
// IndexError for bad times (see above). O(E) (plus the sort of unsorted rows).
HeteroGraph attach_hetero_times(const HeteroGraph& graph, const HeteroSamplerOptions& options,
                                const HeteroTimes& times);

// The rows a temporal hop over edge type `type` reads: `csr` with the time of each entry (its
// neighbor's node_time, indexed by the neighbor's id, or edge_time indexed by the entry's edge
// id; exactly one non-null, 1-d int64 host arrays) attached as its edge_time, rows stably sorted
// by it (kept when already sorted). attach_hetero_times does this for every timed edge type; the
// distributed servers do it over one part's rows (global neighbor and edge ids) with the whole
// type's times. IndexError naming the type for a neighbor or edge id beyond the times.
Csr attach_entry_times(const Csr& csr, const Array* node_time, const Array* edge_time,
                       const EdgeType& type);

// The sampler as a function (validates the options and attaches the times every call).
HeteroSampledSubgraph sample_hetero_neighbors(const HeteroGraph& graph,
                                              const std::vector<HeteroSeeds>& seeds,
                                              const HeteroSamplerOptions& options,
                                              uint64_t batch_index,
                                              HeteroSamplerScratch* scratch = nullptr,
                                              const HeteroTimes& times = {});

// The same into `out` (overwritten), reusing the capacity of its vectors: a caller that keeps
// its subgraph allocates nothing once the vectors have grown to the batches' size.
void sample_hetero_neighbors(const HeteroGraph& graph, const std::vector<HeteroSeeds>& seeds,
                             const HeteroSamplerOptions& options, uint64_t batch_index,
                             HeteroSampledSubgraph& out, HeteroSamplerScratch* scratch = nullptr,
                             const HeteroTimes& times = {});

namespace sampling_internal {
class CudaHeteroSamplerBackend;
}

class HeteroNeighborSampler {
 public:
  // CPU sampling. Validates the options against the graph and attaches `times`
  // (attach_hetero_times; ValueError as above).
  HeteroNeighborSampler(HeteroGraph graph, HeteroSamplerOptions options, HeteroTimes times = {});
  // CUDA sampling (GPU or UVA, as `graph` was placed). Temporal: `graph` placed from
  // attach_hetero_times(graph, options, times), `times` the same (see above). ValueError for an
  // undefined graph, the fanouts, the times (as above: the checks that need no host graph, the
  // node times), a timed edge type placed without its entry times or with rows unsorted by them.
  // No CUDA call.
  HeteroNeighborSampler(CudaHeteroGraph graph, HeteroSamplerOptions options,
                        HeteroTimes times = {});
  ~HeteroNeighborSampler();
  HeteroNeighborSampler(HeteroNeighborSampler&&) noexcept;
  HeteroNeighborSampler& operator=(HeteroNeighborSampler&&) noexcept;

  // One batch (errors as sample_hetero_neighbors). CPU: `stream` is ignored. CUDA: the kernels
  // and copies run on `stream` and the call waits for it (the batch is in host memory); the
  // sampler keeps its device working memory between calls (one batch at a time).
  HeteroSampledSubgraph sample(const std::vector<HeteroSeeds>& seeds, uint64_t batch_index,
                               void* stream = nullptr);
  // The same with the random streams keyed by `seed` instead of options().seed: a loader
  // samples each epoch with a seed of its own (loader_internal::epoch_sampler_seed), batch b of
  // the epoch with batch index b, as the homogeneous loaders do.
  HeteroSampledSubgraph sample_with_seed(const std::vector<HeteroSeeds>& seeds, uint64_t seed,
                                         uint64_t batch_index, void* stream = nullptr);
  // The same into `out` (overwritten, the capacity of its vectors reused) with the caller's
  // `scratch` (CPU sampling; a loader keeps one per worker thread, so that concurrent batches
  // allocate nothing once both have grown; the CUDA sampler ignores it).
  void sample_with_seed(const std::vector<HeteroSeeds>& seeds, uint64_t seed, uint64_t batch_index,
                        HeteroSampledSubgraph& out, HeteroSamplerScratch& scratch,
                        void* stream = nullptr);
  // The node and edge types sampled, in graph order (of the CPU or the placed graph).
  const std::vector<NodeTypeInfo>& node_types() const;
  const std::vector<EdgeType>& edge_types() const;
  // Edges of edge type `edge_type` (graph order).
  int64_t num_edges(int edge_type) const;
  // Whether sample() runs the CUDA kernels (a CudaHeteroGraph) or the CPU sampler.
  bool on_cuda() const { return cuda_graph_.defined(); }
  // The graph as given (CPU sampler; else an empty HeteroGraph).
  const HeteroGraph& graph() const { return graph_; }
  // CUDA sampler: the placed graph (else undefined).
  const CudaHeteroGraph& cuda_graph() const { return cuda_graph_; }
  const HeteroSamplerOptions& options() const { return options_; }
  // Fanout list per edge type (graph order), as resolved.
  const std::vector<std::vector<int64_t>>& fanouts() const { return fanouts_; }

 private:
  HeteroSampledSubgraph sample_cuda(const std::vector<HeteroSeeds>& seeds, uint64_t seed,
                                    uint64_t batch_index, void* stream);

  HeteroGraph graph_;
  HeteroGraph timed_;  // attach_hetero_times(graph_): what sample() reads
  HeteroSamplerOptions options_;
  HeteroTimes times_;  // kNode: seed groups without times read their node times here (CPU, GPU)
  std::vector<std::vector<int64_t>> fanouts_;
  std::unique_ptr<std::mutex> mutex_;
  HeteroSamplerScratch scratch_;
  CudaHeteroGraph cuda_graph_;
  std::unique_ptr<sampling_internal::CudaHeteroSamplerBackend> backend_;
};

}  // namespace volley
