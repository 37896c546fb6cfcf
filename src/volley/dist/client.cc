// The trainer's side of the distributed service: DistGraph (worker mode and plain clients) and
// ServerClientLoader (server-client mode). See client.h for the contract.
#include "volley/dist/client.h"

#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <fstream>
#include <latch>
#include <mutex>
#include <sstream>
#include <thread>

#include "volley/dist/internal/id_map.h"
#include "volley/dist/internal/wire.h"
#include "volley/dist/volley.grpc.pb.h"
#include "volley/feature/gather.h"
#include "volley/sampling/cpu/neighbor_kernel.h"

namespace volley::dist {

namespace rpc = ::volley::rpc;
using internal::pack;
using internal::unpack;

std::string dataset_fingerprint(const std::string& directory) {
  const PartitionManifest manifest = read_partition_manifest(directory);
  const auto crc = crc32(0L, reinterpret_cast<const Bytef*>(manifest.json.data()),
                         static_cast<uInt>(manifest.json.size()));
  return fmt::format("{:08x}", static_cast<uint32_t>(crc));
}

namespace {

std::shared_ptr<grpc::Channel> make_channel(const std::string& address,
                                            const ClientOptions& options) {
  grpc::ChannelArguments args;
  const int max_bytes = static_cast<int>(std::min<int64_t>(options.max_message_bytes, INT32_MAX));
  args.SetMaxReceiveMessageSize(max_bytes);
  args.SetMaxSendMessageSize(max_bytes);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, internal::kKeepaliveMs);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, internal::kKeepaliveTimeoutMs);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  // A server that restarts is found again within a second, not after minutes of backoff.
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  // Each DistGraph gets its own connections (not shared with other DistGraphs in the process).
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  // A server out of handler threads answers RESOURCE_EXHAUSTED at once: try again a few times
  // with backoff (still within the call's deadline) rather than failing the batch.
  args.SetServiceConfigJSON(R"({"methodConfig": [{
      "name": [{"service": "volley.rpc.PartitionService"}],
      "retryPolicy": {"maxAttempts": 5, "initialBackoff": "0.05s", "maxBackoff": "1s",
                      "backoffMultiplier": 2, "retryableStatusCodes": ["RESOURCE_EXHAUSTED"]}}]})");
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
}

std::chrono::system_clock::time_point deadline_after(double seconds) {
  return std::chrono::system_clock::now() +
         std::chrono::duration_cast<std::chrono::system_clock::duration>(
             std::chrono::duration<double>(seconds));
}

void prepare(grpc::ClientContext& context, const ClientOptions& options, double seconds) {
  context.set_deadline(deadline_after(seconds));
  if (!options.token.empty()) context.AddMetadata(internal::kTokenKey, options.token);
}

// Throws the Volley error for a failed call to `address` (part `part`, or -1 for "the server").
[[noreturn]] void fail(const grpc::Status& status, const std::string& address, int64_t part,
                       const char* call, double deadline_seconds) {
  const ErrorKind kind = internal::error_kind_for(status.error_code());
  const std::string who =
      part >= 0 ? fmt::format("part {} at {}", part, address) : fmt::format("server {}", address);
  std::string message;
  switch (kind) {
    case ErrorKind::kConnection:
      message = fmt::format(
          "{}: {} failed, the server is unavailable ({}); is `volley serve` "
          "running there and reachable?",
          who, call, status.error_message());
      break;
    case ErrorKind::kTimeout:
      message = fmt::format("{}: {} got no answer within the deadline of {} s ({})", who, call,
                            deadline_seconds, status.error_message());
      break;
    case ErrorKind::kPermission:
      message = fmt::format("{}: {} refused: {}", who, call, status.error_message());
      break;
    default:
      message = fmt::format("{}: {} failed: {}", who, call, status.error_message());
  }
  volley::internal::throw_error(kind, message);
}

DType parse_dtype(const std::string& name, const std::string& address) {
  try {
    return dtype_from_name(name);
  } catch (const Error&) {
    throw ValueError(fmt::format("server {} reports an unknown dtype '{}'", address, name));
  }
}

// Checks an Info answer from `address` (part `part`, or -1 for "the server"): ConnectionError
// when nobody answered within connect_seconds, the call's own error otherwise, ValueError for
// another protocol version.
void check_info(const grpc::Status& status, const rpc::InfoReply& reply, const std::string& address,
                int64_t part, double connect_seconds) {
  const std::string who =
      part >= 0 ? fmt::format("part {} at {}", part, address) : fmt::format("server {}", address);
  if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    throw ConnectionError(fmt::format(
        "{}: no server answered within {} s (connect_seconds); is `volley serve` running there "
        "and reachable?",
        who, connect_seconds));
  }
  if (!status.ok()) fail(status, address, part, "Info", connect_seconds);
  VOLLEY_REQUIRE(reply.protocol() == kProtocolVersion, ValueError,
                 "{}: the server speaks protocol version {} (Volley {}), this client version {}; "
                 "run the same Volley version everywhere",
                 who, reply.protocol(), reply.volley_version(), kProtocolVersion);
}

