// volley/sampling/neighbor_sampler.h — multi-hop neighbor sampling, PyG semantics, seedable.
//
// Sampling is a pure function of (graph, seeds, options, batch index): every random choice comes
// from Philox keyed by options.seed with the counter (draw, node, hop, batch), so the result is
// bit-identical for any thread count and on any device. The CPU implementation is the oracle
// for the CUDA one.
//
// One entry, NeighborSampler, picks the device from where the graph lives:
//   Csr in host memory                    → the CPU kernel (sampling/cpu/);
//   CudaGraph (cuda_graph.h): a Csr placed in device memory (GPU) or pinned host memory read by
//   the GPU (UVA)                         → the CUDA kernels (sampling/cuda/).
// Either way the result is one SampledSubgraph whose arrays live where the sampler ran.
//
//   NeighborSamplerOptions options{.fanouts = {15, 10, 5}, .seed = 42};
//   NeighborSampler sampler(graph, options);                  // or CudaGraph::place(graph, ...)
//   SampledSubgraph batch = sampler.sample(seeds, /*batch_index=*/0);
//   // batch.nodes[0 : seeds.size()] == seeds; batch.rows/cols/edge_ids: the sampled edges.
//   SampledSubgraph same = sample_neighbors(graph, seeds, options, 0);  // the CPU oracle
//
// Semantics (PyG's NeighborLoader, non-disjoint):
//   * Hop h expands the nodes first reached at hop h - 1 (hop 0: the seeds); a node is expanded
//     at most once. For target v with degree d (neighbors in the graph's orientation, i.e. the
//     sources of v's in-edges by default) and fanout k:
//       - k == -1, or d <= k without replacement: all d neighbors, in CSR order;
//       - uniform without replacement (d > k): a uniform k-subset, in CSR order;
//       - uniform with replacement: k independent uniform draws (d > 0), in draw order;
//       - weighted without replacement (d > k): k distinct neighbors by successive draws
//         ∝ weight (Efraimidis–Spirakis keys), zero-weight neighbors never chosen (fewer than k
//         when fewer have positive weight), in CSR order;
//       - weighted with replacement: k independent draws ∝ weight, in draw order (none when all
//         weights are zero);
//       - k == 0: no neighbors at that hop.
//   * `nodes` lists the seeds in input order, then each newly reached node in order of first
//     appearance (targets in node-list order, their sampled neighbors in the order above).
//   * Edge j goes from nodes[cols[j]] (the neighbor) to nodes[rows[j]] (the target): PyG's
//     edge_index is [cols; rows]. edge_ids[j] is the graph's edge id of that CSR entry.
//   * Edges are grouped by hop: hop h holds edges_per_hop[h] edges; nodes_per_hop[0] is the
//     number of seeds and nodes_per_hop[h + 1] the nodes first reached at hop h.
//
// Temporal sampling (PyG's time_attr / input_time / temporal_strategy), options.temporal set:
//   * every seed comes with a time (the seed_times overloads), and that time travels down the
//     seed's tree: a neighbor of a node of tree i is admissible when its time is <= seed_times[i]
//     — the edge's time (TimeSource::kEdge, Csr::edge_time) or the neighbor's node time
//     (TimeSource::kNode, Csr::node_time). The seeds themselves are not checked.
//   * sampling is disjoint (as PyG forces it for temporal sampling: each seed's tree has its own
//     time), whatever options.disjoint says: `batch` is set and seeds may repeat.
//   * the pick rules above apply to the admissible neighbors of a target, in CSR order, as if
//     they were its whole row (uniform, with or without replacement), except with
//     TemporalStrategy::kLast: the min(k, admissible) most recent admissible neighbors (the last
//     ones of a row sorted by time), in CSR order, no draws (k == -1: all admissible).
//   * rows sorted by time (Csr::first_row_unsorted_by_*_time() == -1; sort_rows_by_time in
//     csr.h) find the admissible prefix by binary search; unsorted rows are scanned (uniform
//     only: kLast needs sorted rows, ValueError naming the first unsorted row).
//   * not with `weighted`, nor kInduced (ValueError); sample_hop samples one temporal hop with
//     a time per target (HopTimes below). The CUDA sampler does, over rows sorted by the time
//     in use (ValueError naming the first unsorted row), with the same picks as the CPU.
//
// No hops (an empty fanout list, PyG's num_neighbors=[]) gives the seeds alone (with kInduced:
// and the edges among them).
// Errors: ValueError for a fanout < -1, more than 255 hops, `weighted` on a graph without
// weights, disjoint with kInduced, or a duplicate seed (unless disjoint) (naming the id and both
// positions); IndexError for a seed < 0 or >= num_nodes (naming it and its position);
// ValueError when a batch reaches 2^31 nodes. An empty seed list gives an empty result.
// On the GPU every check runs on the host before any CUDA work, with the same messages;
// RuntimeError for a failing CUDA call, and for a CudaGraph in a build without CUDA ("this build of
// Volley has no CUDA support"). Thread safety: concurrent sample_neighbors calls on the same graph
// are safe; a NeighborSampler may be shared by threads (CPU: a call that finds the sampler's
// scratch busy uses its own; CUDA: calls are serialised, as they share one workspace).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "volley/core/array.h"
#include "volley/graph/csr.h"
#include "volley/graph/hetero_graph.h"  // EdgeType
#include "volley/sampling/cuda_graph.h"

