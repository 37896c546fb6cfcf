// DistGraph::sample: one batch sampled across partitions (see client.h). Per hop: the frontier
// is split by owner, remote parts get one SampleHop call each (all in flight at once) while the
// local part is sampled in-process, the replies are checked, and the picks are merged in frontier
// order through the same SubgraphBuilder as the CPU sampler, so the result equals
// sample_neighbors on the whole renumbered graph. Disjoint and temporal sampling run the same
// way over tree-qualified keys (root * num_nodes + node; the CPU kernel's TypedDisjointBuilder
// gives the same local ids): a target goes out as its node with its tree's seed time, its picks
// come back as nodes and get the tree's key.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "volley/dist/client.h"
#include "volley/dist/internal/client_calls.h"
#include "volley/dist/internal/id_map.h"
#include "volley/sampling/subgraph_builder.h"

namespace volley::dist {
namespace {

using internal::pack;
using internal::unpack;
using HopCall = internal::Call<rpc::HopRequest, rpc::HopReply>;
using Builder = TypedSubgraphBuilder<internal::IdMap>;

// Per worker thread: the merge's global → local map (sized to the batch, not the graph), the
// frontier split by owner, and each part's picks for one hop.
struct MergeScratch {
  internal::IdMap map;
  TypedLists lists;                           // the builder's view of the batch
  std::vector<int64_t> neighbors;             // the builder's: one hop's picks, frontier order
  std::vector<int32_t> owner;                 // per frontier node
  std::vector<int64_t> base;                  // per frontier node: its tree's key offset
  std::vector<std::vector<int64_t>> targets;  // per part: global ids to expand
  std::vector<std::vector<int64_t>> times;    // per part: their trees' seed times (temporal)
  std::vector<HopSample> picks;               // per part: its answer for this hop
  HopSample answer;                           // one call's answer
  SamplerScratch local;