// What an Info answer from `address` describes.
ServiceInfo service_info(const rpc::InfoReply& reply, const std::string& address) {
  ServiceInfo info;
  info.dataset_name = reply.dataset_name();
  info.fingerprint = reply.fingerprint();
  info.book = PartitionBook(std::vector<int64_t>(reply.offsets().begin(), reply.offsets().end()));
  info.num_edges = reply.num_edges();
  info.feature_dim = reply.feature_dim();
  info.feature_dtype =
      reply.feature_dim() > 0 ? parse_dtype(reply.feature_dtype(), address) : DType::kFloat32;
  if (!reply.label_dtype().empty()) info.label_dtype = parse_dtype(reply.label_dtype(), address);
  info.num_classes = reply.num_classes();
  info.has_weights = reply.has_weights();
  return info;
}

// Per worker thread: the global → local map of the merge (sized to the batch, not the graph)
// and per-partition request lists.
struct MergeScratch {
  internal::IdMap map;
  std::vector<std::vector<int64_t>> targets;   // per part: global ids to expand
  std::vector<std::vector<int64_t>> position;  // per part: output positions (gather)
  std::vector<int32_t> owner;                  // per frontier node
  std::vector<int64_t> merged;                 // one hop's neighbors in frontier order
  SamplerScratch local;
};

// One RPC in flight.
template <typename Request, typename Reply>
struct Call {
  grpc::ClientContext context;
  Request request;
  Reply reply;
  grpc::Status status;
};

}  // namespace

// --- DistGraph ---------------------------------------------------------------------------------

struct DistGraph::State {
  ClientOptions options;
  std::vector<std::string> addresses;
  ServiceInfo info;
  std::vector<std::unique_ptr<rpc::PartitionService::Stub>> stubs;  // null for the local part
  std::shared_ptr<const Partition> local;
  int64_t local_part = -1;

  int64_t num_parts() const { return info.book.num_parts(); }

  [[noreturn]] void fail_call(const grpc::Status& status, int64_t part, const char* call) const {
    fail(status, addresses[static_cast<size_t>(part)], part, call, options.deadline_seconds);
  }
};

namespace {

// Info from every remote server (all in flight at once; wait_for_ready so servers that are still
// starting are waited for, up to connect_seconds), checked against each other and `local`.
void handshake(DistGraph::State& state, const std::string& local_fingerprint) {
  const int64_t parts = static_cast<int64_t>(state.addresses.size());
  std::vector<std::unique_ptr<Call<rpc::InfoRequest, rpc::InfoReply>>> calls(
      static_cast<size_t>(parts));
  int64_t remote = 0;
  for (int64_t p = 0; p < parts; ++p) remote += state.stubs[static_cast<size_t>(p)] != nullptr;
  std::latch done(remote);
  for (int64_t p = 0; p < parts; ++p) {
    auto& stub = state.stubs[static_cast<size_t>(p)];
    if (!stub) continue;
    auto& call = calls[static_cast<size_t>(p)];
    call = std::make_unique<Call<rpc::InfoRequest, rpc::InfoReply>>();
    prepare(call->context, state.options, state.options.connect_seconds);
    call->context.set_wait_for_ready(true);
    call->request.set_protocol(kProtocolVersion);
    stub->async()->Info(&call->context, &call->request, &call->reply,
                        [&done, raw = call.get()](grpc::Status status) {
                          raw->status = std::move(status);
                          done.count_down();
                        });
  }
  done.wait();
  std::string fingerprint = local_fingerprint;
  int64_t reference = -1;  // the part whose answer set fingerprint
  for (int64_t p = 0; p < parts; ++p) {
    const auto& call = calls[static_cast<size_t>(p)];
    if (!call) continue;
    const std::string& address = state.addresses[static_cast<size_t>(p)];
    const rpc::InfoReply& reply = call->reply;
    check_info(call->status, reply, address, p, state.options.connect_seconds);
    VOLLEY_REQUIRE(reply.part() == p && reply.num_parts() == parts, ValueError,
                   "{} serves part {} of {}, but it was given as the address of part {} of {}; "
                   "list the addresses in part order",
                   address, reply.part(), reply.num_parts(), p, parts);
    if (fingerprint.empty()) {
      fingerprint = reply.fingerprint();
      reference = p;
    }
    VOLLEY_REQUIRE(
        reply.fingerprint() == fingerprint, ValueError,
        "part {} at {} serves dataset '{}' with fingerprint {}, but {} has fingerprint {}: the "
        "servers must serve parts of the same partitioned dataset",
        p, address, reply.dataset_name(), reply.fingerprint(),
        reference >= 0 ? fmt::format("part {} at {}", reference,
                                     state.addresses[static_cast<size_t>(reference)])
                       : std::string("the local partition"),
        fingerprint);
    if (state.info.num_edges == 0) state.info.num_edges = reply.num_edges();
    if (state.info.fingerprint.empty()) state.info = service_info(reply, address);
  }
}

}  // namespace

