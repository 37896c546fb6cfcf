// The server's limits (ServerLimits): a request that would make a reply over them is refused
// before anything is built (never an abort, never a bloated server), and DistGraph splits its
// gathers and hops into calls under them, so its answers stay exactly the oracle's.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "dist_fixture.h"
#include "volley/dist/internal/client_calls.h"
#include "volley/dist/volley.grpc.pb.h"

namespace volley::dist_test {
namespace {

using ::testing::HasSubstr;
namespace rpc = ::volley::rpc;

// Small limits: 64 KiB replies (max_fanout 4095), 100 ids a call.
constexpr dist::ServerLimits kSmall{.max_reply_bytes = 64 << 10, .max_ids_per_call = 100};

class DistLimitsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir("volley-dist-limits-test");
    partition_dataset(kCoraDirectory, *dir_ / "random-2",
                      {.method = PartitionMethod::kRandom, .num_parts = 2, .seed = 3});
    served_ = new ServedDataset(*dir_ / "random-2");  // default limits
    small_ = new ServedDataset(*dir_ / "random-2", {.limits = kSmall});
  }
  static void TearDownTestSuite() {
    delete served_;
    delete small_;
    delete dir_;
  }

  void SetUp() override {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(-1);
    stub_ = rpc::PartitionService::NewStub(grpc::CreateCustomChannel(
        served_->servers[0]->address(), grpc::InsecureChannelCredentials(), args));
    begin_ = served_->manifest.book.begin(0);
    end_ = served_->manifest.book.end(0);
  }

  static std::unique_ptr<grpc::ClientContext> context() {
    auto context = std::make_unique<grpc::ClientContext>();
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    return context;
  }
  static std::string packed(const std::vector<int64_t>& ids) {
    return std::string(reinterpret_cast<const char*>(ids.data()), ids.size() * sizeof(int64_t));
  }
  // `count` ids of part 0, cycling through its range.
  std::vector<int64_t> part0_ids(int64_t count) const {
    std::vector<int64_t> ids(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) ids[static_cast<size_t>(i)] = begin_ + i % (end_ - begin_);
    return ids;
  }
  rpc::HopRequest hop(std::vector<int64_t> targets, int64_t fanout, bool replace) const {
    rpc::HopRequest request;
    request.set_protocol(dist::kProtocolVersion);
    request.set_fingerprint(served_->servers[0]->fingerprint());
    request.set_targets(packed(targets));
    request.set_fanout(fanout);
    request.mutable_sampler()->set_replace(replace);
    return request;
  }
  rpc::RowsRequest rows(std::vector<int64_t> ids) const {
    rpc::RowsRequest request;
    request.set_protocol(dist::kProtocolVersion);
    request.set_fingerprint(served_->servers[0]->fingerprint());
    request.set_kind(rpc::RowsRequest::FEATURES);
    request.set_ids(packed(ids));
    request.set_out_dtype("float32");
    return request;
  }

  static TempDir* dir_;
  static ServedDataset* served_;
  static ServedDataset* small_;
  std::unique_ptr<rpc::PartitionService::Stub> stub_;
  int64_t begin_ = 0, end_ = 0;
};
TempDir* DistLimitsTest::dir_ = nullptr;
ServedDataset* DistLimitsTest::served_ = nullptr;
ServedDataset* DistLimitsTest::small_ = nullptr;

// The Info reply states the limits the client splits by.
TEST_F(DistLimitsTest, InfoAdvertisesTheLimits) {
  rpc::InfoRequest request;
  request.set_protocol(dist::kProtocolVersion);
  rpc::InfoReply info;
  ASSERT_TRUE(stub_->Info(context().get(), request, &info).ok());
  const dist::ServerLimits defaults;
  EXPECT_EQ(info.max_request_bytes(), defaults.max_request_bytes);
  EXPECT_EQ(info.max_reply_bytes(), defaults.max_reply_bytes);
  EXPECT_EQ(info.max_ids_per_call(), defaults.max_ids_per_call);
  const Csr& graph = served_->servers[0]->partition()->data.graph;
  int64_t max_degree = 0;
  for (int64_t r = 0; r < graph.num_nodes(); ++r)
    max_degree = std::max(max_degree, graph.degree(r));
  EXPECT_EQ(info.max_degree(), max_degree);
}

