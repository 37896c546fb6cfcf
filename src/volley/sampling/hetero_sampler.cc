// The CPU heterogeneous neighbor sampler (contract in hetero_sampler.h). The per-target pick
// rules are the homogeneous sampler's (internal/pick.h), not a copy of them.
#include "volley/sampling/hetero_sampler.h"

#include <algorithm>
#include <numeric>
#include <optional>

#include "volley/core/error.h"
#include "volley/sampling/internal/cuda_sampler_backend.h"  // HeteroNeighborSampler::backend_
#include "volley/sampling/internal/hetero_seeds.h"
#include "volley/sampling/internal/pick.h"
#include "volley/sampling/internal/positions.h"

namespace volley {

namespace {

// Disjoint sampling's map of one node type: tree-qualified id (tree * count + id) -> local id.
// Open addressing with linear probing, at most half full, emptied in O(1) by a generation stamp
// (the table is kept across batches): one cache line per lookup, like the slot map.
class TreeMap {
 public:
  void start() {
    if (table_.empty()) table_.assign(kInitial, Slot{});
    size_ = 0;
    if (++generation_ == 0) {  // wrapped: clear stale stamps
      std::fill(table_.begin(), table_.end(), Slot{});
      generation_ = 1;
    }
  }
  // The local id of `key`, or -1 after recording `local` for it.
  int32_t insert(int64_t key, int32_t local) {
    if (2 * (size_ + 1) > table_.size()) grow();
    const size_t mask = table_.size() - 1;
    for (size_t i = home(key, mask);; i = (i + 1) & mask) {
      Slot& slot = table_[i];
      if (slot.stamp != generation_) {
        slot = {key, local, generation_};
        ++size_;
        return -1;
      }
      if (slot.key == key) return slot.local;
    }
  }

 private:
  struct Slot {
    int64_t key = 0;
    int32_t local = 0;
    uint32_t stamp = 0;
  };
  static constexpr size_t kInitial = 1024;
  static size_t home(int64_t key, size_t mask) {
    return static_cast<size_t>((static_cast<uint64_t>(key) * 0x9E3779B97F4A7C15ull) >> 20) & mask;
  }
  void grow() {
    std::vector<Slot> old(table_.size() * 2);
    old.swap(table_);
    const size_t mask = table_.size() - 1;
    for (const Slot& slot : old) {
      if (slot.stamp != generation_) continue;
      size_t i = home(slot.key, mask);
      while (table_[i].stamp == generation_) i = (i + 1) & mask;
      table_[i] = slot;
    }
  }

  std::vector<Slot> table_;
  size_t size_ = 0;
  uint32_t generation_ = 0;
};

}  // namespace

struct HeteroSamplerScratch::State {
  struct Slot {
    uint32_t stamp = 0;
    int32_t local = 0;
  };
  std::vector<std::vector<Slot>> slots;  // per node type
  uint32_t generation = 0;
  std::vector<int64_t> positions, order;
  std::vector<double> keys;
  // Disjoint sampling: per node type, tree-qualified id (tree * count + id) -> local id.
  std::vector<TreeMap> trees;
  std::vector<int64_t> seed_times;  // temporal: per tree

  // Starts a batch over node types of these counts: O(1) unless the counts changed.
  void start(const HeteroGraph& graph) {
    bool fits = slots.size() == static_cast<size_t>(graph.num_node_types());
    for (int t = 0; fits && t < graph.num_node_types(); ++t) {
      fits = slots[static_cast<size_t>(t)].size() == static_cast<size_t>(graph.num_nodes(t));
    }
    if (!fits) {
      slots.assign(static_cast<size_t>(graph.num_node_types()), {});
      for (int t = 0; t < graph.num_node_types(); ++t) {
        slots[static_cast<size_t>(t)].assign(static_cast<size_t>(graph.num_nodes(t)), Slot{});
      }
      generation = 0;
    }
    if (++generation == 0) {  // wrapped: clear stale stamps
      for (auto& type_slots : slots) std::fill(type_slots.begin(), type_slots.end(), Slot{});
      generation = 1;
    }
  }
};

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
  VOLLEY_REQUIRE(!list.empty(), ValueError, "{}: the fanout list is empty (give one per hop)",
                 what);
  VOLLEY_REQUIRE(list.size() <= kMaxHops, ValueError, "{}: {} hops, at most {} are supported", what,
                 list.size(), kMaxHops);
  for (size_t h = 0; h < list.size(); ++h) {
    VOLLEY_REQUIRE(list[h] >= -1, ValueError,
                   "{}: fanout {} at hop {} must be >= -1 (-1: all neighbors)", what, list[h], h);
  }
}

