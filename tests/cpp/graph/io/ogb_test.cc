#include "volley/graph/io/ogb.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "test_util.h"
#include "volley/core/half.h"
#include "volley/graph/csr.h"
#include "volley/graph/dataset.h"
#include "volley/graph/io/gzip_lines.h"

namespace volley {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Writes small directories in OGB's node-property layout (raw/*.csv.gz, split/<name>/*.csv.gz).
class OgbTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/volley-ogb-test-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    root_ = (fs::path(dir_) / "ogbn_tiny").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes `text` gzip-compressed to <root>/<relative>.
  void write_gz(const std::string& relative, const std::string& text) const {
    const fs::path path = fs::path(root_) / relative;
    fs::create_directories(path.parent_path());
    gzFile file = gzopen(path.c_str(), "wb");
    ASSERT_NE(file, nullptr);
    if (!text.empty()) ASSERT_EQ(gzwrite(file, text.data(), text.size()), int(text.size()));
    ASSERT_EQ(gzclose(file), Z_OK);
  }

  // A 5-node dataset: edges (one way, with a duplicate pair and a self loop), 3 features per
  // node, labels with one unlabelled node, and one split.
  void write_tiny() const {
    write_gz("raw/num-node-list.csv.gz", "5\n");
    write_gz("raw/edge.csv.gz", "0,1\n1,2\n2,0\n2,1\n3,3\n4,0\n");
    write_gz("raw/node-feat.csv.gz", "0.5,1,2\n3,4,5\n6,7,8.25\n-1,1e2,0\n9,10,11\n");
    write_gz("raw/node-label.csv.gz", "2\n0\nnan\n1\n2\n");
    write_gz("split/by_id/train.csv.gz", "0\n1\n");
    write_gz("split/by_id/valid.csv.gz", "3\n");
    write_gz("split/by_id/test.csv.gz", "4\n2\n");
  }

  std::string out() const { return (fs::path(dir_) / "out").string(); }

  template <typename E>
  std::string error_of(const OgbConvertOptions& options = {}) const {
    return message_of<E>([&] { convert_ogb_node_dataset(root_, out(), options); });
  }

  std::string dir_;
  std::string root_;
};

template <typename T>
std::vector<T> values(const Array& array) {
  return array.to_vector<T>();
}

TEST_F(OgbTest, ConvertsEveryFileOfTheLayout) {
  write_tiny();
  ASSERT_TRUE(is_ogb_directory(root_));
  const OgbConversion done = convert_ogb_node_dataset(root_, out());
  EXPECT_EQ(done.name, "ogbn_tiny");
  EXPECT_EQ(done.num_nodes, 5);
  EXPECT_EQ(done.num_edges, 6);
  EXPECT_EQ(done.feature_dim, 3);
  EXPECT_EQ(done.num_classes, 3);
  EXPECT_EQ(done.split, "by_id");
  EXPECT_EQ(done.num_train, 2);
  EXPECT_EQ(done.num_val, 1);
  EXPECT_EQ(done.num_test, 2);

  const Dataset dataset = load_dataset(out(), {.verify_checksums = true});
  EXPECT_TRUE(verify_dataset(out()).ok());
  // In-neighbors: row v lists the sources of edges into v, sorted.
  EXPECT_THAT(values<int64_t>(dataset.graph.indptr()), ElementsAre(0, 2, 4, 5, 6, 6));
  EXPECT_THAT(values<int32_t>(dataset.graph.indices()), ElementsAre(2, 4, 0, 2, 1, 3));
  ASSERT_TRUE(dataset.features.has_value());
  EXPECT_EQ(dataset.features->shape(), (std::vector<int64_t>{5, 3}));
  EXPECT_THAT(values<float>(*dataset.features),
              ElementsAre(0.5f, 1, 2, 3, 4, 5, 6, 7, 8.25f, -1, 100, 0, 9, 10, 11));
  EXPECT_THAT(values<int64_t>(*dataset.labels), ElementsAre(2, 0, -1, 1, 2));
  EXPECT_EQ(dataset.num_classes, 3);
  EXPECT_THAT(values<int64_t>(*dataset.train_idx), ElementsAre(0, 1));
  EXPECT_THAT(values<int64_t>(*dataset.val_idx), ElementsAre(3));
  EXPECT_THAT(values<int64_t>(*dataset.test_idx), ElementsAre(4, 2));
  // The scratch file is gone.
  EXPECT_FALSE(fs::exists(fs::path(out()) / ".volley-ogb-scratch"));
}

