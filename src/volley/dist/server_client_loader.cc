// ServerClientLoader: server-client mode, one SampleEpoch stream per epoch (see client.h).
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "volley/dist/client.h"
#include "volley/dist/hetero_client.h"
#include "volley/dist/internal/client_calls.h"
#include "volley/feature/gather.h"

namespace volley::dist {

using internal::Call;
using internal::check_info;
using internal::fail;
using internal::make_channel;
using internal::pack;
using internal::parse_dtype;
using internal::prepare;

struct ServerClientLoader::State {
  std::string address;
  ClientOptions client;
  std::unique_ptr<internal::PartServers> servers;  // the streaming servers (replicas)
  ServiceInfo info;
  std::optional<TypedServiceInfo> typed;  // a heterogeneous service
  Array input_nodes;
  LoaderOptions options;
  StreamedFields fields;
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
  if (!message.batch().empty()) {
    batch.batch_ids = array_from_bytes(message.batch(), DType::kInt64, {n}, address, "batch");
  }
  batch.nodes_per_hop.assign(message.nodes_per_hop().begin(), message.nodes_per_hop().end());
  batch.edges_per_hop.assign(message.edges_per_hop().begin(), message.edges_per_hop().end());
  return batch;
}

// A typed batch message's parts into `batch` (one per node type and edge type of `info`), x and
// y among each node type's attrs, as the typed loaders over DistHeteroSource put them; `trees`:
// each node's tree (disjoint or temporal sampling).
void typed_parts_from_message(const rpc::BatchMessage& message, const HeteroServiceInfo& info,
                              bool trees, const std::string& address, Batch& batch) {
  VOLLEY_REQUIRE(message.node_types_size() == static_cast<int>(info.node_types.size()) &&
                     message.edge_types_size() == static_cast<int>(info.edge_types.size()),
                 RuntimeError, "server {}: malformed batch ({} node types, {} edge types)", address,
                 message.node_types_size(), message.edge_types_size());
  batch.nodes = batch.edge_index = batch.edge_ids = Array();
  for (const rpc::TypedNodes& nodes : message.node_types()) {
    NodeTypeBatch& part = batch.node_types.emplace_back();
    const auto n = static_cast<int64_t>(nodes.nodes().size() / sizeof(int64_t));
    part.nodes = array_from_bytes(nodes.nodes(), DType::kInt64, {n}, address, "nodes");
    part.nodes_per_hop.assign(nodes.nodes_per_hop().begin(), nodes.nodes_per_hop().end());
    if (trees) {  // disjoint / temporal: every type's (an empty type's too)
      part.batch_ids = array_from_bytes(nodes.batch(), DType::kInt64, {n}, address, "batch");
    }
    if (!nodes.x_dtype().empty()) {
      part.attrs.emplace_back("x",
                              array_from_bytes(nodes.x(), parse_dtype(nodes.x_dtype(), address),
                                               {n, nodes.x_width()}, address, "x"));
    }
    if (nodes.has_y()) {
      part.attrs.emplace_back("y", array_from_bytes(nodes.y(), DType::kInt64, {n}, address, "y"));
    }
  }
  for (const rpc::TypedEdges& edges : message.edge_types()) {
    EdgeTypeBatch& part = batch.edge_types.emplace_back();
    const auto e = static_cast<int64_t>(edges.edge_ids().size() / sizeof(int64_t));
    part.edge_index =
        array_from_bytes(edges.edge_index(), DType::kInt64, {2, e}, address, "edge_index");
    part.edge_ids = array_from_bytes(edges.edge_ids(), DType::kInt64, {e}, address, "edge_ids");
    part.edges_per_hop.assign(edges.edges_per_hop().begin(), edges.edges_per_hop().end());
  }
}

// One epoch's SampleEpoch stream. A reader thread pulls messages into a small queue (at most
// kQueued ahead: when it is full the reader stops reading, gRPC's flow control fills the
// window and the server's Write blocks — that is the back-pressure). next() waits for the next
// message at most deadline_seconds. A stream that fails as its server's failure (unreachable, no
// batch within the deadline) is opened again on another of the servers (`address` "a|b"), from
// the first batch not yet delivered: the epoch goes on with the same batches.
class StreamedEpoch final : public BatchStream {
 public:
  static constexpr size_t kQueued = 2;

