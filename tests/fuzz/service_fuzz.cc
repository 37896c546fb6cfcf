// libFuzzer target: every request handler of the partition server (volley/dist/server.h), over
// both kinds of partition. This process serves a 2-part partition of the bundled Cora (Server, part
// 0 with part 1 as its peer, so SampleEpoch runs) and a 2-part partition of a small generated
// heterogeneous dataset (the same Server); each input is one call to one method of
// one of them:
//   byte 0, bits 0-2: the method (Info, Health, SampleHop, GetRows, SampleEpoch, HasEdges,
//                     SampleEpoch again (its seeds are typed), NodeData);
//   byte 0, bit 3:    send the rest as raw bytes (the decoder's path), else decode them as the
//                     method's request and re-encode;
//   byte 0, bit 4:    set the request's protocol and fingerprint to the right ones, so that the
//                     handler's deeper checks and work are reached;
//   byte 0, bit 5:    call the heterogeneous servers (else the homogeneous ones);
//   the rest:         the request's bytes.
// Findings: a crash or sanitizer report anywhere in the process, a server that stops answering
// Health after a call, or an error status that names nothing (an empty message).
// VOLLEY_FUZZ_WRITE_SEEDS=<dir> writes seed inputs (valid requests, both kinds) and exits.
#include <grpcpp/grpcpp.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "../cpp/dist/raw_call.h"
#include "fuzz_util.h"
#include "volley/core/version.h"
#include "volley/dist/server.h"
#include "volley/dist/volley.grpc.pb.h"
#include "volley/graph/generate_hetero.h"
#include "volley/partition/hetero_partition.h"
#include "volley/partition/partition.h"

namespace {

namespace rpc = ::volley::rpc;
using volley::dist_test::raw_call;

const char* const kMethods[] = {"Info",        "Health",   "SampleHop",   "GetRows",
                                "SampleEpoch", "HasEdges", "SampleEpoch", "NodeData"};
constexpr int kNumMethods = 8;

// Two servers of one kind (part 0 with part 1 as its peer), and what a valid request names.
template <typename ServerType>
struct Deployment {
  std::unique_ptr<ServerType> part1;
  std::unique_ptr<ServerType> part0;
  std::shared_ptr<grpc::Channel> channel;
  std::string fingerprint;
  int64_t begin = 0, end = 0;  // part 0's ids (of node type "paper" for the typed servers)
};

volley::dist::ServerOptions server_options() {
  volley::dist::ServerOptions options;
  options.threads = 32;
  options.limits.max_reply_bytes = int64_t{4} << 20;  // small: the limits are reached
  options.limits.max_request_bytes = int64_t{4} << 20;
  options.limits.max_node_data_bytes = int64_t{64} << 20;  // node tables: small, reachable
  options.default_concurrency = 2;
  options.peer_client.deadline_seconds = 5;
  return options;
}

template <typename ServerType>
void serve(Deployment<ServerType>& d, const std::string& dir) {
  volley::dist::ServerOptions options = server_options();
  d.part1 = std::make_unique<ServerType>(dir, 1, options);
  options.peers = {"", d.part1->address()};
  d.part0 = std::make_unique<ServerType>(dir, 0, options);
  d.channel = grpc::CreateChannel(d.part0->address(), grpc::InsecureChannelCredentials());
  d.fingerprint = d.part0->fingerprint();
}

Deployment<volley::dist::Server>& deployment() {
  static auto* const served = [] {
    auto* d = new Deployment<volley::dist::Server>;
    const std::string dir = volley::fuzz::scratch_dir() + "/cora-2";
    volley::partition_dataset(std::string(VOLLEY_SOURCE_DIR) + "/data/cora", dir,
                              {.method = volley::PartitionMethod::kRandom, .num_parts = 2});
    serve(*d, dir);
    const auto& book = d->part0->partition()->book;
    d->begin = book.begin(0);
    d->end = book.end(0);
    return d;
  }();
  return *served;
}

Deployment<volley::dist::Server>& typed_deployment() {
  static auto* const served = [] {
    auto* d = new Deployment<volley::dist::Server>;
    const std::string dir = volley::fuzz::scratch_dir();
    volley::GeneratorOptions generator = volley::mag_generator_options();
    generator.num_nodes = 300, generator.feature_dim = 4, generator.num_classes = 3;
    generator.seed = 2, generator.reverse = true;
    volley::generate_hetero_dataset(generator, dir + "/mag");
    volley::partition_hetero_dataset(dir + "/mag", dir + "/mag-2",
                                     {.method = volley::PartitionMethod::kRandom, .num_parts = 2});
    serve(*d, dir + "/mag-2");
    const auto& book = d->part0->hetero_partition()->book("paper");
    d->begin = book.begin(0);
    d->end = book.end(0);
    return d;
  }();
  return *served;
}

template <typename Request>
std::string reencode(const std::string& bytes, bool fix, const std::string& fingerprint) {
  Request request;
  if (!request.ParseFromString(bytes)) return bytes;  // undecodable: sent as it is
  if (fix) {
    if constexpr (requires { request.set_fingerprint(""); }) {
      request.set_fingerprint(fingerprint);
    }
    if constexpr (requires { request.set_protocol(0); }) {
      request.set_protocol(volley::dist::kProtocolVersion);
    }
  }
  return request.SerializeAsString();
}

// A server-streaming call of `bytes` to `method` (raw when they do not decode as a Request):
// reads every message, returns the final status.
template <typename Request, typename Message, typename Start>
grpc::Status stream_call(const std::shared_ptr<grpc::Channel>& channel, const char* method,
                         const std::string& bytes, Start start) {
  Request request;
  if (!request.ParseFromString(bytes)) {
    return raw_call(channel, std::string("/volley.rpc.PartitionService/") + method, bytes);
  }
  auto stub = rpc::PartitionService::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(8));
  auto reader = start(*stub, context, request);
  Message message;
  while (reader->Read(&message)) {
  }
  return reader->Finish();
}

