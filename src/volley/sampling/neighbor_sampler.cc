// Argument checks and dispatch of the sampler: the CPU kernel is in cpu/neighbor_kernel.h, the
// CUDA branch of NeighborSampler (and CudaGraph) in cuda_sampler.cc.
#include "volley/sampling/neighbor_sampler.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "volley/core/cuda_device.h"
#include "volley/sampling/cpu/neighbor_kernel.h"
#include "volley/sampling/internal/cuda_sampler_backend.h"

namespace volley {

SamplerScratch::SamplerScratch() = default;
SamplerScratch::~SamplerScratch() = default;
SamplerScratch::SamplerScratch(SamplerScratch&&) noexcept = default;
SamplerScratch& SamplerScratch::operator=(SamplerScratch&&) noexcept = default;

struct SamplerScratch::State : cpu::NeighborScratch {};

struct SamplerScratchAccess {
  static cpu::NeighborScratch& get(SamplerScratch& scratch) {
    if (!scratch.state_) scratch.state_ = std::make_unique<SamplerScratch::State>();
    return *scratch.state_;
  }
};

const char* subgraph_type_name(SubgraphType type) {
  switch (type) {
    case SubgraphType::kDirectional:
      return "directional";
    case SubgraphType::kBidirectional:
      return "bidirectional";
    case SubgraphType::kInduced:
      return "induced";
  }
  return "unknown";
}

SubgraphType subgraph_type_from_name(std::string_view name) {
  for (SubgraphType type :
       {SubgraphType::kDirectional, SubgraphType::kBidirectional, SubgraphType::kInduced}) {
    if (name == subgraph_type_name(type)) return type;
  }
  throw ValueError(fmt::format(
      "subgraph_type must be 'directional', 'bidirectional' or 'induced', got '{}'", name));
}

const char* temporal_strategy_name(TemporalStrategy strategy) {
  return strategy == TemporalStrategy::kLast ? "last" : "uniform";
}

TemporalStrategy temporal_strategy_from_name(std::string_view name) {
  if (name == "uniform") return TemporalStrategy::kUniform;
  if (name == "last") return TemporalStrategy::kLast;
  throw ValueError(fmt::format("temporal_strategy must be 'uniform' or 'last', got '{}'", name));
}

void validate_sampler_options(const NeighborSamplerOptions& options, bool graph_has_weights) {
  VOLLEY_REQUIRE(options.fanouts_by_type.empty(), ValueError,
                 "fanouts per edge type ({} given, e.g. {}) need a heterogeneous graph; give one "
                 "fanout list for a homogeneous one",
                 options.fanouts_by_type.size(),
                 options.fanouts_by_type.empty() ? "" : options.fanouts_by_type[0].first.name());
  for (size_t hop = 0; hop < options.fanouts.size(); ++hop) {
    VOLLEY_REQUIRE(options.fanouts[hop] >= -1, ValueError,
                   "fanout {} at hop {} is invalid: use a count >= 0, or -1 for all neighbors",
                   options.fanouts[hop], hop);
  }
  VOLLEY_REQUIRE(!options.weighted || graph_has_weights, ValueError,
                 "weighted sampling needs edge weights, but the graph has none");
  VOLLEY_REQUIRE(options.fanouts.size() < 256, ValueError, "at most 255 hops are supported, got {}",
                 options.fanouts.size());
  VOLLEY_REQUIRE(!(options.disjoint && options.subgraph_type == SubgraphType::kInduced), ValueError,
                 "disjoint sampling does not support subgraph_type='induced'");
  if (options.time_source != TimeSource::kNone) {
    VOLLEY_REQUIRE(!options.weighted, ValueError,
                   "temporal sampling does not support weighted sampling yet");
    VOLLEY_REQUIRE(options.subgraph_type != SubgraphType::kInduced, ValueError,
                   "temporal sampling is disjoint and does not support subgraph_type='induced'");
  }
}

void validate_sampler_options(const Csr& graph, const NeighborSamplerOptions& options) {
  validate_sampler_options(options, graph.has_weights());
  if (options.time_source == TimeSource::kNone) return;
  const bool by_edge = options.time_source == TimeSource::kEdge;
  const char* what = by_edge ? "edge_time" : "node_time";
  VOLLEY_REQUIRE(by_edge ? graph.has_edge_time() : graph.has_node_time(), ValueError,
                 "temporal sampling by {} time needs the graph's {}, but it has none",
                 by_edge ? "edge" : "node", what);
  const int64_t unsorted =
      by_edge ? graph.first_row_unsorted_by_edge_time() : graph.first_row_unsorted_by_node_time();
  VOLLEY_REQUIRE(options.temporal_strategy != TemporalStrategy::kLast || unsorted < 0, ValueError,
                 "temporal_strategy='last' needs every row sorted by {}, but row {} is not; sort "
                 "the graph first (sort_rows_by_time, Graph.sort_by_time(), volley convert "
                 "--sort-by-time)",
                 what, unsorted);
}

namespace {

// A 1-d int64 host array over `values`, which `holder` keeps alive.
Array vector_array(const std::shared_ptr<HostSubgraph>& holder, std::vector<int64_t>& values) {
  Buffer buffer = Buffer::borrow(values.data(), values.size() * sizeof(int64_t), holder,
                                 /*writable=*/true, Location::kHost);
  return Array(std::move(buffer), DType::kInt64, {static_cast<int64_t>(values.size())});
}

}  // namespace

SampledSubgraph HostSubgraph::view(const std::shared_ptr<HostSubgraph>& holder) {
  SampledSubgraph out;
  out.nodes = vector_array(holder, holder->nodes);
  out.num_seeds = holder->num_seeds;
  out.rows = vector_array(holder, holder->rows);
  out.cols = vector_array(holder, holder->cols);
  out.edge_ids = vector_array(holder, holder->edge_ids);
  out.nodes_per_hop = holder->nodes_per_hop;
  out.edges_per_hop = holder->edges_per_hop;
  if (!holder->batch.empty()) {
    out.batch = vector_array(holder, holder->batch);
  }
  return out;
}

SampledSubgraph HostSubgraph::finish() {
  auto holder = std::make_shared<HostSubgraph>(std::move(*this));
  *this = HostSubgraph();
  return view(holder);
}

SampledSubgraph SampledSubgraph::to_host(void* stream) const {
  if (location() != Location::kCuda) return *this;
  HostSubgraph host;
  host.num_seeds = num_seeds;
  host.nodes_per_hop = nodes_per_hop;
  host.edges_per_hop = edges_per_hop;
  auto copy = [&](const Array& from, std::vector<int64_t>& to) {
    to.resize(static_cast<size_t>(from.defined() ? from.numel() : 0));
    if (!to.empty()) cuda_copy(to.data(), from.raw_data(), to.size() * sizeof(int64_t), stream);
  };
  copy(nodes, host.nodes);
  copy(rows, host.rows);
  copy(cols, host.cols);
  copy(edge_ids, host.edge_ids);
  copy(batch, host.batch);
  if (!host.nodes.empty()) cuda_synchronize(stream);
  return host.finish();
}

void sample_neighbors(const Csr& graph, std::span<const int64_t> seeds,
                      const NeighborSamplerOptions& options, uint64_t batch_index,
                      HostSubgraph& out, SamplerScratch* scratch) {
  VOLLEY_REQUIRE(options.time_source == TimeSource::kNone, ValueError,
                 "temporal sampling needs a time per seed (input_time / seed_times), got none");
  validate_sampler_options(graph, options);
  const auto borrowed = scratch != nullptr ? nullptr : cpu::borrow_scratch();
  cpu::sample_neighbors_cpu(graph, seeds, {}, options, batch_index,
                            borrowed ? *borrowed : SamplerScratchAccess::get(*scratch), out);
}

void sample_neighbors(const Csr& graph, std::span<const int64_t> seeds,
                      std::span<const int64_t> seed_times, const NeighborSamplerOptions& options,
                      uint64_t batch_index, HostSubgraph& out, SamplerScratch* scratch) {
  VOLLEY_REQUIRE(options.time_source != TimeSource::kNone, ValueError,
                 "seed times were given, but the options ask for no temporal sampling (set "
                 "time_source / time_attr)");
  VOLLEY_REQUIRE(seed_times.size() == seeds.size(), ValueError,
                 "seed_times has {} entries, but there are {} seeds (one time per seed)",
                 seed_times.size(), seeds.size());
  validate_sampler_options(graph, options);
  const auto borrowed = scratch != nullptr ? nullptr : cpu::borrow_scratch();
  cpu::sample_neighbors_cpu(graph, seeds, seed_times, options, batch_index,
                            borrowed ? *borrowed : SamplerScratchAccess::get(*scratch), out);
}

SampledSubgraph sample_neighbors(const Csr& graph, std::span<const int64_t> seeds,
                                 std::span<const int64_t> seed_times,
                                 const NeighborSamplerOptions& options, uint64_t batch_index,
                                 SamplerScratch* scratch) {
  HostSubgraph result;
  sample_neighbors(graph, seeds, seed_times, options, batch_index, result, scratch);
  return result.finish();
}

SampledSubgraph sample_neighbors(const Csr& graph, std::span<const int64_t> seeds,
                                 const NeighborSamplerOptions& options, uint64_t batch_index,
                                 SamplerScratch* scratch) {
  HostSubgraph result;
  sample_neighbors(graph, seeds, options, batch_index, result, scratch);
  return result.finish();
}

NeighborSampler::NeighborSampler(Csr graph, NeighborSamplerOptions options)
    : graph_(std::move(graph)),
      options_(std::move(options)),
      mutex_(std::make_unique<std::mutex>()) {
  VOLLEY_REQUIRE(graph_.indptr().defined(), ValueError,
                 "NeighborSampler needs a graph, got an empty (default) Csr");
  validate_sampler_options(graph_, options_);
}

NeighborSampler::~NeighborSampler() = default;
NeighborSampler::NeighborSampler(NeighborSampler&&) noexcept = default;
NeighborSampler& NeighborSampler::operator=(NeighborSampler&&) noexcept = default;

int64_t NeighborSampler::num_nodes() const {
  return on_cuda_ ? cuda_graph_.num_nodes() : graph_.num_nodes();
}

SampledSubgraph NeighborSampler::sample(std::span<const int64_t> seeds, uint64_t batch_index,
                                        void* stream) {
  if (on_cuda_) {
    VOLLEY_REQUIRE(options_.time_source == TimeSource::kNone, ValueError,
                   "temporal sampling needs a time per seed (input_time / seed_times), got none");
    return sample_cuda(seeds, {}, batch_index, stream);
  }
  // The sampler's scratch when it is free; a concurrent call borrows one.
  std::unique_lock lock(*mutex_, std::try_to_lock);
  return sample_neighbors(graph_, seeds, options_, batch_index,
                          lock.owns_lock() ? &scratch_ : nullptr);
}

SampledSubgraph NeighborSampler::sample(std::span<const int64_t> seeds,
                                        std::span<const int64_t> seed_times, uint64_t batch_index,
                                        void* stream) {
  if (on_cuda_) {
    VOLLEY_REQUIRE(options_.time_source != TimeSource::kNone, ValueError,
                   "seed times were given, but the options ask for no temporal sampling (set "
                   "time_source / time_attr)");
    return sample_cuda(seeds, seed_times, batch_index, stream);
  }
  std::unique_lock lock(*mutex_, std::try_to_lock);
  return sample_neighbors(graph_, seeds, seed_times, options_, batch_index,
                          lock.owns_lock() ? &scratch_ : nullptr);
}

void NeighborSampler::sample(std::span<const int64_t> seeds, uint64_t batch_index,
                             HostSubgraph& out) {
  VOLLEY_REQUIRE(!on_cuda_, ValueError,
                 "sampling into host vectors is the CPU sampler's; a CUDA sampler's batches are "
                 "device arrays (use sample(seeds, batch_index, stream))");
  std::unique_lock lock(*mutex_, std::try_to_lock);
  sample_neighbors(graph_, seeds, options_, batch_index, out,
                   lock.owns_lock() ? &scratch_ : nullptr);
}

void NeighborSampler::sample(std::span<const int64_t> seeds, std::span<const int64_t> seed_times,
                             uint64_t batch_index, HostSubgraph& out) {
  VOLLEY_REQUIRE(!on_cuda_, ValueError,
                 "sampling into host vectors is the CPU sampler's; a CUDA sampler's batches are "
                 "device arrays (use sample(seeds, seed_times, batch_index, stream))");
  std::unique_lock lock(*mutex_, std::try_to_lock);
  sample_neighbors(graph_, seeds, seed_times, options_, batch_index, out,
                   lock.owns_lock() ? &scratch_ : nullptr);
}

void sample_hop(const Csr& graph, int64_t first_node, std::span<const int64_t> targets, int hop,
                int64_t fanout, const NeighborSamplerOptions& options, uint64_t batch_index,
                HopSample& out, SamplerScratch* scratch) {
  VOLLEY_REQUIRE(options.time_source == TimeSource::kNone, ValueError,
                 "sample_hop without times cannot sample by time: pass HopTimes");
  VOLLEY_REQUIRE(fanout >= -1, ValueError,
                 "fanout {} at hop {} is invalid: use a count >= 0, or -1 for all neighbors",
                 fanout, hop);
  VOLLEY_REQUIRE(hop >= 0 && hop < 256, ValueError, "hop {} out of range [0, 256)", hop);
  VOLLEY_REQUIRE(!options.weighted || graph.has_weights(), ValueError,
                 "weighted sampling needs edge weights, but the graph has none");
  const auto borrowed = scratch != nullptr ? nullptr : cpu::borrow_scratch();
  cpu::sample_hop_cpu(graph, first_node, targets, hop, fanout, options, batch_index, HopTimes{},
                      borrowed ? *borrowed : SamplerScratchAccess::get(*scratch), out);
}

namespace {

// A hop by node time reads node_time[neighbor] for the rows of `targets` held here: each of
// their neighbors must be below node_time's size (IndexError naming the first that is not).
// Targets outside the rows are left to the kernel's IndexError.
void check_hop_node_times(const Csr& graph, int64_t first_node, std::span<const int64_t> targets,
                          size_t size) {
  const int64_t* indptr = graph.indptr().data<int64_t>();
  for (const int64_t target : targets) {
    const int64_t row = target - first_node;
    if (row < 0 || row >= graph.num_nodes()) continue;
    for (int64_t k = indptr[row]; k < indptr[row + 1]; ++k) {
      const int64_t neighbor = graph.neighbor(k);
      VOLLEY_REQUIRE(neighbor >= 0 && static_cast<size_t>(neighbor) < size, IndexError,
                     "neighbor {} of target {} has no node time: node_time has {} entries",
                     neighbor, target, size);
    }
  }
}

}  // namespace

void sample_hop(const Csr& graph, int64_t first_node, std::span<const int64_t> targets, int hop,
                int64_t fanout, const NeighborSamplerOptions& options, uint64_t batch_index,
                const HopTimes& times, HopSample& out, SamplerScratch* scratch) {
  VOLLEY_REQUIRE(options.time_source != TimeSource::kNone, ValueError,
                 "sample_hop was given times, but options.time_source is none");
  VOLLEY_REQUIRE(times.target_times.size() == targets.size(), ValueError,
                 "target_times has {} entries, but there are {} targets (one time each)",
                 times.target_times.size(), targets.size());
  VOLLEY_REQUIRE(!options.weighted, ValueError, "temporal sampling cannot be weighted");
  if (options.time_source == TimeSource::kEdge) {
    VOLLEY_REQUIRE(times.edge_time.size() == static_cast<size_t>(graph.num_edges()), ValueError,
                   "edge_time has {} entries, but the graph held here has {} edges",
                   times.edge_time.size(), graph.num_edges());
  } else {
    VOLLEY_REQUIRE(!times.node_time.empty(), ValueError,
                   "sampling by node time needs node_time (indexed by global id), got none");
    check_hop_node_times(graph, first_node, targets, times.node_time.size());
  }
  VOLLEY_REQUIRE(times.rows_sorted || options.temporal_strategy != TemporalStrategy::kLast,
                 ValueError, "temporal_strategy 'last' needs rows sorted by time");
  VOLLEY_REQUIRE(fanout >= -1, ValueError,
                 "fanout {} at hop {} is invalid: use a count >= 0, or -1 for all neighbors",
                 fanout, hop);
  VOLLEY_REQUIRE(hop >= 0 && hop < 256, ValueError, "hop {} out of range [0, 256)", hop);
  HopTimes checked = times;
  if (options.time_source == TimeSource::kEdge) {
    checked.node_time = {};
  } else {
    checked.edge_time = {};
  }
  const auto borrowed = scratch != nullptr ? nullptr : cpu::borrow_scratch();
  cpu::sample_hop_cpu(graph, first_node, targets, hop, fanout, options, batch_index, checked,
                      borrowed ? *borrowed : SamplerScratchAccess::get(*scratch), out);
}

namespace {

// temporal_degrees over one index width: chunks of rows searched together, as the kernel does.
template <typename Index>
void temporal_degrees_of(const Csr& graph, const cpu::TimeFilter& filter,
                         std::span<const int64_t> nodes, std::span<const int64_t> times,
                         int64_t* out) {
  constexpr size_t kChunk = 256;
  const int64_t* indptr = graph.indptr().data<int64_t>();
  const Index* indices = graph.indices().template data<Index>();
  std::vector<cpu::PrefixQuery> queries;
  for (size_t begin = 0; begin < nodes.size(); begin += kChunk) {
    const size_t end = std::min(nodes.size(), begin + kChunk);
    queries.clear();
    for (size_t i = begin; i < end; ++i) {
      const int64_t row = nodes[i];
      queries.push_back({indptr[row], indptr[row + 1] - indptr[row], times[i]});
    }
    if (filter.sorted) {
      cpu::admissible_prefixes<Index>(filter, indices, queries, out + begin);
      continue;
    }
    for (size_t i = begin; i < end; ++i) {
      const cpu::PrefixQuery& q = queries[i - begin];
      out[i] = cpu::prefix_search::count_admissible(filter, indices, q.first, 0, q.degree, q.limit);
    }
  }
}

}  // namespace

void temporal_degrees(const Csr& graph, std::span<const int64_t> nodes,
                      std::span<const int64_t> times, TimeKind kind, std::span<int64_t> out) {
  VOLLEY_REQUIRE(times.size() == nodes.size() && out.size() == nodes.size(), ValueError,
                 "temporal_degrees: {} nodes, {} times and {} outputs (one each)", nodes.size(),
                 times.size(), out.size());
  const bool by_edge = kind == TimeKind::kEdge;
  VOLLEY_REQUIRE(by_edge ? graph.has_edge_time() : graph.has_node_time(), ValueError,
                 "temporal_degrees by {} time: the graph has no {}", by_edge ? "edge" : "node",
                 by_edge ? "edge_time" : "node_time");
  for (size_t i = 0; i < nodes.size(); ++i) {
    VOLLEY_REQUIRE(nodes[i] >= 0 && nodes[i] < graph.num_nodes(), IndexError,
                   "node {} at position {} is out of range [0, {})", nodes[i], i,
                   graph.num_nodes());
  }
  const cpu::TimeFilter filter = cpu::graph_time_filter(graph, by_edge, times.data());
  if (graph.index_dtype() == DType::kInt32) {
    temporal_degrees_of<int32_t>(graph, filter, nodes, times, out.data());
  } else {
    temporal_degrees_of<int64_t>(graph, filter, nodes, times, out.data());
  }
}

namespace sampling_internal {

PickRule pick_rule_of(const NeighborSamplerOptions& options) {
  PickRule rule;
  rule.replace = options.replace;
  return rule;
}

}  // namespace sampling_internal
}  // namespace volley
