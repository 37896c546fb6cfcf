// DistGraph and ServerClientLoader against the single-machine oracle: sampling (many batches,
// option mixes, worker and all-remote modes), feature and label rows, NeighborLoader batches and
// server-client epochs, all bit for bit.
#include <gtest/gtest.h>

#include <cstring>
#include <map>

#include "dist_fixture.h"
#include "sampling/expect_subgraph.h"
#include "volley/core/error.h"
#include "volley/graph/dataset.h"

namespace volley::dist_test {
namespace {

// Cora partitioned three ways (random into 2, stream into 3, and a weighted copy into 2 parts),
// each served by in-process servers, once for the whole suite.
class DistGraphTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir("volley-dist-test");
    source_ = new Dataset(load_dataset(kCoraDirectory));
    partition_dataset(kCoraDirectory, *dir_ / "random-2",
                      {.method = PartitionMethod::kRandom, .num_parts = 2, .seed = 3});
    partition_dataset(kCoraDirectory, *dir_ / "stream-3",
                      {.method = PartitionMethod::kStream, .num_parts = 3, .seed = 1});
    // Weighted Cora: a deterministic weight per edge, every seventh one zero.
    Dataset weighted = load_dataset(kCoraDirectory, {.memory_map = false});
    std::vector<float> weights(static_cast<size_t>(weighted.graph.num_edges()));
    for (size_t k = 0; k < weights.size(); ++k) {
      weights[k] = k % 7 == 0 ? 0.0f : static_cast<float>((k * 2654435761u) % 1000) / 100.0f;
    }
    weighted.graph = Csr::from_arrays(weighted.graph.indptr(), weighted.graph.indices(),
                                      std::nullopt, Array::from_vector(weights));
    weighted.name = "cora-weighted";
    save_dataset(weighted, *dir_ / "cora-weighted");
    partition_dataset(*dir_ / "cora-weighted", *dir_ / "weighted-2",
                      {.method = PartitionMethod::kRandom, .num_parts = 2, .seed = 5});

    random2_ = new ServedDataset(*dir_ / "random-2");
    stream3_ = new ServedDataset(*dir_ / "stream-3");
    weighted2_ = new ServedDataset(*dir_ / "weighted-2");
  }
  static void TearDownTestSuite() {
    delete random2_;
    delete stream3_;
    delete weighted2_;
    delete source_;
    delete dir_;
  }

  // Every mode of `data`: all remote, and worker mode holding each part.
  static std::vector<std::pair<std::string, std::shared_ptr<const dist::DistGraph>>> modes(
      const ServedDataset& data) {
    std::vector<std::pair<std::string, std::shared_ptr<const dist::DistGraph>>> list;
    list.emplace_back("all remote", data.client());
    for (int64_t p = 0; p < data.num_parts(); ++p) {
      list.emplace_back(fmt::format("worker holding part {}", p), data.worker(p));
    }
    return list;
  }

  static TempDir* dir_;
  static Dataset* source_;
  static ServedDataset* random2_;
  static ServedDataset* stream3_;
  static ServedDataset* weighted2_;
};
TempDir* DistGraphTest::dir_ = nullptr;
Dataset* DistGraphTest::source_ = nullptr;
ServedDataset* DistGraphTest::random2_ = nullptr;
ServedDataset* DistGraphTest::stream3_ = nullptr;
ServedDataset* DistGraphTest::weighted2_ = nullptr;

TEST_F(DistGraphTest, InfoDescribesTheDataset) {
  const auto graph = random2_->client();
  const dist::ServiceInfo& info = graph->info();
  EXPECT_EQ(info.book, random2_->manifest.book);
  EXPECT_EQ(info.fingerprint, dist::dataset_fingerprint(random2_->directory));
  EXPECT_EQ(info.feature_dim, 1433);
  EXPECT_EQ(info.feature_dtype, DType::kUInt8);
  EXPECT_TRUE(info.label_dtype.has_value());
  EXPECT_EQ(info.num_classes, 7);
  EXPECT_FALSE(info.has_weights);
  EXPECT_EQ(graph->num_nodes(), 2708);
  EXPECT_EQ(graph->local_part(), -1);
  EXPECT_EQ(random2_->worker(1)->local_part(), 1);
  EXPECT_TRUE(weighted2_->client()->info().has_weights);
}

