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

// Starts part p's asynchronous SampleHop call; it counts `done` down when it ends.
void send_hop(const DistGraph::State& state, int64_t p, const Hop& hop, const MergeScratch& scratch,
              std::unique_ptr<HopCall>& call, std::latch& done) {
  const auto pi = static_cast<size_t>(p);
  call = std::make_unique<HopCall>();
  internal::prepare(call->context, state.options, state.options.deadline_seconds);
  rpc::HopRequest& request = call->request;
  request.set_protocol(kProtocolVersion);
  request.set_fingerprint(state.info.fingerprint);
  pack(std::span<const int64_t>(scratch.targets[pi]), request.mutable_targets());
  request.set_hop(static_cast<uint32_t>(hop.index));
  request.set_fanout(hop.fanout);
  request.set_replace(hop.options.replace);
  request.set_weighted(hop.options.weighted);
  request.set_seed(hop.options.seed);
  request.set_batch(hop.batch_index);
  state.stubs[pi]->async()->SampleHop(&call->context, &call->request, &call->reply,
                                      internal::record_status(*call, done));
}

// Part p's reply into scratch.picks[p]: the call's own error, or RuntimeError naming the part for
// a malformed reply (counts that do not match the targets or the neighbors).
void receive_hop(const DistGraph::State& state, int64_t p, const HopCall& call,
                 MergeScratch& scratch) {
  const auto pi = static_cast<size_t>(p);
  if (!call.status.ok()) state.fail_call(call.status, p, "SampleHop");
  HopSample& picks = scratch.picks[pi];
  const size_t targets = scratch.targets[pi].size();
  const bool well_formed = unpack(call.reply.counts(), picks.counts) &&
                           unpack(call.reply.neighbors(), picks.neighbors) &&
                           unpack(call.reply.edge_ids(), picks.edge_ids) &&
                           picks.counts.size() == targets &&
                           picks.neighbors.size() == picks.edge_ids.size();
  int64_t total = 0;
  if (well_formed) {
    for (int32_t c : picks.counts) total += c < 0 ? INT64_MIN / 2 : c;
  }
  VOLLEY_REQUIRE(well_formed && total == static_cast<int64_t>(picks.neighbors.size()), RuntimeError,
                 "part {} at {}: malformed SampleHop reply ({} counts for {} targets, {} "
                 "neighbors, {} edge ids)",
                 p, state.addresses[pi], picks.counts.size(), targets, picks.neighbors.size(),
                 picks.edge_ids.size());
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
    std::vector<std::unique_ptr<HopCall>> calls(static_cast<size_t>(state.num_parts()));
    split_frontier(state.info.book, std::span<const int64_t>(out.nodes).subspan(begin, end - begin),
                   scratch);
    internal::fan_out(
        state, scratch.targets,
        [&](int64_t p, std::latch& done) {
          send_hop(state, p, hop, scratch, calls[static_cast<size_t>(p)], done);
        },
        [&] {
          const auto local_part = static_cast<size_t>(state.local_part);
          const Partition& local = *state.local;
          sample_hop(local.data.graph, local.first_node(), scratch.targets[local_part], hop.index,
                     hop.fanout, hop.options, hop.batch_index, scratch.picks[local_part],
                     &scratch.local);
        });
    for (int64_t p = 0; p < state.num_parts(); ++p) {
      if (p != state.local_part && !scratch.targets[static_cast<size_t>(p)].empty()) {
        receive_hop(state, p, *calls[static_cast<size_t>(p)], scratch);
      }
    }
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
