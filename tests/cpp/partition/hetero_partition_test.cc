// Heterogeneous partitioning: every node of every type owned once, every edge of every edge type
// (with its edge id) found in exactly one part after mapping back, node data follows its nodes,
// per-type balance, METIS beats random, bad options and damaged directories are refused.
#include "volley/partition/hetero_partition.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <tuple>

#include "test_graphs.h"
#include "test_util.h"
#include "volley/core/error.h"
#include "volley/graph/generate_hetero.h"

namespace volley {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

// A generated ogbn-mag-shaped dataset with reverse edge types, written once for the suite.
class HeteroPartitionTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir("volley-hetero-partition-test");
    GeneratorOptions options = mag_generator_options();
    options.num_nodes = 1500, options.feature_dim = 8, options.num_classes = 7;
    options.seed = 3, options.reverse = true;
    generate_hetero_dataset(options, *dir_ / "source");
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static std::string source() { return *dir_ / "source"; }
  static std::string out(const std::string& name) { return *dir_ / name; }
  static TempDir* dir_;
};
TempDir* HeteroPartitionTest::dir_ = nullptr;

using Edge = std::tuple<int64_t, int64_t, int64_t>;  // (dst, src, edge id), old ids

// new id -> old id of node type `type`, checking the map is a permutation.
std::vector<int64_t> old_of(const std::string& dir, const std::string& type) {
  const Array map = load_node_map(dir, type, /*verify_checksums=*/true);
  std::vector<int64_t> old(static_cast<size_t>(map.numel()), -1);
  for (int64_t v = 0; v < map.numel(); ++v) {
    const int64_t id = map.data<int64_t>()[v];
    EXPECT_TRUE(id >= 0 && id < map.numel() && old[static_cast<size_t>(id)] == -1) << type << v;
    old[static_cast<size_t>(id)] = v;
  }
  return old;
}

// The full round trip of one method: ownership, edges per edge type, features, labels, splits.
void check_round_trip(const std::string& input, const std::string& dir, int64_t k) {
  const HeteroDataset source = load_hetero_dataset(input);
  const HeteroGraph& graph = source.graph;
  std::map<std::string, std::vector<int64_t>> old;
  for (const NodeTypeInfo& type : graph.node_types()) old[type.name] = old_of(dir, type.name);
  std::vector<std::vector<Edge>> found(static_cast<size_t>(graph.num_edge_types()));
  std::map<std::string, int64_t> owned, train;
  for (int64_t p = 0; p < k; ++p) {
    const HeteroPartition part = load_hetero_partition(dir, p, {.verify_checksums = true});
    for (int r = 0; r < graph.num_edge_types(); ++r) {
      const EdgeType& type = graph.edge_types()[static_cast<size_t>(r)];
      const Csr& csr = part.data.graph.edges(type);
      const int64_t first = part.first_node(type.dst);
      for (int64_t v = 0; v < csr.num_nodes(); ++v) {
        for (int64_t e = csr.begin(v); e < csr.end(v); ++e) {
          found[static_cast<size_t>(r)].emplace_back(
              old[type.dst][static_cast<size_t>(first + v)],
              old[type.src][static_cast<size_t>(csr.neighbor(e))], csr.edge_id(e));
        }
      }
    }
    for (int t = 0; t < graph.num_node_types(); ++t) {
      const std::string& name = graph.node_types()[static_cast<size_t>(t)].name;
      const NodeTypeData& in = source.node_data[static_cast<size_t>(t)];
      const NodeTypeData& local = part.data.node_data[static_cast<size_t>(t)];
      const int64_t n = part.data.graph.num_nodes(t);
      EXPECT_EQ(n, part.book(name).size(p));
      owned[name] += n;
      for (int64_t r = 0; r < n; ++r) {
        const int64_t v = old[name][static_cast<size_t>(part.first_node(name) + r)];
        if (in.labels) ASSERT_EQ(local.labels->data<int64_t>()[r], in.labels->data<int64_t>()[v]);
        if (in.features) {
          const int64_t d = in.features->dim(1);
          ASSERT_EQ(0, std::memcmp(local.features->data<float>() + r * d,
                                   in.features->data<float>() + v * d, d * sizeof(float)));
        }
      }
      if (in.train_idx) {
        train[name] += local.train_idx->numel();
        for (int64_t r : local.train_idx->span<int64_t>()) {
          const int64_t v = old[name][static_cast<size_t>(part.first_node(name) + r)];
          const auto ids = in.train_idx->span<int64_t>();
          ASSERT_TRUE(std::find(ids.begin(), ids.end(), v) != ids.end()) << name << " " << v;
        }
      }
    }
  }
  for (int t = 0; t < graph.num_node_types(); ++t) {
    const std::string& name = graph.node_types()[static_cast<size_t>(t)].name;
    EXPECT_EQ(owned[name], graph.num_nodes(t)) << name;
    const auto& ids = source.node_data[static_cast<size_t>(t)].train_idx;
    if (ids) EXPECT_EQ(train[name], ids->numel()) << name;
  }
  for (int r = 0; r < graph.num_edge_types(); ++r) {
    std::sort(found[static_cast<size_t>(r)].begin(), found[static_cast<size_t>(r)].end());
    EXPECT_EQ(found[static_cast<size_t>(r)], sorted_edges(graph.edges(r)))
        << graph.edge_types()[static_cast<size_t>(r)].name();
  }
}