namespace volley {

// Which edges a sampled subgraph holds (PyG's `subgraph_type`):
//   kDirectional    the sampled edges, neighbor → target, grouped by hop (the default);
//   kBidirectional  the sampled edges and their reverses, coalesced: each (source, target) pair
//                   once, sorted by target then source, edge_ids those of a sampled edge that
//                   gave the pair (the edge itself, or the one it reverses);
//   kInduced        every graph edge between two sampled nodes, sorted by target (edges of a
//                   target in CSR order).
// Nodes, their order and the random draws are the same for all three; edges_per_hop is empty
// unless directional (PyG reports no per-hop edge counts for the other two).
enum class SubgraphType : uint8_t { kDirectional, kBidirectional, kInduced };

// "directional", "bidirectional", "induced" (PyG's names), and back: ValueError naming an
// unknown name.
const char* subgraph_type_name(SubgraphType type);
SubgraphType subgraph_type_from_name(std::string_view name);

// Which timestamps decide admissibility in temporal sampling (PyG: time_attr names a node or an
// edge attribute).
enum class TimeSource : uint8_t { kNone, kNode, kEdge };
// PyG's temporal_strategy: "uniform" among the admissible neighbors, or the "last" (most recent).
enum class TemporalStrategy : uint8_t { kUniform, kLast };
// "uniform" / "last", and back: ValueError naming an unknown name.
const char* temporal_strategy_name(TemporalStrategy strategy);
TemporalStrategy temporal_strategy_from_name(std::string_view name);

struct NeighborSamplerOptions {
  std::vector<int64_t> fanouts;  // per hop, outermost last; -1 = all neighbors
  bool replace = false;
  bool weighted = false;
  uint64_t seed = 0;
  SubgraphType subgraph_type = SubgraphType::kDirectional;
  // PyG's `disjoint`: every seed grows a tree of its own (a node reached from two seeds appears
  // twice, once per tree; seeds may repeat). SampledSubgraph::batch gives each node's tree.
  // Not with kInduced (ValueError, as in PyG).
  bool disjoint = false;
  // Temporal sampling (see above): kNone samples without time constraints.
  TimeSource time_source = TimeSource::kNone;
  TemporalStrategy temporal_strategy = TemporalStrategy::kUniform;
  // Typed graphs only (hetero_sampler.h): the fanouts of the edge types named here; `fanouts`
  // is then the others' (their default). A homogeneous sampler refuses it (ValueError).
  std::vector<std::pair<EdgeType, std::vector<int64_t>>> fanouts_by_type;
};

// One sampled batch. The arrays are 1-d int64 and live where the sampler ran: host memory for
// the CPU sampler, device memory of the graph's GPU for the CUDA sampler (ready in the order of
// the stream sample() was given). The per-hop counts are always on the host.
struct SampledSubgraph {
  Array nodes;  // int64 [num nodes]: global ids; seeds first
  int64_t num_seeds = 0;
  Array rows;                          // int64 [num edges]: local index of each edge's target
  Array cols;                          // int64 [num edges]: local index of each edge's neighbor
  Array edge_ids;                      // int64 [num edges]: graph edge id of each edge
  std::vector<int64_t> nodes_per_hop;  // size hops + 1
  std::vector<int64_t> edges_per_hop;  // size hops
  Array batch;  // disjoint sampling: int64 [num nodes], the seed position of each node's tree