  // Ready for a new batch over `parts` partitions.
  void reset(size_t parts) {
    map.clear();
    targets.resize(parts);
    times.resize(parts);
    picks.resize(parts);
  }
};

// What one hop asks of every part.
struct Hop {
  int index;
  int64_t fanout;
  const NeighborSamplerOptions& options;
  uint64_t batch_index;
  int64_t tree_size = 0;                // disjoint: keys are root * tree_size + node
  std::span<const int64_t> seed_times;  // temporal: per root
  bool temporal() const { return options.time_source != TimeSource::kNone; }
};

// Splits the frontier (keys) by owner into scratch.targets (nodes, in frontier order),
// scratch.times (temporal), scratch.owner and scratch.base.
void split_frontier(const PartitionBook& book, std::span<const int64_t> frontier, const Hop& hop,
                    MergeScratch& scratch) {
  for (auto& list : scratch.targets) list.clear();
  for (auto& list : scratch.times) list.clear();
  scratch.owner.resize(frontier.size());
  scratch.base.resize(frontier.size());
  for (size_t i = 0; i < frontier.size(); ++i) {
    const int64_t root = hop.tree_size > 0 ? frontier[i] / hop.tree_size : 0;
    const int64_t node = frontier[i] - root * hop.tree_size;
    const auto owner = static_cast<int32_t>(book.owner_of(node));
    scratch.owner[i] = owner;
    scratch.base[i] = frontier[i] - node;
    scratch.targets[static_cast<size_t>(owner)].push_back(node);
    if (hop.temporal()) {
      scratch.times[static_cast<size_t>(owner)].push_back(
          hop.seed_times[static_cast<size_t>(root)]);
    }
  }
}

// Starts the asynchronous SampleHop call of `piece`; it counts `done` down when it ends.
void send_hop(const DistGraph::State& state, const internal::Piece& piece, const Hop& hop,
              const MergeScratch& scratch, std::unique_ptr<HopCall>& call, std::latch& done) {
  const auto pi = static_cast<size_t>(piece.part);
  call = std::make_unique<HopCall>();
  internal::prepare(call->context, state.options, state.options.deadline_seconds);
  rpc::HopRequest& request = call->request;
  request.set_protocol(kProtocolVersion);
  request.set_fingerprint(state.info.fingerprint);
  pack(std::span<const int64_t>(scratch.targets[pi]).subspan(piece.begin, piece.end - piece.begin),
       request.mutable_targets());
  request.set_hop(static_cast<uint32_t>(hop.index));
  request.set_fanout(hop.fanout);
  internal::options_to_wire(hop.options, request.mutable_sampler(), /*with_fanouts=*/false);
  request.set_batch(hop.batch_index);
  if (hop.temporal()) {
    pack(std::span<const int64_t>(scratch.times[pi]).subspan(piece.begin, piece.end - piece.begin),
         request.mutable_target_times());
  }
  state.stubs[pi]->async()->SampleHop(&call->context, &call->request, &call->reply,
                                      internal::record_status(*call, done));
}

// The most bytes one target's SampleHop answer may take at part p (its count and its picks).
int64_t hop_bytes_per_target(const DistGraph::State& state, int64_t p, const Hop& hop) {
  const internal::PartLimits& limits = state.limits[static_cast<size_t>(p)];
  const int64_t cap = limits.max_reply_bytes;  // more than one reply holds: one target a call
  const int64_t degree = limits.max_degree < 0 ? cap : limits.max_degree;
  int64_t picks = degree;
  if (hop.fanout != -1 && (hop.options.replace || hop.fanout < degree)) picks = hop.fanout;
  return 4 + 16 * std::min(picks, cap / 16);
}

// The reply of `piece` appended to scratch.picks[part]: the call's own error, or RuntimeError
// naming the part for a malformed reply (counts that do not match the targets or the neighbors).
void receive_hop(const DistGraph::State& state, const internal::Piece& piece, const HopCall& call,
                 MergeScratch& scratch) {
  const auto pi = static_cast<size_t>(piece.part);
  if (!call.status.ok()) state.fail_call(call.status, piece.part, "SampleHop");
  HopSample& answer = scratch.answer;
  const size_t targets = piece.end - piece.begin;
  const bool well_formed = unpack(call.reply.counts(), answer.counts) &&
                           unpack(call.reply.neighbors(), answer.neighbors) &&
                           unpack(call.reply.edge_ids(), answer.edge_ids) &&
                           answer.counts.size() == targets &&
                           answer.neighbors.size() == answer.edge_ids.size();
  int64_t total = 0;
  if (well_formed) {
    for (int32_t c : answer.counts) total += c < 0 ? INT64_MIN / 2 : c;
  }
  VOLLEY_REQUIRE(well_formed && total == static_cast<int64_t>(answer.neighbors.size()),
                 RuntimeError,
                 "part {} at {}: malformed SampleHop reply ({} counts for {} targets, {} "
                 "neighbors, {} edge ids)",
                 piece.part, state.addresses[pi], answer.counts.size(), targets,
                 answer.neighbors.size(), answer.edge_ids.size());
  HopSample& picks = scratch.picks[pi];
  picks.counts.insert(picks.counts.end(), answer.counts.begin(), answer.counts.end());
  picks.neighbors.insert(picks.neighbors.end(), answer.neighbors.begin(), answer.neighbors.end());
  picks.edge_ids.insert(picks.edge_ids.end(), answer.edge_ids.begin(), answer.edge_ids.end());
}

// RuntimeError naming the part when a remote reply names a node outside the graph (the local
// part's picks come from a loaded graph and are not re-checked).
void check_reply_ids(const DistGraph::State& state, const MergeScratch& scratch) {
  const int64_t num_nodes = state.info.book.num_nodes();
  for (int64_t p = 0; p < state.num_parts(); ++p) {
    const auto pi = static_cast<size_t>(p);
    if (p == state.local_part || scratch.targets[pi].empty()) continue;
    for (const int64_t neighbor : scratch.picks[pi].neighbors) {
      VOLLEY_REQUIRE(neighbor >= 0 && neighbor < num_nodes, RuntimeError,
                     "part {} at {}: SampleHop returned node {} outside [0, {})", p,
                     state.addresses[pi], neighbor, num_nodes);
    }
  }
}

// Appends every frontier node's picks to the builder in frontier order: exactly the
// single-machine sampler's order (each part's picks are grouped by target in its target order).
void merge_hop(const MergeScratch& scratch, size_t frontier_begin, Builder& builder) {
  const size_t parts = scratch.picks.size();
  std::vector<size_t> next_target(parts, 0);
  std::vector<size_t> next_neighbor(parts, 0);
  for (size_t i = 0; i < scratch.owner.size(); ++i) {
    const auto p = static_cast<size_t>(scratch.owner[i]);
    const HopSample& picks = scratch.picks[p];
    const auto count = static_cast<size_t>(picks.counts[next_target[p]++]);
    const int64_t base = scratch.base[i];
    if (base == 0) {
      builder.add_edges(frontier_begin + i, picks.neighbors.data() + next_neighbor[p],
                        picks.edge_ids.data() + next_neighbor[p], count);
    } else {
      for (size_t j = next_neighbor[p]; j < next_neighbor[p] + count; ++j) {
        builder.add_edge(frontier_begin + i, base + picks.neighbors[j], picks.edge_ids[j]);
      }
    }
    next_neighbor[p] += count;
  }
}

// The local part's picks (worker mode), in-process.
void sample_local(const DistGraph::State& state, const Hop& hop, MergeScratch& scratch) {
  const auto local_part = static_cast<size_t>(state.local_part);
  const Partition& local = *state.local;
  const Csr& graph = local.data.graph;
  if (!hop.temporal()) {
    sample_hop(graph, local.first_node(), scratch.targets[local_part], hop.index, hop.fanout,
               hop.options, hop.batch_index, scratch.picks[local_part], &scratch.local);
    return;
  }
  HopTimes times;
  times.target_times = scratch.times[local_part];
  if (hop.options.time_source == TimeSource::kEdge) {
    if (graph.edge_time()) times.edge_time = graph.edge_time()->span<int64_t>();
    times.rows_sorted = graph.first_row_unsorted_by_edge_time() < 0;
  } else {
    if (local.node_time) times.node_time = local.node_time->span<int64_t>();
    times.rows_sorted = local.node_time_rows_sorted;
  }
  sample_hop(graph, local.first_node(), scratch.targets[local_part], hop.index, hop.fanout,
             hop.options, hop.batch_index, times, scratch.picks[local_part], &scratch.local);
}

// The builder over `out` (one type) with `seeds` placed (checked by the caller; ValueError for a
// repeated one).
Builder start_builder(std::span<const int64_t> seeds, MergeScratch& scratch, HostSubgraph& out) {
  point_at(out, scratch.lists);
  Builder builder(scratch.lists, std::span<internal::IdMap>(&scratch.map, 1), scratch.neighbors);
  const TypedSeeds group{.ids = seeds, .name = {}};
  place_seeds(builder, std::span<const TypedSeeds>(&group, 1));
  builder.start();
  return builder;
}

// One hop over the builder's frontier (nothing when the fanout is 0 or the frontier empty).
void sample_one_hop(const DistGraph::State& state, const Hop& hop, const HostSubgraph& out,
                    MergeScratch& scratch, Builder& builder) {
  const size_t begin = builder.frontier_begin(0);
  const size_t end = builder.frontier_end(0);
  builder.begin_edges(0, 0, 0);
  if (hop.fanout != 0 && end > begin) {
    split_frontier(state.info.book, std::span<const int64_t>(out.nodes).subspan(begin, end - begin),
                   hop, scratch);
    for (int64_t p = 0; p < state.num_parts(); ++p) {
      if (p == state.local_part) continue;
      HopSample& picks = scratch.picks[static_cast<size_t>(p)];
      picks.counts.clear();
      picks.neighbors.clear();
      picks.edge_ids.clear();
    }
    internal::fan_out<HopCall>(
        state, scratch.targets,
        [&](int64_t p) {
          internal::PartLimits limits = state.limits[static_cast<size_t>(p)];
          // A temporal request carries a time beside each target: half the ids fit.
          if (hop.temporal()) limits.max_ids = std::max<int64_t>(1, limits.max_ids / 2);
          return internal::targets_per_call(limits, hop_bytes_per_target(state, p, hop));
        },
        [&](const internal::Piece& piece, std::unique_ptr<HopCall>& call, std::latch& done) {
          send_hop(state, piece, hop, scratch, call, done);
        },
        [&](const internal::Piece& piece, const HopCall& call) {
          receive_hop(state, piece, call, scratch);
        },
        [&] { sample_local(state, hop, scratch); });
    check_reply_ids(state, scratch);
    merge_hop(scratch, begin, builder);
  }
  builder.end_edges();
  builder.end_hop();
}

// Disjoint (and temporal) sampling: the seeds become keys root * n + seed, the hops run over
// them, and the keys are split into out.nodes and out.batch at the end (as the CPU kernel does).
void sample_trees(const DistGraph::State& state, std::span<const int64_t> seeds,
                  std::span<const int64_t> seed_times, const NeighborSamplerOptions& options,
                  uint64_t batch_index, SampledSubgraph& result) {
  VOLLEY_REQUIRE(options.subgraph_type == SubgraphType::kDirectional, ValueError,
                 "the distributed sampler samples disjoint and temporal subgraphs directional "
                 "only, got subgraph_type='{}'",
                 subgraph_type_name(options.subgraph_type));
  const int64_t n = state.info.book.num_nodes();
  const auto count = static_cast<int64_t>(seeds.size());
  VOLLEY_REQUIRE(n == 0 || count <= (int64_t{1} << 62) / std::max<int64_t>(n, 1), ValueError,
                 "disjoint sampling of {} seeds over {} nodes exceeds 2^62 tree-qualified ids",
                 count, n);
  std::vector<int64_t> keys(seeds.size());
  for (int64_t i = 0; i < count; ++i) {
    const int64_t seed = seeds[static_cast<size_t>(i)];
    TypedHopEdges::check_seed(seed, static_cast<size_t>(i), n);
    keys[static_cast<size_t>(i)] = i * n + seed;
  }
  HostSubgraph out;
  const auto parts = static_cast<size_t>(state.num_parts());
  thread_local MergeScratch scratch;
  scratch.reset(parts);
  Builder builder = start_builder(keys, scratch, out);
  for (size_t hop = 0; hop < options.fanouts.size(); ++hop) {
    sample_one_hop(
        state, {static_cast<int>(hop), options.fanouts[hop], options, batch_index, n, seed_times},
        out, scratch, builder);
  }
  builder.finish();
  out.batch.resize(out.nodes.size());
  for (size_t i = 0; i < out.nodes.size(); ++i) {
    out.batch[i] = out.nodes[i] / n;
    out.nodes[i] %= n;
  }
  result = out.finish();
}

}  // namespace

void DistGraph::sample_temporal(std::span<const int64_t> seeds, std::span<const int64_t> seed_times,
                                const NeighborSamplerOptions& options, uint64_t batch_index,
                                SampledSubgraph& result) const {
  validate(options);
  VOLLEY_REQUIRE(options.time_source != TimeSource::kNone, ValueError,
                 "sample_temporal needs options.time_source (time_attr) set");
  VOLLEY_REQUIRE(seed_times.size() == seeds.size(), ValueError,
                 "seed_times has {} entries, but there are {} seeds (one time each)",
                 seed_times.size(), seeds.size());
  sample_trees(*state_, seeds, seed_times, options, batch_index, result);
}

void DistGraph::sample(std::span<const int64_t> seeds, const NeighborSamplerOptions& options,
                       uint64_t batch_index, SampledSubgraph& result) const {
  validate(options);
  VOLLEY_REQUIRE(options.time_source == TimeSource::kNone, ValueError,
                 "temporal sampling needs seed times (sample_temporal)");
  if (options.disjoint) {
    sample_trees(*state_, seeds, {}, options, batch_index, result);
    return;
  }
  HostSubgraph out;
  const State& state = *state_;
  const auto parts = static_cast<size_t>(state.num_parts());
  thread_local MergeScratch scratch;
  scratch.reset(parts);
  for (size_t i = 0; i < seeds.size(); ++i) {
    TypedHopEdges::check_seed(seeds[i], i, state.info.book.num_nodes());
  }
  Builder builder = start_builder(seeds, scratch, out);
  for (size_t hop = 0; hop < options.fanouts.size(); ++hop) {
    sample_one_hop(state,
                   {static_cast<int>(hop), options.fanouts[hop], options, batch_index, 0, {}}, out,
                   scratch, builder);
  }
  builder.finish();
  result = out.finish();
}

SampledSubgraph DistGraph::sample(std::span<const int64_t> seeds,
                                  const NeighborSamplerOptions& options,
                                  uint64_t batch_index) const {
  SampledSubgraph out;
  sample(seeds, options, batch_index, out);
  return out;
}

}  // namespace volley::dist