std::shared_ptr<const DistGraph> DistGraph::connect(std::vector<std::string> addresses,
                                                    ClientOptions options,
                                                    const std::string& local_directory,
                                                    std::optional<int64_t> local_part) {
  if (!local_part) {
    VOLLEY_REQUIRE(local_directory.empty(), ValueError,
                   "local_directory '{}' given without local_part", local_directory);
    return connect(std::move(addresses), std::move(options), nullptr, "");
  }
  VOLLEY_REQUIRE(!local_directory.empty(), ValueError,
                 "local_part {} given without local_directory", *local_part);
  auto partition = std::make_shared<const Partition>(load_partition(local_directory, *local_part));
  return connect(std::move(addresses), std::move(options), std::move(partition),
                 dataset_fingerprint(local_directory));
}

std::shared_ptr<const DistGraph> DistGraph::connect(std::vector<std::string> addresses,
                                                    ClientOptions options,
                                                    std::shared_ptr<const Partition> local,
                                                    std::string fingerprint) {
  VOLLEY_REQUIRE(!addresses.empty(), ValueError,
                 "no server addresses given: list one host:port per partition, in part order");
  VOLLEY_REQUIRE(options.deadline_seconds > 0 && options.connect_seconds > 0, ValueError,
                 "deadline_seconds and connect_seconds must be > 0, got {} and {}",
                 options.deadline_seconds, options.connect_seconds);
  VOLLEY_REQUIRE(options.max_message_bytes >= (1 << 20), ValueError,
                 "max_message_bytes must be at least 1 MiB, got {}", options.max_message_bytes);
  auto state = std::make_unique<State>();
  state->options = std::move(options);
  state->addresses = std::move(addresses);
  const auto parts = static_cast<int64_t>(state->addresses.size());
  if (local) {
    VOLLEY_REQUIRE(local->book.num_parts() == parts, ValueError,
                   "the local partition belongs to a dataset of {} parts, but {} addresses were "
                   "given; list one per part",
                   local->book.num_parts(), parts);
    state->local = local;
    state->local_part = local->part;
  }
  state->stubs.resize(static_cast<size_t>(parts));
  for (int64_t p = 0; p < parts; ++p) {
    const std::string& address = state->addresses[static_cast<size_t>(p)];
    if (p == state->local_part) continue;
    VOLLEY_REQUIRE(!address.empty(), ValueError, "no address given for part {}", p);
    state->stubs[static_cast<size_t>(p)] =
        rpc::PartitionService::NewStub(make_channel(address, state->options));
  }
  if (local) {
    ServiceInfo& info = state->info;
    const Dataset& data = local->data;
    // A part's dataset is named "<name>.part-<p>": report the whole dataset's name, as servers do.
    info.dataset_name = data.name;
    if (const std::string suffix = fmt::format(".part-{}", local->part);
        info.dataset_name.ends_with(suffix)) {
      info.dataset_name.resize(info.dataset_name.size() - suffix.size());
    }
    info.fingerprint = fingerprint;
    info.book = local->book;
    info.feature_dim = data.features ? data.features->dim(1) : 0;
    info.feature_dtype = data.features ? data.features->dtype() : DType::kFloat32;
    if (data.labels) info.label_dtype = data.labels->dtype();
    info.num_classes = data.num_classes;
    info.has_weights = data.graph.has_weights();
  }
  handshake(*state, fingerprint);
  VOLLEY_REQUIRE(state->info.book.num_parts() == parts, ValueError,
                 "the servers describe {} parts, but {} addresses were given",
                 state->info.book.num_parts(), parts);
  return std::shared_ptr<const DistGraph>(new DistGraph(std::move(state)));
}

DistGraph::DistGraph(std::unique_ptr<State> state) : state_(std::move(state)) {}
DistGraph::~DistGraph() = default;

const ServiceInfo& DistGraph::info() const { return state_->info; }
const std::vector<std::string>& DistGraph::addresses() const { return state_->addresses; }
int64_t DistGraph::local_part() const { return state_->local_part; }
int64_t DistGraph::num_nodes() const { return state_->info.book.num_nodes(); }
int64_t DistGraph::feature_width() const { return state_->info.feature_dim; }
DType DistGraph::feature_dtype() const { return state_->info.feature_dtype; }
bool DistGraph::has_labels() const { return state_->info.label_dtype.has_value(); }

void DistGraph::validate(const NeighborSamplerOptions& options) const {
  validate_sampler_options(options, state_->info.has_weights);
}

