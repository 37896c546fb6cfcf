// LinkLoader (link_loader.h): PyG's binary and triplet layouts map back to the right global ids,
// every supervision edge once per epoch, identical batches for any thread count, exact
// exclusion of the batch's positives, negatives from the stated distribution, and bad input.
#include "volley/loader/link_loader.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "test_util.h"
#include "volley/core/error.h"

namespace volley {
namespace {

using Pair = std::pair<int64_t, int64_t>;

struct LinkFixture {
  Csr graph;
  Array features;  // node v's row holds v
  Array edges;     // supervision edges [2, M]: a sample of the graph's edges
  std::vector<Pair> graph_edges;
};

LinkFixture make_link_fixture(int64_t n = 300, int64_t m = 3000, int64_t supervision = 500) {
  std::mt19937_64 rng(5);
  std::vector<int64_t> src(m), dst(m);
  LinkFixture f;
  for (int64_t i = 0; i < m; ++i) {
    src[i] = static_cast<int64_t>(rng() % n);
    dst[i] = static_cast<int64_t>(rng() % n);
    f.graph_edges.emplace_back(src[i], dst[i]);
  }
  f.graph =
      build_csr(Array::from_vector(src), Array::from_vector(dst), std::nullopt, {.num_nodes = n});
  f.features = Array::empty(DType::kFloat32, {n, 1});
  for (int64_t v = 0; v < n; ++v) f.features.data<float>()[v] = static_cast<float>(v);
  f.edges = Array::empty(DType::kInt64, {2, supervision});
  for (int64_t i = 0; i < supervision; ++i) {
    f.edges.data<int64_t>()[i] = src[i * 3];
    f.edges.data<int64_t>()[supervision + i] = dst[i * 3];
  }
  return f;
}

LinkLoader make_loader(const LinkFixture& f, LinkLoaderOptions options,
                       std::optional<Array> labels = std::nullopt) {
  return LinkLoader(f.graph, FeatureStore(f.features), std::nullopt, f.edges, std::move(labels),
                    std::move(options));
}

LinkLoaderOptions binary_options(int threads = 2) {
  return {.loader = {.batch_size = 64,
                     .shuffle = true,
                     .num_threads = threads,
                     .seed = 3,
                     .sampler = {.fanouts = {4, 3}}},
          .negatives = {.mode = NegativeMode::kBinary, .amount = 1.5}};
}

std::vector<Batch> all_batches(const LinkLoader& loader, int64_t epoch = 0) {
  std::vector<Batch> out;
  auto stream = loader.start_epoch(epoch);
  while (auto batch = stream->next()) out.push_back(std::move(*batch));
  return out;
}

TEST(LinkLoader, BinaryBatchesIndexTheirEdgesAndNodes) {
  const LinkFixture f = make_link_fixture();
  const LinkLoader loader = make_loader(f, binary_options());
  const int64_t* sup = f.edges.data<int64_t>();
  for (const Batch& batch : all_batches(loader)) {
    const int64_t b = batch.batch_size;
    const int64_t negatives = static_cast<int64_t>(std::ceil(1.5 * static_cast<double>(b)));
    ASSERT_EQ(batch.edge_label_index.shape(), (std::vector<int64_t>{2, b + negatives}));
    const int64_t l = b + negatives;
    const int64_t* eli = batch.edge_label_index.data<int64_t>();
    const int64_t* nodes = batch.nodes.data<int64_t>();
    const float* label = batch.edge_label.data<float>();
    const float* x = batch.x.data<float>();
    for (int64_t i = 0; i < batch.nodes.numel(); ++i) EXPECT_EQ(x[i], nodes[i]);
    for (int64_t i = 0; i < b; ++i) {  // positives first, in input_ids order
      const int64_t position = batch.input_ids.data<int64_t>()[i];
      EXPECT_EQ(nodes[eli[i]], sup[position]);
      EXPECT_EQ(nodes[eli[l + i]], sup[500 + position]);
      EXPECT_EQ(label[i], 1.0f);
    }
    for (int64_t i = b; i < l; ++i) EXPECT_EQ(label[i], 0.0f);
    // Seeds first: the distinct end points, sorted.
    std::set<int64_t> ends;
    for (int64_t i = 0; i < 2 * l; ++i) ends.insert(nodes[eli[i]]);
    ASSERT_GE(batch.nodes.numel(), static_cast<int64_t>(ends.size()));
    EXPECT_TRUE(std::equal(ends.begin(), ends.end(), nodes));
    EXPECT_EQ(batch.nodes_per_hop[0], static_cast<int64_t>(ends.size()));
  }
}

TEST(LinkLoader, GivenLabelsKeepTheirDtypeAndNegativesAreZero) {
  const LinkFixture f = make_link_fixture();
  Array labels = Array::empty(DType::kInt32, {500});
  for (int64_t i = 0; i < 500; ++i) labels.data<int32_t>()[i] = static_cast<int32_t>(1 + i % 3);
  const LinkLoader loader = make_loader(f, binary_options(), labels);
  for (const Batch& batch : all_batches(loader)) {
    ASSERT_EQ(batch.edge_label.dtype(), DType::kInt32);
    const int32_t* got = batch.edge_label.data<int32_t>();
    for (int64_t i = 0; i < batch.edge_label.numel(); ++i) {
      const int32_t want = i < batch.batch_size ? 1 + batch.input_ids.data<int64_t>()[i] % 3 : 0;
      EXPECT_EQ(got[i], want) << i;
    }
  }
}

TEST(LinkLoader, TripletBatchesIndexSourcesPositivesAndNegatives) {
  const LinkFixture f = make_link_fixture();
  LinkLoaderOptions options = binary_options();
  options.negatives = {.mode = NegativeMode::kTriplet, .amount = 3, .reject_existing = true};
  const LinkLoader loader = make_loader(f, options);
  const std::set<Pair> edges(f.graph_edges.begin(), f.graph_edges.end());
  const int64_t* sup = f.edges.data<int64_t>();
  int64_t negatives = 0;
  for (const Batch& batch : all_batches(loader)) {
    const int64_t b = batch.batch_size;
    EXPECT_FALSE(batch.edge_label_index.defined());
    ASSERT_EQ(batch.dst_neg_index.shape(), (std::vector<int64_t>{b, 3}));
    const int64_t* nodes = batch.nodes.data<int64_t>();
    EXPECT_EQ(batch.negatives_kept_existing, 0);
    for (int64_t i = 0; i < b; ++i) {
      const int64_t position = batch.input_ids.data<int64_t>()[i];
      const int64_t src = nodes[batch.src_index.data<int64_t>()[i]];
      EXPECT_EQ(src, sup[position]);
      EXPECT_EQ(nodes[batch.dst_pos_index.data<int64_t>()[i]], sup[500 + position]);
      for (int64_t j = 0; j < 3; ++j) {
        const int64_t neg = nodes[batch.dst_neg_index.data<int64_t>()[i * 3 + j]];
        EXPECT_EQ(edges.count({src, neg}), 0u) << src << " -> " << neg;
        ++negatives;
      }
    }
  }
  EXPECT_EQ(negatives, 3 * 500);
}

TEST(LinkLoader, EveryEdgeOncePerEpochAndTheSameForAnyThreadCount) {
  const LinkFixture f = make_link_fixture();
  const std::vector<Batch> one = all_batches(make_loader(f, binary_options(1)), 2);
  for (const int threads : {2, 4}) {
    const std::vector<Batch> many = all_batches(make_loader(f, binary_options(threads)), 2);
    ASSERT_EQ(many.size(), one.size());
    for (size_t b = 0; b < one.size(); ++b) {
      EXPECT_EQ(many[b].nodes.to_vector<int64_t>(), one[b].nodes.to_vector<int64_t>());
      EXPECT_EQ(many[b].edge_index.to_vector<int64_t>(), one[b].edge_index.to_vector<int64_t>());
      EXPECT_EQ(many[b].edge_label_index.to_vector<int64_t>(),
                one[b].edge_label_index.to_vector<int64_t>());
    }
  }
  std::vector<int64_t> seen;
  for (const Batch& batch : one) {
    for (const int64_t id : batch.input_ids.to_vector<int64_t>()) seen.push_back(id);
  }
  ASSERT_EQ(seen.size(), 500u);
  std::sort(seen.begin(), seen.end());
  for (int64_t i = 0; i < 500; ++i) EXPECT_EQ(seen[i], i);
  const std::vector<Batch> other_epoch = all_batches(make_loader(f, binary_options(1)), 3);
  EXPECT_NE(other_epoch[0].input_ids.to_vector<int64_t>(), one[0].input_ids.to_vector<int64_t>());
}

// Message-passing edges of `batch` that are one of its positives (or their reverses).
int64_t leaked(const Batch& batch, const int64_t* sup, bool undirected) {
  std::set<Pair> positives;
  for (const int64_t p : batch.input_ids.to_vector<int64_t>()) {
    positives.insert({sup[p], sup[500 + p]});
    if (undirected) positives.insert({sup[500 + p], sup[p]});
  }
  const int64_t e = batch.edge_index.dim(1);
  const int64_t* ei = batch.edge_index.data<int64_t>();
  const int64_t* nodes = batch.nodes.data<int64_t>();
  int64_t count = 0;
  for (int64_t k = 0; k < e; ++k) count += positives.count({nodes[ei[k]], nodes[ei[e + k]]});
  return count;
}

TEST(LinkLoader, ExcludeEdgesRemovesTheBatchPositivesExactly) {
  const LinkFixture f = make_link_fixture(200, 3000, 500);
  const int64_t* sup = f.edges.data<int64_t>();
  LinkLoaderOptions options = binary_options();
  options.loader.sampler.fanouts = {-1, 5};
  int64_t before_directed = 0, before_undirected = 0;
  for (const Batch& batch : all_batches(make_loader(f, options))) {
    before_directed += leaked(batch, sup, false);
    before_undirected += leaked(batch, sup, true);
  }
  EXPECT_GT(before_directed, 0);  // without exclusion positives are message-passing edges
  EXPECT_GT(before_undirected, before_directed);
  options.exclude_edges = true;
  for (const bool undirected : {false, true}) {
    options.undirected = undirected;
    for (const Batch& batch : all_batches(make_loader(f, options))) {
      EXPECT_EQ(leaked(batch, sup, undirected), 0);
      int64_t per_hop = 0;
      for (const int64_t count : batch.edges_per_hop) per_hop += count;
      EXPECT_EQ(per_hop, batch.edge_index.dim(1));
      EXPECT_EQ(batch.edge_ids.numel(), batch.edge_index.dim(1));
    }
  }
}

// Chi-square statistic of `counts` against probabilities ∝ `mass`.
double chi_square(const std::vector<int64_t>& counts, const std::vector<double>& mass) {
  double total_mass = 0, total = 0, stat = 0;
  for (size_t v = 0; v < mass.size(); ++v) total_mass += mass[v], total += counts[v];
  for (size_t v = 0; v < mass.size(); ++v) {
    const double expected = total * mass[v] / total_mass;
    if (expected > 0) stat += (counts[v] - expected) * (counts[v] - expected) / expected;
  }
  return stat;
}

TEST(LinkLoader, NegativesFollowTheDegreeDistribution) {
  // 20 nodes; node v has in-degree v + 1 (edges u -> v from u = 0..v).
  std::vector<int64_t> src, dst;
  for (int64_t v = 0; v < 20; ++v) {
    for (int64_t u = 0; u <= v; ++u) src.push_back(u), dst.push_back(v);
  }
  const Csr graph =
      build_csr(Array::from_vector(src), Array::from_vector(dst), std::nullopt, {.num_nodes = 20});
  Array edges = Array::empty(DType::kInt64, {2, 200});
  for (int64_t i = 0; i < 400; ++i) edges.data<int64_t>()[i] = i % 20;
  for (const double power : {0.0, 0.75, 1.0}) {
    LinkLoaderOptions options{.loader = {.batch_size = 50, .seed = 7, .sampler = {.fanouts = {1}}},
                              .negatives = {.mode = NegativeMode::kBinary,
                                            .amount = 20,
                                            .distribution = NegativeDistribution::kDegree,
                                            .degree_power = power}};
    const LinkLoader loader(graph, std::nullopt, std::nullopt, edges, std::nullopt, options);
    std::vector<int64_t> counts(20, 0);
    for (const Batch& batch : all_batches(loader)) {
      const int64_t l = batch.edge_label_index.dim(1);
      const int64_t* eli = batch.edge_label_index.data<int64_t>();
      const int64_t* nodes = batch.nodes.data<int64_t>();
      for (int64_t i = batch.batch_size; i < l; ++i) {
        ++counts[nodes[eli[i]]];
        ++counts[nodes[eli[l + i]]];
      }
    }
    std::vector<double> mass(20);
    for (int64_t v = 0; v < 20; ++v) mass[v] = std::pow(static_cast<double>(v + 1), power);
    // 19 degrees of freedom: 43.8 is the 0.1% critical value. The seed is fixed.
    EXPECT_LT(chi_square(counts, mass), 43.8) << "power " << power;
    if (power == 1.0) {  // and the check can fail: these counts are far from uniform
      EXPECT_GT(chi_square(counts, std::vector<double>(20, 1.0)), 200.0);
    }
  }
}

// A source that keeps BatchSource's defaults for has_edges / degrees.
class NoEdgeChecks final : public BatchSource {
 public:
  explicit NoEdgeChecks(Csr graph) : local_(std::move(graph), std::nullopt, std::nullopt) {}
  int64_t num_nodes() const override { return local_.num_nodes(); }
  void validate(const NeighborSamplerOptions& options) const override { local_.validate(options); }
  void sample(std::span<const int64_t> seeds, const NeighborSamplerOptions& options,
              uint64_t batch_index, SampledSubgraph& out) const override {
    local_.sample(seeds, options, batch_index, out);
  }
  int64_t feature_width() const override { return 0; }
  DType feature_dtype() const override { return DType::kFloat32; }
  void gather_features(std::span<const int64_t>, DType, std::byte*) const override {}
  bool has_labels() const override { return false; }
  void gather_labels(std::span<const int64_t>, int64_t*) const override {}

