// DistHeteroGraph::sample (hetero_client.h): one batch of heterogeneous sampling across the
// servers (disjoint and temporal too), the local part in worker mode sampled in-process.
#include "volley/dist/hetero_client.h"

#include <algorithm>
#include <cstring>
#include <latch>

#include "volley/dist/internal/hetero_client_state.h"
#include "volley/dist/internal/id_map.h"
#include "volley/dist/internal/wire.h"

namespace volley::dist {

using internal::pack;
using internal::unpack;
using HopCall = internal::Call<rpc::HopRequest, rpc::HopReply>;

// --- sampling ------------------------------------------------------------------------------

namespace {

// One batch: the output, a global → local map per node type, and one hop's calls.
struct Sampling {
  const DistHeteroGraph::State& state;
  const std::vector<std::vector<int64_t>>& fanouts;
  const HeteroSamplerOptions& options;
  uint64_t batch_index;
  HeteroSampledSubgraph& out;
  std::vector<internal::IdMap> maps;  // per node type
  // One hop, per edge type: each frontier node's owner, the targets sent to each part, and each
  // part's answers (grouped by target, in target order).
  std::vector<std::vector<int32_t>> owner;
  std::vector<std::vector<std::vector<int64_t>>> targets;
  std::vector<std::vector<HopSample>> picks;
  // Disjoint / temporal: a tree per seed; each seed's time (temporal) and, per hop, the time of
  // each target sent ([edge type][part], as `targets`).
  std::vector<int64_t> tree_time;
  std::vector<std::vector<std::vector<int64_t>>> target_times;

  bool temporal() const { return options.time_source != TimeSource::kNone; }
  bool disjoint() const { return options.disjoint || temporal(); }

  const HeteroServiceInfo& info() const { return state.info; }
  size_t num_node_types() const { return info().node_types.size(); }

  // Local id of `id` of node type `type` (in tree `tree` when disjoint), appending it when new.
  int64_t local_of(size_t type, int64_t id, int64_t tree) {
    auto& list = out.nodes[type];
    VOLLEY_REQUIRE(list.size() < (size_t{1} << 31) - 1, ValueError,
                   "a batch reached 2^31 nodes of type {}", info().node_types[type].name);
    const auto next = static_cast<int32_t>(list.size());
    const int64_t key = disjoint() ? tree * info().node_types[type].book.num_nodes() + id : id;
    const int32_t known = maps[type].insert(key, next);
    if (known >= 0) return known;
    list.push_back(id);
    if (disjoint()) out.batch[type].push_back(tree);
    return next;
  }

  // The time of each seed of `group` (node type `type`) onto tree_time: its given times, else
  // (by node time) the seeds' own node times, from the local part's directory or their owners.
  void add_seed_times(const HeteroSeeds& group, size_t type) {
    if (!group.times.empty()) {
      VOLLEY_REQUIRE(group.times.size() == group.ids.size(), ValueError,
                     "seeds of node type '{}': {} times for {} seeds (one time per seed)",
                     group.node_type, group.times.size(), group.ids.size());
      tree_time.insert(tree_time.end(), group.times.begin(), group.times.end());
      return;
    }
    if (group.ids.empty()) return;
    const bool by_node = options.time_source == TimeSource::kNode;
    VOLLEY_REQUIRE(by_node && info().node_types[type].has_node_time, ValueError,
                   "seeds of node type '{}' need a time each (seed times / input_time): {}",
                   group.node_type,
                   by_node ? "the node type has no node time to default to"
                           : "sampling by edge time has no node time to default to");
    const size_t before = tree_time.size();
    tree_time.resize(before + group.ids.size());
    if (state.local_times && state.local_times->node_time(type)) {  // every id's, in-process
      const int64_t* own = state.local_times->node_time(type)->data<int64_t>();
      for (size_t i = 0; i < group.ids.size(); ++i) tree_time[before + i] = own[group.ids[i]];
      return;
    }
    internal::gather_typed_rows(state, static_cast<int>(type), rpc::RowsRequest::NODE_TIME,
                                group.ids, DType::kInt64, sizeof(int64_t),
                                reinterpret_cast<std::byte*>(tree_time.data() + before));
  }

