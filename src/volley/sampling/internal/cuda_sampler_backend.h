// volley/sampling/internal/cuda_sampler_backend.h — the seam between the CUDA front ends of
// NeighborSampler (cuda_sampler.cc) and HeteroNeighborSampler (hetero_cuda_sampler.cc) —
// argument checks, graph placement; every build — and their kernels: one driver per sampler
// (cuda/neighbor_driver.h, cuda/hetero_driver.h, both over cuda/hop_steps.h) and one set of
// bodies (cuda/neighbor_kernels.h) run by
//   * the CUDA executor (cuda/neighbor_sampler.cu in CUDA builds; cuda_sampler_stub.cc
//     otherwise, which throws): make_cuda_sampler_backend;
//   * the host executor (cuda/neighbor_sampler_host.cc, in builds that found the CUDA
//     toolkit's CCCL headers, VOLLEY_WITH_GPU_HOST): make_host_sampler_backend. Its "device"
//     pointers are host pointers; the gpu-host tests run it against the CPU sampler.
//
// Plain types only: nvcc cannot compile fmt (hence array.h / error.h), so the .cu side sees
// raw device pointers and Buffers, and throws through helpers defined in .cc files.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "volley/core/buffer.h"
#include "volley/core/internal/host_executor.h"
#include "volley/sampling/internal/pick.h"

namespace volley {
struct NeighborSamplerOptions;  // neighbor_sampler.h (not for nvcc: it includes fmt)
}

namespace volley::sampling_internal {

// The part of the pick rule that the options decide, the same at every hop (replacement, and
// any new rule's settings); a driver adds each hop's fanout, stream seed, hop and batch. Defined
// beside the options' checks (neighbor_sampler.cc), so a new pick rule's option reaches both GPU
// drivers without touching them.
PickRule pick_rule_of(const NeighborSamplerOptions& options);

// A placed graph as the kernels read it (device or pinned pointers).
struct DeviceGraphView {
  const int64_t* indptr = nullptr;
  const void* indices = nullptr;  // int32 or int64
  bool indices_are_32bit = true;
  const int64_t* edge_ids = nullptr;  // null: CSR positions
  const float* weights = nullptr;     // null: unweighted sampling
  int64_t num_nodes = 0;              // disjoint sampling's tree size
  // Temporal sampling (rows sorted by the time in use): one of these, else both null.
  const int64_t* edge_time = nullptr;  // [E], CSR order
  const int64_t* node_time = nullptr;  // [N]
};

struct BackendOptions {
  std::span<const int64_t> fanouts;
  PickRule rule;  // pick_rule_of(options)
  uint64_t seed = 0;
  bool disjoint = false;  // each seed a tree of its own (keys root * num_nodes + node)
  // Temporal sampling (implies disjoint): one host time per seed, and the strategy.
  std::span<const int64_t> seed_times = {};
  bool last = false;
};

// The arrays of one batch: `count` int64 at the front of each buffer.
struct BackendResult {
  Buffer nodes, rows, cols, edge_ids;
  Buffer batch;  // disjoint: the tree of each node (num_nodes int64), else empty
  int64_t num_nodes = 0;
  int64_t num_edges = 0;
  std::vector<int64_t> nodes_per_hop;  // hops + 1
  std::vector<int64_t> edges_per_hop;  // hops
};

// The working memory and kernel driver of one NeighborSampler on a GPU.
class CudaSamplerBackend {
 public:
  virtual ~CudaSamplerBackend() = default;
  // Arguments were checked by the front end (options against the graph, at least one seed,
  // seeds in range and distinct).
  virtual void sample(const DeviceGraphView& graph, std::span<const int64_t> seeds,
                      const BackendOptions& options, uint64_t batch_index, void* stream,
                      BackendResult& out) = 0;
};

std::unique_ptr<CudaSamplerBackend> make_cuda_sampler_backend(int device);
// The same driver on host threads; `stream` is ignored and the graph view holds host pointers.
// Result buffers are host memory.
std::unique_ptr<CudaSamplerBackend> make_host_sampler_backend(
    const internal::HostExecutorOptions& options = {});

// The backend of a sampler on `device`: the host executor's when the host-executor device
// stands in for CUDA (cuda_emulated(), core/cuda_device.h), the CUDA executor's otherwise.
std::unique_ptr<CudaSamplerBackend> make_sampler_backend(int device);

// --- heterogeneous sampling (HeteroNeighborSampler on a CudaHeteroGraph) --------------------
// A heterogeneous graph as the kernels read it: per edge type (graph order) its placed Csr and
// the node types (indices into the node type list) of its source and destination.
struct HeteroDeviceView {
  std::vector<DeviceGraphView> edge_types;  // weights set only where sampling is weighted
  std::vector<int> src_type, dst_type;
  int num_node_types = 0;
};

struct HeteroBackendOptions {
  std::span<const std::vector<int64_t>> fanouts;  // per edge type, one per hop (same length)
  std::span<const uint64_t> stream_seeds;         // per edge type: edge_type_stream_seed
  PickRule rule;                                  // pick_rule_of(options)
  // Disjoint sampling (tree_size > 0): each seed a tree of its own, numbered across the node
  // types; seed i of node type t roots tree roots[t] + i. A node of tree r is the key
  // r * tree_size + id, so tree_size is at least every node type's count (one size for all
  // types) and trees * tree_size fits in int64 (checked by the front end).
  int64_t tree_size = 0;
  std::span<const int64_t> roots = {};  // per node type (disjoint)
  // Temporal sampling (implies disjoint): one host time per tree, and the strategy. An edge
  // type is timed where its view has edge_time or node_time; the others admit every entry.
  std::span<const int64_t> seed_times = {};
  bool last = false;
};

// One batch in host memory, laid out as HeteroSampledSubgraph (hetero_sampler.h) without
// num_seeds: per node type nodes / nodes_per_hop (disjoint: batch, each node's tree; else
// empty), per edge type rows / cols / edge_ids / edges_per_hop.
struct HeteroBackendResult {
  std::vector<std::vector<int64_t>> nodes, nodes_per_hop, batch;
  std::vector<std::vector<int64_t>> rows, cols, edge_ids, edges_per_hop;
};

// The working memory and driver of one HeteroNeighborSampler on a GPU (cuda/hetero_driver.h).
class CudaHeteroSamplerBackend {
 public:
  virtual ~CudaHeteroSamplerBackend() = default;
  // Arguments were checked by the front end: seeds[t] holds the seeds of node type t (in range;
  // distinct unless disjoint; empty for a type without seeds), fanouts resolved per edge type,
  // tree numbering and seed times as HeteroBackendOptions says. The result is
  // complete in host memory on return (the call waits for `stream`).
  virtual void sample(const HeteroDeviceView& graph,
                      std::span<const std::span<const int64_t>> seeds,
                      const HeteroBackendOptions& options, uint64_t batch_index, void* stream,
                      HeteroBackendResult& out) = 0;
};

std::unique_ptr<CudaHeteroSamplerBackend> make_cuda_hetero_sampler_backend(int device);
std::unique_ptr<CudaHeteroSamplerBackend> make_host_hetero_sampler_backend(
    const internal::HostExecutorOptions& options = {});
// As make_sampler_backend: the host executor's on the emulated device, else CUDA's.
std::unique_ptr<CudaHeteroSamplerBackend> make_hetero_sampler_backend(int device);

// ValueError "batch reached N nodes, more than the 2^31 ..." (the CPU sampler's message).
[[noreturn]] void throw_batch_too_large(int64_t nodes);

}  // namespace volley::sampling_internal
