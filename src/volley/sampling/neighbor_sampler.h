// volley/sampling/neighbor_sampler.h — multi-hop neighbor sampling, PyG semantics, seedable.
//
// Sampling is a pure function of (graph, seeds, options, batch index): every random choice comes
// from Philox keyed by options.seed with the counter (draw, node, hop, batch), so the result is
// bit-identical for any thread count and on any device. The CPU implementation is the oracle
// for the CUDA one.
//
//   NeighborSamplerOptions options{.fanouts = {15, 10, 5}, .seed = 42};
//   SampledSubgraph batch = sample_neighbors(graph, seeds, options, /*batch_index=*/0);
//   // batch.nodes[0 : seeds.size()] == seeds; batch.rows/cols/edge_ids: the sampled edges.
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
// Errors: ValueError for an empty fanout list, a fanout < -1, `weighted` on a graph without
// weights, or a duplicate seed (naming the id and both positions); IndexError for a seed < 0 or
// >= num_nodes (naming it and its position). An empty seed list gives an empty result.
// Thread safety: concurrent calls on the same graph are safe.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "volley/core/array.h"
#include "volley/graph/csr.h"

namespace volley {

struct NeighborSamplerOptions {
  std::vector<int64_t> fanouts;  // per hop, outermost last; -1 = all neighbors
  bool replace = false;
  bool weighted = false;
  uint64_t seed = 0;
};

struct SampledSubgraph {
  std::vector<int64_t> nodes;  // global ids; seeds first
  int64_t num_seeds = 0;
  std::vector<int64_t> rows;           // local index of each edge's target
  std::vector<int64_t> cols;           // local index of each edge's neighbor (source, for kIn)
  std::vector<int64_t> edge_ids;       // graph edge id of each edge
  std::vector<int64_t> nodes_per_hop;  // size hops + 1
  std::vector<int64_t> edges_per_hop;  // size hops
};

// Reusable per-thread working memory (a global→local id map sized to the graph). Optional: a
// call without one borrows one from a process-wide stock (at most max(2, hardware threads) idle
// scratches, each 8 bytes per graph node plus working lists trimmed to 16 MiB on return), so
// that repeated calls neither map nor zero the map anew.
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

SampledSubgraph sample_neighbors(const Csr& graph, std::span<const int64_t> seeds,
                                 const NeighborSamplerOptions& options, uint64_t batch_index,
                                 SamplerScratch* scratch = nullptr);
// The same into `out` (overwritten), reusing the capacity of its vectors: a caller that recycles
// its subgraphs allocates nothing once they have grown to the batches' size.
void sample_neighbors(const Csr& graph, std::span<const int64_t> seeds,
                      const NeighborSamplerOptions& options, uint64_t batch_index,
                      SampledSubgraph& out, SamplerScratch* scratch = nullptr);

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
void sample_hop(const Csr& graph, int64_t first_node, std::span<const int64_t> targets, int hop,
                int64_t fanout, const NeighborSamplerOptions& options, uint64_t batch_index,
                HopSample& out, SamplerScratch* scratch = nullptr);

}  // namespace volley