 private:
  LocalBatchSource local_;
};

TEST(LinkLoader, LocalSourceChecksEdgesAndGivesDegrees) {
  const LinkFixture f = make_link_fixture();
  const LocalBatchSource source(f.graph, std::nullopt, std::nullopt);
  const std::vector<int64_t> src = {f.graph_edges[0].first, 0, 299};
  const std::vector<int64_t> dst = {f.graph_edges[0].second, 0, 299};
  const std::set<Pair> edges(f.graph_edges.begin(), f.graph_edges.end());
  uint8_t out[3];
  source.has_edges(src, dst, out);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(out[i], edges.count({src[i], dst[i]})) << i;
  const std::vector<int64_t> degrees = source.degrees();
  ASSERT_EQ(degrees.size(), 300u);
  for (int64_t v = 0; v < 300; ++v) EXPECT_EQ(degrees[v], f.graph.degree(v));
  const std::vector<int64_t> bad = {300};
  EXPECT_NE(message_of<IndexError>([&] { source.has_edges(bad, bad, out); }).find("(300, 300)"),
            std::string::npos);
  const NoEdgeChecks remote(f.graph);
  EXPECT_NE(message_of<ValueError>([&] {
              remote.has_edges(src, dst, out);
            }).find("this source cannot check edges"),
            std::string::npos);
  LinkLoaderOptions options = binary_options();
  options.negatives.reject_existing = true;
  auto shared = std::make_shared<NoEdgeChecks>(f.graph);
  EXPECT_NE(message_of<ValueError>([&] {
              LinkLoader(shared, f.edges, std::nullopt, options);
            }).find("cannot check edges"),
            std::string::npos);
  options.negatives.reject_existing = false;
  options.negatives.distribution = NegativeDistribution::kDegree;
  EXPECT_NE(message_of<ValueError>([&] {
              LinkLoader(shared, f.edges, std::nullopt, options);
            }).find("cannot give node degrees"),
            std::string::npos);
}

TEST(LinkLoader, AnySourceAndRanksShareOutTheEdges) {
  const LinkFixture f = make_link_fixture();
  // Over a source of another kind (uniform negatives need neither degrees nor edge checks):
  // the same batches as over the local source.
  LinkLoaderOptions options = binary_options();
  const std::vector<Batch> local =
      all_batches(LinkLoader(f.graph, std::nullopt, std::nullopt, f.edges, std::nullopt, options));
  const std::vector<Batch> other = all_batches(
      LinkLoader(std::make_shared<NoEdgeChecks>(f.graph), f.edges, std::nullopt, options));
  ASSERT_EQ(other.size(), local.size());
  for (size_t b = 0; b < local.size(); ++b) {
    EXPECT_EQ(other[b].nodes.to_vector<int64_t>(), local[b].nodes.to_vector<int64_t>());
    EXPECT_EQ(other[b].edge_label_index.to_vector<int64_t>(),
              local[b].edge_label_index.to_vector<int64_t>());
  }
  // Two ranks: disjoint, equally long shares covering every edge.
  std::vector<int64_t> seen;
  int64_t batches = -1;
  for (int rank = 0; rank < 2; ++rank) {
    options.loader.rank = rank;
    options.loader.world_size = 2;
    const LinkLoader loader = make_loader(f, options);
    if (batches >= 0) EXPECT_EQ(loader.num_batches(), batches);
    batches = loader.num_batches();
    for (const Batch& batch : all_batches(loader)) {
      for (const int64_t id : batch.input_ids.to_vector<int64_t>()) seen.push_back(id);
    }
  }
  std::sort(seen.begin(), seen.end());
  ASSERT_EQ(seen.size(), 500u);
  for (int64_t i = 0; i < 500; ++i) EXPECT_EQ(seen[i], i);
}

TEST(LinkLoader, BadInputNamesTheValueAndEmptyInputHasNoBatches) {
  const LinkFixture f = make_link_fixture();
  Array bad = f.edges.clone();
  bad.data<int64_t>()[500 + 7] = 300;
  EXPECT_NE(message_of<IndexError>([&] {
              LinkLoader(f.graph, std::nullopt, std::nullopt, bad, std::nullopt, {});
            }).find("edge_label_index[1, 7] = 300"),
            std::string::npos);
  EXPECT_NE(message_of<ValueError>([&] {
              make_loader(f, binary_options(), Array::zeros(DType::kFloat32, {499}));
            }).find("of 500 labels"),
            std::string::npos);
  for (const double amount : {-1.0, std::nan("")}) {
    LinkLoaderOptions options = binary_options();
    options.negatives.amount = amount;
    EXPECT_NE(message_of<ValueError>([&] { make_loader(f, options); }).find("finite and >= 0"),
              std::string::npos);
  }
  LinkLoaderOptions triplet = binary_options();
  triplet.negatives = {.mode = NegativeMode::kTriplet, .amount = 1.5};
  EXPECT_NE(message_of<ValueError>([&] { make_loader(f, triplet); }).find("got 1.5"),
            std::string::npos);
  triplet.negatives.amount = 2;
  EXPECT_NE(message_of<ValueError>([&] {
              make_loader(f, triplet, Array::zeros(DType::kFloat32, {500}));
            }).find("edge_label must be left out"),
            std::string::npos);
  EXPECT_NE(message_of<ValueError>([&] {
              LinkLoader(f.graph, std::nullopt, std::nullopt, Array::zeros(DType::kInt32, {2, 3}),
                         std::nullopt, {});
            }).find("int64 array [2, M], got int32[2, 3]"),
            std::string::npos);
  LinkLoaderOptions temporal = binary_options();
  temporal.loader.input_time = Array::zeros(DType::kInt64, {500});
  EXPECT_NE(message_of<ValueError>([&] {
              make_loader(f, temporal);
            }).find("edge_label_time was given, but sampling is not temporal"),
            std::string::npos);
  temporal.loader.input_time.reset();
  temporal.loader.sampler.time_source = TimeSource::kEdge;
  EXPECT_NE(message_of<ValueError>([&] {
              make_loader(f, temporal);
            }).find("needs edge_label_time: one time per supervision edge"),
            std::string::npos);
  temporal.loader.input_time = Array::zeros(DType::kInt64, {7});
  EXPECT_NE(message_of<ValueError>([&] {
              make_loader(f, temporal);
            }).find("edge_label_time has 7 entries, but there are 500 supervision edges"),
            std::string::npos);
  const LinkLoader empty(f.graph, std::nullopt, std::nullopt, Array::empty(DType::kInt64, {2, 0}),
                         std::nullopt, binary_options());
  EXPECT_EQ(empty.num_batches(), 0);
  EXPECT_FALSE(empty.start_epoch(0)->next().has_value());
}

}  // namespace
}  // namespace volley
