// DistHeteroGraph::sample (hetero_client.h): the seeds checked and timed, then the distributed
// sampler of both clients (internal/service_view.h) over the typed service, the local part in
// worker mode sampled in-process.
#include "volley/dist/hetero_client.h"

#include <cstdint>
#include <vector>

#include "volley/dist/internal/hetero_client_state.h"
#include "volley/dist/internal/service_view.h"
#include "volley/dist/internal/wire.h"

namespace volley::dist {

// --- sampling ------------------------------------------------------------------------------

namespace {

// The time of each seed of `group` (node type `type`) onto `tree_times`: its given times, else
// (by node time) the seeds' own node times, from the local part's directory or their owners.
void add_seed_times(const DistHeteroGraph::State& state, const HeteroSamplerOptions& options,
                    const HeteroSeeds& group, size_t type, std::vector<int64_t>& tree_times) {
  if (!group.times.empty()) {
    VOLLEY_REQUIRE(group.times.size() == group.ids.size(), ValueError,
                   "seeds of node type '{}': {} times for {} seeds (one time per seed)",
                   group.node_type, group.times.size(), group.ids.size());
    tree_times.insert(tree_times.end(), group.times.begin(), group.times.end());
    return;
  }
  if (group.ids.empty()) return;
  const bool by_node = options.time_source == TimeSource::kNode;
  VOLLEY_REQUIRE(by_node && state.info.node_types[type].has_node_time, ValueError,
                 "seeds of node type '{}' need a time each (seed times / input_time): {}",
                 group.node_type,
                 by_node ? "the node type has no node time to default to"
                         : "sampling by edge time has no node time to default to");
  const size_t before = tree_times.size();
  tree_times.resize(before + group.ids.size());
  if (state.local_times && state.local_times->node_time(type)) {  // every id's, in-process
    const int64_t* own = state.local_times->node_time(type)->data<int64_t>();
    for (size_t i = 0; i < group.ids.size(); ++i) tree_times[before + i] = own[group.ids[i]];
    return;
  }
  internal::gather_typed_rows(state, static_cast<int>(type), rpc::RowsRequest::NODE_TIME, group.ids,
                              DType::kInt64, sizeof(int64_t),
                              reinterpret_cast<std::byte*>(tree_times.data() + before));
}

// The typed service (internal/service_view.h), its local part (worker mode) sampled with
// `options` as the servers sample it.
internal::ServiceView service_view(const DistHeteroGraph::State& state,
                                   const HeteroSamplerOptions& options, uint64_t batch_index) {
  internal::ServiceView service = internal::view_of(state);
  service.sample_local = [&state, &options, batch_index](
                             size_t e, int hop, int64_t fanout, std::span<const int64_t> targets,
                             std::span<const int64_t> times, HopSample& out) {
    thread_local SamplerScratch scratch;
    const internal::TypedHop typed{.edge_type = e,
                                   .targets = targets,
                                   .hop = hop,
                                   .fanout = fanout,
                                   .replace = options.replace,
                                   .weighted = options.weighted,
                                   .seed = options.seed,
                                   .batch = batch_index,
                                   .time_source = options.time_source,
                                   .temporal_strategy = options.temporal_strategy,
                                   .target_times = times};
    internal::sample_typed_hop(*state.local, *state.local_times, typed, out, &scratch);
  };
  return service;
}

}  // namespace

HeteroSampledSubgraph DistHeteroGraph::sample(const std::vector<HeteroSeeds>& seeds,
                                              const HeteroSamplerOptions& options,
                                              uint64_t batch_index) const {
  VOLLEY_REQUIRE(options.time_source == TimeSource::kNone || !options.weighted, ValueError,
                 "temporal sampling does not support weighted sampling yet");
  const State& state = *state_;
  const auto fanouts = resolve_hetero_fanouts(state.info.edge_types, options);
  const bool temporal = options.time_source != TimeSource::kNone;
  const size_t types = state.info.node_types.size();
  // The seeds, checked as HeteroNeighborSampler checks them, and their times (temporal).
  std::vector<TypedSeeds> groups;
  std::vector<bool> given(types, false);
  std::vector<int64_t> tree_times;
  for (const HeteroSeeds& group : seeds) {
    const auto type = static_cast<size_t>(state.info.node_type_index(group.node_type));
    VOLLEY_REQUIRE(!given[type], ValueError, "seeds of node type '{}' are given twice",
                   group.node_type);
    given[type] = true;
    const int64_t n = state.info.node_types[type].book.num_nodes();
    for (size_t i = 0; i < group.ids.size(); ++i) {
      VOLLEY_REQUIRE(group.ids[i] >= 0 && group.ids[i] < n, IndexError,
                     "seed id {} of node type '{}' at position {} out of range for {} nodes",
                     group.ids[i], group.node_type, i, n);
    }
    groups.push_back({.type = static_cast<int>(type), .ids = group.ids, .name = group.node_type});
    if (temporal) add_seed_times(state, options, group, type, tree_times);
  }
  HeteroSampledSubgraph out;
  TypedLists lists;
  point_at(out, types, state.info.edge_types.size(), options.disjoint || temporal, lists);
  internal::sample_across(service_view(state, options, batch_index), groups, fanouts, options,
                          batch_index, tree_times, lists);
  return out;
}

}  // namespace volley::dist