// What one batch works on.
struct Batch {
  const HeteroGraph& graph;  // timed edge types carry their entries' times as edge_time
  const std::vector<std::vector<int64_t>>& fanouts;
  const HeteroSamplerOptions& options;
  const std::vector<const int64_t*>& node_time;  // per node type, null: untimed (seed defaults)
  uint64_t seed;  // the random streams' seed (options.seed, or a loader's epoch seed)
  uint64_t batch_index;
  HeteroSamplerScratch::State& scratch;
  HeteroSampledSubgraph& out;
  bool temporal = options.time_source != TimeSource::kNone;
  bool disjoint = options.disjoint || temporal;

  // Local id of `id` of node type `type` (in tree `tree` when disjoint), appending it when new.
  int64_t local_of(int type, int64_t id, int64_t tree) {
    const auto t = static_cast<size_t>(type);
    auto& list = out.nodes[t];
    VOLLEY_REQUIRE(list.size() < (size_t{1} << 31) - 1, ValueError,
                   "a batch reached 2^31 nodes of type {}", graph.node_types()[t].name);
    const auto next = static_cast<int32_t>(list.size());
    if (disjoint) {
      const int32_t known = scratch.trees[t].insert(tree * graph.num_nodes(type) + id, next);
      if (known >= 0) return known;
      out.batch[t].push_back(tree);
    } else {
      auto& slot = scratch.slots[t][static_cast<size_t>(id)];
      if (slot.stamp == scratch.generation) return slot.local;
      slot = {scratch.generation, next};
    }
    list.push_back(id);
    return next;
  }

  // The time of each seed of `group` (temporal sampling) onto scratch.seed_times.
  void add_seed_times(const HeteroSeeds& group, int type) {
    if (!group.times.empty()) {
      VOLLEY_REQUIRE(group.times.size() == group.ids.size(), ValueError,
                     "seeds of node type '{}': {} times for {} seeds (one time per seed)",
                     group.node_type, group.times.size(), group.ids.size());
      scratch.seed_times.insert(scratch.seed_times.end(), group.times.begin(), group.times.end());
      return;
    }
    const int64_t* own = node_time.empty() ? nullptr : node_time[static_cast<size_t>(type)];
    VOLLEY_REQUIRE(own != nullptr || group.ids.empty(), ValueError,
                   "seeds of node type '{}' need a time each (seed times / input_time): {}",
                   group.node_type,
                   options.time_source == TimeSource::kEdge
                       ? "sampling by edge time has no node time to default to"
                       : "the node type has no node time to default to");
    for (const int64_t id : group.ids) scratch.seed_times.push_back(own[id]);
  }

  void add_seeds(const std::vector<HeteroSeeds>& seeds) {
    std::vector<bool> given(static_cast<size_t>(graph.num_node_types()), false);
    int64_t tree = 0;  // disjoint: the seed's position among all seeds
    for (const HeteroSeeds& group : seeds) {
      const int type = sampling_internal::claim_seed_type(graph, group, given);
      const int64_t n = graph.num_nodes(type);
      auto& list = out.nodes[static_cast<size_t>(type)];
      for (size_t i = 0; i < group.ids.size(); ++i) {
        sampling_internal::check_seed_id(group, i, n);
        const int64_t id = group.ids[i];
        const size_t before = list.size();
        const int64_t local = local_of(type, id, tree++);
        VOLLEY_REQUIRE(list.size() > before, ValueError,
                       "duplicate seed {} of node type '{}' at positions {} and {}", id,
                       group.node_type, local, i);
      }
      if (temporal) add_seed_times(group, type);
      out.num_seeds[static_cast<size_t>(type)] = static_cast<int64_t>(list.size());
    }
  }

