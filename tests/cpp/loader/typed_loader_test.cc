// NeighborLoader over a typed graph: the homogeneous pipeline's policy (epoch order, rank split,
// epoch seed) with a HeteroNeighborSampler; batches equal the sampler's, tables gathered per
// type.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "test_graphs.h"
#include "test_util.h"
#include "volley/graph/io/npy.h"
#include "volley/loader/neighbor_loader.h"

namespace volley {
namespace {

using ::testing::HasSubstr;

const HeteroGraph& graph() { return small_mag(); }

std::shared_ptr<HeteroNeighborSampler> make_sampler(bool disjoint = false) {
  HeteroSamplerOptions options;
  options.fanouts = {3, 2};
  options.seed = 17;
  options.disjoint = disjoint;
  return std::make_shared<HeteroNeighborSampler>(graph(), options);
}

// One int64 row per node of `type`: its id times 10.
FeatureStore ids_times_ten(const std::string& type) {
  Array table = Array::empty(DType::kInt64, {graph().num_nodes(type)});
  for (int64_t i = 0; i < table.numel(); ++i) table.data<int64_t>()[i] = 10 * i;
  return table;
}

std::vector<int64_t> values(const Array& array) {
  const auto span = array.span<int64_t>();
  return {span.begin(), span.end()};
}

TEST(TypedLoader, BatchesAreTheSamplersWithTheEpochSeedAndTablesPerType) {
  auto sampler = make_sampler();
  LoaderOptions options{.batch_size = 64, .shuffle = true, .num_threads = 2, .seed = 5};
  TypedAttributes attributes;
  attributes.node.resize(small_mag_type("paper") + 1);
  attributes.node[small_mag_type("paper")].emplace_back("ids", ids_times_ten("paper"));
  std::vector<int64_t> inputs;
  for (int64_t i = 0; i < 400; ++i) inputs.push_back(3 * i + 1);
  const NeighborLoader loader(sampler, "paper", Array::from_vector(inputs), options, attributes);
  for (int64_t epoch = 0; epoch < 2; ++epoch) {
    const Array positions = loader.epoch_positions(epoch);
    const uint64_t seed = loader_internal::epoch_sampler_seed(options, epoch);
    auto stream = loader.start_epoch(epoch);
    int64_t index = 0;
    while (auto batch = stream->next()) {
      const int64_t begin = index * 64;
      const int64_t count = std::min<int64_t>(64, positions.numel() - begin);
      std::vector<int64_t> seeds;
      for (int64_t i = 0; i < count; ++i) {
        const int64_t position = positions.data<int64_t>()[begin + i];
        EXPECT_EQ(batch->input_ids.data<int64_t>()[i], position);
        seeds.push_back(inputs[static_cast<size_t>(position)]);
      }
      EXPECT_EQ(batch->batch_size, count);
      const HeteroSampledSubgraph want = sampler->sample_with_seed(
          {HeteroSeeds{"paper", seeds}}, seed, static_cast<uint64_t>(index));
      ASSERT_EQ(batch->node_types.size(), want.nodes.size());
      for (size_t t = 0; t < want.nodes.size(); ++t) {
        EXPECT_EQ(values(batch->node_types[t].nodes), want.nodes[t]);
        EXPECT_EQ(batch->node_types[t].nodes_per_hop, want.nodes_per_hop[t]);
        const auto& attrs = batch->node_types[t].attrs;
        ASSERT_EQ(attrs.size(), t == small_mag_type("paper") ? 1U : 0U);
        for (size_t i = 0; i < attrs.size(); ++i) {
          for (size_t j = 0; j < want.nodes[t].size(); ++j) {
            EXPECT_EQ(attrs[i].second.data<int64_t>()[j], 10 * want.nodes[t][j]);
          }
        }
      }
      ASSERT_EQ(batch->edge_types.size(), want.rows.size());
      for (size_t e = 0; e < want.rows.size(); ++e) {
        const std::vector<int64_t> edge_index = values(batch->edge_types[e].edge_index);
        const auto edges = static_cast<std::ptrdiff_t>(want.rows[e].size());
        EXPECT_EQ(std::vector<int64_t>(edge_index.begin(), edge_index.begin() + edges),
                  want.cols[e]);
        EXPECT_EQ(std::vector<int64_t>(edge_index.begin() + edges, edge_index.end()), want.rows[e]);
        EXPECT_EQ(values(batch->edge_types[e].edge_ids), want.edge_ids[e]);
      }
      ++index;
    }
    EXPECT_EQ(index, loader.num_batches());
  }
}

TEST(TypedLoader, RanksShareEveryEpochAsTheHomogeneousLoaderDoes) {
  auto sampler = make_sampler(/*disjoint=*/true);
  const int64_t papers = graph().num_nodes("paper");
  std::vector<int64_t> seen;
  for (int rank = 0; rank < 3; ++rank) {
    LoaderOptions options{.batch_size = 100,
                          .shuffle = true,
                          .num_threads = 1 + rank % 2,
                          .seed = 8,
                          .rank = rank,
                          .world_size = 3};
    const NeighborLoader loader(sampler, "paper", std::nullopt, options);
    auto stream = loader.start_epoch(1);
    int64_t taken = 0;
    while (auto batch = stream->next()) {
      for (int64_t i = 0; i < batch->batch_size; ++i)
        seen.push_back(batch->input_ids.data<int64_t>()[i]);
      taken += batch->batch_size;
      EXPECT_FALSE(values(batch->node_types[small_mag_type("paper")].batch_ids).empty());
    }
    EXPECT_EQ(taken, (papers + 2) / 3);  // padded to a multiple of the ranks
  }
  const std::set<int64_t> distinct(seen.begin(), seen.end());
  EXPECT_EQ(static_cast<int64_t>(distinct.size()), papers);
  EXPECT_LT(static_cast<int64_t>(seen.size()) - papers, 3);
}

// Float rows of node type `type` (row r: r + c / 8) in a .npy under `dir`, as a store that
// reads it from the disk with a kLookahead row cache of a tenth of its rows (reading announced
// rows ahead), or mapped.
FeatureStore rows_of(const std::string& dir, const std::string& type, bool lookahead) {
  const int64_t n = graph().num_nodes(type);
  const std::string path = dir + "/" + type + ".npy";
  if (lookahead) {
    Array rows = Array::empty(DType::kFloat32, {n, 8});
    for (int64_t i = 0; i < n * 8; ++i) rows.data<float>()[i] = (i / 8) + (i % 8) / 8.0f;
    write_npy(path, rows);
    return FeatureStore::from_npy(path, {.source_reads = SourceReads::kDisk,
                                         .cache_bytes = static_cast<size_t>(n / 10 * 32),
                                         .cache_policy = CachePolicy::kLookahead,
                                         .read_ahead = true});
  }
  return FeatureStore::from_npy(path, {.source_reads = SourceReads::kMapped});
}

// Tables in kLookahead stores steer their caches with the batches ahead (one window over every
// node type's store), and the batches are bit-identical to those over mapped tables, for any
// window and thread count: each batch is sampled once, ahead, as the homogeneous loader does.
TEST(TypedLoader, LookaheadTablesGetTheBatchesAheadAndTheSameBatches) {
  TempDir dir;
  const std::vector<std::string> types = {"paper", "author"};
  std::vector<int64_t> inputs(400);  // 9 batches an epoch
  for (size_t i = 0; i < inputs.size(); ++i) inputs[i] = static_cast<int64_t>(3 * i);
  for (const int lookahead : {0, 4}) {
    for (const int threads : {1, 3}) {
      TypedAttributes cached;
      TypedAttributes plain;
      cached.node.resize(graph().node_types().size());
      plain.node.resize(graph().node_types().size());
      for (const std::string& type : types) {
        cached.node[small_mag_type(type)].emplace_back("x", rows_of(dir.path(), type, true));
        plain.node[small_mag_type(type)].emplace_back("x", rows_of(dir.path(), type, false));
      }
      const LoaderOptions options{.batch_size = 48,
                                  .shuffle = true,
                                  .num_threads = threads,
                                  .lookahead = lookahead,
                                  .seed = 3};
      const NeighborLoader want(make_sampler(), "paper", Array::from_vector(inputs), options,
                                plain);
      const NeighborLoader got(make_sampler(), "paper", Array::from_vector(inputs), options,
                               cached);
      for (int64_t epoch = 0; epoch < 2; ++epoch) {
        auto a = want.start_epoch(epoch);
        auto b = got.start_epoch(epoch);
        while (auto x = a->next()) {
          auto y = b->next();
          ASSERT_TRUE(y.has_value());
          for (const std::string& type : types) {
            const size_t t = small_mag_type(type);
            EXPECT_EQ(values(x->node_types[t].nodes), values(y->node_types[t].nodes));
            const Array& p = x->node_types[t].attrs.at(0).second;
            const Array& q = y->node_types[t].attrs.at(0).second;
            ASSERT_EQ(p.nbytes(), q.nbytes());
            ASSERT_EQ(std::memcmp(p.data<float>(), q.data<float>(), p.nbytes()), 0) << type;
          }
        }
        EXPECT_FALSE(b->next().has_value());
      }
      for (const std::string& type : types) {  // every type's store was told what comes
        const FeatureStore::DiskStats stats =
            cached.node[small_mag_type(type)][0].second.disk_stats();
        EXPECT_GT(stats.hits, 0) << type;
        if (lookahead == 0) EXPECT_EQ(stats.read_ahead, 0) << type;
        if (lookahead > 0) EXPECT_GT(stats.read_ahead, 0) << type << " lookahead " << lookahead;
      }
    }
  }
}

TEST(TypedLoader, RejectsBadArgumentsNamingTheType) {
  auto sampler = make_sampler();
  const LoaderOptions options{.batch_size = 8};
  EXPECT_THAT([&] { NeighborLoader(sampler, "venue", std::nullopt, options); },
              ::testing::ThrowsMessage<ValueError>(HasSubstr("unknown node type 'venue'")));
  TypedAttributes attributes;
  attributes.node.resize(small_mag_type("author") + 1);
  attributes.node[small_mag_type("author")].emplace_back("short", ids_times_ten("paper"));
  EXPECT_THAT([&] { NeighborLoader(sampler, "paper", std::nullopt, options, attributes); },
              ::testing::ThrowsMessage<ValueError>(
                  HasSubstr("node attribute 'short' of type author must be a host table")));
  EXPECT_THAT(
      [&] {
        NeighborLoader(sampler, "paper", Array::from_vector<int64_t>({1, 2000}), options);
      },
      ::testing::ThrowsMessage<IndexError>(HasSubstr("input node 2000 at position 1")));
  EXPECT_THAT(
      [&] { NeighborLoader(sampler, "paper", std::nullopt, LoaderOptions{.batch_size = 0}); },
      ::testing::ThrowsMessage<ValueError>(HasSubstr("batch_size must be >= 1, got 0")));
  LoaderOptions timed = options;
  timed.input_time = Array::from_vector<int64_t>({1, 2});
  EXPECT_THAT([&] { NeighborLoader(sampler, "paper", std::nullopt, timed); },
              ::testing::ThrowsMessage<ValueError>(HasSubstr("samples no times")));
}

}  // namespace
}  // namespace volley
