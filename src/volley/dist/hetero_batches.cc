// Server-client mode over heterogeneous partitions, both ends of SampleHeteroBatches: the
// trainer's HeteroBatchStream (hetero_client.h, one stream at a time) and the server's reading of
// the request and filling of each batch message (internal/hetero_client_state.h).
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include "volley/dist/hetero_client.h"
#include "volley/dist/internal/hetero_client_state.h"
#include "volley/dist/internal/wire.h"

namespace volley::dist {

using internal::pack;
using internal::unpack;

namespace {

// Cancels a call whose wait for one message outlasts its deadline: the homogeneous
// ServerClientLoader's rule (a server that stops answering is a TimeoutError within the deadline,
// however long the whole stream may take). One thread per stream, started on first use.
class ReadWatch {
 public:
  ReadWatch() = default;
  ReadWatch(const ReadWatch&) = delete;
  ReadWatch& operator=(const ReadWatch&) = delete;
  ~ReadWatch() {
    {
      std::lock_guard lock(mutex_);
      quit_ = true;
    }
    changed_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  // Cancels `context` unless disarm() comes within `seconds`.
  void arm(grpc::ClientContext* context, double seconds) {
    std::lock_guard lock(mutex_);
    if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
    context_ = context;
    until_ = std::chrono::steady_clock::now() + internal::bounded_wait(seconds);
    armed_ = true;
    fired_ = false;
    changed_.notify_all();
  }

  // Whether the call was cancelled for its deadline.
  bool disarm() {
    std::lock_guard lock(mutex_);
    armed_ = false;
    return fired_;
  }

 private:
  void loop() {
    std::unique_lock lock(mutex_);
    while (!quit_) {
      if (!armed_) {
        changed_.wait(lock);
      } else if (std::chrono::steady_clock::now() >= until_) {
        context_->TryCancel();
        fired_ = true;
        armed_ = false;
      } else {
        changed_.wait_until(lock, until_);
      }
    }
  }

  std::mutex mutex_;
  std::condition_variable changed_;
  grpc::ClientContext* context_ = nullptr;
  std::chrono::steady_clock::time_point until_;
  bool armed_ = false, fired_ = false, quit_ = false;
  std::thread thread_;
};

}  // namespace

struct HeteroBatchStream::State {
  std::string address;
  ClientOptions options;
  HeteroServiceInfo info;
  std::unique_ptr<rpc::PartitionService::Stub> stub;
  std::unique_ptr<grpc::ClientContext> context;
  std::unique_ptr<grpc::ClientReader<rpc::HeteroBatchMessage>> reader;
  bool trees = false;                  // disjoint / temporal: the batches carry each node's tree
  int64_t delivered = 0, batches = 0;  // of the open stream
  ReadWatch watch;                     // declared last: stopped before the context goes

