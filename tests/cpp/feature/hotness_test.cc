#include "volley/feature/hotness.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "volley/core/parallel.h"
#include "volley/feature/feature_store.h"
#include "volley/loader/neighbor_loader.h"

namespace volley {
namespace {

Csr popular_sources_graph(int64_t n, int64_t m, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> src(static_cast<size_t>(m)), dst(static_cast<size_t>(m));
  for (int64_t i = 0; i < m; ++i) {
    // Skewed: low ids are popular sources and targets.
    src[static_cast<size_t>(i)] = static_cast<int64_t>(rng() % static_cast<uint64_t>(n)) *
                                  static_cast<int64_t>(rng() % 100) / 100;
    dst[static_cast<size_t>(i)] = static_cast<int64_t>(rng() % static_cast<uint64_t>(n));
  }
  return build_csr(Array::from_vector(src), Array::from_vector(dst), std::nullopt,
                   {.num_nodes = n});
}

TEST(Hotness, ByDegreeIsInDegreeDescendingTiesById) {
  // Edges 0→1, 2→1, 3→1, 0→2, 1→2, 3→0: in-degrees 1:3, 2:2, 0:1, 3:0.
  const Csr graph = build_csr(Array::from_vector(std::vector<int64_t>{0, 2, 3, 0, 1, 3}),
                              Array::from_vector(std::vector<int64_t>{1, 1, 1, 2, 2, 0}),
                              std::nullopt, {.num_nodes = 5});
  EXPECT_EQ(hotness_by_degree(graph).to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 0, 3, 4}));
  // The same in-degrees counted from an out-oriented graph.
  EXPECT_EQ(hotness_by_degree(graph.transposed()).to_vector<int64_t>(),
            (std::vector<int64_t>{1, 2, 0, 3, 4}));
}

TEST(Hotness, BySamplingIsDeterministicForAnyThreadCount) {
  const Csr graph = popular_sources_graph(3000, 30000, 4);
  std::vector<int64_t> seeds;
  for (int64_t i = 0; i < 3000; i += 5) seeds.push_back(i);
  const NeighborSamplerOptions options{.fanouts = {5, 3}, .seed = 9};
  const int before = get_num_threads();
  set_num_threads(1);
  const auto one = hotness_by_sampling(graph, seeds, options, 64).to_vector<int64_t>();
  set_num_threads(3);
  const auto three = hotness_by_sampling(graph, seeds, options, 64).to_vector<int64_t>();
  set_num_threads(before);
  EXPECT_EQ(one, three);
  // A permutation of all rows.
  auto sorted = one;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 3000; ++i) ASSERT_EQ(sorted[static_cast<size_t>(i)], i);
  // Counts by hand, from the same batches: the order must be by count, ties by id.
  std::vector<int64_t> counts(3000, 0);
  for (size_t b = 0; b * 64 < seeds.size(); ++b) {
    const size_t count = std::min<size_t>(64, seeds.size() - b * 64);
    const auto sampled =
        sample_neighbors(graph, std::span<const int64_t>(seeds).subspan(b * 64, count), options, b);
    for (const int64_t node : sampled.nodes.span<int64_t>()) ++counts[static_cast<size_t>(node)];
  }
  for (size_t i = 1; i < one.size(); ++i) {
    const int64_t a = counts[static_cast<size_t>(one[i - 1])];
    const int64_t b = counts[static_cast<size_t>(one[i])];
    ASSERT_TRUE(a > b || (a == b && one[i - 1] < one[i])) << "at " << i;
  }
  // max_batches limits the simulated epoch.
  const auto limited = hotness_by_sampling(graph, seeds, options, 64, 1).to_vector<int64_t>();
  const auto first_batch =
      sample_neighbors(graph, std::span<const int64_t>(seeds).subspan(0, 64), options, 0);
  auto hot = std::vector<int64_t>(limited.begin(), limited.begin() + first_batch.num_nodes());
  auto sampled = first_batch.nodes.to_vector<int64_t>();
  std::sort(hot.begin(), hot.end());
  std::sort(sampled.begin(), sampled.end());
  EXPECT_EQ(hot, sampled);
  EXPECT_THROW(hotness_by_sampling(graph, seeds, options, 0), ValueError);
}

TEST(Hotness, LoaderWithATieredStoreMatchesThePlainArray) {
  const Csr graph = popular_sources_graph(2000, 20000, 8);
  Array features = Array::empty(DType::kFloat16, {2000, 6});
  auto* bits = reinterpret_cast<uint16_t*>(features.raw_data());
  for (int64_t i = 0; i < 2000 * 6; ++i) bits[i] = static_cast<uint16_t>((i * 37) % 30000);
  std::vector<int64_t> labels(2000);
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int64_t>(i % 11);
  const Array label_array = Array::from_vector(labels);
  std::vector<int64_t> train;
  for (int64_t i = 0; i < 2000; i += 2) train.push_back(i);
  const LoaderOptions options{.batch_size = 100,
                              .shuffle = true,
                              .num_threads = 2,
                              .seed = 3,
                              .sampler = {.fanouts = {4, 4}}};
  const FeatureStore tiered = FeatureStore::build(
      features, {.tiers = {{.location = Location::kHost, .byte_budget = 12 * 300}},
                 .hot_order = hotness_by_sampling(graph, train, options.sampler, 100)});
  ASSERT_EQ(tiered.tiers().size(), 2u);
  NeighborLoader plain(graph, features, label_array, Array::from_vector(train), options);
  NeighborLoader stored(graph, tiered, FeatureStore(label_array), Array::from_vector(train),
                        options);
  auto a = plain.start_epoch(0);
  auto b = stored.start_epoch(0);
  int64_t batches = 0;
  while (auto x = a->next()) {
    auto y = b->next();
    ASSERT_TRUE(y.has_value());
    ASSERT_EQ(x->nodes.to_vector<int64_t>(), y->nodes.to_vector<int64_t>());
    ASSERT_EQ(x->x.to_vector<float>(), y->x.to_vector<float>());
    ASSERT_EQ(x->y.to_vector<int64_t>(), y->y.to_vector<int64_t>());
    ++batches;
  }
  EXPECT_FALSE(b->next().has_value());
  EXPECT_EQ(batches, 10);
}

}  // namespace
}  // namespace volley