void DistGraph::sample(std::span<const int64_t> seeds, const NeighborSamplerOptions& options,
                       uint64_t batch_index, SampledSubgraph& result) const {
  validate(options);
  SubgraphBuilder out;
  const State& state = *state_;
  const PartitionBook& book = state.info.book;
  const int64_t num_nodes = book.num_nodes();
  const int64_t parts = state.num_parts();
  thread_local MergeScratch scratch;
  auto& map = scratch.map;
  map.clear();
  cpu::start_subgraph(seeds, num_nodes, map, out);
  auto& nodes = out.nodes;
  scratch.targets.resize(static_cast<size_t>(parts));

  using HopCall = Call<rpc::HopRequest, rpc::HopReply>;
  std::vector<std::unique_ptr<HopCall>> calls(static_cast<size_t>(parts));
  std::vector<std::vector<int32_t>> counts(static_cast<size_t>(parts));
  std::vector<std::vector<int64_t>> neighbors(static_cast<size_t>(parts));
  std::vector<std::vector<int64_t>> edge_ids(static_cast<size_t>(parts));
  HopSample local_sample;

  size_t frontier_begin = 0;
  for (size_t hop = 0; hop < options.fanouts.size(); ++hop) {
    const int64_t fanout = options.fanouts[hop];
    const size_t frontier_end = nodes.size();
    const size_t edges_before = out.rows.size();
    if (fanout != 0 && frontier_end > frontier_begin) {
      // Split the frontier by owner.
      for (auto& list : scratch.targets) list.clear();
      scratch.owner.resize(frontier_end - frontier_begin);
      for (size_t i = frontier_begin; i < frontier_end; ++i) {
        const auto owner = static_cast<int32_t>(book.owner_of(nodes[i]));
        scratch.owner[i - frontier_begin] = owner;
        scratch.targets[static_cast<size_t>(owner)].push_back(nodes[i]);
      }
      // Everything remote goes out at once; the local part is sampled meanwhile.
      int64_t remote = 0;
      for (int64_t p = 0; p < parts; ++p) {
        remote += p != state.local_part && !scratch.targets[static_cast<size_t>(p)].empty();
      }
      std::latch done(remote);
      for (int64_t p = 0; p < parts; ++p) {
        const auto& targets = scratch.targets[static_cast<size_t>(p)];
        if (p == state.local_part || targets.empty()) continue;
        auto& call = calls[static_cast<size_t>(p)];
        call = std::make_unique<HopCall>();
        prepare(call->context, state.options, state.options.deadline_seconds);
        rpc::HopRequest& request = call->request;
        request.set_protocol(kProtocolVersion);
        request.set_fingerprint(state.info.fingerprint);
        pack(std::span<const int64_t>(targets), request.mutable_targets());
        request.set_hop(static_cast<uint32_t>(hop));
        request.set_fanout(fanout);
        request.set_replace(options.replace);
        request.set_weighted(options.weighted);
        request.set_seed(options.seed);
        request.set_batch(batch_index);
        state.stubs[static_cast<size_t>(p)]->async()->SampleHop(
            &call->context, &call->request, &call->reply,
            [&done, raw = call.get()](grpc::Status status) {
              raw->status = std::move(status);
              done.count_down();
            });
      }
      std::exception_ptr local_error;
      if (state.local_part >= 0 &&
          !scratch.targets[static_cast<size_t>(state.local_part)].empty()) {
        try {
          const auto& local = *state.local;
          sample_hop(local.data.graph, local.first_node(),
                     scratch.targets[static_cast<size_t>(state.local_part)], static_cast<int>(hop),
                     fanout, options, batch_index, local_sample, &scratch.local);
        } catch (...) {
          local_error = std::current_exception();
        }
      }
      done.wait();  // the calls reference this frame: never leave before they end
      if (local_error) std::rethrow_exception(local_error);
      for (int64_t p = 0; p < parts; ++p) {
        const auto pi = static_cast<size_t>(p);
        const auto& targets = scratch.targets[pi];
        if (targets.empty()) continue;
        if (p == state.local_part) {
          counts[pi].swap(local_sample.counts);
          neighbors[pi].swap(local_sample.neighbors);
          edge_ids[pi].swap(local_sample.edge_ids);
          continue;
        }
        HopCall& call = *calls[pi];
        if (!call.status.ok()) state.fail_call(call.status, p, "SampleHop");
        const bool well_formed = unpack(call.reply.counts(), counts[pi]) &&
                                 unpack(call.reply.neighbors(), neighbors[pi]) &&
                                 unpack(call.reply.edge_ids(), edge_ids[pi]) &&
                                 counts[pi].size() == targets.size() &&
                                 neighbors[pi].size() == edge_ids[pi].size();
        int64_t total = 0;
        if (well_formed) {
          for (int32_t c : counts[pi]) total += c < 0 ? INT64_MIN / 2 : c;
        }
        VOLLEY_REQUIRE(well_formed && total == static_cast<int64_t>(neighbors[pi].size()),
                       RuntimeError,
                       "part {} at {}: malformed SampleHop reply ({} counts for {} targets, {} "
                       "neighbors, {} edge ids)",
                       p, state.addresses[pi], counts[pi].size(), targets.size(),
                       neighbors[pi].size(), edge_ids[pi].size());
      }
      // Merge in frontier order: exactly the single-machine sampler's order. Two passes, as in
      // the CPU sampler: pass 1 appends each target's picks (sequential reads of the replies),
      // pass 2 maps the neighbors to local ids with their map slots prefetched (a large batch's
      // map outgrows the caches).
      for (int64_t p = 0; p < parts; ++p) {
        // Replies from servers are checked; the local part's picks come from a loaded graph.
        if (p == state.local_part || scratch.targets[static_cast<size_t>(p)].empty()) continue;
        for (const int64_t neighbor : neighbors[static_cast<size_t>(p)]) {
          VOLLEY_REQUIRE(neighbor >= 0 && neighbor < num_nodes, RuntimeError,
                         "part {} at {}: SampleHop returned node {} outside [0, {})", p,
                         state.addresses[static_cast<size_t>(p)], neighbor, num_nodes);
        }
      }
      std::vector<size_t> next_target(static_cast<size_t>(parts), 0);
      std::vector<size_t> next_neighbor(static_cast<size_t>(parts), 0);
      auto& merged = scratch.merged;
      merged.clear();
      for (size_t i = frontier_begin; i < frontier_end; ++i) {
        const auto p = static_cast<size_t>(scratch.owner[i - frontier_begin]);
        const auto count = static_cast<size_t>(counts[p][next_target[p]++]);
        const int64_t* picked = neighbors[p].data() + next_neighbor[p];
        const int64_t* picked_edges = edge_ids[p].data() + next_neighbor[p];
        next_neighbor[p] += count;
        merged.insert(merged.end(), picked, picked + count);
        out.edge_ids.insert(out.edge_ids.end(), picked_edges, picked_edges + count);
        out.rows.insert(out.rows.end(), count, static_cast<int64_t>(i));
      }
      constexpr size_t kAhead = 16;
      const size_t count = merged.size();
      out.cols.resize(edges_before + count);
      int64_t* cols = out.cols.data() + edges_before;
      for (size_t j = 0; j < count; ++j) {
        if (j + kAhead < count) map.prefetch(merged[j + kAhead]);
        const int64_t neighbor = merged[j];
        const auto fresh = static_cast<int32_t>(nodes.size());
        const int32_t earlier = map.insert(neighbor, fresh);
        if (earlier < 0) nodes.push_back(neighbor);
        cols[j] = earlier < 0 ? fresh : earlier;
      }
    }
    out.edges_per_hop.push_back(static_cast<int64_t>(out.rows.size() - edges_before));
    out.nodes_per_hop.push_back(static_cast<int64_t>(nodes.size() - frontier_end));
    frontier_begin = frontier_end;
  }
  VOLLEY_REQUIRE(nodes.size() < (size_t{1} << 31), ValueError,
                 "batch reached {} nodes, more than the 2^31 a batch may hold; use fewer seeds "
                 "or smaller fanouts",
                 nodes.size());
  result = out.finish();
}

