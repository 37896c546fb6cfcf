// The server against hand-made requests (the generated stub, no DistGraph in between) and
// garbage on its port: every bad request is refused with a status naming the problem, and the
// server keeps serving.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "dist_fixture.h"
#include "raw_call.h"
#include "volley/core/version.h"
#include "volley/dist/volley.grpc.pb.h"

namespace volley::dist_test {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;
namespace rpc = ::volley::rpc;

class DistProtocolTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir("volley-dist-test");
    partition_dataset(kCoraDirectory, *dir_ / "random-2",
                      {.method = PartitionMethod::kRandom, .num_parts = 2, .seed = 3});
    served_ = new ServedDataset(*dir_ / "random-2");
  }
  static void TearDownTestSuite() {
    delete served_;
    delete dir_;
  }

  void SetUp() override {
    const dist::Server& server = *served_->servers[0];
    stub_ = rpc::PartitionService::NewStub(
        grpc::CreateChannel(server.address(), grpc::InsecureChannelCredentials()));
    begin_ = served_->manifest.book.begin(0);
    end_ = served_->manifest.book.end(0);
  }

  static std::unique_ptr<grpc::ClientContext> context() {
    auto context = std::make_unique<grpc::ClientContext>();
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    return context;
  }

  static std::string packed(const std::vector<int64_t>& ids) {
    return std::string(reinterpret_cast<const char*>(ids.data()), ids.size() * sizeof(int64_t));
  }

  rpc::HopRequest good_hop() const {
    rpc::HopRequest request;
    request.set_protocol(dist::kProtocolVersion);
    request.set_fingerprint(served_->servers[0]->fingerprint());
    request.set_targets(packed({begin_, begin_ + 1, end_ - 1}));
    request.set_hop(0);
    request.set_fanout(5);
    request.mutable_sampler()->set_seed(1);
    request.set_batch(2);
    return request;
  }

  rpc::RowsRequest good_rows() const {
    rpc::RowsRequest request;
    request.set_protocol(dist::kProtocolVersion);
    request.set_fingerprint(served_->servers[0]->fingerprint());
    request.set_kind(rpc::RowsRequest::FEATURES);
    request.set_ids(packed({begin_, end_ - 1}));
    request.set_out_dtype("float32");
    return request;
  }

  grpc::Status hop(const rpc::HopRequest& request, rpc::HopReply* reply = nullptr) {
    rpc::HopReply ignored;
    return stub_->SampleHop(context().get(), request, reply ? reply : &ignored);
  }
  grpc::Status rows(const rpc::RowsRequest& request, rpc::RowsReply* reply = nullptr) {
    rpc::RowsReply ignored;
    return stub_->GetRows(context().get(), request, reply ? reply : &ignored);
  }

  // The server still answers well-formed calls, and a DistGraph still samples correctly.
  void expect_still_serving() {
    rpc::HopReply reply;
    const grpc::Status status = hop(good_hop(), &reply);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(reply.counts().size(), 3 * sizeof(int32_t));
    rpc::HealthReply health;
    ASSERT_TRUE(stub_->Health(context().get(), rpc::HealthRequest(), &health).ok());
    EXPECT_EQ(health.status(), "serving");
    const auto graph = served_->client({.deadline_seconds = 5, .connect_seconds = 5});
    const std::vector<int64_t> seeds = {0, 1, 2, 1000, 2707};
    const NeighborSamplerOptions options{.fanouts = {5, 5}, .seed = 3};
    expect_same_subgraph(graph->sample(seeds, options, 4),
                         sample_neighbors(served_->whole, seeds, options, 4), "after bad calls");
  }

  static TempDir* dir_;
  static ServedDataset* served_;
  std::unique_ptr<rpc::PartitionService::Stub> stub_;
  int64_t begin_ = 0, end_ = 0;
};
TempDir* DistProtocolTest::dir_ = nullptr;
ServedDataset* DistProtocolTest::served_ = nullptr;

TEST_F(DistProtocolTest, WellFormedCallsWork) {
  rpc::InfoRequest info_request;
  info_request.set_protocol(dist::kProtocolVersion);
  rpc::InfoReply info;
  ASSERT_TRUE(stub_->Info(context().get(), info_request, &info).ok());
  EXPECT_EQ(info.part(), 0);
  EXPECT_EQ(info.num_parts(), 2);
  EXPECT_EQ(info.fingerprint(), served_->servers[0]->fingerprint());
  EXPECT_FALSE(info.authenticated());
  EXPECT_FALSE(info.can_sample_epochs());
  EXPECT_EQ(info.volley_version(), volley::kVersion);  // project(VERSION) of CMakeLists.txt
  rpc::RowsReply reply;
  const grpc::Status status = rows(good_rows(), &reply);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(reply.width(), 1433);
  EXPECT_EQ(reply.dtype(), "float32");
  EXPECT_EQ(reply.rows().size(), 2u * 1433 * sizeof(float));
}

