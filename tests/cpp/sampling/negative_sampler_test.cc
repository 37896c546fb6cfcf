// Negative sampling for link prediction (negative_sampler.h): determinism across thread counts,
// the distributions, exact rejection of existing edges, and the seed set of a link batch.
#include "volley/sampling/negative_sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "test_graphs.h"
#include "test_util.h"
#include "volley/core/error.h"
#include "volley/core/parallel.h"

namespace volley {
namespace {

// Sets the default pool's size; restores it when it goes.
struct ThreadCount {
  explicit ThreadCount(int n) : before(get_num_threads()) { set_num_threads(n); }
  ~ThreadCount() { set_num_threads(before); }
  int before;
};

TEST(NegativeSampler, PairsAreAPureFunctionOfSeedAndBatch) {
  const Csr graph = skewed_random_graph(500, 4000, 1);
  const NegativeSampler sampler(graph, {.reject_existing = true, .seed = 9});
  NegativePairs one, many;
  {
    ThreadCount threads(1);
    one = sampler.sample_pairs(5000, 3);
  }
  {
    ThreadCount threads(4);
    many = sampler.sample_pairs(5000, 3);
  }
  EXPECT_EQ(one.src, many.src);
  EXPECT_EQ(one.dst, many.dst);
  const NegativePairs other_batch = sampler.sample_pairs(5000, 4);
  EXPECT_NE(one.src, other_batch.src);
  const NegativeSampler other_seed(graph, {.reject_existing = true, .seed = 10});
  EXPECT_NE(one.dst, other_seed.sample_pairs(5000, 3).dst);
  // A shorter request is a prefix: negative i does not depend on how many were asked for.
  const NegativePairs prefix = sampler.sample_pairs(100, 3);
  EXPECT_TRUE(std::equal(prefix.src.begin(), prefix.src.end(), one.src.begin()));
}

TEST(NegativeSampler, RejectionLeavesNoExistingEdge) {
  const Csr graph = skewed_random_graph(300, 6000, 2);
  const NegativeSampler plain(graph, {.seed = 1});
  const NegativeSampler rejecting(graph, {.reject_existing = true, .max_draws = 64, .seed = 1});
  const NegativePairs drawn = plain.sample_pairs(20000, 0);
  int64_t hits = 0;
  for (size_t i = 0; i < drawn.src.size(); ++i) hits += plain.has_edge(drawn.src[i], drawn.dst[i]);
  EXPECT_GT(hits, 0);  // the check below can fail: without rejection some negatives are edges
  const NegativePairs clean = rejecting.sample_pairs(20000, 0);
  EXPECT_EQ(clean.kept_existing, 0);
  for (size_t i = 0; i < clean.src.size(); ++i) {
    EXPECT_FALSE(rejecting.has_edge(clean.src[i], clean.dst[i])) << i;
  }
}

TEST(NegativeSampler, HasEdgeFollowsTheOrientationAndUnsortedRows) {
  // Edges 0->1, 2->1, 1->3 in the default (in-neighbor) orientation.
  const Csr in =
      build_csr(Array::from_vector(std::vector<int64_t>{0, 2, 1}),
                Array::from_vector(std::vector<int64_t>{1, 1, 3}), std::nullopt, {.num_nodes = 4});
  const NegativeSampler sampler(in, {.reject_existing = true});
  EXPECT_TRUE(sampler.has_edge(0, 1));
  EXPECT_TRUE(sampler.has_edge(2, 1));
  EXPECT_TRUE(sampler.has_edge(1, 3));
  EXPECT_FALSE(sampler.has_edge(1, 0));
  EXPECT_FALSE(sampler.has_edge(3, 1));
  const NegativeSampler out(in.transposed(), {.reject_existing = true});
  EXPECT_EQ(in.transposed().orientation(), Orientation::kOut);
  EXPECT_TRUE(out.has_edge(0, 1));
  EXPECT_FALSE(out.has_edge(1, 0));
  // Row 1 holds {2, 0}: unsorted, found by a scan.
  const Csr unsorted = Csr::from_arrays(Array::from_vector(std::vector<int64_t>{0, 0, 2, 2, 3}),
                                        Array::from_vector(std::vector<int32_t>{2, 0, 1}));
  const NegativeSampler scan(unsorted, {.reject_existing = true});
  EXPECT_TRUE(scan.has_edge(0, 1));
  EXPECT_TRUE(scan.has_edge(2, 1));
  EXPECT_FALSE(scan.has_edge(3, 1));
}

TEST(NegativeSampler, DegreeDistributionFollowsDegreeToThePower) {
  // Node 0 has in-degree 16, node 1 in-degree 1, nodes 2.. none.
  std::vector<int64_t> src, dst;
  for (int64_t i = 0; i < 16; ++i) src.push_back(2 + i), dst.push_back(0);
  src.push_back(2), dst.push_back(1);
  const Csr graph =
      build_csr(Array::from_vector(src), Array::from_vector(dst), std::nullopt, {.num_nodes = 20});
  const NegativeSampler sampler(
      graph, {.distribution = NegativeDistribution::kDegree, .degree_power = 0.5, .seed = 3});
  const NegativePairs drawn = sampler.sample_pairs(40000, 0);
  int64_t zero = 0, one = 0;
  for (const int64_t d : drawn.dst) {
    ASSERT_TRUE(d == 0 || d == 1) << d;  // degree-0 nodes are never drawn
    (d == 0 ? zero : one) += 1;
  }
  // P(0) = 16^0.5 / (16^0.5 + 1) = 0.8.
  EXPECT_NEAR(static_cast<double>(zero) / 40000, 0.8, 0.01);
}

TEST(NegativeSampler, WeightsPickOnlyPositiveMass) {
  const Csr graph = skewed_random_graph(10, 30, 4);
  std::vector<double> weights(10, 0.0);
  weights[7] = 1.0;
  weights[3] = 3.0;
  const NegativeSampler sampler(
      graph, {.distribution = NegativeDistribution::kWeights, .weights = weights, .seed = 5});
  const NegativePairs drawn = sampler.sample_pairs(20000, 1);
  int64_t threes = 0;
  for (const int64_t s : drawn.src) {
    ASSERT_TRUE(s == 3 || s == 7) << s;
    threes += s == 3;
  }
  EXPECT_NEAR(static_cast<double>(threes) / 20000, 0.75, 0.015);
}

TEST(NegativeSampler, TripletDestinationsAvoidTheirSourcesEdges) {
  const Csr graph = skewed_random_graph(200, 3000, 6);
  const NegativeSampler sampler(graph, {.reject_existing = true, .max_draws = 64, .seed = 2});
  const std::vector<int64_t> sources = {0, 5, 199, 5};
  const NegativeDestinations drawn = sampler.sample_destinations(sources, 50, 7);
  ASSERT_EQ(drawn.dst.size(), 200u);
  EXPECT_EQ(drawn.kept_existing, 0);
  for (size_t i = 0; i < drawn.dst.size(); ++i) {
    EXPECT_FALSE(sampler.has_edge(sources[i / 50], drawn.dst[i])) << i;
  }
  EXPECT_EQ(sampler.sample_destinations(sources, 50, 7).dst, drawn.dst);
  EXPECT_TRUE(sampler.sample_destinations({}, 5, 0).dst.empty());
}

TEST(NegativeSampler, AnImpossibleRejectionIsCountedNotLooped) {
  // Node 0 is linked from every node (self loop included): no negative (s, 0) exists, and with
  // one destination in the distribution every draw is an edge.
  std::vector<int64_t> src = {0, 1, 2}, dst = {0, 0, 0};
  const Csr graph =
      build_csr(Array::from_vector(src), Array::from_vector(dst), std::nullopt, {.num_nodes = 3});
  std::vector<double> weights = {1.0, 0.0, 0.0};
  const NegativeSampler sampler(graph, {.distribution = NegativeDistribution::kWeights,
                                        .weights = weights,
                                        .reject_existing = true,
                                        .max_draws = 4});
  const NegativeDestinations drawn = sampler.sample_destinations(std::vector<int64_t>{1, 2}, 3, 0);
  EXPECT_EQ(drawn.kept_existing, 6);
  for (const int64_t d : drawn.dst) EXPECT_EQ(d, 0);
}

// Temporal link sampling (PyG's neg_sample with node_time): a bounded negative is never later
// than its bound, the restricted draw still covers every early-enough node, the earliest node
// stands in when none is early enough, and unbounded draws are those of a sampler without times.
TEST(NegativeSampler, TimeBoundsKeepNegativesNoLaterThanTheirBound) {
  const Csr graph = skewed_random_graph(200, 2000, 6);
  std::vector<int64_t> node_time(200);
  for (int64_t v = 0; v < 200; ++v) node_time[v] = (v * 37) % 200 + 10;  // a permutation + 10
  const std::vector<int64_t> sources = {3, 17, 150, 199};
  const std::vector<int64_t> bounds = {10, 60, 300, 5};  // one node, 51 nodes, all, none
  std::vector<double> weights(200, 1.0);
  weights[(50 * 173) % 200] = 0.0;  // zero mass on the node of time 60 (37 * 173 = 1 mod 200)
  for (const auto kind : {NegativeDistribution::kUniform, NegativeDistribution::kWeights}) {
    const bool weighted = kind == NegativeDistribution::kWeights;
    const NegativeSampler timed(graph, {.distribution = kind,
                                        .weights = weighted ? weights : std::vector<double>{},
                                        .seed = 4,
                                        .node_time = node_time});
    const NegativeDestinations drawn = timed.sample_destinations(sources, 2000, 1, bounds);
    std::vector<std::set<int64_t>> seen(sources.size());
    for (size_t i = 0; i < drawn.dst.size(); ++i) seen[i / 2000].insert(drawn.dst[i]);
    EXPECT_EQ(seen[0], (std::set<int64_t>{0}));  // the only node of time 10
    for (const int64_t v : seen[1]) EXPECT_LE(node_time[v], 60) << v;
    EXPECT_EQ(seen[1].size(), weighted ? 50u : 51u);  // every early node, the massless one not
    EXPECT_GT(seen[2].size(), 150u);
    EXPECT_EQ(seen[3], (std::set<int64_t>{0}));  // none early enough: the earliest node
    const NegativePairs pairs = timed.sample_pairs(2000, 2, std::vector<int64_t>(2000, 40));
    for (size_t i = 0; i < pairs.src.size(); ++i) {
      EXPECT_LE(node_time[pairs.src[i]], 40);
      EXPECT_LE(node_time[pairs.dst[i]], 40);
    }
    const NegativeSampler untimed(
        graph,
        {.distribution = kind, .weights = weighted ? weights : std::vector<double>{}, .seed = 4});
    EXPECT_EQ(timed.sample_pairs(500, 3).dst, untimed.sample_pairs(500, 3).dst);
    EXPECT_EQ(timed.reseeded(5).sample_pairs(500, 3).dst,
              NegativeSampler(graph, {.distribution = kind,
                                      .weights = weighted ? weights : std::vector<double>{},
                                      .seed = 5})
                  .sample_pairs(500, 3)
                  .dst);
  }
  const NegativeSampler untimed(graph, {.seed = 4});
  EXPECT_NE(message_of<ValueError>([&] {
              untimed.sample_pairs(2, 0, std::vector<int64_t>{1, 2});
            }).find("time bounds need options.node_time"),
            std::string::npos);
  const NegativeSampler timed(graph, {.node_time = node_time});
  EXPECT_NE(message_of<ValueError>([&] {
              timed.sample_destinations(sources, 2, 0, std::vector<int64_t>{1, 2});
            }).find("got 2 time bounds, expected 4"),
            std::string::npos);
  EXPECT_NE(message_of<ValueError>([&] {
              NegativeSampler(graph, {.node_time = std::vector<int64_t>(7, 0)});
            }).find("node_time has 7 entries; the graph has 200 nodes"),
            std::string::npos);
}

TEST(NegativeSampler, BadOptionsAndIdsNameTheValue) {
  const Csr graph = skewed_random_graph(10, 30, 4);
  EXPECT_NE(message_of<ValueError>([&] {
              NegativeSampler(graph, {.max_draws = 0});
            }).find("max_draws must be at least 1, got 0"),
            std::string::npos);
  EXPECT_NE(message_of<ValueError>([&] {
              NegativeSampler(graph, {.distribution = NegativeDistribution::kWeights,
                                      .weights = std::vector<double>(3, 1.0)});
            }).find("3 entries; the graph has 10 nodes"),
            std::string::npos);
  std::vector<double> bad(10, 1.0);
  bad[4] = -1;
  EXPECT_NE(message_of<ValueError>([&] {
              NegativeSampler(graph,
                              {.distribution = NegativeDistribution::kWeights, .weights = bad});
            }).find("weight -1 of node 4"),
            std::string::npos);
  EXPECT_NE(message_of<ValueError>([&] {
              NegativeSampler(graph, {.distribution = NegativeDistribution::kWeights,
                                      .weights = std::vector<double>(10, 0.0)});
            }).find("no node to draw"),
            std::string::npos);
  EXPECT_NE(message_of<ValueError>([&] {
              NegativeSampler(graph, {.weights = std::vector<double>(10, 1.0)});
            }).find("not kWeights"),
            std::string::npos);
  EXPECT_NE(message_of<ValueError>([&] {
              NegativeSampler(graph,
                              {.distribution = NegativeDistribution::kDegree, .degree_power = NAN});
            }).find("degree_power must be finite"),
            std::string::npos);
  const NegativeSampler sampler(graph, {});
  EXPECT_NE(message_of<IndexError>([&] { sampler.has_edge(3, 10); }).find("(3, 10)"),
            std::string::npos);
  EXPECT_NE(message_of<ValueError>([&] { sampler.sample_pairs(-1, 0); }).find("got -1"),
            std::string::npos);
  EXPECT_NE(message_of<IndexError>([&] {
              sampler.sample_destinations(std::vector<int64_t>{1, 10}, 2, 0);
            }).find("source id 10 at position 1"),
            std::string::npos);
}

TEST(NegativeSampler, BatchedOracleDrawsWhatTheGraphDrawsInRounds) {
  const Csr graph = skewed_random_graph(200, 6000, 4);
  std::vector<int64_t> degrees(200);
  for (int64_t v = 0; v < 200; ++v) degrees[v] = graph.degree(v);
  for (const auto distribution : {NegativeDistribution::kUniform, NegativeDistribution::kDegree}) {
    const NegativeSamplerOptions options{
        .distribution = distribution, .reject_existing = true, .max_draws = 5, .seed = 3};
    const NegativeSampler by_graph(graph, options);
    int calls = 0;
    size_t largest = 0;
    const EdgeOracle oracle = [&](std::span<const int64_t> src, std::span<const int64_t> dst,
                                  uint8_t* out) {
      ++calls;
      largest = std::max(largest, src.size());
      csr_has_edges(graph, csr_rows_sorted(graph), src, dst, out);
    };
    const NegativeSampler by_oracle(200, degrees, oracle, options);
    const NegativePairs expected = by_graph.sample_pairs(3000, 7);
    const NegativePairs got = by_oracle.sample_pairs(3000, 7);
    EXPECT_EQ(got.src, expected.src);
    EXPECT_EQ(got.dst, expected.dst);
    EXPECT_EQ(got.kept_existing, expected.kept_existing);
    EXPECT_GT(calls, 1);  // some negatives were redrawn ...
    EXPECT_LE(calls, 5);  // ... in at most max_draws batched calls
    EXPECT_EQ(largest, 3000u);
    const std::vector<int64_t> sources = {0, 5, 199, 5};
    EXPECT_EQ(by_oracle.sample_destinations(sources, 9, 2).dst,
              by_graph.sample_destinations(sources, 9, 2).dst);
    EXPECT_TRUE(by_oracle.has_edge(graph.neighbor(graph.begin(7)), 7));  // in-neighbor CSR
  }
  EXPECT_NE(message_of<ValueError>([&] {
              NegativeSampler(200, {}, nullptr, {.reject_existing = true});
            }).find("needs an edge check"),
            std::string::npos);
  EXPECT_NE(message_of<ValueError>([&] {
              NegativeSampler(200, std::vector<int64_t>(3, 1), nullptr,
                              {.distribution = NegativeDistribution::kDegree});
            }).find("needs 200 node degrees"),
            std::string::npos);
}

TEST(LinkSeeds, SortedDistinctNodesAndLocalIndices) {
  const std::vector<int64_t> src = {5, 2, 5}, dst = {2, 9, 7}, neg = {9, 0};
  const std::span<const int64_t> arrays[] = {src, dst, neg};
  const LinkSeeds seeds = link_seeds(arrays);
  EXPECT_EQ(seeds.nodes, (std::vector<int64_t>{0, 2, 5, 7, 9}));
  ASSERT_EQ(seeds.local.size(), 3u);
  EXPECT_EQ(seeds.local[0], (std::vector<int64_t>{2, 1, 2}));
  EXPECT_EQ(seeds.local[1], (std::vector<int64_t>{1, 4, 3}));
  EXPECT_EQ(seeds.local[2], (std::vector<int64_t>{4, 0}));
  const std::vector<int64_t> bad = {1, -3};
  const std::span<const int64_t> with_bad[] = {src, bad};
  EXPECT_NE(message_of<IndexError>([&] {
              link_seeds(with_bad);
            }).find("node id -3 at position 1 of id array 1"),
            std::string::npos);
}

}  // namespace
}  // namespace volley
