// `volley generate --model temporal` (generate.h): seeded, times consistent, and a planted signal
// that recent behaviour predicts the next link.
#include <gtest/gtest.h>

#include <map>

#include "test_util.h"
#include "volley/graph/dataset.h"
#include "volley/graph/internal/generator.h"

namespace volley {
namespace {

GeneratorOptions temporal_options(uint64_t seed) {
  return {.model = GraphModel::kTemporal,
          .num_nodes = 2000,
          .num_edges = 40000,
          .num_classes = 10,
          .seed = seed,
          .homophily = 0.8};
}

TEST(GenerateTemporal, SeededWithConsistentTimes) {
  const auto a = generator_internal::generate_temporal(temporal_options(3));
  const auto b = generator_internal::generate_temporal(temporal_options(3));
  const auto c = generator_internal::generate_temporal(temporal_options(4));
  EXPECT_EQ(a.src.to_vector<int64_t>(), b.src.to_vector<int64_t>());
  EXPECT_EQ(a.dst.to_vector<int64_t>(), b.dst.to_vector<int64_t>());
  EXPECT_EQ(a.graph.indices().to_vector<int32_t>(), b.graph.indices().to_vector<int32_t>());
  EXPECT_NE(a.dst.to_vector<int64_t>(), c.dst.to_vector<int64_t>());
  const Csr& g = a.graph;
  EXPECT_EQ(g.num_edges(), 80000);  // each interaction both ways
  EXPECT_EQ(g.first_row_unsorted_by_edge_time(), -1);
  const auto src = a.src.to_vector<int64_t>(), dst = a.dst.to_vector<int64_t>();
  const int64_t* edge_time = g.edge_time()->data<int64_t>();
  const int64_t* node_time = g.node_time()->data<int64_t>();
  for (int64_t v = 0; v < g.num_nodes(); ++v) {
    for (int64_t k = g.begin(v); k < g.end(v); ++k) {
      const int64_t e = g.edge_id(k);
      ASSERT_EQ(edge_time[k], e);  // event e happens at time e
      const int64_t u = g.neighbor(k);
      ASSERT_TRUE((src[e] == u && dst[e] == v) || (src[e] == v && dst[e] == u)) << "edge " << e;
      ASSERT_LE(node_time[v], e);
    }
  }
}

// The next item's cluster: the last item's cluster beats the majority of the whole history.
TEST(GenerateTemporal, RecentBehaviourPredictsTheNextLink) {
  const GeneratorOptions options = temporal_options(7);
  const auto stream = generator_internal::generate_temporal(options);
  const auto src = stream.src.to_vector<int64_t>(), dst = stream.dst.to_vector<int64_t>();
  const auto labels = stream.labels.to_vector<int64_t>();
  std::map<int64_t, int64_t> last;                      // user -> last item cluster
  std::map<int64_t, std::map<int64_t, int64_t>> count;  // user -> cluster -> events
  int64_t recent_hits = 0, history_hits = 0, predictions = 0;
  for (size_t e = 0; e < src.size(); ++e) {
    const int64_t user = src[e], cluster = labels[static_cast<size_t>(dst[e])];
    if (last.count(user)) {
      ++predictions;
      recent_hits += last[user] == cluster;
      int64_t best = -1, best_count = -1;
      for (const auto& [c, n] : count[user])
        if (n > best_count) best = c, best_count = n;
      history_hits += best == cluster;
    }
    last[user] = cluster;
    ++count[user][cluster];
  }
  const double recent = static_cast<double>(recent_hits) / static_cast<double>(predictions);
  const double history = static_cast<double>(history_hits) / static_cast<double>(predictions);
  EXPECT_GT(recent, 0.5) << "recent " << recent;  // chance: 1 / 10
  EXPECT_GT(recent, history + 0.03) << "history " << history;
}

TEST(GenerateTemporal, DatasetCarriesTimesAndBadOptionsAreNamed) {
  TempDir dir("volley-gen-temporal");
  const GeneratedDataset result = generate_dataset(temporal_options(1), dir.path());
  EXPECT_EQ(result.num_edges, 80000);
  const Dataset loaded = load_dataset(dir.path(), {.verify_checksums = true});
  EXPECT_TRUE(loaded.graph.has_edge_time() && loaded.graph.has_node_time());
  EXPECT_EQ(loaded.graph.first_row_unsorted_by_edge_time(), -1);
  GeneratorOptions options = temporal_options(1);
  options.num_nodes = 20;  // 4 items < 10 classes
  EXPECT_EQ(message_of<ValueError>([&] { generator_internal::generate_temporal(options); }),
            "--model temporal needs at least one user and num_classes (--classes) <= the 4 items "
            "(num_nodes / 5), got 20 nodes and 10 classes");
  EXPECT_EQ(graph_model_from_name("temporal"), GraphModel::kTemporal);
}

}  // namespace
}  // namespace volley
