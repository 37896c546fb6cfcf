// DistHeteroGraph (hetero_client.h): connecting to the servers of a heterogeneous partitioned
// dataset (the local part, in worker mode, held in-process), and one batch of heterogeneous
// sampling across them.
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
using InfoCall = internal::Call<rpc::InfoRequest, rpc::InfoReply>;

int HeteroServiceInfo::node_type_index(std::string_view name) const {
  for (size_t t = 0; t < node_types.size(); ++t) {
    if (node_types[t].name == name) return static_cast<int>(t);
  }
  std::string known;
  for (const auto& type : node_types) known += (known.empty() ? "" : ", ") + type.name;
  throw ValueError(
      fmt::format("unknown node type {} (node types: {})", internal::quoted(name, 64), known));
}

namespace internal {

// The service an Info answer of a heterogeneous server describes (also hetero_batches.cc).
HeteroServiceInfo hetero_service_info(const rpc::InfoReply& reply, const std::string& address) {
  VOLLEY_REQUIRE(reply.heterogeneous(), ValueError,
                 "{} serves part {} of the homogeneous partitioned dataset '{}': connect with "
                 "DistGraph (Python: DistNeighborLoader with plain input_nodes)",
                 address, reply.part(), internal::quoted(reply.dataset_name(), 64));
  HeteroServiceInfo info;
  info.dataset_name = reply.dataset_name();
  info.fingerprint = reply.fingerprint();
  for (const rpc::NodeTypeInfo& type : reply.node_types()) {
    HeteroNodeTypeService& out = info.node_types.emplace_back();
    out.name = type.name();
    out.book = PartitionBook(std::vector<int64_t>(type.offsets().begin(), type.offsets().end()));
    VOLLEY_REQUIRE(out.book.num_parts() == reply.num_parts(), ValueError,
                   "{}: node type '{}' has a book of {} parts, the dataset {}", address, out.name,
                   out.book.num_parts(), reply.num_parts());
    out.feature_dim = type.feature_dim();
    if (out.feature_dim > 0)
      out.feature_dtype = internal::parse_dtype(type.feature_dtype(), address);
    if (!type.label_dtype().empty())
      out.label_dtype = internal::parse_dtype(type.label_dtype(), address);
    out.num_classes = type.num_classes();
  }
  for (const rpc::EdgeTypeInfo& type : reply.edge_types()) {
    info.edge_types.push_back({type.src(), type.relation(), type.dst()});
    info.num_edges.push_back(type.num_edges());
    info.has_weights.push_back(type.has_weights());
    info.node_type_index(type.src());  // both ends must be known node types
    info.node_type_index(type.dst());
  }
  return info;
}

}  // namespace internal

