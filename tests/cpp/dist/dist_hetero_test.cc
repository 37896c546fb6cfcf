// Heterogeneous partitions served and sampled across servers: a generated ogbn-mag-shaped
// dataset (with reverse edge types) partitioned in 2 and 3 parts, one Server per part
// in-process; DistHeteroGraph must return exactly what HeteroNeighborSampler returns over the
// whole renumbered graph (the parts' rows concatenated in part order), bit for bit, for uniform,
// per-type and replacement fanouts and several batches; gathers return the renumbered rows;
// typed requests with a bad edge type, node type or id are refused naming it.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "dist/dist_fixture.h"
#include "dist/hetero_fixture.h"
#include "dist/raw_call.h"
#include "volley/dist/hetero_client.h"
#include "volley/dist/server.h"
#include "volley/dist/volley.grpc.pb.h"
#include "volley/graph/generate_hetero.h"
#include "volley/loader/neighbor_loader.h"
#include "volley/partition/hetero_partition.h"
#include "volley/sampling/hetero_sampler.h"

namespace volley::dist_test {
namespace {

using ::testing::HasSubstr;

class DistHeteroTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir("volley-dist-hetero-test");
    GeneratorOptions generator = mag_generator_options();
    generator.num_nodes = 600, generator.feature_dim = 6, generator.num_classes = 5;
    generator.seed = 11, generator.reverse = true;
    generate_hetero_dataset(generator, *dir_ / "mag");
    partition_hetero_dataset(*dir_ / "mag", *dir_ / "mag-2",
                             {.method = PartitionMethod::kRandom, .num_parts = 2, .seed = 3});
    partition_hetero_dataset(*dir_ / "mag", *dir_ / "mag-3",
                             {.method = PartitionMethod::kMetis, .num_parts = 3, .seed = 5});
    two_ = new ServedHetero(*dir_ / "mag-2", 2);
    three_ = new ServedHetero(*dir_ / "mag-3", 3);
  }
  static void TearDownTestSuite() {
    delete two_;
    delete three_;
    delete dir_;
  }

  // Batches of `options` over `served`, distributed and local, compared.
  static void expect_equal_batches(const ServedHetero& served, const HeteroSamplerOptions& options,
                                   const std::string& where) {
    expect_equal_batches(*dist::DistHeteroGraph::connect(served.addresses()), served, options,
                         where);
  }
  static void expect_equal_batches(const dist::DistHeteroGraph& client, const ServedHetero& served,
                                   const HeteroSamplerOptions& options, const std::string& where) {
    HeteroNeighborSampler local(served.oracle.graph, options);
    const int64_t papers = served.oracle.graph.num_nodes("paper");
    const int64_t authors = served.oracle.graph.num_nodes("author");
    for (uint64_t batch = 0; batch < 4; ++batch) {
      const std::vector<int64_t> paper_seeds = distinct_ids(papers, 24, 100 + batch);
      const std::vector<int64_t> author_seeds = distinct_ids(authors, 5, 200 + batch);
      std::vector<HeteroSeeds> seeds{{"paper", paper_seeds}};
      if (batch % 2 == 1) seeds.push_back({"author", author_seeds});
      const HeteroSampledSubgraph want = local.sample(seeds, batch);
      const HeteroSampledSubgraph got = client.sample(seeds, options, batch);
      EXPECT_GT(want.total_edges(), 0) << where;
      expect_same_hetero(got, want, where + " batch " + std::to_string(batch));
    }
  }

  static TempDir* dir_;
  static ServedHetero* two_;
  static ServedHetero* three_;
};
TempDir* DistHeteroTest::dir_ = nullptr;
ServedHetero* DistHeteroTest::two_ = nullptr;
ServedHetero* DistHeteroTest::three_ = nullptr;

TEST_F(DistHeteroTest, InfoListsTheTypesAndTheirBooks) {
  const auto client = dist::DistHeteroGraph::connect(three_->addresses());
  const dist::HeteroServiceInfo& info = client->info();
  const HeteroGraph& graph = three_->oracle.graph;
  ASSERT_EQ(info.node_types.size(), static_cast<size_t>(graph.num_node_types()));
  for (int t = 0; t < graph.num_node_types(); ++t) {
    const auto& type = info.node_types[static_cast<size_t>(t)];
    EXPECT_EQ(type.name, graph.node_types()[static_cast<size_t>(t)].name);
    EXPECT_EQ(type.book.num_parts(), 3);
    EXPECT_EQ(type.book.num_nodes(), graph.num_nodes(t));
  }
  EXPECT_EQ(info.edge_types, graph.edge_types());
  EXPECT_EQ(info.node_types[static_cast<size_t>(info.node_type_index("paper"))].feature_dim, 6);
}

