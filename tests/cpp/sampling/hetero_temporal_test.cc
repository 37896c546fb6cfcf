// Temporal and disjoint heterogeneous sampling (hetero_sampler.h): no sampled node or edge later
// than its seed, trees that are the samples of their seeds alone, the same result for any
// thread count, and errors that name the type.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "test_util.h"
#include "volley/sampling/hetero_sampler.h"

namespace volley {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kPapers = 80, kAuthors = 50, kVenues = 4;

std::vector<int64_t> uniform_ids(std::mt19937_64& rng, int64_t count, int64_t bound) {
  std::vector<int64_t> ids(static_cast<size_t>(count));
  for (auto& id : ids) id = static_cast<int64_t>(rng() % static_cast<uint64_t>(bound));
  return ids;
}

// paper <-> author, paper -> paper, venue <-> paper; four edges per destination node.
struct Fixture {
  HeteroGraph graph;
  std::vector<std::pair<EdgeType, std::vector<int64_t>>> edge_time;  // by edge id
  std::vector<int64_t> paper_time, author_time;                      // venues have none

  Fixture() {
    std::mt19937_64 rng(7);
    const std::vector<std::tuple<EdgeType, int64_t, int64_t>> types = {
        {{"author", "writes", "paper"}, kAuthors, kPapers},
        {{"paper", "rev_writes", "author"}, kPapers, kAuthors},
        {{"paper", "cites", "paper"}, kPapers, kPapers},
        {{"venue", "hosts", "paper"}, kVenues, kPapers},
        {{"paper", "in", "venue"}, kPapers, kVenues}};
    std::vector<std::pair<EdgeType, Csr>> edges;
    for (const auto& [type, num_src, num_dst] : types) {
      const int64_t count = 4 * num_dst;
      const auto src = uniform_ids(rng, count, num_src), dst = uniform_ids(rng, count, num_dst);
      edges.emplace_back(type, build_bipartite_csr(Array::from_vector(src), Array::from_vector(dst),
                                                   num_src, num_dst));
      edge_time.emplace_back(type, uniform_ids(rng, count, 100));
    }
    graph = HeteroGraph({{"paper", kPapers}, {"author", kAuthors}, {"venue", kVenues}},
                        std::move(edges));
    paper_time = uniform_ids(rng, kPapers, 1000);
    author_time = uniform_ids(rng, kAuthors, 1000);
  }