namespace {

// Rows of `ids` (features or labels) from their owners into `out` (row_bytes per row).
void gather_rows_from_parts(const DistGraph::State& state, rpc::RowsRequest::Kind kind,
                            std::span<const int64_t> ids, DType out_dtype, size_t row_bytes,
                            std::byte* out) {
  const PartitionBook& book = state.info.book;
  const int64_t parts = state.num_parts();
  const int64_t num_nodes = book.num_nodes();
  std::vector<std::vector<int64_t>> targets(static_cast<size_t>(parts));
  std::vector<std::vector<int64_t>> positions(static_cast<size_t>(parts));
  for (size_t i = 0; i < ids.size(); ++i) {
    VOLLEY_REQUIRE(ids[i] >= 0 && ids[i] < num_nodes, IndexError,
                   "id {} at position {} out of range for a graph with {} nodes", ids[i], i,
                   num_nodes);
    const auto owner = static_cast<size_t>(book.owner_of(ids[i]));
    targets[owner].push_back(ids[i]);
    positions[owner].push_back(static_cast<int64_t>(i));
  }
  using RowsCall = Call<rpc::RowsRequest, rpc::RowsReply>;
  std::vector<std::unique_ptr<RowsCall>> calls(static_cast<size_t>(parts));
  int64_t remote = 0;
  for (int64_t p = 0; p < parts; ++p) {
    remote += p != state.local_part && !targets[static_cast<size_t>(p)].empty();
  }
  std::latch done(remote);
  for (int64_t p = 0; p < parts; ++p) {
    const auto pi = static_cast<size_t>(p);
    if (p == state.local_part || targets[pi].empty()) continue;
    calls[pi] = std::make_unique<RowsCall>();
    RowsCall& call = *calls[pi];
    prepare(call.context, state.options, state.options.deadline_seconds);
    call.request.set_protocol(kProtocolVersion);
    call.request.set_fingerprint(state.info.fingerprint);
    call.request.set_kind(kind);
    pack(std::span<const int64_t>(targets[pi]), call.request.mutable_ids());
    call.request.set_out_dtype(std::string(dtype_name(out_dtype)));
    state.stubs[pi]->async()->GetRows(&call.context, &call.request, &call.reply,
                                      [&done, raw = &call](grpc::Status status) {
                                        raw->status = std::move(status);
                                        done.count_down();
                                      });
  }
  auto scatter = [&](size_t p, const std::byte* rows) {
    const auto& where = positions[p];
    for (size_t j = 0; j < where.size(); ++j) {
      std::memcpy(out + static_cast<size_t>(where[j]) * row_bytes, rows + j * row_bytes, row_bytes);
    }
  };
  std::exception_ptr local_error;
  if (state.local_part >= 0 && !targets[static_cast<size_t>(state.local_part)].empty()) {
    try {
      const auto p = static_cast<size_t>(state.local_part);
      const Partition& local = *state.local;
      const Array& table =
          kind == rpc::RowsRequest::FEATURES ? *local.data.features : *local.data.labels;
      std::vector<int64_t> rows(targets[p]);
      for (int64_t& id : rows) id -= local.first_node();
      std::vector<std::byte> buffer(rows.size() * row_bytes);
      gather_rows(table, rows, out_dtype, buffer.data());
      scatter(p, buffer.data());
    } catch (...) {
      local_error = std::current_exception();
    }
  }
  done.wait();
  if (local_error) std::rethrow_exception(local_error);
  const char* what = kind == rpc::RowsRequest::FEATURES ? "GetRows(features)" : "GetRows(labels)";
  for (int64_t p = 0; p < parts; ++p) {
    const auto pi = static_cast<size_t>(p);
    if (!calls[pi]) continue;
    const RowsCall& call = *calls[pi];
    if (!call.status.ok()) state.fail_call(call.status, p, what);
    VOLLEY_REQUIRE(call.reply.rows().size() == targets[pi].size() * row_bytes, RuntimeError,
                   "part {} at {}: malformed {} reply: {} bytes for {} rows of {} bytes", p,
                   state.addresses[pi], what, call.reply.rows().size(), targets[pi].size(),
                   row_bytes);
    scatter(pi, reinterpret_cast<const std::byte*>(call.reply.rows().data()));
  }
}

}  // namespace

