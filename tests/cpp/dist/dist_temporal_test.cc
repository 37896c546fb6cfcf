// Temporal (and disjoint) sampling across partitions: a generated temporal graph partitioned
// into 2 parts carries its times (edge_time per part, node_time at the root, rows still sorted
// by edge time), and DistGraph / NeighborLoader over it give exactly the local temporal
// sampler's batches over the whole renumbered graph with its times, worker mode and all remote.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "dist/dist_fixture.h"
#include "volley/dist/volley.grpc.pb.h"
#include "volley/graph/generate.h"

namespace volley::dist_test {
namespace {

namespace rpc = ::volley::rpc;
using ::testing::HasSubstr;

class DistTemporalTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir("volley-dist-temporal-test");
    const GeneratorOptions generator{.model = GraphModel::kTemporal,
                                     .num_nodes = 400,
                                     .num_edges = 3000,
                                     .num_classes = 4,
                                     .seed = 7};
    generate_dataset(generator, *dir_ / "temporal");
    partition_dataset(*dir_ / "temporal", *dir_ / "temporal-2",
                      {.method = PartitionMethod::kRandom, .num_parts = 2, .seed = 3});
    served_ = new ServedDataset(*dir_ / "temporal-2");
    whole_ = new Csr(whole_with_times(*served_));
  }
  static void TearDownTestSuite() {
    delete whole_;
    delete served_;
    delete dir_;
  }

  // The oracle graph with the parts' edge times (concatenated in part order) and the root's
  // node times (new ids) attached.
  static Csr whole_with_times(const ServedDataset& data) {
    std::vector<int64_t> edge_time;
    std::optional<Array> node_time;
    for (int64_t p = 0; p < data.num_parts(); ++p) {
      const Partition part = load_partition(data.directory, p);
      EXPECT_TRUE(part.data.graph.has_edge_time()) << "part " << p;
      EXPECT_EQ(part.data.graph.first_row_unsorted_by_edge_time(), -1) << "part " << p;
      for (int64_t t : part.data.graph.edge_time()->span<int64_t>()) edge_time.push_back(t);
      node_time = part.node_time;
    }
    EXPECT_TRUE(node_time.has_value());
    return data.whole.with_times(node_time, Array::from_vector(edge_time));
  }

  static std::vector<std::pair<std::string, std::shared_ptr<const dist::DistGraph>>> modes() {
    return {{"all remote", served_->client()},
            {"worker holding part 0", served_->worker(0)},
            {"worker holding part 1", served_->worker(1)}};
  }

  static TempDir* dir_;
  static ServedDataset* served_;
  static Csr* whole_;
};

TempDir* DistTemporalTest::dir_ = nullptr;
ServedDataset* DistTemporalTest::served_ = nullptr;
Csr* DistTemporalTest::whole_ = nullptr;

// The subgraphs are equal, trees (`batch`) included.
void expect_same_trees(const SampledSubgraph& got, const SampledSubgraph& want,
                       const std::string& where) {
  expect_same_subgraph(got, want, where);
  EXPECT_TRUE(want.batch.defined()) << where;
  EXPECT_TRUE(same_array(got.batch, want.batch)) << where << ": batch";
}

TEST_F(DistTemporalTest, PartitionsCarryTimesInTheirEdgesOrder) {
  // Every part's edge times follow their edges: the time of an edge is its event (edge id).
  for (int64_t p = 0; p < served_->num_parts(); ++p) {
    const Partition part = load_partition(served_->directory, p);
    const Csr& graph = part.data.graph;
    for (int64_t k = 0; k < graph.num_edges(); ++k) {
      ASSERT_EQ(graph.edge_time()->data<int64_t>()[k], graph.edge_id(k)) << "part " << p;
    }
  }
  // node_time.npy is the source's node time in new-id order.
  const Dataset source = load_dataset(*dir_ / "temporal");
  const Array expected = rows_in_new_order(*source.graph.node_time(), served_->node_map);
  EXPECT_TRUE(same_array(*whole_->node_time(), expected));
}

