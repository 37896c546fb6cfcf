// The distributed sampler of both clients (internal/service_view.h) and DistGraph::sample, its
// one-type case (client.h). Per hop, every edge type's frontier is split by owner, remote parts
// get SampleHop calls (every edge type's and part's in flight at once) while the local part is
// sampled in-process, the replies are checked, and the picks are merged edge type by edge type
// in frontier order through the CPU sampler's TypedSubgraphBuilder, so the result equals the
// local sampler's on the whole renumbered graph. Disjoint and temporal sampling run the same way
// over tree-qualified keys (tree × the type's node count + node; the CPU kernel's
// TypedDisjointBuilder gives the same local ids): a target goes out as its node with its tree's
// seed time, its picks come back as nodes and get the tree's key.
#include <algorithm>
#include <cstdint>
#include <exception>
#include <latch>
#include <memory>
#include <span>
#include <vector>

#include "volley/dist/client.h"
#include "volley/dist/internal/id_map.h"
#include "volley/dist/internal/service_view.h"
#include "volley/dist/internal/wire.h"

namespace volley::dist {
namespace internal {
namespace {

using HopCall = Call<rpc::HopRequest, rpc::HopReply>;
using Builder = TypedSubgraphBuilder<IdMap>;

// Per worker thread: the merge's global → local maps (sized to the batch, not the graph) and one
// hop's frontiers split by owner, per edge type.
struct HopScratch {
  std::vector<IdMap> maps;                 // per node type
  std::vector<int64_t> neighbors;          // the builder's: one edge type's picks
  std::vector<std::vector<int64_t>> keys;  // disjoint: per seed group, its tree-qualified keys
  // Per edge type: each frontier node's owner and tree; per edge type and part: the targets
  // (nodes), their trees' seed times (temporal) and the part's answer.
  std::vector<std::vector<int32_t>> owner;
  std::vector<std::vector<int64_t>> tree;
  std::vector<std::vector<std::vector<int64_t>>> targets, times;
  std::vector<std::vector<HopSample>> picks;

  // Ready for a batch (the lists keep their capacity from batch to batch).
  void reset(size_t node_types, size_t edge_types, size_t parts) {
    maps.resize(node_types);
    for (IdMap& map : maps) map.clear();
    owner.resize(edge_types);
    tree.resize(edge_types);
    for (auto* lists : {&targets, &times}) {
      lists->resize(edge_types);
      for (auto& per_part : *lists) per_part.resize(parts);
    }
    picks.resize(edge_types);
    for (auto& per_part : picks) per_part.resize(parts);
  }
};

// One batch's hops.
struct Across {
  const ServiceView& service;
  const NeighborSamplerOptions& options;
  const std::vector<std::vector<int64_t>>& fanouts;  // per edge type, one per hop
  uint64_t batch_index;
  std::span<const int64_t> tree_times;
  HopScratch& s;
  bool temporal;
  bool disjoint;  // or temporal

  // Keys of node type t are tree * tree_size(t) + node when disjoint.
  int64_t tree_size(int type) const {
    return disjoint ? service.books[static_cast<size_t>(type)]->num_nodes() : 0;
  }

  // Edge type e's frontier (keys of its destination type) split by owner.
  void split(size_t e, std::span<const int64_t> frontier) {
    const ServiceView::Edges& ends = service.edges[e];
    const PartitionBook& book = *service.books[static_cast<size_t>(ends.dst)];
    const int64_t n = tree_size(ends.dst);
    for (auto& list : s.targets[e]) list.clear();
    for (auto& list : s.times[e]) list.clear();
    for (HopSample& answer : s.picks[e]) {
      answer.counts.clear();
      answer.neighbors.clear();
      answer.edge_ids.clear();
    }
    s.owner[e].resize(frontier.size());
    s.tree[e].resize(frontier.size());
    for (size_t i = 0; i < frontier.size(); ++i) {
      const int64_t tree = n > 0 ? frontier[i] / n : 0;
      const int64_t node = frontier[i] - tree * n;
      const auto part = static_cast<size_t>(book.owner_of(node));
      s.owner[e][i] = static_cast<int32_t>(part);
      s.tree[e][i] = tree;
      s.targets[e][part].push_back(node);
      if (temporal) s.times[e][part].push_back(tree_times[static_cast<size_t>(tree)]);
    }
  }