void DistGraph::gather_features(std::span<const int64_t> ids, DType out_dtype,
                                std::byte* out) const {
  VOLLEY_REQUIRE(state_->info.feature_dim > 0, ValueError,
                 "the served dataset '{}' has no features", state_->info.dataset_name);
  VOLLEY_REQUIRE(gather_supports(state_->info.feature_dtype, out_dtype), ValueError,
                 "features of dtype {} cannot be delivered as {}",
                 dtype_name(state_->info.feature_dtype), dtype_name(out_dtype));
  gather_rows_from_parts(*state_, rpc::RowsRequest::FEATURES, ids, out_dtype,
                         static_cast<size_t>(state_->info.feature_dim) * dtype_size(out_dtype),
                         out);
}

void DistGraph::gather_labels(std::span<const int64_t> ids, int64_t* out) const {
  VOLLEY_REQUIRE(has_labels(), ValueError, "the served dataset '{}' has no labels",
                 state_->info.dataset_name);
  gather_rows_from_parts(*state_, rpc::RowsRequest::LABELS, ids, DType::kInt64, sizeof(int64_t),
                         reinterpret_cast<std::byte*>(out));
}

SampledSubgraph DistGraph::sample(std::span<const int64_t> seeds,
                                  const NeighborSamplerOptions& options,
                                  uint64_t batch_index) const {
  SampledSubgraph out;
  sample(seeds, options, batch_index, out);
  return out;
}

Array DistGraph::gather_features(std::span<const int64_t> ids, DType out_dtype) const {
  Array out = Array::empty(out_dtype, {static_cast<int64_t>(ids.size()), feature_width()});
  gather_features(ids, out_dtype, out.raw_data());
  return out;
}

Array DistGraph::gather_labels(std::span<const int64_t> ids) const {
  Array out = Array::empty(DType::kInt64, {static_cast<int64_t>(ids.size())});
  gather_labels(ids, out.data<int64_t>());
  return out;
}

// --- ServerClientLoader ------------------------------------------------------------------------

struct ServerClientLoader::State {
  std::string address;
  ClientOptions client;
  std::unique_ptr<rpc::PartitionService::Stub> stub;
  ServiceInfo info;
  Array input_nodes;
  LoaderOptions options;
  bool features = true;
  bool labels = true;
  int64_t num_batches = 0;
};