  // Temporal picks of `target` (row [row_begin, row_begin + degree), entries sorted by
  // `entry_time`) in a tree of time `limit`: positions into scratch.positions, their count.
  int64_t pick_temporal(int64_t target, const int64_t* entry_time, int64_t row_begin,
                        int64_t degree, int64_t limit, const sampling_internal::PickRule& rule) {
    const int64_t* row_time = entry_time + row_begin;
    const int64_t admissible = std::upper_bound(row_time, row_time + degree, limit) - row_time;
    const bool last = options.temporal_strategy == TemporalStrategy::kLast;
    const int64_t count = sampling_internal::temporal_pick_count(admissible, rule, last);
    scratch.positions.resize(static_cast<size_t>(count));
    if (count == 0) return 0;
    if (last || count == admissible) {  // the `count` most recent (all of them unless kLast)
      std::iota(scratch.positions.begin(), scratch.positions.end(), admissible - count);
      return count;
    }
    scratch.keys.resize(static_cast<size_t>(count));
    scratch.order.resize(static_cast<size_t>(count));
    sampling_internal::pick_positions(target, admissible, nullptr, rule, count,
                                      scratch.positions.data(), scratch.keys.data(),
                                      scratch.order.data());
    return count;
  }

  // Pass 2 of expand for edge type `e`: its source ids from edge `edges_before` on become local
  // ids in the same order (so the same nodes get the same local ids as in one pass), the map
  // slots of later neighbors prefetched; a neighbor joins its target's tree (the destination
  // type's batch, read by index: it grows when src == dst).
  void to_local_ids(int src, int dst, size_t edges_before, int e) {
    constexpr size_t kAhead = 16;
    const auto& rows = out.rows[static_cast<size_t>(e)];
    auto& cols = out.cols[static_cast<size_t>(e)];
    const auto* slots = scratch.slots[static_cast<size_t>(src)].data();
    const size_t count = cols.size();
    for (size_t j = edges_before; j < count; ++j) {
      if (j + kAhead < count && !disjoint) __builtin_prefetch(slots + cols[j + kAhead]);
      const int64_t tree =
          disjoint ? out.batch[static_cast<size_t>(dst)][static_cast<size_t>(rows[j])] : 0;
      cols[j] = local_of(src, cols[j], tree);
    }
  }

  // The pick rule of edge type `e` at hop `hop` (its fanout and stream seed).
  sampling_internal::PickRule rule_for(int e, int hop) const {
    sampling_internal::PickRule rule;
    rule.fanout = fanouts[static_cast<size_t>(e)][static_cast<size_t>(hop)];
    rule.replace = options.replace;
    rule.seed = edge_type_stream_seed(seed, graph.edge_types()[static_cast<size_t>(e)]);
    rule.hop = hop;
    rule.batch = batch_index;
    return rule;
  }

