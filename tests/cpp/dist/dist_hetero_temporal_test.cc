// Temporal and disjoint heterogeneous sampling across servers: a generated ogbn-mag-shaped
// dataset partitioned in 2, node times (paper, author) and edge times (writes, cites) written at
// the partitioned directory's root; DistHeteroGraph (all parts remote, or the local part
// in-process) and the server-client stream must return exactly what HeteroNeighborSampler
// returns over the whole renumbered graph with the same times, bit for bit (trees included).
// Failure paths: a time file of the wrong length (naming the type), seed times missing or of the
// wrong length, a malformed temporal SampleHop.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "dist/dist_fixture.h"
#include "dist/hetero_fixture.h"
#include "volley/dist/hetero_client.h"
#include "volley/dist/server.h"
#include "volley/dist/volley.grpc.pb.h"
#include "volley/graph/generate_hetero.h"
#include "volley/graph/io/npy.h"
#include "volley/loader/neighbor_loader.h"

namespace volley::dist_test {
namespace {

using ::testing::HasSubstr;

const EdgeType kWrites{"author", "writes", "paper"};
const EdgeType kCites{"paper", "cites", "paper"};

// `count` times in [0, 100), seeded.
Array random_times(int64_t count, uint64_t seed) {
  std::mt19937_64 generator(seed);
  std::vector<int64_t> times(static_cast<size_t>(count));
  for (int64_t& time : times) time = static_cast<int64_t>(generator() % 100);
  return Array::from_vector(times);
}

class DistHeteroTemporalTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir("volley-dist-hetero-temporal-test");
    GeneratorOptions generator = mag_generator_options();
    generator.num_nodes = 500, generator.feature_dim = 4, generator.num_classes = 3;
    generator.seed = 5, generator.reverse = true;
    generate_hetero_dataset(generator, *dir_ / "mag");
    const std::string parts = *dir_ / "mag-2";
    partition_hetero_dataset(*dir_ / "mag", parts,
                             {.method = PartitionMethod::kRandom, .num_parts = 2, .seed = 3});
    const HeteroPartitionManifest manifest = read_hetero_partition_manifest(parts);
    times_ = new HeteroTimes;
    for (const std::string type : {"paper", "author"}) {
      Array time = random_times(manifest.book(type).num_nodes(), type.size());
      write_npy(parts + "/" + type + ".node_time.npy", time);
      times_->node_time.emplace_back(type, time);
    }
    for (const EdgeType& type : {kWrites, kCites}) {
      const auto e = static_cast<size_t>(
          std::find(manifest.edge_types.begin(), manifest.edge_types.end(), type) -
          manifest.edge_types.begin());
      Array time = random_times(manifest.num_edges[e], 7 + e);
      write_npy(parts + "/" + type.name() + ".edge_time.npy", time);
      times_->edge_time.emplace_back(type, time);
    }
    served_ = new ServedHetero(parts, 2);
  }
  static void TearDownTestSuite() {
    delete served_;
    delete times_;
    delete dir_;
  }

  // The local sampler over the oracle with the times of `options.time_source`.
  static HeteroNeighborSampler local_sampler(const HeteroSamplerOptions& options) {
    HeteroTimes times;
    if (options.time_source == TimeSource::kNode) times.node_time = times_->node_time;
    if (options.time_source == TimeSource::kEdge) times.edge_time = times_->edge_time;
    return HeteroNeighborSampler(served_->oracle.graph, options, times);
  }