  // Targets per call to part p for edge type e: its answers (a count and the picks a target) and
  // the request (an id, and a time when temporal) under the part's limits.
  int64_t targets_per_call(size_t p, size_t e, int64_t fanout) const {
    PartLimits limits = service.limits[p];
    const int64_t cap = limits.max_reply_bytes;  // more than one reply holds: one target a call
    const int64_t longest = service.max_degree(p, e);
    const int64_t degree = longest < 0 ? cap : longest;
    int64_t picks = degree;
    if (fanout != -1 && (options.replace || fanout < degree)) picks = fanout;
    if (temporal) limits.max_ids = std::max<int64_t>(1, limits.max_ids / 2);
    return internal::targets_per_call(limits, 4 + 16 * std::min(picks, cap / 16),
                                      temporal ? 16 : 8);
  }

  // Starts the SampleHop call of edge type e's targets [begin, end) at part p.
  void send(size_t e, size_t p, size_t begin, size_t end, int hop, HopCall& call,
            std::latch& done) const {
    prepare(call.context, service.options, service.options.deadline_seconds);
    rpc::HopRequest& request = call.request;
    request.set_protocol(kProtocolVersion);
    request.set_fingerprint(service.fingerprint);
    request.set_edge_type(service.edges[e].name);
    pack(std::span<const int64_t>(s.targets[e][p]).subspan(begin, end - begin),
         request.mutable_targets());
    request.set_hop(static_cast<uint32_t>(hop));
    request.set_fanout(fanout_of(e, hop));
    options_to_wire(options, request.mutable_sampler(), /*with_fanouts=*/false);
    request.set_batch(batch_index);
    if (temporal) {
      pack(std::span<const int64_t>(s.times[e][p]).subspan(begin, end - begin),
           request.mutable_target_times());
    }
    stub_for(service.servers, static_cast<int64_t>(p), call)
        ->async()
        ->SampleHop(&call.context, &call.request, &call.reply, record_status(call, done));
  }

  // A call's answer appended to the part's picks (one copy out of the reply, ids widened on the
  // way): the call's error, or RuntimeError naming the part for a malformed one (counts that do
  // not match the targets, the neighbors, or their type's range), which ends the batch.
  void receive(size_t e, size_t p, size_t asked, const HopCall& call) {
    if (!call.status.ok()) service.fail_call(call.status, static_cast<int64_t>(p), "SampleHop");
    HopSample& into = s.picks[e][p];
    const size_t counts_before = into.counts.size(), picks_before = into.neighbors.size(),
                 ids_before = into.edge_ids.size();
    const bool well_formed =
        append(call.reply.counts(), into.counts) &&
        append_ids(call.reply.neighbors(), call.reply.neighbor_bytes(), into.neighbors) &&
        append_ids(call.reply.edge_ids(), call.reply.edge_id_bytes(), into.edge_ids) &&
        into.counts.size() - counts_before == asked &&
        into.neighbors.size() - picks_before == into.edge_ids.size() - ids_before;
    int64_t total = 0;
    if (well_formed) {
      for (size_t i = counts_before; i < into.counts.size(); ++i) {
        total += into.counts[i] < 0 ? INT64_MIN / 2 : into.counts[i];
      }
    }
    const std::string& name = service.edges[e].name;
    const size_t picks = into.neighbors.size() - picks_before;
    VOLLEY_REQUIRE(well_formed && total == static_cast<int64_t>(picks), RuntimeError,
                   "part {} at {}: malformed SampleHop reply{}{} ({} counts for {} targets, {} "
                   "neighbors, {} edge ids)",
                   p, service.addresses[p], name.empty() ? "" : " for edge type ", name,
                   into.counts.size() - counts_before, asked, picks,
                   into.edge_ids.size() - ids_before);
    const int64_t n = service.books[static_cast<size_t>(service.edges[e].src)]->num_nodes();
    for (size_t j = picks_before; j < into.neighbors.size(); ++j) {
      const int64_t neighbor = into.neighbors[j];
      VOLLEY_REQUIRE(neighbor >= 0 && neighbor < n, RuntimeError,
                     "part {} at {}: SampleHop{}{} returned node {} outside [0, {})", p,
                     service.addresses[p], name.empty() ? "" : " of edge type ", name, neighbor, n);
    }
  }

  int64_t fanout_of(size_t e, int hop) const { return fanouts[e][static_cast<size_t>(hop)]; }

