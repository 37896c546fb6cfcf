// volley/partition/internal/partitioners.h — the assignment strategies behind partition.h and
// hetero_partition.h.
//
// Random, METIS and stream map a TypedGraph (a homogeneous dataset is its one-type case; arrays
// possibly memory-mapped) to one int32 assignment per node type; hotness maps a Dataset to an
// int32 [N] one. The front end (partition.cc) validates options and dispatches; nothing here
// checks user input beyond what only the strategy knows (e.g. METIS's own failures).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "volley/core/array.h"
#include "volley/graph/dataset.h"
#include "volley/graph/hetero_dataset.h"
#include "volley/partition/partition.h"
#include "volley/partition/partition_book.h"

namespace volley::internal {

// Three balance constraints per node: 1, its in-degree (the edges its partition stores), and
// whether it is a training node.
constexpr int kNumConstraints = 3;

struct BalanceCaps {
  std::array<int64_t, kNumConstraints> total{};
  std::array<double, kNumConstraints> cap{};  // max((1 + tolerance) * total / K, ceil(total / K))
};
BalanceCaps balance_caps(const std::array<int64_t, kNumConstraints>& total, int64_t num_parts,
                         double tolerance);

// One byte per node of `n`: 1 for training nodes (`train_idx`, of a dataset or of a node type),
// 0 otherwise.
std::vector<uint8_t> training_flags(int64_t n, const std::optional<Array>& train_idx);
inline std::vector<uint8_t> training_flags(const Dataset& dataset) {
  return training_flags(dataset.graph.num_nodes(), dataset.train_idx);
}

// Places nodes one at a time under hard caps; shared by random, hotness and stream.
class BalancedPlacer {
 public:
  BalancedPlacer(const BalanceCaps& caps, int64_t num_parts);
  // Whether node weights (1, degree, train) still fit into `part`.
  bool fits(int64_t part, int64_t degree, bool train) const;
  void place(int64_t part, int64_t degree, bool train);
  void remove(int64_t part, int64_t degree, bool train);
  // The partition with the lowest largest relative load after adding the node (always one).
  int64_t least_loaded(int64_t degree, bool train) const;
  int64_t nodes(int64_t part) const { return load_[static_cast<size_t>(part)][0]; }
  // Whether adding the node keeps the partition's relative loads (load / mean, per constraint)
  // within `max_spread` of each other, or at least no further apart than they are.
  bool keeps_even(int64_t part, int64_t degree, bool train, double max_spread) const;
  // The partition's heaviest load relative to the mean (1 = exactly its share).
  double relative_load(int64_t part) const;

 private:
  double relative_after(int64_t part, int64_t degree, bool train) const;
  BalanceCaps caps_;
  std::vector<std::array<int64_t, kNumConstraints>> load_;
};

// The graph the assignment strategies see: node types (count, training flags) and edge types (the
// index of the source and destination type, the CSR over destination rows whose indices are
// source ids). A homogeneous dataset is the one-type case: one node type, one edge type (0 -> 0).
struct TypedGraph {
  struct NodeType {
    int64_t num_nodes = 0;
    std::vector<uint8_t> train;  // training_flags of the type
  };
  struct EdgeType {
    int src = 0;
    int dst = 0;
    const Csr* csr = nullptr;
  };
  std::vector<NodeType> node_types;
  std::vector<EdgeType> edge_types;
  // The homogeneous balance: a node's in-degree is a constraint besides its count and whether it
  // trains (the in-edges its partition stores; METIS then balances training nodes too), Fennel
  // first tries partitions that keep the constraints even and breaks ties by load, and the random
  // order is Philox stream 0. Without it (a typed graph) each node type's nodes are balanced (and
  // its training nodes, except by METIS) and node type t's random order is stream t + 1.
  bool balance_in_edges = false;

