#include "volley/graph/io/edge_list.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include "test_util.h"

namespace volley {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

class EdgeListTest : public TempDirTest {
 protected:
  EdgeListTest() : TempDirTest("volley-edges-test") {}

  std::string write(const std::string& text, const std::string& name = "g.txt") const {
    const std::string path = (fs::path(dir_) / name).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }

  // The IoError message of reading `text`.
  std::string error_of(const std::string& text, const EdgeListOptions& options = {}) const {
    const std::string path = write(text);
    try {
      read_edge_list(path, options);
    } catch (const IoError& error) {
      return error.what();
    }
    ADD_FAILURE() << "no error for:\n" << text;
    return "";
  }

  std::string path_of(const std::string& name) const { return (fs::path(dir_) / name).string(); }
};

TEST_F(EdgeListTest, ReadsSeparatorsCommentsAndBlankLines) {
  const std::string path = write(
      "# a comment\n"
      "% another comment\n"
      "\n"
      "0 1\n"
      "1\t2\n"
      "  2,3  \r\n"
      "3 , 0\n"
      "   # indented comment\n"
      "10\t\t11");  // no final newline
  const EdgeList edges = read_edge_list(path);
  EXPECT_EQ(edges.src.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 3, 10}));
  EXPECT_EQ(edges.dst.to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 3, 0, 11}));
  EXPECT_FALSE(edges.weights.has_value());
  EXPECT_EQ(edges.num_edges(), 5);
}

TEST_F(EdgeListTest, ReadsWeightsAndHeaders) {
  const EdgeList weighted = read_edge_list(write("source,target,weight\n0,1,0.5\n1,2,2e1\n"));
  EXPECT_EQ(weighted.src.to_vector<int64_t>(), (std::vector<int64_t>{0, 1}));
  ASSERT_TRUE(weighted.weights.has_value());
  EXPECT_EQ(weighted.weights->to_vector<float>(), (std::vector<float>{0.5f, 20.0f}));

  const std::string headed = write("# c\nfrom to\n5 6\n");
  EXPECT_EQ(read_edge_list(headed, {.has_header = true}).src.to_vector<int64_t>(),
            std::vector<int64_t>{5});
  EXPECT_THAT([&] { read_edge_list(headed, {.has_header = false}); },
              ThrowsMessage<IoError>(
                  HasSubstr(headed + ":2: expected 2 or 3 numeric columns, found 'from to'")));
  EXPECT_THAT(
      error_of("1 2\n3 4\n", {.has_header = true}),
      HasSubstr("g.txt:1: expected a header line (has_header was set), found the edge '1 2'"));

  EXPECT_EQ(read_edge_list(write("")).num_edges(), 0);
  EXPECT_EQ(read_edge_list(write("# only\nsrc dst\n")).num_edges(), 0);
  EXPECT_EQ(read_edge_list(write("\xEF\xBB\xBF"
                                 "7 8\n"))
                .src.to_vector<int64_t>(),
            std::vector<int64_t>{7});
}

TEST_F(EdgeListTest, ReportsTheLineOfAMalformedEdge) {
  EXPECT_EQ(error_of("0 1\n1 2\n# ok\n3 x\n"),
            path_of("g.txt") + ":4: expected 2 numeric columns (as on line 1), found '3 x'");
  EXPECT_EQ(error_of("0 1\n5\n"),
            path_of("g.txt") + ":2: expected 2 numeric columns (as on line 1), found '5'");
  EXPECT_EQ(error_of("0 1 1.0\n1 2\n"),
            path_of("g.txt") + ":2: expected 3 numeric columns (as on line 1), found '1 2'");
  EXPECT_EQ(error_of("0 1\n1 2 3 4\n"),
            path_of("g.txt") + ":2: expected 2 numeric columns (as on line 1), found '1 2 3 4'");
  EXPECT_EQ(error_of("a b\nc d\n"),
            path_of("g.txt") + ":2: expected 2 or 3 numeric columns, found 'c d'");
  EXPECT_EQ(error_of("0,,1\n"),
            path_of("g.txt") + ":1: expected 2 or 3 numeric columns, found '0,,1'");
  EXPECT_EQ(error_of("0 1\n1.5 2\n"),
            path_of("g.txt") + ":2: expected integer node ids, found '1.5' in '1.5 2'");
  EXPECT_EQ(error_of("0 1 0.5\n1 2 abc\n"),
            path_of("g.txt") + ":2: expected 3 numeric columns (as on line 1), found '1 2 abc'");
}

TEST_F(EdgeListTest, RejectsBadIdsAndWeights) {
  EXPECT_EQ(error_of("0 1\n2 -3\n"),
            path_of("g.txt") + ":2: node id -3 is negative (ids must be >= 0)");
  EXPECT_EQ(error_of("0 1\n4 5\n", {.num_nodes = 5}),
            path_of("g.txt") + ":2: node id 5 out of range for a graph with 5 nodes");
  EXPECT_EQ(error_of("0 99999999999999999999\n"),
            path_of("g.txt") + ":1: node id '99999999999999999999' does not fit in 64 bits");
  EXPECT_EQ(error_of("0 1 -1\n"), path_of("g.txt") + ":1: weight -1 must be finite and >= 0");
  EXPECT_EQ(error_of("0 1 nan\n"), path_of("g.txt") + ":1: weight nan must be finite and >= 0");
  EXPECT_THAT([&] { read_edge_list(path_of("absent.txt")); },
              ThrowsMessage<IoError>(HasSubstr("No such file or directory")));
}

TEST(EdgeListFromArray, AcceptsBothLayouts) {
  Array pyg(Buffer::allocate(6 * 8), DType::kInt64, {2, 3});
  int64_t* p = pyg.data<int64_t>();
  for (int64_t i = 0; i < 6; ++i) p[i] = i;  // src 0 1 2, dst 3 4 5
  EdgeList a = edge_list_from_array(pyg, "pyg");
  EXPECT_EQ(a.src.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(a.dst.to_vector<int64_t>(), (std::vector<int64_t>{3, 4, 5}));

  Array rows(Buffer::allocate(6 * 4), DType::kInt32, {3, 2});
  int32_t* r = rows.data<int32_t>();
  for (int32_t i = 0; i < 6; ++i) r[i] = i;  // (0,1) (2,3) (4,5)
  EdgeList b = edge_list_from_array(rows, "rows");
  EXPECT_EQ(b.src.to_vector<int64_t>(), (std::vector<int64_t>{0, 2, 4}));
  EXPECT_EQ(b.dst.to_vector<int64_t>(), (std::vector<int64_t>{1, 3, 5}));

  EXPECT_THAT(
      [] {
        edge_list_from_array(Array::zeros(DType::kInt64, {3, 3}), "sq.npy");
      },
      ThrowsMessage<ValueError>(HasSubstr(
          "sq.npy: expected an edge array of shape [2, E] or [E, 2], found int64[3, 3]")));
  EXPECT_THAT(
      [] {
        edge_list_from_array(Array::zeros(DType::kFloat32, {2, 3}), "f.npy");
      },
      ThrowsMessage<ValueError>(HasSubstr("f.npy: expected an int32 or int64 edge array")));
  p[4] = -1;
  EXPECT_THAT([&] { edge_list_from_array(pyg, "neg.npy"); },
              ThrowsMessage<ValueError>(HasSubstr("neg.npy: edge 1 (1 -> -1) has a negative")));
}

}  // namespace
}  // namespace volley
