// volley/sampling/cuda_graph.h — a graph placed where a CUDA GPU samples it.
//
// NeighborSampler (neighbor_sampler.h) samples on the GPU when it is given a CudaGraph, and
// returns exactly what the CPU sampler returns for the same (seeds, options, batch index). Two
// placements, the modes Quiver users know:
//   GPU  indptr, indices, edge ids and weights in device memory: fastest; the graph must fit;
//   UVA  indptr in device memory; indices, edge ids and weights in pinned (page-locked) host
//        memory that the kernels read directly over PCIe/NVLink (unified virtual addressing):
//        graphs larger than the GPU, at the cost of host-link bandwidth. Times (temporal
//        sampling) go to device memory when they fit (CudaGraphOptions::times).
//
//   CudaGraph placed = CudaGraph::place(graph, {.mode = CudaSamplingMode::kUva, .device = 0});
//   NeighborSampler sampler(placed, {.fanouts = {15, 10, 5}, .seed = 42});
//   CudaStream stream = CudaStream::create(0);                    // volley/core/cuda_device.h
//   SampledSubgraph batch = sampler.sample(seeds, /*batch_index=*/7, stream.handle());
//   // batch.nodes / rows / cols / edge_ids: int64 device arrays, ready in stream order;
//   SampledSubgraph same = batch.to_host(stream.handle());   // == sample_neighbors(graph, ...)
//
// A heterogeneous graph is placed edge type by edge type (CudaHeteroGraph::place below) and
// sampled by HeteroNeighborSampler (hetero_sampler.h) the same way.
//
// Errors: ValueError for a bad mode or device; RuntimeError in a build without CUDA ("this
// build of Volley has no CUDA support"), for a missing device, or a failed allocation or copy.
// Thread safety: a CudaGraph is immutable and may be shared by any number of samplers.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "volley/core/array.h"
#include "volley/graph/csr.h"
#include "volley/graph/hetero_graph.h"

namespace volley {

enum class CudaSamplingMode {
  kGpu,  // the whole graph in device memory
  kUva,  // indptr on the device; indices, edge ids, weights in pinned host memory
};

// "GPU" or "UVA" (any case) → the mode; ValueError naming the text otherwise. Works in every
// build (no CUDA call).
CudaSamplingMode parse_cuda_sampling_mode(std::string_view name);
// "GPU" / "UVA".
std::string_view cuda_sampling_mode_name(CudaSamplingMode mode);

// Where UVA mode puts temporal sampling's times (Csr::node_time / edge_time). Each target's
// search for its admissible neighbors reads several times of its row one after another, each a
// round trip over the host link when they are in pinned memory (temporal UVA sampling then runs
// at about 0.4 of untimed UVA sampling on an H200); in device memory it is as fast as GPU mode's.
// GPU mode always puts them in device memory.
enum class TimePlacement {
  kAuto,         // device memory when they take at most half the device's free memory, else pinned
  kDevice,       // device memory (RuntimeError when it does not fit)
  kWithIndices,  // where the mode puts the indices (pinned host memory in UVA mode)
};

struct CudaGraphOptions {
  CudaSamplingMode mode = CudaSamplingMode::kGpu;
  int device = 0;  // CUDA device ordinal
  TimePlacement times = TimePlacement::kAuto;
  // Every array in memory other processes of this machine open by handle (core/ipc.h): the
  // placed graph pickles by handle, and a DDP rank that opens it samples from the same copy.
  bool shareable = false;
};

// A placed graph's arrays: what CudaGraph::arrays returns and CudaGraph::from_arrays takes (the
// parts another process opens by IPC handle). The row indices say where sorting by time stops
// (-1: every row sorted).
struct CudaGraphArrays {
  Array indptr, indices;
  std::optional<Array> edge_ids, weights, node_time, edge_time;
  int64_t first_row_unsorted_by_node_time = -1;
  int64_t first_row_unsorted_by_edge_time = -1;

  // Calls f(array) for indptr, indices and each optional array present.
  template <typename Self, typename F>
  static void each(Self& self, F&& f) {
    f(self.indptr);
    f(self.indices);
    for (auto* array : {&self.edge_ids, &self.weights, &self.node_time, &self.edge_time}) {
      if (*array) f(**array);
    }
  }
  template <typename F>
  void for_each(F&& f) const {
    each(*this, f);
  }
  template <typename F>
  void for_each(F&& f) {
    each(*this, f);
  }
};

// A Csr placed for CUDA sampling. Copies only what is not already where the mode needs it (an
// array already in device memory of that device, or in pinned memory, is shared, not copied).
class CudaGraph {
 public:
  CudaGraph() = default;  // undefined: defined() == false

  // Places `graph` (ValueError for an out-of-range mode or a negative device; RuntimeError for
  // a build without CUDA, a missing device, or a failed allocation or copy). Synchronous.
  static CudaGraph place(const Csr& graph, const CudaGraphOptions& options = {});