TEST_F(DistHeteroTest, SamplesEqualTheLocalSamplerInTwoParts) {
  expect_equal_batches(*two_, {.fanouts = {4, 3}, .seed = 42}, "2 parts, uniform");
  expect_equal_batches(*two_, {.fanouts = {3, 2, 2}, .replace = true, .seed = 7},
                       "2 parts, replace");
}

TEST_F(DistHeteroTest, SamplesEqualTheLocalSamplerInThreeParts) {
  expect_equal_batches(*three_, {.fanouts = {5, 2}, .seed = 1}, "3 parts, uniform");
  HeteroSamplerOptions per_type{.fanouts = {2, 2}, .seed = 9};
  per_type.fanouts_by_type = {{{"author", "writes", "paper"}, {-1, 1}},
                              {{"paper", "cites", "paper"}, {0, 3}}};
  expect_equal_batches(*three_, per_type, "3 parts, per type");
  expect_equal_batches(*three_, {.fanouts = {3, 3}, .weighted = true, .seed = 4},
                       "3 parts, weighted (no weights: uniform, as locally)");
}

TEST_F(DistHeteroTest, WorkerModeSamplesTheLocalPartInProcess) {
  for (int64_t part = 0; part < 3; ++part) {
    std::vector<std::string> addresses = three_->addresses();
    addresses[static_cast<size_t>(part)] = "";  // never called
    const auto& server = *three_->servers[static_cast<size_t>(part)];
    const auto client = dist::DistHeteroGraph::connect(addresses, {}, server.hetero_partition(),
                                                       server.fingerprint());
    EXPECT_EQ(client->local_part(), part);
    const int64_t before = server.stats().requests;
    expect_equal_batches(*client, *three_, {.fanouts = {3, 2}, .seed = 8},
                         "worker part " + std::to_string(part));
    const int paper = three_->oracle.graph.node_type_index("paper");
    const Array& labels = *three_->oracle.labels[static_cast<size_t>(paper)];
    const std::vector<int64_t> ids = distinct_ids(labels.numel(), 40, 6);
    const Array got = client->gather_labels("paper", ids);
    for (size_t i = 0; i < ids.size(); ++i) {
      EXPECT_EQ(got.data<int64_t>()[i], labels.data<int64_t>()[ids[i]]) << i;
    }
    EXPECT_EQ(server.stats().requests, before) << "the local part was called over RPC";
  }
  const auto& server = *two_->servers[0];
  EXPECT_THAT(
      [&] {
        dist::DistHeteroGraph::connect(three_->addresses(), {}, server.hetero_partition(),
                                       server.fingerprint());
      },
      ::testing::ThrowsMessage<ValueError>(HasSubstr("2 parts")));
}

TEST_F(DistHeteroTest, ServerClientBatchesEqualTheLocalLoader) {
  std::vector<std::string> peers = three_->addresses();
  peers[0] = "";
  dist::Server server(three_->directory, 0, {.peers = peers});
  LoaderOptions options{.batch_size = 16, .shuffle = true, .seed = 5};
  options.sampler = {.fanouts = {3, 2}};
  const Array inputs = Array::from_vector(distinct_ids(600, 50, 4));
  dist::ServerClientLoader loader(server.address(), {}, inputs, options, {.input_type = "paper"});
  ASSERT_NE(loader.typed_info(), nullptr);
  NeighborLoader local(
      std::make_shared<HeteroNeighborSampler>(three_->oracle.graph, options.sampler), "paper",
      inputs, options);
  const int paper = three_->oracle.graph.node_type_index("paper");
  const Array& features = *three_->oracle.features[static_cast<size_t>(paper)];
  const size_t row = features.nbytes() / static_cast<size_t>(features.dim(0));
  for (int64_t epoch : {0, 3}) {
    auto got = loader.start_epoch(epoch);
    auto want = local.start_epoch(epoch);
    int64_t count = 0;
    while (auto expected = want->next()) {
      auto batch = got->next();
      ASSERT_TRUE(batch.has_value());
      const std::string where = fmt::format("epoch {}, batch {}", epoch, count++);
      expect_same_typed_batch(*batch, *expected, where);
      const NodeTypeBatch& papers = batch->node_types[static_cast<size_t>(paper)];
      const Array x = typed_attr(papers, "x");
      ASSERT_TRUE(x.defined() && typed_attr(papers, "y").defined()) << where;
      const int64_t* nodes = papers.nodes.data<int64_t>();
      for (int64_t i = 0; i < papers.nodes.numel(); ++i) {
        ASSERT_EQ(std::memcmp(x.raw_data() + static_cast<size_t>(i) * row,
                              features.raw_data() + static_cast<size_t>(nodes[i]) * row, row),
                  0)
            << where;
      }
    }
    EXPECT_FALSE(got->next().has_value());
    EXPECT_EQ(count, 4);
  }
  // A server without peers refuses, naming the fix; so does an unknown input type.
  EXPECT_THAT(
      [&] {
        dist::ServerClientLoader(three_->servers[1]->address(), {}, inputs, options,
                                 {.input_type = "paper"});
      },
      ::testing::ThrowsMessage<Error>(HasSubstr("peers")));
  EXPECT_THAT(
      [&] {
        dist::ServerClientLoader(server.address(), {}, inputs, options, {.input_type = "venue"});
      },
      ::testing::ThrowsMessage<ValueError>(HasSubstr("unknown node type 'venue'")));
  EXPECT_THAT([&] { dist::ServerClientLoader(server.address(), {}, inputs, options); },
              ::testing::ThrowsMessage<ValueError>(HasSubstr("unknown node type ''")));
}

