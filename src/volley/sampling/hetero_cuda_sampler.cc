// The CUDA branch of HeteroNeighborSampler (every build): graph placement (CudaHeteroGraph),
// argument checks on the host with the CPU sampler's messages, and dispatch to the driver
// behind internal/cuda_sampler_backend.h (cuda/hetero_driver.h).
#include <algorithm>
#include <limits>
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

// One batch's seeds as the driver takes them: per node type its ids and the tree of its first
// seed (trees numbered by position among all seeds, the groups in the order given); temporal:
// the time of each tree.
struct BatchSeeds {
  std::vector<std::span<const int64_t>> ids;
  std::vector<int64_t> roots, times;
  int64_t trees = 0;
};

// The seeds per node type (graph order), checked as the CPU sampler checks them (its messages:
// distinct unless disjoint; like it, an untimed sampler ignores seed times).
BatchSeeds seeds_by_type(const CudaHeteroGraph& graph, const std::vector<HeteroSeeds>& seeds,
                         const HeteroSamplerOptions& options, const HeteroTimes& times) {
  const auto types = static_cast<size_t>(graph.num_node_types());
  const bool disjoint = options.disjoint || options.time_source != TimeSource::kNone;
  const auto node_time = sampling_internal::seed_node_times(graph, options, times);
  BatchSeeds out{.ids = std::vector<std::span<const int64_t>>(types), .roots = {}, .times = {}};
  out.roots.assign(types, 0);
  std::vector<bool> given(types, false);
  std::unordered_map<int64_t, size_t> position;
  for (const HeteroSeeds& group : seeds) {
    const int type = sampling_internal::claim_seed_type(graph, group, given);
    const int64_t n = graph.num_nodes(type);
    position.clear();
    for (size_t i = 0; i < group.ids.size(); ++i) {
      sampling_internal::check_seed_id(group, i, n);
      if (disjoint) continue;
      const int64_t id = group.ids[i];
      const auto [it, inserted] = position.emplace(id, i);
      VOLLEY_REQUIRE(inserted, ValueError,
                     "duplicate seed {} of node type '{}' at positions {} and {}", id,
                     group.node_type, it->second, i);
    }
    out.ids[static_cast<size_t>(type)] = group.ids;
    out.roots[static_cast<size_t>(type)] = out.trees;
    out.trees += static_cast<int64_t>(group.ids.size());
    if (options.time_source != TimeSource::kNone)
      sampling_internal::append_seed_times(group, type, options.time_source, node_time, out.times);
  }
  return out;
}

// Disjoint sampling's tree size: one for every node type, the largest count, so that the keys
// tree * size + id of `trees` trees fit in int64 (ValueError otherwise).
int64_t tree_size_of(const CudaHeteroGraph& graph, int64_t trees) {
  int64_t size = 1;
  for (const NodeTypeInfo& type : graph.node_types()) size = std::max(size, type.num_nodes);
  VOLLEY_REQUIRE(trees <= std::numeric_limits<int64_t>::max() / size, ValueError,
                 "disjoint sampling on a GPU numbers node v of tree r as r * {} + v (the largest "
                 "node type's count): {} trees pass the int64 range; use fewer seeds per batch",
                 size, trees);
  return size;
}

// Per edge type (graph order): whether temporal sampling constrains it, as on the CPU
// (attach_hetero_times): by node time, a source type with node times; by edge time, edge times
// given for it or carried by its placed graph.
std::vector<bool> timed_edge_types(const CudaHeteroGraph& graph,
                                   const HeteroSamplerOptions& options, const HeteroTimes& times) {
  std::vector<bool> timed(static_cast<size_t>(graph.num_edge_types()), false);
  if (options.time_source == TimeSource::kNone) return timed;
  const auto node_time = sampling_internal::seed_node_times(graph, options, times);
  for (size_t e = 0; e < timed.size(); ++e) {
    const EdgeType& type = graph.edge_types()[e];
    if (options.time_source == TimeSource::kNode) {
      timed[e] = node_time[static_cast<size_t>(graph.node_type_index(type.src))] != nullptr;
    } else {
      timed[e] = graph.edges(static_cast<int>(e)).edge_time().has_value() ||
                 std::any_of(times.edge_time.begin(), times.edge_time.end(),
                             [&](const auto& entry) { return entry.first == type; });
    }
  }
  return timed;
}