  int64_t num_nodes() const { return nodes.defined() ? nodes.numel() : 0; }
  int64_t num_edges() const { return rows.defined() ? rows.numel() : 0; }
  // Where the arrays live (kCuda for a GPU result; a host location otherwise).
  Location location() const { return nodes.buffer().location(); }
  // The same subgraph in host memory: *this (shared, no copy) when it is there already, else a
  // copy made on `stream` (a cudaStream_t as void*; nullptr: the legacy default stream) that
  // this call waits for. RuntimeError for a failing copy.
  SampledSubgraph to_host(void* stream = nullptr) const;
};

// Host vectors a sampler fills as it goes (the CPU kernel, the distributed merge), with the
// fields of SampledSubgraph. finish() turns them into one without copying.
struct HostSubgraph {
  std::vector<int64_t> nodes;
  int64_t num_seeds = 0;
  std::vector<int64_t> rows, cols, edge_ids;
  std::vector<int64_t> nodes_per_hop, edges_per_hop;
  std::vector<int64_t> batch;  // disjoint sampling only (else empty)

  // The vectors moved into host arrays (zero-copy); the builder is left empty.
  SampledSubgraph finish();
  // The vectors of `*holder` as host arrays (zero-copy), which keep `holder` alive: a holder
  // from a Recycler (core/recycler.h) returns to its stock when the last array goes.
  static SampledSubgraph view(const std::shared_ptr<HostSubgraph>& holder);
};

// Reusable per-thread working memory (a global→local id map sized to the graph). Optional: a
// call without one borrows one from a process-wide stock (at most max(2, hardware threads) idle
// scratches, each 8 bytes per graph node plus working lists trimmed to 16 MiB on return, the
// disjoint / temporal map to 64 MiB), so that repeated calls neither map nor zero the map anew.
// A caller sampling many batches should hold one: a borrowed scratch whose map outgrew the trim
// is mapped and zeroed anew on every call.
class SamplerScratch {
 public:
  SamplerScratch();
  ~SamplerScratch();
  SamplerScratch(SamplerScratch&&) noexcept;
  SamplerScratch& operator=(SamplerScratch&&) noexcept;