  // The seeds, checked as HeteroNeighborSampler checks them.
  void add_seeds(const std::vector<HeteroSeeds>& seeds) {
    std::vector<bool> given(num_node_types(), false);
    int64_t tree = 0;  // disjoint: the seed's position among all seeds
    for (const HeteroSeeds& group : seeds) {
      const auto type = static_cast<size_t>(info().node_type_index(group.node_type));
      VOLLEY_REQUIRE(!given[type], ValueError, "seeds of node type '{}' are given twice",
                     group.node_type);
      given[type] = true;
      const int64_t n = info().node_types[type].book.num_nodes();
      auto& list = out.nodes[type];
      for (size_t i = 0; i < group.ids.size(); ++i) {
        const int64_t id = group.ids[i];
        VOLLEY_REQUIRE(id >= 0 && id < n, IndexError,
                       "seed id {} of node type '{}' at position {} out of range for {} nodes", id,
                       group.node_type, i, n);
        const size_t before = list.size();
        const int64_t local = local_of(type, id, tree++);
        VOLLEY_REQUIRE(list.size() > before, ValueError,
                       "duplicate seed {} of node type '{}' at positions {} and {}", id,
                       group.node_type, local, i);
      }
      if (temporal()) add_seed_times(group, type);
      out.num_seeds[type] = static_cast<int64_t>(list.size());
    }
  }

  // Edge type e's frontier [begin, end) of its destination type split by owner.
  void split(size_t e, size_t dst, int64_t begin, int64_t end) {
    const PartitionBook& book = info().node_types[dst].book;
    owner[e].clear();
    for (auto& list : targets[e]) list.clear();
    for (auto& list : target_times[e]) list.clear();
    for (auto& sample : picks[e]) sample = HopSample{};
    for (int64_t i = begin; i < end; ++i) {
      const int64_t node = out.nodes[dst][static_cast<size_t>(i)];
      const auto p = static_cast<int32_t>(book.owner_of(node));
      owner[e].push_back(p);
      targets[e][static_cast<size_t>(p)].push_back(node);
      if (temporal()) {  // the time of the target's tree travels with it
        const int64_t tree = out.batch[dst][static_cast<size_t>(i)];
        target_times[e][static_cast<size_t>(p)].push_back(tree_time[static_cast<size_t>(tree)]);
      }
    }
  }

  // The most bytes one target's answer may take at part p for edge type e.
  int64_t bytes_per_target(size_t p, size_t e, int64_t fanout) const {
    const internal::PartLimits& limits = state.limits[p];
    const int64_t cap = limits.max_reply_bytes;
    const int64_t degree = state.max_degree[p].size() > e ? state.max_degree[p][e] : cap;
    int64_t count = degree;
    if (fanout != -1 && (options.replace || fanout < degree)) count = fanout;
    return 4 + 16 * std::min(count, cap / 16);
  }

  void send(size_t e, size_t p, size_t begin, size_t end, int hop, HopCall& call,
            std::latch& done) const {
    internal::prepare(call.context, state.options, state.options.deadline_seconds);
    rpc::HopRequest& request = call.request;
    request.set_protocol(kProtocolVersion);
    request.set_fingerprint(info().fingerprint);
    request.set_edge_type(info().edge_types[e].name());
    pack(std::span<const int64_t>(targets[e][p]).subspan(begin, end - begin),
         request.mutable_targets());
    request.set_hop(static_cast<uint32_t>(hop));
    request.set_fanout(fanouts[e][static_cast<size_t>(hop)]);
    internal::options_to_wire(options, request.mutable_sampler(), /*with_fanouts=*/false);
    request.set_batch(batch_index);
    if (temporal()) {
      pack(std::span<const int64_t>(target_times[e][p]).subspan(begin, end - begin),
           request.mutable_target_times());
    }
    state.stubs[p]->async()->SampleHop(&call.context, &call.request, &call.reply,
                                       internal::record_status(call, done));
  }

  // Appends a call's answer to picks[e][p]; the call's error, or RuntimeError for a malformed one.
  void receive(size_t e, size_t p, size_t targets_asked, const HopCall& call) {
    if (!call.status.ok()) state.fail_call(call.status, static_cast<int64_t>(p), "SampleHop");
    HopSample answer;
    const bool well_formed = unpack(call.reply.counts(), answer.counts) &&
                             unpack(call.reply.neighbors(), answer.neighbors) &&
                             unpack(call.reply.edge_ids(), answer.edge_ids) &&
                             answer.counts.size() == targets_asked &&
                             answer.neighbors.size() == answer.edge_ids.size();
    int64_t total = 0;
    if (well_formed) {
      for (const int32_t c : answer.counts) total += c < 0 ? INT64_MIN / 2 : c;
    }
    VOLLEY_REQUIRE(well_formed && total == static_cast<int64_t>(answer.neighbors.size()),
                   RuntimeError,
                   "part {} at {}: malformed SampleHop reply for edge type {} ({} counts for {} "
                   "targets, {} neighbors, {} edge ids)",
                   p, state.addresses[p], info().edge_types[e].name(), answer.counts.size(),
                   targets_asked, answer.neighbors.size(), answer.edge_ids.size());
    HopSample& into = picks[e][p];
    into.counts.insert(into.counts.end(), answer.counts.begin(), answer.counts.end());
    into.neighbors.insert(into.neighbors.end(), answer.neighbors.begin(), answer.neighbors.end());
    into.edge_ids.insert(into.edge_ids.end(), answer.edge_ids.begin(), answer.edge_ids.end());
  }

