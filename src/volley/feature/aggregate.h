// volley/feature/aggregate.h — one aggregation over a whole graph: every node's row of `out` from
// its neighbors' rows of `x` (a message-passing layer without weights: the preprocessing pass
// `U = Â X` of SIGN / control-variate training, a GCN propagation, a mean of neighbors).
//
//   Array u = aggregate(graph.csr(), x, {.op = Aggregation::kGcn});   // [N, D] float32
//
// N(v) is row v of the CSR: a node's in-neighbors in an "in" graph (PyG's flow
// source_to_target), its out-neighbors in an "out" graph. With w_uv the edge's weight
// (options.weighted and the graph has weights) or 1:
//   kSum   out[v] = Σ_{u ∈ N(v)} w_uv x[u]
//   kMean  out[v] = Σ_{u ∈ N(v)} w_uv x[u] / |N(v)|              (0 for a node without neighbors)
//   kGcn   out[v] = Σ_{u ∈ N(v)} w_uv x[u] / sqrt(d(u) d(v)) + x[v] / d(v), d(v) = 1 + Σ w_uv over
//          N(v): PyG's GCNConv propagation (gcn_norm with self-loops of weight 1), without its
//          linear map; the self-loop term only with options.self_loops (default on for kGcn).
// Contracts: x is float32 [S, D] with S covering every neighbor id (and S >= N for kGcn's self
// loops); out is float32 [N, D]. Each row is summed by one thread in CSR order, so the result is
// the same, bit for bit, on any number of threads. ValueError for another dtype or shape (naming
// it), IndexError for a neighbor id outside [0, S).
// Where x lives picks where it runs: x in host memory, on the CPU (the pool's threads); x on a
// CUDA device, on that device (the CSR is uploaded for the call; out is a new array on the
// device), with the CPU's result bit for bit (each element summed in CSR order, no fused
// multiply-adds). RuntimeError for device x in a build without CUDA.
// Thread safety: reads only; concurrent calls are fine.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "volley/core/array.h"
#include "volley/graph/csr.h"

namespace volley {

enum class Aggregation { kSum, kMean, kGcn };

struct AggregateOptions {
  Aggregation op = Aggregation::kMean;
  bool weighted = false;   // use the graph's edge weights (ValueError when it has none)
  bool self_loops = true;  // kGcn only: the x[v] / d(v) term and the 1 in d(v)
};

// Parses "sum", "mean" or "gcn" (ValueError naming the value otherwise).
Aggregation aggregation_from_name(std::string_view name);
// "sum", "mean" or "gcn".
std::string_view aggregation_name(Aggregation op);

// out = the aggregation of x over `graph` (see above); a new [N, D] float32 array.
Array aggregate(const Csr& graph, const Array& x, const AggregateOptions& options = {});
// The same into `out` (N × D floats, not aliasing x).
void aggregate_into(const Csr& graph, const Array& x, const AggregateOptions& options, float* out);

// Where a graph's sources are read when they are not x's rows by id (a partition server's rows:
// its own nodes first, then the rows it fetched of the other parts' nodes).
struct SourceRows {
  // Per CSR position k: the row of x that neighbor k reads. Row v of x is graph row v's own
  // (its self loop).
  std::span<const int64_t> positions;
  // kGcn: d(r) of each row r >= graph.num_nodes() of x, in order, counted as the kernel counts a
  // graph row's (the self loop's 1 first, then each edge's weight); the graph rows' own come
  // from the CSR.
  std::span<const float> degrees;
};
// aggregate_into over sources given by position: x is float32 [S, D] in host memory with S >=
// N; a neighbor's position outside [0, S), or too few degrees for kGcn, is a ValueError. The
// same operations in the same order as aggregate_into, so the same bits for the same rows.
void aggregate_into(const Csr& graph, const Array& x, const SourceRows& sources,
                    const AggregateOptions& options, float* out);

}  // namespace volley