TEST_F(HeteroPartitionTest, RandomRoundTripsAndBalancesEveryType) {
  const PartitionOptions options{.method = PartitionMethod::kRandom, .num_parts = 3, .seed = 1};
  const HeteroPartitionResult result = partition_hetero_dataset(source(), out("random"), options);
  check_round_trip(source(), out("random"), 3);
  const HeteroDataset source_data = load_hetero_dataset(source());
  for (size_t t = 0; t < result.books.size(); ++t) {
    const int64_t n = source_data.graph.num_nodes(static_cast<int>(t));
    for (int64_t p = 0; p < 3; ++p) {
      EXPECT_LE(result.books[t].size(p), std::max<int64_t>((n * 105 + 299) / 300, (n + 2) / 3))
          << source_data.graph.node_types()[t].name << " part " << p;
    }
  }
}

TEST_F(HeteroPartitionTest, MetisRoundTripsAndCutsFewerEdgesThanRandom) {
  ASSERT_TRUE(metis_available());
  PartitionOptions options{.method = PartitionMethod::kMetis, .num_parts = 4};
  const HeteroPartitionResult metis = partition_hetero_dataset(source(), out("metis"), options);
  check_round_trip(source(), out("metis"), 4);
  options.method = PartitionMethod::kRandom;
  const HeteroPartitionResult random = partition_hetero_dataset(source(), out("random4"), options);
  EXPECT_LT(metis.quality.cut_edges, random.quality.cut_edges);
  for (double balance : metis.quality.node_balance) EXPECT_LT(balance, 1.3);
  const HeteroPartitionManifest manifest = read_hetero_partition_manifest(out("metis"));
  EXPECT_EQ(manifest.quality.cut_edges, metis.quality.cut_edges);
  EXPECT_EQ(manifest.method, PartitionMethod::kMetis);
}

TEST_F(HeteroPartitionTest, StreamRoundTripsBalancesAndCutsFewerEdgesThanRandom) {
  PartitionOptions options{.method = PartitionMethod::kStream, .num_parts = 4};
  const HeteroPartitionResult stream = partition_hetero_dataset(source(), out("stream"), options);
  check_round_trip(source(), out("stream"), 4);
  options.method = PartitionMethod::kRandom;
  const HeteroPartitionResult random = partition_hetero_dataset(source(), out("random-s"), options);
  EXPECT_LT(stream.quality.cut_edges, random.quality.cut_edges);
  // Caps as random's (a training node that fits nowhere may overfill one part by a node).
  const HeteroDataset data = load_hetero_dataset(source());
  for (size_t t = 0; t < stream.books.size(); ++t) {
    const int64_t n = data.graph.num_nodes(static_cast<int>(t));
    for (int64_t p = 0; p < 4; ++p) {
      EXPECT_LE(stream.books[t].size(p), std::max<int64_t>((n * 105 + 399) / 400, (n + 3) / 4) + 1)
          << data.graph.node_types()[t].name << " part " << p;
    }
  }
}

TEST_F(HeteroPartitionTest, BadOptionsNameTheValue) {
  const HeteroDataset dataset = load_hetero_dataset(source());
  PartitionOptions options{.method = PartitionMethod::kHotness, .num_parts = 2};
  EXPECT_THAT([&] { assign_hetero_partitions(dataset, options); },
              ThrowsMessage<ValueError>(HasSubstr("'hotness'")));
  options = {.method = PartitionMethod::kRandom, .num_parts = 0};
  EXPECT_THAT([&] { assign_hetero_partitions(dataset, options); },
              ThrowsMessage<ValueError>(HasSubstr("got 0")));
  const int64_t institutions = dataset.graph.num_nodes("institution");
  options = {.method = PartitionMethod::kRandom, .num_parts = institutions + 1};
  EXPECT_THAT([&] { assign_hetero_partitions(dataset, options); },
              ThrowsMessage<ValueError>(HasSubstr(
                  fmt::format("num_parts = {} exceeds the {} nodes of node type 'institution'",
                              institutions + 1, institutions))));
  EXPECT_THROW(partition_method_from_name("fennel"), ValueError);
}

TEST_F(HeteroPartitionTest, DamagedDirectoriesAreRefusedPrecisely) {
  const PartitionOptions options{.method = PartitionMethod::kRandom, .num_parts = 2};
  partition_hetero_dataset(source(), out("damaged"), options);
  EXPECT_THROW(load_hetero_partition(out("damaged"), 2), IndexError);
  EXPECT_THAT([&] { load_partition(out("damaged"), 0); },
              ThrowsMessage<IoError>(HasSubstr("load_hetero_partition")));
  // A part's volley.json changed: its CRC no longer matches partition.json.
  const fs::path manifest = fs::path(out("damaged")) / "part-1" / "volley.json";
  std::ofstream(manifest, std::ios::app) << " ";
  EXPECT_THAT([&] { load_hetero_partition(out("damaged"), 1); },
              ThrowsMessage<IoError>(AllOf(HasSubstr("part-1/volley.json: crc32: expected"),
                                           HasSubstr("as partition.json says"))));
  // A node map truncated.
  fs::resize_file(fs::path(out("damaged")) / "author.node_map.npy", 200);
  EXPECT_THROW(load_node_map(out("damaged"), "author"), IoError);
  EXPECT_THAT([&] { load_node_map(out("damaged"), "venue"); },
              ThrowsMessage<ValueError>(HasSubstr("unknown node type 'venue'")));
  // One node-map loader and one verify for both kinds: "" names the only node type.
  EXPECT_THAT([&] { load_node_map(out("damaged"), ""); },
              ThrowsMessage<ValueError>(HasSubstr("name a node type")));
  const std::vector<std::string> problems = verify_partitioned_dataset(out("damaged"));
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_THAT(problems[0], HasSubstr("author.node_map.npy"));
  EXPECT_THAT(problems[1], HasSubstr("part-1/volley.json: crc32: expected"));
}

}  // namespace
}  // namespace volley