  // Every edge type's calls of hop `hop` (their frontiers split), in flight at once.
  void call_all(int hop, const std::vector<bool>& active) {
    struct Piece {
      size_t e, p, begin, end;
    };
    std::vector<Piece> pieces;
    for (size_t e = 0; e < active.size(); ++e) {
      if (!active[e]) continue;
      const int64_t fanout = fanouts[e][static_cast<size_t>(hop)];
      for (size_t p = 0; p < targets[e].size(); ++p) {
        if (static_cast<int64_t>(p) == state.local_part) continue;  // sample_local()
        const size_t count = targets[e][p].size();
        const auto step = static_cast<size_t>(
            internal::targets_per_call(state.limits[p], bytes_per_target(p, e, fanout)));
        for (size_t begin = 0; begin < count; begin += step) {
          pieces.push_back({e, p, begin, std::min(count, begin + step)});
        }
      }
    }
    // The local part is sampled while the first wave is in flight; its error is rethrown only
    // after the wave ended (the calls reference this frame).
    bool local_done = state.local_part < 0;
    std::exception_ptr local_error;
    const auto run_local = [&] {
      if (local_done) return;
      local_done = true;
      try {
        sample_local(hop, active);
      } catch (...) {
        local_error = std::current_exception();
      }
    };
    constexpr size_t kWave = 64;  // calls in flight at once
    for (size_t next = 0; next < pieces.size(); next += kWave) {
      const size_t end = std::min(pieces.size(), next + kWave);
      std::vector<std::unique_ptr<HopCall>> calls(end - next);
      std::latch done(static_cast<std::ptrdiff_t>(end - next));
      for (size_t i = next; i < end; ++i) {
        calls[i - next] = std::make_unique<HopCall>();
        const Piece& piece = pieces[i];
        send(piece.e, piece.p, piece.begin, piece.end, hop, *calls[i - next], done);
      }
      run_local();
      done.wait();
      if (local_error) std::rethrow_exception(local_error);
      for (size_t i = next; i < end; ++i) {
        const Piece& piece = pieces[i];
        receive(piece.e, piece.p, piece.end - piece.begin, *calls[i - next]);
      }
    }
    run_local();  // no remote calls this hop
    if (local_error) std::rethrow_exception(local_error);
  }

  // Worker mode: the local part's targets of every active edge type, sampled in-process.
  void sample_local(int hop, const std::vector<bool>& active) {
    const auto lp = static_cast<size_t>(state.local_part);
    const HeteroPartition& local = *state.local;
    SamplerScratch scratch;
    for (size_t e = 0; e < active.size(); ++e) {
      if (!active[e] || targets[e][lp].empty()) continue;
      const internal::TypedHop typed{.edge_type = e,
                                     .targets = targets[e][lp],
                                     .hop = hop,
                                     .fanout = fanouts[e][static_cast<size_t>(hop)],
                                     .replace = options.replace,
                                     .weighted = options.weighted,
                                     .seed = options.seed,
                                     .batch = batch_index,
                                     .time_source = options.time_source,
                                     .temporal_strategy = options.temporal_strategy,
                                     .target_times = target_times[e][lp]};
      internal::sample_typed_hop(local, *state.local_times, typed, picks[e][lp], &scratch);
    }
  }