namespace {

Array array_from_bytes(const std::string& bytes, DType dtype, std::vector<int64_t> shape,
                       const std::string& address, const char* field) {
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  VOLLEY_REQUIRE(bytes.size() == static_cast<size_t>(count) * dtype_size(dtype), RuntimeError,
                 "server {}: malformed batch: field {} has {} bytes, expected {}", address, field,
                 bytes.size(), static_cast<size_t>(count) * dtype_size(dtype));
  Array array = Array::empty(dtype, std::move(shape));
  if (!bytes.empty()) std::memcpy(array.raw_data(), bytes.data(), bytes.size());
  return array;
}

Batch batch_from_message(const rpc::BatchMessage& message, const std::string& address) {
  Batch batch;
  batch.index = message.index();
  batch.batch_size = message.batch_size();
  const int64_t n = static_cast<int64_t>(message.nodes().size() / sizeof(int64_t));
  const int64_t e = static_cast<int64_t>(message.edge_ids().size() / sizeof(int64_t));
  batch.nodes = array_from_bytes(message.nodes(), DType::kInt64, {n}, address, "nodes");
  batch.input_ids = array_from_bytes(message.input_ids(), DType::kInt64, {batch.batch_size},
                                     address, "input_ids");
  batch.edge_index =
      array_from_bytes(message.edge_index(), DType::kInt64, {2, e}, address, "edge_index");
  batch.edge_ids = array_from_bytes(message.edge_ids(), DType::kInt64, {e}, address, "edge_ids");
  if (!message.x_dtype().empty()) {
    batch.x = array_from_bytes(message.x(), parse_dtype(message.x_dtype(), address),
                               {n, message.x_width()}, address, "x");
  }
  if (message.has_y()) {
    batch.y = array_from_bytes(message.y(), DType::kInt64, {n}, address, "y");
  }
  batch.nodes_per_hop.assign(message.nodes_per_hop().begin(), message.nodes_per_hop().end());
  batch.edges_per_hop.assign(message.edges_per_hop().begin(), message.edges_per_hop().end());
  return batch;
}

// One SampleEpoch stream. A reader thread pulls messages into a small queue (at most
// kQueued ahead: when it is full the reader stops reading, gRPC's flow control fills the
// window and the server's Write blocks — that is the back-pressure). next() waits for the next
// message at most deadline_seconds.
class StreamedEpoch final : public BatchStream {
 public:
  static constexpr size_t kQueued = 2;

  StreamedEpoch(std::shared_ptr<const ServerClientLoader::State> loader, int64_t epoch)
      : loader_(std::move(loader)) {
    const auto& state = *loader_;
    if (!state.client.token.empty()) context_.AddMetadata(internal::kTokenKey, state.client.token);
    // This rank's share of the epoch, as the server's loader (one rank) must be asked for it.
    loader_internal::EpochShare share =
        loader_internal::epoch_share(state.input_nodes, state.options, epoch);
    positions_ = share.positions;
    rpc::EpochRequest request;
    request.set_protocol(kProtocolVersion);
    request.set_fingerprint(state.info.fingerprint);
    pack(std::span<const int64_t>(share.input_nodes.data<int64_t>(),
                                  static_cast<size_t>(share.input_nodes.numel())),
         request.mutable_input_nodes());
    request.set_epoch(epoch);
    request.set_batch_size(state.options.batch_size);
    request.set_shuffle(share.shuffle);
    request.set_drop_last(state.options.drop_last);
    request.set_seed(share.seed);
    for (int64_t fanout : state.options.sampler.fanouts) request.add_fanouts(fanout);
    request.set_replace(state.options.sampler.replace);
    request.set_weighted(state.options.sampler.weighted);
    request.set_features(state.features);
    request.set_feature_dtype(std::string(dtype_name(state.options.feature_dtype)));
    request.set_labels(state.labels);
    request.set_concurrency(state.options.num_threads);
    reader_ = state.stub->SampleEpoch(&context_, request);
    thread_ = std::thread([this] { read_loop(); });
  }

  ~StreamedEpoch() override { stop(); }

  std::optional<Batch> next() override {
    const auto& state = *loader_;
    std::unique_lock lock(mutex_);
    if (delivered_ >= state.num_batches || stopped_) return std::nullopt;
    const auto timeout = std::chrono::duration<double>(state.client.deadline_seconds);
    const bool ready =
        changed_.wait_for(lock, timeout, [&] { return stopped_ || !queue_.empty() || finished_; });
    if (stopped_) return std::nullopt;
    if (!ready) {
      lock.unlock();
      stop();
      throw TimeoutError(fmt::format(
          "server {}: no batch within the deadline of {} s (waiting for batch {} of {}); the "
          "server may be overloaded or stuck",
          state.address, state.client.deadline_seconds, delivered_, state.num_batches));
    }
    if (queue_.empty()) {  // the stream ended early
      const grpc::Status status = status_;
      lock.unlock();
      stop();
      if (!status.ok())
        fail(status, state.address, -1, "SampleEpoch", state.client.deadline_seconds);
      throw RuntimeError(fmt::format("server {}: the epoch stream ended after {} of {} batches",
                                     state.address, delivered_, state.num_batches));
    }
    rpc::BatchMessage message = std::move(queue_.front());
    queue_.pop_front();
    ++delivered_;
    lock.unlock();
    changed_.notify_all();
    Batch batch = batch_from_message(message, state.address);
    VOLLEY_REQUIRE(batch.index == delivered_ - 1, RuntimeError,
                   "server {}: batch {} arrived where batch {} was expected", state.address,
                   batch.index, delivered_ - 1);
    loader_internal::remap_input_ids(batch, positions_);
    return batch;
  }