 private:
  friend struct SamplerScratchAccess;
  struct State;
  std::unique_ptr<State> state_;
};

// Checks `options` against `graph` (ValueError as above). Called by sample_neighbors; exposed so
// loaders can fail at construction rather than on the first batch.
void validate_sampler_options(const Csr& graph, const NeighborSamplerOptions& options);
// The same checks for a graph known only by whether it has edge weights (a graph on a GPU or
// behind servers): one set of rules and messages for every sampler.
void validate_sampler_options(const NeighborSamplerOptions& options, bool graph_has_weights);

// The CPU sampler as a function: `graph` in host memory, result in host memory. The oracle
// every other sampler is tested against. ValueError when options.time_source is set (temporal
// sampling needs the seed_times overloads).
SampledSubgraph sample_neighbors(const Csr& graph, std::span<const int64_t> seeds,
                                 const NeighborSamplerOptions& options, uint64_t batch_index,
                                 SamplerScratch* scratch = nullptr);
// The same into `out` (overwritten), reusing the capacity of its vectors: a caller that recycles
// its subgraphs allocates nothing once they have grown to the batches' size.
void sample_neighbors(const Csr& graph, std::span<const int64_t> seeds,
                      const NeighborSamplerOptions& options, uint64_t batch_index,
                      HostSubgraph& out, SamplerScratch* scratch = nullptr);
// Temporal sampling: `seed_times[i]` is the time of seeds[i]. ValueError when the lengths differ
// or options.time_source is kNone (use the overloads above).
SampledSubgraph sample_neighbors(const Csr& graph, std::span<const int64_t> seeds,
                                 std::span<const int64_t> seed_times,
                                 const NeighborSamplerOptions& options, uint64_t batch_index,
                                 SamplerScratch* scratch = nullptr);
void sample_neighbors(const Csr& graph, std::span<const int64_t> seeds,
                      std::span<const int64_t> seed_times, const NeighborSamplerOptions& options,
                      uint64_t batch_index, HostSubgraph& out, SamplerScratch* scratch = nullptr);

namespace sampling_internal {
class CudaSamplerBackend;
}

// The one sampler entry: the constructor checks the options against the graph (ValueError as
// above; no CUDA call), sample() runs where the graph lives.
class NeighborSampler {
 public:
  // CPU sampling over a host graph.
  NeighborSampler(Csr graph, NeighborSamplerOptions options);
  // CUDA sampling (GPU or UVA, as `graph` was placed). ValueError for an undefined CudaGraph.
  NeighborSampler(CudaGraph graph, NeighborSamplerOptions options);
  ~NeighborSampler();
  NeighborSampler(NeighborSampler&&) noexcept;
  NeighborSampler& operator=(NeighborSampler&&) noexcept;

  // One batch. `seeds`: host int64 ids, distinct, in [0, num_nodes), checked on the host first.
  // CPU: `stream` is ignored; the result is complete on return. CUDA: every copy and kernel is
  // queued on `stream`; the call waits on it twice per hop (for counts that size the next
  // step), and the last kernels filling the arrays may still be queued on return: use them in
  // stream order. The CUDA sampler keeps its working memory between calls; the arrays are
  // slices of it, and the next call allocates fresh ones while the caller holds them.
  SampledSubgraph sample(std::span<const int64_t> seeds, uint64_t batch_index,
                         void* stream = nullptr);
  // Temporal sampling: seed_times[i] is the time of seeds[i], see sample_neighbors. On a GPU
  // the graph's rows must be sorted by the time in use (ValueError at construction naming the
  // first unsorted row); `stream` as above.
  SampledSubgraph sample(std::span<const int64_t> seeds, std::span<const int64_t> seed_times,
                         uint64_t batch_index, void* stream = nullptr);
  // The CPU sampler into `out` (overwritten, its vectors' capacity reused), with the sampler's
  // scratch as above; the seed_times overload samples by time. ValueError on a CUDA sampler.
  void sample(std::span<const int64_t> seeds, uint64_t batch_index, HostSubgraph& out);
  void sample(std::span<const int64_t> seeds, std::span<const int64_t> seed_times,
              uint64_t batch_index, HostSubgraph& out);

  // Whether sample() runs the CUDA kernels (a CudaGraph) or the CPU kernel (a Csr).
  bool on_cuda() const { return on_cuda_; }
  // The graph's CUDA device, -1 on the CPU.
  int device() const { return on_cuda_ ? cuda_graph_.device() : -1; }
  int64_t num_nodes() const;
  const NeighborSamplerOptions& options() const { return options_; }
  const Csr& graph() const { return graph_; }                  // CPU sampler (else undefined)
  const CudaGraph& cuda_graph() const { return cuda_graph_; }  // CUDA sampler (else undefined)

