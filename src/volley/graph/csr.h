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
//
//   Csr graph = build_csr(src, dst, {.num_nodes = n, .symmetrize = true});
//   for (int64_t k = graph.begin(v); k < graph.end(v); ++k) ... graph.neighbor(k) ...
//
// A Csr is immutable after construction and safe to read from many threads. Copies share arrays.
#pragma once

#include <cstdint>
#include <optional>

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

  // The same edges in the other orientation (a new graph; edge ids and weights follow their
  // edges). In the result, each row's neighbors are sorted. It has max(num_nodes, 1 + largest
  // neighbor) rows (more than num_nodes only for a bipartite Csr, e.g. a HeteroGraph edge type).
  Csr transposed() const;

 private:
  Array indptr_;
  Array indices_;
  std::optional<Array> edge_ids_;
  std::optional<Array> weights_;
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

}  // namespace volley
