// Timestamps on a Csr, sorting rows by time, and node_time.npy / edge_time.npy in a dataset.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <random>
#include <tuple>

#include "test_graphs.h"
#include "test_util.h"
#include "volley/graph/dataset.h"
#include "volley/graph/io/npy.h"

namespace volley {
namespace {

Csr timed_graph(int64_t n, int64_t m, uint64_t seed) {
  const Csr graph = skewed_random_graph(n, m, seed);
  std::mt19937_64 rng(seed);
  std::vector<int64_t> node_time(static_cast<size_t>(n)), edge_time(static_cast<size_t>(m));
  for (auto& t : node_time) t = static_cast<int64_t>(rng() % 50);
  for (auto& t : edge_time) t = static_cast<int64_t>(rng() % 50);
  return graph.with_times(Array::from_vector(node_time), Array::from_vector(edge_time));
}

// (neighbor, edge id, weight, edge time) of every entry of row v, as a sorted list.
std::vector<std::tuple<int64_t, int64_t, float, int64_t>> row_entries(const Csr& g, int64_t v) {
  std::vector<std::tuple<int64_t, int64_t, float, int64_t>> out;
  for (int64_t k = g.begin(v); k < g.end(v); ++k) {
    out.emplace_back(g.neighbor(k), g.edge_id(k), g.weights()->data<float>()[k],
                     g.edge_time()->data<int64_t>()[k]);
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(CsrTime, SortRowsByTimePermutesEverythingTogether) {
  const Csr graph = timed_graph(300, 5000, 4);
  ASSERT_GE(graph.first_row_unsorted_by_edge_time(), 0);
  ASSERT_GE(graph.first_row_unsorted_by_node_time(), 0);
  for (TimeKind kind : {TimeKind::kEdge, TimeKind::kNode}) {
    const Csr sorted = sort_rows_by_time(graph, kind);
    const int64_t* node_time = sorted.node_time()->data<int64_t>();
    const int64_t* edge_time = sorted.edge_time()->data<int64_t>();
    EXPECT_EQ(kind == TimeKind::kEdge ? sorted.first_row_unsorted_by_edge_time()
                                      : sorted.first_row_unsorted_by_node_time(),
              -1);
    for (int64_t v = 0; v < graph.num_nodes(); ++v) {
      ASSERT_EQ(row_entries(sorted, v), row_entries(graph, v)) << "row " << v;
      for (int64_t k = sorted.begin(v) + 1; k < sorted.end(v); ++k) {
        const auto time = [&](int64_t p) {
          return kind == TimeKind::kEdge ? edge_time[p] : node_time[sorted.neighbor(p)];
        };
        ASSERT_LE(time(k - 1), time(k)) << "row " << v;
      }
    }
  }
}

TEST(CsrTime, TransposedCarriesTimesAndBadTimesAreNamed) {
  const Csr graph = timed_graph(100, 1500, 7);
  const Csr back = graph.transposed().transposed();
  std::map<int64_t, int64_t> time_of, back_time_of;  // edge id -> time
  for (int64_t k = 0; k < graph.num_edges(); ++k) {
    time_of[graph.edge_id(k)] = graph.edge_time()->data<int64_t>()[k];
    back_time_of[back.edge_id(k)] = back.edge_time()->data<int64_t>()[k];
  }
  EXPECT_EQ(back_time_of, time_of);
  EXPECT_EQ(back.node_time()->to_vector<int64_t>(), graph.node_time()->to_vector<int64_t>());
  EXPECT_EQ(message_of<ValueError>(
                [&] { graph.with_times(Array::from_vector(std::vector<int64_t>(3)), {}); }),
            "node_time must be a 1-d int64 array with one entry per node (100), got int64[3]");
  EXPECT_EQ(message_of<ValueError>(
                [&] { graph.with_times({}, Array::from_vector(std::vector<float>(1500))); }),
            "edge_time must be a 1-d int64 array with one entry per edge (1500), got "
            "float32[1500]");
  EXPECT_EQ(message_of<ValueError>(
                [] { sort_rows_by_time(skewed_random_graph(10, 20, 1), TimeKind::kNode); }),
            "sorting rows by node time needs node_time, but the graph has none");
}

TEST(CsrTime, DatasetStoresTimesAndChecksThem) {
  TempDir dir("volley-time");
  Dataset dataset;
  dataset.name = "timed";
  dataset.graph = timed_graph(80, 900, 2);
  save_dataset(dataset, dir.path());
  EXPECT_TRUE(std::filesystem::exists(dir / "edge_time.npy"));
  const Dataset loaded = load_dataset(dir.path(), {.verify_checksums = true});
  EXPECT_EQ(loaded.graph.edge_time()->to_vector<int64_t>(),
            dataset.graph.edge_time()->to_vector<int64_t>());
  EXPECT_EQ(loaded.graph.node_time()->to_vector<int64_t>(),
            dataset.graph.node_time()->to_vector<int64_t>());
  EXPECT_EQ(loaded.graph.first_row_unsorted_by_edge_time(),
            dataset.graph.first_row_unsorted_by_edge_time());
  EXPECT_TRUE(verify_dataset(dir.path()).ok());
  // A file that disagrees with the manifest: verify reports it.
  write_npy(dir / "node_time.npy", Array::from_vector(std::vector<int64_t>(79)));
  const DatasetCheck check = verify_dataset(dir.path());
  ASSERT_FALSE(check.ok());
  EXPECT_NE(check.problems[0].find("node_time.npy"), std::string::npos) << check.problems[0];
}

}  // namespace
}  // namespace volley