  // Four batches of `options` (paper seeds with `with_times` given times, else their own; every
  // other batch author seeds too, timed), distributed and local, compared.
  static void expect_equal_batches(const dist::DistHeteroGraph& client,
                                   const HeteroSamplerOptions& options, bool with_times,
                                   const std::string& where) {
    HeteroNeighborSampler local = local_sampler(options);
    const bool temporal = options.time_source != TimeSource::kNone;
    int64_t edges = 0;
    for (uint64_t batch = 0; batch < 4; ++batch) {
      const std::vector<int64_t> papers =
          distinct_ids(served_->oracle.graph.num_nodes("paper"), 20, 100 + batch);
      const std::vector<int64_t> authors =
          distinct_ids(served_->oracle.graph.num_nodes("author"), 4, 200 + batch);
      const std::vector<int64_t> paper_times = distinct_ids(100, 20, 300 + batch);
      const std::vector<int64_t> author_times = distinct_ids(100, 4, 400 + batch);
      std::vector<HeteroSeeds> seeds{{"paper", papers}};
      if (temporal && with_times) seeds[0].times = paper_times;
      if (batch % 2 == 1) {
        seeds.push_back({"author", authors});
        if (options.time_source == TimeSource::kEdge || with_times) seeds[1].times = author_times;
      }
      const HeteroSampledSubgraph want = local.sample(seeds, batch);
      const HeteroSampledSubgraph got = client.sample(seeds, options, batch);
      edges += want.total_edges();
      EXPECT_FALSE(want.batch.empty()) << where;
      expect_same_hetero(got, want, where + " batch " + std::to_string(batch));
    }
    EXPECT_GT(edges, 0) << where;
  }

  static TempDir* dir_;
  static HeteroTimes* times_;
  static ServedHetero* served_;
};
TempDir* DistHeteroTemporalTest::dir_ = nullptr;
HeteroTimes* DistHeteroTemporalTest::times_ = nullptr;
ServedHetero* DistHeteroTemporalTest::served_ = nullptr;

TEST_F(DistHeteroTemporalTest, InfoSaysWhichTypesAreTimed) {
  const auto client = dist::DistHeteroGraph::connect(served_->addresses());
  const dist::HeteroServiceInfo& info = client->info();
  for (const auto& type : info.node_types) {
    EXPECT_EQ(type.has_node_time, type.name == "paper" || type.name == "author") << type.name;
  }
  for (size_t e = 0; e < info.edge_types.size(); ++e) {
    const EdgeType& type = info.edge_types[e];
    EXPECT_EQ(info.has_edge_time[e], type == kWrites || type == kCites) << type.name();
  }
}

TEST_F(DistHeteroTemporalTest, TemporalBatchesEqualTheLocalSampler) {
  const auto remote = dist::DistHeteroGraph::connect(served_->addresses());
  std::vector<std::string> addresses = served_->addresses();
  addresses[1] = "";
  const auto worker = dist::DistHeteroGraph::connect(addresses, {}, served_->directory, 1);
  for (const auto* client : {remote.get(), worker.get()}) {
    const std::string who = client == remote.get() ? "remote" : "local part 1";
    for (const TemporalStrategy strategy : {TemporalStrategy::kUniform, TemporalStrategy::kLast}) {
      const std::string how = who + (strategy == TemporalStrategy::kLast ? ", last" : ", uniform");
      HeteroSamplerOptions by_node{.fanouts = {3, 2}, .seed = 4};
      by_node.time_source = TimeSource::kNode;
      by_node.temporal_strategy = strategy;
      expect_equal_batches(*client, by_node, false, how + ", node time, own");
      expect_equal_batches(*client, by_node, true, how + ", node time, given");
      HeteroSamplerOptions by_edge = by_node;
      by_edge.time_source = TimeSource::kEdge;
      by_edge.fanouts = {-1, 2};
      expect_equal_batches(*client, by_edge, true, how + ", edge time");
    }
  }
}

TEST_F(DistHeteroTemporalTest, DisjointBatchesEqualTheLocalSampler) {
  const auto client = dist::DistHeteroGraph::connect(served_->addresses());
  expect_equal_batches(*client, {.fanouts = {3, 2}, .seed = 8, .disjoint = true}, false,
                       "disjoint");
  expect_equal_batches(*client, {.fanouts = {2, 2}, .replace = true, .seed = 2, .disjoint = true},
                       false, "disjoint, replace");
}