TEST_F(OgbTest, UndirectedEqualsBuildCsrOnRandomEdges) {
  // A few thousand random edges (duplicates and self loops included) against build_csr.
  constexpr int64_t n = 300;
  std::mt19937_64 random(7);
  std::uniform_int_distribution<int64_t> node(0, n - 1);
  std::vector<int64_t> src, dst;
  std::string text;
  for (int i = 0; i < 5000; ++i) {
    src.push_back(node(random));
    dst.push_back(i % 50 == 0 ? src.back() : node(random));
    text += fmt::format("{},{}\n", src.back(), dst.back());
  }
  write_gz("raw/num-node-list.csv.gz", fmt::format("{}\n", n));
  write_gz("raw/edge.csv.gz", text);
  for (const bool undirected : {false, true}) {
    for (const bool drop_self_loops : {false, true}) {
      SCOPED_TRACE(fmt::format("undirected={} drop_self_loops={}", undirected, drop_self_loops));
      fs::remove_all(out());
      convert_ogb_node_dataset(root_, out(),
                               {.undirected = undirected, .drop_self_loops = drop_self_loops});
      const Csr expected = build_csr(Array::from_vector(src), Array::from_vector(dst), {},
                                     {.num_nodes = n,
                                      .symmetrize = undirected,
                                      .drop_self_loops = drop_self_loops,
                                      .drop_duplicates = undirected,
                                      .keep_edge_ids = false});
      const Dataset dataset = load_dataset(out());
      EXPECT_EQ(values<int64_t>(dataset.graph.indptr()), values<int64_t>(expected.indptr()));
      EXPECT_EQ(values<int32_t>(dataset.graph.indices()), values<int32_t>(expected.indices()));
      EXPECT_FALSE(dataset.features.has_value());
      EXPECT_FALSE(dataset.train_idx.has_value());
    }
  }
}

TEST_F(OgbTest, StoresFeaturesAsFloat16OrExactUint8) {
  write_gz("raw/num-node-list.csv.gz", "2\n");
  write_gz("raw/edge.csv.gz", "0,1\n");
  write_gz("raw/node-feat.csv.gz", "0,1,255\n3,4,5\n");
  convert_ogb_node_dataset(root_, out(), {.feature_dtype = DType::kUInt8, .name = "bits"});
  Dataset dataset = load_dataset(out());
  EXPECT_EQ(dataset.name, "bits");
  EXPECT_THAT(values<uint8_t>(*dataset.features), ElementsAre(0, 1, 255, 3, 4, 5));

  fs::remove_all(out());
  convert_ogb_node_dataset(root_, out(), {.feature_dtype = DType::kFloat16});
  dataset = load_dataset(out());
  ASSERT_EQ(dataset.features->dtype(), DType::kFloat16);
  const auto* half = reinterpret_cast<const uint16_t*>(dataset.features->raw_data());
  EXPECT_EQ(half_to_float(half[2]), 255.0f);
  EXPECT_EQ(half_to_float(half[4]), 4.0f);

  write_gz("raw/node-feat.csv.gz", "0,1,2\n3,4.5,5\n");
  fs::remove_all(out());
  EXPECT_THAT(error_of<ValueError>({.feature_dtype = DType::kUInt8}),
              HasSubstr("feature [1, 1] = 4.5 is not an integer in [0, 255]"));
}

TEST_F(OgbTest, PicksANamedSplitAndRefusesAmbiguity) {
  write_tiny();
  write_gz("split/other/train.csv.gz", "4\n");
  write_gz("split/other/valid.csv.gz", "");
  write_gz("split/other/test.csv.gz", "0\n");
  EXPECT_THAT(error_of<ValueError>(), HasSubstr("several splits (by_id, other); name one"));
  const OgbConversion done = convert_ogb_node_dataset(root_, out(), {.split = "other"});
  EXPECT_EQ(done.num_train, 1);
  EXPECT_EQ(done.num_val, 0);
  EXPECT_THAT(error_of<IoError>({.split = "nope"}),
              HasSubstr("no split 'nope' (found: by_id, other)"));
}