TEST_F(DistProtocolTest, TemporalHopsAreCheckedPrecisely) {
  rpc::InfoRequest info_request;
  info_request.set_protocol(dist::kProtocolVersion);
  rpc::InfoReply info;
  ASSERT_TRUE(stub_->Info(context().get(), info_request, &info).ok());
  EXPECT_FALSE(info.has_edge_time());  // Cora has no times
  EXPECT_FALSE(info.has_node_time());
  rpc::HopRequest request = good_hop();  // three targets
  request.mutable_sampler()->set_time_source("edge");
  request.set_target_times(packed({1, 2, 3}));
  grpc::Status status = hop(request);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(status.error_message(),
            "part 0: sampling by edge time asked, but this partition has no edge times "
            "(partition a dataset with edge_time.npy)");
  request.set_target_times(packed({1, 2}));
  status = hop(request);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message(),
            "part 0: target_times holds 16 bytes, but there are 3 targets (8 bytes each)");
  request.mutable_sampler()->set_time_source("wall-clock");
  status = hop(request);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("time_source must be \"edge\" or \"node\""));
  EXPECT_THAT(status.error_message(), HasSubstr("wall-clock"));
  request.mutable_sampler()->set_time_source("node");
  request.set_target_times(packed({1, 2, 3}));
  request.mutable_sampler()->set_temporal_strategy("newest");
  status = hop(request);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("newest"));
  expect_still_serving();
}

TEST_F(DistProtocolTest, BadByteLengthsAreInvalidArguments) {
  rpc::HopRequest request = good_hop();
  request.set_targets(std::string(7, '\0'));
  grpc::Status status = hop(request);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("7 bytes"));
  rpc::RowsRequest rows_request = good_rows();
  rows_request.set_ids(std::string(13, 'x'));
  status = rows(rows_request);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("13 bytes"));
  expect_still_serving();
}

TEST_F(DistProtocolTest, IdsNotOwnedAreOutOfRange) {
  for (const int64_t id : {end_, int64_t{-1}, int64_t{2708}, int64_t{1} << 40, INT64_MIN}) {
    rpc::HopRequest request = good_hop();
    request.set_targets(packed({begin_, id}));
    grpc::Status status = hop(request);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::OUT_OF_RANGE) << id;
    EXPECT_THAT(status.error_message(), HasSubstr(std::to_string(id)));
    rpc::RowsRequest rows_request = good_rows();
    rows_request.set_ids(packed({id}));
    status = rows(rows_request);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::OUT_OF_RANGE) << id;
  }
  expect_still_serving();
}

TEST_F(DistProtocolTest, BadFanoutsAndHopsAreInvalidArguments) {
  rpc::HopRequest request = good_hop();
  request.set_fanout(-2);
  grpc::Status status = hop(request);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("-2"));
  request = good_hop();
  request.set_fanout(INT64_MIN);
  EXPECT_EQ(hop(request).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  request = good_hop();
  request.set_hop(300);
  status = hop(request);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("300"));
  request = good_hop();
  request.mutable_sampler()->set_weighted(true);  // Cora has no weights
  EXPECT_EQ(hop(request).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  // A huge fanout is legal: it takes every neighbor.
  request = good_hop();
  request.set_fanout(INT64_MAX);
  status = hop(request);
  EXPECT_TRUE(status.ok()) << status.error_message();
  expect_still_serving();
}

// Another protocol version or another dataset: the request cannot be served as asked
// (FAILED_PRECONDITION, which the client raises as ValueError).
TEST_F(DistProtocolTest, WrongProtocolOrFingerprintIsRefused) {
  rpc::HopRequest request = good_hop();
  request.set_protocol(dist::kProtocolVersion + 1);
  grpc::Status status = hop(request);
  EXPECT_THAT(status.error_code(),
              AnyOf(grpc::StatusCode::FAILED_PRECONDITION, grpc::StatusCode::INVALID_ARGUMENT));
  EXPECT_THAT(status.error_message(), HasSubstr("protocol"));
  request = good_hop();
  request.set_protocol(0);
  EXPECT_FALSE(hop(request).ok());
  request = good_hop();
  request.set_fingerprint("deadbeef");
  status = hop(request);
  EXPECT_THAT(status.error_code(),
              AnyOf(grpc::StatusCode::FAILED_PRECONDITION, grpc::StatusCode::INVALID_ARGUMENT));
  EXPECT_THAT(status.error_message(), HasSubstr("deadbeef"));
  rpc::RowsRequest rows_request = good_rows();
  rows_request.clear_fingerprint();
  EXPECT_FALSE(rows(rows_request).ok());
  expect_still_serving();
}

