// The CUDA branch of HeteroNeighborSampler (every build): graph placement (CudaHeteroGraph),
// argument checks on the host with the CPU sampler's messages, and dispatch to the driver
// behind internal/cuda_sampler_backend.h (cuda/hetero_driver.h).
#include <algorithm>
#include <unordered_map>

#include "volley/core/error.h"
#include "volley/sampling/cuda_graph.h"
#include "volley/sampling/hetero_sampler.h"
#include "volley/sampling/internal/cuda_sampler_backend.h"
#include "volley/sampling/internal/hetero_seeds.h"

namespace volley {

CudaHeteroGraph CudaHeteroGraph::place(const HeteroGraph& graph, const CudaGraphOptions& options) {
  std::vector<CudaGraph> edges;
  for (int e = 0; e < graph.num_edge_types(); ++e)
    edges.push_back(CudaGraph::place(graph.edges(e), options));
  return from_parts(graph.node_types(), graph.edge_types(), std::move(edges), options.mode,
                    options.device);
}

CudaHeteroGraph CudaHeteroGraph::from_parts(std::vector<NodeTypeInfo> node_types,
                                            std::vector<EdgeType> edge_types,
                                            std::vector<CudaGraph> edges, CudaSamplingMode mode,
                                            int device) {
  VOLLEY_REQUIRE(edges.size() == edge_types.size(), ValueError,
                 "{} placed graphs for {} edge types (one per edge type)", edges.size(),
                 edge_types.size());
  CudaHeteroGraph placed;
  placed.node_types_ = std::move(node_types);
  for (size_t e = 0; e < edges.size(); ++e) {
    const std::string name = edge_types[e].name();
    const CudaGraph& graph = edges[e];
    VOLLEY_REQUIRE(graph.defined() && graph.mode() == mode && graph.device() == device, ValueError,
                   "edge type {}: its graph is {}, not placed in {} mode on device {} as the "
                   "others",
                   name,
                   graph.defined()
                       ? fmt::format("in {} mode on device {}",
                                     cuda_sampling_mode_name(graph.mode()), graph.device())
                       : std::string("not placed"),
                   cuda_sampling_mode_name(mode), device);
    placed.node_type_index(edge_types[e].src);  // both ends known node types (ValueError)
    const int64_t rows = placed.num_nodes(placed.node_type_index(edge_types[e].dst));
    VOLLEY_REQUIRE(graph.num_nodes() == rows, ValueError,
                   "edge type {}: its graph has {} rows, its destination type '{}' {} nodes", name,
                   graph.num_nodes(), edge_types[e].dst, rows);
  }
  placed.edge_types_ = std::move(edge_types);
  placed.edges_ = std::move(edges);
  placed.mode_ = mode;
  placed.device_ = device;
  placed.defined_ = true;
  return placed;
}

bool CudaHeteroGraph::shareable() const {
  return defined_ && std::all_of(edges_.begin(), edges_.end(),
                                 [](const CudaGraph& graph) { return graph.shareable(); });
}

CudaHeteroGraph CudaHeteroGraph::to_shareable() const {
  VOLLEY_REQUIRE(defined_, ValueError, "an empty (default) CudaHeteroGraph cannot be shared");
  CudaHeteroGraph shared = *this;
  for (CudaGraph& graph : shared.edges_) graph = graph.to_shareable();
  return shared;
}

size_t CudaHeteroGraph::device_bytes() const {
  size_t bytes = 0;
  for (const CudaGraph& graph : edges_) bytes += graph.device_bytes();
  return bytes;
}

size_t CudaHeteroGraph::pinned_bytes() const {
  size_t bytes = 0;
  for (const CudaGraph& graph : edges_) bytes += graph.pinned_bytes();
  return bytes;
}

int CudaHeteroGraph::node_type_index(std::string_view name) const {
  std::string known;
  for (size_t t = 0; t < node_types_.size(); ++t) {
    if (node_types_[t].name == name) return static_cast<int>(t);
    known += (t == 0 ? "" : ", ") + node_types_[t].name;
  }
  throw ValueError(fmt::format("unknown node type '{}' (node types: {})", name, known));
}

namespace {

// The seeds per node type (graph order), checked as the CPU sampler checks them (its messages;
// like it, an untimed sampler ignores seed times).
std::vector<std::span<const int64_t>> seeds_by_type(const CudaHeteroGraph& graph,
                                                    const std::vector<HeteroSeeds>& seeds) {
  std::vector<std::span<const int64_t>> by_type(static_cast<size_t>(graph.num_node_types()));
  std::vector<bool> given(by_type.size(), false);
  std::unordered_map<int64_t, size_t> position;
  for (const HeteroSeeds& group : seeds) {
    const int type = sampling_internal::claim_seed_type(graph, group, given);
    const int64_t n = graph.num_nodes(type);
    position.clear();
    for (size_t i = 0; i < group.ids.size(); ++i) {
      sampling_internal::check_seed_id(group, i, n);
      const int64_t id = group.ids[i];
      const auto [it, inserted] = position.emplace(id, i);
      VOLLEY_REQUIRE(inserted, ValueError,
                     "duplicate seed {} of node type '{}' at positions {} and {}", id,
                     group.node_type, it->second, i);
    }
    by_type[static_cast<size_t>(type)] = group.ids;
  }
  return by_type;
}

// The kernels' view of the placed graph; weights where the options weigh and the type has them.
sampling_internal::HeteroDeviceView device_view(const CudaHeteroGraph& graph, bool weighted) {
  sampling_internal::HeteroDeviceView view;
  view.num_node_types = graph.num_node_types();
  for (int e = 0; e < graph.num_edge_types(); ++e) {
    const CudaGraph& csr = graph.edges(e);
    sampling_internal::DeviceGraphView edges;
    edges.indptr = csr.indptr().data<int64_t>();
    edges.indices = csr.indices().raw_data();
    edges.indices_are_32bit = csr.index_dtype() == DType::kInt32;
    edges.edge_ids = csr.has_edge_ids() ? csr.edge_ids()->data<int64_t>() : nullptr;
    edges.weights = weighted && csr.has_weights() ? csr.weights()->data<float>() : nullptr;
    edges.num_nodes = csr.num_nodes();
    view.edge_types.push_back(edges);
    const EdgeType& type = graph.edge_types()[static_cast<size_t>(e)];
    view.src_type.push_back(graph.node_type_index(type.src));
    view.dst_type.push_back(graph.node_type_index(type.dst));
  }
  return view;
}

}  // namespace

HeteroNeighborSampler::HeteroNeighborSampler(CudaHeteroGraph graph, HeteroSamplerOptions options)
    : options_(std::move(options)),
      mutex_(std::make_unique<std::mutex>()),
      cuda_graph_(std::move(graph)) {
  fanouts_ = resolve_hetero_fanouts(cuda_graph_.edge_types(), options_);  // first: no graph needed
  VOLLEY_REQUIRE(cuda_graph_.defined(), ValueError,
                 "HeteroNeighborSampler on a GPU needs a placed graph (CudaHeteroGraph::place), "
                 "got an empty one");
  VOLLEY_REQUIRE(!options_.disjoint && options_.time_source == TimeSource::kNone, ValueError,
                 "the CUDA heterogeneous sampler samples non-disjoint, untimed subgraphs only, "
                 "got disjoint={}, time_source={}; use the CPU sampler for these",
                 options_.disjoint, options_.time_source == TimeSource::kNone ? "none" : "set");
}

HeteroNeighborSampler::~HeteroNeighborSampler() = default;
HeteroNeighborSampler::HeteroNeighborSampler(HeteroNeighborSampler&&) noexcept = default;
HeteroNeighborSampler& HeteroNeighborSampler::operator=(HeteroNeighborSampler&&) noexcept = default;

HeteroSampledSubgraph HeteroNeighborSampler::sample_cuda(const std::vector<HeteroSeeds>& seeds,
                                                         uint64_t seed, uint64_t batch_index,
                                                         void* stream) {
  const auto by_type = seeds_by_type(cuda_graph_, seeds);
  std::vector<uint64_t> stream_seeds;
  for (const EdgeType& type : cuda_graph_.edge_types())
    stream_seeds.push_back(edge_type_stream_seed(seed, type));
  sampling_internal::HeteroBackendResult result;
  {
    std::lock_guard lock(*mutex_);  // one workspace per sampler
    if (!backend_) backend_ = sampling_internal::make_hetero_sampler_backend(cuda_graph_.device());
    backend_->sample(device_view(cuda_graph_, options_.weighted), by_type,
                     {fanouts_, stream_seeds, sampling_internal::pick_rule_of(options_)},
                     batch_index, stream, result);
  }
  HeteroSampledSubgraph out;
  out.nodes = std::move(result.nodes);
  out.nodes_per_hop = std::move(result.nodes_per_hop);
  out.rows = std::move(result.rows);
  out.cols = std::move(result.cols);
  out.edge_ids = std::move(result.edge_ids);
  out.edges_per_hop = std::move(result.edges_per_hop);
  for (const auto& group : by_type) out.num_seeds.push_back(static_cast<int64_t>(group.size()));
  return out;
}

}  // namespace volley