// 400,000 float32 Cora rows (2.3 GB, over protobuf's 2 GB) aborted the server.
// Now the call is refused before a byte of the reply exists, and the server keeps serving.
TEST_F(DistLimitsTest, ARowsReplyOverTheLimitIsRefusedNotAnAbort) {
  rpc::RowsReply reply;
  grpc::Status status = stub_->GetRows(context().get(), rows(part0_ids(400'000)), &reply);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("max_reply_bytes"));
  EXPECT_THAT(status.error_message(), HasSubstr("2292800000"));  // 400,000 × 1433 × 4
  status = stub_->GetRows(context().get(), rows(part0_ids(10)), &reply);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(reply.rows().size(), 10u * 1433 * 4);
}

// A 31-byte SampleHop with fanout 2^40 and replacement allocated until
// bad_alloc. Now it is refused by the fanout limit; so is a reply too large in total.
TEST_F(DistLimitsTest, AHopReplyOverTheLimitIsRefusedBeforeSampling) {
  rpc::HopReply reply;
  grpc::Status status =
      stub_->SampleHop(context().get(), hop({begin_}, int64_t{1} << 40, true), &reply);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("1099511627776"));
  EXPECT_THAT(status.error_message(), HasSubstr("max_fanout"));
  // Each target under max_fanout, the whole reply (10,000 × 10,000 picks) far over.
  status = stub_->SampleHop(context().get(), hop(part0_ids(10'000), 10'000, true), &reply);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("max_reply_bytes"));
  // INT64_MAX without replacement is every neighbor: fine.
  status = stub_->SampleHop(context().get(), hop({begin_, begin_ + 1}, INT64_MAX, false), &reply);
  EXPECT_TRUE(status.ok()) << status.error_message();
}

TEST_F(DistLimitsTest, TooManyIdsInOneCallAreRefused) {
  const auto stub = rpc::PartitionService::NewStub(
      grpc::CreateChannel(small_->servers[0]->address(), grpc::InsecureChannelCredentials()));
  rpc::HopReply reply;
  rpc::HopRequest request = hop(part0_ids(101), 1, false);
  request.set_fingerprint(small_->servers[0]->fingerprint());
  const grpc::Status status = stub->SampleHop(context().get(), request, &reply);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("101 ids"));
  EXPECT_THAT(status.error_message(), HasSubstr("max_ids_per_call"));
}

// A 1 MB fingerprint (or dtype name) was echoed into the error until gRPC
// refused the metadata; now the quote is cut and says how long the value was.
TEST_F(DistLimitsTest, HugeValuesAreNotEchoedIntoErrors) {
  rpc::RowsRequest request = rows({begin_});
  request.set_fingerprint(std::string(1 << 20, 'f'));
  rpc::RowsReply reply;
  grpc::Status status = stub_->GetRows(context().get(), request, &reply);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(status.error_message(), HasSubstr("(1048576 bytes)"));
  EXPECT_LT(status.error_message().size(), 1000u);
  request = rows({begin_});
  request.set_out_dtype(std::string(1 << 20, 'd'));
  status = stub_->GetRows(context().get(), request, &reply);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_LT(status.error_message().size(), 2200u);
  status = stub_->GetRows(context().get(), rows({begin_}), &reply);
  EXPECT_TRUE(status.ok()) << status.error_message();
}

// a server out of threads (RESOURCE_EXHAUSTED, still so after the channel's
// retries) was a RuntimeError; it is a ConnectionError that says the server is busy.
TEST(DistErrors, ABusyServerIsAConnectionError) {
  try {
    dist::internal::fail(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                                      "Server Threadpool "
                                      "Exhausted"),
                         "10.0.0.1:5000", 1, "SampleHop", 30);
  } catch (const ConnectionError& error) {
    EXPECT_THAT(error.what(), HasSubstr("busy"));
    EXPECT_THAT(error.what(), HasSubstr("part 1 at 10.0.0.1:5000"));
    return;
  }
  ADD_FAILURE() << "not a ConnectionError";
}

TEST_F(DistLimitsTest, LimitsOutOfRangeAreRefused) {
  const std::string dir = *dir_ / "random-2";
  EXPECT_THROW(dist::Server(dir, 0, {.limits = {.max_reply_bytes = 1000}}), ValueError);
  EXPECT_THROW(dist::Server(dir, 0, {.limits = {.max_reply_bytes = int64_t{3} << 30}}), ValueError);
  EXPECT_THROW(dist::Server(dir, 0, {.limits = {.max_request_bytes = 100}}), ValueError);
  EXPECT_THROW(dist::Server(dir, 0, {.limits = {.max_ids_per_call = 0}}), ValueError);
}

// Under tiny limits the client cuts every gather and hop into many calls; the answers are still
// exactly the oracle's, in every mode.
TEST_F(DistLimitsTest, TheClientSplitsGathersAndHopsUnderTheLimits) {
  const Dataset source = load_dataset(kCoraDirectory);
  const Array features = rows_in_new_order(*source.features, small_->node_map);
  const int64_t width = features.dim(1);
  const std::vector<std::shared_ptr<const dist::DistGraph>> graphs = {small_->client(),
                                                                      small_->worker(1)};
  std::vector<int64_t> ids = distinct_ids(2708, 2708, 5);
  ids.insert(ids.end(), ids.begin(), ids.begin() + 300);  // 3,008 rows: 17 MB as float32
  for (const auto& graph : graphs) {
    const Array x = graph->gather_features(ids, DType::kFloat32);
    for (size_t i = 0; i < ids.size(); ++i) {
      const uint8_t* want = features.data<uint8_t>() + ids[i] * width;
      for (int64_t c = 0; c < width; ++c) {
        ASSERT_EQ(x.data<float>()[i * width + c], static_cast<float>(want[c])) << "id " << ids[i];
      }
    }
    const std::vector<int64_t> seeds = distinct_ids(2708, 400, 9);
    for (const NeighborSamplerOptions& options :
         {NeighborSamplerOptions{.fanouts = {-1, 10}, .seed = 3},
          NeighborSamplerOptions{.fanouts = {4000, 30}, .replace = true, .seed = 4}}) {
      expect_same_subgraph(graph->sample(seeds, options, 7),
                           sample_neighbors(small_->whole, seeds, options, 7), "split hops");
    }
    // A fanout with replacement over one reply is a clear ValueError before any call.
    try {
      graph->sample(seeds, {.fanouts = {5000}, .replace = true}, 0);
      ADD_FAILURE() << "fanout 5000 with replacement was taken";
    } catch (const ValueError& error) {
      EXPECT_THAT(error.what(), HasSubstr("4095"));
    }
  }
}

}  // namespace
}  // namespace volley::dist_test