  HeteroTimes node_times() const {
    return {.node_time = {{"paper", Array::from_vector(paper_time)},
                          {"author", Array::from_vector(author_time)}}};
  }
  HeteroTimes edge_times() const {
    HeteroTimes times;
    for (const auto& [type, time] : edge_time) {
      times.edge_time.emplace_back(type, Array::from_vector(time));
    }
    return times;
  }
};

const Fixture& fixture() {
  static const Fixture f;
  return f;
}

// Every edge joins two nodes of the same tree; the seeds are trees 0, 1, ... in order.
void expect_trees(const HeteroGraph& graph, const HeteroSampledSubgraph& out, size_t seeds) {
  ASSERT_EQ(out.batch.size(), static_cast<size_t>(graph.num_node_types()));
  for (int t = 0; t < graph.num_node_types(); ++t) {
    EXPECT_EQ(out.batch[static_cast<size_t>(t)].size(), out.nodes[static_cast<size_t>(t)].size());
  }
  for (size_t i = 0; i < seeds; ++i) EXPECT_EQ(out.batch[0][i], static_cast<int64_t>(i));
  for (int e = 0; e < graph.num_edge_types(); ++e) {
    const EdgeType& type = graph.edge_types()[static_cast<size_t>(e)];
    const auto& src = out.batch[static_cast<size_t>(graph.node_type_index(type.src))];
    const auto& dst = out.batch[static_cast<size_t>(graph.node_type_index(type.dst))];
    for (size_t j = 0; j < out.rows[static_cast<size_t>(e)].size(); ++j) {
      EXPECT_EQ(src[static_cast<size_t>(out.cols[static_cast<size_t>(e)][j])],
                dst[static_cast<size_t>(out.rows[static_cast<size_t>(e)][j])])
          << type.name();
    }
  }
}

TEST(HeteroTemporalTest, NoNodeLaterThanItsSeedForEveryStrategy) {
  const Fixture& f = fixture();
  std::mt19937_64 rng(3);
  const auto seeds = uniform_ids(rng, 16, kPapers);  // repeats: each seed has its own tree
  const auto seed_times = uniform_ids(rng, 16, 1000);
  for (const auto strategy : {TemporalStrategy::kUniform, TemporalStrategy::kLast}) {
    for (const bool replace : {false, true}) {
      for (const bool disjoint : {false, true}) {
        HeteroSamplerOptions options{.fanouts = {3, 2, 2}, .replace = replace, .seed = 4};
        options.disjoint = disjoint;
        options.time_source = TimeSource::kNode;
        options.temporal_strategy = strategy;
        HeteroNeighborSampler sampler(f.graph, options, f.node_times());
        const auto out = sampler.sample({{"paper", seeds, seed_times}}, 2);
        expect_trees(f.graph, out, seeds.size());
        int64_t checked = 0;
        for (const auto& [type, time] :
             {std::pair{0, &f.paper_time}, std::pair{1, &f.author_time}}) {
          const auto& nodes = out.nodes[static_cast<size_t>(type)];
          for (size_t i = type == 0 ? seeds.size() : 0; i < nodes.size(); ++i, ++checked) {
            const int64_t tree = out.batch[static_cast<size_t>(type)][i];
            EXPECT_LE((*time)[static_cast<size_t>(nodes[i])],
                      seed_times[static_cast<size_t>(tree)]);
          }
        }
        EXPECT_GT(checked, 0);
        EXPECT_GT(out.nodes[2].size(), 0u);  // venues have no time: never constrained
      }
    }
  }
}

TEST(HeteroTemporalTest, NoEdgeLaterThanItsSeed) {
  const Fixture& f = fixture();
  const std::vector<int64_t> seeds = {1, 5, 9, 5, 30}, seed_times = {50, 10, 90, 70, 0};
  for (const auto strategy : {TemporalStrategy::kUniform, TemporalStrategy::kLast}) {
    HeteroSamplerOptions options{.fanouts = {-1, 3}, .seed = 1};
    options.time_source = TimeSource::kEdge;
    options.temporal_strategy = strategy;
    const auto out = sample_hetero_neighbors(f.graph, {{"paper", seeds, seed_times}}, options, 0,
                                             nullptr, f.edge_times());
    expect_trees(f.graph, out, seeds.size());
    int64_t checked = 0;
    for (int e = 0; e < f.graph.num_edge_types(); ++e) {
      const auto& time = f.edge_time[static_cast<size_t>(e)].second;
      const auto& dst_batch = out.batch[static_cast<size_t>(
          f.graph.node_type_index(f.graph.edge_types()[static_cast<size_t>(e)].dst))];
      for (size_t j = 0; j < out.edge_ids[static_cast<size_t>(e)].size(); ++j, ++checked) {
        const int64_t tree = dst_batch[static_cast<size_t>(out.rows[static_cast<size_t>(e)][j])];
        EXPECT_LE(time[static_cast<size_t>(out.edge_ids[static_cast<size_t>(e)][j])],
                  seed_times[static_cast<size_t>(tree)]);
      }
    }
    EXPECT_GT(checked, 0);
  }
}

TEST(HeteroTemporalTest, EachTreeIsTheSampleOfItsSeedAlone) {
  const Fixture& f = fixture();
  const std::vector<int64_t> seeds = {3, 17, 3, 40}, seed_times = {400, 900, 100, 600};
  for (const bool temporal : {false, true}) {
    HeteroSamplerOptions options{.fanouts = {3, 2}, .seed = 8};
    options.disjoint = true;
    if (temporal) options.time_source = TimeSource::kNode;
    const HeteroTimes times = temporal ? f.node_times() : HeteroTimes{};
    HeteroNeighborSampler sampler(f.graph, options, times);
    const std::span<const int64_t> all_times =
        temporal ? std::span<const int64_t>(seed_times) : std::span<const int64_t>();
    const auto out = sampler.sample({{"paper", seeds, all_times}}, 5);
    for (size_t tree = 0; tree < seeds.size(); ++tree) {
      const auto alone = sampler.sample(
          {{"paper", std::span(seeds).subspan(tree, 1),
            temporal ? std::span(seed_times).subspan(tree, 1) : std::span<const int64_t>()}},
          5);
      for (int t = 0; t < f.graph.num_node_types(); ++t) {
        std::vector<int64_t> in_tree;
        for (size_t i = 0; i < out.nodes[static_cast<size_t>(t)].size(); ++i) {
          if (out.batch[static_cast<size_t>(t)][i] == static_cast<int64_t>(tree))
            in_tree.push_back(out.nodes[static_cast<size_t>(t)][i]);
        }
        EXPECT_EQ(in_tree, alone.nodes[static_cast<size_t>(t)]) << tree << " " << t;
      }
    }
  }
}

TEST(HeteroTemporalTest, SameResultForAnyThreadCount) {
  const Fixture& f = fixture();
  HeteroSamplerOptions options{.fanouts = {4, 3}, .seed = 12};
  options.time_source = TimeSource::kNode;
  HeteroNeighborSampler sampler(f.graph, options, f.node_times());
  std::mt19937_64 rng(9);
  const auto seeds = uniform_ids(rng, 24, kPapers), times = uniform_ids(rng, 24, 1000);
  std::vector<HeteroSampledSubgraph> alone(8), together(8);
  for (size_t b = 0; b < alone.size(); ++b) alone[b] = sampler.sample({{"paper", seeds, times}}, b);
  std::vector<std::thread> threads;
  for (size_t b = 0; b < together.size(); ++b) {
    threads.emplace_back([&, b] { together[b] = sampler.sample({{"paper", seeds, times}}, b); });
  }
  for (auto& thread : threads) thread.join();
  for (size_t b = 0; b < alone.size(); ++b) {
    EXPECT_EQ(alone[b].nodes, together[b].nodes);
    EXPECT_EQ(alone[b].batch, together[b].batch);
    EXPECT_EQ(alone[b].edge_ids, together[b].edge_ids);
  }
}

TEST(HeteroTemporalTest, PreciseErrorsNamingTheType) {
  const Fixture& f = fixture();
  HeteroSamplerOptions by_node{.fanouts = {2}};
  by_node.time_source = TimeSource::kNode;
  const auto make = [&](const HeteroSamplerOptions& options, const HeteroTimes& times) {
    HeteroNeighborSampler sampler(f.graph, options, times);
  };
  HeteroTimes short_time = f.node_times();
  short_time.node_time[1].second = Array::from_vector(std::vector<int64_t>(3, 0));
  EXPECT_THAT(message_of<ValueError>([&] { make(by_node, short_time); }),
              HasSubstr("node time of node type 'author' must be a 1-d int64 array with one "
                        "entry per node (50), got int64[3]"));
  EXPECT_THAT(message_of<ValueError>([&] { make(by_node, {}); }),
              HasSubstr("needs the time of at least one node type"));
  EXPECT_THAT(message_of<ValueError>([&] { make({.fanouts = {2}}, f.node_times()); }),
              HasSubstr("times were given, but the options ask for no temporal sampling"));
  HeteroSamplerOptions weighted = by_node;
  weighted.weighted = true;
  EXPECT_THAT(message_of<ValueError>([&] { make(weighted, f.node_times()); }),
              HasSubstr("does not support weighted"));
  HeteroSamplerOptions by_edge{.fanouts = {2}};
  by_edge.time_source = TimeSource::kEdge;
  HeteroTimes wrong_edge = f.edge_times();
  wrong_edge.edge_time[2].second = Array::from_vector(std::vector<int64_t>(5, 0));
  EXPECT_THAT(message_of<ValueError>([&] { make(by_edge, wrong_edge); }),
              HasSubstr("edge time of edge type paper__cites__paper must be a 1-d int64 array "
                        "with one entry per edge (320)"));
  HeteroNeighborSampler edge_sampler(f.graph, by_edge, f.edge_times());
  const std::vector<int64_t> seeds = {1, 2}, one_time = {5};
  EXPECT_THAT(message_of<ValueError>([&] {
                edge_sampler.sample({{"paper", seeds}}, 0);
              }),
              HasSubstr("seeds of node type 'paper' need a time each"));
  EXPECT_THAT(message_of<ValueError>([&] {
                edge_sampler.sample({{"paper", seeds, one_time}}, 0);
              }),
              HasSubstr("seeds of node type 'paper': 1 times for 2 seeds"));
  HeteroNeighborSampler node_sampler(f.graph, by_node, f.node_times());
  EXPECT_THAT(message_of<ValueError>([&] {
                node_sampler.sample({{"venue", seeds}}, 0);
              }),
              HasSubstr("'venue' need a time each"));
}

}  // namespace
}  // namespace volley
