#include "volley/graph/edge_split.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "test_graphs.h"
#include "test_util.h"
#include "volley/core/parallel.h"

namespace volley {
namespace {

using ::testing::HasSubstr;
using Pair = std::pair<int64_t, int64_t>;

// Every edge (src, dst) of `graph`, in CSR order.
std::vector<Pair> edges_of(const Csr& graph) {
  std::vector<Pair> edges;
  for (int64_t row = 0; row < graph.num_nodes(); ++row) {
    for (int64_t k = graph.begin(row); k < graph.end(row); ++k) {
      const int64_t other = graph.neighbor(k);
      edges.push_back(graph.orientation() == Orientation::kIn ? Pair{other, row}
                                                              : Pair{row, other});
    }
  }
  return edges;
}

std::vector<Pair> pairs_of(const std::optional<Array>& array) {
  EXPECT_TRUE(array.has_value());
  if (!array) return {};
  EXPECT_EQ(array->ndim(), 2);
  const int64_t m = array->dim(1);
  const int64_t* data = array->data<int64_t>();
  std::vector<Pair> pairs;
  for (int64_t i = 0; i < m; ++i) pairs.push_back({data[i], data[m + i]});
  return pairs;
}

Pair unit_of(Pair edge, bool undirected) {
  if (undirected && edge.first > edge.second) std::swap(edge.first, edge.second);
  return edge;
}

Dataset dataset_of(Csr graph) {
  Dataset dataset;
  dataset.name = "toy";
  dataset.graph = std::move(graph);
  return dataset;
}

class EdgeSplitTest : public TempDirTest {
 protected:
  // Splits `graph` and checks every invariant of edge_split.h; returns the written dataset.
  Dataset split_and_check(const Csr& graph, const EdgeSplitOptions& options) {
    const std::string out = path(fmt::format("split-{}", counter_++));
    const EdgeSplitSummary summary = split_edges(dataset_of(graph), out, options);
    EXPECT_TRUE(verify_dataset(out).ok());
    Dataset result = load_dataset(out);

    std::map<Pair, int> side_of;  // unit -> 0 train, 1 val, 2 test
    const char* names[] = {"train", "val", "test"};
    const std::optional<Array>* lists[] = {&result.train_edges, &result.val_edges,
                                           &result.test_edges};
    for (int side = 0; side < 3; ++side) {
      for (const Pair& pair : pairs_of(*lists[side])) {
        if (options.undirected) EXPECT_LE(pair.first, pair.second);
        const auto [it, fresh] = side_of.emplace(pair, side);
        EXPECT_TRUE(fresh) << "(" << pair.first << ", " << pair.second << ") is listed in "
                           << names[it->second] << " and in " << names[side];
      }
    }
    // Every edge's unit is on exactly one side; every listed unit is an edge.
    std::set<Pair> units;
    std::multiset<Pair> expected_train_graph;
    for (const Pair& edge : edges_of(graph)) {
      const Pair unit = unit_of(edge, options.undirected);
      units.insert(unit);
      const auto it = side_of.find(unit);
      EXPECT_NE(it, side_of.end())
          << "edge (" << edge.first << ", " << edge.second << ") is on no side";
      if (it != side_of.end() && it->second == 0) expected_train_graph.insert(edge);
    }
    EXPECT_EQ(units.size(), side_of.size());
    const int64_t u = static_cast<int64_t>(units.size());
    EXPECT_EQ(summary.num_units, u);
    EXPECT_EQ(summary.num_val, static_cast<int64_t>(options.val_fraction * static_cast<double>(u)));
    EXPECT_EQ(result.val_edges->dim(1), summary.num_val);
    EXPECT_EQ(result.test_edges->dim(1), summary.num_test);
    // The message-passing graph holds exactly the edges of the training units.
    const std::vector<Pair> train_graph = edges_of(result.graph);
    EXPECT_EQ(std::multiset<Pair>(train_graph.begin(), train_graph.end()), expected_train_graph);
    EXPECT_EQ(result.graph.orientation(), graph.orientation());
    // Negatives: no edge in either direction (undirected) / this direction, no self-loop, all
    // different.
    std::set<Pair> negatives;
    for (const auto* list : {&result.val_neg_edges, &result.test_neg_edges}) {
      for (const Pair& pair : pairs_of(*list)) {
        EXPECT_NE(pair.first, pair.second);
        EXPECT_EQ(units.count(unit_of(pair, options.undirected)), 0u)
            << "negative (" << pair.first << ", " << pair.second << ") is an edge";
        if (options.undirected) EXPECT_LE(pair.first, pair.second);
        EXPECT_TRUE(negatives.insert(pair).second) << "repeated negative";
      }
    }
    EXPECT_EQ(result.val_neg_edges->dim(1),
              static_cast<int64_t>(std::llround(options.neg_ratio * summary.num_val)));
    return result;
  }