  // Expands edge type `e` at hop `hop` for the destination nodes [begin, end) of its list.
  template <typename Index>
  void expand(int e, int hop, int64_t begin, int64_t end) {
    const EdgeType& type = graph.edge_types()[static_cast<size_t>(e)];
    const Csr& csr = graph.edges(e);
    const int src = graph.node_type_index(type.src);
    const int dst = graph.node_type_index(type.dst);
    const int64_t* indptr = csr.indptr().data<int64_t>();
    const Index* indices = csr.indices().template data<Index>();
    const int64_t* edge_ids = csr.has_edge_ids() ? csr.edge_ids()->data<int64_t>() : nullptr;
    const float* weights =
        options.weighted && csr.has_weights() ? csr.weights()->data<float>() : nullptr;
    const int64_t* entry_time =
        temporal && csr.has_edge_time() ? csr.edge_time()->data<int64_t>() : nullptr;
    const sampling_internal::PickRule rule = rule_for(e, hop);
    auto& rows = out.rows[static_cast<size_t>(e)];
    auto& cols = out.cols[static_cast<size_t>(e)];
    auto& eids = out.edge_ids[static_cast<size_t>(e)];
    const size_t edges_before = rows.size();
    if (rule.fanout != 0) {
      // Pass 1: the picks as CSR positions (`cols`, `eids`), later targets' rows prefetched;
      // then the positions become source and edge ids (positions.h) and the sources local ids
      // (pass 2). The frontier [begin, end) was fixed before the hop, so nodes appended
      // meanwhile are not read here.
      const int64_t* targets = out.nodes[static_cast<size_t>(dst)].data();
      const int64_t* trees = disjoint ? out.batch[static_cast<size_t>(dst)].data() : nullptr;
      constexpr int64_t kAhead = 16;
      for (int64_t i = begin; i < end; ++i) {
        if (i + kAhead < end) __builtin_prefetch(indptr + targets[i + kAhead]);
        // The picks read the row's times (temporal) or weights.
        if ((entry_time != nullptr || weights != nullptr) && i + kAhead / 2 < end) {
          const int64_t ahead = indptr[targets[i + kAhead / 2]];
          __builtin_prefetch(entry_time != nullptr ? static_cast<const void*>(entry_time + ahead)
                                                   : static_cast<const void*>(weights + ahead));
        }
        const int64_t target = targets[i];
        const int64_t row_begin = indptr[target];
        const int64_t degree = indptr[target + 1] - row_begin;
        auto emit = [&](int64_t k) {
          rows.push_back(i);
          cols.push_back(k);
          eids.push_back(k);
        };
        if (entry_time != nullptr) {
          const int64_t limit = scratch.seed_times[static_cast<size_t>(trees[i])];
          const int64_t count = pick_temporal(target, entry_time, row_begin, degree, limit, rule);
          for (int64_t j = 0; j < count; ++j)
            emit(row_begin + scratch.positions[static_cast<size_t>(j)]);
          continue;
        }
        const float* row_weights = weights != nullptr ? weights + row_begin : nullptr;
        const int64_t count = sampling_internal::pick_count(degree, row_weights, rule);
        if (count == 0) continue;
        if (sampling_internal::takes_all(degree, rule)) {
          for (int64_t k = row_begin; k < row_begin + degree; ++k) emit(k);
          continue;
        }
        scratch.positions.resize(static_cast<size_t>(count));
        scratch.keys.resize(static_cast<size_t>(count));
        scratch.order.resize(static_cast<size_t>(count));
        sampling_internal::pick_positions(target, degree, row_weights, rule, count,
                                          scratch.positions.data(), scratch.keys.data(),
                                          scratch.order.data());
        for (int64_t j = 0; j < count; ++j)
          emit(row_begin + scratch.positions[static_cast<size_t>(j)]);
      }
      const size_t count = cols.size();
      sampling_internal::positions_to_ids(indices, cols.data() + edges_before,
                                          count - edges_before);
      if (edge_ids != nullptr) {
        sampling_internal::positions_to_ids(edge_ids, eids.data() + edges_before,
                                            count - edges_before);
      }
      to_local_ids(src, dst, edges_before, e);
    }
    out.edges_per_hop[static_cast<size_t>(e)].push_back(
        static_cast<int64_t>(rows.size() - edges_before));
  }

  void run() {
    const size_t types = static_cast<size_t>(graph.num_node_types());
    const size_t hops = fanouts.empty() ? 0 : fanouts.front().size();
    std::vector<int64_t> frontier_begin(types, 0), frontier_end(types);
    for (size_t t = 0; t < types; ++t) {
      frontier_end[t] = static_cast<int64_t>(out.nodes[t].size());
      out.nodes_per_hop[t].push_back(frontier_end[t]);
    }
    for (size_t hop = 0; hop < hops; ++hop) {
      for (int e = 0; e < graph.num_edge_types(); ++e) {
        const int dst = graph.node_type_index(graph.edge_types()[static_cast<size_t>(e)].dst);
        const int64_t begin = frontier_begin[static_cast<size_t>(dst)];
        const int64_t end = frontier_end[static_cast<size_t>(dst)];
        if (graph.edges(e).index_dtype() == DType::kInt32) {
          expand<int32_t>(e, static_cast<int>(hop), begin, end);
        } else {
          expand<int64_t>(e, static_cast<int>(hop), begin, end);
        }
      }
      for (size_t t = 0; t < types; ++t) {
        frontier_begin[t] = frontier_end[t];
        frontier_end[t] = static_cast<int64_t>(out.nodes[t].size());
        out.nodes_per_hop[t].push_back(frontier_end[t] - frontier_begin[t]);
      }
    }
  }
};

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
  if (!options.fanouts.empty()) check_fanout_list(options.fanouts, "fanouts");
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
    VOLLEY_REQUIRE(!options.fanouts.empty(), ValueError,
                   "no fanouts for edge type {} (give one list per edge type, or a default "
                   "list for the missing ones; 0 samples none)",
                   name);
    resolved[e] = options.fanouts;
  }
  VOLLEY_REQUIRE(!resolved.empty() || !options.fanouts.empty(), ValueError,
                 "fanouts: the fanout list is empty (give one per hop)");
  for (size_t e = 1; e < resolved.size(); ++e) {
    VOLLEY_REQUIRE(
        resolved[e].size() == resolved[0].size(), ValueError,
        "the number of hops must be the same across all edge types: {} has {}, {} has {}",
        edge_types[0].name(), resolved[0].size(), edge_types[e].name(), resolved[e].size());
  }
  return resolved;
}