  int64_t total_edges() const;
};
// The one-type view of `dataset` (balance_in_edges) and the typed view of a heterogeneous one; both
// refer to the dataset's graph, which must outlive them.
TypedGraph typed_graph(const Dataset& dataset);
TypedGraph typed_graph(const HeteroDataset& dataset);

// The strategies, one int32 [N_T] assignment per node type (values in [0, options.num_parts)).
// random: per node type, the nodes in a seeded Fisher-Yates order (Philox: options.seed), each to
// the least loaded partition under hard caps. metis: k-way METIS on the type-merged symmetrised
// graph (global id = type offset + id), one one-hot node constraint per node type (RuntimeError
// when METIS fails or is absent). stream: Fennel, one pass over the node types in order and each
// type's nodes in id order, reading the CSRs in chunks of options.chunk_bytes (mapped pages dropped
// after each); IndexError for a source id out of its type's range.
std::vector<Array> assign_random(const TypedGraph& graph, const PartitionOptions& options);
std::vector<Array> assign_metis(const TypedGraph& graph, const PartitionOptions& options);
std::vector<Array> assign_stream(const TypedGraph& graph, const PartitionOptions& options);

// One simulated epoch per partition: the training nodes it owns, shuffled (Philox, options.seed,
// partition), in batches of options.batch_size, each sampled with options.fanouts. `on_part`
// receives the number of times each node (old id) appeared in that partition's batches.
void simulate_epoch(
    const Dataset& dataset, const Array& assignment, const PartitionOptions& options,
    const std::function<void(int64_t part, std::span<const uint32_t> reads)>& on_part);

struct AccessFigures {
  int64_t reads = 0;
  int64_t remote_reads = 0;
  int64_t remote_reads_after_cache = 0;
  // Per partition: old ids of the cached remote nodes, hottest first (empty without a budget).
  std::vector<std::vector<int64_t>> cached;
  double remote_fraction() const {
    return reads ? static_cast<double>(remote_reads) / static_cast<double>(reads) : 0.0;
  }
  double remote_fraction_cached() const {
    return reads ? static_cast<double>(remote_reads_after_cache) / static_cast<double>(reads) : 0.0;
  }
};
// Simulates an epoch of `assignment` and counts remote reads; each partition caches up to
// `cache_rows` of its most-read remote nodes. With `reads_per_part`, also keeps every
// partition's counts (K x N, row-major).
AccessFigures measure_accesses(const Dataset& dataset, const Array& assignment,
                               const PartitionOptions& options, int64_t cache_rows,
                               std::vector<uint32_t>* reads_per_part = nullptr);

// Starting from `initial`, moves each node (hottest first) to the partition that reads it most
// when that partition has room under the caps; unread nodes and training nodes (the seeds) stay,
// so `reads_per_part` stays exact and remote reads only go down. Caps that held for `initial`
// keep holding.
Array refine_by_hotness(const Dataset& dataset, const Array& initial,
                        const PartitionOptions& options, const std::vector<uint8_t>& train,
                        const std::vector<uint32_t>& reads_per_part);

// Edges of `graph` (rows: nodes whose part is `row_part`; indices: sources whose part is
// `source_part`, the same array for a homogeneous graph) that cross partitions, counted in
// parallel over row chunks of about `chunk_bytes` of indices whose mapped pages are dropped after.
int64_t count_cut_edges(const Csr& graph, const int32_t* source_part, const int32_t* row_part,
                        int64_t chunk_bytes);
// The book of an assignment (int32 [N] in [0, num_parts)): part p owns as many new ids as it has
// nodes, in part order (a dataset's, or one node type's).
PartitionBook book_of(const Array& assignment, int64_t num_parts);
// Seconds since `start` (the timings of a partitioning run).
inline double elapsed_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
// Largest load / mean load (1 when all are 0).
double balance_of(const std::vector<int64_t>& loads);

// Drops the pages of a memory-mapped array's bytes [first, end) from this process (they are
// re-read from the file if touched again): keeps the resident memory of a streaming pass
// bounded. No-op for arrays that are not mapped files.
void release_mapped_pages(const Array& array, size_t first_byte, size_t end_byte);

}  // namespace volley::internal