  int counter_ = 0;
};

TEST_F(EdgeSplitTest, DirectedSidesAreDisjointAndCoverEveryEdge) {
  // Skewed targets: repeated (src, dst) pairs, which must stay together.
  const Csr graph = skewed_random_graph(500, 6000, 3);
  const Dataset result =
      split_and_check(graph, {.val_fraction = 0.1, .test_fraction = 0.2, .seed = 7});
  EXPECT_TRUE(result.graph.has_edge_ids());  // the input's edge ids come along
  EXPECT_TRUE(result.graph.has_weights());
}

TEST_F(EdgeSplitTest, UndirectedKeepsBothDirectionsOnOneSide) {
  std::vector<int64_t> src, dst;
  for (int64_t i = 0; i < 3000; ++i) {
    src.push_back((i * 7919) % 800);
    dst.push_back((i * 104729 + 13) % 800);
  }
  const Csr graph = build_csr(Array::from_vector(src), Array::from_vector(dst), std::nullopt,
                              {.num_nodes = 800, .symmetrize = true});
  const Dataset result = split_and_check(graph, {.val_fraction = 0.05,
                                                 .test_fraction = 0.1,
                                                 .undirected = true,
                                                 .seed = 1,
                                                 .neg_ratio = 2.0});
  // Both directions of each training pair are message-passing edges.
  const std::vector<Pair> mp = edges_of(result.graph);
  const std::set<Pair> mp_set(mp.begin(), mp.end());
  for (const Pair& pair : pairs_of(result.train_edges)) {
    EXPECT_TRUE(mp_set.count(pair) && mp_set.count({pair.second, pair.first}));
  }
  for (const Pair& pair : pairs_of(result.val_edges)) {
    EXPECT_FALSE(mp_set.count(pair) || mp_set.count({pair.second, pair.first}));
  }
}

TEST_F(EdgeSplitTest, OutOrientationAndInt64IndicesAndNoNegatives) {
  const Csr graph = skewed_random_graph(300, 2000, 5, {.force_int64_indices = true}).transposed();
  ASSERT_EQ(graph.orientation(), Orientation::kOut);
  const Dataset result = split_and_check(
      graph, {.val_fraction = 0.0, .test_fraction = 0.3, .seed = 2, .neg_ratio = 1.0});
  EXPECT_EQ(result.graph.index_dtype(), DType::kInt64);
  const std::string out = path("no-neg");
  split_edges(dataset_of(graph), out, {.neg_ratio = 0.0});
  EXPECT_FALSE(load_dataset(out).val_neg_edges.has_value());
}

// The bytes of every file of a dataset directory.
std::map<std::string, std::string> files_of(const std::string& directory) {
  std::map<std::string, std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(directory)) {
    std::ifstream stream(entry.path(), std::ios::binary);
    files[entry.path().filename().string()] =
        std::string(std::istreambuf_iterator<char>(stream), {});
  }
  return files;
}

TEST_F(EdgeSplitTest, SameBytesForAnySeedRunAndThreadCountDifferentForAnotherSeed) {
  // Big enough for several bucket bits and chunks.
  const Csr graph = skewed_random_graph(20000, 300000, 9);
  const int threads = get_num_threads();
  const EdgeSplitOptions options{.undirected = true, .seed = 11};
  set_num_threads(1);
  split_edges(dataset_of(graph), path("one"), options);
  set_num_threads(4);
  split_edges(dataset_of(graph), path("four"), options);
  split_edges(dataset_of(graph), path("other-seed"), {.undirected = true, .seed = 12});
  set_num_threads(threads);
  EXPECT_EQ(files_of(path("one")), files_of(path("four")));
  EXPECT_NE(files_of(path("one"))["val_edges.npy"], files_of(path("other-seed"))["val_edges.npy"]);
}

TEST_F(EdgeSplitTest, CopiesNodeDataAndReadsADirectory) {
  Dataset dataset = dataset_of(skewed_random_graph(100, 800, 1));
  dataset.features = Array::zeros(DType::kFloat32, {100, 3});
  dataset.labels = Array::zeros(DType::kInt64, {100});
  dataset.num_classes = 1;
  save_dataset(dataset, path("in"));
  split_edges(path("in"), path("out"), {});
  const Dataset result = load_dataset(path("out"));
  ASSERT_TRUE(result.features.has_value());
  EXPECT_EQ(result.features->shape(), (std::vector<int64_t>{100, 3}));
  EXPECT_EQ(result.num_classes, 1);
  EXPECT_EQ(result.name, "toy");
}

TEST_F(EdgeSplitTest, BadInputsNameTheProblemAndWriteNothing) {
  const Dataset dataset = dataset_of(skewed_random_graph(50, 200, 1));
  auto error = [&](const EdgeSplitOptions& options, const std::string& out = "") {
    return message_of<Error>(
        [&] { split_edges(dataset, out.empty() ? path("bad") : out, options); });
  };
  EXPECT_THAT(error({.val_fraction = 1.0}), HasSubstr("val fraction 1 is outside [0, 1)"));
  EXPECT_THAT(error({.val_fraction = -0.1}), HasSubstr("val fraction -0.1 is outside"));
  EXPECT_THAT(error({.test_fraction = 1.5}), HasSubstr("test fraction 1.5 is outside"));
  EXPECT_THAT(error({.val_fraction = 0.5, .test_fraction = 0.5}),
              HasSubstr("val fraction 0.5 + test fraction 0.5 = 1"));
  EXPECT_THAT(error({.neg_ratio = -1}), HasSubstr("neg_ratio -1"));
  EXPECT_FALSE(std::filesystem::exists(path("bad")));

  std::filesystem::create_directories(path("full"));
  std::ofstream(path("full") + "/x") << "x";
  EXPECT_THAT(error({}, path("full")), HasSubstr("exists and is not empty"));
  EXPECT_THAT(error({}, path("full") + "/x"), HasSubstr("is not a directory"));
  EXPECT_THAT(message_of<IoError>([&] { split_edges(path("missing"), path("o"), {}); }),
              HasSubstr("is not a dataset directory"));
  // Too many negatives for a nearly complete graph.
  std::vector<int64_t> src, dst;
  for (int64_t a = 0; a < 6; ++a)
    for (int64_t b = 0; b < 6; ++b)
      if (a != b && !(a == 0 && b == 1)) src.push_back(a), dst.push_back(b);
  const Dataset dense = dataset_of(build_csr(Array::from_vector(src), Array::from_vector(dst)));
  EXPECT_THAT(message_of<ValueError>([&] {
                split_edges(dense, path("dense"), {.val_fraction = 0.5, .test_fraction = 0.1});
              }),
              HasSubstr("non-edges"));
  // An empty directory is fine.
  std::filesystem::create_directories(path("empty"));
  EXPECT_EQ(error({}, path("empty")), "<no exception>");
}

}  // namespace
}  // namespace volley