TEST_F(DistGraphTest, SamplingEqualsTheWholeGraphInEveryMode) {
  const std::vector<NeighborSamplerOptions> mixes = {
      {.fanouts = {15, 10, 5}, .seed = 1},
      {.fanouts = {-1, 5}, .seed = 2},
      {.fanouts = {0, 3}, .seed = 3},
      {.fanouts = {5, 0, 2}, .replace = true, .seed = 4},
      {.fanouts = {10, 10}, .replace = true, .seed = 5},
      {.fanouts = {2, -1}, .seed = 6},
      {.fanouts = {25}, .seed = 7},
  };
  const std::vector<int64_t> sizes = {1, 7, 64, 300};
  int64_t compared = 0;
  for (const ServedDataset* data : {random2_, stream3_}) {
    SamplerScratch scratch;
    for (const auto& [mode, graph] : modes(*data)) {
      for (size_t m = 0; m < mixes.size(); ++m) {
        for (uint64_t batch = 0; batch < 6; ++batch) {
          const auto seeds = distinct_ids(2708, sizes[batch % sizes.size()], batch * 31 + m);
          const auto want = sample_neighbors(data->whole, seeds, mixes[m], batch, &scratch);
          const auto got = graph->sample(seeds, mixes[m], batch);
          expect_same_subgraph(
              got, want,
              fmt::format("{} parts, {}, mix {}, batch {}", data->num_parts(), mode, m, batch));
          ++compared;
        }
      }
    }
  }
  EXPECT_EQ(compared, (3 + 4) * 7 * 6);
}

TEST_F(DistGraphTest, WeightedSamplingEqualsTheWholeGraph) {
  const std::vector<NeighborSamplerOptions> mixes = {
      {.fanouts = {10, 5}, .weighted = true, .seed = 11},
      {.fanouts = {4, 4, 4}, .replace = true, .weighted = true, .seed = 12},
      {.fanouts = {-1, 3}, .weighted = true, .seed = 13},
  };
  SamplerScratch scratch;
  for (const auto& [mode, graph] : modes(*weighted2_)) {
    for (size_t m = 0; m < mixes.size(); ++m) {
      for (uint64_t batch = 0; batch < 5; ++batch) {
        const auto seeds = distinct_ids(2708, 100, batch + 100 * m);
        expect_same_subgraph(graph->sample(seeds, mixes[m], batch),
                             sample_neighbors(weighted2_->whole, seeds, mixes[m], batch, &scratch),
                             fmt::format("weighted, {}, mix {}, batch {}", mode, m, batch));
      }
    }
  }
  // The unweighted service refuses weighted sampling up front.
  EXPECT_THROW(random2_->client()->validate({.fanouts = {5}, .weighted = true}), ValueError);
}

