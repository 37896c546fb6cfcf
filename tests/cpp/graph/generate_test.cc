#include "volley/graph/generate.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "volley/core/half.h"
#include "volley/core/parallel.h"
#include "volley/graph/io/npy.h"

namespace volley {
namespace {

namespace fs = std::filesystem;

GeneratorOptions small_options(GraphModel model, uint64_t seed = 7) {
  GeneratorOptions options;
  options.model = model;
  options.num_nodes = 5000;
  options.num_edges = 60000;
  options.feature_dim = 16;
  options.num_classes = 5;
  options.seed = seed;
  return options;
}

// A fresh directory under the system temp directory, removed when the test ends.
class ScratchDirectory {
 public:
  explicit ScratchDirectory(const std::string& tag)
      : path_(fs::temp_directory_path() /
              ("volley_generate_" + tag + "_" + std::to_string(getpid()))) {
    fs::remove_all(path_);
  }
  ~ScratchDirectory() { fs::remove_all(path_); }
  std::string path() const { return path_.string(); }

 private:
  fs::path path_;
};

std::string read_bytes(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

// Every row strictly increasing (sorted, no duplicates), no self loops, ids in [0, N).
void expect_simple_graph(const Csr& graph) {
  for (int64_t v = 0; v < graph.num_nodes(); ++v) {
    for (int64_t k = graph.begin(v); k < graph.end(v); ++k) {
      const int64_t u = graph.neighbor(k);
      ASSERT_GE(u, 0) << "row " << v;
      ASSERT_LT(u, graph.num_nodes()) << "row " << v;
      ASSERT_NE(u, v) << "self loop at row " << v;
      if (k > graph.begin(v)) ASSERT_LT(graph.neighbor(k - 1), u) << "row " << v;
    }
  }
}

bool same_graph(const Csr& a, const Csr& b) {
  return a.indptr().to_vector<int64_t>() == b.indptr().to_vector<int64_t>() &&
         a.indices().to_vector<int32_t>() == b.indices().to_vector<int32_t>();
}

struct DegreeStats {
  int64_t max_in = 0;
  int64_t max_out = 0;
  double mean = 0;
};

DegreeStats degree_stats(const Csr& graph) {
  std::vector<int64_t> out_degree(static_cast<size_t>(graph.num_nodes()), 0);
  DegreeStats stats;
  for (int64_t v = 0; v < graph.num_nodes(); ++v) {
    stats.max_in = std::max(stats.max_in, graph.degree(v));
    for (int64_t k = graph.begin(v); k < graph.end(v); ++k) ++out_degree[graph.neighbor(k)];
  }
  stats.max_out = *std::max_element(out_degree.begin(), out_degree.end());
  stats.mean = static_cast<double>(graph.num_edges()) / static_cast<double>(graph.num_nodes());
  return stats;
}

TEST(Generate, PowerLawHasExactCountsAndIsSimple) {
  const GeneratorOptions options = small_options(GraphModel::kPowerLaw);
  const Csr graph = generate_graph(options);
  EXPECT_EQ(graph.num_nodes(), 5000);
  EXPECT_EQ(graph.num_edges(), 60000);
  EXPECT_EQ(graph.index_dtype(), DType::kInt32);
  EXPECT_EQ(graph.orientation(), Orientation::kIn);
  EXPECT_FALSE(graph.has_edge_ids());
  expect_simple_graph(graph);
}

TEST(Generate, PowerLawDegreesAreHeavyTailed) {
  GeneratorOptions options = small_options(GraphModel::kPowerLaw);
  options.num_nodes = 20000;
  options.num_edges = 100000;
  const DegreeStats stats = degree_stats(generate_graph(options));
  // Mean degree 5; the largest expected degree is about sqrt(E) = 316.
  EXPECT_GT(stats.max_in, 20 * stats.mean);
  EXPECT_GT(stats.max_out, 20 * stats.mean);
}

TEST(Generate, RmatIsSimpleAndHeavyTailed) {
  GeneratorOptions options = small_options(GraphModel::kRmat);
  options.num_nodes = 3000;  // not a power of two: ids >= N are redrawn
  const Csr graph = generate_graph(options);
  EXPECT_EQ(graph.num_nodes(), 3000);
  EXPECT_LE(graph.num_edges(), options.num_edges);
  EXPECT_GT(graph.num_edges(), options.num_edges / 2);  // duplicates and self loops dropped
  expect_simple_graph(graph);
  const DegreeStats stats = degree_stats(graph);
  EXPECT_GT(stats.max_in, 10 * stats.mean);
  EXPECT_GT(stats.max_out, 10 * stats.mean);
}

TEST(Generate, TinyAndCompleteGraphs) {
  GeneratorOptions options = small_options(GraphModel::kPowerLaw);
  options.num_nodes = 1;
  options.num_edges = 0;
  EXPECT_EQ(generate_graph(options).num_edges(), 0);
  options.model = GraphModel::kRmat;
  EXPECT_EQ(generate_graph(options).num_edges(), 0);

  // All 6 * 5 directed edges: every row must hold every other node.
  options.model = GraphModel::kPowerLaw;
  options.num_nodes = 6;
  options.num_edges = 30;
  const Csr complete = generate_graph(options);
  ASSERT_EQ(complete.num_edges(), 30);
  expect_simple_graph(complete);
  for (int64_t v = 0; v < 6; ++v) EXPECT_EQ(complete.degree(v), 5);

  // Nearly complete and strongly skewed: the bounded redraws run out and the fill-up finishes.
  options.num_nodes = 200;
  options.num_edges = 200 * 199 - 7;
  options.gamma = 1.5;
  const Csr dense = generate_graph(options);
  EXPECT_EQ(dense.num_edges(), options.num_edges);
  expect_simple_graph(dense);
}

TEST(Generate, SameSeedSameGraphForAnyThreadCount) {
  for (GraphModel model : {GraphModel::kPowerLaw, GraphModel::kRmat}) {
    GeneratorOptions options = small_options(model);
    options.num_edges = 100000;  // R-MAT: more than one edge block
    set_num_threads(1);
    const Csr one = generate_graph(options);
    const Array labels_one = generate_labels(options);
    const Array features_one = generate_features(options, 0, options.num_nodes);
    set_num_threads(2);
    const Csr two = generate_graph(options);
    EXPECT_TRUE(same_graph(one, two)) << graph_model_name(model);
    EXPECT_EQ(labels_one.to_vector<int64_t>(), generate_labels(options).to_vector<int64_t>());
    EXPECT_EQ(features_one.to_vector<float>(),
              generate_features(options, 0, options.num_nodes).to_vector<float>());
    // A row range is the same rows as in the whole matrix.
    const Array middle = generate_features(options, 100, 3);
    const float* whole = features_one.data<float>() + 100 * options.feature_dim;
    EXPECT_TRUE(std::equal(whole, whole + 3 * options.feature_dim, middle.data<float>()));

    options.seed += 1;
    EXPECT_FALSE(same_graph(one, generate_graph(options))) << graph_model_name(model);
    EXPECT_NE(labels_one.to_vector<int64_t>(), generate_labels(options).to_vector<int64_t>());
  }
  set_num_threads(default_num_threads());
}

TEST(Generate, LabelsAreBalancedAndFollowThePowerLawGraph) {
  GeneratorOptions options = small_options(GraphModel::kPowerLaw);
  options.num_classes = 4;
  const Array labels = generate_labels(options);
  ASSERT_EQ(labels.numel(), options.num_nodes);
  const int64_t* label = labels.data<int64_t>();
  std::vector<int64_t> count(4, 0);
  for (int64_t v = 0; v < options.num_nodes; ++v) {
    ASSERT_GE(label[v], 0);
    ASSERT_LT(label[v], 4);
    ++count[static_cast<size_t>(label[v])];
  }
  for (int64_t c : count) EXPECT_NEAR(static_cast<double>(c), 1250.0, 150.0);

  // Edge homophily: about homophily + (1 - homophily) / C = 0.625 here, 0.25 without.
  auto same_label_fraction = [&](const GeneratorOptions& o) {
    const Csr graph = generate_graph(o);
    int64_t same = 0;
    for (int64_t v = 0; v < graph.num_nodes(); ++v) {
      for (int64_t k = graph.begin(v); k < graph.end(v); ++k)
        same += label[graph.neighbor(k)] == label[v];
    }
    return static_cast<double>(same) / static_cast<double>(graph.num_edges());
  };
  EXPECT_GT(same_label_fraction(options), 0.55);
  options.homophily = 0.0;
  EXPECT_NEAR(same_label_fraction(options), 0.25, 0.05);
}

TEST(Generate, FeaturesCarryTheClass) {
  GeneratorOptions options = small_options(GraphModel::kRmat);
  options.num_nodes = 4000;
  options.feature_dim = 32;
  options.num_classes = 8;
  const int64_t n = options.num_nodes, dim = options.feature_dim, classes = options.num_classes;
  const Array features = generate_features(options, 0, n);
  ASSERT_EQ(features.shape(), (std::vector<int64_t>{n, dim}));
  const float* x = features.data<float>();
  const Array labels = generate_labels(options);
  const int64_t* label = labels.data<int64_t>();

  // Nearest class mean (means estimated from the data): far above chance (1 / 8).
  std::vector<double> mean(static_cast<size_t>(classes * dim), 0.0);
  std::vector<int64_t> members(static_cast<size_t>(classes), 0);
  for (int64_t v = 0; v < n; ++v) {
    ++members[static_cast<size_t>(label[v])];
    for (int64_t j = 0; j < dim; ++j)
      mean[static_cast<size_t>(label[v] * dim + j)] += x[v * dim + j];
  }
  for (int64_t c = 0; c < classes; ++c) {
    for (int64_t j = 0; j < dim; ++j) mean[static_cast<size_t>(c * dim + j)] /= members[c];
  }
  int64_t correct = 0;
  for (int64_t v = 0; v < n; ++v) {
    int64_t best = -1;
    double best_distance = 0;
    for (int64_t c = 0; c < classes; ++c) {
      double distance = 0;
      for (int64_t j = 0; j < dim; ++j) {
        const double d = x[v * dim + j] - mean[static_cast<size_t>(c * dim + j)];
        distance += d * d;
      }
      if (best < 0 || distance < best_distance) best = c, best_distance = distance;
    }
    correct += best == label[v];
  }
  const double accuracy = static_cast<double>(correct) / static_cast<double>(n);
  EXPECT_GT(accuracy, 0.4);   // chance: 0.125
  EXPECT_LT(accuracy, 0.99);  // the noise is real: not a lookup table

  // float16 is the float32 matrix rounded.
  options.feature_dtype = DType::kFloat16;
  const Array half = generate_features(options, 0, 10);
  ASSERT_EQ(half.dtype(), DType::kFloat16);
  const uint16_t* h = reinterpret_cast<const uint16_t*>(half.raw_data());
  for (int64_t i = 0; i < 10 * dim; ++i) EXPECT_EQ(h[i], float_to_half(x[i]));
}

TEST(Generate, SplitHasExactDisjointSortedParts) {
  GeneratorOptions options = small_options(GraphModel::kPowerLaw);
  options.num_nodes = 1001;
  options.num_edges = 5000;
  options.train_fraction = 0.5;
  options.val_fraction = 0.2;
  options.test_fraction = 0.3;
  const GeneratedSplit split = generate_split(options);
  EXPECT_EQ(split.train_idx.numel(), 500);
  EXPECT_EQ(split.val_idx.numel(), 200);
  EXPECT_EQ(split.test_idx.numel(), 300);
  std::set<int64_t> seen;
  for (const Array* part : {&split.train_idx, &split.val_idx, &split.test_idx}) {
    const std::vector<int64_t> ids = part->to_vector<int64_t>();
    EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end()));
    for (int64_t id : ids) {
      EXPECT_GE(id, 0);
      EXPECT_LT(id, 1001);
      EXPECT_TRUE(seen.insert(id).second) << "node " << id << " in two parts";
    }
  }
}

TEST(Generate, RejectsBadOptionsWithPreciseMessages) {
  struct Case {
    std::function<void(GeneratorOptions&)> change;
    std::string message;
  };
  const std::vector<Case> cases = {
      {[](auto& o) { o.num_nodes = 0; }, "num_nodes (--nodes) must be >= 1, got 0"},
      {[](auto& o) { o.num_nodes = int64_t{1} << 31; }, "must be at most 2147483647"},
      {[](auto& o) { o.num_edges = -1; }, "num_edges (--edges) must be >= 0, got -1"},
      {[](auto& o) {
         o.num_nodes = 10;
         o.num_edges = 91;
       },
       "num_edges (--edges) = 91 exceeds the 90 edges"},
      {[](auto& o) { o.num_classes = 0; }, "num_classes (--classes) must be in [1, 65536], got 0"},
      {[](auto& o) { o.feature_dim = -3; }, "feature_dim (--feature-dim) must be >= 0, got -3"},
      {[](auto& o) { o.feature_dtype = DType::kInt64; }, "must be float32 or float16, got int64"},
      {[](auto& o) { o.gamma = 1.0; }, "gamma (--gamma) must be a finite number > 1, got 1"},
      {[](auto& o) { o.homophily = 1.5; }, "homophily must be in [0, 1], got 1.5"},
      {[](auto& o) { o.feature_noise = 0; }, "feature_noise must be a finite number > 0"},
      {[](auto& o) { o.rmat_a = 0.6; }, "R-MAT probabilities must sum to 1"},
      {[](auto& o) {
         o.rmat_a = 0;
         o.rmat_d = 0.62;
       },
       "R-MAT probability a must be > 0"},
      {[](auto& o) { o.rmat_b = -0.1; }, "R-MAT probabilities must be finite and >= 0"},
      {[](auto& o) { o.train_fraction = 0.9; }, "split fractions must sum to at most 1"},
      {[](auto& o) { o.val_fraction = -0.1; }, "split fractions must be in [0, 1]"},
  };
  for (const Case& c : cases) {
    GeneratorOptions options = small_options(GraphModel::kPowerLaw);
    c.change(options);
    try {
      generate_graph(options);
      ADD_FAILURE() << "no error for: " << c.message;
    } catch (const ValueError& error) {
      EXPECT_NE(std::string(error.what()).find(c.message), std::string::npos)
          << "got: " << error.what() << "\nwanted: " << c.message;
    }
  }
  EXPECT_THROW(graph_model_from_name("erdos"), ValueError);
  EXPECT_THROW(generate_features(small_options(GraphModel::kRmat), 4999, 2), IndexError);
}

TEST(Generate, DatasetDirectoryIsTheSameBytesForAnyThreadCount) {
  for (GraphModel model : {GraphModel::kPowerLaw, GraphModel::kRmat}) {
    GeneratorOptions options = small_options(model);
    options.num_nodes = 3000;
    options.num_edges = 40000;
    options.feature_dim = 24;
    options.feature_dtype = DType::kFloat16;
    ScratchDirectory one("one"), two("two"), other("other");
    set_num_threads(1);
    const GeneratedDataset result = generate_dataset(options, one.path());
    set_num_threads(2);
    generate_dataset(options, two.path());
    options.seed += 1;
    generate_dataset(options, other.path());
    options.seed -= 1;

    EXPECT_EQ(result.name, default_dataset_name(options));
    EXPECT_EQ(result.num_nodes, 3000);
    std::vector<std::string> files;
    for (const auto& entry : fs::directory_iterator(one.path()))
      files.push_back(entry.path().filename().string());
    std::sort(files.begin(), files.end());
    EXPECT_EQ(files, (std::vector<std::string>{"features.npy", "indices.npy", "indptr.npy",
                                               "labels.npy", "test_idx.npy", "train_idx.npy",
                                               "val_idx.npy", "volley.json"}));
    for (const std::string& file : files) {
      EXPECT_EQ(read_bytes(fs::path(one.path()) / file), read_bytes(fs::path(two.path()) / file))
          << file << " differs between 1 and 2 threads (" << graph_model_name(model) << ")";
      if (file != "volley.json") {
        EXPECT_NE(read_bytes(fs::path(one.path()) / file),
                  read_bytes(fs::path(other.path()) / file))
            << file << " is the same for another seed";
      }
    }

    // The files hold what the in-memory functions produce.
    const Csr graph = generate_graph(options);
    EXPECT_EQ(result.num_edges, graph.num_edges());
    EXPECT_EQ(read_npy(one.path() + "/indptr.npy", false).to_vector<int64_t>(),
              graph.indptr().to_vector<int64_t>());
    EXPECT_EQ(read_npy(one.path() + "/indices.npy", false).to_vector<int32_t>(),
              graph.indices().to_vector<int32_t>());
    EXPECT_EQ(read_npy(one.path() + "/labels.npy", false).to_vector<int64_t>(),
              generate_labels(options).to_vector<int64_t>());
    const Array features = read_npy(one.path() + "/features.npy", false);
    EXPECT_EQ(features.shape(), (std::vector<int64_t>{3000, 24}));
    EXPECT_EQ(features.dtype(), DType::kFloat16);
    const Array expected = generate_features(options, 0, 3000);
    EXPECT_TRUE(std::equal(features.raw_data(), features.raw_data() + features.nbytes(),
                           expected.raw_data()));
  }
  set_num_threads(default_num_threads());
}

TEST(Generate, CommandLineWritesADataset) {
  ScratchDirectory out("cli");
  const std::string command = std::string(VOLLEY_CLI_PATH) + " -q generate " + out.path() +
                              " --model rmat --nodes 1000 --edges 8000 --feature-dim 8"
                              " --classes 3 --seed 5 > " +
                              out.path() + ".log 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0) << read_bytes(out.path() + ".log");
  const std::string log = read_bytes(out.path() + ".log");
  EXPECT_NE(log.find("generated rmat-1000-8000-seed5: 1000 nodes"), std::string::npos) << log;
  EXPECT_TRUE(fs::exists(fs::path(out.path()) / "volley.json"));
  fs::remove(out.path() + ".log");

  const std::string bad = std::string(VOLLEY_CLI_PATH) + " -q generate " + out.path() +
                          "_bad --nodes 0 --edges 5 > " + out.path() + ".log 2>&1";
  EXPECT_NE(std::system(bad.c_str()), 0);
  EXPECT_NE(read_bytes(out.path() + ".log").find("num_nodes (--nodes) must be >= 1, got 0"),
            std::string::npos);
  fs::remove(out.path() + ".log");
}

}  // namespace
}  // namespace volley