TEST_F(OgbTest, MalformedContentNamesTheFileAndLine) {
  write_tiny();
  write_gz("raw/edge.csv.gz", "0,1\n1,5\n");
  EXPECT_THAT(error_of<IndexError>(),
              HasSubstr("raw/edge.csv.gz:2: node id 5 out of range for 5 nodes"));
  write_gz("raw/edge.csv.gz", "0,1\n1;2\n");
  EXPECT_THAT(error_of<ValueError>(),
              HasSubstr("raw/edge.csv.gz:2: expected 'src,dst' (two node ids), found '1;2'"));
  write_gz("raw/edge.csv.gz", "0,1\n");
  write_gz("raw/node-feat.csv.gz", "1,2,3\n4,5\n");
  EXPECT_THAT(error_of<ValueError>(),
              HasSubstr("node-feat.csv.gz:2: expected 3 values (as on line 1), found 2"));
  write_gz("raw/node-feat.csv.gz", "1,2,3\n4,x,5\n");
  EXPECT_THAT(error_of<ValueError>(), HasSubstr("node-feat.csv.gz:2: value 1 is 'x'"));
  write_gz("raw/node-feat.csv.gz", "1,2,3\n");
  EXPECT_THAT(error_of<ValueError>(),
              HasSubstr("node-feat.csv.gz: 1 rows, but the graph has 5 nodes"));
  fs::remove(fs::path(root_) / "raw/node-feat.csv.gz");
  write_gz("raw/node-label.csv.gz", "0,1\n1,0\n");
  EXPECT_THAT(error_of<ValueError>(), HasSubstr("2 columns; Volley stores one class per node"));
  write_gz("raw/node-label.csv.gz", "0\n1\n-2\n0\n0\n");
  EXPECT_THAT(error_of<ValueError>(), HasSubstr("node-label.csv.gz:3: expected a class id"));
  write_gz("raw/node-label.csv.gz", "0\n1\n1\n0\n0\n");
  write_gz("split/by_id/test.csv.gz", "4\n7\n");
  EXPECT_THAT(error_of<IndexError>(),
              HasSubstr("test.csv.gz:2: node id 7 out of range for 5 nodes"));
  write_gz("raw/num-node-list.csv.gz", "5\n7\n");
  EXPECT_THAT(error_of<ValueError>(), HasSubstr("more than one graph"));
}

TEST_F(OgbTest, MissingCorruptAndHeterogeneousInputs) {
  EXPECT_FALSE(is_ogb_directory(root_));
  write_gz("raw/num-node-list.csv.gz", "100000\n");
  EXPECT_THAT(error_of<IoError>(), HasSubstr("raw/edge.csv.gz is missing"));
  // A gzip stream cut short.
  std::mt19937_64 random(3);
  std::string text;
  for (int i = 0; i < 20000; ++i) text += fmt::format("{},{}\n", random() % 100000, i);
  write_gz("raw/edge.csv.gz", text);
  const fs::path edges = fs::path(root_) / "raw/edge.csv.gz";
  fs::resize_file(edges, fs::file_size(edges) / 2);
  EXPECT_THAT(error_of<IoError>(), HasSubstr("edge.csv.gz: truncated or corrupt"));
  fs::create_directories(fs::path(root_) / "raw/relations");
  EXPECT_THAT(error_of<ValueError>(), HasSubstr("heterogeneous OGB dataset"));
}

TEST(GzipLinesTest, LinesAcrossBufferBoundariesAndPlainText) {
  char pattern[] = "/tmp/volley-gzlines-XXXXXX";
  ASSERT_NE(mkdtemp(pattern), nullptr);
  const fs::path dir = pattern;
  // Lines of growing length: many cross the 1 MiB buffer boundary; the last has no '\n'.
  std::string text;
  std::vector<std::string> expected;
  for (int i = 0; text.size() < (3u << 20); ++i) {
    expected.push_back(std::string(i % 997, 'a' + i % 26) + std::to_string(i));
    text += expected.back() + (i % 3 == 0 ? "\r\n" : "\n");
  }
  text.pop_back();
  if (text.back() == '\r') text.pop_back();
  std::ofstream(dir / "plain.txt", std::ios::binary) << text;
  gzFile file = gzopen((dir / "z.gz").c_str(), "wb");
  gzwrite(file, text.data(), text.size());
  gzclose(file);
  for (const char* name : {"plain.txt", "z.gz"}) {
    GzipLines lines((dir / name).string());
    std::string_view line;
    size_t count = 0;
    while (lines.next(&line)) {
      ASSERT_LT(count, expected.size());
      ASSERT_EQ(line, expected[count]) << name << " line " << count + 1;
      ++count;
      EXPECT_EQ(lines.line_number(), static_cast<int64_t>(count));
    }
    EXPECT_EQ(count, expected.size()) << name;
    EXPECT_GT(lines.compressed_offset(), 0);
  }
  EXPECT_THAT(message_of<IoError>([&] { GzipLines missing((dir / "none.gz").string()); }),
              HasSubstr("cannot open"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace volley
