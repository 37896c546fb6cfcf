// The trainer's side of the distributed service: the calls' shared plumbing (channels, deadlines,
// errors, the Info handshake) and DistGraph::connect. See client.h for the contract; sampling is
// in dist_sampler.cc, feature and label rows in feature_client.cc, server-client mode in
// server_client_loader.cc.
#include "volley/dist/client.h"

#include <algorithm>
#include <chrono>
#include <latch>

#include "volley/core/files.h"
#include "volley/dist/internal/client_calls.h"
#include "volley/feature/gather.h"
#include "volley/graph/io/npy.h"
#include "volley/partition/hetero_partition.h"

namespace volley::dist {

std::string dataset_fingerprint(const std::string& directory) {
  if (is_hetero_partitioned_directory(directory)) {
    const HeteroPartitionManifest manifest = read_hetero_partition_manifest(directory);
    return crc32_hex(crc32_of(manifest.json.data(), manifest.json.size()));
  }
  const PartitionManifest manifest = read_partition_manifest(directory);
  return crc32_hex(crc32_of(manifest.json.data(), manifest.json.size()));
}

namespace internal {

std::string read_pem(const std::string& path, const char* what) {
  std::string text = read_file_text(path, what);
  VOLLEY_REQUIRE(text.find("-----BEGIN") != std::string::npos, IoError,
                 "{} '{}' is not a PEM file (no '-----BEGIN' line)", what, path);
  return text;
}

namespace {

std::shared_ptr<grpc::ChannelCredentials> channel_credentials(const TlsOptions& tls) {
  if (tls.ca_file.empty()) {
    VOLLEY_REQUIRE(tls.cert_file.empty() && tls.key_file.empty(), ValueError,
                   "a client certificate ('{}') needs tls_ca too (the CA that signed the "
                   "servers' certificates)",
                   tls.cert_file);
    return grpc::InsecureChannelCredentials();
  }
  VOLLEY_REQUIRE(tls.cert_file.empty() == tls.key_file.empty(), ValueError,
                 "a client certificate needs both its file and its key file, got '{}' and '{}'",
                 tls.cert_file, tls.key_file);
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = read_pem(tls.ca_file, "TLS CA file");
  if (!tls.cert_file.empty()) {
    ssl.pem_cert_chain = read_pem(tls.cert_file, "TLS certificate file");
    ssl.pem_private_key = read_pem(tls.key_file, "TLS key file");
  }
  return grpc::SslCredentials(ssl);
}

}  // namespace

std::shared_ptr<grpc::Channel> make_channel(const std::string& address,
                                            const ClientOptions& options) {
  grpc::ChannelArguments args;
  const int max_bytes = static_cast<int>(std::min<int64_t>(options.max_message_bytes, INT32_MAX));
  args.SetMaxReceiveMessageSize(max_bytes);
  args.SetMaxSendMessageSize(max_bytes);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, kKeepaliveMs);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, kKeepaliveTimeoutMs);
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
  return grpc::CreateCustomChannel(address, channel_credentials(options.tls), args);
}

namespace {

std::chrono::system_clock::time_point deadline_after(double seconds) {
  return std::chrono::system_clock::now() +
         std::chrono::duration_cast<std::chrono::system_clock::duration>(
             internal::bounded_wait(seconds));
}

}  // namespace

void prepare(grpc::ClientContext& context, const ClientOptions& options, double seconds) {
  context.set_deadline(deadline_after(seconds));
  if (!options.token.empty()) context.AddMetadata(kTokenKey, options.token);
}