  // Every active edge type's calls of hop `hop` (run_waves: waves of max(8, busy (type, part)
  // pairs) calls), the local part sampled while the first wave is in flight.
  void call_all(int hop, const std::vector<bool>& active) {
    struct Piece {
      size_t e, part, begin, end;
    };
    std::vector<Piece> pieces;
    size_t busy = 0;
    const auto local = static_cast<size_t>(service.local_part);
    for (size_t e = 0; e < active.size(); ++e) {
      if (!active[e]) continue;
      for (size_t p = 0; p < s.targets[e].size(); ++p) {
        const size_t count = s.targets[e][p].size();
        busy += count > 0;
        if (count == 0 || (service.local_part >= 0 && p == local)) continue;
        const auto step =
            static_cast<size_t>(std::max<int64_t>(1, targets_per_call(p, e, fanout_of(e, hop))));
        for (size_t begin = 0; begin < count; begin += step) {
          pieces.push_back({e, p, begin, std::min(count, begin + step)});
        }
      }
    }
    run_waves<HopCall>(
        service.servers, pieces, std::max<size_t>(8, busy),
        [&](const Piece& piece, std::unique_ptr<HopCall>& call, std::latch& done) {
          call = std::make_unique<HopCall>();
          send(piece.e, piece.part, piece.begin, piece.end, hop, *call, done);
        },
        [&](const Piece& piece, const HopCall& call) {
          receive(piece.e, piece.part, piece.end - piece.begin, call);
        },
        [&] {
          if (service.local_part < 0) return;
          for (size_t e = 0; e < active.size(); ++e) {
            if (!active[e] || s.targets[e][local].empty()) continue;
            service.sample_local(e, hop, fanout_of(e, hop), s.targets[e][local], s.times[e][local],
                                 s.picks[e][local]);
          }
        });
  }

  // Edge type e's picks appended in frontier order (the frontier starting at local id `begin`):
  // exactly the single-machine sampler's order (each part's picks are grouped by target, in its
  // target order); a disjoint pick gets its target's tree.
  void merge(size_t e, size_t begin, Builder& builder) const {
    const ServiceView::Edges& ends = service.edges[e];
    const int64_t n = tree_size(ends.src);
    const size_t parts = s.picks[e].size();
    std::vector<size_t> next_target(parts, 0), next_pick(parts, 0);
    for (size_t i = 0; i < s.owner[e].size(); ++i) {
      const auto p = static_cast<size_t>(s.owner[e][i]);
      const HopSample& picks = s.picks[e][p];
      const auto count = static_cast<size_t>(picks.counts[next_target[p]++]);
      const size_t first = next_pick[p];
      if (n == 0) {
        builder.add_edges(begin + i, picks.neighbors.data() + first, picks.edge_ids.data() + first,
                          count);
      } else {
        const int64_t base = s.tree[e][i] * n;
        for (size_t j = first; j < first + count; ++j) {
          builder.add_edge(begin + i, base + picks.neighbors[j], picks.edge_ids[j]);
        }
      }
      next_pick[p] += count;
    }
  }