TEST_F(DistHeteroTest, GathersReturnTheRenumberedRows) {
  const auto client = dist::DistHeteroGraph::connect(three_->addresses());
  const int paper = three_->oracle.graph.node_type_index("paper");
  const Array& features = *three_->oracle.features[static_cast<size_t>(paper)];
  const std::vector<int64_t> ids = distinct_ids(features.dim(0), 50, 3);
  const Array got = client->gather_features("paper", ids, features.dtype());
  const size_t row = features.nbytes() / static_cast<size_t>(features.dim(0));
  for (size_t i = 0; i < ids.size(); ++i) {
    ASSERT_EQ(std::memcmp(got.raw_data() + i * row,
                          features.raw_data() + static_cast<size_t>(ids[i]) * row, row),
              0)
        << "row " << i;
  }
  const Array labels = client->gather_labels("paper", ids);
  const Array& want = *three_->oracle.labels[static_cast<size_t>(paper)];
  for (size_t i = 0; i < ids.size(); ++i) {
    EXPECT_EQ(labels.data<int64_t>()[i], want.data<int64_t>()[ids[i]]);
  }
}

TEST_F(DistHeteroTest, BadTypesAndIdsAreNamed) {
  const auto client = dist::DistHeteroGraph::connect(two_->addresses());
  const int64_t papers = two_->oracle.graph.num_nodes("paper");
  const std::vector<int64_t> bad{0, papers};
  EXPECT_THAT(
      [&] {
        client->sample({{"paper", bad}}, {.fanouts = {2}}, 0);
      },
      ::testing::ThrowsMessage<IndexError>(HasSubstr("node type 'paper'")));
  EXPECT_THAT(
      [&] {
        client->sample({{"venue", bad}}, {.fanouts = {2}}, 0);
      },
      ::testing::ThrowsMessage<ValueError>(HasSubstr("venue")));
  HeteroSamplerOptions unknown{.fanouts = {2}};
  unknown.fanouts_by_type = {{{"paper", "likes", "paper"}, {1}}};
  EXPECT_THAT(
      [&] {
        client->sample({{"paper", std::vector<int64_t>{0}}}, unknown, 0);
      },
      ::testing::ThrowsMessage<ValueError>(HasSubstr("paper__likes__paper")));
  EXPECT_THAT([&] { client->gather_features("paper", bad, DType::kFloat32); },
              ::testing::ThrowsMessage<IndexError>(HasSubstr("node type 'paper'")));

  // The server itself: an unknown edge type, none, and a target it does not own.
  auto stub = rpc::PartitionService::NewStub(
      grpc::CreateChannel(two_->servers[0]->address(), grpc::InsecureChannelCredentials()));
  rpc::HopRequest request;
  request.set_protocol(dist::kProtocolVersion);
  request.set_fingerprint(two_->servers[0]->fingerprint());
  request.set_fanout(2);
  const std::vector<int64_t> target{two_->servers[0]->hetero_partition()->book("paper").end(0)};
  request.set_targets(std::string(reinterpret_cast<const char*>(target.data()), 8));
  rpc::HopReply reply;
  for (const std::string& type :
       {std::string("paper__likes__paper"), std::string("nonsense"), std::string("")}) {
    grpc::ClientContext context;
    request.set_edge_type(type);
    const grpc::Status status = stub->SampleHop(&context, request, &reply);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << type;
    EXPECT_THAT(status.error_message(), HasSubstr("paper__cites__paper")) << type;
  }
  grpc::ClientContext context;
  request.set_edge_type("paper__cites__paper");
  const grpc::Status status = stub->SampleHop(&context, request, &reply);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::OUT_OF_RANGE);
  EXPECT_THAT(status.error_message(), HasSubstr("node type 'paper'"));
}

