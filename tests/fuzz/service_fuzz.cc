// libFuzzer target: every request handler of the partition service (volley/dist/server.h). Two
// servers in this process serve a 2-part partition of the bundled Cora (part 0 with part 1 as
// its peer, so SampleEpoch runs); each input is one call to one method:
//   byte 0, bits 0-2: the method (Info, Health, SampleHop, GetRows, SampleEpoch; 5-7 wrap);
//   byte 0, bit 3:    send the rest as raw bytes (the decoder's path), else decode them as the
//                     method's request and re-encode;
//   byte 0, bit 4:    set the request's protocol and fingerprint to the right ones, so that the
//                     handler's deeper checks and work are reached;
//   the rest:         the request's bytes.
// Findings: a crash or sanitizer report anywhere in the process, a server that stops answering
// Health after a call, or an error status that names nothing (an empty message).
// VOLLEY_FUZZ_WRITE_SEEDS=<dir> writes a seed input per method (valid requests) and exits.
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
#include "volley/partition/partition.h"

namespace {

namespace rpc = ::volley::rpc;
using volley::dist_test::raw_call;

const char* const kMethods[] = {"Info", "Health", "SampleHop", "GetRows", "SampleEpoch"};

struct Deployment {
  std::unique_ptr<volley::dist::Server> part1;
  std::unique_ptr<volley::dist::Server> part0;
  std::shared_ptr<grpc::Channel> channel;
  std::string fingerprint;
  int64_t begin = 0, end = 0;  // part 0's ids
};

Deployment& deployment() {
  static Deployment* const served = [] {
    auto* d = new Deployment;
    const std::string dir = volley::fuzz::scratch_dir() + "/cora-2";
    volley::partition_dataset(std::string(VOLLEY_SOURCE_DIR) + "/data/cora", dir,
                              {.method = volley::PartitionMethod::kRandom, .num_parts = 2});
    volley::dist::ServerOptions options;
    options.threads = 32;
    options.limits.max_reply_bytes = int64_t{4} << 20;  // small: the limits are reached
    options.limits.max_request_bytes = int64_t{4} << 20;
    options.default_concurrency = 2;
    options.peer_client.deadline_seconds = 5;
    d->part1 = std::make_unique<volley::dist::Server>(dir, 1, options);
    options.peers = {"", d->part1->address()};
    d->part0 = std::make_unique<volley::dist::Server>(dir, 0, options);
    d->channel = grpc::CreateChannel(d->part0->address(), grpc::InsecureChannelCredentials());
    d->fingerprint = d->part0->fingerprint();
    const auto& book = d->part0->partition()->book;
    d->begin = book.begin(0);
    d->end = book.end(0);
    return d;
  }();
  return *served;
}

template <typename Request>
std::string reencode(const std::string& bytes, bool fix, const Deployment& d) {
  Request request;
  if (!request.ParseFromString(bytes)) return bytes;  // undecodable: sent as it is
  if (fix) {
    if constexpr (requires { request.set_fingerprint(""); }) {
      request.set_fingerprint(d.fingerprint);
    }
    if constexpr (requires { request.set_protocol(0); }) {
      request.set_protocol(volley::dist::kProtocolVersion);
    }
  }
  return request.SerializeAsString();
}

// A server-streaming call of raw bytes: reads every message, returns the final status.
grpc::Status epoch_call(const Deployment& d, const std::string& bytes) {
  rpc::EpochRequest request;
  if (!request.ParseFromString(bytes)) {
    return raw_call(d.channel, "/volley.rpc.PartitionService/SampleEpoch", bytes);
  }
  auto stub = rpc::PartitionService::NewStub(d.channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(8));
  auto reader = stub->SampleEpoch(&context, request);
  rpc::BatchMessage message;
  while (reader->Read(&message)) {
  }
  return reader->Finish();
}

void check(const Deployment& d, const grpc::Status& status, const char* method) {
  if (!status.ok() && status.error_message().empty()) {
    std::fprintf(stderr, "finding: %s answered status %d with an empty message\n", method,
                 static_cast<int>(status.error_code()));
    std::abort();
  }
  const grpc::Status health =
      raw_call(d.channel, "/volley.rpc.PartitionService/Health", std::string(), 5.0);
  if (!health.ok()) {
    std::fprintf(stderr, "finding: the server stopped answering Health after a %s call: %s\n",
                 method, health.error_message().c_str());
    std::abort();
  }
}

std::string packed(std::initializer_list<int64_t> ids) {
  return std::string(reinterpret_cast<const char*>(std::data(ids)), ids.size() * sizeof(int64_t));
}

// Valid requests, one per method, prefixed with the "re-encode and fix" selector byte.
void write_seeds(const std::string& dir, const Deployment& d) {
  std::filesystem::create_directories(dir);
  const auto write = [&](int method, const std::string& body) {
    std::ofstream(dir + "/" + kMethods[method], std::ios::binary)
        << static_cast<char>(method | 0x10) << body;
  };
  write(0, rpc::InfoRequest().SerializeAsString());
  write(1, rpc::HealthRequest().SerializeAsString());
  rpc::HopRequest hop;
  hop.set_targets(packed({d.begin, d.begin + 1, d.end - 1}));
  hop.set_fanout(5);
  hop.set_seed(1);
  write(2, hop.SerializeAsString());
  rpc::RowsRequest rows;
  rows.set_ids(packed({d.begin, d.end - 1}));
  rows.set_out_dtype("float16");
  write(3, rows.SerializeAsString());
  rpc::EpochRequest epoch;
  epoch.set_input_nodes(packed({0, 5, 17, 400, 2000}));
  epoch.set_batch_size(2);
  epoch.add_fanouts(3);
  epoch.add_fanouts(2);
  epoch.set_features(true);
  epoch.set_feature_dtype("float32");
  epoch.set_labels(true);
  write(4, epoch.SerializeAsString());
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* seeds = std::getenv("VOLLEY_FUZZ_WRITE_SEEDS")) {
    write_seeds(seeds, deployment());
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Deployment& d = deployment();
  if (size == 0) return 0;
  const int method = data[0] % 8 % 5;
  const bool raw = (data[0] & 0x08) != 0;
  const bool fix = (data[0] & 0x10) != 0;
  std::string bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  const std::string name = std::string("/volley.rpc.PartitionService/") + kMethods[method];
  grpc::Status status;
  switch (method) {
    case 0:
      status = raw_call(d.channel, name, raw ? bytes : reencode<rpc::InfoRequest>(bytes, fix, d));
      break;
    case 1:
      status = raw_call(d.channel, name, raw ? bytes : reencode<rpc::HealthRequest>(bytes, fix, d));
      break;
    case 2:
      status = raw_call(d.channel, name, raw ? bytes : reencode<rpc::HopRequest>(bytes, fix, d));
      break;
    case 3:
      status = raw_call(d.channel, name, raw ? bytes : reencode<rpc::RowsRequest>(bytes, fix, d));
      break;
    default:
      status = epoch_call(d, raw ? bytes : reencode<rpc::EpochRequest>(bytes, fix, d));
      break;
  }
  check(d, status, kMethods[method]);
  return 0;
}
