// Temporal sampling through the loader: input_time per input node, the same batches for any
// thread count, nothing later than a seed's time, and the errors.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "test_graphs.h"
#include "test_util.h"
#include "volley/loader/batch.h"
#include "volley/loader/neighbor_loader.h"

namespace volley {
namespace {

struct TemporalFixture {
  Csr graph;
  std::vector<int64_t> inputs, input_time;
};

TemporalFixture make_temporal_fixture() {
  TemporalFixture f;
  const int64_t n = 400, m = 8000;
  std::mt19937_64 rng(5);
  std::vector<int64_t> edge_time(static_cast<size_t>(m));
  for (auto& t : edge_time) t = static_cast<int64_t>(rng() % 100);
  f.graph = sort_rows_by_time(
      skewed_random_graph(n, m, 5).with_times({}, Array::from_vector(edge_time)), TimeKind::kEdge);
  for (int64_t i = 0; i < 300; ++i) {
    f.inputs.push_back(static_cast<int64_t>(rng() % 40));  // nodes repeat, at other times
    f.input_time.push_back(static_cast<int64_t>(rng() % 100));
  }
  return f;
}

LoaderOptions temporal_options(const TemporalFixture& f, int threads, TemporalStrategy strategy) {
  return {.batch_size = 32,
          .shuffle = true,
          .num_threads = threads,
          .seed = 3,
          .sampler = {.fanouts = {5, 3},
                      .time_source = TimeSource::kEdge,
                      .temporal_strategy = strategy},
          .input_time = Array::from_vector(f.input_time)};
}

TEST(TemporalLoader, SameBatchesForAnyThreadCountAndNoLeak) {
  const TemporalFixture f = make_temporal_fixture();
  std::map<int64_t, int64_t> time_of;  // edge id -> time
  for (int64_t k = 0; k < f.graph.num_edges(); ++k)
    time_of[f.graph.edge_id(k)] = f.graph.edge_time()->data<int64_t>()[k];
  for (TemporalStrategy strategy : {TemporalStrategy::kUniform, TemporalStrategy::kLast}) {
    auto collect = [&](int threads) {
      NeighborLoader loader(f.graph, std::nullopt, std::nullopt, Array::from_vector(f.inputs),
                            temporal_options(f, threads, strategy));
      auto epoch = loader.start_epoch(0);
      std::vector<std::vector<int64_t>> result;
      while (auto batch = epoch->next()) {
        const auto ids = batch->input_ids.to_vector<int64_t>();
        const auto tree = batch->batch_ids.to_vector<int64_t>();
        const auto edges = batch->edge_ids.to_vector<int64_t>();
        const int64_t* edge_index = batch->edge_index.data<int64_t>();
        for (size_t j = 0; j < edges.size(); ++j) {
          const int64_t seed = tree[static_cast<size_t>(edge_index[edges.size() + j])];
          EXPECT_LE(time_of.at(edges[j]), f.input_time[static_cast<size_t>(ids[seed])]);
        }
        result.push_back(batch->nodes.to_vector<int64_t>());
        result.push_back(edges);
        result.push_back(tree);
      }
      return result;
    };
    const auto one = collect(1);
    EXPECT_EQ(collect(2), one);
    EXPECT_EQ(collect(4), one);
  }
}

TEST(TemporalLoader, InputTimeIsChecked) {
  const TemporalFixture f = make_temporal_fixture();
  const Array inputs = Array::from_vector(f.inputs);
  LoaderOptions options = temporal_options(f, 1, TemporalStrategy::kUniform);
  options.input_time.reset();
  EXPECT_EQ(message_of<ValueError>(
                [&] { NeighborLoader(f.graph, std::nullopt, std::nullopt, inputs, options); }),
            "temporal sampling (time_attr) needs input_time: one time per input node");
  options.input_time = Array::from_vector(std::vector<int64_t>(7));
  EXPECT_EQ(message_of<ValueError>(
                [&] { NeighborLoader(f.graph, std::nullopt, std::nullopt, inputs, options); }),
            "input_time has 7 entries, but there are 300 input nodes (one time each)");
  options.input_time = Array::from_vector(std::vector<double>(300));
  EXPECT_EQ(message_of<ValueError>(
                [&] { NeighborLoader(f.graph, std::nullopt, std::nullopt, inputs, options); }),
            "input_time must be a 1-d int64 array, got float64[300]");
  options.sampler.time_source = TimeSource::kNone;
  options.input_time = Array::from_vector(f.input_time);
  EXPECT_EQ(message_of<ValueError>([&] {
              NeighborLoader(f.graph, std::nullopt, std::nullopt, std::nullopt, options);
            }),
            "input_time was given, but sampling is not temporal (set time_attr)");
  // Without temporal sampling input nodes must still be distinct.
  options.input_time.reset();
  EXPECT_NE(message_of<ValueError>([&] {
              NeighborLoader(f.graph, std::nullopt, std::nullopt, inputs, options);
            }).find("appears twice"),
            std::string::npos);
}

}  // namespace
}  // namespace volley
