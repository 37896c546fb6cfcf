// volley/graph/generate.h — seeded synthetic graphs with learnable node data (`volley generate`).
//
// Two models, both directed and stored as in-neighbor CSR (row v lists the sources of edges into
// v) with sorted rows, no self loops and no duplicate neighbors:
//   kPowerLaw  Chung–Lu: node v gets a weight w_v ∝ (r_v + i0)^(-1/(gamma-1)) where r_v is v's
//              rank in a seeded permutation (so hubs are spread over the ids) and the offset i0
//              keeps the largest expected degree near sqrt(num_edges) (Chung–Lu needs
//              w_max^2 <= sum w). Row v's in-degree is its share of num_edges, rounded so the
//              degrees sum to exactly num_edges; its sources are drawn ∝ weight (alias tables),
//              a fraction `homophily` of them from v's own class, so labels follow the graph.
//              Exactly num_nodes nodes and num_edges edges.
//   kRmat      R-MAT (Chakrabarti et al. 2004): each edge picks a quadrant of the adjacency
//              matrix at every one of ceil(log2 num_nodes) levels with probabilities a, b, c, d;
//              ids >= num_nodes are redrawn, node ids are scrambled by a seeded permutation (as
//              Graph500 does), and self loops and duplicate edges are dropped, so the graph has
//              at most num_edges edges (the real count is reported). Labels carry no structure.
//   kTemporal  an interaction stream: num_nodes / 5 items (ids after the users), item j in
//              cluster j % num_classes; num_edges events, event e at time e: a uniform user
//              (whose interest cluster moves to a random one with chance 0.05 per event) takes
//              an item of its current interest cluster with chance `homophily`, else a uniform
//              item. So recent behaviour predicts the next link better than the whole history.
//              A multigraph stored both ways (2 * num_edges CSR entries; a reversed edge keeps
//              its event's id) with edge_ids = event index, edge_time = event time, node_time =
//              the node's first event (num_edges for none), rows sorted by time. Labels: an
//              item's cluster, a user's interest at the end. Sequential in the events.
// Node data: labels int64 [N] uniform over [0, num_classes); features [N, D] (float32 or
// float16) = a seeded centroid of the node's class + N(0, feature_noise^2) noise per entry, so a
// linear model (or nearest centroid) learns the class well above chance but not perfectly;
// a seeded random train / val / test split with exact sizes floor(fraction * N).
//
//   GeneratorOptions options{.model = GraphModel::kPowerLaw, .num_nodes = 100'000,
//                            .num_edges = 2'000'000, .feature_dim = 64, .num_classes = 10};
//   GeneratedDataset result = generate_dataset(options, "/data/powerlaw");
//   Csr graph = generate_graph(options);  // the same graph, in memory
//
// Determinism: every output is a pure function of the options. Randomness comes only from
// volley::PhiloxStream keyed by `seed` with counters naming (purpose, node, class or edge block),
// never by thread, so the same options give the same bytes for any thread count (features go
// through libm's logf/sincosf: same bytes on the same platform and C library).
// Cost (2-core machine, 2.4M nodes, 62M edges, 100 float32 features: bench/RESULTS.md): about
// 10 s and 0.4 GB (power law) or 0.8 GB (R-MAT) peak resident memory.
// Memory: the graph arrays (8 bytes per node for indptr, 4 per edge for indices) plus O(N)
// scratch (weights, alias tables, labels); R-MAT also holds its 8-byte-per-edge edge list and a
// second copy of the indices while building. Features are generated in 16 MiB row batches and
// streamed to disk (one batch written while the next is generated), never held whole.
// Throws ValueError for bad options (naming the option and value), IoError when the directory
// cannot be written.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "volley/core/array.h"
#include "volley/graph/csr.h"

namespace volley {

enum class GraphModel {
  kPowerLaw,  // Chung–Lu with power-law weights
  kRmat,      // recursive matrix
  kTemporal,  // interaction stream with timestamps
  kHetero,    // an ogbn-mag-shaped typed graph (generate_hetero.h)
};

std::string_view graph_model_name(GraphModel model);
// "powerlaw", "rmat", "temporal" or "hetero"; ValueError otherwise.
GraphModel graph_model_from_name(std::string_view name);

struct GeneratorOptions {
  GraphModel model = GraphModel::kPowerLaw;
  int64_t num_nodes = 0;                  // >= 1 and < 2^31 (indices are int32); hetero: papers
  int64_t num_edges = 0;                  // >= 0 and <= num_nodes * (num_nodes - 1); hetero: 0
  int64_t feature_dim = 0;                // 0: no features
  DType feature_dtype = DType::kFloat32;  // float32 or float16
  int64_t num_classes = 2;                // in [1, 65536]
  uint64_t seed = 0;
  // Power law: degree exponent gamma > 1 (P(degree = k) ~ k^-gamma); weights ∝ rank^-1/(gamma-1).
  double gamma = 2.1;
  // Power law: fraction of each row's sources drawn from the row's own class, in [0, 1].
  double homophily = 0.5;
  // R-MAT quadrant probabilities: each >= 0, a > 0, summing to 1 (within 1e-6).
  double rmat_a = 0.57;
  double rmat_b = 0.19;
  double rmat_c = 0.19;
  double rmat_d = 0.05;
  // Standard deviation of the per-entry feature noise (> 0); class centroids are about 2.8 apart.
  double feature_noise = 1.0;
  // Split fractions, each in [0, 1], summing to at most 1.
  double train_fraction = 0.1;
  double val_fraction = 0.05;
  double test_fraction = 0.1;
  // Hetero: also the reverse edge types (rev_writes, ...); refused for the other models.
  bool reverse = false;
};

// Throws ValueError naming the first bad option and its value.
void validate_generator_options(const GeneratorOptions& options);

// "powerlaw-2400000-62000000-seed0".
std::string default_dataset_name(const GeneratorOptions& options);

// The graph alone (validates the options). Parallel; deterministic for any thread count.
Csr generate_graph(const GeneratorOptions& options);

// Labels: int64 [num_nodes], each in [0, num_classes).
Array generate_labels(const GeneratorOptions& options);

// Feature rows [first_row, first_row + num_rows) as a [num_rows, feature_dim] array of
// feature_dtype; each row depends only on (seed, row). ValueError when feature_dim == 0 or the
// range leaves [0, num_nodes).
Array generate_features(const GeneratorOptions& options, int64_t first_row, int64_t num_rows);

struct GeneratedSplit {
  Array train_idx;  // int64, sorted node ids
  Array val_idx;
  Array test_idx;
};
// Disjoint random node sets of sizes floor(fraction * num_nodes).
GeneratedSplit generate_split(const GeneratorOptions& options);

struct GeneratedDataset {
  std::string name;
  int64_t num_nodes = 0;
  int64_t num_edges = 0;  // the real count (R-MAT may drop duplicates)
};

// Generates everything and writes a dataset directory (dataset.h; kHetero: hetero_dataset.h, as
// generate_hetero.h says) at `directory`: indptr,
// indices (int32), labels, features (streamed; absent when feature_dim == 0), train/val/test
// idx, and volley.json (written last, with num_classes). Shows progress bars for long phases.
GeneratedDataset generate_dataset(const GeneratorOptions& options, const std::string& directory);

}  // namespace volley
