// DistGraph::sample: one batch sampled across partitions (see client.h). Per hop: the frontier
// is split by owner, remote parts get one SampleHop call each (all in flight at once) while the
// local part is sampled in-process, the replies are checked, and the picks are merged in frontier
// order through the same SubgraphBuilder as the CPU sampler, so the result equals
// sample_neighbors on the whole renumbered graph.
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
using Builder = SubgraphBuilder<internal::IdMap>;

// Per worker thread: the merge's global → local map (sized to the batch, not the graph), the
// frontier split by owner, and each part's picks for one hop.
struct MergeScratch {
  internal::IdMap map;
  std::vector<int64_t> neighbors;             // the builder's: one hop's picks, frontier order
  std::vector<int32_t> owner;                 // per frontier node
  std::vector<std::vector<int64_t>> targets;  // per part: global ids to expand
  std::vector<HopSample> picks;               // per part: its answer for this hop
  HopSample answer;                           // one call's answer
  SamplerScratch local;
};

// What one hop asks of every part.
struct Hop {
  int index;
  int64_t fanout;
  const NeighborSamplerOptions& options;
  uint64_t batch_index;
};

// Splits the frontier by owner into scratch.targets (in frontier order) and scratch.owner.
void split_frontier(const PartitionBook& book, std::span<const int64_t> frontier,
                    MergeScratch& scratch) {
  for (auto& list : scratch.targets) list.clear();
  scratch.owner.resize(frontier.size());
  for (size_t i = 0; i < frontier.size(); ++i) {
    const auto owner = static_cast<int32_t>(book.owner_of(frontier[i]));
    scratch.owner[i] = owner;
    scratch.targets[static_cast<size_t>(owner)].push_back(frontier[i]);
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
  request.set_replace(hop.options.replace);
  request.set_weighted(hop.options.weighted);
  request.set_seed(hop.options.seed);
  request.set_batch(hop.batch_index);
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
    builder.add_edges(frontier_begin + i, picks.neighbors.data() + next_neighbor[p],
                      picks.edge_ids.data() + next_neighbor[p], count);
    next_neighbor[p] += count;
  }
}

// One hop over the builder's frontier (nothing when the fanout is 0 or the frontier empty).
void sample_one_hop(const DistGraph::State& state, const Hop& hop, const HostSubgraph& out,
                    MergeScratch& scratch, Builder& builder) {
  const size_t begin = builder.frontier_begin();
  const size_t end = builder.frontier_end();
  if (hop.fanout != 0 && end > begin) {
    split_frontier(state.info.book, std::span<const int64_t>(out.nodes).subspan(begin, end - begin),
                   scratch);
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
          return internal::targets_per_call(state.limits[static_cast<size_t>(p)],
                                            hop_bytes_per_target(state, p, hop));
        },
        [&](const internal::Piece& piece, std::unique_ptr<HopCall>& call, std::latch& done) {
          send_hop(state, piece, hop, scratch, call, done);
        },
        [&](const internal::Piece& piece, const HopCall& call) {
          receive_hop(state, piece, call, scratch);
        },
        [&] {
          const auto local_part = static_cast<size_t>(state.local_part);
          const Partition& local = *state.local;
          sample_hop(local.data.graph, local.first_node(), scratch.targets[local_part], hop.index,
                     hop.fanout, hop.options, hop.batch_index, scratch.picks[local_part],
                     &scratch.local);
        });
    check_reply_ids(state, scratch);
    merge_hop(scratch, begin, builder);
  }
  builder.end_hop();
}

}  // namespace

void DistGraph::sample(std::span<const int64_t> seeds, const NeighborSamplerOptions& options,
                       uint64_t batch_index, SampledSubgraph& result) const {
  validate(options);
  HostSubgraph out;
  const State& state = *state_;
  const auto parts = static_cast<size_t>(state.num_parts());
  thread_local MergeScratch scratch;
  scratch.map.clear();
  scratch.targets.resize(parts);
  scratch.picks.resize(parts);
  Builder builder(seeds, state.info.book.num_nodes(), scratch.map, scratch.neighbors, out);
  for (size_t hop = 0; hop < options.fanouts.size(); ++hop) {
    sample_one_hop(state, {static_cast<int>(hop), options.fanouts[hop], options, batch_index}, out,
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
