// Link prediction over the distributed service: DistGraph::has_edges / degrees against the whole
// renumbered graph (all modes, small server limits), the HasEdges RPC's own checks, and
// LinkLoader over a DistGraph delivering exactly the batches of LinkLoader over the oracle.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <random>

#include "dist_fixture.h"
#include "volley/dist/volley.grpc.pb.h"
#include "volley/loader/link_loader.h"

namespace volley::dist_test {
namespace {

using ::testing::HasSubstr;
namespace rpc = ::volley::rpc;

class DistLinkTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir("volley-dist-link-test");
    source_ = new Dataset(load_dataset(kCoraDirectory));
    partition_dataset(kCoraDirectory, *dir_ / "stream-3",
                      {.method = PartitionMethod::kStream, .num_parts = 3, .seed = 1});
    served_ = new ServedDataset(*dir_ / "stream-3");
    // 100 ids a call: every has_edges / degrees call below is cut into many pieces.
    small_ = new ServedDataset(*dir_ / "stream-3",
                               {.limits = {.max_reply_bytes = 64 << 10, .max_ids_per_call = 100}});
  }
  static void TearDownTestSuite() {
    delete served_;
    delete small_;
    delete source_;
    delete dir_;
  }

  // Pairs half of which are edges of the oracle (both directions mixed in), half random.
  static std::pair<std::vector<int64_t>, std::vector<int64_t>> pairs(const Csr& whole,
                                                                     int64_t count) {
    std::mt19937_64 rng(7);
    std::vector<int64_t> src, dst;
    const int64_t n = whole.num_nodes();
    for (int64_t i = 0; i < count; ++i) {
      if (i % 2 == 0) {
        const int64_t k = static_cast<int64_t>(rng() % static_cast<uint64_t>(whole.num_edges()));
        const int64_t row = std::upper_bound(whole.indptr().data<int64_t>(),
                                             whole.indptr().data<int64_t>() + n + 1, k) -
                            whole.indptr().data<int64_t>() - 1;
        src.push_back(i % 4 == 0 ? whole.neighbor(k) : row);  // (src, dst) or its reverse
        dst.push_back(i % 4 == 0 ? row : whole.neighbor(k));
      } else {
        src.push_back(static_cast<int64_t>(rng() % static_cast<uint64_t>(n)));
        dst.push_back(static_cast<int64_t>(rng() % static_cast<uint64_t>(n)));
      }
    }
    return {src, dst};
  }

  static TempDir* dir_;
  static Dataset* source_;
  static ServedDataset* served_;
  static ServedDataset* small_;
};
TempDir* DistLinkTest::dir_ = nullptr;
Dataset* DistLinkTest::source_ = nullptr;
ServedDataset* DistLinkTest::served_ = nullptr;
ServedDataset* DistLinkTest::small_ = nullptr;

TEST_F(DistLinkTest, HasEdgesAndDegreesEqualTheWholeGraphInEveryModeAndUnderSmallLimits) {
  const auto oracle =
      std::make_shared<LocalBatchSource>(served_->whole, std::nullopt, std::nullopt);
  const auto [src, dst] = pairs(served_->whole, 2000);
  std::vector<uint8_t> want(src.size());
  oracle->has_edges(src, dst, want.data());
  int64_t edges = 0;
  for (uint8_t w : want) edges += w;
  EXPECT_GT(edges, 900);  // the test asks about edges and non-edges alike
  EXPECT_LT(edges, 1100);
  const std::vector<std::pair<std::string, std::shared_ptr<const dist::DistGraph>>> graphs = {
      {"all remote", served_->client()},
      {"worker holding part 1", served_->worker(1)},
      {"small limits, all remote", small_->client()},
      {"small limits, worker holding part 0", small_->worker(0)}};
  for (const auto& [mode, graph] : graphs) {
    std::vector<uint8_t> got(src.size(), 7);
    graph->has_edges(src, dst, got.data());
    EXPECT_EQ(got, want) << mode;
    EXPECT_EQ(graph->degrees(), oracle->degrees()) << mode;
    EXPECT_EQ(graph->degrees(), oracle->degrees()) << mode << " (cached)";
    graph->has_edges({}, {}, nullptr);  // no pairs: no call
  }
}

TEST_F(DistLinkTest, HasEdgesRejectsBadPairs) {
  const auto graph = served_->client();
  const int64_t n = graph->num_nodes();
  std::vector<int64_t> src = {0, n}, dst = {1, 2};
  std::vector<uint8_t> out(2);
  EXPECT_THAT(message_of<IndexError>([&] { graph->has_edges(src, dst, out.data()); }),
              HasSubstr(fmt::format("pair 1 ({}, 2) has a node out of range", n)));
  EXPECT_THAT(message_of<ValueError>([&] {
                graph->has_edges(src, std::span<const int64_t>(dst).first(1), out.data());
              }),
              HasSubstr("2 sources but 1 destinations"));
}