namespace {

// What the local partition (worker mode) describes, as a server's Info would.
HeteroServiceInfo local_service_info(const HeteroPartition& local, std::string fingerprint) {
  const HeteroPartitionManifest& manifest = local.manifest;
  HeteroServiceInfo info;
  info.dataset_name = manifest.name;
  info.fingerprint = std::move(fingerprint);
  for (size_t t = 0; t < manifest.node_types.size(); ++t) {
    HeteroNodeTypeService& out = info.node_types.emplace_back();
    const NodeTypeData& data = local.data.node_data[t];
    out.name = manifest.node_types[t].name;
    out.book = manifest.books[t];
    out.feature_dim = data.features ? data.features->dim(1) : 0;
    if (data.features) out.feature_dtype = data.features->dtype();
    if (data.labels) out.label_dtype = data.labels->dtype();
    out.num_classes = data.num_classes;
  }
  info.edge_types = manifest.edge_types;
  info.num_edges = manifest.num_edges;
  for (int e = 0; e < local.data.graph.num_edge_types(); ++e) {
    info.has_weights.push_back(local.data.graph.edges(e).has_weights());
  }
  return info;
}

// Info from every remote server at once (waiting for servers still starting), checked against
// each other and the local part.
void handshake(DistHeteroGraph::State& state) {
  const int64_t parts = state.num_parts();
  std::vector<std::unique_ptr<InfoCall>> calls(static_cast<size_t>(parts));
  std::latch done(parts - (state.local_part >= 0 ? 1 : 0));
  for (int64_t p = 0; p < parts; ++p) {
    if (p == state.local_part) continue;
    auto& call = calls[static_cast<size_t>(p)];
    call = std::make_unique<InfoCall>();
    internal::prepare(call->context, state.options, state.options.connect_seconds);
    call->context.set_wait_for_ready(true);
    call->request.set_protocol(kProtocolVersion);
    state.stubs[static_cast<size_t>(p)]->async()->Info(&call->context, &call->request, &call->reply,
                                                       internal::record_status(*call, done));
  }
  done.wait();
  std::string reference = state.local_part >= 0 ? "the local partition" : "";
  for (int64_t p = 0; p < parts; ++p) {
    if (p == state.local_part) continue;
    const std::string& address = state.addresses[static_cast<size_t>(p)];
    const rpc::InfoReply& reply = calls[static_cast<size_t>(p)]->reply;
    internal::check_info(calls[static_cast<size_t>(p)]->status, reply, address, p,
                         state.options.connect_seconds);
    VOLLEY_REQUIRE(reply.part() == p && reply.num_parts() == parts, ValueError,
                   "{} serves part {} of {}, but it was given as the address of part {} of {}; "
                   "list the addresses in part order",
                   address, reply.part(), reply.num_parts(), p, parts);
    HeteroServiceInfo info = internal::hetero_service_info(reply, address);
    if (reference.empty()) {
      state.info = std::move(info);
      reference = fmt::format("part {} at {}", p, address);
    }
    VOLLEY_REQUIRE(reply.fingerprint() == state.info.fingerprint, ValueError,
                   "part {} at {} serves dataset '{}' with fingerprint {}, but {} has "
                   "fingerprint {}: the servers must serve parts of the same partitioned dataset",
                   p, address, internal::quoted(reply.dataset_name()),
                   internal::quoted(reply.fingerprint()), reference, state.info.fingerprint);
    state.limits[static_cast<size_t>(p)] = internal::part_limits(reply, state.options);
    auto& degrees = state.max_degree[static_cast<size_t>(p)];
    for (const rpc::EdgeTypeInfo& type : reply.edge_types()) degrees.push_back(type.max_degree());
  }
}

}  // namespace

std::shared_ptr<const DistHeteroGraph> DistHeteroGraph::connect(std::vector<std::string> addresses,
                                                                ClientOptions options) {
  return connect(std::move(addresses), std::move(options), nullptr, "");
}

std::shared_ptr<const DistHeteroGraph> DistHeteroGraph::connect(std::vector<std::string> addresses,
                                                                ClientOptions options,
                                                                const std::string& local_directory,
                                                                int64_t local_part) {
  auto local =
      std::make_shared<const HeteroPartition>(load_hetero_partition(local_directory, local_part));
  return connect(std::move(addresses), std::move(options), std::move(local),
                 dataset_fingerprint(local_directory));
}

std::shared_ptr<const DistHeteroGraph> DistHeteroGraph::connect(
    std::vector<std::string> addresses, ClientOptions options,
    std::shared_ptr<const HeteroPartition> local, std::string fingerprint) {
  VOLLEY_REQUIRE(!addresses.empty(), ValueError,
                 "no server addresses given: list one host:port per partition, in part order");
  VOLLEY_REQUIRE(options.deadline_seconds > 0 && options.connect_seconds > 0, ValueError,
                 "deadline_seconds and connect_seconds must be > 0, got {} and {}",
                 options.deadline_seconds, options.connect_seconds);
  auto state = std::make_unique<State>();
  state->options = std::move(options);
  state->addresses = std::move(addresses);
  const auto parts = static_cast<size_t>(state->num_parts());
  if (local) {
    VOLLEY_REQUIRE(local->manifest.num_parts == state->num_parts(), ValueError,
                   "the local partition belongs to a dataset of {} parts, but {} addresses were "
                   "given; list one per part",
                   local->manifest.num_parts, parts);
    state->local_part = local->part;
    state->info = local_service_info(*local, std::move(fingerprint));
    state->local = std::move(local);
  }
  state->limits.resize(parts);
  state->max_degree.resize(parts);
  state->stubs.resize(parts);
  for (size_t p = 0; p < parts; ++p) {
    if (static_cast<int64_t>(p) == state->local_part) continue;
    VOLLEY_REQUIRE(!state->addresses[p].empty(), ValueError, "no address given for part {}", p);
    state->stubs[p] =
        rpc::PartitionService::NewStub(internal::make_channel(state->addresses[p], state->options));
  }
  handshake(*state);
  return std::shared_ptr<const DistHeteroGraph>(new DistHeteroGraph(std::move(state)));
}

