#include "volley/sampling/neighbor_sampler.h"

#include <gtest/gtest.h>

#include "sampling/expect_subgraph.h"
#include "test_graphs.h"
#include "test_util.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <thread>
#include <tuple>

#include "volley/core/parallel.h"

namespace volley {
namespace {

// The graphs here: weights 0..4 (a fifth zero), attached only when asked for.
Csr random_graph(int64_t n, int64_t m, uint64_t seed, bool with_weights = false) {
  return skewed_random_graph(n, m, seed, {.weighted = with_weights, .weight_unit = 1.0f});
}

// Every structural promise of neighbor_sampler.h on one result.
void check_structure(const Csr& graph, const std::vector<int64_t>& seeds,
                     const NeighborSamplerOptions& options, const SampledSubgraph& subgraph) {
  const HostSubgraph s = vectors_of(subgraph);
  ASSERT_EQ(s.num_seeds, static_cast<int64_t>(seeds.size()));
  ASSERT_TRUE(std::equal(seeds.begin(), seeds.end(), s.nodes.begin()));
  std::set<int64_t> unique(s.nodes.begin(), s.nodes.end());
  ASSERT_EQ(unique.size(), s.nodes.size()) << "node list has duplicates";
  ASSERT_EQ(s.nodes_per_hop.size(), options.fanouts.size() + 1);
  ASSERT_EQ(s.edges_per_hop.size(), options.fanouts.size());
  int64_t total_nodes = 0, total_edges = 0;
  for (int64_t count : s.nodes_per_hop) total_nodes += count;
  for (int64_t count : s.edges_per_hop) total_edges += count;
  ASSERT_EQ(total_nodes, static_cast<int64_t>(s.nodes.size()));
  ASSERT_EQ(total_edges, static_cast<int64_t>(s.rows.size()));
  ASSERT_EQ(s.cols.size(), s.rows.size());
  ASSERT_EQ(s.edge_ids.size(), s.rows.size());

  // Map edge id -> (row, neighbor) of the graph.
  std::map<int64_t, std::pair<int64_t, int64_t>> by_id;
  for (int64_t v = 0; v < graph.num_nodes(); ++v) {
    for (int64_t k = graph.begin(v); k < graph.end(v); ++k)
      by_id[graph.edge_id(k)] = {v, graph.neighbor(k)};
  }
  int64_t edge = 0, frontier_begin = 0;
  for (size_t hop = 0; hop < options.fanouts.size(); ++hop) {
    const int64_t frontier_end = frontier_begin + s.nodes_per_hop[hop];
    std::map<int64_t, int64_t> per_target;
    for (int64_t j = 0; j < s.edges_per_hop[hop]; ++j, ++edge) {
      const int64_t row = s.rows[edge], col = s.cols[edge];
      ASSERT_GE(row, frontier_begin) << "hop " << hop << " edge into a node not in its frontier";
      ASSERT_LT(row, frontier_end);
      ASSERT_GE(col, 0);
      ASSERT_LT(col, static_cast<int64_t>(s.nodes.size()));
      const auto found = by_id.find(s.edge_ids[edge]);
      ASSERT_NE(found, by_id.end()) << "edge id " << s.edge_ids[edge] << " not in graph";
      EXPECT_EQ(found->second.first, s.nodes[row]);
      EXPECT_EQ(found->second.second, s.nodes[col]);
      ++per_target[row];
    }
    for (auto [row, count] : per_target) {
      const int64_t degree = graph.degree(s.nodes[row]);
      const int64_t fanout = options.fanouts[hop];
      if (fanout == -1) {
        EXPECT_EQ(count, degree);
      } else if (options.replace) {
        EXPECT_LE(count, fanout);
      } else {
        EXPECT_LE(count, std::min(fanout, degree));
        if (!options.weighted) EXPECT_EQ(count, std::min(fanout, degree));
      }
    }
    // Unsampled frontier nodes must have had nothing to give (or fanout 0).
    for (int64_t row = frontier_begin; row < frontier_end; ++row) {
      if (!per_target.count(row) && !options.weighted && options.fanouts[hop] != 0) {
        EXPECT_EQ(graph.degree(s.nodes[row]), 0);
      }
    }
    // New nodes of this hop appear as neighbors in first-appearance order.
    int64_t expected_next = frontier_end;
    for (int64_t j = edge - s.edges_per_hop[hop]; j < edge; ++j) {
      if (s.cols[j] >= frontier_end) {
        ASSERT_LE(s.cols[j], expected_next);
        if (s.cols[j] == expected_next) ++expected_next;
      }
    }
    EXPECT_EQ(expected_next, frontier_end + s.nodes_per_hop[hop + 1]);
    frontier_begin = frontier_end;
  }
}

TEST(NeighborSampler, StructureOnRandomGraphs) {
  const Csr graph = random_graph(300, 3000, 1, /*with_weights=*/true);
  std::mt19937_64 rng(2);
  const std::vector<std::vector<int64_t>> fanout_sets = {
      {5, 3}, {-1}, {2, -1, 1}, {0, 4}, {10, 10, 10}};
  int combination = 0;
  for (const auto& fanouts : fanout_sets) {
    for (bool replace : {false, true}) {
      for (bool weighted : {false, true}) {
        std::vector<int64_t> all(300);
        std::iota(all.begin(), all.end(), 0);
        std::shuffle(all.begin(), all.end(), rng);
        std::vector<int64_t> seeds(all.begin(), all.begin() + 17);
        NeighborSamplerOptions options{fanouts, replace, weighted, 99};
        const auto s = sample_neighbors(graph, seeds, options, combination++);
        SCOPED_TRACE(testing::Message() << "replace=" << replace << " weighted=" << weighted);
        check_structure(graph, seeds, options, s);
      }
    }
  }
}

TEST(NeighborSampler, PureFunctionOfSeedAndBatch) {
  const Csr graph = random_graph(2000, 30000, 3);
  std::vector<int64_t> seeds = {5, 17, 1999, 0, 42};
  NeighborSamplerOptions options{{4, 3}, false, false, 7};
  const auto a = vectors_of(sample_neighbors(graph, seeds, options, 11));
  SamplerScratch scratch;
  sample_neighbors(graph, {{1, 2, 3}}, options, 0, &scratch);  // dirty the scratch first
  const auto b = vectors_of(sample_neighbors(graph, seeds, options, 11, &scratch));
  EXPECT_EQ(a.nodes, b.nodes);
  EXPECT_EQ(a.edge_ids, b.edge_ids);
  const auto other_batch = vectors_of(sample_neighbors(graph, seeds, options, 12));
  const auto other_seed = vectors_of(sample_neighbors(graph, seeds, {{4, 3}, false, false, 8}, 11));
  EXPECT_NE(a.edge_ids, other_batch.edge_ids);
  EXPECT_NE(a.edge_ids, other_seed.edge_ids);
}

TEST(NeighborSampler, IdenticalForAnyThreadCount) {
  const Csr graph = random_graph(5000, 80000, 4);
  constexpr int kBatches = 24;
  auto run = [&](int threads) {
    std::vector<HostSubgraph> results(kBatches);
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back([&, t] {
        SamplerScratch scratch;
        for (int b = t; b < kBatches; b += threads) {
          std::vector<int64_t> seeds;
          for (int64_t i = 0; i < 64; ++i) seeds.push_back((b * 64 + i) % 5000);
          results[b] =
              vectors_of(sample_neighbors(graph, seeds, {{10, 5}, false, false, 3}, b, &scratch));
        }
      });
    }
    for (auto& worker : workers) worker.join();
    return results;
  };
  const auto one = run(1);
  for (int threads : {2, 8}) {
    const auto many = run(threads);
    for (int b = 0; b < kBatches; ++b) {
      ASSERT_EQ(many[b].nodes, one[b].nodes) << threads << " threads, batch " << b;
      ASSERT_EQ(many[b].rows, one[b].rows);
      ASSERT_EQ(many[b].cols, one[b].cols);
      ASSERT_EQ(many[b].edge_ids, one[b].edge_ids);
    }
  }
}

// A star: node 0 has in-neighbors 1..degree.
Csr star(int64_t degree, std::optional<std::vector<float>> weights = std::nullopt) {
  std::vector<int64_t> src, dst;
  for (int64_t i = 1; i <= degree; ++i) {
    src.push_back(i);
    dst.push_back(0);
  }
  std::optional<Array> w;
  if (weights) w = Array::from_vector(*weights);
  return build_csr(Array::from_vector(src), Array::from_vector(dst), w, {.num_nodes = degree + 1});
}

double chi_square(const std::map<std::vector<int64_t>, int>& counts, double expected, int cells) {
  double chi2 = 0;
  for (const auto& [key, count] : counts)
    chi2 += (count - expected) * (count - expected) / expected;
  chi2 += (cells - static_cast<int>(counts.size())) * expected;  // unseen cells
  return chi2;
}

TEST(NeighborSampler, UniformWithoutReplacementChiSquareOnKSubsets) {
  // C(6, 3) = 20 subsets, each with probability 1/20.
  const Csr graph = star(6);
  constexpr int kTrials = 20000;
  std::map<std::vector<int64_t>, int> counts;
  for (int t = 0; t < kTrials; ++t) {
    const auto s = vectors_of(sample_neighbors(graph, {{0}}, {{3}, false, false, 5}, t));
    std::vector<int64_t> subset(s.nodes.begin() + 1, s.nodes.end());
    std::sort(subset.begin(), subset.end());
    ASSERT_EQ(subset.size(), 3u);
    ++counts[subset];
  }
  EXPECT_EQ(counts.size(), 20u);
  // 19 degrees of freedom: the 0.999 quantile is 43.82.
  EXPECT_LT(chi_square(counts, kTrials / 20.0, 20), 43.82);
}

TEST(NeighborSampler, UniformWithReplacementChiSquareOnNeighbors) {
  const Csr graph = star(7);
  constexpr int kTrials = 7000;
  std::map<std::vector<int64_t>, int> counts;
  for (int t = 0; t < kTrials; ++t) {
    const auto s = vectors_of(sample_neighbors(graph, {{0}}, {{4}, true, false, 6}, t));
    ASSERT_EQ(s.edge_ids.size(), 4u);
    for (int64_t col : s.cols) ++counts[{s.nodes[col]}];
  }
  // 6 degrees of freedom: the 0.999 quantile is 22.46.
  EXPECT_LT(chi_square(counts, kTrials * 4 / 7.0, 7), 22.46);
}

TEST(NeighborSampler, WeightedFrequenciesFollowWeights) {
  const std::vector<float> weights = {1, 2, 3, 4, 0, 10};
  const Csr graph = star(6, weights);
  constexpr int kTrials = 20000;
  std::vector<int> with(7, 0);
  for (int t = 0; t < kTrials; ++t) {
    const auto s = vectors_of(sample_neighbors(graph, {{0}}, {{1}, true, true, 8}, t));
    ASSERT_EQ(s.cols.size(), 1u);
    ++with[s.nodes[s.cols[0]]];
  }
  EXPECT_EQ(with[5], 0) << "zero-weight neighbor drawn";
  double chi2 = 0;
  for (int i = 1; i <= 6; ++i) {
    if (weights[i - 1] == 0) continue;
    const double expected = kTrials * weights[i - 1] / 20.0;
    chi2 += (with[i] - expected) * (with[i] - expected) / expected;
  }
  EXPECT_LT(chi2, 20.52);  // 5 degrees of freedom, 0.999 quantile

  // Without replacement, k = 1 is a single draw ∝ weight too.
  std::vector<int> without(7, 0);
  for (int t = 0; t < kTrials; ++t) {
    const auto s = vectors_of(sample_neighbors(graph, {{0}}, {{1}, false, true, 9}, t));
    ASSERT_EQ(s.cols.size(), 1u);
    ++without[s.nodes[s.cols[0]]];
  }
  EXPECT_EQ(without[5], 0);
  chi2 = 0;
  for (int i = 1; i <= 6; ++i) {
    if (weights[i - 1] == 0) continue;
    const double expected = kTrials * weights[i - 1] / 20.0;
    chi2 += (without[i] - expected) * (without[i] - expected) / expected;
  }
  EXPECT_LT(chi2, 20.52);
  // k = 5 without replacement: only the five positive-weight neighbors, all distinct.
  const auto s = vectors_of(sample_neighbors(graph, {{0}}, {{5}, false, true, 1}, 0));
  std::set<int64_t> chosen;
  for (int64_t col : s.cols) chosen.insert(s.nodes[col]);
  EXPECT_EQ(chosen, (std::set<int64_t>{1, 2, 3, 4, 6}));
}

TEST(NeighborSampler, LargeFanoutWithoutReplacementIsDistinctAndSorted) {
  const Csr graph = star(1000);
  const auto s = vectors_of(sample_neighbors(graph, {{0}}, {{300}, false, false, 2}, 0));
  ASSERT_EQ(s.edge_ids.size(), 300u);
  EXPECT_TRUE(std::is_sorted(s.edge_ids.begin(), s.edge_ids.end()));
  EXPECT_EQ(std::set<int64_t>(s.edge_ids.begin(), s.edge_ids.end()).size(), 300u);
}

TEST(NeighborSampler, ErrorsAndEdgeCases) {
  const Csr graph = star(5);
  EXPECT_EQ(message_of<IndexError>([&] {
              sample_neighbors(graph, {{0, 6}}, {{2}}, 0);
            }),
            "seed id 6 at position 1 out of range for a graph with 6 nodes");
  EXPECT_EQ(message_of<IndexError>([&] { sample_neighbors(graph, {{-1}}, {{2}}, 0); }),
            "seed id -1 at position 0 out of range for a graph with 6 nodes");
  EXPECT_EQ(message_of<ValueError>([&] {
              sample_neighbors(graph, {{3, 1, 3}}, {{2}}, 0);
            }),
            "duplicate seed id 3 at positions 0 and 2; seeds must be distinct");
  EXPECT_EQ(message_of<ValueError>([&] {
              sample_neighbors(graph, {{0}}, {{2, -2}}, 0);
            }),
            "fanout -2 at hop 1 is invalid: use a count >= 0, or -1 for all neighbors");
  // No hops (PyG's num_neighbors=[]): the seeds alone, no edges.
  const auto seeds_only = vectors_of(sample_neighbors(graph, {{3, 0}}, {{}}, 0));
  EXPECT_EQ(seeds_only.nodes, (std::vector<int64_t>{3, 0}));
  EXPECT_TRUE(seeds_only.edge_ids.empty());
  EXPECT_EQ(seeds_only.nodes_per_hop, (std::vector<int64_t>{2}));
  EXPECT_EQ(message_of<ValueError>([&] {
              sample_neighbors(graph, {{0}}, {{2}, false, true}, 0);
            }),
            "weighted sampling needs edge weights, but the graph has none");
  const auto empty = vectors_of(sample_neighbors(graph, {}, {{2, 2}}, 0));
  EXPECT_TRUE(empty.nodes.empty());
  EXPECT_EQ(empty.nodes_per_hop, (std::vector<int64_t>{0, 0, 0}));
  const auto zero = vectors_of(sample_neighbors(graph, {{0}}, {{0, 3}}, 0));
  EXPECT_EQ(zero.nodes, (std::vector<int64_t>{0}));
  EXPECT_EQ(zero.edges_per_hop, (std::vector<int64_t>{0, 0}));
}

// The one entry over a host graph runs the CPU kernel: the oracle's result, in host memory,
// whatever the scratch state and however many threads share the sampler.
TEST(NeighborSampler, OneEntryOnAHostGraphIsTheCpuSampler) {
  const Csr graph = random_graph(2000, 30000, 5, /*with_weights=*/true);
  const NeighborSamplerOptions options{{4, 3}, false, true, 21};
  NeighborSampler sampler(graph, options);
  EXPECT_FALSE(sampler.on_cuda());
  EXPECT_EQ(sampler.device(), -1);
  EXPECT_EQ(sampler.num_nodes(), 2000);
  std::vector<SampledSubgraph> got(16);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (size_t b = static_cast<size_t>(t); b < got.size(); b += 4) {
        std::vector<int64_t> seeds;
        for (int64_t i = 0; i < 32; ++i) seeds.push_back((static_cast<int64_t>(b) * 97 + i) % 2000);
        got[b] = sampler.sample(seeds, b);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (size_t b = 0; b < got.size(); ++b) {
    std::vector<int64_t> seeds;
    for (int64_t i = 0; i < 32; ++i) seeds.push_back((static_cast<int64_t>(b) * 97 + i) % 2000);
    EXPECT_NE(got[b].location(), Location::kCuda);
    expect_same_subgraph(got[b], sample_neighbors(graph, seeds, options, b),
                         "batch " + std::to_string(b));
    // to_host() of a host result shares its arrays.
    EXPECT_EQ(got[b].to_host().nodes.raw_data(), got[b].nodes.raw_data());
  }
  EXPECT_EQ(message_of<ValueError>([&] {
              NeighborSampler(graph, {{2}, false, false, 0}).sample({{3, 3}}, 0);
            }),
            "duplicate seed id 3 at positions 0 and 1; seeds must be distinct");
  EXPECT_EQ(message_of<ValueError>([&] { NeighborSampler(Csr(), options); }),
            "NeighborSampler needs a graph, got an empty (default) Csr");
}

// subgraph_type (PyG's): the same nodes as directional; induced holds every graph edge between
// them, bidirectional the sampled edges and their reverses, coalesced and sorted by target.
TEST(SubgraphType, InducedAndBidirectionalKeepNodesAndChangeEdges) {
  const Csr graph = random_graph(300, 3000, 5);
  const std::vector<int64_t> seeds{4, 77, 150, 299};
  NeighborSamplerOptions options{.fanouts = {3, 2}, .seed = 9};
  const HostSubgraph directed = vectors_of(sample_neighbors(graph, seeds, options, 1));
  options.subgraph_type = SubgraphType::kInduced;
  const HostSubgraph induced = vectors_of(sample_neighbors(graph, seeds, options, 1));
  options.subgraph_type = SubgraphType::kBidirectional;
  const HostSubgraph both = vectors_of(sample_neighbors(graph, seeds, options, 1));
  EXPECT_EQ(induced.nodes, directed.nodes);
  EXPECT_EQ(both.nodes, directed.nodes);
  EXPECT_TRUE(induced.edges_per_hop.empty());
  std::map<int64_t, int64_t> local;
  for (size_t i = 0; i < directed.nodes.size(); ++i) local[directed.nodes[i]] = i;
  std::set<std::tuple<int64_t, int64_t, int64_t>> expected, got;  // (target, source, edge id)
  for (const auto& [node, i] : local) {
    for (int64_t k = graph.begin(node); k < graph.end(node); ++k) {
      const auto found = local.find(graph.neighbor(k));
      if (found != local.end()) expected.insert({i, found->second, graph.edge_id(k)});
    }
  }
  for (size_t j = 0; j < induced.rows.size(); ++j)
    got.insert({induced.rows[j], induced.cols[j], induced.edge_ids[j]});
  EXPECT_EQ(got, expected);
  EXPECT_EQ(induced.rows.size(), expected.size());
  std::set<std::pair<int64_t, int64_t>> pairs;  // (target, source)
  for (size_t j = 0; j < directed.rows.size(); ++j) {
    pairs.insert({directed.rows[j], directed.cols[j]});
    pairs.insert({directed.cols[j], directed.rows[j]});
  }
  std::vector<std::pair<int64_t, int64_t>> listed;
  for (size_t j = 0; j < both.rows.size(); ++j) listed.emplace_back(both.rows[j], both.cols[j]);
  const std::vector<std::pair<int64_t, int64_t>> sorted_pairs(pairs.begin(), pairs.end());
  EXPECT_EQ(listed, sorted_pairs);
}

// The nodes of tree `tree` in local-id order.
std::vector<int64_t> tree_nodes(const HostSubgraph& all, const std::vector<int64_t>& batch,
                                int64_t tree) {
  std::vector<int64_t> nodes;
  for (size_t i = 0; i < batch.size(); ++i)
    if (batch[i] == tree) nodes.push_back(all.nodes[i]);
  return nodes;
}

// disjoint: tree i is exactly what seed i alone samples, nodes tagged by `batch`.
TEST(SubgraphType, DisjointTreesAreTheSingleSeedSamples) {
  const Csr graph = random_graph(200, 2500, 6);
  const std::vector<int64_t> seeds{10, 3, 10, 150};  // a seed may repeat
  NeighborSamplerOptions options{.fanouts = {4, 3}, .seed = 2, .disjoint = true};
  const SampledSubgraph result = sample_neighbors(graph, seeds, options, 7);
  const HostSubgraph all = vectors_of(result);
  const std::vector<int64_t> batch = result.batch.to_vector<int64_t>();
  ASSERT_EQ(batch.size(), all.nodes.size());
  options.disjoint = false;
  for (size_t tree = 0; tree < seeds.size(); ++tree) {
    const HostSubgraph alone = vectors_of(sample_neighbors(graph, {{seeds[tree]}}, options, 7));
    std::vector<int64_t> nodes = tree_nodes(all, batch, static_cast<int64_t>(tree));
    std::sort(nodes.begin(), nodes.end());
    std::vector<int64_t> want = alone.nodes;
    std::sort(want.begin(), want.end());
    EXPECT_EQ(nodes, want) << "tree " << tree;
  }
  for (size_t j = 0; j < all.rows.size(); ++j) EXPECT_EQ(batch[all.rows[j]], batch[all.cols[j]]);
  options = {.fanouts = {2}, .subgraph_type = SubgraphType::kInduced, .disjoint = true};
  EXPECT_EQ(message_of<ValueError>([&] { sample_neighbors(graph, seeds, options, 0); }),
            "disjoint sampling does not support subgraph_type='induced'");
  EXPECT_EQ(message_of<ValueError>([&] { NeighborSampler(CudaGraph(), options); }),
            "the CUDA sampler samples directional subgraphs only, got subgraph_type=induced; use "
            "the CPU sampler (mode=\"CPU\") for these");
  EXPECT_EQ(subgraph_type_from_name("bidirectional"), SubgraphType::kBidirectional);
  EXPECT_EQ(message_of<ValueError>([] { subgraph_type_from_name("up"); }),
            "subgraph_type must be 'directional', 'bidirectional' or 'induced', got 'up'");
}

// The edges of tree `tree` in output order, as (global target, global source, edge id).
std::vector<std::tuple<int64_t, int64_t, int64_t>> tree_edges(const HostSubgraph& all,
                                                              const std::vector<int64_t>& batch,
                                                              int64_t tree) {
  std::vector<std::tuple<int64_t, int64_t, int64_t>> edges;
  for (size_t j = 0; j < all.rows.size(); ++j) {
    if (batch[all.rows[j]] != tree) continue;
    edges.emplace_back(all.nodes[all.rows[j]], all.nodes[all.cols[j]], all.edge_ids[j]);
  }
  return edges;
}

// Each tree, read in local-id order, is the single-seed sample exactly: its nodes in the same
// order, its edges in the same order. Whole rows (fanout -1) make trees of most of the graph,
// and the seeds repeat, so every tree meets nodes that it and other trees already hold.
TEST(SubgraphType, DisjointTreesKeepTheSingleSeedOrder) {
  const Csr graph = random_graph(300, 1800, 11);
  const std::vector<int64_t> seeds{7, 7, 0, 299, 150, 7, 42};
  for (const std::vector<int64_t>& fanouts :
       {std::vector<int64_t>{-1, 3, -1}, std::vector<int64_t>{5, 5, 5, 5}}) {
    NeighborSamplerOptions options{.fanouts = fanouts, .seed = 4, .disjoint = true};
    const SampledSubgraph result = sample_neighbors(graph, seeds, options, 3);
    const HostSubgraph all = vectors_of(result);
    const std::vector<int64_t> batch = result.batch.to_vector<int64_t>();
    ASSERT_EQ(batch.size(), all.nodes.size());
    options.disjoint = false;
    for (size_t tree = 0; tree < seeds.size(); ++tree) {
      const HostSubgraph alone = vectors_of(sample_neighbors(graph, {{seeds[tree]}}, options, 3));
      EXPECT_EQ(tree_nodes(all, batch, static_cast<int64_t>(tree)), alone.nodes)
          << "tree " << tree << ", " << fanouts.size() << " hops";
      std::vector<int64_t> alone_batch(alone.nodes.size(), 0);
      EXPECT_EQ(tree_edges(all, batch, static_cast<int64_t>(tree)),
                tree_edges(alone, alone_batch, 0))
          << "tree " << tree << ", " << fanouts.size() << " hops";
    }
  }
}

}  // namespace
}  // namespace volley