  StreamedEpoch(std::shared_ptr<const ServerClientLoader::State> loader, int64_t epoch,
                int64_t first_batch)
      : loader_(std::move(loader)), delivered_(first_batch) {
    request_ = epoch_request(*loader_, epoch, positions_);
    open();
  }

  ~StreamedEpoch() override { stop(); }

  std::optional<Batch> next() override {
    const auto& state = *loader_;
    for (;;) {
      std::unique_lock lock(mutex_);
      if (delivered_ >= state.num_batches || stopped_) return std::nullopt;
      const auto timeout = internal::bounded_wait(state.client.deadline_seconds);
      const bool ready = changed_.wait_for(
          lock, timeout, [&] { return stopped_ || !queue_.empty() || finished_; });
      if (stopped_) return std::nullopt;
      if (ready && !queue_.empty()) return take(lock);
      const std::string address = state.servers->address(replica_);
      const grpc::Status status =
          ready ? status_ : grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "no batch in time");
      lock.unlock();
      close();
      if (!status.ok() && state.servers->fail_over(replica_, status)) {
        open();  // another server, from batch delivered_
        continue;
      }
      stop();
      if (!ready) {
        throw TimeoutError(fmt::format(
            "server {}: no batch within the deadline of {} s (waiting for batch {} of {}); the "
            "server may be overloaded or stuck",
            address, state.client.deadline_seconds, delivered_, state.num_batches));
      }
      if (!status.ok()) fail(status, address, -1, "SampleEpoch", state.client.deadline_seconds);
      throw RuntimeError(fmt::format("server {}: the epoch stream ended after {} of {} batches",
                                     address, delivered_, state.num_batches));
    }
  }

  void stop() override {
    {
      std::lock_guard lock(mutex_);
      stopped_ = true;
    }
    close();
  }

  int64_t num_batches() const override { return loader_->num_batches; }

 private:
  // The request of this rank's share of epoch `epoch` (and its positions, several ranks).
  static rpc::EpochRequest epoch_request(const ServerClientLoader::State& state, int64_t epoch,
                                         Array& positions) {
    // This rank's share of the epoch, as the server's loader (one rank) must be asked for it.
    loader_internal::EpochShare share =
        loader_internal::epoch_share(state.input_nodes, state.options, epoch);
    positions = share.positions;
    rpc::EpochRequest request;
    request.set_protocol(kProtocolVersion);
    request.set_fingerprint(state.info.fingerprint);
    pack(share.input_nodes.span<int64_t>(), request.mutable_input_nodes());
    request.set_epoch(epoch);
    request.set_batch_size(state.options.batch_size);
    request.set_shuffle(share.shuffle);
    request.set_drop_last(state.options.drop_last);
    request.set_seed(share.seed);
    internal::options_to_wire(state.options.sampler, request.mutable_sampler());
    request.set_features(state.fields.features);
    request.set_labels(state.fields.labels);
    request.set_input_type(state.fields.input_type);
    if (!state.typed) {
      request.set_feature_dtype(std::string(dtype_name(state.options.feature_dtype)));
    } else if (state.fields.typed_feature_dtype) {
      request.set_feature_dtype(std::string(dtype_name(*state.fields.typed_feature_dtype)));
    }
    request.set_concurrency(state.options.num_threads);
    if (state.options.input_time) {  // temporal (typed by node time: optional)
      const Array& time = *state.options.input_time;
      const std::vector<int64_t> times =
          share.positions.defined()
              ? loader_internal::seed_times_at(time, share.positions.span<int64_t>())
              : std::vector<int64_t>(time.data<int64_t>(), time.data<int64_t>() + time.numel());
      pack(std::span<const int64_t>(times), request.mutable_input_time());
    }
    request.set_deadline_seconds(state.client.deadline_seconds);
    return request;
  }

  // Opens the stream from batch delivered_ on the next server.
  void open() {
    const auto& state = *loader_;
    replica_ = state.servers->pick();
    context_ = std::make_unique<grpc::ClientContext>();
    if (!state.client.token.empty()) context_->AddMetadata(internal::kTokenKey, state.client.token);
    request_.set_first_batch(delivered_);
    {
      std::lock_guard lock(mutex_);
      queue_.clear();
      finished_ = closing_ = false;
    }
    reader_ = state.servers->stub(replica_)->SampleEpoch(context_.get(), request_);
    thread_ = std::thread([this] { read_loop(); });
  }

