// volley/graph/csr.h — the graph: compressed sparse rows with optional edge ids and weights.
//
// Row v lists v's neighbors. With the default orientation (kIn) they are the *sources* of the
// edges into v — what PyG's message passing aggregates; kOut lists the targets of v's out-edges.
//
//   Arrays (all host-accessible; may be memory-mapped, shared or heap):
//     indptr    int64 [N + 1], indptr[0] == 0, non-decreasing, indptr[N] == E
//     indices   int32 [E] when N < 2^31 (else int64), each in [0, N)
//     edge_ids  optional int64 [E]: position of each edge in the input COO. Absent means the
//               identity (edge id == position in `indices`).
//     weights   optional float32 [E], finite and >= 0
//     node_time optional int64 [N]: a timestamp per node (temporal sampling)
//     edge_time optional int64 [E]: a timestamp per edge, in CSR order (like weights)
//
//   Csr graph = build_csr(src, dst, {.num_nodes = n, .symmetrize = true});
//   for (int64_t k = graph.begin(v); k < graph.end(v); ++k) ... graph.neighbor(k) ...
//
// A Csr is immutable after construction and safe to read from many threads. Copies share arrays.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "volley/core/array.h"

namespace volley {

enum class Orientation {
  kIn,   // row v holds the sources of edges into v (default; PyG's in-neighbors)
  kOut,  // row v holds the targets of edges out of v
};

std::string_view orientation_name(Orientation orientation);

class Csr {
 public:
  Csr() = default;

  // Wraps existing arrays (no copy). With `validate`, checks every contract above and throws
  // ValueError / IndexError naming the first offending position and value; without it, only
  // shapes and dtypes are checked (O(1)) — for arrays that were validated when written.
  static Csr from_arrays(Array indptr, Array indices, std::optional<Array> edge_ids = std::nullopt,
                         std::optional<Array> weights = std::nullopt,
                         Orientation orientation = Orientation::kIn, bool validate = true);

  int64_t num_nodes() const { return num_nodes_; }
  int64_t num_edges() const { return num_edges_; }
  Orientation orientation() const { return orientation_; }
  // int32 or int64: the dtype of `indices`.
  DType index_dtype() const { return indices_.dtype(); }

  const Array& indptr() const { return indptr_; }
  const Array& indices() const { return indices_; }
  const std::optional<Array>& edge_ids() const { return edge_ids_; }
  const std::optional<Array>& weights() const { return weights_; }
  bool has_edge_ids() const { return edge_ids_.has_value(); }
  bool has_weights() const { return weights_.has_value(); }

  int64_t begin(int64_t row) const { return indptr_data_[row]; }
  int64_t end(int64_t row) const { return indptr_data_[row + 1]; }
  int64_t degree(int64_t row) const { return end(row) - begin(row); }
  // Neighbor at CSR position k (either index width).
  int64_t neighbor(int64_t k) const {
    return narrow_ ? static_cast<const int32_t*>(indices_data_)[k]
                   : static_cast<const int64_t*>(indices_data_)[k];
  }
  // Edge id at CSR position k (k itself when there are no stored edge ids).
  int64_t edge_id(int64_t k) const { return edge_ids_data_ ? edge_ids_data_[k] : k; }

  // Timestamps for temporal sampling (see neighbor_sampler.h): int64 node_time [N] and
  // edge_time [E] in CSR order (a graph.begin(v) + i entry is the time of that edge).
  const std::optional<Array>& node_time() const { return node_time_; }
  const std::optional<Array>& edge_time() const { return edge_time_; }
  bool has_node_time() const { return node_time_.has_value(); }
  bool has_edge_time() const { return edge_time_.has_value(); }
  // The first row whose entries are not in non-decreasing order of their edge time (of their
  // neighbor's node time), or -1 when every row is sorted (or there are no such times). Computed
  // once, when the times are attached.
  int64_t first_row_unsorted_by_edge_time() const { return edge_time_unsorted_row_; }
  int64_t first_row_unsorted_by_node_time() const { return node_time_unsorted_row_; }

  // This graph (arrays shared) with `node_time` / `edge_time` attached; std::nullopt drops that
  // kind of time. ValueError unless node_time is int64 [N] and edge_time int64 [E] in host
  // memory (naming what was given). O(E) once: finds the first unsorted row of each kind.
  Csr with_times(std::optional<Array> node_time, std::optional<Array> edge_time) const;

  // The same edges in the other orientation (a new graph; edge ids, weights and edge times follow
  // their edges, node times stay). In the result, each row's neighbors are sorted. It has
  // max(num_nodes, 1 + largest neighbor) rows (more than num_nodes only for a bipartite Csr,
  // e.g. a HeteroGraph edge type).
  Csr transposed() const;

 private:
  Array indptr_;
  Array indices_;
  std::optional<Array> edge_ids_;
  std::optional<Array> weights_;
  std::optional<Array> node_time_;
  std::optional<Array> edge_time_;
  int64_t node_time_unsorted_row_ = -1;
  int64_t edge_time_unsorted_row_ = -1;
  Orientation orientation_ = Orientation::kIn;
  int64_t num_nodes_ = 0;
  int64_t num_edges_ = 0;
  const int64_t* indptr_data_ = nullptr;
  const void* indices_data_ = nullptr;
  const int64_t* edge_ids_data_ = nullptr;
  bool narrow_ = true;
};

// Options of build_csr.
struct CsrBuildOptions {
  // Number of nodes; when absent, max id + 1 (0 for no edges).
  std::optional<int64_t> num_nodes;
  Orientation orientation = Orientation::kIn;
  // Also add every edge reversed; a reversed edge keeps the edge id of its input edge.
  bool symmetrize = false;
  bool drop_self_loops = false;
  // Keep one edge per (row, neighbor): the one with the smallest edge id.
  bool drop_duplicates = false;
  // Store edge ids (position in the input COO). When false, edge ids are CSR positions.
  bool keep_edge_ids = true;
  // Force int64 indices even for small graphs (tests; graphs that will grow).
  bool force_int64_indices = false;
};

// Builds a Csr from a COO edge list: edge i goes from src[i] to dst[i]. `src` and `dst` are int32
// or int64 arrays of equal length; `weights` (optional) is float32 of the same length. Each row's
// neighbors come out sorted by (neighbor, edge id). Parallel (counting sort); deterministic for
// any thread count. Throws ValueError for mismatched lengths or dtypes and bad weights,
// IndexError for a negative id or one >= num_nodes, naming the edge position and value.
Csr build_csr(const Array& src, const Array& dst,
              const std::optional<Array>& weights = std::nullopt,
              const CsrBuildOptions& options = {});

// Which timestamps order a row in sort_rows_by_time.
enum class TimeKind : uint8_t { kEdge, kNode };

// The same graph with each row's entries stably sorted by time (edge time, or the neighbor's
// node time): indices, edge ids, weights and edge times are permuted together, and edge ids are
// stored (the CSR positions move, so edge id == position would no longer hold). Rows already
// sorted are copied as they are. ValueError naming the missing array when the graph has no
// times of that kind. Parallel over rows; deterministic.
Csr sort_rows_by_time(const Csr& graph, TimeKind kind);

// ValueError unless `time` is a 1-d int64 host array of `expected` entries (one per `per`,
// "node" or "edge"), naming `what` and what was given: the check of every time array.
void check_time_array(const Array& time, int64_t expected, std::string_view what, const char* per);

}  // namespace volley