TEST_F(DistProtocolTest, UnknownDtypesAndKindsAreInvalidArguments) {
  rpc::RowsRequest request = good_rows();
  request.set_out_dtype("float128");
  grpc::Status status = rows(request);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("float128"));
  request = good_rows();
  request.set_kind(static_cast<rpc::RowsRequest::Kind>(7));
  EXPECT_EQ(rows(request).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  request = good_rows();
  request.set_kind(rpc::RowsRequest::LABELS);
  request.set_out_dtype("int64");
  rpc::RowsReply reply;
  status = rows(request, &reply);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(reply.rows().size(), 2 * sizeof(int64_t));
  expect_still_serving();
}

TEST_F(DistProtocolTest, EpochsWithoutPeersAreRefused) {
  rpc::EpochRequest request;
  request.set_protocol(dist::kProtocolVersion);
  request.set_fingerprint(served_->servers[0]->fingerprint());
  request.set_batch_size(16);
  request.mutable_sampler()->add_fanouts(5);
  auto call_context = context();
  auto reader = stub_->SampleEpoch(call_context.get(), request);
  rpc::BatchMessage message;
  EXPECT_FALSE(reader->Read(&message));
  const grpc::Status status = reader->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(status.error_message(), HasSubstr("peers"));
  expect_still_serving();
}

TEST_F(DistProtocolTest, AnEmptyRequestIsHarmless) {
  rpc::HopRequest request = good_hop();
  request.clear_targets();
  rpc::HopReply reply;
  const grpc::Status status = hop(request, &reply);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_TRUE(reply.counts().empty());
  expect_still_serving();
}

// Writes `bytes` to the server's port on a plain TCP connection and reads until the server
// closes it (or 3 s pass).
void send_garbage(int port, const std::string& bytes) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<uint16_t>(port));
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
  const auto start = std::chrono::steady_clock::now();
  char buffer[4096];
  while (seconds_since(start) < 3.0) {
    pollfd poll_fd{fd, POLLIN, 0};
    if (poll(&poll_fd, 1, 100) <= 0) continue;
    if (recv(fd, buffer, sizeof(buffer), 0) <= 0) break;  // closed by the server
  }
  close(fd);
}

TEST_F(DistProtocolTest, GarbageOnThePortClosesOnlyThatConnection) {
  const int port = served_->servers[0]->port();
  std::string noise(64 << 10, '\0');
  uint64_t state = 88172645463325252ull;
  for (char& c : noise) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    c = static_cast<char>(state);
  }
  send_garbage(port, noise);
  send_garbage(port, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n");
  // A valid HTTP/2 preface followed by a frame of absurd length.
  send_garbage(port, std::string("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") + "\xff\xff\xff\x00\x00" +
                         std::string(64, '\x7f'));
  expect_still_serving();
}

// Bytes that are not a protobuf of the method's message (a field tag with wire type 7, which
// does not exist) are refused as INVALID_ARGUMENT naming the method, not INTERNAL with an empty
// message, and the server keeps serving.
TEST_F(DistProtocolTest, AnUndecodableRequestIsInvalidArgumentNamingTheMethod) {
  const auto channel =
      grpc::CreateChannel(served_->servers[0]->address(), grpc::InsecureChannelCredentials());
  for (const char* method : {"Info", "Health", "SampleHop", "GetRows", "SampleEpoch"}) {
    const std::string name = std::string("/volley.rpc.PartitionService/") + method;
    const grpc::Status status = raw_call(channel, name, std::string("\x0f\xff\xff\xff", 4));
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << method;
    EXPECT_THAT(status.error_message(), HasSubstr("could not be decoded")) << method;
    EXPECT_THAT(status.error_message(), HasSubstr(method));
  }
  // A typed epoch (an input type) asked of a homogeneous partition is refused by name.
  rpc::EpochRequest typed_epoch;
  typed_epoch.set_input_type("paper");
  const grpc::Status typed = raw_call(channel, "/volley.rpc.PartitionService/SampleEpoch",
                                      typed_epoch.SerializeAsString());
  EXPECT_EQ(typed.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(typed.error_message(),
              HasSubstr("SampleEpoch: this server serves part 0 of a homogeneous"));
  // A valid encoding still works through the same path.
  std::string reply;
  const grpc::Status ok = raw_call(channel, "/volley.rpc.PartitionService/Health",
                                   rpc::HealthRequest().SerializeAsString(), 5.0, "", &reply);
  ASSERT_TRUE(ok.ok()) << ok.error_message();
  rpc::HealthReply health;
  ASSERT_TRUE(health.ParseFromString(reply));
  EXPECT_EQ(health.status(), "serving");
  expect_still_serving();
}

}  // namespace
}  // namespace volley::dist_test
