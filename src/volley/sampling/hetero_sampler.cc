// The CPU heterogeneous neighbor sampler (contract in hetero_sampler.h). The per-target pick
// rules are the homogeneous sampler's (internal/pick.h), not a copy of them.
#include "volley/sampling/hetero_sampler.h"

#include <algorithm>
#include <optional>

#include "volley/core/error.h"
#include "volley/sampling/cpu/neighbor_kernel.h"
#include "volley/sampling/internal/cuda_sampler_backend.h"  // HeteroNeighborSampler::backend_
#include "volley/sampling/internal/hetero_seeds.h"

namespace volley {

// The typed CPU kernel's working memory (cpu/neighbor_kernel.h): one map per node type.
struct HeteroSamplerScratch::State : cpu::NeighborScratch {};

HeteroSamplerScratch::HeteroSamplerScratch() : state_(std::make_unique<State>()) {}
HeteroSamplerScratch::~HeteroSamplerScratch() = default;
HeteroSamplerScratch::HeteroSamplerScratch(HeteroSamplerScratch&&) noexcept = default;
HeteroSamplerScratch& HeteroSamplerScratch::operator=(HeteroSamplerScratch&&) noexcept = default;

int64_t HeteroSampledSubgraph::total_nodes() const {
  int64_t total = 0;
  for (const auto& list : nodes) total += static_cast<int64_t>(list.size());
  return total;
}

int64_t HeteroSampledSubgraph::total_edges() const {
  int64_t total = 0;
  for (const auto& list : rows) total += static_cast<int64_t>(list.size());
  return total;
}

namespace {

constexpr size_t kMaxHops = 255;

void check_fanout_list(const std::vector<int64_t>& list, const std::string& what) {
  VOLLEY_REQUIRE(list.size() <= kMaxHops, ValueError, "{}: {} hops, at most {} are supported", what,
                 list.size(), kMaxHops);
  for (size_t h = 0; h < list.size(); ++h) {
    VOLLEY_REQUIRE(list[h] >= -1, ValueError,
                   "{}: fanout {} at hop {} must be >= -1 (-1: all neighbors)", what, list[h], h);
  }
}

// Each group's seeds checked (type known and given once, ids in range) as the kernel's seed
// groups; temporal: the time of each seed (its tree) onto scratch.seed_times.
std::vector<TypedSeeds> typed_seeds(const HeteroGraph& graph, const std::vector<HeteroSeeds>& seeds,
                                    const HeteroSamplerOptions& options,
                                    const std::vector<const int64_t*>& node_time,
                                    cpu::NeighborScratch& scratch) {
  std::vector<TypedSeeds> groups;
  std::vector<bool> given(static_cast<size_t>(graph.num_node_types()), false);
  scratch.seed_times.clear();
  for (const HeteroSeeds& group : seeds) {
    const int type = sampling_internal::claim_seed_type(graph, group, given);
    for (size_t i = 0; i < group.ids.size(); ++i) {
      sampling_internal::check_seed_id(group, i, graph.num_nodes(type));
    }
    groups.push_back({.type = type, .ids = group.ids, .name = group.node_type});
    if (options.time_source == TimeSource::kNone) continue;
    sampling_internal::append_seed_times(group, type, options.time_source, node_time,
                                         scratch.seed_times);
  }
  return groups;
}

// Each edge type as the kernel reads it: its rows, fanouts, stream seed, weights and (temporal,
// when the type is timed) its entries' times, sorted within each row by attach_hetero_times.
std::vector<cpu::TypedEdges> typed_edges(const HeteroGraph& graph,
                                         const std::vector<std::vector<int64_t>>& fanouts,
                                         const HeteroSamplerOptions& options, uint64_t seed,
                                         const int64_t* seed_times) {
  std::vector<cpu::TypedEdges> edges(static_cast<size_t>(graph.num_edge_types()));
  const bool temporal = options.time_source != TimeSource::kNone;
  for (size_t e = 0; e < edges.size(); ++e) {
    const EdgeType& type = graph.edge_types()[e];
    const Csr& csr = graph.edges(static_cast<int>(e));
    auto& view = edges[e];
    view.csr = &csr;
    view.src = graph.node_type_index(type.src);
    view.dst = graph.node_type_index(type.dst);
    view.stream_seed = edge_type_stream_seed(seed, type);
    view.fanouts = fanouts[e].data();
    view.weighted = options.weighted && csr.has_weights();
    if (temporal && csr.has_edge_time() && seed_times != nullptr) {
      view.filter.seed_times = seed_times;
      view.filter.edge_time = csr.edge_time()->data<int64_t>();
      view.filter.sorted = csr.first_row_unsorted_by_edge_time() < 0;
      view.filter.last = options.temporal_strategy == TemporalStrategy::kLast;
    }
  }
  return edges;
}

}  // namespace

uint64_t edge_type_stream_seed(uint64_t seed, const EdgeType& type) {
  uint64_t hash = 0xcbf29ce484222325ull;  // FNV-1a of the name
  for (const char c : type.name()) {
    hash ^= static_cast<uint8_t>(c);
    hash *= 0x100000001b3ull;
  }
  return seed ^ (hash * 0x9e3779b97f4a7c15ull);
}

std::vector<std::vector<int64_t>> resolve_hetero_fanouts(const HeteroGraph& graph,
                                                         const HeteroSamplerOptions& options) {
  return resolve_hetero_fanouts(graph.edge_types(), options);
}

std::vector<std::vector<int64_t>> resolve_hetero_fanouts(const std::vector<EdgeType>& edge_types,
                                                         const HeteroSamplerOptions& options) {
  VOLLEY_REQUIRE(options.subgraph_type == SubgraphType::kDirectional, ValueError,
                 "the typed sampler returns the sampled edges (subgraph_type 'directional'); "
                 "induced and bidirectional subgraphs are built from them by the loader");
  check_fanout_list(options.fanouts, "fanouts");
  const bool no_hops = options.fanouts.empty() && options.fanouts_by_type.empty();
  std::vector<std::vector<int64_t>> resolved(edge_types.size());
  std::vector<bool> given(resolved.size(), false);
  for (const auto& [type, list] : options.fanouts_by_type) {
    const auto found = std::find(edge_types.begin(), edge_types.end(), type);
    const int index = found == edge_types.end() ? -1 : static_cast<int>(found - edge_types.begin());
    if (index < 0) {
      std::string known;
      for (const EdgeType& edge_type : edge_types)
        known += (known.empty() ? "" : ", ") + edge_type.name();
      VOLLEY_REQUIRE(false, ValueError,
                     "fanouts for edge type {}, which the graph does not have (edge types: {})",
                     type.name(), known);
    }
    VOLLEY_REQUIRE(!given[static_cast<size_t>(index)], ValueError,
                   "fanouts for edge type {} are given twice", type.name());
    check_fanout_list(list, "fanouts of edge type " + type.name());
    resolved[static_cast<size_t>(index)] = list;
    given[static_cast<size_t>(index)] = true;
  }
  for (size_t e = 0; e < resolved.size(); ++e) {
    if (given[e]) continue;
    const std::string name = edge_types[e].name();
    VOLLEY_REQUIRE(no_hops || !options.fanouts.empty(), ValueError,
                   "no fanouts for edge type {} (give one list per edge type, or a default "
                   "list for the missing ones; 0 samples none)",
                   name);
    resolved[e] = options.fanouts;
  }
  for (size_t e = 1; e < resolved.size(); ++e) {
    VOLLEY_REQUIRE(
        resolved[e].size() == resolved[0].size(), ValueError,
        "the number of hops must be the same across all edge types: {} has {}, {} has {}",
        edge_types[0].name(), resolved[0].size(), edge_types[e].name(), resolved[e].size());
  }
  return resolved;
}

namespace {
// Fills `out` (its vectors cleared, their capacity kept). `graph`: the timed graph.
void sample_resolved(const HeteroGraph& graph, const std::vector<HeteroSeeds>& seeds,
                     const std::vector<std::vector<int64_t>>& fanouts,
                     const HeteroSamplerOptions& options, const HeteroTimes& times, uint64_t seed,
                     uint64_t batch_index, HeteroSamplerScratch::State& scratch,
                     HeteroSampledSubgraph& out) {
  const size_t types = static_cast<size_t>(graph.num_node_types());
  const size_t edge_types = static_cast<size_t>(graph.num_edge_types());
  const bool disjoint = options.disjoint || options.time_source != TimeSource::kNone;
  const auto groups = typed_seeds(
      graph, seeds, options, sampling_internal::seed_node_times(graph, options, times), scratch);
  const auto edges = typed_edges(graph, fanouts, options, seed,
                                 scratch.seed_times.empty() ? nullptr : scratch.seed_times.data());
  TypedLists& lists = scratch.lists;
  point_at(out, types, edge_types, disjoint, lists);
  std::vector<int64_t> num_nodes(types);
  for (size_t t = 0; t < types; ++t) num_nodes[t] = graph.num_nodes(static_cast<int>(t));
  const size_t hops = fanouts.empty() ? 0 : fanouts.front().size();
  cpu::sample_typed_cpu(edges, num_nodes, groups, hops, disjoint, options, batch_index, scratch,
                        lists);
}
}  // namespace

HeteroSampledSubgraph sample_hetero_neighbors(const HeteroGraph& graph,
                                              const std::vector<HeteroSeeds>& seeds,
                                              const HeteroSamplerOptions& options,
                                              uint64_t batch_index, HeteroSamplerScratch* scratch,
                                              const HeteroTimes& times) {
  HeteroSampledSubgraph out;
  sample_hetero_neighbors(graph, seeds, options, batch_index, out, scratch, times);
  return out;
}

void sample_hetero_neighbors(const HeteroGraph& graph, const std::vector<HeteroSeeds>& seeds,
                             const HeteroSamplerOptions& options, uint64_t batch_index,
                             HeteroSampledSubgraph& out, HeteroSamplerScratch* scratch,
                             const HeteroTimes& times) {
  const auto fanouts = resolve_hetero_fanouts(graph, options);
  // Untimed calls read `graph` itself (no copy per batch).
  const bool timed = options.time_source != TimeSource::kNone || !times.node_time.empty() ||
                     !times.edge_time.empty();
  std::optional<HeteroGraph> attached;
  if (timed) attached = attach_hetero_times(graph, options, times);
  HeteroSamplerScratch local;
  sample_resolved(attached ? *attached : graph, seeds, fanouts, options, times, options.seed,
                  batch_index, (scratch != nullptr ? *scratch : local).state(), out);
}

HeteroNeighborSampler::HeteroNeighborSampler(HeteroGraph graph, HeteroSamplerOptions options,
                                             HeteroTimes times)
    : graph_(std::move(graph)),
      timed_(attach_hetero_times(graph_, options, times)),
      options_(std::move(options)),
      times_(std::move(times)),
      fanouts_(resolve_hetero_fanouts(graph_, options_)),
      mutex_(std::make_unique<std::mutex>()) {}

HeteroSampledSubgraph HeteroNeighborSampler::sample(const std::vector<HeteroSeeds>& seeds,
                                                    uint64_t batch_index, void* stream) {
  return sample_with_seed(seeds, options_.seed, batch_index, stream);
}

HeteroSampledSubgraph HeteroNeighborSampler::sample_with_seed(const std::vector<HeteroSeeds>& seeds,
                                                              uint64_t seed, uint64_t batch_index,
                                                              void* stream) {
  if (on_cuda()) return sample_cuda(seeds, seed, batch_index, stream);
  HeteroSampledSubgraph out;
  std::unique_lock lock(*mutex_, std::try_to_lock);
  HeteroSamplerScratch local;
  sample_resolved(timed_, seeds, fanouts_, options_, times_, seed, batch_index,
                  (lock.owns_lock() ? scratch_ : local).state(), out);
  return out;
}

void HeteroNeighborSampler::sample_with_seed(const std::vector<HeteroSeeds>& seeds, uint64_t seed,
                                             uint64_t batch_index, HeteroSampledSubgraph& out,
                                             HeteroSamplerScratch& scratch, void* stream) {
  if (on_cuda()) {
    out = sample_cuda(seeds, seed, batch_index, stream);
    return;
  }
  sample_resolved(timed_, seeds, fanouts_, options_, times_, seed, batch_index, scratch.state(),
                  out);
}

const std::vector<NodeTypeInfo>& HeteroNeighborSampler::node_types() const {
  return on_cuda() ? cuda_graph_.node_types() : graph_.node_types();
}

const std::vector<EdgeType>& HeteroNeighborSampler::edge_types() const {
  return on_cuda() ? cuda_graph_.edge_types() : graph_.edge_types();
}

int64_t HeteroNeighborSampler::num_edges(int edge_type) const {
  return on_cuda() ? cuda_graph_.edges(edge_type).num_edges() : graph_.edges(edge_type).num_edges();
}

}  // namespace volley
