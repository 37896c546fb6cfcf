// volley/sampling/cuda_sampler.h — neighbor sampling on a CUDA GPU, bit-identical to the CPU.
//
// The same function as sample_neighbors (neighbor_sampler.h): the same options, the same
// semantics, and the same result bit for bit for the same (seeds, options, batch index) — the
// CPU sampler is the oracle the CUDA tests compare against. Two modes, chosen by where the
// graph lives (CudaGraph::place puts it there):
//   GPU  indptr, indices, edge ids and weights in device memory: fastest; the graph must fit;
//   UVA  indptr in device memory; indices, edge ids and weights in pinned (page-locked) host
//        memory that the kernels read directly over PCIe/NVLink (unified virtual addressing):
//        graphs larger than the GPU, at the cost of host-link bandwidth.
//
//   CudaGraph placed = CudaGraph::place(graph, {.mode = CudaSamplingMode::kUva, .device = 0});
//   CudaNeighborSampler sampler(placed, {.fanouts = {15, 10, 5}, .seed = 42});
//   CudaStream stream = CudaStream::create(0);                    // volley/core/cuda_device.h
//   DeviceSampledSubgraph batch = sampler.sample(seeds, /*batch_index=*/7, stream.handle());
//   // batch.nodes / rows / cols / edge_ids: int64 device arrays, ready in stream order;
//   SampledSubgraph same = batch.to_host(stream.handle());   // == sample_neighbors(graph, ...)
//
// Streams: every copy and kernel of a call is queued on the caller's stream, passed as an
// opaque `void*` holding a cudaStream_t (nullptr: the legacy default stream). sample() waits
// on that stream twice per hop (for the hop's edge and new-node counts, which size the next
// step), so it returns when the counts are known; the last kernels filling the output arrays may
// still be queued: use the arrays in stream order, or synchronize the stream first.
//
// Memory: the sampler keeps its working memory (a global→local hash table, scan buffers, the
// output arrays) between calls and grows it when a batch needs more; a steady stream of
// batches makes no allocation. Output arrays are slices of that memory: while the caller holds
// a batch's arrays, the next call allocates fresh ones instead of overwriting them.
//
// Errors (thrown on the host before any CUDA work, with the messages of the CPU sampler):
// ValueError for a bad mode or device, an empty fanout list, a fanout < -1, more than 255 hops,
// `weighted` on a graph without weights, a duplicate seed; IndexError for a seed out of range;
// ValueError when a batch reaches 2^31 nodes. RuntimeError for any failing CUDA call or kernel
// launch (with the CUDA error string and the file:line of the call), and in a build without
// CUDA ("this build of Volley has no CUDA support").
//
// Thread safety: a CudaGraph is immutable and may be shared by any number of samplers. A
// CudaNeighborSampler serialises its own calls (it owns one workspace); use one per thread (or
// per stream) for concurrency.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "volley/core/array.h"
#include "volley/graph/csr.h"
#include "volley/sampling/neighbor_sampler.h"

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

struct CudaGraphOptions {
  CudaSamplingMode mode = CudaSamplingMode::kGpu;
  int device = 0;  // CUDA device ordinal
};

// A Csr placed for CUDA sampling. Copies only what is not already where the mode needs it (an
// array already in device memory of that device, or in pinned memory, is shared, not copied).
class CudaGraph {
 public:
  CudaGraph() = default;  // undefined: defined() == false

  // Places `graph` (ValueError for an out-of-range mode or a negative device; RuntimeError for
  // a build without CUDA, a missing device, or a failed allocation or copy). Synchronous.
  static CudaGraph place(const Csr& graph, const CudaGraphOptions& options = {});

  bool defined() const { return indptr_.defined(); }
  // Where the graph lives decides the mode: indices in device memory → GPU, pinned → UVA.
  CudaSamplingMode mode() const;
  int device() const { return device_; }
  int64_t num_nodes() const { return num_nodes_; }
  int64_t num_edges() const { return num_edges_; }
  DType index_dtype() const { return indices_.dtype(); }
  bool has_edge_ids() const { return edge_ids_.has_value(); }
  bool has_weights() const { return weights_.has_value(); }
  // int64 [N + 1], device memory.
  const Array& indptr() const { return indptr_; }
  // int32/int64 [E]; device memory (GPU) or pinned host memory (UVA). Same for the next two.
  const Array& indices() const { return indices_; }
  const std::optional<Array>& edge_ids() const { return edge_ids_; }
  const std::optional<Array>& weights() const { return weights_; }
  // Bytes of the graph in device memory / in pinned host memory.
  size_t device_bytes() const;
  size_t pinned_bytes() const;

 private:
  Array indptr_, indices_;
  std::optional<Array> edge_ids_, weights_;
  int device_ = 0;
  int64_t num_nodes_ = 0;
  int64_t num_edges_ = 0;
};

// One sampled batch with its arrays in device memory (SampledSubgraph's fields, same meaning).
struct DeviceSampledSubgraph {
  Array nodes;  // int64 [num nodes], global ids, seeds first
  int64_t num_seeds = 0;
  Array rows;                          // int64 [num edges], local index of each edge's target
  Array cols;                          // int64 [num edges], local index of each edge's neighbor
  Array edge_ids;                      // int64 [num edges]
  std::vector<int64_t> nodes_per_hop;  // host; size hops + 1
  std::vector<int64_t> edges_per_hop;  // host; size hops

  // Copies the arrays to the host on `stream` and waits for it: exactly what sample_neighbors
  // returns for the same arguments.
  SampledSubgraph to_host(void* stream = nullptr) const;
};

namespace sampling_internal {
class CudaSamplerBackend;
}

class CudaNeighborSampler {
 public:
  // Checks `options` against `graph` (ValueError as above; no CUDA call), keeps both. The
  // working memory is allocated by the first sample().
  CudaNeighborSampler(CudaGraph graph, NeighborSamplerOptions options);
  ~CudaNeighborSampler();
  CudaNeighborSampler(CudaNeighborSampler&&) noexcept;
  CudaNeighborSampler& operator=(CudaNeighborSampler&&) noexcept;

  // Samples one batch on `stream` (see the header comment). `seeds` are host int64 ids,
  // distinct, in [0, num_nodes); checked on the host before any CUDA work.
  DeviceSampledSubgraph sample(std::span<const int64_t> seeds, uint64_t batch_index,
                               void* stream = nullptr);

  const CudaGraph& graph() const { return graph_; }
  const NeighborSamplerOptions& options() const { return options_; }

 private:
  CudaGraph graph_;
  NeighborSamplerOptions options_;
  std::unique_ptr<sampling_internal::CudaSamplerBackend> backend_;
};

}  // namespace volley
