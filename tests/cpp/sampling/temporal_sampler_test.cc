// Temporal sampling (neighbor_sampler.h): no neighbor later than its seed's time, "last" takes
// exactly the latest admissible, "uniform" is the untimed sampler over the admissible neighbors,
// and the errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <map>
#include <random>
#include <set>

#include "sampling/expect_subgraph.h"
#include "test_graphs.h"
#include "test_util.h"
#include "volley/sampling/neighbor_sampler.h"

namespace volley {
namespace {

// A random multigraph (repeated edges, hubs) with random node and edge times in [0, 1000).
Csr temporal_graph(int64_t n, int64_t m, uint64_t seed, bool weighted = false) {
  const Csr graph = skewed_random_graph(n, m, seed, {.weighted = weighted});
  std::mt19937_64 rng(seed + 1);
  std::vector<int64_t> node_time(static_cast<size_t>(n)), edge_time(static_cast<size_t>(m));
  for (auto& t : node_time) t = static_cast<int64_t>(rng() % 1000);
  for (auto& t : edge_time) t = static_cast<int64_t>(rng() % 1000);
  return graph.with_times(Array::from_vector(node_time), Array::from_vector(edge_time));
}

std::vector<int64_t> random_times(size_t count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> times(count);
  for (auto& t : times) t = static_cast<int64_t>(rng() % 1200);
  return times;
}

// The time of each CSR entry under `source`.
int64_t entry_time(const Csr& graph, TimeSource source, int64_t k) {
  return source == TimeSource::kEdge ? graph.edge_time()->data<int64_t>()[k]
                                     : graph.node_time()->data<int64_t>()[graph.neighbor(k)];
}

// The leakage check: every sampled edge (and, with node time, every node) is no later than the
// time of the seed whose tree holds it; trees are closed (edges stay inside a tree).
void expect_no_leak(const Csr& graph, TimeSource source, const std::vector<int64_t>& times,
                    const SampledSubgraph& result) {
  const HostSubgraph s = vectors_of(result);
  const std::vector<int64_t> batch = result.batch.to_vector<int64_t>();
  ASSERT_EQ(batch.size(), s.nodes.size()) << "temporal sampling is disjoint: batch per node";
  std::map<int64_t, int64_t> position_of_id;  // edge id -> CSR position
  for (int64_t k = 0; k < graph.num_edges(); ++k) position_of_id[graph.edge_id(k)] = k;
  for (size_t j = 0; j < s.rows.size(); ++j) {
    const int64_t tree = batch[static_cast<size_t>(s.rows[j])];
    ASSERT_EQ(batch[static_cast<size_t>(s.cols[j])], tree) << "edge " << j << " leaves its tree";
    const int64_t k = position_of_id.at(s.edge_ids[j]);
    ASSERT_EQ(graph.neighbor(k), s.nodes[static_cast<size_t>(s.cols[j])]);
    ASSERT_LE(entry_time(graph, source, k), times[static_cast<size_t>(tree)])
        << "edge " << j << " (id " << s.edge_ids[j] << ") is later than its seed's time";
  }
  if (source != TimeSource::kNode) return;
  const int64_t* node_time = graph.node_time()->data<int64_t>();
  for (size_t i = static_cast<size_t>(s.num_seeds); i < s.nodes.size(); ++i) {
    ASSERT_LE(node_time[s.nodes[i]], times[static_cast<size_t>(batch[i])]) << "node " << i;
  }
}

TEST(TemporalSampling, NothingLaterThanTheSeedTimeForEveryStrategy) {
  const Csr unsorted = temporal_graph(300, 6000, 3);
  const std::vector<int64_t> seeds{5, 0, 17, 5, 299, 1, 0, 42};  // seeds may repeat
  const std::vector<int64_t> times = random_times(seeds.size(), 4);
  for (TimeSource source : {TimeSource::kEdge, TimeSource::kNode}) {
    const Csr sorted = sort_rows_by_time(
        unsorted, source == TimeSource::kEdge ? TimeKind::kEdge : TimeKind::kNode);
    for (TemporalStrategy strategy : {TemporalStrategy::kUniform, TemporalStrategy::kLast}) {
      for (bool replace : {false, true}) {
        for (bool disjoint : {false, true}) {
          NeighborSamplerOptions options{.fanouts = {5, -1, 3},
                                         .replace = replace,
                                         .seed = 11,
                                         .disjoint = disjoint,
                                         .time_source = source,
                                         .temporal_strategy = strategy};
          SCOPED_TRACE(testing::Message() << "source " << static_cast<int>(source) << " strategy "
                                          << temporal_strategy_name(strategy) << " replace "
                                          << replace << " disjoint " << disjoint);
          const SampledSubgraph result = sample_neighbors(sorted, seeds, times, options, 2);
          EXPECT_GT(result.num_edges(), 0);
          expect_no_leak(sorted, source, times, result);
          if (strategy == TemporalStrategy::kUniform) {  // unsorted rows: scanned, not searched
            expect_no_leak(unsorted, source, times,
                           sample_neighbors(unsorted, seeds, times, options, 2));
          }
        }
      }
    }
  }
}

// "last": each expanded node takes exactly the min(k, admissible) latest admissible entries of
// its sorted row.
TEST(TemporalSampling, LastTakesExactlyTheLatestAdmissible) {
  const Csr graph = sort_rows_by_time(temporal_graph(200, 5000, 8), TimeKind::kEdge);
  const std::vector<int64_t> seeds{0, 1, 2, 3, 50, 199};
  const std::vector<int64_t> times = random_times(seeds.size(), 9);
  const NeighborSamplerOptions options{.fanouts = {4, 2},
                                       .seed = 1,
                                       .time_source = TimeSource::kEdge,
                                       .temporal_strategy = TemporalStrategy::kLast};
  const SampledSubgraph result = sample_neighbors(graph, seeds, times, options, 0);
  const HostSubgraph s = vectors_of(result);
  const std::vector<int64_t> batch = result.batch.to_vector<int64_t>();
  std::map<int64_t, std::vector<int64_t>> picked;  // local target -> edge ids in output order
  std::map<int64_t, size_t> hop_of;
  size_t edge = 0;
  for (size_t hop = 0; hop < s.edges_per_hop.size(); ++hop) {
    for (int64_t j = 0; j < s.edges_per_hop[hop]; ++j, ++edge) {
      picked[s.rows[edge]].push_back(s.edge_ids[edge]);
      hop_of[s.rows[edge]] = hop;
    }
  }
  int64_t checked = 0;
  for (size_t local = 0; local < s.nodes.size(); ++local) {
    const int64_t v = s.nodes[local];
    const int64_t limit = times[static_cast<size_t>(batch[local])];
    std::vector<int64_t> admissible;  // edge ids, CSR order
    for (int64_t k = graph.begin(v); k < graph.end(v); ++k) {
      if (entry_time(graph, TimeSource::kEdge, k) <= limit) admissible.push_back(graph.edge_id(k));
    }
    if (!picked.count(static_cast<int64_t>(local))) {
      // Not expanded: a last-hop node, or a node without an admissible neighbor.
      const bool last_hop = local >= static_cast<size_t>(s.nodes_per_hop[0] + s.nodes_per_hop[1]);
      EXPECT_TRUE(last_hop || admissible.empty()) << "node " << local;
      continue;
    }
    const auto k = static_cast<size_t>(options.fanouts[hop_of[static_cast<int64_t>(local)]]);
    const std::vector<int64_t> want(admissible.end() - std::min(k, admissible.size()),
                                    admissible.end());
    EXPECT_EQ(picked[static_cast<int64_t>(local)], want) << "node " << local;
    ++checked;
  }
  EXPECT_GT(checked, 10);
}

// With every neighbor admissible, temporal "uniform" is the untimed disjoint sampler (the same
// draws over the same rows); with some admissible it picks min(k, admissible) distinct ones.
TEST(TemporalSampling, UniformIsTheUntimedSamplerOverTheAdmissibleNeighbors) {
  const Csr graph = temporal_graph(250, 5000, 12);
  const std::vector<int64_t> seeds{3, 7, 7, 100};
  const std::vector<int64_t> forever(seeds.size(), std::numeric_limits<int64_t>::max());
  NeighborSamplerOptions options{.fanouts = {6, 3}, .seed = 5, .disjoint = true};
  const HostSubgraph untimed = vectors_of(sample_neighbors(graph, seeds, options, 3));
  for (TimeSource source : {TimeSource::kEdge, TimeSource::kNode}) {
    options.time_source = source;
    const HostSubgraph timed = vectors_of(sample_neighbors(graph, seeds, forever, options, 3));
    EXPECT_EQ(timed.nodes, untimed.nodes);
    EXPECT_EQ(timed.rows, untimed.rows);
    EXPECT_EQ(timed.cols, untimed.cols);
    EXPECT_EQ(timed.edge_ids, untimed.edge_ids);
    EXPECT_EQ(timed.batch, untimed.batch);
  }
  // Sorted rows (binary search) and unsorted rows (scan) admit the same neighbors.
  options.time_source = TimeSource::kEdge;
  const std::vector<int64_t> times = random_times(seeds.size(), 13);
  const Csr sorted = sort_rows_by_time(graph, TimeKind::kEdge);
  for (const Csr* g : {&graph, &sorted}) {
    const HostSubgraph s = vectors_of(sample_neighbors(*g, seeds, times, options, 3));
    for (size_t i = 0; i < seeds.size(); ++i) {  // hop 0: per seed, min(6, admissible) distinct
      int64_t admissible = 0;
      for (int64_t k = g->begin(seeds[i]); k < g->end(seeds[i]); ++k)
        admissible += entry_time(*g, TimeSource::kEdge, k) <= times[i];
      std::set<int64_t> ids;
      for (int64_t j = 0; j < s.edges_per_hop[0]; ++j)
        if (s.rows[static_cast<size_t>(j)] == static_cast<int64_t>(i))
          ids.insert(s.edge_ids[static_cast<size_t>(j)]);
      EXPECT_EQ(static_cast<int64_t>(ids.size()), std::min<int64_t>(6, admissible)) << "seed " << i;
    }
  }
}

TEST(TemporalSampling, BadInputsAreNamed) {
  const Csr graph = temporal_graph(100, 2000, 21, /*weighted=*/true);
  const std::vector<int64_t> seeds{1, 2};
  const std::vector<int64_t> times{10, 20};
  NeighborSamplerOptions options{.fanouts = {3}, .time_source = TimeSource::kEdge};
  EXPECT_EQ(message_of<ValueError>(
                [&] { sample_neighbors(graph, seeds, std::vector<int64_t>{1}, options, 0); }),
            "seed_times has 1 entries, but there are 2 seeds (one time per seed)");
  EXPECT_EQ(message_of<ValueError>([&] { sample_neighbors(graph, seeds, options, 0); }),
            "temporal sampling needs a time per seed (input_time / seed_times), got none");
  const Csr untimed = skewed_random_graph(100, 2000, 21);
  EXPECT_EQ(message_of<ValueError>([&] { sample_neighbors(untimed, seeds, times, options, 0); }),
            "temporal sampling by edge time needs the graph's edge_time, but it has none");
  options.temporal_strategy = TemporalStrategy::kLast;
  const int64_t unsorted = graph.first_row_unsorted_by_edge_time();
  ASSERT_GE(unsorted, 0);
  EXPECT_EQ(message_of<ValueError>([&] { sample_neighbors(graph, seeds, times, options, 0); }),
            fmt::format("temporal_strategy='last' needs every row sorted by edge_time, but row {} "
                        "is not; sort the graph first (sort_rows_by_time, Graph.sort_by_time(), "
                        "volley convert --sort-by-time)",
                        unsorted));
  options.weighted = true;
  EXPECT_EQ(message_of<ValueError>([&] { sample_neighbors(graph, seeds, times, options, 0); }),
            "temporal sampling does not support weighted sampling yet");
  options = {.fanouts = {3}, .time_source = TimeSource::kNode};
  EXPECT_EQ(message_of<ValueError>([&] { NeighborSampler(CudaGraph(), options); }),
            "NeighborSampler on a GPU needs a placed graph (CudaGraph::place), got an empty one");
  HopSample hop;
  EXPECT_EQ(message_of<ValueError>([&] { sample_hop(graph, 0, seeds, 0, 3, options, 0, hop); }),
            "sample_hop without times cannot sample by time: pass HopTimes");
  options.time_source = TimeSource::kNone;
  EXPECT_EQ(message_of<ValueError>([&] { sample_neighbors(graph, seeds, times, options, 0); }),
            "seed times were given, but the options ask for no temporal sampling (set "
            "time_source / time_attr)");
  EXPECT_EQ(temporal_strategy_from_name("last"), TemporalStrategy::kLast);
  EXPECT_EQ(message_of<ValueError>([] { temporal_strategy_from_name("random"); }),
            "temporal_strategy must be 'uniform' or 'last', got 'random'");
}

// sample_hop with times (the distributed sampler's building block): hop by hop, the frontier of
// sample_neighbors(seed_times) with each node's tree time gives exactly that hop's edges, for
// edge and node time, both strategies, sorted and (uniform) unsorted rows.
TEST(TemporalSampler, HopsWithTimesAssembleTheTemporalSample) {
  const Csr timed = temporal_graph(300, 5000, 41);
  const std::vector<int64_t> seeds = {4, 4, 17, 250, 99, 3}, times = random_times(6, 8);
  for (const TimeSource source : {TimeSource::kEdge, TimeSource::kNode}) {
    const TimeKind kind = source == TimeSource::kEdge ? TimeKind::kEdge : TimeKind::kNode;
    for (const bool sorted : {true, false}) {
      const Csr graph = sorted ? sort_rows_by_time(timed, kind) : timed;
      for (const TemporalStrategy strategy :
           {TemporalStrategy::kUniform, TemporalStrategy::kLast}) {
        if (!sorted && strategy == TemporalStrategy::kLast) continue;
        const NeighborSamplerOptions options{.fanouts = {4, 3, -1},
                                             .replace = strategy == TemporalStrategy::kUniform,
                                             .seed = 12,
                                             .time_source = source,
                                             .temporal_strategy = strategy};
        const SampledSubgraph whole = sample_neighbors(graph, seeds, times, options, 5);
        const HostSubgraph s = vectors_of(whole);
        const std::vector<int64_t> batch = whole.batch.to_vector<int64_t>();
        HopTimes hop_times;
        hop_times.rows_sorted = sorted;
        if (source == TimeSource::kEdge) {
          hop_times.edge_time = graph.edge_time()->span<int64_t>();
        } else {
          hop_times.node_time = graph.node_time()->span<int64_t>();
        }
        size_t node_begin = 0, edge_begin = 0;
        for (int hop = 0; hop < 3; ++hop) {
          const auto node_end = node_begin + static_cast<size_t>(s.nodes_per_hop[hop]);
          std::vector<int64_t> targets, target_times;
          for (size_t i = node_begin; i < node_end; ++i) {
            targets.push_back(s.nodes[i]);
            target_times.push_back(times[static_cast<size_t>(batch[i])]);
          }
          hop_times.target_times = target_times;
          HopSample got;
          sample_hop(graph, 0, targets, hop, options.fanouts[static_cast<size_t>(hop)], options, 5,
                     hop_times, got);
          const auto edge_end = edge_begin + static_cast<size_t>(s.edges_per_hop[hop]);
          ASSERT_EQ(got.edge_ids.size(), edge_end - edge_begin) << "hop " << hop;
          for (size_t j = edge_begin; j < edge_end; ++j) {
            ASSERT_EQ(got.edge_ids[j - edge_begin], s.edge_ids[j]) << "hop " << hop;
            ASSERT_EQ(got.neighbors[j - edge_begin], s.nodes[static_cast<size_t>(s.cols[j])]);
          }
          node_begin = node_end;
          edge_begin = edge_end;
        }
        EXPECT_GT(edge_begin, 0u);
      }
    }
  }
}

TEST(TemporalSampler, HopTimesAreChecked) {
  const Csr graph = sort_rows_by_time(temporal_graph(50, 400, 3), TimeKind::kEdge);
  const std::vector<int64_t> targets = {1, 2}, one = {5}, two = {5, 6};
  NeighborSamplerOptions options{.fanouts = {2}, .time_source = TimeSource::kEdge};
  HopSample out;
  HopTimes times{.target_times = one, .edge_time = graph.edge_time()->span<int64_t>()};
  const auto message = [&] {
    return message_of<ValueError>(
        [&] { sample_hop(graph, 0, targets, 0, 2, options, 0, times, out); });
  };
  EXPECT_EQ(message(), "target_times has 1 entries, but there are 2 targets (one time each)");
  times.target_times = two;
  times.edge_time = times.edge_time.subspan(1);
  EXPECT_EQ(message(), "edge_time has 399 entries, but the graph held here has 400 edges");
  options.time_source = TimeSource::kNode;
  EXPECT_EQ(message(), "sampling by node time needs node_time (indexed by global id), got none");
  const std::vector<int64_t> short_node_time(3, 0);
  times.node_time = short_node_time;
  EXPECT_NE(message_of<IndexError>([&] {
              sample_hop(graph, 0, targets, 0, 2, options, 0, times, out);
            }).find("has no node time: node_time has 3 entries"),
            std::string::npos);
  times.node_time = graph.node_time()->span<int64_t>();
  options.temporal_strategy = TemporalStrategy::kLast;
  EXPECT_EQ(message(), "temporal_strategy 'last' needs rows sorted by time");
  options.time_source = TimeSource::kNone;
  EXPECT_EQ(message(), "sample_hop was given times, but options.time_source is none");
}

}  // namespace
}  // namespace volley