  // Ends the open stream (its reader thread joined).
  void close() {
    {
      std::lock_guard lock(mutex_);
      if (!thread_.joinable()) return;
      closing_ = true;
    }
    context_->TryCancel();
    changed_.notify_all();
    thread_.join();
  }

  // The batch at the front of the queue (lock held), delivered.
  Batch take(std::unique_lock<std::mutex>& lock) {
    const auto& state = *loader_;
    rpc::BatchMessage message = std::move(queue_.front());
    queue_.pop_front();
    ++delivered_;
    lock.unlock();
    changed_.notify_all();
    const std::string& address = state.servers->address(replica_);
    Batch batch = batch_from_message(message, address);
    if (state.typed) {
      const NeighborSamplerOptions& sampler = state.options.sampler;
      typed_parts_from_message(message, *state.typed,
                               sampler.disjoint || sampler.time_source != TimeSource::kNone,
                               address, batch);
    }
    VOLLEY_REQUIRE(batch.index == delivered_ - 1, RuntimeError,
                   "server {}: batch {} arrived where batch {} was expected", address, batch.index,
                   delivered_ - 1);
    loader_internal::remap_input_ids(batch, positions_);
    return batch;
  }

  void read_loop() {
    while (true) {
      rpc::BatchMessage message;
      {
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [&] { return stopped_ || closing_ || queue_.size() < kQueued; });
        if (stopped_ || closing_) break;
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
  rpc::EpochRequest request_;
  size_t replica_ = 0;  // the server of the open stream
  std::unique_ptr<grpc::ClientContext> context_;
  std::unique_ptr<grpc::ClientReader<rpc::BatchMessage>> reader_;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<rpc::BatchMessage> queue_;
  grpc::Status status_;
  bool finished_ = false;
  bool closing_ = false;  // the open stream is being ended (a fail-over, or stop())
  bool stopped_ = false;
  int64_t delivered_ = 0;
};

// The input nodes of a homogeneous service, checked against it (what the server would refuse).
Array checked_inputs(const ServiceInfo& info, const std::optional<Array>& input_nodes,
                     const LoaderOptions& options, bool features) {
  validate_sampler_options(options.sampler, info.has_weights);
  const TimeSource time_source = options.sampler.time_source;
  VOLLEY_REQUIRE(time_source != TimeSource::kEdge || info.has_edge_time, ValueError,
                 "temporal sampling by edge time, but the partitioned dataset '{}' has no edge "
                 "times (partition a dataset with edge_time.npy)",
                 info.dataset_name);
  VOLLEY_REQUIRE(time_source != TimeSource::kNode || info.has_node_time, ValueError,
                 "temporal sampling by node time, but the partitioned dataset '{}' has no node "
                 "times (partition a dataset with node_time.npy)",
                 info.dataset_name);
  if (features) {
    VOLLEY_REQUIRE(gather_supports(info.feature_dtype, options.feature_dtype), ValueError,
                   "features of dtype {} cannot be delivered as {}", dtype_name(info.feature_dtype),
                   dtype_name(options.feature_dtype));
  }
  const bool temporal = time_source != TimeSource::kNone;
  Array inputs = loader_internal::checked_input_nodes(input_nodes, info.book.num_nodes(),
                                                      /*distinct=*/!temporal);
  loader_internal::check_loader_options(options, inputs.numel());
  loader_internal::check_input_time(options, inputs.numel());
  return inputs;
}

// ... of a typed service: as the typed loader checks them (its node types and edge types).
Array checked_typed_inputs(const HeteroServiceInfo& info, const std::optional<Array>& input_nodes,
                           const LoaderOptions& options, const StreamedFields& fields) {
  std::vector<NodeTypeInfo> types;
  for (const HeteroNodeTypeService& type : info.node_types) {
    types.push_back({type.name, type.book.num_nodes()});
  }
  resolve_hetero_fanouts(info.edge_types, options.sampler);  // ValueError naming the edge type
  return loader_internal::checked_typed_inputs(types, fields.input_type, input_nodes, options,
                                               options.sampler)
      .inputs;
}

// Info from the first of the streaming servers that answers (waiting up to connect_seconds for
// one still starting): the last one's error when none does. ValueError when it cannot sample
// epochs (started without peers).
rpc::InfoReply streaming_info(const internal::PartServers& servers, const ClientOptions& client) {
  for (size_t r = 0;; ++r) {
    Call<rpc::InfoRequest, rpc::InfoReply> call;
    prepare(call.context, client, client.connect_seconds);
    call.context.set_wait_for_ready(true);
    call.request.set_protocol(kProtocolVersion);
    call.status = servers.stub(r)->Info(&call.context, call.request, &call.reply);
    if (!call.status.ok() && r + 1 < servers.size() && servers.fail_over(r, call.status)) continue;
    check_info(call.status, call.reply, servers.address(r), -1, client.connect_seconds);
    VOLLEY_REQUIRE(call.reply.can_sample_epochs(), ValueError,
                   "server {} cannot sample epochs: start it with --peers (the addresses of every "
                   "part's server) for server-client mode",
                   servers.address(r));
    return call.reply;
  }
}

}  // namespace

ServerClientLoader::ServerClientLoader(std::string address, ClientOptions client,
                                       std::optional<Array> input_nodes, LoaderOptions options,
                                       StreamedFields fields) {
  VOLLEY_REQUIRE(!address.empty(), ValueError, "no server address given");
  VOLLEY_REQUIRE(client.deadline_seconds > 0 && client.connect_seconds > 0, ValueError,
                 "deadline_seconds and connect_seconds must be > 0, got {} and {}",
                 client.deadline_seconds, client.connect_seconds);
  auto state = std::make_shared<State>();
  state->address = std::move(address);
  state->client = std::move(client);
  state->servers = std::make_unique<internal::PartServers>(state->address, state->client);
  state->options = std::move(options);
  state->fields = std::move(fields);
  const rpc::InfoReply reply = streaming_info(*state->servers, state->client);
  // Check here what the server would refuse, so mistakes surface at construction.
  StreamedFields& wanted = state->fields;
  if (reply.heterogeneous()) {
    state->typed = internal::service_description(reply, state->address, /*typed=*/true);
    state->info.dataset_name = state->typed->dataset_name;
    state->info.fingerprint = state->typed->fingerprint;
    state->input_nodes = checked_typed_inputs(*state->typed, input_nodes, state->options, wanted);
  } else {
    VOLLEY_REQUIRE(wanted.input_type.empty(), ValueError,
                   "input_nodes: server {} serves the homogeneous partitioned dataset '{}', which "
                   "has no node type '{}'",
                   state->address, reply.dataset_name(), wanted.input_type);
    state->info = internal::flat_service_info(
        internal::service_description(reply, state->address, /*typed=*/false));
    wanted.features = wanted.features && state->info.feature_dim > 0;
    wanted.labels = wanted.labels && state->info.label_dtype.has_value();
    state->input_nodes = checked_inputs(state->info, input_nodes, state->options, wanted.features);
  }
  state->num_batches = loader_internal::num_batches(state->input_nodes.numel(), state->options);
  state_ = std::move(state);
}

ServerClientLoader::~ServerClientLoader() = default;

int64_t ServerClientLoader::num_batches() const { return state_->num_batches; }
int64_t ServerClientLoader::num_inputs() const { return state_->input_nodes.numel(); }
const ServiceInfo& ServerClientLoader::info() const { return state_->info; }
const TypedServiceInfo* ServerClientLoader::typed_info() const {
  return state_->typed ? &*state_->typed : nullptr;
}

std::unique_ptr<BatchStream> ServerClientLoader::start_epoch(int64_t epoch_index,
                                                             int64_t first_batch) const {
  VOLLEY_REQUIRE(first_batch >= 0 && first_batch <= state_->num_batches, ValueError,
                 "an epoch of {} batches cannot resume at batch {}", state_->num_batches,
                 first_batch);
  return std::make_unique<StreamedEpoch>(state_, epoch_index, first_batch);
}

}  // namespace volley::dist