DistHeteroGraph::DistHeteroGraph(std::unique_ptr<State> state) : state_(std::move(state)) {}
DistHeteroGraph::~DistHeteroGraph() = default;
const HeteroServiceInfo& DistHeteroGraph::info() const { return state_->info; }
const std::vector<std::string>& DistHeteroGraph::addresses() const { return state_->addresses; }
int64_t DistHeteroGraph::num_parts() const { return state_->num_parts(); }
int64_t DistHeteroGraph::local_part() const { return state_->local_part; }

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

  const HeteroServiceInfo& info() const { return state.info; }
  size_t num_node_types() const { return info().node_types.size(); }

  // Local id of `id` of node type `type`, appending it when new.
  int64_t local_of(size_t type, int64_t id) {
    auto& list = out.nodes[type];
    VOLLEY_REQUIRE(list.size() < (size_t{1} << 31) - 1, ValueError,
                   "a batch reached 2^31 nodes of type {}", info().node_types[type].name);
    const auto next = static_cast<int32_t>(list.size());
    const int32_t known = maps[type].insert(id, next);
    if (known >= 0) return known;
    list.push_back(id);
    return next;
  }

  // The seeds, checked as HeteroNeighborSampler checks them.
  void add_seeds(const std::vector<HeteroSeeds>& seeds) {
    std::vector<bool> given(num_node_types(), false);
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
        const int64_t local = local_of(type, id);
        VOLLEY_REQUIRE(list.size() > before, ValueError,
                       "duplicate seed {} of node type '{}' at positions {} and {}", id,
                       group.node_type, local, i);
      }
      out.num_seeds[type] = static_cast<int64_t>(list.size());
    }
  }

  // Edge type e's frontier [begin, end) of its destination type split by owner.
  void split(size_t e, size_t dst, int64_t begin, int64_t end) {
    const PartitionBook& book = info().node_types[dst].book;
    owner[e].clear();
    for (auto& list : targets[e]) list.clear();
    for (auto& sample : picks[e]) sample = HopSample{};
    for (int64_t i = begin; i < end; ++i) {
      const int64_t node = out.nodes[dst][static_cast<size_t>(i)];
      const auto p = static_cast<int32_t>(book.owner_of(node));
      owner[e].push_back(p);
      targets[e][static_cast<size_t>(p)].push_back(node);
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
    request.set_replace(options.replace);
    request.set_weighted(options.weighted);
    request.set_seed(options.seed);
    request.set_batch(batch_index);
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
      const EdgeType& type = info().edge_types[e];
      const Csr& csr = local.data.graph.edges(static_cast<int>(e));
      sample_hop(
          csr, local.first_node(type.dst), targets[e][lp], hop,
          fanouts[e][static_cast<size_t>(hop)],
          internal::hetero_hop_options(type, csr, options.replace, options.weighted, options.seed),
          batch_index, picks[e][lp], &scratch);
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
        rows.push_back(begin + static_cast<int64_t>(i));
        cols.push_back(local_of(src, neighbor));
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
  VOLLEY_REQUIRE(!options.disjoint && options.time_source == TimeSource::kNone, ValueError,
                 "distributed heterogeneous sampling is not disjoint or temporal yet (disjoint = "
                 "{}, time_source set = {})",
                 options.disjoint, options.time_source != TimeSource::kNone);
  const auto fanouts = resolve_hetero_fanouts(state_->info.edge_types, options);
  HeteroSampledSubgraph out;
  const size_t types = state_->info.node_types.size();
  const size_t edge_types = state_->info.edge_types.size();
  out.nodes.resize(types);
  out.nodes_per_hop.resize(types);
  out.num_seeds.assign(types, 0);
  for (auto* lists : {&out.rows, &out.cols, &out.edge_ids, &out.edges_per_hop}) {
    lists->resize(edge_types);
  }
  Sampling sampling{*state_, fanouts, options, batch_index, out, {}, {}, {}, {}};
  sampling.maps.resize(types);
  for (auto& map : sampling.maps) map.clear();
  sampling.owner.resize(edge_types);
  sampling.targets.assign(edge_types,
                          std::vector<std::vector<int64_t>>(static_cast<size_t>(num_parts())));
  sampling.picks.assign(edge_types, std::vector<HopSample>(static_cast<size_t>(num_parts())));
  sampling.add_seeds(seeds);
  sampling.run();
  return out;
}

}  // namespace volley::dist
