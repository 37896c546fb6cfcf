// The host/device pick rules (internal/pick.h) run on the host: they must reproduce the CPU
// sampler exactly, so that the CUDA kernel, which runs the same code, does too. The emulation
// below follows the CUDA driver step by step (count, scan, pick, first-occurrence relabeling by
// minimum position), with plain containers in place of the kernels' hash table and scans.
#include "volley/sampling/internal/pick.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <unordered_map>

#include "sampling/expect_subgraph.h"
#include "test_graphs.h"
#include "volley/sampling/neighbor_sampler.h"

namespace volley {
namespace {

using sampling_internal::deterministic_log;

int64_t bits_of(double x) {
  int64_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits;
}

TEST(DeterministicLog, WithinOneUlpOfTheLibraryLog) {
  std::mt19937_64 rng(3);
  int64_t differ = 0;
  constexpr int kDraws = 200000;
  for (int i = 0; i < kDraws; ++i) {
    // The sampler's inputs: 1 - uniform_double(), in [2^-53, 1].
    const double u = 1.0 - static_cast<double>(rng() >> 11) * 0x1.0p-53;
    const int64_t distance = std::llabs(bits_of(deterministic_log(u)) - bits_of(std::log(u)));
    ASSERT_LE(distance, 1) << "u = " << u;
    differ += distance != 0;
  }
  // glibc's log is not correctly rounded either; the two agree on the vast majority of inputs.
  EXPECT_LT(differ, kDraws / 5);
  for (double x : {1e-300, 4.9e-324, 0.1, 0.5, 0.75, 1.5, 2.0, 10.0, 1e300}) {
    EXPECT_LE(std::llabs(bits_of(deterministic_log(x)) - bits_of(std::log(x))), 1) << x;
  }
  EXPECT_EQ(deterministic_log(1.0), 0.0);
  EXPECT_LE(std::llabs(bits_of(deterministic_log(0x1.0p-53)) - bits_of(-53 * std::log(2.0))), 1);
  EXPECT_EQ(deterministic_log(0.0), -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(deterministic_log(-1.0)));
  EXPECT_EQ(deterministic_log(std::numeric_limits<double>::infinity()),
            std::numeric_limits<double>::infinity());
}

// The CUDA driver's algorithm on the host, with pick.h doing the per-target work.
template <typename Index>
SampledSubgraph emulate_cuda_sampler(const Csr& graph, const std::vector<int64_t>& seeds,
                                     const NeighborSamplerOptions& options, uint64_t batch) {
  sampling_internal::GraphRows<Index> rows_of;
  rows_of.indptr = graph.indptr().data<int64_t>();
  rows_of.indices = graph.indices().template data<Index>();
  rows_of.edge_ids = graph.has_edge_ids() ? graph.edge_ids()->data<int64_t>() : nullptr;
  rows_of.weights = options.weighted ? graph.weights()->data<float>() : nullptr;
  HostSubgraph out;
  out.nodes = seeds;
  out.num_seeds = static_cast<int64_t>(seeds.size());
  out.nodes_per_hop = {out.num_seeds};
  std::unordered_map<int64_t, int64_t> table;  // global id → local id (or first position)
  for (size_t i = 0; i < seeds.size(); ++i) table[seeds[i]] = static_cast<int64_t>(i);
  int64_t frontier_begin = 0;
  for (size_t hop = 0; hop < options.fanouts.size(); ++hop) {
    const sampling_internal::PickRule rule{options.fanouts[hop], options.replace, options.seed,
                                           static_cast<int>(hop), batch};
    const int64_t node_count = static_cast<int64_t>(out.nodes.size());
    // count + exclusive scan
    std::vector<int64_t> offsets(static_cast<size_t>(node_count - frontier_begin) + 1, 0);
    for (int64_t i = frontier_begin; i < node_count; ++i) {
      const int64_t target = out.nodes[static_cast<size_t>(i)];
      const int64_t begin = rows_of.indptr[target];
      const int64_t degree = rows_of.indptr[target + 1] - begin;
      const int64_t count =
          options.fanouts[hop] == 0
              ? 0
              : sampling_internal::pick_count(
                    degree, rows_of.weights ? rows_of.weights + begin : nullptr, rule);
      offsets[static_cast<size_t>(i - frontier_begin) + 1] =
          offsets[static_cast<size_t>(i - frontier_begin)] + count;
    }
    const int64_t hop_edges = offsets.back();
    // pick
    std::vector<int64_t> neighbors(static_cast<size_t>(hop_edges));
    std::vector<int64_t> positions, order;
    std::vector<double> keys;
    for (int64_t i = frontier_begin; i < node_count; ++i) {
      const int64_t start = offsets[static_cast<size_t>(i - frontier_begin)];
      const int64_t picks = offsets[static_cast<size_t>(i - frontier_begin) + 1] - start;
      if (picks == 0) continue;
      const int64_t target = out.nodes[static_cast<size_t>(i)];
      const int64_t begin = rows_of.indptr[target];
      const int64_t degree = rows_of.indptr[target + 1] - begin;
      positions.assign(static_cast<size_t>(picks), -1);
      keys.assign(static_cast<size_t>(picks), 0.0);
      order.assign(static_cast<size_t>(picks), 0);
      sampling_internal::pick_positions(target, degree,
                                        rows_of.weights ? rows_of.weights + begin : nullptr, rule,
                                        picks, positions.data(), keys.data(), order.data());
      for (int64_t j = 0; j < picks; ++j) {
        const int64_t k = begin + positions[static_cast<size_t>(j)];
        neighbors[static_cast<size_t>(start + j)] = static_cast<int64_t>(rows_of.indices[k]);
        out.edge_ids.push_back(rows_of.edge_ids ? rows_of.edge_ids[k] : k);
        out.rows.push_back(i);
      }
    }
    // relabel: minimum position per new id, flags, ranks, assignment, columns
    for (int64_t j = 0; j < hop_edges; ++j) {
      auto [it, inserted] = table.emplace(neighbors[static_cast<size_t>(j)], node_count + j);
      if (!inserted) it->second = std::min(it->second, node_count + j);
    }
    int64_t rank = 0;
    for (int64_t j = 0; j < hop_edges; ++j) {
      auto& value = table[neighbors[static_cast<size_t>(j)]];
      if (value == node_count + j) {
        value = node_count + rank++;
        out.nodes.push_back(neighbors[static_cast<size_t>(j)]);
      }
    }
    for (int64_t j = 0; j < hop_edges; ++j) {
      out.cols.push_back(table[neighbors[static_cast<size_t>(j)]]);
    }
    out.edges_per_hop.push_back(hop_edges);
    out.nodes_per_hop.push_back(rank);
    frontier_begin = node_count;
  }
  return out.finish();
}

TEST(PickRules, HostRunOfTheCudaAlgorithmEqualsTheCpuSampler) {
  const std::vector<std::vector<int64_t>> fanouts = {{15, 10, 5}, {-1, 3}, {2, 0, 4},
                                                     {100, 2},    {1},     {3, -1}};
  int64_t compared_edges = 0;
  for (int graph_kind = 0; graph_kind < 3; ++graph_kind) {
    const bool int64_indices = graph_kind == 1;
    const bool edge_ids = graph_kind != 2;
    const Csr graph =
        skewed_random_graph(3000, 60000, 11 + graph_kind,
                            {.keep_edge_ids = edge_ids, .force_int64_indices = int64_indices});
    std::mt19937_64 rng(5 + graph_kind);
    for (const auto& fanout : fanouts) {
      for (int variant = 0; variant < 4; ++variant) {
        NeighborSamplerOptions options{fanout, (variant & 1) != 0, (variant & 2) != 0,
                                       rng() % 1000};
        for (uint64_t batch = 0; batch < 3; ++batch) {
          std::vector<int64_t> seeds;
          std::vector<bool> taken(3000, false);
          while (seeds.size() < 64) {
            // Low ids are the hubs of random_graph: include several.
            const int64_t seed = static_cast<int64_t>(seeds.size() < 8 ? rng() % 40 : rng() % 3000);
            if (!taken[static_cast<size_t>(seed)]) {
              taken[static_cast<size_t>(seed)] = true;
              seeds.push_back(seed);
            }
          }
          const SampledSubgraph expected = sample_neighbors(graph, seeds, options, batch);
          const SampledSubgraph got =
              int64_indices ? emulate_cuda_sampler<int64_t>(graph, seeds, options, batch)
                            : emulate_cuda_sampler<int32_t>(graph, seeds, options, batch);
          expect_same_subgraph(
              expected, got,
              fmt::format("graph {} fanouts [{}] replace {} weighted {} batch {}", graph_kind,
                          fmt::join(fanout, ","), options.replace, options.weighted, batch));
          compared_edges += expected.num_edges();
          if (::testing::Test::HasFailure()) return;
        }
      }
    }
  }
  EXPECT_GT(compared_edges, 1000000);  // the comparison covered real work
}

// Per target, pick_positions is what the CPU sampler picks at hop 0 for a single seed,
// including fanouts far above 64 (the CPU kernel's bitmap path) and every degree.
TEST(PickRules, SingleTargetsAcrossFanoutsAndDegrees) {
  const Csr graph = skewed_random_graph(2000, 200000, 21);
  for (int64_t fanout : {1, 7, 64, 65, 300}) {
    for (int variant = 0; variant < 4; ++variant) {
      NeighborSamplerOptions options{{fanout}, (variant & 1) != 0, (variant & 2) != 0, 99};
      const sampling_internal::PickRule rule{fanout, options.replace, options.seed, 0, 4};
      for (int64_t target = 0; target < 2000; target += 37) {
        const HostSubgraph expected = vectors_of(sample_neighbors(graph, {{target}}, options, 4));
        const int64_t begin = graph.begin(target), degree = graph.degree(target);
        const float* weights = options.weighted ? graph.weights()->data<float>() + begin : nullptr;
        const int64_t count = sampling_internal::pick_count(degree, weights, rule);
        ASSERT_EQ(count, static_cast<int64_t>(expected.edge_ids.size()))
            << "target " << target << " fanout " << fanout << " variant " << variant;
        std::vector<int64_t> positions(static_cast<size_t>(count)), order(positions.size());
        std::vector<double> keys(positions.size());
        sampling_internal::pick_positions(target, degree, weights, rule, count, positions.data(),
                                          keys.data(), order.data());
        for (int64_t j = 0; j < count; ++j) {
          ASSERT_EQ(graph.edge_id(begin + positions[static_cast<size_t>(j)]),
                    expected.edge_ids[static_cast<size_t>(j)])
              << "target " << target << " fanout " << fanout << " variant " << variant << " pick "
              << j;
        }
      }
    }
  }
}

TEST(PickRules, CountsFollowTheSemantics) {
  using sampling_internal::pick_count;
  using sampling_internal::PickRule;
  const float weights[5] = {0.0f, 1.0f, 0.0f, 2.0f, 0.5f};  // 3 positive
  EXPECT_EQ(pick_count(0, nullptr, PickRule{5}), 0);
  EXPECT_EQ(pick_count(7, nullptr, PickRule{0}), 0);
  EXPECT_EQ(pick_count(7, nullptr, PickRule{-1}), 7);
  EXPECT_EQ(pick_count(7, nullptr, PickRule{10}), 7);
  EXPECT_EQ(pick_count(7, nullptr, PickRule{3}), 3);
  EXPECT_EQ(pick_count(2, nullptr, PickRule{3, true}), 3);  // with replacement: k draws
  EXPECT_EQ(pick_count(5, weights, PickRule{5}), 5);        // degree <= k: all, zeros too
  EXPECT_EQ(pick_count(5, weights, PickRule{4}), 3);        // only positive weights
  EXPECT_EQ(pick_count(5, weights, PickRule{2}), 2);
  EXPECT_EQ(pick_count(5, weights, PickRule{9, true}), 9);
  const float zeros[3] = {0.0f, 0.0f, 0.0f};
  EXPECT_EQ(pick_count(3, zeros, PickRule{2, true}), 0);  // nothing to draw from
  EXPECT_EQ(pick_count(3, zeros, PickRule{2, false}), 0);
}

}  // namespace
}  // namespace volley