namespace {
// Per node type (graph order): the node time `times` gives it (kNode), else null.
std::vector<const int64_t*> seed_node_times(const HeteroGraph& graph,
                                            const HeteroSamplerOptions& options,
                                            const HeteroTimes& times) {
  std::vector<const int64_t*> result;
  if (options.time_source != TimeSource::kNode) return result;
  result.assign(static_cast<size_t>(graph.num_node_types()), nullptr);
  for (const auto& [name, time] : times.node_time) {  // checked by attach_hetero_times
    result[static_cast<size_t>(graph.node_type_index(name))] = time.data<int64_t>();
  }
  return result;
}

// Disjoint sampling: the per-type maps emptied (buckets kept), tree-qualified ids checked.
void start_trees(const HeteroGraph& graph, const std::vector<HeteroSeeds>& seeds,
                 HeteroSamplerScratch::State& scratch) {
  scratch.trees.resize(static_cast<size_t>(graph.num_node_types()));
  for (auto& map : scratch.trees) map.start();
  int64_t count = 0, largest = 1;
  for (const HeteroSeeds& group : seeds) count += static_cast<int64_t>(group.ids.size());
  for (int t = 0; t < graph.num_node_types(); ++t) largest = std::max(largest, graph.num_nodes(t));
  VOLLEY_REQUIRE(count <= (int64_t{1} << 62) / largest, ValueError,
                 "disjoint sampling of {} seeds over node types of up to {} nodes exceeds 2^62 "
                 "tree-qualified ids",
                 count, largest);
}

// Fills `out` (its vectors cleared, their capacity kept). `graph`: the timed graph.
void sample_resolved(const HeteroGraph& graph, const std::vector<HeteroSeeds>& seeds,
                     const std::vector<std::vector<int64_t>>& fanouts,
                     const HeteroSamplerOptions& options, const HeteroTimes& times, uint64_t seed,
                     uint64_t batch_index, HeteroSamplerScratch::State& scratch,
                     HeteroSampledSubgraph& out) {
  const size_t types = static_cast<size_t>(graph.num_node_types());
  const size_t edge_types = static_cast<size_t>(graph.num_edge_types());
  const bool disjoint = options.disjoint || options.time_source != TimeSource::kNone;
  for (auto* lists : {&out.nodes, &out.nodes_per_hop, &out.batch}) {
    lists->resize(types);
    for (auto& list : *lists) list.clear();
  }
  for (auto* lists : {&out.rows, &out.cols, &out.edge_ids, &out.edges_per_hop}) {
    lists->resize(edge_types);
    for (auto& list : *lists) list.clear();
  }
  if (!disjoint) out.batch.clear();
  out.num_seeds.assign(types, 0);
  scratch.start(graph);
  scratch.seed_times.clear();
  if (disjoint) start_trees(graph, seeds, scratch);
  const std::vector<const int64_t*> node_time = seed_node_times(graph, options, times);
  Batch batch{graph, fanouts, options, node_time, seed, batch_index, scratch, out};
  batch.add_seeds(seeds);
  batch.run();
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