// Throws the Volley error for a failed call to `address` (part `part`, or -1 for "the server").
[[noreturn]] void fail(const grpc::Status& status, const std::string& address, int64_t part,
                       const char* call, double deadline_seconds) {
  const ErrorKind kind = error_kind_for(status.error_code());
  const std::string who =
      part >= 0 ? fmt::format("part {} at {}", part, address) : fmt::format("server {}", address);
  std::string message;
  if (status.error_message().find(kPeerFailure) != std::string::npos) {
    // The server is fine; one of its peers is not (server-client mode).
    volley::internal::throw_error(
        kind, fmt::format("{}: {}: {}", who, call, quoted(status.error_message(), 1024)));
  }
  switch (kind) {
    case ErrorKind::kConnection:
      if (status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
        message = fmt::format(
            "{}: {} failed, the server is busy (out of handler threads or memory) and stayed "
            "so through the client's retries ({})",
            who, call, quoted(status.error_message(), 512));
        break;
      }
      message = fmt::format(
          "{}: {} failed, the server is unavailable ({}); is `volley serve` "
          "running there and reachable?",
          who, call, quoted(status.error_message(), 512));
      break;
    case ErrorKind::kTimeout:
      message = fmt::format("{}: {} got no answer within the deadline of {} s ({})", who, call,
                            deadline_seconds, quoted(status.error_message(), 512));
      break;
    case ErrorKind::kPermission:
      message = fmt::format("{}: {} refused: {}", who, call, quoted(status.error_message(), 512));
      break;
    default:
      message = fmt::format("{}: {} failed: {}", who, call, quoted(status.error_message(), 512));
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

void check_parts(const std::vector<std::vector<std::unique_ptr<InfoCall>>>& calls,
                 const Servers& servers, const ClientOptions& options, std::string fingerprint,
                 std::string reference,
                 const std::function<void(int64_t, const rpc::InfoReply&)>& each) {
  const auto parts = static_cast<int64_t>(servers.size());
  for (int64_t p = 0; p < parts; ++p) {
    const auto& replicas = calls[static_cast<size_t>(p)];
    for (size_t r = 0; r < replicas.size(); ++r) {
      const std::string& address = servers[static_cast<size_t>(p)]->address(r);
      const rpc::InfoReply& reply = replicas[r]->reply;
      check_info(replicas[r]->status, reply, address, p, options.connect_seconds);
      VOLLEY_REQUIRE(reply.part() == p && reply.num_parts() == parts, ValueError,
                     "{} serves part {} of {}, but it was given as the address of part {} of {}; "
                     "list the addresses in part order",
                     address, reply.part(), reply.num_parts(), p, parts);
      if (fingerprint.empty()) {
        fingerprint = reply.fingerprint();
        reference = fmt::format("part {} at {}", p, address);
      }
      VOLLEY_REQUIRE(
          reply.fingerprint() == fingerprint, ValueError,
          "part {} at {} serves dataset '{}' with fingerprint {}, but {} has fingerprint {}: the "
          "servers must serve parts of the same partitioned dataset",
          p, address, quoted(reply.dataset_name()), quoted(reply.fingerprint()), reference,
          fingerprint);
      if (r == 0) each(p, reply);
    }
  }
}

std::string tls_failure(const std::string& message, bool client_tls, bool client_certificate) {
  std::string lower(message);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const auto has = [&](const char* text) { return lower.find(text) != std::string::npos; };
  if (has("certificate_verify_failed") || has("certificate verify failed")) {
    return "the server's certificate does not verify against tls_ca (signed by another CA, "
           "self-signed, expired, or not naming this address)";
  }
  if (has("wrong_version_number") || has("wrong version number") || has("packet length too long") ||
      has("packet_length_too_long")) {
    return "the server does not speak TLS: connect without tls_ca, or start the server with "
           "tls_cert and tls_key";
  }
  if (has("certificate_required") || has("certificate required") ||
      has("alert_handshake_failure") || has("alert handshake failure") || has("bad certificate") ||
      has("bad_certificate") || has("unknown ca") || has("unknown_ca")) {
    return "the server refused this client's TLS handshake: it asks for a client certificate "
           "signed by its client CA (tls_cert and tls_key)";
  }
  if (has("handshake") || has("ssl") || has("tls")) return "the TLS handshake failed";
  if (has("socket closed") || has("connection reset") || has("end of file")) {
    if (!client_tls) {
      return "the server closed the connection at once: it may expect TLS (pass tls_ca)";
    }
    return client_certificate
               ? "the server closed the connection during the TLS handshake: it may not accept "
                 "this client's certificate (tls_cert must be signed by the server's client CA)"
               : "the server closed the connection during the TLS handshake: it may ask for a "
                 "client certificate signed by its client CA (tls_cert and tls_key)";
  }
  return "";
}

std::vector<std::vector<std::unique_ptr<InfoCall>>> info_from_all(const Servers& servers,
                                                                  const ClientOptions& options) {
  std::vector<std::vector<std::unique_ptr<InfoCall>>> calls(servers.size());
  std::vector<std::pair<size_t, size_t>> asked;  // (part, replica)
  for (size_t p = 0; p < servers.size(); ++p) {
    if (!servers[p]) continue;
    calls[p].resize(servers[p]->size());
    for (size_t r = 0; r < servers[p]->size(); ++r) asked.emplace_back(p, r);
  }
  for (const bool wait : {false, true}) {
    std::latch done(static_cast<std::ptrdiff_t>(asked.size()));
    for (const auto& [p, r] : asked) {
      auto& call = calls[p][r];
      call = std::make_unique<InfoCall>();
      prepare(call->context, options, options.connect_seconds);
      call->context.set_wait_for_ready(wait);
      call->request.set_protocol(kProtocolVersion);
      servers[p]->stub(r)->async()->Info(&call->context, &call->request, &call->reply,
                                         record_status(*call, done));
    }
    done.wait();
    std::vector<std::pair<size_t, size_t>> again;  // not listening yet: asked again, waiting
    for (const auto& [p, r] : asked) {
      const grpc::Status& status = calls[p][r]->status;
      if (wait || status.error_code() != grpc::StatusCode::UNAVAILABLE) continue;
      const std::string reason = tls_failure(status.error_message(), !options.tls.ca_file.empty(),
                                             !options.tls.cert_file.empty());
      if (!reason.empty()) {
        throw ConnectionError(fmt::format("part {} at {}: {} ({})", p, servers[p]->address(r),
                                          reason, quoted(status.error_message(), 512)));
      }
      again.emplace_back(p, r);
    }
    asked = std::move(again);
  }
  return calls;
}

PartServers::PartServers(const std::string& address, const ClientOptions& options) {
  for (size_t begin = 0;;) {
    const size_t end = std::min(address.find('|', begin), address.size());
    addresses_.push_back(address.substr(begin, end - begin));
    VOLLEY_REQUIRE(!addresses_.back().empty(), ValueError,
                   "an empty address among the replicas '{}' of a part", quoted(address, 256));
    if (end == address.size()) break;
    begin = end + 1;
  }
  VOLLEY_REQUIRE(addresses_.size() <= kMaxReplicas, ValueError,
                 "{} replicas of one part ('{}'), more than {}", addresses_.size(),
                 quoted(address, 256), kMaxReplicas);
  for (const std::string& replica : addresses_) {
    stubs_.push_back(rpc::PartitionService::NewStub(make_channel(replica, options)));
  }
}

uint64_t PartServers::every_replica() const {
  return size() == 64 ? ~uint64_t{0} : (uint64_t{1} << size()) - 1;
}

size_t PartServers::pick() const {
  const size_t n = addresses_.size();
  const uint64_t turn = turn_.fetch_add(1, std::memory_order_relaxed);
  uint64_t failed = failed_.load(std::memory_order_relaxed);
  if (failed == every_replica()) {
    failed_.store(0, std::memory_order_relaxed);  // every replica failed: all are tried again
    failed = 0;
  }
  for (size_t k = 0; k < n; ++k) {
    const size_t r = (turn + k) % n;
    if (!(failed >> r & 1)) return r;
  }
  return turn % n;
}

bool PartServers::fail_over(size_t replica, const grpc::Status& status) const {
  // A server's failure: unreachable, no answer in time, or its calls cancelled as it shut down
  // (the client cancels no call it waits for). Any other status is the request's error, which
  // every replica would give.
  const auto code = status.error_code();
  if (code != grpc::StatusCode::UNAVAILABLE && code != grpc::StatusCode::DEADLINE_EXCEEDED &&
      code != grpc::StatusCode::CANCELLED) {
    return false;
  }
  const uint64_t mine = uint64_t{1} << replica;
  return (failed_.fetch_or(mine, std::memory_order_relaxed) | mine) != every_replica();
}

Servers connect_parts(const std::vector<std::string>& addresses, const ClientOptions& options,
                      int64_t local) {
  Servers servers(addresses.size());
  for (size_t p = 0; p < addresses.size(); ++p) {
    if (static_cast<int64_t>(p) == local) continue;
    VOLLEY_REQUIRE(!addresses[p].empty(), ValueError, "no address given for part {}", p);
    servers[p] = std::make_unique<PartServers>(addresses[p], options);
  }
  return servers;
}

void check_client_options(const std::vector<std::string>& addresses, const ClientOptions& options) {
  VOLLEY_REQUIRE(!addresses.empty(), ValueError,
                 "no server addresses given: list one host:port per partition, in part order");
  VOLLEY_REQUIRE(options.deadline_seconds > 0 && options.connect_seconds > 0, ValueError,
                 "deadline_seconds and connect_seconds must be > 0, got {} and {}",
                 options.deadline_seconds, options.connect_seconds);
}

PartLimits part_limits(const rpc::InfoReply& reply, const ClientOptions& options) {
  PartLimits limits;
  if (reply.max_ids_per_call() > 0) limits.max_ids = reply.max_ids_per_call();
  if (reply.max_reply_bytes() > 0) {
    limits.max_reply_bytes = reply.max_reply_bytes();
    limits.max_degree = reply.max_degree();
  }
  if (reply.max_request_bytes() > 0) {
    limits.max_ids = std::min(limits.max_ids, (reply.max_request_bytes() - kMessageSlack) / 8);
    limits.max_request_bytes = reply.max_request_bytes();
  }
  // What this client may receive and send, too.
  limits.max_reply_bytes =
      std::min(limits.max_reply_bytes, options.max_message_bytes - kMessageSlack);
  limits.max_request_bytes =
      std::min(limits.max_request_bytes, options.max_message_bytes) - kMessageSlack;
  limits.max_ids = std::max<int64_t>(
      1, std::min(limits.max_ids, (options.max_message_bytes - kMessageSlack) / 8));
  return limits;
}

int64_t targets_per_call(const PartLimits& limits, int64_t bytes_per_target,
                         int64_t request_bytes_per_target) {
  const int64_t by_reply = limits.max_reply_bytes / std::max<int64_t>(1, bytes_per_target);
  const int64_t by_request =
      limits.max_request_bytes / std::max<int64_t>(1, request_bytes_per_target);
  return std::max<int64_t>(1, std::min({limits.max_ids, by_reply, by_request}));
}

}  // namespace internal

// --- DistGraph ---------------------------------------------------------------------------------

namespace {

// What the local partition (worker mode) describes, as a server's Info would: the one-type case
// (its edge count, which a part does not know, comes from the servers).
TypedServiceInfo local_service(const Partition& local, std::string fingerprint) {
  const Dataset& data = local.data;
  TypedServiceInfo info;
  // A part's dataset is named "<name>.part-<p>": report the whole dataset's name, as servers do.
  info.dataset_name = data.name;
  if (const std::string suffix = fmt::format(".part-{}", local.part);
      info.dataset_name.ends_with(suffix)) {
    info.dataset_name.resize(info.dataset_name.size() - suffix.size());
  }
  info.fingerprint = std::move(fingerprint);
  NodeTypeService& type = info.node_types.emplace_back();
  type.book = local.book;
  internal::describe_rows(data, type);
  type.has_node_time = local.node_time.has_value();
  info.edge_types.push_back({"", "", ""});
  info.num_edges.push_back(0);
  info.has_weights.push_back(data.graph.has_weights());
  info.has_edge_time.push_back(data.graph.has_edge_time());
  return info;
}

// Rows of `kind` of `ids` (owned by the local part) into `rows`, as its server answers GetRows.
void local_rows(const Partition& local, rpc::RowsRequest::Kind kind, std::span<const int64_t> ids,
                DType out_dtype, std::byte* rows) {
  if (kind == rpc::RowsRequest::DEGREES) {
    auto* degrees = reinterpret_cast<int64_t*>(rows);
    for (size_t i = 0; i < ids.size(); ++i) {
      degrees[i] = local.data.graph.degree(ids[i] - local.first_node());
    }
    return;
  }
  const Array& table =
      kind == rpc::RowsRequest::FEATURES ? *local.data.features : *local.data.labels;
  std::vector<int64_t> local_ids(ids.begin(), ids.end());
  for (int64_t& id : local_ids) id -= local.first_node();
  gather_rows(table, local_ids, out_dtype, rows);
}

}  // namespace

std::shared_ptr<const DistGraph> DistGraph::connect(std::vector<std::string> addresses,
                                                    ClientOptions options,
                                                    const std::string& local_directory,
                                                    std::optional<int64_t> local_part) {
  return internal::connect_from_directory<DistGraph>(std::move(addresses), std::move(options),
                                                     local_directory, local_part, load_partition);
}

std::shared_ptr<const DistGraph> DistGraph::connect(std::vector<std::string> addresses,
                                                    ClientOptions options,
                                                    std::shared_ptr<const Partition> local,
                                                    std::string fingerprint) {
  internal::check_client_options(addresses, options);
  VOLLEY_REQUIRE(options.max_message_bytes >= (1 << 20), ValueError,
                 "max_message_bytes must be at least 1 MiB, got {}", options.max_message_bytes);
  auto state = std::make_unique<State>();
  state->options = std::move(options);
  state->addresses = std::move(addresses);
  const int64_t parts = state->num_parts();
  if (local) {
    internal::check_local_parts(local->book.num_parts(), parts);
    state->local_part = local->part;
    state->service = local_service(*local, std::move(fingerprint));
    state->local_rows = [partition = local.get()](int, rpc::RowsRequest::Kind kind,
                                                  std::span<const int64_t> ids, DType out_dtype,
                                                  std::byte* rows) {
      local_rows(*partition, kind, ids, out_dtype, rows);
    };
    state->local = std::move(local);
  }
  internal::connect_service(*state, /*typed=*/false);
  state->info = internal::flat_service_info(state->service);
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
  const ServiceInfo& info = state_->info;
  VOLLEY_REQUIRE(options.time_source != TimeSource::kEdge || info.has_edge_time, ValueError,
                 "temporal sampling by edge time, but the partitioned dataset '{}' has no edge "
                 "times (partition a dataset with edge_time.npy)",
                 info.dataset_name);
  VOLLEY_REQUIRE(options.time_source != TimeSource::kNode || info.has_node_time, ValueError,
                 "temporal sampling by node time, but the partitioned dataset '{}' has no node "
                 "times (partition a dataset with node_time.npy)",
                 info.dataset_name);
  if (!options.replace) return;  // without replacement a target's picks are at most its degree
  for (int64_t p = 0; p < state_->num_parts(); ++p) {
    if (p == state_->local_part) continue;
    const int64_t max_fanout = (state_->limits[static_cast<size_t>(p)].max_reply_bytes - 4) / 16;
    for (size_t hop = 0; hop < options.fanouts.size(); ++hop) {
      VOLLEY_REQUIRE(options.fanouts[hop] <= max_fanout, ValueError,
                     "fanout {} at hop {} with replace=true is more than the {} picks one node may "
                     "have at part {} at {} (its server's max_reply_bytes)",
                     options.fanouts[hop], hop, max_fanout, p,
                     state_->addresses[static_cast<size_t>(p)]);
    }
  }
}

}  // namespace volley::dist
