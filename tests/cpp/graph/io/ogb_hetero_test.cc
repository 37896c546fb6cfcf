#include "volley/graph/io/ogb_hetero.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>

#include "test_util.h"
#include "volley/graph/hetero_dataset.h"

namespace volley {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// A tiny dataset in OGB's heterogeneous layout (ogbn-mag's files).
class OgbHeteroTest : public ::testing::Test {
 protected:
  void write_gz(const std::string& relative, const std::string& text) const {
    const fs::path path = fs::path(root()) / relative;
    fs::create_directories(path.parent_path());
    gzFile file = gzopen(path.c_str(), "wb");
    ASSERT_NE(file, nullptr);
    if (!text.empty()) ASSERT_EQ(gzwrite(file, text.data(), text.size()), int(text.size()));
    ASSERT_EQ(gzclose(file), Z_OK);
  }
  std::string root() const { return (fs::path(dir_.path()) / "ogbn_mini").string(); }
  std::string out() const { return (fs::path(dir_.path()) / "out").string(); }
  void write_mini() const {
    write_gz("raw/num-node-dict.csv.gz", "author,paper\n3,4\n");
    write_gz("raw/relations/author___writes___paper/edge.csv.gz", "0,0\n1,0\n2,3\n");
    write_gz("raw/relations/paper___cites___paper/edge.csv.gz", "1,0\n3,2\n");
    write_gz("raw/node-feat/paper/node-feat.csv.gz", "0.5,1\n2,3\n4,5\n6,7.5\n");
    write_gz("raw/node-label/paper/node-label.csv.gz", "1\n0\n2\n1\n");
    write_gz("split/time/paper/train.csv.gz", "0\n1\n");
    write_gz("split/time/paper/valid.csv.gz", "2\n");
    write_gz("split/time/paper/test.csv.gz", "3\n");
  }
  TempDir dir_;
};

TEST_F(OgbHeteroTest, ConvertsEveryTypeAndTheSplit) {
  write_mini();
  EXPECT_TRUE(is_ogb_hetero_directory(root()));
  const OgbConversion done = convert_ogb_hetero_dataset(root(), out());
  EXPECT_EQ(done.name, "ogbn_mini");
  EXPECT_EQ(done.num_nodes, 7);
  EXPECT_EQ(done.num_edges, 5);
  EXPECT_EQ(done.split, "time");
  EXPECT_TRUE(verify_hetero_dataset(out()).ok());
  const HeteroDataset dataset = load_hetero_dataset(out());
  ASSERT_EQ(dataset.graph.num_node_types(), 2);
  EXPECT_EQ(dataset.graph.node_types()[0].name, "author");
  const Csr& writes = dataset.graph.edges({"author", "writes", "paper"});
  EXPECT_EQ(writes.degree(0), 2);   // paper 0: authors 0 and 1
  EXPECT_EQ(writes.edge_id(2), 2);  // the third line
  const NodeTypeData& paper = dataset.node("paper");
  EXPECT_EQ(paper.features->data<float>()[7], 7.5f);
  EXPECT_EQ(paper.num_classes, 3);
  EXPECT_EQ(paper.val_idx->data<int64_t>()[0], 2);
  EXPECT_FALSE(dataset.node("author").features.has_value());
}

TEST_F(OgbHeteroTest, PreciseErrors) {
  write_mini();
  write_gz("raw/relations/author___writes___paper/edge.csv.gz", "0,0\n3,1\n");
  EXPECT_THAT(message_of<IndexError>([&] { convert_ogb_hetero_dataset(root(), out()); }),
              HasSubstr("edge.csv.gz:2: edge 3 -> 1 out of range for 3 author and 4 paper nodes"));
  write_mini();
  write_gz("raw/node-feat/paper/node-feat.csv.gz", "1,2\n3\n");
  EXPECT_THAT(message_of<ValueError>([&] { convert_ogb_hetero_dataset(root(), out()); }),
              HasSubstr("node-feat.csv.gz:2: expected 2 values"));
  write_mini();
  EXPECT_THAT(message_of<ValueError>(
                  [&] { convert_ogb_hetero_dataset(root(), out(), {.undirected = true}); }),
              HasSubstr("a heterogeneous OGB dataset takes no --undirected"));
}

}  // namespace
}  // namespace volley