  void stop() override {
    {
      std::lock_guard lock(mutex_);
      if (stopped_ && !thread_.joinable()) return;
      stopped_ = true;
    }
    context_.TryCancel();
    changed_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  int64_t num_batches() const override { return loader_->num_batches; }

 private:
  void read_loop() {
    while (true) {
      rpc::BatchMessage message;
      {
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [&] { return stopped_ || queue_.size() < kQueued; });
        if (stopped_) break;
      }
      if (!reader_->Read(&message)) break;
      {
        std::lock_guard lock(mutex_);
        queue_.push_back(std::move(message));
      }
      changed_.notify_all();
    }
    grpc::Status status = reader_->Finish();
    {
      std::lock_guard lock(mutex_);
      status_ = std::move(status);
      finished_ = true;
    }
    changed_.notify_all();
  }

  std::shared_ptr<const ServerClientLoader::State> loader_;
  Array positions_;  // this rank's input positions (several ranks), for the batches' input_ids
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReader<rpc::BatchMessage>> reader_;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<rpc::BatchMessage> queue_;
  grpc::Status status_;
  bool finished_ = false;
  bool stopped_ = false;
  int64_t delivered_ = 0;
};

}  // namespace

ServerClientLoader::ServerClientLoader(std::string address, ClientOptions client,
                                       std::optional<Array> input_nodes, LoaderOptions options,
                                       bool features, bool labels) {
  VOLLEY_REQUIRE(!address.empty(), ValueError, "no server address given");
  VOLLEY_REQUIRE(client.deadline_seconds > 0 && client.connect_seconds > 0, ValueError,
                 "deadline_seconds and connect_seconds must be > 0, got {} and {}",
                 client.deadline_seconds, client.connect_seconds);
  auto state = std::make_shared<State>();
  state->address = std::move(address);
  state->client = std::move(client);
  state->stub = rpc::PartitionService::NewStub(make_channel(state->address, state->client));
  state->options = std::move(options);
  state->features = features;
  state->labels = labels;

  Call<rpc::InfoRequest, rpc::InfoReply> call;
  prepare(call.context, state->client, state->client.connect_seconds);
  call.context.set_wait_for_ready(true);
  call.request.set_protocol(kProtocolVersion);
  call.status = state->stub->Info(&call.context, call.request, &call.reply);
  const rpc::InfoReply& reply = call.reply;
  check_info(call.status, reply, state->address, -1, state->client.connect_seconds);
  VOLLEY_REQUIRE(reply.can_sample_epochs(), ValueError,
                 "server {} cannot sample epochs: start it with --peers (the addresses of every "
                 "part's server) for server-client mode",
                 state->address);
  state->info = service_info(reply, state->address);
  const ServiceInfo& info = state->info;
  state->features = features && info.feature_dim > 0;
  state->labels = labels && info.label_dtype.has_value();

  // Check here what the server would refuse, so mistakes surface at construction.
  validate_sampler_options(state->options.sampler, info.has_weights);
  if (state->features) {
    VOLLEY_REQUIRE(gather_supports(info.feature_dtype, state->options.feature_dtype), ValueError,
                   "features of dtype {} cannot be delivered as {}", dtype_name(info.feature_dtype),
                   dtype_name(state->options.feature_dtype));
  }
  const int64_t n = info.book.num_nodes();
  Array inputs;
  if (input_nodes && input_nodes->numel() > 0) {
    VOLLEY_REQUIRE(input_nodes->ndim() == 1 && input_nodes->dtype() == DType::kInt64, ValueError,
                   "input_nodes must be a 1-d int64 array, got {}", input_nodes->describe());
    const int64_t* ids = input_nodes->data<int64_t>();
    for (int64_t i = 0; i < input_nodes->numel(); ++i) {
      VOLLEY_REQUIRE(ids[i] >= 0 && ids[i] < n, IndexError,
                     "input node {} at position {} out of range for a graph with {} nodes", ids[i],
                     i, n);
    }
    inputs = *input_nodes;
  } else {
    inputs = Array::empty(DType::kInt64, {n});
    int64_t* ids = inputs.data<int64_t>();
    for (int64_t i = 0; i < n; ++i) ids[i] = i;
  }
  state->input_nodes = inputs;
  loader_internal::check_loader_options(state->options, inputs.numel());
  state->num_batches = loader_internal::num_batches(inputs.numel(), state->options);
  state_ = std::move(state);
}

ServerClientLoader::~ServerClientLoader() = default;

int64_t ServerClientLoader::num_batches() const { return state_->num_batches; }
int64_t ServerClientLoader::num_inputs() const { return state_->input_nodes.numel(); }
const ServiceInfo& ServerClientLoader::info() const { return state_->info; }

std::unique_ptr<BatchStream> ServerClientLoader::start_epoch(int64_t epoch_index) const {
  return std::make_unique<StreamedEpoch>(state_, epoch_index);
}

}  // namespace volley::dist