  bool defined() const { return arrays_.indptr.defined(); }
  // Where the graph lives decides the mode: indices in device memory → GPU, pinned → UVA.
  CudaSamplingMode mode() const;
  int device() const { return device_; }
  int64_t num_nodes() const { return defined() ? arrays_.indptr.numel() - 1 : 0; }
  int64_t num_edges() const { return defined() ? arrays_.indices.numel() : 0; }
  DType index_dtype() const { return arrays_.indices.dtype(); }
  bool has_edge_ids() const { return arrays_.edge_ids.has_value(); }
  bool has_weights() const { return arrays_.weights.has_value(); }
  // int64 [N + 1], device memory.
  const Array& indptr() const { return arrays_.indptr; }
  // int32/int64 [E]; device memory (GPU) or pinned host memory (UVA). Same for the next two.
  const Array& indices() const { return arrays_.indices; }
  const std::optional<Array>& edge_ids() const { return arrays_.edge_ids; }
  const std::optional<Array>& weights() const { return arrays_.weights; }
  // Temporal sampling's times (Csr::node_time / edge_time), placed as CudaGraphOptions::times
  // says, and the first row not sorted by each (-1: all sorted; the CUDA sampler needs sorted
  // rows).
  const std::optional<Array>& node_time() const { return arrays_.node_time; }
  const std::optional<Array>& edge_time() const { return arrays_.edge_time; }
  int64_t first_row_unsorted_by_node_time() const {
    return arrays_.first_row_unsorted_by_node_time;
  }
  int64_t first_row_unsorted_by_edge_time() const {
    return arrays_.first_row_unsorted_by_edge_time;
  }
  // Bytes of the graph in device memory / in pinned host memory.
  size_t device_bytes() const;
  size_t pinned_bytes() const;

  // The placed arrays (shared, not copied).
  const CudaGraphArrays& arrays() const { return arrays_; }
  // The graph of placed arrays: indptr int64 [N + 1] in device memory; indices int32/int64 [E],
  // edge ids int64 [E] and weights float32 [E] all in device memory of indptr's device (GPU) or
  // all in pinned memory (UVA); times in either. Nothing is copied. ValueError naming the array
  // that is elsewhere or whose length disagrees.
  static CudaGraph from_arrays(CudaGraphArrays arrays);
  // Whether every array is shareable by IPC handle (core/ipc.h).
  bool shareable() const;
  // This graph with every array shareable: itself when it is, else the arrays that are not are
  // copied once into shareable memory of the same location (core/ipc.h shareable_array).
  CudaGraph to_shareable() const;

 private:
  CudaGraphArrays arrays_;
  int device_ = 0;
};

// A HeteroGraph placed for CUDA sampling: every edge type's Csr placed as CudaGraph::place
// places it (same mode and device for all), with the type names and node counts. The host
// graph is not kept. Errors as CudaGraph::place. Immutable; may be shared by samplers.
//
//   CudaHeteroGraph placed = CudaHeteroGraph::place(hetero, {.mode = CudaSamplingMode::kUva});
//   HeteroNeighborSampler sampler(placed, {.fanouts = {15, 10}, .seed = 42});
//
// A temporal sampler places the timed graph, attach_hetero_times(hetero, options, times)
// (hetero_sampler.h): each timed edge type's entry times as its edge_time, rows sorted by them.
//
// Shared between processes as the homogeneous CudaGraph is, edge type by edge type: place with
// CudaGraphOptions::shareable (or to_shareable()), hand each edge type's arrays over by handle,
// and from_parts rebuilds the graph around the opened CudaGraphs (no copy).
class CudaHeteroGraph {
 public:
  CudaHeteroGraph() = default;  // undefined: defined() == false
  static CudaHeteroGraph place(const HeteroGraph& graph, const CudaGraphOptions& options = {});
  // The graph of placed edge types (one CudaGraph per edge type, in `edge_types` order), all
  // in `mode` on `device`. Nothing is copied. ValueError naming the edge type whose graph is
  // undefined, placed elsewhere, or whose row count is not its destination type's node count,
  // or whose end is not a node type; and for a count mismatch of the lists.
  static CudaHeteroGraph from_parts(std::vector<NodeTypeInfo> node_types,
                                    std::vector<EdgeType> edge_types, std::vector<CudaGraph> edges,
                                    CudaSamplingMode mode, int device);
  // Whether every edge type's arrays are shareable by IPC handle (core/ipc.h).
  bool shareable() const;
  // This graph with every edge type shareable (CudaGraph::to_shareable: the arrays that are
  // not are copied once; itself when all are).
  CudaHeteroGraph to_shareable() const;
  // Bytes of all edge types in device memory / in pinned host memory.
  size_t device_bytes() const;
  size_t pinned_bytes() const;

  bool defined() const { return defined_; }
  CudaSamplingMode mode() const { return mode_; }
  int device() const { return device_; }
  int num_node_types() const { return static_cast<int>(node_types_.size()); }
  int num_edge_types() const { return static_cast<int>(edge_types_.size()); }
  const std::vector<NodeTypeInfo>& node_types() const { return node_types_; }
  const std::vector<EdgeType>& edge_types() const { return edge_types_; }
  // The index of node type `name`; ValueError naming it and the known types (as HeteroGraph).
  int node_type_index(std::string_view name) const;
  int64_t num_nodes(int node_type) const { return node_types_.at(node_type).num_nodes; }
  // Edge type `edge_type` (graph order), placed.
  const CudaGraph& edges(int edge_type) const { return edges_.at(edge_type); }

 private:
  std::vector<NodeTypeInfo> node_types_;
  std::vector<EdgeType> edge_types_;
  std::vector<CudaGraph> edges_;
  CudaSamplingMode mode_ = CudaSamplingMode::kGpu;
  int device_ = 0;
  bool defined_ = false;
};

}  // namespace volley