TEST_F(DistGraphTest, ConcurrentCallersGetTheSameBatches) {
  const auto graph = stream3_->worker(1);
  const NeighborSamplerOptions options{.fanouts = {10, 5}, .seed = 9};
  std::vector<HostSubgraph> want(24);
  for (size_t b = 0; b < want.size(); ++b) {
    want[b] = vectors_of(sample_neighbors(stream3_->whole, distinct_ids(2708, 128, b), options, b));
  }
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (size_t b = static_cast<size_t>(t); b < want.size(); b += 4) {
        const auto got = vectors_of(graph->sample(distinct_ids(2708, 128, b), options, b));
        mismatches[static_cast<size_t>(t)] += got.nodes != want[b].nodes ||
                                              got.edge_ids != want[b].edge_ids ||
                                              got.cols != want[b].cols;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(mismatches, std::vector<int>(4, 0));
}

TEST_F(DistGraphTest, BadSeedsAreRefused) {
  const auto graph = random2_->client();
  const NeighborSamplerOptions options{.fanouts = {5}};
  const std::vector<int64_t> out_of_range = {3, 2708};
  EXPECT_THROW(graph->sample(out_of_range, options, 0), IndexError);
  const std::vector<int64_t> negative = {-1};
  EXPECT_THROW(graph->sample(negative, options, 0), IndexError);
  const std::vector<int64_t> duplicate = {4, 9, 4};
  EXPECT_THROW(graph->sample(duplicate, options, 0), ValueError);
  EXPECT_THROW(graph->sample(std::vector<int64_t>{1}, {.fanouts = {-2}}, 0), ValueError);
  const auto empty = graph->sample(std::vector<int64_t>{}, options, 0);
  EXPECT_EQ(empty.num_nodes(), 0);
  EXPECT_EQ(empty.num_edges(), 0);
}

TEST_F(DistGraphTest, FeaturesAndLabelsAreTheOriginalsThroughTheNodeMap) {
  const Array old_of = invert_node_map(random2_->node_map);
  const Array& features = *source_->features;  // uint8 [2708, 1433]
  const Array& labels = *source_->labels;
  const int64_t width = features.dim(1);
  for (const ServedDataset* data : {random2_, stream3_}) {
    const Array old_of_data = invert_node_map(data->node_map);
    for (const auto& [mode, graph] : modes(*data)) {
      auto ids = distinct_ids(2708, 500, 17);
      ids.push_back(ids.front());  // repeated ids are fine for gathers
      const Array as_stored = graph->gather_features(ids, DType::kUInt8);
      const Array as_float = graph->gather_features(ids, DType::kFloat32);
      const Array y = graph->gather_labels(ids);
      ASSERT_EQ(as_stored.shape(), (std::vector<int64_t>{501, width})) << mode;
      ASSERT_EQ(as_float.shape(), (std::vector<int64_t>{501, width})) << mode;
      ASSERT_EQ(y.numel(), 501) << mode;
      for (size_t i = 0; i < ids.size(); ++i) {
        const int64_t old_id = old_of_data.data<int64_t>()[ids[i]];
        const uint8_t* want = features.data<uint8_t>() + old_id * width;
        ASSERT_EQ(std::memcmp(as_stored.data<uint8_t>() + i * width, want, width), 0)
            << mode << ", id " << ids[i];
        for (int64_t c = 0; c < width; c += 97) {
          ASSERT_EQ(as_float.data<float>()[i * width + c], static_cast<float>(want[c])) << mode;
        }
        ASSERT_EQ(y.data<int64_t>()[i], labels.data<int64_t>()[old_id]) << mode;
      }
      EXPECT_THROW(graph->gather_features(std::vector<int64_t>{2708}, DType::kFloat32), IndexError);
    }
  }
  (void)old_of;
}

// The loader over a DistGraph delivers exactly what the loader over the oracle delivers.
TEST_F(DistGraphTest, NeighborLoaderEqualsTheLoaderOverTheWholeGraph) {
  const Array old_of = invert_node_map(stream3_->node_map);
  const Array features = rows_in_new_order(*source_->features, stream3_->node_map);
  const Array labels = rows_in_new_order(*source_->labels, stream3_->node_map);
  std::vector<int64_t> train;
  for (int64_t v : source_->train_idx->to_vector<int64_t>()) {
    train.push_back(stream3_->node_map.data<int64_t>()[v]);
  }
  const LoaderOptions options{.batch_size = 32,
                              .shuffle = true,
                              .num_threads = 3,
                              .seed = 21,
                              .sampler = {.fanouts = {10, 5}}};
  NeighborLoader oracle(stream3_->whole, features, labels, Array::from_vector(train), options);
  for (const auto& [mode, graph] : modes(*stream3_)) {
    NeighborLoader loader(graph, Array::from_vector(train), options);
    ASSERT_EQ(loader.num_batches(), oracle.num_batches());
    for (int64_t epoch_index : {0, 1}) {
      auto want = oracle.start_epoch(epoch_index);
      auto got = loader.start_epoch(epoch_index);
      int64_t count = 0;
      while (auto expected = want->next()) {
        auto batch = got->next();
        ASSERT_TRUE(batch.has_value()) << mode;
        expect_same_batch(*batch, *expected,
                          fmt::format("{}, epoch {}, batch {}", mode, epoch_index, count));
        ++count;
      }
      EXPECT_FALSE(got->next().has_value());
      EXPECT_EQ(count, 5);  // 140 training nodes in batches of 32
    }
  }
  (void)old_of;
}

// Server-client mode: one server samples whole epochs across all parts (it knows its peers).
TEST_F(DistGraphTest, ServerClientLoaderEqualsTheLoaderOverTheWholeGraph) {
  const ServedDataset& data = *random2_;
  dist::ServerOptions options{.peers = data.addresses(), .default_concurrency = 2};
  dist::Server front(data.directory, 1, options);  // a second server of part 1, with peers
  const Array features = rows_in_new_order(*source_->features, data.node_map);
  const Array labels = rows_in_new_order(*source_->labels, data.node_map);
  std::vector<int64_t> inputs = distinct_ids(2708, 300, 5);
  const LoaderOptions loader_options{.batch_size = 64,
                                     .shuffle = true,
                                     .drop_last = false,
                                     .num_threads = 2,
                                     .seed = 8,
                                     .sampler = {.fanouts = {10, 5, 3}}};
  NeighborLoader oracle(data.whole, features, labels, Array::from_vector(inputs), loader_options);
  dist::ServerClientLoader loader(front.address(), {}, Array::from_vector(inputs), loader_options);
  EXPECT_EQ(loader.num_batches(), 5);
  EXPECT_EQ(loader.num_inputs(), 300);
  EXPECT_EQ(loader.info().book, data.manifest.book);
  for (int64_t epoch_index : {0, 3}) {
    auto want = oracle.start_epoch(epoch_index);
    auto got = loader.start_epoch(epoch_index);
    EXPECT_EQ(got->num_batches(), 5);
    int64_t count = 0;
    while (auto expected = want->next()) {
      auto batch = got->next();
      ASSERT_TRUE(batch.has_value());
      expect_same_batch(*batch, *expected, fmt::format("epoch {}, batch {}", epoch_index, count));
      ++count;
    }
    EXPECT_FALSE(got->next().has_value());
    EXPECT_EQ(count, 5);
  }
  // A data-parallel rank: the client asks for its share of the epoch and maps input_ids back.
  for (int rank : {0, 1}) {
    LoaderOptions ranked = loader_options;
    ranked.rank = rank;
    ranked.world_size = 2;
    ranked.drop_last = rank == 1;
    NeighborLoader rank_oracle(data.whole, features, labels, Array::from_vector(inputs), ranked);
    dist::ServerClientLoader rank_loader(front.address(), {}, Array::from_vector(inputs), ranked);
    EXPECT_EQ(rank_loader.num_batches(), rank_oracle.num_batches());
    auto want = rank_oracle.start_epoch(2);
    auto got = rank_loader.start_epoch(2);
    int64_t count = 0;
    while (auto expected = want->next()) {
      auto batch = got->next();
      ASSERT_TRUE(batch.has_value());
      expect_same_batch(*batch, *expected, fmt::format("rank {}, batch {}", rank, count));
      ++count;
    }
    EXPECT_FALSE(got->next().has_value());
    EXPECT_EQ(count, rank == 1 ? 2 : 3);  // 150 inputs each, batches of 64
  }
  // An input id out of range is refused when the loader is built, as is a node type.
  EXPECT_THROW(
      dist::ServerClientLoader(front.address(), {},
                               Array::from_vector(std::vector<int64_t>{5, 2708}), loader_options),
      IndexError);
  EXPECT_THAT(
      [&] {
        dist::ServerClientLoader(front.address(), {}, std::nullopt, loader_options,
                                 {.input_type = "paper"});
      },
      ::testing::ThrowsMessage<ValueError>(HasSubstr("has no node type 'paper'")));
  // Without features and labels, and stopped early.
  dist::ServerClientLoader bare(front.address(), {}, Array::from_vector(inputs), loader_options,
                                {.features = false, .labels = false});
  auto epoch = bare.start_epoch(0);
  auto first = epoch->next();
  ASSERT_TRUE(first.has_value());
  EXPECT_FALSE(first->x.defined() && first->x.numel() > 0);
  EXPECT_FALSE(first->y.defined() && first->y.numel() > 0);
  epoch->stop();
  EXPECT_FALSE(epoch->next().has_value());
  // Streams cancelled mid-epoch, one after the other: each new loader connects at once. (The
  // server used to delete a cancelled stream inside gRPC's callback, joining a worker that waited
  // for a peer's reply on that same thread: the next connection failed "Socket closed" after
  // ~15 s, when keepalive gave up on the stalled transport.)
  for (int round = 0; round < 6; ++round) {
    dist::ServerClientLoader again(front.address(), {}, Array::from_vector(inputs), loader_options,
                                   {.features = false, .labels = false});
    auto stopped = again.start_epoch(round);
    ASSERT_TRUE(stopped->next().has_value()) << "round " << round;
    stopped->stop();
  }
}

TEST_F(DistGraphTest, ServerClientLoaderNeedsPeers) {
  // random2_'s servers were started without peers: they cannot sample epochs.
  EXPECT_THROW(dist::ServerClientLoader(random2_->servers[0]->address(), {}, std::nullopt,
                                        {.batch_size = 16, .sampler = {.fanouts = {5}}}),
               Error);
}

}  // namespace
}  // namespace volley::dist_test