TEST_F(DistTemporalTest, SamplesEqualTheLocalTemporalSampler) {
  const std::vector<int64_t> seeds = {5, 5, 17, 390, 250, 99, 3, 321};
  const std::vector<int64_t> times = {2000, 400, 2999, 1500, 100, 2500, 0, 1200};
  for (const TimeSource source : {TimeSource::kEdge, TimeSource::kNode}) {
    for (const TemporalStrategy strategy : {TemporalStrategy::kUniform, TemporalStrategy::kLast}) {
      if (source == TimeSource::kNode && strategy == TemporalStrategy::kLast) continue;
      for (const bool replace : {false, true}) {
        const NeighborSamplerOptions options{.fanouts = {4, 3, -1},
                                             .replace = replace,
                                             .seed = 12,
                                             .time_source = source,
                                             .temporal_strategy = strategy};
        const SampledSubgraph want = sample_neighbors(*whole_, seeds, times, options, 9);
        EXPECT_GT(want.num_edges(), 20);
        for (const auto& [mode, graph] : modes()) {
          SampledSubgraph got;
          graph->sample_temporal(seeds, times, options, 9, got);
          expect_same_trees(got, want,
                            fmt::format("{}, {} time, {}, replace {}", mode,
                                        source == TimeSource::kEdge ? "edge" : "node",
                                        temporal_strategy_name(strategy), replace));
        }
      }
    }
  }
}

TEST_F(DistTemporalTest, DisjointSamplesEqualTheLocalSampler) {
  const std::vector<int64_t> seeds = {5, 5, 17, 390, 250};
  const NeighborSamplerOptions options{.fanouts = {3, 2}, .seed = 4, .disjoint = true};
  const SampledSubgraph want = sample_neighbors(*whole_, seeds, options, 2);
  for (const auto& [mode, graph] : modes()) {
    expect_same_trees(graph->sample(seeds, options, 2), want, mode);
  }
}

TEST_F(DistTemporalTest, LoaderEqualsTheLocalTemporalLoader) {
  std::vector<int64_t> inputs, input_time;
  for (int64_t i = 0; i < 70; ++i) {
    inputs.push_back((i * 37) % whole_->num_nodes());
    input_time.push_back((i * 101) % 3000);
  }
  for (const TemporalStrategy strategy : {TemporalStrategy::kUniform, TemporalStrategy::kLast}) {
    LoaderOptions options{
        .batch_size = 16,
        .shuffle = true,
        .num_threads = 3,
        .seed = 21,
        .sampler = {
            .fanouts = {5, 3}, .time_source = TimeSource::kEdge, .temporal_strategy = strategy}};
    options.input_time = Array::from_vector(input_time);
    NeighborLoader oracle(*whole_, std::nullopt, std::nullopt, Array::from_vector(inputs), options);
    for (const auto& [mode, graph] : modes()) {
      NeighborLoader loader(graph, Array::from_vector(inputs), options);
      auto want = oracle.start_epoch(1);
      auto got = loader.start_epoch(1);
      int64_t count = 0;
      while (auto expected = want->next()) {
        auto batch = got->next();
        ASSERT_TRUE(batch.has_value()) << mode;
        const std::string where =
            fmt::format("{}, {}, batch {}", mode, temporal_strategy_name(strategy), count++);
        EXPECT_TRUE(same_array(batch->nodes, expected->nodes)) << where;
        EXPECT_TRUE(same_array(batch->input_ids, expected->input_ids)) << where;
        EXPECT_TRUE(same_array(batch->edge_index, expected->edge_index)) << where;
        EXPECT_TRUE(same_array(batch->edge_ids, expected->edge_ids)) << where;
        EXPECT_TRUE(same_array(batch->batch_ids, expected->batch_ids)) << where;
        EXPECT_TRUE(batch->batch_ids.defined()) << where;
      }
      EXPECT_FALSE(got->next().has_value());
      EXPECT_EQ(count, 5);
    }
  }
}