// The RPC checks what it is sent: rows must be owned, one `other` per row, at most
// max_ids_per_call rows; the server keeps serving after each refusal.
TEST_F(DistLinkTest, TheServerRefusesMalformedHasEdgesRequests) {
  const auto& server = *small_->servers[0];
  auto stub = rpc::PartitionService::NewStub(
      grpc::CreateChannel(server.address(), grpc::InsecureChannelCredentials()));
  const int64_t begin = small_->manifest.book.begin(0), end = small_->manifest.book.end(0);
  auto call = [&](std::vector<int64_t> rows, std::vector<int64_t> others) {
    rpc::EdgesRequest request;
    request.set_protocol(dist::kProtocolVersion);
    request.set_fingerprint(server.fingerprint());
    request.set_rows(std::string(reinterpret_cast<const char*>(rows.data()), rows.size() * 8));
    request.set_others(
        std::string(reinterpret_cast<const char*>(others.data()), others.size() * 8));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    rpc::EdgesReply reply;
    return stub->HasEdges(&context, request, &reply);
  };
  grpc::Status status = call({end}, {0});
  EXPECT_EQ(status.error_code(), grpc::StatusCode::OUT_OF_RANGE);
  EXPECT_THAT(status.error_message(), HasSubstr(fmt::format("rows[0] = {} is not owned", end)));
  status = call({begin, begin}, {0});
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("others has 8 bytes for 2 rows"));
  status = call(std::vector<int64_t>(101, begin), std::vector<int64_t>(101, 0));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("lists 101 ids, more than the 100"));
  EXPECT_TRUE(call({begin}, {0}).ok());
}

// LinkLoader over a DistGraph: the same batches, bit for bit, as over the whole renumbered
// graph (negatives drawn by the client from degrees fetched once, existing edges rejected by
// asking the owners, positives excluded from the message-passing edges).
TEST_F(DistLinkTest, LinkLoaderEqualsTheLinkLoaderOverTheWholeGraph) {
  const Array features = rows_in_new_order(*source_->features, served_->node_map);
  const Array labels = rows_in_new_order(*source_->labels, served_->node_map);
  // 300 supervision edges of the oracle (src, dst), every 17th edge.
  std::vector<int64_t> src, dst;
  const Csr& whole = served_->whole;
  for (int64_t row = 0; row < whole.num_nodes() && src.size() < 300; ++row) {
    for (int64_t k = whole.begin(row); k < whole.end(row); ++k) {
      if (k % 17 == 0 && src.size() < 300) src.push_back(whole.neighbor(k)), dst.push_back(row);
    }
  }
  const auto m = static_cast<int64_t>(src.size());
  Array edge_label_index = Array::empty(DType::kInt64, {2, m});
  std::copy(src.begin(), src.end(), edge_label_index.data<int64_t>());
  std::copy(dst.begin(), dst.end(), edge_label_index.data<int64_t>() + m);
  for (const NegativeMode mode : {NegativeMode::kBinary, NegativeMode::kTriplet}) {
    const LinkLoaderOptions options{.loader = {.batch_size = 64,
                                               .shuffle = true,
                                               .num_threads = 2,
                                               .seed = 5,
                                               .sampler = {.fanouts = {5, 3}}},
                                    .negatives = {.mode = mode,
                                                  .amount = 2,
                                                  .distribution = NegativeDistribution::kDegree,
                                                  .reject_existing = true},
                                    .exclude_edges = true};
    LinkLoader oracle(whole, FeatureStore(features), FeatureStore(labels), edge_label_index,
                      std::nullopt, options);
    for (const auto& graph : {served_->client(), served_->worker(2)}) {
      LinkLoader loader(graph, edge_label_index, std::nullopt, options);
      ASSERT_EQ(loader.num_batches(), oracle.num_batches());
      auto want = oracle.start_epoch(1);
      auto got = loader.start_epoch(1);
      int64_t count = 0;
      while (auto expected = want->next()) {
        auto batch = got->next();
        ASSERT_TRUE(batch.has_value());
        const std::string where = fmt::format("mode {}, batch {}", static_cast<int>(mode), count++);
        expect_same_batch(*batch, *expected, where);
        EXPECT_TRUE(same_array(batch->edge_label_index, expected->edge_label_index)) << where;
        EXPECT_TRUE(same_array(batch->edge_label, expected->edge_label)) << where;
        EXPECT_TRUE(same_array(batch->src_index, expected->src_index)) << where;
        EXPECT_TRUE(same_array(batch->dst_neg_index, expected->dst_neg_index)) << where;
      }
      EXPECT_FALSE(got->next().has_value());
      EXPECT_EQ(count, 5);  // 300 edges in batches of 64
    }
  }
}

}  // namespace
}  // namespace volley::dist_test
