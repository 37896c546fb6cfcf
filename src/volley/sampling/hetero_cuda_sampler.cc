// The CUDA branch of HeteroNeighborSampler (every build): graph placement (CudaHeteroGraph),
// argument checks on the host with the CPU sampler's messages, and dispatch to the driver
// behind internal/cuda_sampler_backend.h (cuda/hetero_driver.h).
#include <unordered_map>

#include "volley/core/error.h"
#include "volley/sampling/cuda_graph.h"
#include "volley/sampling/hetero_sampler.h"
#include "volley/sampling/internal/cuda_sampler_backend.h"
#include "volley/sampling/internal/hetero_seeds.h"

namespace volley {

CudaHeteroGraph CudaHeteroGraph::place(const HeteroGraph& graph, const CudaGraphOptions& options) {
  CudaHeteroGraph placed;
  placed.node_types_ = graph.node_types();
  placed.edge_types_ = graph.edge_types();
  for (int e = 0; e < graph.num_edge_types(); ++e)
    placed.edges_.push_back(CudaGraph::place(graph.edges(e), options));
  placed.mode_ = options.mode;
  placed.device_ = options.device;
  placed.defined_ = true;
  return placed;
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