TEST_F(DistTemporalTest, BadTemporalRequestsNameTheProblem) {
  const std::vector<int64_t> seeds = {1, 2}, one_time = {5}, two = {5, 6};
  NeighborSamplerOptions options{.fanouts = {2}, .time_source = TimeSource::kEdge};
  const auto graph = served_->client();
  SampledSubgraph out;
  EXPECT_EQ(
      message_of<ValueError>([&] { graph->sample_temporal(seeds, one_time, options, 0, out); }),
      "seed_times has 1 entries, but there are 2 seeds (one time each)");
  EXPECT_EQ(message_of<ValueError>([&] { graph->sample(seeds, options, 0, out); }),
            "temporal sampling needs seed times (sample_temporal)");
  // "last" by node time: the parts' rows are sorted by edge time, not by node time.
  options.time_source = TimeSource::kNode;
  options.temporal_strategy = TemporalStrategy::kLast;
  const std::string message =
      message_of<ValueError>([&] { graph->sample_temporal(seeds, two, options, 0, out); });
  EXPECT_NE(message.find("temporal_strategy 'last' needs rows sorted by"), std::string::npos)
      << message;
}

TEST(DistTemporal, UntimedDatasetsRefuseTemporalSampling) {
  TempDir dir("volley-dist-untimed-test");
  partition_dataset(kCoraDirectory, dir / "cora-2",
                    {.method = PartitionMethod::kRandom, .num_parts = 2, .seed = 3});
  const ServedDataset cora(dir / "cora-2");
  const std::vector<int64_t> seeds = {1}, times = {0};
  for (const auto& graph : {cora.client(), cora.worker(0)}) {
    SampledSubgraph out;
    EXPECT_EQ(message_of<ValueError>([&] {
                graph->sample_temporal(seeds, times,
                                       {.fanouts = {2}, .time_source = TimeSource::kEdge}, 0, out);
              }),
              "temporal sampling by edge time, but the partitioned dataset 'cora' has no edge "
              "times (partition a dataset with edge_time.npy)");
  }
}

// A homogeneous partition is served as the one-type case of a typed one: GetRows(NODE_TIME)
// answers its node times, and a call naming a node type is refused by name.
TEST_F(DistTemporalTest, AHomogeneousPartitionServesItsNodeTimes) {
  const dist::Server& server = *served_->servers[1];
  const Partition& part = *server.partition();
  ASSERT_FALSE(server.heterogeneous());
  ASSERT_EQ(server.hetero_partition(), nullptr);
  const std::vector<int64_t> ids = {part.first_node(), part.first_node() + 3};
  auto stub = rpc::PartitionService::NewStub(
      grpc::CreateChannel(server.address(), grpc::InsecureChannelCredentials()));
  rpc::RowsRequest request;
  request.set_protocol(dist::kProtocolVersion);
  request.set_fingerprint(server.fingerprint());
  request.set_kind(rpc::RowsRequest::NODE_TIME);
  request.set_ids(std::string(reinterpret_cast<const char*>(ids.data()), ids.size() * 8));
  rpc::RowsReply reply;
  {
    grpc::ClientContext context;
    const grpc::Status status = stub->GetRows(&context, request, &reply);
    ASSERT_TRUE(status.ok()) << status.error_message();
  }
  ASSERT_EQ(reply.rows().size(), ids.size() * 8);
  std::vector<int64_t> times(ids.size());
  std::memcpy(times.data(), reply.rows().data(), reply.rows().size());
  for (size_t i = 0; i < ids.size(); ++i) {
    EXPECT_EQ(times[i], whole_->node_time()->data<int64_t>()[ids[i]]) << "id " << ids[i];
  }
  request.set_node_type("paper");
  grpc::ClientContext context;
  const grpc::Status status = stub->GetRows(&context, request, &reply);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("this partition is homogeneous"));
}

}  // namespace
}  // namespace volley::dist_test
