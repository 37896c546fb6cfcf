#include "volley/loader/neighbor_loader.h"

#include <dirent.h>
#include <gtest/gtest.h>

#include <algorithm>
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

}  // namespace
}  // namespace volley
