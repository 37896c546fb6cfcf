#include "volley/sampling/hetero_sampler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <thread>

#include "test_graphs.h"
#include "test_util.h"
#include "volley/core/parallel.h"
#include "volley/graph/generate_hetero.h"

namespace volley {
namespace {

using ::testing::HasSubstr;

const HeteroGraph& mag() { return small_mag(); }

std::vector<int64_t> first_papers(int64_t count, int64_t step) {
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < count; ++i) ids.push_back(i * step % 2000);
  return ids;
}

// Every edge exists in its type with its edge id; local ids in range; each target expanded at
// one hop only, with at most its fanout of picks per hop (exactly min(fanout, degree) without
// replacement); nodes distinct per type, seeds first.
void check_batch(const HeteroGraph& graph, const HeteroSampledSubgraph& batch,
                 const std::vector<std::vector<int64_t>>& fanouts, bool replace,
                 const std::vector<int64_t>& seeds, int seed_type) {
  for (int t = 0; t < graph.num_node_types(); ++t) {
    const auto& nodes = batch.nodes[static_cast<size_t>(t)];
    EXPECT_EQ(std::set<int64_t>(nodes.begin(), nodes.end()).size(), nodes.size());
    int64_t sum = 0;
    for (int64_t count : batch.nodes_per_hop[static_cast<size_t>(t)]) sum += count;
    EXPECT_EQ(sum, static_cast<int64_t>(nodes.size()));
  }
  const auto& seed_list = batch.nodes[static_cast<size_t>(seed_type)];
  ASSERT_GE(seed_list.size(), seeds.size());
  EXPECT_TRUE(std::equal(seeds.begin(), seeds.end(), seed_list.begin()));
  for (int e = 0; e < graph.num_edge_types(); ++e) {
    const EdgeType& type = graph.edge_types()[static_cast<size_t>(e)];
    const Csr& csr = graph.edges(e);
    const auto& src_nodes = batch.nodes[static_cast<size_t>(graph.node_type_index(type.src))];
    const auto& dst_nodes = batch.nodes[static_cast<size_t>(graph.node_type_index(type.dst))];
    const auto& rows = batch.rows[static_cast<size_t>(e)];
    const auto& cols = batch.cols[static_cast<size_t>(e)];
    const auto& eids = batch.edge_ids[static_cast<size_t>(e)];
    std::map<int64_t, int> hop_of_target;
    size_t j = 0;
    for (size_t hop = 0; hop < batch.edges_per_hop[static_cast<size_t>(e)].size(); ++hop) {
      std::map<int64_t, int64_t> picks;
      for (int64_t n = 0; n < batch.edges_per_hop[static_cast<size_t>(e)][hop]; ++n, ++j) {
        ASSERT_LT(rows[j], static_cast<int64_t>(dst_nodes.size())) << type.name();
        ASSERT_LT(cols[j], static_cast<int64_t>(src_nodes.size())) << type.name();
        const int64_t dst = dst_nodes[static_cast<size_t>(rows[j])];
        const int64_t src = src_nodes[static_cast<size_t>(cols[j])];
        bool found = false;
        for (int64_t k = csr.begin(dst); k < csr.end(dst) && !found; ++k) {
          found = csr.neighbor(k) == src && csr.edge_id(k) == eids[j];
        }
        EXPECT_TRUE(found) << type.name() << " edge " << src << "->" << dst << " id " << eids[j];
        ++picks[rows[j]];
        const auto [it, fresh] = hop_of_target.emplace(rows[j], static_cast<int>(hop));
        EXPECT_EQ(it->second, static_cast<int>(hop)) << "target expanded twice";
      }
      const int64_t fanout = fanouts[static_cast<size_t>(e)][hop];
      for (const auto& [row, count] : picks) {
        const int64_t degree = csr.degree(dst_nodes[static_cast<size_t>(row)]);
        if (fanout == -1) {
          EXPECT_EQ(count, degree);
        } else if (!replace) {
          EXPECT_EQ(count, std::min(fanout, degree)) << type.name();
        } else {
          EXPECT_EQ(count, fanout);
        }
      }
    }
    EXPECT_EQ(j, rows.size());
  }
}

TEST(HeteroSamplerTest, EdgesExistFanoutsRespectedPerType) {
  const HeteroGraph& graph = mag();
  HeteroSamplerOptions options{.fanouts = {4, 3}, .seed = 7};
  options.fanouts_by_type = {{{"author", "writes", "paper"}, {2, -1}},
                             {{"paper", "cites", "paper"}, {0, 5}}};
  const auto seeds = first_papers(64, 31);
  const HeteroSampledSubgraph batch =
      sample_hetero_neighbors(graph, {{"paper", seeds}}, options, 3);
  const auto fanouts = resolve_hetero_fanouts(graph, options);
  EXPECT_EQ(fanouts[static_cast<size_t>(graph.edge_type_index({"paper", "cites", "paper"}))],
            (std::vector<int64_t>{0, 5}));
  check_batch(graph, batch, fanouts, false, seeds, graph.node_type_index("paper"));
  EXPECT_EQ(batch.num_seeds[static_cast<size_t>(graph.node_type_index("paper"))], 64);
  EXPECT_EQ(batch.edges_per_hop[static_cast<size_t>(
                graph.edge_type_index({"paper", "cites", "paper"}))][0],
            0);
  EXPECT_GT(batch.nodes[static_cast<size_t>(graph.node_type_index("institution"))].size(), 0u);

  HeteroSamplerOptions with_replacement{.fanouts = {3, 2}, .replace = true, .seed = 1};
  const auto again = sample_hetero_neighbors(graph, {{"paper", seeds}}, with_replacement, 0);
  check_batch(graph, again, resolve_hetero_fanouts(graph, with_replacement), true, seeds,
              graph.node_type_index("paper"));
}

TEST(HeteroSamplerTest, PureFunctionOfBatchAndSameForAnyThreadCount) {
  const HeteroGraph& graph = mag();
  HeteroNeighborSampler sampler(graph, {.fanouts = {5, 5}, .seed = 11});
  const auto seeds = first_papers(100, 7);
  const int pool_size = get_num_threads();
  set_num_threads(1);
  const auto one = sampler.sample({{"paper", seeds}}, 5);
  set_num_threads(4);
  const auto four = sampler.sample({{"paper", seeds}}, 5);
  set_num_threads(pool_size);
  EXPECT_EQ(one.nodes, four.nodes);
  EXPECT_EQ(one.rows, four.rows);
  EXPECT_EQ(one.cols, four.cols);
  EXPECT_EQ(one.edge_ids, four.edge_ids);
  // Concurrent callers (a busy scratch makes a fresh one) get the same batches.
  std::vector<HeteroSampledSubgraph> results(4);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < results.size(); ++i) {
    threads.emplace_back([&, i] { results[i] = sampler.sample({{"paper", seeds}}, 5); });
  }
  for (auto& thread : threads) thread.join();
  for (const auto& result : results) {
    EXPECT_EQ(result.nodes, one.nodes);
    EXPECT_EQ(result.edge_ids, one.edge_ids);
  }
  const auto other = sampler.sample({{"paper", seeds}}, 6);
  EXPECT_NE(other.edge_ids, one.edge_ids);
}