// The times' checks on a placed graph (ValueError): the CPU sampler's checks of the options and
// of the node times (seeds default to them), and every timed edge type placed with its entries'
// times, rows sorted by them — the graph placed from attach_hetero_times(graph, options, times).
void check_placed_times(const CudaHeteroGraph& graph, const HeteroSamplerOptions& options,
                        const HeteroTimes& times) {
  if (!sampling_internal::check_time_options(options, times)) return;
  std::vector<bool> given(static_cast<size_t>(graph.num_node_types()), false);
  for (const auto& [name, time] : times.node_time) {
    const int type = graph.node_type_index(name);
    VOLLEY_REQUIRE(!given[static_cast<size_t>(type)], ValueError,
                   "node time of node type '{}' is given twice", name);
    given[static_cast<size_t>(type)] = true;
    check_time_array(time, graph.num_nodes(type), fmt::format("node time of node type '{}'", name),
                     "node");
  }
  VOLLEY_REQUIRE(options.time_source == TimeSource::kEdge || !times.node_time.empty(), ValueError,
                 "temporal sampling by node time needs the time of at least one node type, got "
                 "none");
  for (const auto& [type, time] : times.edge_time) {
    VOLLEY_REQUIRE(std::find(graph.edge_types().begin(), graph.edge_types().end(), type) !=
                       graph.edge_types().end(),
                   ValueError, "edge time of edge type {}, which the graph does not have",
                   type.name());
  }
  const std::vector<bool> timed = timed_edge_types(graph, options, times);
  for (size_t e = 0; e < timed.size(); ++e) {
    if (!timed[e]) continue;
    const CudaGraph& csr = graph.edges(static_cast<int>(e));
    const std::string name = graph.edge_types()[e].name();
    VOLLEY_REQUIRE(csr.edge_time().has_value(), ValueError,
                   "edge type {} is sampled by time, but its placed graph has no entry times; "
                   "place the timed graph, attach_hetero_times(graph, options, times)",
                   name);
    VOLLEY_REQUIRE(csr.first_row_unsorted_by_edge_time() < 0, ValueError,
                   "edge type {}: the CUDA sampler samples by time over rows sorted by time, but "
                   "row {} is not; place attach_hetero_times(graph, options, times)",
                   name, csr.first_row_unsorted_by_edge_time());
  }
}

// The kernels' view of the placed graph; weights where the options weigh and the type has them,
// entry times where `timed`.
sampling_internal::HeteroDeviceView device_view(const CudaHeteroGraph& graph, bool weighted,
                                                const std::vector<bool>& timed) {
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
    if (timed[static_cast<size_t>(e)]) edges.edge_time = csr.edge_time()->data<int64_t>();
    view.edge_types.push_back(edges);
    const EdgeType& type = graph.edge_types()[static_cast<size_t>(e)];
    view.src_type.push_back(graph.node_type_index(type.src));
    view.dst_type.push_back(graph.node_type_index(type.dst));
  }
  return view;
}

}  // namespace

HeteroNeighborSampler::HeteroNeighborSampler(CudaHeteroGraph graph, HeteroSamplerOptions options,
                                             HeteroTimes times)
    : options_(std::move(options)),
      times_(std::move(times)),
      mutex_(std::make_unique<std::mutex>()),
      cuda_graph_(std::move(graph)) {
  fanouts_ = resolve_hetero_fanouts(cuda_graph_.edge_types(), options_);  // first: no graph needed
  VOLLEY_REQUIRE(cuda_graph_.defined(), ValueError,
                 "HeteroNeighborSampler on a GPU needs a placed graph (CudaHeteroGraph::place), "
                 "got an empty one");
  check_placed_times(cuda_graph_, options_, times_);
}

HeteroNeighborSampler::~HeteroNeighborSampler() = default;
HeteroNeighborSampler::HeteroNeighborSampler(HeteroNeighborSampler&&) noexcept = default;
HeteroNeighborSampler& HeteroNeighborSampler::operator=(HeteroNeighborSampler&&) noexcept = default;

HeteroSampledSubgraph HeteroNeighborSampler::sample_cuda(const std::vector<HeteroSeeds>& seeds,
                                                         uint64_t seed, uint64_t batch_index,
                                                         void* stream) {
  const BatchSeeds by_type = seeds_by_type(cuda_graph_, seeds, options_, times_);
  std::vector<uint64_t> stream_seeds;
  for (const EdgeType& type : cuda_graph_.edge_types())
    stream_seeds.push_back(edge_type_stream_seed(seed, type));
  const bool temporal = options_.time_source != TimeSource::kNone;
  const bool disjoint = options_.disjoint || temporal;
  sampling_internal::HeteroBackendOptions backend_options{
      .fanouts = fanouts_,
      .stream_seeds = stream_seeds,
      .rule = sampling_internal::pick_rule_of(options_),
      .tree_size = disjoint ? tree_size_of(cuda_graph_, by_type.trees) : 0,
      .roots = by_type.roots,
      .seed_times = by_type.times,
      .last = options_.temporal_strategy == TemporalStrategy::kLast};
  const auto view =
      device_view(cuda_graph_, options_.weighted, timed_edge_types(cuda_graph_, options_, times_));
  sampling_internal::HeteroBackendResult result;
  {
    std::lock_guard lock(*mutex_);  // one workspace per sampler
    if (!backend_) backend_ = sampling_internal::make_hetero_sampler_backend(cuda_graph_.device());
    backend_->sample(view, by_type.ids, backend_options, batch_index, stream, result);
  }
  HeteroSampledSubgraph out;
  out.nodes = std::move(result.nodes);
  out.nodes_per_hop = std::move(result.nodes_per_hop);
  out.rows = std::move(result.rows);
  out.cols = std::move(result.cols);
  out.edge_ids = std::move(result.edge_ids);
  out.edges_per_hop = std::move(result.edges_per_hop);
  out.batch = std::move(result.batch);
  for (const auto& group : by_type.ids) out.num_seeds.push_back(static_cast<int64_t>(group.size()));
  return out;
}

}  // namespace volley