  // Edge type e's picks appended in frontier order (frontier starting at local id `begin`),
  // neighbors relabeled in that order: what HeteroNeighborSampler's expand() does.
  void merge(size_t e, int64_t begin) {
    const EdgeType& type = info().edge_types[e];
    const auto src = static_cast<size_t>(info().node_type_index(type.src));
    const int64_t num_src = info().node_types[src].book.num_nodes();
    auto& rows = out.rows[e];
    auto& cols = out.cols[e];
    auto& eids = out.edge_ids[e];
    const size_t before = rows.size();
    const size_t parts = picks[e].size();
    // The target's tree (read by index: the destination type's list grows when src == dst).
    const std::vector<int64_t>* trees =
        disjoint() ? &out.batch[static_cast<size_t>(info().node_type_index(type.dst))] : nullptr;
    std::vector<size_t> next_target(parts, 0), next_pick(parts, 0);
    for (size_t i = 0; i < owner[e].size(); ++i) {
      const auto p = static_cast<size_t>(owner[e][i]);
      const HopSample& sample = picks[e][p];
      const auto count = static_cast<size_t>(sample.counts[next_target[p]++]);
      for (size_t j = next_pick[p]; j < next_pick[p] + count; ++j) {
        const int64_t neighbor = sample.neighbors[j];
        VOLLEY_REQUIRE(neighbor >= 0 && neighbor < num_src, RuntimeError,
                       "part {} at {}: SampleHop of edge type {} returned {} id {} outside [0, {})",
                       p, state.addresses[p], type.name(), type.src, neighbor, num_src);
        const int64_t row = begin + static_cast<int64_t>(i);
        rows.push_back(row);
        cols.push_back(
            local_of(src, neighbor, trees != nullptr ? (*trees)[static_cast<size_t>(row)] : 0));
        eids.push_back(sample.edge_ids[j]);
      }
      next_pick[p] += count;
    }
    out.edges_per_hop[e].push_back(static_cast<int64_t>(rows.size() - before));
  }

  void run() {
    const size_t types = num_node_types();
    const size_t edge_types = info().edge_types.size();
    const size_t hops = fanouts.empty() ? 0 : fanouts.front().size();
    std::vector<int64_t> frontier_begin(types, 0), frontier_end(types);
    for (size_t t = 0; t < types; ++t) {
      frontier_end[t] = static_cast<int64_t>(out.nodes[t].size());
      out.nodes_per_hop[t].push_back(frontier_end[t]);
    }
    for (size_t hop = 0; hop < hops; ++hop) {
      std::vector<bool> active(edge_types, false);
      std::vector<size_t> dst(edge_types);
      for (size_t e = 0; e < edge_types; ++e) {
        dst[e] = static_cast<size_t>(info().node_type_index(info().edge_types[e].dst));
        split(e, dst[e], frontier_begin[dst[e]], frontier_end[dst[e]]);
        active[e] = fanouts[e][hop] != 0 && frontier_end[dst[e]] > frontier_begin[dst[e]];
      }
      call_all(static_cast<int>(hop), active);
      for (size_t e = 0; e < edge_types; ++e) {
        if (active[e]) {
          merge(e, frontier_begin[dst[e]]);
        } else {
          out.edges_per_hop[e].push_back(0);
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

HeteroSampledSubgraph DistHeteroGraph::sample(const std::vector<HeteroSeeds>& seeds,
                                              const HeteroSamplerOptions& options,
                                              uint64_t batch_index) const {
  VOLLEY_REQUIRE(options.time_source == TimeSource::kNone || !options.weighted, ValueError,
                 "temporal sampling does not support weighted sampling yet");
  const auto fanouts = resolve_hetero_fanouts(state_->info.edge_types, options);
  HeteroSampledSubgraph out;
  const size_t types = state_->info.node_types.size();
  const size_t edge_types = state_->info.edge_types.size();
  out.nodes.resize(types);
  out.nodes_per_hop.resize(types);
  out.num_seeds.assign(types, 0);
  const bool disjoint = options.disjoint || options.time_source != TimeSource::kNone;
  out.batch.assign(disjoint ? types : 0, {});
  if (disjoint) {  // tree-qualified ids (tree × nodes of the type + id) must fit, as locally
    int64_t count = 0, largest = 1;
    for (const HeteroSeeds& group : seeds) count += static_cast<int64_t>(group.ids.size());
    for (const auto& type : state_->info.node_types)
      largest = std::max(largest, type.book.num_nodes());
    VOLLEY_REQUIRE(count <= (int64_t{1} << 62) / largest, ValueError,
                   "disjoint sampling of {} seeds over node types of up to {} nodes exceeds 2^62 "
                   "tree-qualified ids",
                   count, largest);
  }
  for (auto* lists : {&out.rows, &out.cols, &out.edge_ids, &out.edges_per_hop}) {
    lists->resize(edge_types);
  }
  Sampling sampling{*state_, fanouts, options, batch_index, out, {}, {}, {}, {}, {}, {}};
  sampling.maps.resize(types);
  for (auto& map : sampling.maps) map.clear();
  sampling.owner.resize(edge_types);
  sampling.targets.assign(edge_types,
                          std::vector<std::vector<int64_t>>(static_cast<size_t>(num_parts())));
  sampling.picks.assign(edge_types, std::vector<HopSample>(static_cast<size_t>(num_parts())));
  sampling.target_times.assign(edge_types,
                               std::vector<std::vector<int64_t>>(static_cast<size_t>(num_parts())));
  sampling.add_seeds(seeds);
  sampling.run();
  return out;
}

}  // namespace volley::dist