void check(const std::shared_ptr<grpc::Channel>& channel, const grpc::Status& status,
           const char* method) {
  if (!status.ok() && status.error_message().empty()) {
    std::fprintf(stderr, "finding: %s answered status %d with an empty message\n", method,
                 static_cast<int>(status.error_code()));
    std::abort();
  }
  const grpc::Status health =
      raw_call(channel, "/volley.rpc.PartitionService/Health", std::string(), 5.0);
  if (!health.ok()) {
    std::fprintf(stderr, "finding: the server stopped answering Health after a %s call: %s\n",
                 method, health.error_message().c_str());
    std::abort();
  }
}

std::string packed(std::initializer_list<int64_t> ids) {
  return std::string(reinterpret_cast<const char*>(std::data(ids)), ids.size() * sizeof(int64_t));
}

// Valid requests, one per method of each kind, prefixed with the "re-encode and fix" selector
// byte (and the typed bit for the heterogeneous servers).
void write_seeds(const std::string& dir) {
  std::filesystem::create_directories(dir);
  const auto write = [&](int method, bool typed, const std::string& body) {
    const int selector = method | 0x10 | (typed ? 0x20 : 0);
    std::ofstream(dir + "/" + (typed ? "typed-" : "") + kMethods[method], std::ios::binary)
        << static_cast<char>(selector) << body;
  };
  const auto& d = deployment();
  const auto& t = typed_deployment();
  for (const bool typed : {false, true}) {
    write(0, typed, rpc::InfoRequest().SerializeAsString());
    write(1, typed, rpc::HealthRequest().SerializeAsString());
  }
  rpc::HopRequest hop;
  hop.set_targets(packed({d.begin, d.begin + 1, d.end - 1}));
  hop.set_fanout(5);
  hop.mutable_sampler()->set_seed(1);
  write(2, false, hop.SerializeAsString());
  hop.set_targets(packed({t.begin, t.begin + 1, t.end - 1}));
  hop.set_edge_type("paper__cites__paper");
  write(2, true, hop.SerializeAsString());
  rpc::RowsRequest rows;
  rows.set_ids(packed({d.begin, d.end - 1}));
  rows.set_out_dtype("float16");
  write(3, false, rows.SerializeAsString());
  rows.set_ids(packed({t.begin, t.end - 1}));
  rows.set_node_type("paper");
  write(3, true, rows.SerializeAsString());
  rpc::EpochRequest epoch;
  epoch.set_input_nodes(packed({0, 5, 17, 400, 2000}));
  epoch.set_batch_size(2);
  epoch.mutable_sampler()->add_fanouts(3);
  epoch.mutable_sampler()->add_fanouts(2);
  epoch.set_features(true);
  epoch.set_feature_dtype("float32");
  epoch.set_labels(true);
  write(4, false, epoch.SerializeAsString());
  rpc::EdgesRequest edges;
  edges.set_rows(packed({d.begin, d.begin + 1}));
  edges.set_others(packed({0, 1}));
  write(5, false, edges.SerializeAsString());
  rpc::EpochRequest typed_epoch;
  typed_epoch.set_input_type("paper");
  typed_epoch.set_input_nodes(packed({0, 3, 7, 150, 299}));
  typed_epoch.set_batch_size(2);
  typed_epoch.mutable_sampler()->add_fanouts(2);
  typed_epoch.mutable_sampler()->add_fanouts(2);
  typed_epoch.set_features(true);
  typed_epoch.set_labels(true);
  write(6, true, typed_epoch.SerializeAsString());
  // Node data: a table made, then read, written, stepped and checkpointed (seed files sort by
  // name: "NodeData-0-create" runs first).
  for (const bool typed : {false, true}) {
    const int64_t begin = typed ? t.begin : d.begin;
    rpc::NodeDataRequest data;
    data.set_name("emb");
    if (typed) data.set_node_type("paper");
    data.set_op(rpc::NodeDataRequest::CREATE);
    data.set_dim(4);
    data.set_state_slots(2);
    data.set_init("normal");
    data.set_scale(0.1);
    data.set_exist_ok(true);
    const std::string prefix = std::string(typed ? "typed-" : "") + "NodeData-";
    const auto write_data = [&](const std::string& what, const rpc::NodeDataRequest& request) {
      std::ofstream(dir + "/" + prefix + what, std::ios::binary)
          << static_cast<char>(7 | 0x10 | (typed ? 0x20 : 0)) << request.SerializeAsString();
    };
    write_data("0-create", data);
    data.set_ids(packed({begin, begin + 1, begin}));
    data.set_op(rpc::NodeDataRequest::PULL);
    write_data("1-pull", data);
    const float values[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    data.set_values(std::string(reinterpret_cast<const char*>(values), sizeof(values)));
    data.set_op(rpc::NodeDataRequest::ADD);
    write_data("2-add", data);
    data.set_op(rpc::NodeDataRequest::ADAM);
    data.set_lr(0.01f);
    data.set_eps(1e-8f);
    data.set_beta1(0.9f);
    data.set_beta2(0.999f);
    write_data("3-adam", data);
    rpc::NodeDataRequest read = data;
    read.clear_ids();
    read.clear_values();
    read.set_op(rpc::NodeDataRequest::READ);
    read.set_begin(begin);
    read.set_end(begin + 2);
    write_data("4-read", read);
  }
}

// One call of `method` with `bytes` to `channel` (see the top of the file).
grpc::Status call(const std::shared_ptr<grpc::Channel>& channel, const std::string& fingerprint,
                  int method, bool raw, bool fix, const std::string& bytes) {
  const std::string name = std::string("/volley.rpc.PartitionService/") + kMethods[method];
  const auto send = [&]<typename Request>(Request*) {
    return raw ? bytes : reencode<Request>(bytes, fix, fingerprint);
  };
  switch (method) {
    case 0:
      return raw_call(channel, name, send(static_cast<rpc::InfoRequest*>(nullptr)));
    case 1:
      return raw_call(channel, name, send(static_cast<rpc::HealthRequest*>(nullptr)));
    case 2:
      return raw_call(channel, name, send(static_cast<rpc::HopRequest*>(nullptr)));
    case 3:
      return raw_call(channel, name, send(static_cast<rpc::RowsRequest*>(nullptr)));
    case 4:
    case 6:
      return stream_call<rpc::EpochRequest, rpc::BatchMessage>(
          channel, kMethods[method], send(static_cast<rpc::EpochRequest*>(nullptr)),
          [](auto& stub, auto& context, const auto& request) {
            return stub.SampleEpoch(&context, request);
          });
    case 5:
      return raw_call(channel, name, send(static_cast<rpc::EdgesRequest*>(nullptr)));
    default:
      return raw_call(channel, name, send(static_cast<rpc::NodeDataRequest*>(nullptr)));
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* seeds = std::getenv("VOLLEY_FUZZ_WRITE_SEEDS")) {
    write_seeds(seeds);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const int method = data[0] % kNumMethods;
  const bool raw = (data[0] & 0x08) != 0;
  const bool fix = (data[0] & 0x10) != 0;
  const bool typed = (data[0] & 0x20) != 0;
  const std::string bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  const auto& channel = typed ? typed_deployment().channel : deployment().channel;
  const std::string& fingerprint =
      typed ? typed_deployment().fingerprint : deployment().fingerprint;
  check(channel, call(channel, fingerprint, method, raw, fix, bytes), kMethods[method]);
  return 0;
}