TEST(HeteroSamplerTest, WeightedNeverPicksZeroWeight) {
  // One paper type, cites with weights: odd sources weigh 0.
  const int64_t n = 50;
  std::vector<int64_t> src, dst;
  std::vector<float> weight;
  for (int64_t v = 0; v < n; ++v) {
    for (int64_t u = 0; u < n; u += 3) {
      src.push_back(u);
      dst.push_back(v);
      weight.push_back(u % 2 == 0 ? 1.0f : 0.0f);
    }
  }
  const Csr cites = build_bipartite_csr(Array::from_vector(src), Array::from_vector(dst), n, n,
                                        Array::from_vector(weight));
  const HeteroGraph graph({{"paper", n}}, {{{"paper", "cites", "paper"}, cites}});
  for (bool replace : {false, true}) {
    HeteroSamplerOptions options{.fanouts = {4}, .replace = replace, .weighted = true};
    const auto batch = sample_hetero_neighbors(graph, {{"paper", first_papers(10, 3)}}, options, 0);
    ASSERT_FALSE(batch.cols[0].empty());
    for (int64_t col : batch.cols[0]) EXPECT_EQ(batch.nodes[0][static_cast<size_t>(col)] % 2, 0);
  }
}

TEST(HeteroSamplerTest, NoHopsGiveTheSeedsAlone) {
  // PyG's num_neighbors=[]: no fanouts at all, or an empty list per edge type.
  const HeteroGraph& graph = mag();
  const std::vector<int64_t> papers = {3, 1, 4};
  const auto paper = static_cast<size_t>(graph.node_type_index("paper"));
  for (const bool disjoint : {false, true}) {
    for (const bool per_type : {false, true}) {
      HeteroSamplerOptions options;
      options.disjoint = disjoint;
      if (per_type) {
        for (const EdgeType& type : graph.edge_types())
          options.fanouts_by_type.push_back({type, {}});
      }
      const HeteroSampledSubgraph out =
          sample_hetero_neighbors(graph, {{"paper", papers}}, options, 0);
      for (size_t t = 0; t < out.nodes.size(); ++t) {
        const std::vector<int64_t> want = t == paper ? papers : std::vector<int64_t>{};
        EXPECT_EQ(out.nodes[t], want);
        EXPECT_EQ(out.nodes_per_hop[t], std::vector<int64_t>{static_cast<int64_t>(want.size())});
      }
      EXPECT_EQ(out.total_edges(), 0);
      for (const auto& counts : out.edges_per_hop) EXPECT_TRUE(counts.empty());
      if (disjoint) EXPECT_EQ(out.batch[paper], (std::vector<int64_t>{0, 1, 2}));
    }
  }
}

