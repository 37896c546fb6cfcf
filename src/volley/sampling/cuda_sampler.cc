// The CUDA branch of NeighborSampler (every build): argument checks on the host, graph
// placement (CudaGraph), and dispatch to the kernels behind internal/cuda_sampler_backend.h.
#include "volley/sampling/cuda_graph.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <string>
#include <unordered_map>

#include "volley/core/cuda_device.h"
#include "volley/core/error.h"
#include "volley/core/ipc.h"
#include "volley/sampling/internal/cuda_sampler_backend.h"
#include "volley/sampling/internal/cuda_sampler_checks.h"
#include "volley/sampling/neighbor_sampler.h"

namespace volley {
namespace {

[[noreturn]] void no_cuda_support() {
  throw RuntimeError(
      "CUDA neighbor sampling: this build of Volley has no CUDA support (built with "
      "VOLLEY_CUDA=OFF or without nvcc); use sample_neighbors on the CPU, or rebuild with CUDA");
}

bool valid_mode(CudaSamplingMode mode) {
  return mode == CudaSamplingMode::kGpu || mode == CudaSamplingMode::kUva;
}

// `array` in `location` (kCuda on `device`, or kPinnedHost), shareable by IPC handle when asked:
// shared when it is there already.
Array place_array(const Array& array, Location location, int device, bool shareable) {
  const Buffer& buffer = array.buffer();
  if (buffer.location() == location && (location != Location::kCuda || buffer.device() == device) &&
      (!shareable || ipc_shareable(buffer)))
    return array;
  const size_t bytes = std::max<size_t>(array.nbytes(), 1);
  Buffer placed = shareable                     ? allocate_shareable(bytes, location, device)
                  : location == Location::kCuda ? Buffer::allocate_device(bytes, device)
                                                : Buffer::allocate_pinned(bytes);
  if (location == Location::kPinnedHost && buffer.host_accessible()) {
    if (array.nbytes() > 0) std::memcpy(placed.data(), array.raw_data(), array.nbytes());
  } else {
    cuda_copy(placed.data(), array.raw_data(), array.nbytes(), nullptr);
  }
  return Array(placed, array.dtype(), array.shape());
}

// Where CudaGraphOptions::times puts the graph's times (`bulk`: where the mode puts indices).
Location time_location(const Csr& graph, const CudaGraphOptions& options, Location bulk) {
  switch (options.times) {
    case TimePlacement::kDevice:
      return Location::kCuda;
    case TimePlacement::kWithIndices:
      return bulk;
    case TimePlacement::kAuto:
      break;
  }
  if (bulk == Location::kCuda) return bulk;
  size_t bytes = 0;
  if (graph.node_time()) bytes += graph.node_time()->nbytes();
  if (graph.edge_time()) bytes += graph.edge_time()->nbytes();
  if (bytes == 0) return bulk;
  return bytes <= cuda_free_memory(options.device) / 2 ? Location::kCuda : bulk;
}

}  // namespace

CudaSamplingMode parse_cuda_sampling_mode(std::string_view name) {
  std::string upper(name);
  std::transform(upper.begin(), upper.end(), upper.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  if (upper == "GPU") return CudaSamplingMode::kGpu;
  if (upper == "UVA") return CudaSamplingMode::kUva;
  throw ValueError(fmt::format(
      "'{}' is not a CUDA sampling mode: use GPU (graph in device memory) or UVA (indices in "
      "pinned host memory)",
      name));
}

std::string_view cuda_sampling_mode_name(CudaSamplingMode mode) {
  return mode == CudaSamplingMode::kUva ? "UVA" : "GPU";
}

CudaGraph CudaGraph::place(const Csr& graph, const CudaGraphOptions& options) {
  VOLLEY_REQUIRE(valid_mode(options.mode), ValueError,
                 "CUDA sampling mode {} is not GPU ({}) or UVA ({})",
                 static_cast<int>(options.mode), static_cast<int>(CudaSamplingMode::kGpu),
                 static_cast<int>(CudaSamplingMode::kUva));
  VOLLEY_REQUIRE(options.device >= 0, ValueError, "CUDA device must be >= 0, got {}",
                 options.device);
  VOLLEY_REQUIRE(options.times == TimePlacement::kAuto || options.times == TimePlacement::kDevice ||
                     options.times == TimePlacement::kWithIndices,
                 ValueError, "time placement {} is not auto (0), device (1) or with-indices (2)",
                 static_cast<int>(options.times));
  VOLLEY_REQUIRE(graph.indptr().defined(), ValueError, "cannot place an empty (default) Csr");
  if (!cuda_built()) no_cuda_support();
  const int count = cuda_device_count();
  VOLLEY_REQUIRE(options.device < count, RuntimeError,
                 "CUDA device {} requested, but {} CUDA device(s) are visible", options.device,
                 count);
  const Location bulk =
      options.mode == CudaSamplingMode::kGpu ? Location::kCuda : Location::kPinnedHost;
  const auto place = [&](const std::optional<Array>& array, Location location) {
    return array ? std::optional(place_array(*array, location, options.device, options.shareable))
                 : std::nullopt;
  };
  const Location times = time_location(graph, options, bulk);
  CudaGraphArrays arrays{
      .indptr = *place(graph.indptr(), Location::kCuda),
      .indices = *place(graph.indices(), bulk),
      .edge_ids = place(graph.edge_ids(), bulk),
      .weights = place(graph.weights(), bulk),
      .node_time = place(graph.node_time(), times),
      .edge_time = place(graph.edge_time(), times),
      .first_row_unsorted_by_node_time = graph.first_row_unsorted_by_node_time(),
      .first_row_unsorted_by_edge_time = graph.first_row_unsorted_by_edge_time(),
  };
  cuda_synchronize(nullptr);  // the copies above ran on the legacy default stream
  return from_arrays(std::move(arrays));
}

CudaGraph CudaGraph::from_arrays(CudaGraphArrays arrays) {
  VOLLEY_REQUIRE(arrays.indptr.defined() && arrays.indptr.ndim() == 1 &&
                     arrays.indptr.numel() >= 1 && arrays.indptr.dtype() == DType::kInt64 &&
                     arrays.indptr.buffer().location() == Location::kCuda,
                 ValueError,
                 "a placed graph's indptr must be int64 [N + 1] in device memory, got {}",
                 arrays.indptr.defined() ? arrays.indptr.describe() : "none");
  const int device = arrays.indptr.buffer().device();
  const Location bulk = arrays.indices.buffer().location();
  const int64_t edges = arrays.indices.defined() ? arrays.indices.numel() : -1;
  const auto check = [&](const std::optional<Array>& array, const char* name, bool times) {
    if (!array) return;
    const Location where = array->buffer().location();
    const bool on_device = where == Location::kCuda && array->buffer().device() == device;
    const bool placed = times ? on_device || where == Location::kPinnedHost
                              : where == bulk && (on_device || where == Location::kPinnedHost);
    VOLLEY_REQUIRE(placed && array->ndim() == 1, ValueError,
                   "a placed graph's {} ({}, {} memory) must be one-dimensional in {} memory", name,
                   array->describe(), location_name(where),
                   times ? "device or pinned" : location_name(bulk));
    VOLLEY_REQUIRE(name == std::string_view("node_time") || array->numel() == edges, ValueError,
                   "a placed graph's {} has {} entries, but indices has {}", name, array->numel(),
                   edges);
  };
  VOLLEY_REQUIRE(
      arrays.indices.defined() && (bulk == Location::kCuda || bulk == Location::kPinnedHost),
      ValueError, "a placed graph's indices must be in device or pinned memory, got {}",
      arrays.indices.defined() ? location_name(bulk) : "none");
  check(arrays.indices, "indices", false);
  check(arrays.edge_ids, "edge_ids", false);
  check(arrays.weights, "weights", false);
  check(arrays.node_time, "node_time", true);
  check(arrays.edge_time, "edge_time", true);
  CudaGraph graph;
  graph.device_ = device;
  graph.arrays_ = std::move(arrays);
  return graph;
}

bool CudaGraph::shareable() const {
  bool shared = defined();
  arrays_.for_each([&](const Array& array) { shared = shared && ipc_shareable(array.buffer()); });
  return shared;
}

CudaGraph CudaGraph::to_shareable() const {
  VOLLEY_REQUIRE(defined(), ValueError, "an empty (default) CudaGraph cannot be shared");
  if (shareable()) return *this;
  CudaGraphArrays parts = arrays_;
  parts.for_each([](Array& array) { array = shareable_array(array); });
  return from_arrays(std::move(parts));
}

CudaSamplingMode CudaGraph::mode() const {
  return arrays_.indices.buffer().location() == Location::kCuda ? CudaSamplingMode::kGpu
                                                                : CudaSamplingMode::kUva;
}

namespace {
// Bytes of the graph's arrays in `location`.
size_t bytes_in(const CudaGraphArrays& arrays, Location location) {
  size_t bytes = 0;
  arrays.for_each([&](const Array& array) {
    if (array.buffer().location() == location) bytes += array.nbytes();
  });
  return bytes;
}
}  // namespace

size_t CudaGraph::device_bytes() const { return bytes_in(arrays_, Location::kCuda); }

size_t CudaGraph::pinned_bytes() const { return bytes_in(arrays_, Location::kPinnedHost); }

namespace sampling_internal {

// The CPU sampler's seed checks, with its messages (neighbor_kernel.cc).
void check_seeds(int64_t num_nodes, std::span<const int64_t> seeds, bool distinct) {
  std::unordered_map<int64_t, size_t> position;
  position.reserve(seeds.size());
  for (size_t i = 0; i < seeds.size(); ++i) {
    const int64_t seed = seeds[i];
    VOLLEY_REQUIRE(seed >= 0 && seed < num_nodes, IndexError,
                   "seed id {} at position {} out of range for a graph with {} nodes", seed, i,
                   num_nodes);
    if (!distinct) continue;
    const auto [it, inserted] = position.emplace(seed, i);
    VOLLEY_REQUIRE(inserted, ValueError,
                   "duplicate seed id {} at positions {} and {}; seeds must be distinct", seed,
                   it->second, i);
  }
}

// The CPU sampler's option checks (validate_sampler_options), on a placed graph's metadata.
// Fanout checks come first so they need no graph.
void check_cuda_sampler_options(const CudaGraph& graph, const NeighborSamplerOptions& options) {
  const bool temporal = options.time_source != TimeSource::kNone;
  VOLLEY_REQUIRE(options.subgraph_type == SubgraphType::kDirectional, ValueError,
                 "the CUDA sampler samples directional subgraphs only, got subgraph_type={}; use "
                 "the CPU sampler (mode=\"CPU\") for these",
                 subgraph_type_name(options.subgraph_type));
  if (!graph.defined()) {
    validate_sampler_options(options, /*graph_has_weights=*/true);  // the option checks alone
    throw ValueError(
        "NeighborSampler on a GPU needs a placed graph (CudaGraph::place), got an empty one");
  }
  validate_sampler_options(options, graph.has_weights());
  if (!temporal) return;
  const bool by_edge = options.time_source == TimeSource::kEdge;
  const char* what = by_edge ? "edge_time" : "node_time";
  VOLLEY_REQUIRE(by_edge ? graph.edge_time().has_value() : graph.node_time().has_value(),
                 ValueError, "temporal sampling by {} time needs the graph's {}, but it has none",
                 by_edge ? "edge" : "node", what);
  const int64_t unsorted =
      by_edge ? graph.first_row_unsorted_by_edge_time() : graph.first_row_unsorted_by_node_time();
  VOLLEY_REQUIRE(unsorted < 0, ValueError,
                 "the CUDA sampler samples by time over rows sorted by {}, but row {} is not; sort "
                 "the graph first (sort_rows_by_time, Graph.sort_by_time(), volley convert "
                 "--sort-by-time)",
                 what, unsorted);
}

std::unique_ptr<CudaSamplerBackend> make_sampler_backend(int device) {
#if defined(VOLLEY_WITH_GPU_HOST)
  if (cuda_emulated()) return make_host_sampler_backend();
#endif
  return make_cuda_sampler_backend(device);
}

std::unique_ptr<CudaHeteroSamplerBackend> make_hetero_sampler_backend(int device) {
#if defined(VOLLEY_WITH_GPU_HOST)
  if (cuda_emulated()) return make_host_hetero_sampler_backend();
#endif
  return make_cuda_hetero_sampler_backend(device);
}

void throw_batch_too_large(int64_t nodes) {
  throw ValueError(fmt::format(
      "batch reached {} nodes, more than the 2^31 a batch may hold; use fewer seeds or smaller "
      "fanouts",
      nodes));
}

}  // namespace sampling_internal

NeighborSampler::NeighborSampler(CudaGraph graph, NeighborSamplerOptions options)
    : cuda_graph_(std::move(graph)),
      on_cuda_(true),
      options_(std::move(options)),
      mutex_(std::make_unique<std::mutex>()) {
  sampling_internal::check_cuda_sampler_options(cuda_graph_, options_);
}

SampledSubgraph NeighborSampler::sample_cuda(std::span<const int64_t> seeds,
                                             std::span<const int64_t> seed_times,
                                             uint64_t batch_index, void* stream) {
  const bool temporal = options_.time_source != TimeSource::kNone;
  VOLLEY_REQUIRE(temporal || seed_times.empty(), ValueError,
                 "seed times were given, but the options ask for no temporal sampling (set "
                 "time_source / time_attr)");
  VOLLEY_REQUIRE(!temporal || seed_times.size() == seeds.size(), ValueError,
                 "seed_times has {} entries, but there are {} seeds (one time per seed)",
                 seed_times.size(), seeds.size());
  // Trees (disjoint sampling, temporal included): a seed may repeat, each grows its own.
  const bool trees = temporal || options_.disjoint;
  sampling_internal::check_seeds(cuda_graph_.num_nodes(), seeds, /*distinct=*/!trees);
  SampledSubgraph out;
  if (seeds.empty()) {  // the CPU sampler's empty result, without touching the device
    out.nodes = out.rows = out.cols = out.edge_ids = Array(Buffer(), DType::kInt64, {0});
    if (trees) out.batch = out.nodes;
    out.nodes_per_hop.assign(options_.fanouts.size() + 1, 0);
    out.edges_per_hop.assign(options_.fanouts.size(), 0);
    return out;
  }
  std::lock_guard lock(*mutex_);  // one workspace per sampler
  if (!backend_) backend_ = sampling_internal::make_sampler_backend(cuda_graph_.device());
  sampling_internal::DeviceGraphView view;
  view.indptr = cuda_graph_.indptr().data<int64_t>();
  view.indices = cuda_graph_.indices().raw_data();
  view.indices_are_32bit = cuda_graph_.index_dtype() == DType::kInt32;
  view.edge_ids = cuda_graph_.has_edge_ids() ? cuda_graph_.edge_ids()->data<int64_t>() : nullptr;
  view.weights = options_.weighted ? cuda_graph_.weights()->data<float>() : nullptr;
  view.num_nodes = cuda_graph_.num_nodes();
  if (options_.time_source == TimeSource::kEdge) {
    view.edge_time = cuda_graph_.edge_time()->data<int64_t>();
  } else if (options_.time_source == TimeSource::kNode) {
    view.node_time = cuda_graph_.node_time()->data<int64_t>();
  }
  sampling_internal::BackendResult result;
  backend_->sample(view, seeds,
                   {options_.fanouts, sampling_internal::pick_rule_of(options_), options_.seed,
                    trees, seed_times, options_.temporal_strategy == TemporalStrategy::kLast},
                   batch_index, stream, result);
  auto array = [](const Buffer& buffer, int64_t count) {
    return Array(buffer.slice(0, static_cast<size_t>(count) * sizeof(int64_t)), DType::kInt64,
                 {count});
  };
  out.num_seeds = static_cast<int64_t>(seeds.size());
  out.nodes = array(result.nodes, result.num_nodes);
  out.rows = array(result.rows, result.num_edges);
  out.cols = array(result.cols, result.num_edges);
  out.edge_ids = array(result.edge_ids, result.num_edges);
  out.nodes_per_hop = std::move(result.nodes_per_hop);
  out.edges_per_hop = std::move(result.edges_per_hop);
  if (!result.batch.empty()) out.batch = array(result.batch, result.num_nodes);
  return out;
}

}  // namespace volley