TEST_F(DistHeteroTest, TheTypedLoaderOverTheServiceEqualsItOverTheLocalSampler) {
  // One loader pipeline, two sources: the service's (its own x and y) and this process's
  // sampler with the oracle's tables as attributes. Zero hops give the seeds alone.
  const HeteroGraph& graph = three_->oracle.graph;
  const int paper = graph.node_type_index("paper");
  for (const std::vector<int64_t>& fanouts : {std::vector<int64_t>{3, 2}, std::vector<int64_t>{}}) {
    const HeteroSamplerOptions options{.fanouts = fanouts};
    TypedAttributes tables;
    tables.node.resize(static_cast<size_t>(graph.num_node_types()));
    tables.node[static_cast<size_t>(paper)] = {
        {"x", FeatureStore(*three_->oracle.features[static_cast<size_t>(paper)])},
        {"y", FeatureStore(*three_->oracle.labels[static_cast<size_t>(paper)])}};
    const LoaderOptions loader{.batch_size = 40, .shuffle = true, .num_threads = 2, .seed = 9};
    const NeighborLoader local(std::make_shared<HeteroNeighborSampler>(graph, options), "paper",
                               std::nullopt, loader, tables);
    const auto source = std::make_shared<const dist::DistHeteroSource>(
        dist::DistHeteroGraph::connect(three_->addresses()), options);
    const NeighborLoader remote(source, "paper", std::nullopt, loader);
    ASSERT_EQ(remote.num_batches(), local.num_batches());
    auto want = local.start_epoch(1);
    auto got = remote.start_epoch(1);
    int64_t batches = 0;
    while (auto expected = want->next()) {
      auto batch = got->next();
      ASSERT_TRUE(batch.has_value());
      const std::string where =
          "hops " + std::to_string(fanouts.size()) + " batch " + std::to_string(batch->index);
      ASSERT_EQ(batch->node_types.size(), expected->node_types.size());
      for (size_t t = 0; t < batch->node_types.size(); ++t) {
        EXPECT_TRUE(same_array(batch->node_types[t].nodes, expected->node_types[t].nodes)) << where;
        EXPECT_EQ(batch->node_types[t].nodes_per_hop, expected->node_types[t].nodes_per_hop);
        const auto& attrs = batch->node_types[t].attrs;  // the service's x and y where served
        const auto& tables_here = expected->node_types[t].attrs;
        if (static_cast<int>(t) != paper) continue;
        ASSERT_EQ(attrs.size(), 2u) << where;
        for (size_t a = 0; a < 2; ++a) {
          EXPECT_EQ(attrs[a].first, tables_here[a].first);
          EXPECT_TRUE(same_array(attrs[a].second, tables_here[a].second))
              << where << attrs[a].first;
        }
      }
      for (size_t e = 0; e < batch->edge_types.size(); ++e) {
        EXPECT_TRUE(
            same_array(batch->edge_types[e].edge_index, expected->edge_types[e].edge_index));
        EXPECT_TRUE(same_array(batch->edge_types[e].edge_ids, expected->edge_types[e].edge_ids));
      }
      if (fanouts.empty()) EXPECT_EQ(batch->node_types[paper].nodes.numel(), batch->batch_size);
      ++batches;
    }
    EXPECT_FALSE(got->next().has_value());
    EXPECT_EQ(batches, local.num_batches());
  }
  EXPECT_THAT(
      [&] {
        dist::DistHeteroSource(dist::DistHeteroGraph::connect(three_->addresses()),
                               {.fanouts_by_type = {{{"paper", "likes", "paper"}, {2}}}});
      },
      ::testing::ThrowsMessage<ValueError>(HasSubstr("paper__likes__paper")));
}

TEST_F(DistHeteroTest, AHomogeneousClientIsToldToUseTheHeterogeneousOne) {
  EXPECT_THAT([&] { dist::DistGraph::connect(two_->addresses()); },
              ::testing::ThrowsMessage<ValueError>(HasSubstr("heterogeneous")));
}

TEST_F(DistHeteroTest, CallsOfAHomogeneousPartitionAreRefusedByName) {
  const auto channel =
      grpc::CreateChannel(two_->addresses()[0], grpc::InsecureChannelCredentials());
  const grpc::Status edges = raw_call(channel, "/volley.rpc.PartitionService/HasEdges",
                                      rpc::EdgesRequest().SerializeAsString());
  EXPECT_EQ(edges.error_code(), grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_THAT(edges.error_message(),
              HasSubstr("HasEdges: this server serves part 0 of a heterogeneous"));
  // An epoch without an input type: the seeds of a typed partition need one.
  const grpc::Status epoch = raw_call(channel, "/volley.rpc.PartitionService/SampleEpoch",
                                      rpc::EpochRequest().SerializeAsString());
  EXPECT_EQ(epoch.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(epoch.error_message(),
              HasSubstr("SampleEpoch: this server serves part 0 of a heterogeneous partitioned "
                        "dataset; name the input nodes' type"));
}

}  // namespace
}  // namespace volley::dist_test