  void cancel() {
    if (context) context->TryCancel();
    if (reader) reader->Finish();
    reader.reset();
    context.reset();
  }
};

HeteroBatchStream::HeteroBatchStream(std::string address, ClientOptions options)
    : state_(std::make_unique<State>()) {
  State& state = *state_;
  state.address = std::move(address);
  state.options = std::move(options);
  state.stub = rpc::PartitionService::NewStub(internal::make_channel(state.address, state.options));
  grpc::ClientContext context;
  internal::prepare(context, state.options, state.options.connect_seconds);
  context.set_wait_for_ready(true);
  rpc::InfoRequest request;
  request.set_protocol(kProtocolVersion);
  rpc::InfoReply reply;
  const grpc::Status status = state.stub->Info(&context, request, &reply);
  internal::check_info(status, reply, state.address, -1, state.options.connect_seconds);
  state.info = internal::hetero_service_info(reply, state.address);
}

HeteroBatchStream::~HeteroBatchStream() { state_->cancel(); }

const HeteroServiceInfo& HeteroBatchStream::info() const { return state_->info; }

void HeteroBatchStream::start(const HeteroBatchesOptions& batches) {
  State& state = *state_;
  state.cancel();
  VOLLEY_REQUIRE(batches.batch_size >= 1, ValueError, "batch_size must be >= 1, got {}",
                 batches.batch_size);
  const bool temporal = batches.sampler.time_source != TimeSource::kNone;
  VOLLEY_REQUIRE(
      batches.seed_times.empty() || (temporal && batches.seed_times.size() == batches.seeds.size()),
      ValueError,
      "seed_times: {} times for {} seeds of node type '{}' (one per seed, and only "
      "with a time_source)",
      batches.seed_times.size(), batches.seeds.size(), batches.node_type);
  state.info.node_type_index(batches.node_type);  // ValueError naming the types
  rpc::HeteroBatchesRequest request;
  request.set_protocol(kProtocolVersion);
  request.set_fingerprint(state.info.fingerprint);
  request.set_node_type(batches.node_type);
  pack(std::span<const int64_t>(batches.seeds), request.mutable_seeds());
  request.set_batch_size(batches.batch_size);
  request.set_first_batch_index(batches.first_batch_index);
  internal::options_to_wire(batches.sampler, request.mutable_sampler());
  request.set_features(batches.features);
  request.set_feature_dtype(batches.feature_dtype);
  request.set_labels(batches.labels);
  state.trees = batches.sampler.disjoint || temporal;
  if (temporal) {
    pack(std::span<const int64_t>(batches.seed_times), request.mutable_seed_times());
  }
  request.set_deadline_seconds(state.options.deadline_seconds);
  const auto count = static_cast<double>(
      (static_cast<int64_t>(batches.seeds.size()) + batches.batch_size - 1) / batches.batch_size);
  state.context = std::make_unique<grpc::ClientContext>();
  internal::prepare(*state.context, state.options, state.options.deadline_seconds * (count + 1));
  state.delivered = 0;
  state.batches = static_cast<int64_t>(count);
  state.reader = state.stub->SampleHeteroBatches(state.context.get(), request);
}

namespace internal {

HeteroSamplerOptions hetero_batches_sampler(const rpc::HeteroBatchesRequest& request,
                                            size_t num_seeds, std::vector<int64_t>& seed_times) {
  HeteroSamplerOptions sampler = internal::options_from_wire(request.sampler());
  seed_times.clear();
  if (sampler.time_source == TimeSource::kNone) {
    VOLLEY_REQUIRE(request.seed_times().empty(), ValueError,
                   "seed_times were given, but no time_source (\"node\" or \"edge\")");
    return sampler;
  }
  VOLLEY_REQUIRE(unpack(request.seed_times(), seed_times) &&
                     (seed_times.empty() || seed_times.size() == num_seeds),
                 ValueError, "seed_times hold {} bytes for {} seeds (8 bytes each, or none)",
                 request.seed_times().size(), num_seeds);
  return sampler;
}

// `sub` and the rows `source` gathers for it into `message`.
void fill_hetero_batch(const DistHeteroSource& source, const HeteroSampledSubgraph& sub,
                       rpc::HeteroBatchMessage& message) {
  std::vector<std::pair<std::string, Array>> fields;
  for (size_t t = 0; t < sub.nodes.size(); ++t) {
    rpc::TypedNodes* nodes = message.add_node_types();
    pack(std::span<const int64_t>(sub.nodes[t]), nodes->mutable_nodes());
    for (const int64_t count : sub.nodes_per_hop[t]) nodes->add_nodes_per_hop(count);
    nodes->set_num_seeds(sub.num_seeds[t]);
    if (!sub.batch.empty()) pack(std::span<const int64_t>(sub.batch[t]), nodes->mutable_batch());
    fields.clear();
    source.gather_fields(static_cast<int>(t), sub.nodes[t], fields);
    for (const auto& [name, rows] : fields) {
      const std::string bytes(reinterpret_cast<const char*>(rows.raw_data()), rows.nbytes());
      if (name == "x") {
        nodes->set_x(bytes);
        nodes->set_x_dtype(std::string(dtype_name(rows.dtype())));
        nodes->set_x_width(rows.dim(1));
      } else {
        nodes->set_y(bytes);
        nodes->set_has_y(true);
      }
    }
  }
  for (size_t e = 0; e < sub.rows.size(); ++e) {
    rpc::TypedEdges* edges = message.add_edge_types();
    pack(std::span<const int64_t>(sub.rows[e]), edges->mutable_rows());
    pack(std::span<const int64_t>(sub.cols[e]), edges->mutable_cols());
    pack(std::span<const int64_t>(sub.edge_ids[e]), edges->mutable_edge_ids());
    for (const int64_t count : sub.edges_per_hop[e]) edges->add_edges_per_hop(count);
  }
}

}  // namespace internal

namespace {

std::optional<Array> rows_of(const std::string& bytes, DType dtype, int64_t rows, int64_t width,
                             bool matrix, const std::string& address) {
  const size_t expected = static_cast<size_t>(rows * width) * dtype_size(dtype);
  VOLLEY_REQUIRE(bytes.size() == expected, RuntimeError,
                 "{}: malformed batch ({} bytes of rows, {} expected)", address, bytes.size(),
                 expected);
  Array out = matrix ? Array::empty(dtype, {rows, width}) : Array::empty(dtype, {rows});
  std::memcpy(out.raw_data(), bytes.data(), bytes.size());
  return out;
}

}  // namespace

bool HeteroBatchStream::next(HeteroBatch& out) {
  State& state = *state_;
  VOLLEY_REQUIRE(state.reader != nullptr, ValueError, "no stream open: call start() first");
  rpc::HeteroBatchMessage message;
  state.watch.arm(state.context.get(), state.options.deadline_seconds);
  const bool read = state.reader->Read(&message);
  if (state.watch.disarm()) {
    state.cancel();
    throw TimeoutError(fmt::format(
        "server {}: no batch within the deadline of {} s (waiting for batch {} of {}); the "
        "server may be overloaded or stuck",
        state.address, state.options.deadline_seconds, state.delivered, state.batches));
  }
  if (!read) {
    const grpc::Status status = state.reader->Finish();
    state.reader.reset();
    state.context.reset();
    if (!status.ok()) {
      internal::fail(status, state.address, -1, "SampleHeteroBatches",
                     state.options.deadline_seconds);
    }
    return false;
  }
  const HeteroServiceInfo& info = state.info;
  const size_t types = info.node_types.size(), edge_types = info.edge_types.size();
  VOLLEY_REQUIRE(static_cast<size_t>(message.node_types_size()) == types &&
                     static_cast<size_t>(message.edge_types_size()) == edge_types,
                 RuntimeError, "{}: malformed batch ({} node types, {} edge types)", state.address,
                 message.node_types_size(), message.edge_types_size());
  out.index = message.index();
  ++state.delivered;
  HeteroSampledSubgraph& sub = out.subgraph;
  sub = HeteroSampledSubgraph{};
  sub.nodes.resize(types);
  out.x.assign(types, std::nullopt);
  out.y.assign(types, std::nullopt);
  for (size_t t = 0; t < types; ++t) {
    const rpc::TypedNodes& nodes = message.node_types(static_cast<int>(t));
    VOLLEY_REQUIRE(unpack(nodes.nodes(), sub.nodes[t]), RuntimeError, "{}: malformed batch",
                   state.address);
    sub.nodes_per_hop.emplace_back(nodes.nodes_per_hop().begin(), nodes.nodes_per_hop().end());
    sub.num_seeds.push_back(nodes.num_seeds());
    const auto n = static_cast<int64_t>(sub.nodes[t].size());
    if (!nodes.x_dtype().empty()) {
      out.x[t] = rows_of(nodes.x(), internal::parse_dtype(nodes.x_dtype(), state.address), n,
                         nodes.x_width(), true, state.address);
    }
    if (nodes.has_y()) out.y[t] = rows_of(nodes.y(), DType::kInt64, n, 1, false, state.address);
    if (state.trees) {
      auto& trees = sub.batch.emplace_back();
      VOLLEY_REQUIRE(
          unpack(nodes.batch(), trees) && trees.size() == sub.nodes[t].size(), RuntimeError,
          "{}: malformed batch (node type '{}': {} tree entries for {} "
          "nodes)",
          state.address, info.node_types[t].name, nodes.batch().size() / 8, sub.nodes[t].size());
    }
  }
  for (size_t e = 0; e < edge_types; ++e) {
    const rpc::TypedEdges& edges = message.edge_types(static_cast<int>(e));
    auto& rows = sub.rows.emplace_back();
    auto& cols = sub.cols.emplace_back();
    auto& ids = sub.edge_ids.emplace_back();
    VOLLEY_REQUIRE(unpack(edges.rows(), rows) && unpack(edges.cols(), cols) &&
                       unpack(edges.edge_ids(), ids) && rows.size() == cols.size() &&
                       rows.size() == ids.size(),
                   RuntimeError, "{}: malformed batch (edge type {})", state.address,
                   info.edge_types[e].name());
    sub.edges_per_hop.emplace_back(edges.edges_per_hop().begin(), edges.edges_per_hop().end());
  }
  return true;
}

}  // namespace volley::dist
