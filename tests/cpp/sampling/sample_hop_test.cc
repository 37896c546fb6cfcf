// sample_hop (the distributed sampler's building block): one hop over a slice of the rows picks
// exactly what sample_neighbors picks for the same targets on the whole graph.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "sampling/expect_subgraph.h"
#include "test_util.h"
#include "volley/core/error.h"
#include "volley/sampling/neighbor_sampler.h"

namespace volley {
namespace {

using ::testing::HasSubstr;

Csr hub_graph(int64_t n, int64_t m, bool weighted, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> src(static_cast<size_t>(m)), dst(static_cast<size_t>(m));
  std::vector<float> weights(static_cast<size_t>(m));
  for (size_t i = 0; i < src.size(); ++i) {
    // Skewed targets: a few rows with large degree, so fanouts both cut and take all.
    dst[i] = static_cast<int64_t>(rng() % 7 == 0 ? rng() % 10 : rng() % n);
    src[i] = static_cast<int64_t>(rng() % n);
    weights[i] = rng() % 5 == 0 ? 0.0f : static_cast<float>(rng() % 100) / 10.0f;
  }
  std::optional<Array> weight_array;
  if (weighted) weight_array = Array::from_vector(weights);
  return build_csr(Array::from_vector(src), Array::from_vector(dst), weight_array,
                   {.num_nodes = n});
}

// Rows [begin, end) of `graph` as a graph of their own (neighbor ids stay global).
Csr slice(const Csr& graph, int64_t begin, int64_t end) {
  std::vector<int64_t> indptr{0}, indices, edge_ids;
  std::vector<float> weights;
  for (int64_t r = begin; r < end; ++r) {
    for (int64_t k = graph.begin(r); k < graph.end(r); ++k) {
      indices.push_back(graph.neighbor(k));
      edge_ids.push_back(graph.edge_id(k));
      if (graph.has_weights()) weights.push_back(graph.weights()->data<float>()[k]);
    }
    indptr.push_back(static_cast<int64_t>(indices.size()));
  }
  std::optional<Array> weight_array;
  if (graph.has_weights()) weight_array = Array::from_vector(weights);
  return Csr::from_arrays(Array::from_vector(indptr), Array::from_vector(indices),
                          Array::from_vector(edge_ids), weight_array, Orientation::kIn,
                          /*validate=*/false);
}

// Per target: the (neighbor, edge id) picks of the first hop of sample_neighbors.
std::map<int64_t, std::vector<std::pair<int64_t, int64_t>>> first_hop(
    const Csr& graph, const std::vector<int64_t>& seeds, NeighborSamplerOptions options,
    uint64_t batch) {
  const HostSubgraph result = vectors_of(sample_neighbors(graph, seeds, options, batch));
  std::map<int64_t, std::vector<std::pair<int64_t, int64_t>>> picks;
  for (int64_t seed : seeds) picks[seed];
  for (int64_t j = 0; j < result.edges_per_hop[0]; ++j) {
    picks[result.nodes[result.rows[j]]].emplace_back(result.nodes[result.cols[j]],
                                                     result.edge_ids[j]);
  }
  return picks;
}

TEST(SampleHop, SliceEqualsTheWholeGraphsFirstHop) {
  for (const bool weighted : {false, true}) {
    const Csr graph = hub_graph(500, 6000, weighted, 3);
    const std::vector<NeighborSamplerOptions> mixes = {
        {.fanouts = {4}, .seed = 1},
        {.fanouts = {4}, .replace = true, .seed = 2},
        {.fanouts = {-1}, .seed = 3},
        {.fanouts = {50}, .weighted = weighted, .seed = 4},
        {.fanouts = {3}, .replace = true, .weighted = weighted, .seed = 5},
    };
    const int64_t begin = 0, end = 200;  // rows 0..199 hold the high-degree targets
    const Csr part = slice(graph, begin, end);
    std::vector<int64_t> seeds;
    for (int64_t v = end - 1; v >= begin; v -= 3) seeds.push_back(v);
    for (const auto& options : mixes) {
      for (uint64_t batch : {0u, 7u}) {
        const auto want = first_hop(graph, seeds, options, batch);
        HopSample got;
        sample_hop(part, begin, seeds, /*hop=*/0, options.fanouts[0], options, batch, got);
        ASSERT_EQ(got.counts.size(), seeds.size());
        size_t at = 0;
        for (size_t i = 0; i < seeds.size(); ++i) {
          std::vector<std::pair<int64_t, int64_t>> picks;
          for (int32_t c = 0; c < got.counts[i]; ++c, ++at) {
            picks.emplace_back(got.neighbors[at], got.edge_ids[at]);
          }
          EXPECT_EQ(picks, want.at(seeds[i])) << "seed " << seeds[i] << ", weighted " << weighted;
        }
        EXPECT_EQ(at, got.neighbors.size());
      }
    }
  }
}

TEST(SampleHop, SecondSliceAndRepeatedTargets) {
  const Csr graph = hub_graph(300, 3000, false, 9);
  const Csr part = slice(graph, 120, 300);
  const std::vector<int64_t> targets = {299, 120, 200, 120};
  const NeighborSamplerOptions options{.fanouts = {3}, .seed = 6};
  HopSample a, b;
  sample_hop(part, 120, targets, 2, 3, options, 4, a);
  sample_hop(graph, 0, targets, 2, 3, options, 4, b);  // the whole graph is a slice too
  EXPECT_EQ(a.counts, b.counts);
  EXPECT_EQ(a.neighbors, b.neighbors);
  EXPECT_EQ(a.edge_ids, b.edge_ids);
  EXPECT_EQ(a.counts[1], a.counts[3]);  // the same target, the same picks
}

TEST(SampleHop, TargetsOutsideTheSliceAreRefusedWhateverTheFanout) {
  const Csr graph = hub_graph(300, 3000, false, 9);
  const Csr part = slice(graph, 100, 200);
  HopSample out;
  for (const int64_t fanout : {int64_t{5}, int64_t{0}, int64_t{-1}}) {
    for (const int64_t bad : {int64_t{99}, int64_t{200}, int64_t{-5}, int64_t{1} << 40}) {
      const std::vector<int64_t> targets = {150, bad};
      const std::string message = message_of<IndexError>(
          [&] { sample_hop(part, 100, targets, 0, fanout, {.seed = 1}, 0, out); });
      EXPECT_THAT(message, HasSubstr(std::to_string(bad))) << fanout;
      EXPECT_THAT(message, HasSubstr("[100, 200)"));
    }
  }
  EXPECT_THROW(sample_hop(part, 100, std::vector<int64_t>{150}, 0, -2, {}, 0, out), ValueError);
  EXPECT_THROW(sample_hop(part, 100, std::vector<int64_t>{150}, 256, 3, {}, 0, out), ValueError);
  EXPECT_THROW(sample_hop(part, 100, std::vector<int64_t>{150}, 0, 3, {.weighted = true}, 0, out),
               ValueError);
  // Fanout 0: nothing picked, one zero count per target.
  sample_hop(part, 100, std::vector<int64_t>{150, 199}, 0, 0, {}, 0, out);
  EXPECT_EQ(out.counts, (std::vector<int32_t>{0, 0}));
  EXPECT_TRUE(out.neighbors.empty());
}

}  // namespace
}  // namespace volley