 private:
  SampledSubgraph sample_cuda(std::span<const int64_t> seeds, std::span<const int64_t> seed_times,
                              uint64_t batch_index, void* stream);

  Csr graph_;
  CudaGraph cuda_graph_;
  bool on_cuda_ = false;
  NeighborSamplerOptions options_;
  std::unique_ptr<std::mutex> mutex_;  // guards scratch_ / backend_
  SamplerScratch scratch_;
  std::unique_ptr<sampling_internal::CudaSamplerBackend> backend_;
};

// --- One hop over a slice of the graph (the distributed sampler's building block) ----------
//
// The picks for one target depend only on (graph row, global id, hop, batch, options), so a
// multi-hop sample can be assembled from one-hop samples taken on different machines, each
// holding some rows: the distributed sampler (volley/dist) does exactly that and gets what
// sample_neighbors returns on the whole graph.
struct HopSample {
  std::vector<int32_t> counts;     // per target: how many neighbors were picked
  std::vector<int64_t> neighbors;  // global ids, grouped by target, in pick order
  std::vector<int64_t> edge_ids;   // one per neighbor
};

// Samples hop `hop` (fanout `fanout`, options.fanouts ignored) for `targets` (global ids) from
// a graph holding rows [first_node, first_node + graph.num_nodes()): row r is node
// first_node + r, neighbor ids are global. IndexError names a target outside those rows;
// ValueError for fanout < -1, hop >= 256, or `weighted` without weights. Targets may repeat.
// options.time_source set: ValueError (use the HopTimes overload).
void sample_hop(const Csr& graph, int64_t first_node, std::span<const int64_t> targets, int hop,
                int64_t fanout, const NeighborSamplerOptions& options, uint64_t batch_index,
                HopSample& out, SamplerScratch* scratch = nullptr);

// A temporal hop's times (options.time_source set): target_times[i] is the time of the tree
// targets[i] belongs to (its seed's time, carried down the frontier). The time of a CSR entry
// of `graph` is edge_time[k] (kEdge: one per entry of this graph, e.g. graph.edge_time()) or
// node_time[global neighbor id] (kNode: indexed by GLOBAL id, so as long as the largest
// neighbor id + 1). rows_sorted: every row of `graph` is in non-decreasing order of that time
// (binary search; else rows are scanned, uniform only).
struct HopTimes {
  std::span<const int64_t> target_times;
  std::span<const int64_t> edge_time;
  std::span<const int64_t> node_time;
  bool rows_sorted = false;
};

// One temporal hop: the picks sample_neighbors(seed_times) makes for these targets at hop `hop`
// (the same streams, keyed by global id), so hops over slices assemble to its result. Errors as
// above, plus ValueError when options.time_source is kNone, target_times has not one entry per
// target, edge_time has not one per entry of `graph`, node_time is empty, kLast over unsorted
// rows, or with `weighted`; IndexError naming a neighbor id beyond node_time.
void sample_hop(const Csr& graph, int64_t first_node, std::span<const int64_t> targets, int hop,
                int64_t fanout, const NeighborSamplerOptions& options, uint64_t batch_index,
                const HopTimes& times, HopSample& out, SamplerScratch* scratch = nullptr);

// The temporal degree of each (node, time) pair: out[i] = the entries of row nodes[i] of `graph`
// whose time is <= times[i] — the edge's (kEdge) or the neighbor's node time (kNode). On rows
// sorted by that time it is the admissible-prefix search temporal sampling makes for every row
// it expands (std::upper_bound's answer, many rows searched at once); other rows are counted.
// ValueError when the graph has no times of that kind or the lengths differ; IndexError for a
// node outside [0, num_nodes).
void temporal_degrees(const Csr& graph, std::span<const int64_t> nodes,
                      std::span<const int64_t> times, TimeKind kind, std::span<int64_t> out);

}  // namespace volley