TEST_F(DistHeteroTemporalTest, ServerClientBatchesCarryTheTrees) {
  std::vector<std::string> peers = served_->addresses();
  peers[0] = "";
  dist::Server streaming(served_->directory, 0, {.peers = peers});
  LoaderOptions options{.batch_size = 8, .shuffle = true, .seed = 6};
  options.sampler = {.fanouts = {2, 2}};
  options.sampler.time_source = TimeSource::kNode;
  const Array inputs =
      Array::from_vector(distinct_ids(served_->oracle.graph.num_nodes("paper"), 30, 9));
  auto local_source = std::make_shared<HeteroNeighborSampler>(local_sampler(options.sampler));
  for (const bool given_times : {true, false}) {  // input_time, or the seeds' own node times
    if (given_times) options.input_time = Array::from_vector(distinct_ids(100, 30, 10));
    dist::ServerClientLoader loader(streaming.address(), {}, inputs, options,
                                    {.input_type = "paper"});
    NeighborLoader local(local_source, "paper", inputs, options);
    auto got = loader.start_epoch(1);
    auto want = local.start_epoch(1);
    int64_t count = 0;
    while (auto expected = want->next()) {
      auto batch = got->next();
      ASSERT_TRUE(batch.has_value());
      ASSERT_TRUE(batch->node_types[0].batch_ids.defined());
      expect_same_typed_batch(*batch, *expected,
                              fmt::format("times given {}, batch {}", given_times, count++));
    }
    EXPECT_FALSE(got->next().has_value());
    EXPECT_EQ(count, 4);
    options.input_time.reset();
  }
}

TEST_F(DistHeteroTemporalTest, BadTimesAreNamed) {
  const auto client = dist::DistHeteroGraph::connect(served_->addresses());
  const std::vector<int64_t> ids{0, 1, 2};
  const std::vector<int64_t> two_times{5, 6};
  HeteroSamplerOptions by_edge{.fanouts = {2}};
  by_edge.time_source = TimeSource::kEdge;
  EXPECT_THAT(
      [&] {
        client->sample({{"paper", ids}}, by_edge, 0);
      },
      ::testing::ThrowsMessage<ValueError>(HasSubstr("node type 'paper'")));
  EXPECT_THAT(
      [&] {
        client->sample({{"paper", ids, two_times}}, by_edge, 0);
      },
      ::testing::ThrowsMessage<ValueError>(HasSubstr("2 times for 3 seeds")));
  HeteroSamplerOptions by_node{.fanouts = {2}};
  by_node.time_source = TimeSource::kNode;
  EXPECT_THAT(
      [&] {
        client->sample({{"institution", ids}}, by_node, 0);
      },
      ::testing::ThrowsMessage<ValueError>(HasSubstr("'institution'")));

  // A temporal SampleHop whose target_times do not match its targets.
  auto stub = rpc::PartitionService::NewStub(
      grpc::CreateChannel(served_->servers[0]->address(), grpc::InsecureChannelCredentials()));
  rpc::HopRequest request;
  request.set_protocol(dist::kProtocolVersion);
  request.set_fingerprint(served_->servers[0]->fingerprint());
  request.set_fanout(2);
  request.set_edge_type(kCites.name());
  const std::vector<int64_t> target{
      served_->servers[0]->hetero_partition()->book("paper").begin(0)};
  request.set_targets(std::string(reinterpret_cast<const char*>(target.data()), 8));
  request.mutable_sampler()->set_time_source("node");
  request.set_target_times(std::string(12, '\0'));
  rpc::HopReply reply;
  grpc::ClientContext context;
  const grpc::Status status = stub->SampleHop(&context, request, &reply);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("target_times"));

  // A time file of the wrong length: the server refuses to start, naming the type.
  const std::string copy = *dir_ / "mag-2-bad";
  partition_hetero_dataset(*dir_ / "mag", copy,
                           {.method = PartitionMethod::kRandom, .num_parts = 2, .seed = 3});
  write_npy(copy + "/author.node_time.npy", random_times(3, 1));
  EXPECT_THAT([&] { dist::Server server(copy, 0); },
              ::testing::ThrowsMessage<ValueError>(HasSubstr("node type 'author'")));
}

}  // namespace
}  // namespace volley::dist_test
