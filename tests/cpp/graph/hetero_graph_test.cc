#include "volley/graph/hetero_graph.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "test_util.h"
#include "volley/graph/generate_hetero.h"
#include "volley/graph/hetero_dataset.h"
#include "volley/graph/io/hetero_edges.h"
#include "volley/graph/io/npy.h"

namespace volley {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// 3 papers, 2 authors: writes (author -> paper), cites (paper -> paper).
HeteroGraph toy_graph() {
  const Csr writes = build_bipartite_csr(Array::from_vector<int64_t>({0, 1, 1}),
                                         Array::from_vector<int64_t>({0, 0, 2}), 2, 3);
  const Csr cites = build_bipartite_csr(Array::from_vector<int64_t>({1, 2}),
                                        Array::from_vector<int64_t>({0, 1}), 3, 3);
  return HeteroGraph({{"paper", 3}, {"author", 2}}, {{{"author", "writes", "paper"}, writes},
                                                     {{"paper", "cites", "paper"}, cites}});
}

TEST(HeteroGraphTest, TypesCountsAndRows) {
  const HeteroGraph graph = toy_graph();
  EXPECT_EQ(graph.num_node_types(), 2);
  EXPECT_EQ(graph.num_nodes("author"), 2);
  EXPECT_EQ(graph.total_edges(), 5);
  const Csr& writes = graph.edges({"author", "writes", "paper"});
  EXPECT_EQ(writes.num_nodes(), 3);  // rows: papers
  ASSERT_EQ(writes.degree(0), 2);    // paper 0 written by authors 0 and 1
  EXPECT_EQ(writes.neighbor(writes.begin(0)), 0);
  EXPECT_EQ(writes.neighbor(writes.begin(0) + 1), 1);
  EXPECT_EQ(writes.edge_id(writes.begin(2)), 2);  // COO position kept
  EXPECT_EQ(EdgeType::from_name("author__writes__paper"), (EdgeType{"author", "writes", "paper"}));
}

TEST(HeteroGraphTest, PreciseErrors) {
  const HeteroGraph graph = toy_graph();
  EXPECT_THAT(message_of<ValueError>([&] { graph.num_nodes("venue"); }),
              HasSubstr("unknown node type 'venue' (node types: paper, author)"));
  EXPECT_THAT(message_of<ValueError>([&] {
                graph.edges({"paper", "writes", "author"});
              }),
              HasSubstr("unknown edge type paper__writes__author (edge types: "
                        "author__writes__paper, paper__cites__paper)"));
  EXPECT_THAT(message_of<IndexError>([] {
                build_bipartite_csr(Array::from_vector<int64_t>({0, 5}),
                                    Array::from_vector<int64_t>({0, 0}), 2, 3, std::nullopt,
                                    "author__writes__paper");
              }),
              HasSubstr("edge type author__writes__paper: src[1] = 5 out of range"));
  const Csr three_rows =
      build_bipartite_csr(Array::from_vector<int64_t>({1}), Array::from_vector<int64_t>({2}), 2, 3);
  EXPECT_THAT(message_of<ValueError>([&] {
                HeteroGraph({{"paper", 3}}, {{{"author", "writes", "paper"}, three_rows}});
              }),
              HasSubstr("'author' is not a node type (node types: paper)"));
  EXPECT_THAT(
      message_of<ValueError>([&] {
        HeteroGraph({{"paper", 4}, {"author", 2}}, {{{"author", "writes", "paper"}, three_rows}});
      }),
      HasSubstr("the Csr has 3 rows, expected one per 'paper' node (4)"));
  // Indices are checked against the source type's count, not the row count.
  const std::vector<NodeTypeInfo> one_author = {{"paper", 3}, {"author", 1}};
  const std::vector<std::pair<EdgeType, Csr>> writes = {
      {{"author", "writes", "paper"}, three_rows}};
  EXPECT_THAT(message_of<IndexError>([&] { HeteroGraph graph(one_author, writes); }),
              HasSubstr("indices[0] = 1 out of range for source type with 1 nodes"));
  EXPECT_THAT(message_of<ValueError>([] {
                HeteroGraph graph({{"a__b", 1}}, {});
              }),
              HasSubstr("bad node type name 'a__b'"));
  EXPECT_THAT(message_of<ValueError>([] { EdgeType::from_name("author__paper"); }),
              HasSubstr("not an edge type name"));
}

TEST(HeteroDatasetTest, SaveLoadRoundTripAndVerify) {
  TempDir dir;
  HeteroDataset dataset;
  dataset.name = "toy";
  dataset.graph = toy_graph();
  NodeTypeData paper;
  Array x = Array::empty(DType::kFloat32, {3, 2});
  for (int i = 0; i < 6; ++i) x.data<float>()[i] = static_cast<float>(i);
  paper.features = x;
  paper.labels = Array::from_vector<int64_t>({0, 2, -1});
  paper.num_classes = 3;
  paper.train_idx = Array::from_vector<int64_t>({0, 1});
  dataset.node_data = {paper, NodeTypeData{}};  // authors: no data at all
  save_hetero_dataset(dataset, dir.path());
  EXPECT_TRUE(is_hetero_dataset_directory(dir.path()));
  EXPECT_TRUE(verify_hetero_dataset(dir.path()).ok());

  const HeteroDataset loaded = load_hetero_dataset(dir.path(), {.verify_checksums = true});
  EXPECT_EQ(loaded.name, "toy");
  ASSERT_EQ(loaded.graph.num_edge_types(), 2);
  EXPECT_EQ(loaded.graph.edge_types()[1], (EdgeType{"paper", "cites", "paper"}));
  const Csr& writes = loaded.graph.edges({"author", "writes", "paper"});
  EXPECT_EQ(writes.num_edges(), 3);
  EXPECT_EQ(writes.neighbor(2), 1);
  EXPECT_EQ(loaded.node("paper").features->data<float>()[5], 5.0f);
  EXPECT_EQ(loaded.node("paper").labels->data<int64_t>()[1], 2);
  EXPECT_EQ(loaded.node("paper").num_classes, 3);
  EXPECT_FALSE(loaded.node("author").features.has_value());

  // The homogeneous reader refuses it with a pointer to the right one.
  EXPECT_THAT(message_of<IoError>([&] { load_dataset(dir.path()); }),
              HasSubstr("version 2 is a heterogeneous one"));

  // A corrupted array is named by verify (type and file).
  {
    std::fstream file((fs::path(dir.path()) / "author__writes__paper.indices.npy").string(),
                      std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(-1, std::ios::end);
    file.put('\x7f');
  }
  const DatasetCheck check = verify_hetero_dataset(dir.path());
  ASSERT_FALSE(check.ok());
  EXPECT_THAT(check.problems[0], HasSubstr("author__writes__paper.indices.npy"));
}

TEST(HeteroDatasetTest, SaveRefusesBadArraysNamingTheType) {
  TempDir dir;
  HeteroDataset dataset;
  dataset.graph = toy_graph();
  NodeTypeData author;
  author.labels = Array::from_vector<int64_t>({0, 1, 0});  // 3 labels for 2 authors
  dataset.node_data = {NodeTypeData{}, author};
  EXPECT_THAT(message_of<ValueError>([&] { save_hetero_dataset(dataset, dir.path()); }),
              HasSubstr("node type author: labels: shape: expected [2], found [3]"));
}

TEST(HeteroDatasetTest, ReadsWithTheChecksOfAHomogeneousDataset) {
  TempDir dir;
  HeteroDataset dataset;
  dataset.graph = toy_graph();
  NodeTypeData paper;
  paper.labels = Array::from_vector<int64_t>({0, 1, 0});
  paper.num_classes = 2;
  dataset.node_data = {paper, NodeTypeData{}};
  save_hetero_dataset(dataset, dir.path());
  // The topology read into memory is read-only, as a homogeneous dataset's.
  const HeteroDataset loaded = load_hetero_dataset(dir.path());
  EXPECT_FALSE(loaded.graph.edges(0).indptr().buffer().writable());
  EXPECT_TRUE(load_hetero_dataset(dir.path(), {.memory_map = false})
                  .graph.edges(0)
                  .indptr()
                  .buffer()
                  .writable());

  // Counts that disagree with a file: the error names the type, the field and the counts.
  const std::string manifest = (fs::path(dir.path()) / "volley.json").string();
  std::stringstream text;
  text << std::ifstream(manifest).rdbuf();
  auto json = nlohmann::ordered_json::parse(text.str());
  json["node_types"][0]["num_nodes"] = 4;
  std::ofstream(manifest) << json.dump(2);
  EXPECT_THAT(
      message_of<ValueError>([&] { load_hetero_dataset(dir.path()); }),
      HasSubstr(manifest + ": node type paper: arrays.labels.shape: expected [4], found [3] "
                           "(num_nodes 4)"));
  const DatasetCheck check = verify_hetero_dataset(dir.path());
  ASSERT_EQ(check.problems.size(), 3u);  // the labels, writes' and cites' indptr
  EXPECT_THAT(check.problems[1], HasSubstr("edge type author__writes__paper: arrays.indptr.shape: "
                                           "expected [5], found [4] (4 nodes of type paper, "
                                           "num_edges 3)"));

  // A version-1 field is not a typed one; the writer names the kind.
  json["node_types"][0]["num_nodes"] = 3;
  json["node_types"][0]["arrays"]["node_time"] = json["node_types"][0]["arrays"]["labels"];
  std::ofstream(manifest) << json.dump(2);
  EXPECT_THAT(message_of<IoError>([&] { load_hetero_dataset(dir.path()); }),
              HasSubstr("node_types[0].arrays.node_time: expected one of features, labels, "
                        "train_idx, val_idx, test_idx, found 'node_time'"));
  HeteroDatasetWriter writer(dir.path(), "toy", {{"paper", 3}}, {});
  EXPECT_THAT(message_of<ValueError>([&] { writer.node_path("paper", "indptr"); }),
              HasSubstr("HeteroDatasetWriter: unknown node array 'indptr'"));
}

TEST(HeteroEdgeDirectoryTest, ReadsNpyAndTextEdgeFiles) {
  TempDir dir;
  const fs::path base(dir.path());
  Array writes = Array::empty(DType::kInt64, {2, 3});
  const int64_t values[] = {0, 1, 2, 0, 0, 3};  // row 0 sources (authors), row 1 papers
  std::copy(values, values + 6, writes.data<int64_t>());
  write_npy((base / "author__writes__paper.npy").string(), writes);
  std::ofstream((base / "paper__has_topic__topic.txt").string()) << "0 1\n4 0\n";
  std::ofstream((base / "author.num_nodes").string()) << "5\n";
  const HeteroDataset dataset = read_hetero_edge_directory(dir.path());
  EXPECT_EQ(dataset.graph.num_nodes("author"), 5);  // given
  EXPECT_EQ(dataset.graph.num_nodes("paper"), 5);   // 1 + largest id (4, a has_topic source)
  EXPECT_EQ(dataset.graph.num_nodes("topic"), 2);
  const Csr& csr = dataset.graph.edges({"author", "writes", "paper"});
  EXPECT_EQ(csr.degree(0), 2);
  EXPECT_EQ(csr.edge_id(csr.begin(3)), 2);
  std::ofstream((base / "bad__name.npy").string()) << "x";
  EXPECT_THAT(message_of<ValueError>([&] { read_hetero_edge_directory(dir.path()); }),
              HasSubstr("bad__name.npy"));
}

TEST(HeteroGeneratorTest, ShapeAndDeterminism) {
  GeneratorOptions options = mag_generator_options();
  options.num_nodes = 3000;
  options.num_classes = 5;
  options.feature_dim = 8;
  options.reverse = true;
  const HeteroGraph graph = generate_hetero_graph(options);
  ASSERT_EQ(graph.num_node_types(), 4);
  ASSERT_EQ(graph.num_edge_types(), 8);
  EXPECT_EQ(graph.num_nodes("author"), 4622);  // 3000 * 1134649 / 736389
  const Csr& writes = graph.edges({"author", "writes", "paper"});
  // Mean in-degree near ogbn-mag's 9.7 authors per paper.
  EXPECT_NEAR(static_cast<double>(writes.num_edges()) / 3000.0, 9.7, 0.7);
  // Rows sorted and distinct; cites has no self loops.
  const Csr& cites = graph.edges({"paper", "cites", "paper"});
  for (int64_t v = 0; v < cites.num_nodes(); ++v) {
    for (int64_t k = cites.begin(v); k < cites.end(v); ++k) {
      EXPECT_NE(cites.neighbor(k), v);
      if (k > cites.begin(v)) EXPECT_LT(cites.neighbor(k - 1), cites.neighbor(k));
    }
  }
  // A reverse edge carries the id of the forward edge it reverses.
  const Csr& rev = graph.edges({"paper", "rev_writes", "author"});
  EXPECT_EQ(rev.num_edges(), writes.num_edges());
  for (int64_t a = 0; a < rev.num_nodes(); a += 97) {
    for (int64_t k = rev.begin(a); k < rev.end(a); ++k) {
      const int64_t forward = rev.edge_id(k);
      const int64_t paper = rev.neighbor(k);
      EXPECT_GE(forward, writes.begin(paper));
      EXPECT_LT(forward, writes.end(paper));
      EXPECT_EQ(writes.neighbor(forward), a);
    }
  }
  // Same options, same bytes.
  const HeteroGraph again = generate_hetero_graph(options);
  for (int e = 0; e < graph.num_edge_types(); ++e) {
    const Csr& a = graph.edges(e);
    const Csr& b = again.edges(e);
    ASSERT_EQ(a.num_edges(), b.num_edges());
    EXPECT_EQ(0, std::memcmp(a.indices().raw_data(), b.indices().raw_data(), a.indices().nbytes()));
  }
  options.seed = 1;
  EXPECT_NE(generate_hetero_graph(options).total_edges(), graph.total_edges());
}

TEST(HeteroGeneratorTest, LabelsFollowAuthors) {
  // Homophily: a paper's authors mostly share a home class, so two papers with a common author
  // agree on their label far more often than chance (1 / classes).
  GeneratorOptions options = mag_generator_options();
  options.num_nodes = 4000;
  options.num_classes = 10;
  options.feature_dim = 0;
  options.homophily = 0.8;
  const HeteroGraph graph = generate_hetero_graph(options);
  const Array labels = generate_labels(options);
  const int64_t* y = labels.data<int64_t>();
  const Csr rev = graph.edges({"paper", "cites", "paper"}).transposed();
  const Csr by_author = graph.edges({"author", "writes", "paper"}).transposed();  // rows: authors
  ASSERT_EQ(by_author.num_nodes(), graph.num_nodes("author"));
  EXPECT_EQ(rev.num_nodes(), 4000);
  int64_t same = 0, pairs = 0;
  for (int64_t a = 0; a < by_author.num_nodes(); ++a) {
    for (int64_t k = by_author.begin(a) + 1; k < by_author.end(a); ++k) {
      same += y[by_author.neighbor(k)] == y[by_author.neighbor(by_author.begin(a))];
      ++pairs;
    }
  }
  ASSERT_GT(pairs, 1000);
  EXPECT_GT(static_cast<double>(same) / static_cast<double>(pairs), 0.3);
}

TEST(HeteroGeneratorTest, WritesADirectoryThatVerifies) {
  TempDir dir;
  GeneratorOptions options = mag_generator_options();
  options.num_nodes = 500;
  options.num_classes = 4;
  options.feature_dim = 4;
  const GeneratedDataset result = generate_hetero_dataset(options, dir.path());
  EXPECT_EQ(result.name, "mag-500-seed0");
  EXPECT_TRUE(verify_hetero_dataset(dir.path()).ok());
  const HeteroDataset dataset = load_hetero_dataset(dir.path());
  EXPECT_EQ(dataset.graph.total_edges(), result.num_edges);
  EXPECT_EQ(dataset.node("paper").features->dim(1), 4);
  EXPECT_FALSE(dataset.node("author").features.has_value());
  EXPECT_THAT(message_of<ValueError>([] {
                GeneratorOptions bad = mag_generator_options();
                bad.homophily = 2;
                generate_hetero_graph(bad);
              }),
              HasSubstr("homophily must be in [0, 1], got 2"));
}

}  // namespace
}  // namespace volley
