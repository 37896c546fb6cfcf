// Negative sampling over typed edges (negative_sampler.h, "Typed edges"): each end draws from its
// own node type, with its own degrees, weights and node times; one node set at both ends is the
// homogeneous sampler, draw for draw.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <vector>

#include "test_graphs.h"
#include "test_util.h"
#include "volley/core/error.h"
#include "volley/sampling/negative_sampler.h"

namespace volley {
namespace {

const EdgeType kWrites{"author", "writes", "paper"};

TEST(TypedNegatives, OneNodeSetAtBothEndsIsTheHomogeneousSampler) {
  const Csr graph = skewed_random_graph(300, 3000, 4);
  std::vector<int64_t> degrees(300);
  for (int64_t v = 0; v < 300; ++v) degrees[v] = graph.degree(v);
  const bool sorted = csr_rows_sorted(graph);
  const EdgeOracle oracle = [&](std::span<const int64_t> s, std::span<const int64_t> d,
                                uint8_t* out) { csr_has_edges(graph, sorted, s, d, out); };
  std::vector<int64_t> time(300);
  for (int64_t v = 0; v < 300; ++v) time[v] = (v * 37) % 50;
  for (const auto kind : {NegativeDistribution::kUniform, NegativeDistribution::kDegree}) {
    NegativeSamplerOptions options{.distribution = kind, .reject_existing = true, .seed = 3};
    const NegativeNodes nodes{.num_nodes = 300, .degrees = degrees, .node_time = time};
    const NegativeSampler typed(nodes, nodes, oracle, options);
    options.node_time = time;
    const NegativeSampler plain(300, degrees, oracle, options);
    const NegativePairs a = typed.sample_pairs(2000, 5), b = plain.sample_pairs(2000, 5);
    EXPECT_EQ(a.src, b.src);
    EXPECT_EQ(a.dst, b.dst);
    EXPECT_EQ(a.kept_existing, b.kept_existing);
    const std::vector<int64_t> sources = {0, 7, 299}, bounds = {3, 20, 49};
    EXPECT_EQ(typed.sample_destinations(sources, 4, 1, bounds).dst,
              plain.sample_destinations(sources, 4, 1, bounds).dst);
  }
}

TEST(TypedNegatives, EachEndDrawsFromItsOwnTypeAndNoneIsAnEdge) {
  const HeteroGraph& graph = small_mag();
  const int64_t authors = graph.num_nodes("author"), papers = graph.num_nodes("paper");
  ASSERT_NE(authors, papers);
  const NegativeSampler sampler = edge_type_negatives(
      graph, kWrites, {}, {}, {.reject_existing = true, .max_draws = 64, .seed = 1});
  const NegativePairs pairs = sampler.sample_pairs(20000, 2);
  EXPECT_EQ(pairs.kept_existing, 0);
  const Csr& writes = graph.edges(kWrites);
  for (size_t i = 0; i < pairs.src.size(); ++i) {
    ASSERT_GE(pairs.src[i], 0);
    ASSERT_LT(pairs.src[i], authors);
    ASSERT_GE(pairs.dst[i], 0);
    ASSERT_LT(pairs.dst[i], papers);
    for (int64_t k = writes.begin(pairs.dst[i]); k < writes.end(pairs.dst[i]); ++k) {
      ASSERT_NE(writes.neighbor(k), pairs.src[i]) << "negative " << i << " is an edge";
    }
  }
  // Without rejection some are edges, so the check above can fail.
  const NegativeSampler plain = edge_type_negatives(graph, kWrites, {}, {}, {.seed = 1});
  const NegativePairs loose = plain.sample_pairs(20000, 2);
  int64_t edges = 0;
  for (size_t i = 0; i < loose.src.size(); ++i) edges += plain.has_edge(loose.src[i], loose.dst[i]);
  EXPECT_GT(edges, 0);
  EXPECT_NE(message_of<IndexError>([&] {
              plain.has_edge(authors, 0);
            }).find("sources in [0, " + std::to_string(authors) + ")"),
            std::string::npos);
}

TEST(TypedNegatives, DegreesAreOutDegreesOfSourcesAndInDegreesOfDestinations) {
  const HeteroGraph& graph = small_mag();
  const Csr& writes = graph.edges(kWrites);
  std::vector<int64_t> out_degree(static_cast<size_t>(graph.num_nodes("author")));
  for (int64_t v = 0; v < writes.num_nodes(); ++v) {
    for (int64_t k = writes.begin(v); k < writes.end(v); ++k) ++out_degree[writes.neighbor(k)];
  }
  ASSERT_NE(std::count(out_degree.begin(), out_degree.end(), 0), 0);
  const NegativeSampler sampler = edge_type_negatives(
      graph, kWrites, {}, {}, {.distribution = NegativeDistribution::kDegree, .seed = 2});
  const NegativePairs pairs = sampler.sample_pairs(20000, 0);
  for (size_t i = 0; i < pairs.src.size(); ++i) {
    ASSERT_GT(out_degree[pairs.src[i]], 0) << "author " << pairs.src[i] << " writes nothing";
    ASSERT_GT(writes.degree(pairs.dst[i]), 0) << "paper " << pairs.dst[i] << " has no author";
  }
}

TEST(TypedNegatives, WeightsAndTimesBelongToTheirEnd) {
  std::vector<double> src_weights(50, 0.0);
  src_weights[7] = 1.0;  // every source is 7; destinations uniform (no weights)
  std::vector<int64_t> dst_time(80);
  for (int64_t v = 0; v < 80; ++v) dst_time[v] = v;
  const NegativeSampler sampler({.num_nodes = 50, .weights = src_weights},
                                {.num_nodes = 80, .node_time = dst_time}, nullptr,
                                {.distribution = NegativeDistribution::kWeights, .seed = 5});
  const std::vector<int64_t> bounds(4000, 9);
  const NegativePairs pairs = sampler.sample_pairs(4000, 1, bounds);
  EXPECT_EQ(std::set<int64_t>(pairs.src.begin(), pairs.src.end()), std::set<int64_t>{7});
  const std::set<int64_t> dst(pairs.dst.begin(), pairs.dst.end());
  EXPECT_EQ(dst.size(), 10u);  // destinations 0..9: no later than the bound, all drawn
  EXPECT_EQ(*dst.rbegin(), 9);
  const NegativePairs free = sampler.sample_pairs(4000, 1);
  EXPECT_GT(*std::max_element(free.dst.begin(), free.dst.end()), 9);  // unbounded without bounds
}

TEST(TypedNegatives, ErrorsNameTheEnd) {
  const auto typed = [](NegativeNodes src, NegativeNodes dst, NegativeSamplerOptions options) {
    NegativeSampler(std::move(src), std::move(dst), nullptr, std::move(options));
  };
  EXPECT_NE(message_of<ValueError>([&] {
              typed({.num_nodes = 5}, {.num_nodes = 4, .weights = {1, 2}},
                    {.distribution = NegativeDistribution::kWeights});
            }).find("weights have 2 entries; the destination type has 4 nodes"),
            std::string::npos);
  EXPECT_NE(message_of<ValueError>([&] {
              typed({.num_nodes = 0}, {.num_nodes = 4}, {});
            }).find("needs the source type with at least one node, got 0"),
            std::string::npos);
  EXPECT_NE(message_of<ValueError>([&] {
              typed({.num_nodes = 5}, {.num_nodes = 4}, {.weights = {1, 1, 1, 1, 1}});
            }).find("takes weights and node times per end"),
            std::string::npos);
  EXPECT_NE(message_of<ValueError>([&] {
              typed({.num_nodes = 5, .weights = {0, 0, 0, 0, 0}}, {.num_nodes = 4},
                    {.distribution = NegativeDistribution::kWeights});
            }).find("the weight of every node of the source type is 0"),
            std::string::npos);
  EXPECT_NE(
      message_of<ValueError>([&] {
        const std::vector<int64_t> bounds = {1, 2};
        NegativeSampler({.num_nodes = 5}, {.num_nodes = 4}, nullptr, {}).sample_pairs(2, 0, bounds);
      }).find("time bounds need options.node_time"),
      std::string::npos);
  EXPECT_NE(message_of<ValueError>([&] {
              edge_type_negatives(small_mag(), {"author", "writes", "nobody"}, {}, {}, {});
            }).find("nobody"),
            std::string::npos);
}

}  // namespace
}  // namespace volley
