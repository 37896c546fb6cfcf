#include "volley/loader/neighbor_loader.h"

#include <dirent.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <set>

namespace volley {
namespace {

struct Fixture {
  Csr graph;
  Array features;
  Array labels;
};

Fixture make_fixture(int64_t n = 1000, int64_t m = 8000, int64_t width = 3) {
  std::mt19937_64 rng(11);
  std::vector<int64_t> src(m), dst(m);
  for (int64_t i = 0; i < m; ++i) {
    src[i] = static_cast<int64_t>(rng() % n);
    dst[i] = static_cast<int64_t>(rng() % n);
  }
  Fixture f;
  f.graph =
      build_csr(Array::from_vector(src), Array::from_vector(dst), std::nullopt, {.num_nodes = n});
  f.features = Array::empty(DType::kUInt8, {n, width});
  for (int64_t i = 0; i < n * width; ++i)
    f.features.data<uint8_t>()[i] = static_cast<uint8_t>((i / width) % 251);
  f.labels = Array::empty(DType::kInt64, {n});
  for (int64_t i = 0; i < n; ++i) f.labels.data<int64_t>()[i] = i % 7;
  return f;
}

int count_threads() {
  int count = 0;
  if (DIR* dir = opendir("/proc/self/task")) {
    while (dirent* entry = readdir(dir)) count += entry->d_name[0] != '.';
    closedir(dir);
  }
  return count;
}

TEST(NeighborLoader, VisitsEveryInputOnceWithGatheredData) {
  const auto f = make_fixture();
  std::vector<int64_t> train;
  for (int64_t i = 0; i < 1000; i += 3) train.push_back(i);
  NeighborLoader loader(f.graph, f.features, f.labels, Array::from_vector(train),
                        {.batch_size = 64,
                         .shuffle = true,
                         .num_threads = 3,
                         .seed = 5,
                         .sampler = {.fanouts = {5, 5}}});
  EXPECT_EQ(loader.num_batches(), (334 + 63) / 64);
  auto epoch = loader.start_epoch(0);
  std::multiset<int64_t> seen;
  int64_t expected_index = 0;
  while (auto batch = epoch->next()) {
    EXPECT_EQ(batch->index, expected_index++);
    const auto nodes = batch->nodes.span<int64_t>();
    for (int64_t i = 0; i < batch->batch_size; ++i) {
      seen.insert(nodes[i]);
      EXPECT_EQ(train[batch->input_ids.data<int64_t>()[i]], nodes[i]);
    }
    ASSERT_EQ(batch->x.dim(0), static_cast<int64_t>(nodes.size()));
    for (size_t i = 0; i < nodes.size(); ++i) {
      ASSERT_EQ(batch->x.data<float>()[i * 3 + 2], static_cast<float>(nodes[i] % 251));
      ASSERT_EQ(batch->y.data<int64_t>()[i], nodes[i] % 7);
    }
    const int64_t edges = batch->edge_ids.numel();
    ASSERT_EQ(batch->edge_index.dim(1), edges);
    const int64_t* ei = batch->edge_index.data<int64_t>();
    for (int64_t j = 0; j < edges; ++j) {
      ASSERT_LT(ei[j], static_cast<int64_t>(nodes.size()));
      ASSERT_LT(ei[edges + j], static_cast<int64_t>(nodes.size()));
    }
  }
  EXPECT_EQ(seen, std::multiset<int64_t>(train.begin(), train.end()));
  EXPECT_FALSE(epoch->next().has_value());
}

TEST(NeighborLoader, SameBatchesForAnyThreadCountAndDifferentEpochs) {
  const auto f = make_fixture();
  auto collect = [&](int threads, int64_t epoch_index) {
    NeighborLoader loader(f.graph, std::nullopt, std::nullopt, std::nullopt,
                          {.batch_size = 50,
                           .shuffle = true,
                           .num_threads = threads,
                           .seed = 9,
                           .sampler = {.fanouts = {4, 3}}});
    auto epoch = loader.start_epoch(epoch_index);
    std::vector<std::vector<int64_t>> result;
    while (auto batch = epoch->next()) {
      result.push_back(batch->nodes.to_vector<int64_t>());
      const auto e = batch->edge_ids.to_vector<int64_t>();
      result.push_back(e);
    }
    return result;
  };
  const auto one = collect(1, 0);
  EXPECT_EQ(collect(2, 0), one);
  EXPECT_EQ(collect(8, 0), one);
  EXPECT_NE(collect(2, 1), one);
}

TEST(NeighborLoader, WorkerFailureSurfacesAsException) {
  const auto f = make_fixture();
  // Labels of float dtype are refused up front...
  EXPECT_THROW(NeighborLoader(f.graph, std::nullopt, Array::zeros(DType::kFloat32, {1000}),
                              std::nullopt, {.sampler = {.fanouts = {2}}}),
               ValueError);
  // A failure inside a worker reaches the consumer on that batch, in order, then the epoch ends.
  for (int threads : {1, 3}) {
    NeighborLoader loader(f.graph, f.features, f.labels, std::nullopt,
                          {.batch_size = 10,
                           .num_threads = threads,
                           .sampler = {.fanouts = {3}},
                           .on_batch_start = [](int64_t index) {
                             if (index == 3) throw IoError("disk vanished at batch 3");
                           }});
    auto epoch = loader.start_epoch(0);
    for (int64_t b = 0; b < 3; ++b) ASSERT_EQ(epoch->next()->index, b);
    try {
      epoch->next();
      FAIL() << "expected the worker's IoError";
    } catch (const IoError& error) {
      EXPECT_STREQ(error.what(), "disk vanished at batch 3");
    }
    EXPECT_FALSE(epoch->next().has_value());
  }
}

TEST(NeighborLoader, EarlyExitJoinsWorkers) {
  const auto f = make_fixture(3000, 30000);
  const int before = count_threads();
  {
    NeighborLoader loader(
        f.graph, f.features, f.labels, std::nullopt,
        {.batch_size = 10, .num_threads = 4, .prefetch = 3, .sampler = {.fanouts = {10, 10}}});
    auto epoch = loader.start_epoch(0);
    ASSERT_TRUE(epoch->next().has_value());
    ASSERT_TRUE(epoch->next().has_value());
    EXPECT_GT(count_threads(), before);
  }  // destroyed mid-epoch
  EXPECT_EQ(count_threads(), before);
}

TEST(NeighborLoader, RejectsBadArguments) {
  const auto f = make_fixture();
  EXPECT_THROW(
      NeighborLoader(f.graph, std::nullopt, std::nullopt, Array::from_vector<int64_t>({1, 1000}),
                     {.sampler = {.fanouts = {2}}}),
      IndexError);
  EXPECT_THROW(NeighborLoader(f.graph, std::nullopt, std::nullopt,
                              Array::from_vector<int64_t>({4, 4}), {.sampler = {.fanouts = {2}}}),
               ValueError);
  EXPECT_THROW(NeighborLoader(f.graph, Array::zeros(DType::kFloat32, {999, 2}), std::nullopt,
                              std::nullopt, {.sampler = {.fanouts = {2}}}),
               ValueError);
  EXPECT_THROW(NeighborLoader(f.graph, std::nullopt, std::nullopt, std::nullopt,
                              {.batch_size = 0, .sampler = {.fanouts = {2}}}),
               ValueError);
}

// --- Data-parallel split (LoaderOptions::rank / world_size) ------------------------------------

struct RankEpoch {
  std::vector<int64_t> positions;  // input_ids of every batch, concatenated
  std::vector<std::vector<int64_t>> nodes;
  int64_t num_batches = 0;
};

RankEpoch run_rank(const NeighborLoader& loader, int64_t epoch_index) {
  RankEpoch result;
  result.num_batches = loader.num_batches();
  auto epoch = loader.start_epoch(epoch_index);
  while (auto batch = epoch->next()) {
    const auto ids = batch->input_ids.to_vector<int64_t>();
    result.positions.insert(result.positions.end(), ids.begin(), ids.end());
    result.nodes.push_back(batch->nodes.to_vector<int64_t>());
  }
  return result;
}

TEST(NeighborLoaderRanks, SplitTheSingleProcessOrderAndCoverEveryInput) {
  const auto f = make_fixture();
  std::vector<int64_t> train;
  for (int64_t i = 0; i < 1000; i += 7) train.push_back(i);  // 143: uneven over 3 ranks
  const int64_t count = static_cast<int64_t>(train.size());
  LoaderOptions options{.batch_size = 16, .shuffle = true, .seed = 4, .sampler = {.fanouts = {3}}};
  NeighborLoader single(f.graph, std::nullopt, std::nullopt, Array::from_vector(train), options);
  std::vector<std::unique_ptr<NeighborLoader>> loaders;  // one per rank, for every epoch
  for (int rank = 0; rank < 3; ++rank) {
    options.rank = rank;
    options.world_size = 3;
    options.num_threads = 1 + rank;
    loaders.push_back(std::make_unique<NeighborLoader>(f.graph, std::nullopt, std::nullopt,
                                                       Array::from_vector(train), options));
  }
  for (int64_t epoch = 0; epoch < 2; ++epoch) {
    const auto order = single.epoch_positions(epoch).to_vector<int64_t>();
    std::multiset<int64_t> covered;
    for (int rank = 0; rank < 3; ++rank) {
      const RankEpoch got = run_rank(*loaders[rank], epoch);
      ASSERT_EQ(got.positions.size(), 48u);  // ceil(143 / 3), padded
      EXPECT_EQ(got.num_batches, 3);
      for (size_t j = 0; j < got.positions.size(); ++j) {
        EXPECT_EQ(got.positions[j], order[(rank + 3 * j) % count]) << rank << " " << j;
      }
      EXPECT_EQ(got.positions, loaders[rank]->epoch_positions(epoch).to_vector<int64_t>());
      covered.insert(got.positions.begin(), got.positions.end());
    }
    EXPECT_EQ(covered.size(), 144u);  // every input once, position order[0] twice (padding)
    EXPECT_EQ(covered.count(order[0]), 2u);
    EXPECT_EQ(std::set<int64_t>(covered.begin(), covered.end()).size(), 143u);
  }
}

TEST(NeighborLoaderRanks, DropLastCutsTheTailAndRanksSampleDifferently) {
  const auto f = make_fixture();
  LoaderOptions options{.batch_size = 10,
                        .drop_last = true,
                        .seed = 8,
                        .world_size = 2,
                        .sampler = {.fanouts = {5, 5}}};
  std::vector<int64_t> inputs;
  for (int64_t i = 0; i < 101; ++i) inputs.push_back(i * 9);
  NeighborLoader rank0(f.graph, std::nullopt, std::nullopt, Array::from_vector(inputs), options);
  options.rank = 1;
  NeighborLoader rank1(f.graph, std::nullopt, std::nullopt, Array::from_vector(inputs), options);
  const RankEpoch a = run_rank(rank0, 0);
  const RankEpoch b = run_rank(rank1, 0);
  EXPECT_EQ(a.num_batches, 5);  // 50 inputs each, whole batches of 10
  for (size_t j = 0; j < a.positions.size(); ++j) {
    EXPECT_EQ(a.positions[j], static_cast<int64_t>(2 * j));  // unshuffled: 0, 2, 4, ...
    EXPECT_EQ(b.positions[j], static_cast<int64_t>(2 * j + 1));
  }
  // Epochs sample differently; the same epoch again samples the same.
  EXPECT_NE(run_rank(rank0, 1).nodes, a.nodes);
  EXPECT_EQ(run_rank(rank0, 0).nodes, a.nodes);
}

TEST(NeighborLoaderRanks, EpochShareReproducesTheRankThroughAOneRankLoader) {
  // What a server-client trainer asks its server for: the rank's inputs, unshuffled, with the
  // rank's seed; input_ids mapped back give the rank's own batches.
  const auto f = make_fixture();
  std::vector<int64_t> train;
  for (int64_t i = 5; i < 1000; i += 4) train.push_back(i);
  const Array inputs = Array::from_vector(train);
  const LoaderOptions options{.batch_size = 32,
                              .shuffle = true,
                              .seed = 21,
                              .rank = 2,
                              .world_size = 3,
                              .sampler = {.fanouts = {4, 2}}};
  NeighborLoader rank(f.graph, std::nullopt, std::nullopt, inputs, options);
  const auto share = loader_internal::epoch_share(inputs, options, 3);
  EXPECT_FALSE(share.shuffle);
  LoaderOptions one = options;
  one.rank = 0;
  one.world_size = 1;
  one.shuffle = share.shuffle;
  one.seed = share.seed;
  NeighborLoader server(f.graph, std::nullopt, std::nullopt, share.input_nodes, one);
  auto expected = rank.start_epoch(3);
  auto actual = server.start_epoch(3);
  int64_t batches = 0;
  while (auto want = expected->next()) {
    auto got = actual->next();
    ASSERT_TRUE(got.has_value());
    loader_internal::remap_input_ids(*got, share.positions);
    EXPECT_EQ(got->input_ids.to_vector<int64_t>(), want->input_ids.to_vector<int64_t>());
    EXPECT_EQ(got->nodes.to_vector<int64_t>(), want->nodes.to_vector<int64_t>());
    EXPECT_EQ(got->edge_ids.to_vector<int64_t>(), want->edge_ids.to_vector<int64_t>());
    ++batches;
  }
  EXPECT_EQ(batches, rank.num_batches());
  EXPECT_FALSE(actual->next().has_value());
  // One rank: the share is the request as it is.
  const auto whole = loader_internal::epoch_share(inputs, one, 3);
  EXPECT_FALSE(whole.positions.defined());
}

TEST(NeighborLoaderRanks, OptionsAreCheckedOnceWithTheOffendingValue) {
  const auto f = make_fixture();
  auto message = [&](LoaderOptions options, std::optional<Array> inputs = std::nullopt) {
    try {
      NeighborLoader(f.graph, std::nullopt, std::nullopt, std::move(inputs), std::move(options));
    } catch (const ValueError& error) {
      return std::string(error.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message({.rank = 2, .world_size = 2, .sampler = {.fanouts = {2}}}),
            "rank must be in [0, world_size), got rank=2, world_size=2");
  EXPECT_EQ(message({.rank = -1, .world_size = 2, .sampler = {.fanouts = {2}}}),
            "rank must be in [0, world_size), got rank=-1, world_size=2");
  EXPECT_EQ(message({.world_size = 0, .sampler = {.fanouts = {2}}}),
            "rank must be in [0, world_size), got rank=0, world_size=0");
  EXPECT_EQ(message({.drop_last = true, .world_size = 3, .sampler = {.fanouts = {2}}},
                    Array::from_vector<int64_t>({1, 2})),
            "2 input nodes cannot be split over 3 ranks with drop_last");
  EXPECT_EQ(message({.num_threads = -2, .sampler = {.fanouts = {2}}}),
            "num_threads must be >= 0, got -2");
  EXPECT_EQ(message({.prefetch = -1, .sampler = {.fanouts = {2}}}),
            "prefetch must be >= 0, got -1");
  // Without drop_last, fewer inputs than ranks are padded.
  EXPECT_EQ(
      message({.world_size = 3, .sampler = {.fanouts = {2}}}, Array::from_vector<int64_t>({1, 2})),
      "no error");
}

}  // namespace
// A resumed epoch (start_epoch(e, k)) yields batches k, k + 1, ... of the whole epoch, each the
// same; k = num_batches gives none, past it is a ValueError naming both.
TEST(NeighborLoader, AResumedEpochGivesTheBatchesLeft) {
  const auto f = make_fixture();
  NeighborLoader loader(f.graph, f.features, f.labels, std::nullopt,
                        {.batch_size = 100,
                         .shuffle = true,
                         .num_threads = 2,
                         .seed = 9,
                         .sampler = {.fanouts = {4, 3}}});
  const int64_t batches = loader.num_batches();
  std::vector<std::vector<int64_t>> whole;
  auto epoch = loader.start_epoch(2);
  while (auto batch = epoch->next()) whole.push_back(batch->nodes.to_vector<int64_t>());
  ASSERT_EQ(static_cast<int64_t>(whole.size()), batches);
  for (const int64_t first : {int64_t{1}, batches - 1, batches}) {
    auto resumed = loader.start_epoch(2, first);
    int64_t index = first;
    while (auto batch = resumed->next()) {
      EXPECT_EQ(batch->index, index);
      EXPECT_EQ(batch->nodes.to_vector<int64_t>(), whole[static_cast<size_t>(index)]);
      ++index;
    }
    EXPECT_EQ(index, batches);
  }
  EXPECT_THAT([&] { loader.start_epoch(2, batches + 1); },
              ::testing::ThrowsMessage<ValueError>(::testing::HasSubstr(fmt::format(
                  "an epoch of {} batches cannot resume at batch {}", batches, batches + 1))));
}

}  // namespace volley