TEST(HeteroSamplerTest, PreciseErrorsNamingTheType) {
  const HeteroGraph& graph = mag();
  const std::vector<int64_t> seeds = {0, 1};
  auto sample = [&](const HeteroSamplerOptions& options, std::vector<HeteroSeeds> groups) {
    return sample_hetero_neighbors(graph, groups, options, 0);
  };
  HeteroSamplerOptions missing;
  missing.fanouts_by_type = {{{"author", "writes", "paper"}, {2}}};
  EXPECT_THAT(message_of<ValueError>([&] {
                sample(missing, {{"paper", seeds}});
              }),
              HasSubstr("no fanouts for edge type paper__rev_writes__author"));
  HeteroSamplerOptions unknown{.fanouts = {2}};
  unknown.fanouts_by_type = {{{"paper", "writes", "author"}, {2}}};
  EXPECT_THAT(message_of<ValueError>([&] {
                sample(unknown, {{"paper", seeds}});
              }),
              HasSubstr("fanouts for edge type paper__writes__author, which the graph does not "
                        "have (edge types: author__writes__paper"));
  HeteroSamplerOptions uneven{.fanouts = {2, 2}};
  uneven.fanouts_by_type = {{{"author", "writes", "paper"}, {2}}};
  EXPECT_THAT(message_of<ValueError>([&] {
                sample(uneven, {{"paper", seeds}});
              }),
              HasSubstr("hops must be the same across all edge types"));
  EXPECT_THAT(message_of<ValueError>([&] {
                sample({.fanouts = {-2}}, {{"paper", seeds}});
              }),
              HasSubstr("fanout -2 at hop 0 must be >= -1"));
  // One options struct for both kinds: what only the other kind takes is refused by name.
  EXPECT_THAT(
      message_of<ValueError>([&] {
        sample({.fanouts = {2}, .subgraph_type = SubgraphType::kInduced}, {{"paper", seeds}});
      }),
      HasSubstr("the typed sampler returns the sampled edges"));
  EXPECT_THAT(message_of<ValueError>([&] {
                sample_neighbors(skewed_random_graph(10, 20, 1), std::vector<int64_t>{0}, missing,
                                 0);
              }),
              HasSubstr("fanouts per edge type (1 given, e.g. author__writes__paper) need a "
                        "heterogeneous graph"));
  const HeteroSamplerOptions ok{.fanouts = {2}};
  EXPECT_THAT(message_of<ValueError>([&] {
                sample(ok, {{"venue", seeds}});
              }),
              HasSubstr("unknown node type 'venue' (node types: paper, author, institution, "
                        "field_of_study)"));
  const std::vector<int64_t> far = {0, 2000};
  EXPECT_THAT(message_of<IndexError>([&] {
                sample(ok, {{"paper", far}});
              }),
              HasSubstr("seed id 2000 of node type 'paper' at position 1 out of range for 2000"));
  const std::vector<int64_t> twice = {5, 6, 5};
  EXPECT_THAT(message_of<ValueError>([&] {
                sample(ok, {{"paper", twice}});
              }),
              HasSubstr("duplicate seed 5 of node type 'paper' at positions 0 and 2"));
  const auto empty = sample(ok, {{"paper", std::vector<int64_t>{}}});
  EXPECT_EQ(empty.total_nodes(), 0);
  EXPECT_EQ(empty.total_edges(), 0);
}

}  // namespace
}  // namespace volley