  void run(std::span<const TypedSeeds> groups, TypedLists& lists) {
    const size_t types = service.books.size();
    const size_t edge_types = service.edges.size();
    s.reset(types, edge_types, static_cast<size_t>(service.num_parts()));
    std::vector<TypedSeeds> placed(groups.begin(), groups.end());
    if (disjoint) {  // the seeds become keys tree * n + seed, trees numbered over all groups
      int64_t count = 0, largest = 1;
      for (const TypedSeeds& group : groups) count += static_cast<int64_t>(group.ids.size());
      for (const PartitionBook* book : service.books) {
        largest = std::max(largest, book->num_nodes());
      }
      VOLLEY_REQUIRE(count <= (int64_t{1} << 62) / largest, ValueError,
                     "disjoint sampling of {} seeds over {} nodes{} exceeds 2^62 tree-qualified "
                     "ids",
                     count, largest, types > 1 ? " (the largest node type)" : "");
      s.keys.resize(groups.size());
      int64_t tree = 0;
      for (size_t g = 0; g < groups.size(); ++g) {
        const int64_t n = tree_size(groups[g].type);
        s.keys[g].resize(groups[g].ids.size());
        for (size_t i = 0; i < groups[g].ids.size(); ++i) {
          s.keys[g][i] = tree++ * n + groups[g].ids[i];
        }
        placed[g].ids = s.keys[g];
      }
    }
    Builder builder(lists, std::span<IdMap>(s.maps), s.neighbors);
    place_seeds(builder, std::span<const TypedSeeds>(placed));
    builder.start();
    const size_t hops = fanouts.empty() ? 0 : fanouts.front().size();
    std::vector<bool> active(edge_types);
    std::vector<size_t> frontier(edge_types);
    for (size_t hop = 0; hop < hops; ++hop) {
      for (size_t e = 0; e < edge_types; ++e) {
        const int dst = service.edges[e].dst;
        frontier[e] = builder.frontier_begin(dst);
        const size_t size = builder.frontier_end(dst) - frontier[e];
        active[e] = fanouts[e][hop] != 0 && size > 0;
        if (active[e]) split(e, {builder.nodes(dst) + frontier[e], size});
      }
      call_all(static_cast<int>(hop), active);
      for (size_t e = 0; e < edge_types; ++e) {
        builder.begin_edges(static_cast<int>(e), service.edges[e].src, service.edges[e].dst);
        if (active[e]) merge(e, frontier[e], builder);
        builder.end_edges();
      }
      builder.end_hop();
    }
    builder.finish();
    if (!disjoint) return;
    for (size_t t = 0; t < types; ++t) {  // keys back to nodes and their trees
      const int64_t n = tree_size(static_cast<int>(t));
      std::vector<int64_t>& nodes = *lists.nodes[t];
      std::vector<int64_t>& trees = *lists.batch[t];
      trees.resize(nodes.size());
      for (size_t i = 0; i < nodes.size(); ++i) {
        trees[i] = nodes[i] / n;
        nodes[i] %= n;
      }
    }
  }
};

}  // namespace

void sample_across(const ServiceView& service, std::span<const TypedSeeds> groups,
                   const std::vector<std::vector<int64_t>>& fanouts,
                   const NeighborSamplerOptions& options, uint64_t batch_index,
                   std::span<const int64_t> tree_times, TypedLists& lists) {
  thread_local HopScratch scratch;
  const bool temporal = options.time_source != TimeSource::kNone;
  Across across{service,    options, fanouts,  batch_index,
                tree_times, scratch, temporal, options.disjoint || temporal};
  across.run(groups, lists);
}

}  // namespace internal

namespace {

// The one-type service of a DistGraph, its local part (worker mode) sampled with `options`.
internal::ServiceView service_view(const DistGraph::State& state,
                                   const NeighborSamplerOptions& options, uint64_t batch_index) {
  internal::ServiceView service = internal::view_of(state);
  service.sample_local = [&state, &options, batch_index](
                             size_t, int hop, int64_t fanout, std::span<const int64_t> targets,
                             std::span<const int64_t> times, HopSample& out) {
    thread_local SamplerScratch scratch;
    const Partition& local = *state.local;
    const Csr& graph = local.data.graph;
    if (options.time_source == TimeSource::kNone) {
      sample_hop(graph, local.first_node(), targets, hop, fanout, options, batch_index, out,
                 &scratch);
      return;
    }
    HopTimes hop_times;
    hop_times.target_times = times;
    if (options.time_source == TimeSource::kEdge) {
      if (graph.edge_time()) hop_times.edge_time = graph.edge_time()->span<int64_t>();
      hop_times.rows_sorted = graph.first_row_unsorted_by_edge_time() < 0;
    } else {
      if (local.node_time) hop_times.node_time = local.node_time->span<int64_t>();
      hop_times.rows_sorted = local.node_time_rows_sorted;
    }
    sample_hop(graph, local.first_node(), targets, hop, fanout, options, batch_index, hop_times,
               out, &scratch);
  };
  return service;
}

void sample_one_type(const DistGraph::State& state, std::span<const int64_t> seeds,
                     std::span<const int64_t> seed_times, const NeighborSamplerOptions& options,
                     uint64_t batch_index, SampledSubgraph& result) {
  const bool disjoint = options.disjoint || options.time_source != TimeSource::kNone;
  VOLLEY_REQUIRE(!disjoint || options.subgraph_type == SubgraphType::kDirectional, ValueError,
                 "the distributed sampler samples disjoint and temporal subgraphs directional "
                 "only, got subgraph_type='{}'",
                 subgraph_type_name(options.subgraph_type));
  for (size_t i = 0; i < seeds.size(); ++i) {
    TypedHopEdges::check_seed(seeds[i], i, state.info.book.num_nodes());
  }
  HostSubgraph out;
  TypedLists lists;
  point_at(out, lists);
  const TypedSeeds group{.ids = seeds, .name = {}};
  internal::sample_across(service_view(state, options, batch_index), {&group, 1}, {options.fanouts},
                          options, batch_index, seed_times, lists);
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
  sample_one_type(*state_, seeds, seed_times, options, batch_index, result);
}

void DistGraph::sample(std::span<const int64_t> seeds, const NeighborSamplerOptions& options,
                       uint64_t batch_index, SampledSubgraph& result) const {
  validate(options);
  VOLLEY_REQUIRE(options.time_source == TimeSource::kNone, ValueError,
                 "temporal sampling needs seed times (sample_temporal)");
  sample_one_type(*state_, seeds, {}, options, batch_index, result);
}

SampledSubgraph DistGraph::sample(std::span<const int64_t> seeds,
                                  const NeighborSamplerOptions& options,
                                  uint64_t batch_index) const {
  SampledSubgraph out;
  sample(seeds, options, batch_index, out);
  return out;
}

}  // namespace volley::dist
