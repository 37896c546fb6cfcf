// The heterogeneous sampler on a CUDA device (HeteroNeighborSampler over a CudaHeteroGraph)
// returns exactly what the CPU heterogeneous sampler returns, in GPU and UVA placement, on a
// generated mag-shaped graph (weights, int32 / int64 indices, missing edge ids), for several
// fanout shapes including -1 on hubs and 0, with and without replacement, weighted and not, on
// a stream and on the default stream; disjoint and temporal batches (node time, uniform and
// last) too. Skips without a CUDA device. Public API only (a .cc).
#include <gtest/gtest.h>

#include <random>

#include "sampling/expect_subgraph.h"
#include "sampling/hetero_test_graphs.h"
#include "volley/core/cuda_device.h"
#include "volley/sampling/cuda_graph.h"
#include "volley/sampling/hetero_sampler.h"

namespace volley {
namespace {

TEST(CudaHeteroSampler, EqualsTheCpuSamplerInBothModes) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device on this machine";
  const HeteroGraph graph = varied_mag_graph(20000, /*reverse=*/true, 1);
  std::vector<HeteroSamplerOptions> shapes(4);
  shapes[0].fanouts = {15, 10};
  shapes[1].fanouts = {-1, 3};
  shapes[2].fanouts = {5, 0, 4};
  shapes[3].fanouts = {4, 2};
  shapes[3].fanouts_by_type = {
      {{"author", "affiliated_with", "institution"}, {-1, -1}},
      {{"paper", "cites", "paper"}, {0, 3}},
  };
  CudaStream stream = CudaStream::create(0);
  std::mt19937_64 rng(7);
  int64_t compared = 0;
  for (auto mode : {CudaSamplingMode::kGpu, CudaSamplingMode::kUva}) {
    const CudaHeteroGraph placed = CudaHeteroGraph::place(graph, {.mode = mode});
    for (size_t s = 0; s < shapes.size(); ++s) {
      for (int variant = 0; variant < 4; ++variant) {
        HeteroSamplerOptions options = shapes[s];
        options.replace = (variant & 1) != 0;
        options.weighted = (variant & 2) != 0;
        options.seed = rng() % 1000;
        HeteroNeighborSampler cpu(graph, options);
        HeteroNeighborSampler gpu(placed, options);
        for (uint64_t batch = 0; batch < 3; ++batch) {
          const auto papers = distinct_ids(graph.num_nodes("paper"), batch == 2 ? 1024 : 64, rng);
          const auto authors = distinct_ids(graph.num_nodes("author"), 16, rng);
          const std::vector<HeteroSeeds> seeds{{"paper", papers}, {"author", authors}};
          const HeteroSampledSubgraph expected = cpu.sample(seeds, batch);
          expect_same_hetero(gpu.sample(seeds, batch, batch == 1 ? nullptr : stream.handle()),
                             expected,
                             fmt::format("{} shape {} replace {} weighted {} batch {}",
                                         cuda_sampling_mode_name(mode), s, options.replace,
                                         options.weighted, batch));
          compared += expected.total_edges();
          if (HasFailure()) return;
        }
      }
    }
  }
  EXPECT_GT(compared, 1000000);
}

TEST(CudaHeteroSampler, DisjointAndTemporalEqualTheCpuSampler) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device on this machine";
  const HeteroGraph graph = varied_mag_graph(20000, /*reverse=*/true, 2);
  std::mt19937_64 rng(9);
  std::vector<int64_t> paper_time(static_cast<size_t>(graph.num_nodes("paper")));
  for (auto& t : paper_time) t = static_cast<int64_t>(rng() % 1000);
  const HeteroTimes times{.node_time = {{"paper", Array::from_vector(paper_time)}}};
  int64_t compared = 0;
  for (int variant = 0; variant < 3; ++variant) {  // disjoint, by node time uniform, last
    HeteroSamplerOptions options;
    options.fanouts = {10, 5};
    options.seed = 3;
    options.disjoint = variant == 0;
    options.time_source = variant == 0 ? TimeSource::kNone : TimeSource::kNode;
    options.temporal_strategy = variant == 2 ? TemporalStrategy::kLast : TemporalStrategy::kUniform;
    const HeteroTimes given = variant == 0 ? HeteroTimes{} : times;
    HeteroNeighborSampler cpu(graph, options, given);
    for (auto mode : {CudaSamplingMode::kGpu, CudaSamplingMode::kUva}) {
      HeteroNeighborSampler gpu(
          CudaHeteroGraph::place(attach_hetero_times(graph, options, given), {.mode = mode}),
          options, given);
      const auto papers = distinct_ids(graph.num_nodes("paper"), 512, rng);
      std::vector<int64_t> author_times(16);
      for (auto& t : author_times) t = static_cast<int64_t>(rng() % 1000);
      const auto authors = distinct_ids(graph.num_nodes("author"), 16, rng);
      const std::vector<HeteroSeeds> seeds{{"author", authors, author_times}, {"paper", papers}};
      const HeteroSampledSubgraph expected = cpu.sample(seeds, 4);
      expect_same_hetero(gpu.sample(seeds, 4), expected,
                         fmt::format("{} variant {}", cuda_sampling_mode_name(mode), variant));
      compared += expected.total_edges();
      if (HasFailure()) return;
    }
  }
  EXPECT_GT(compared, 10000);
}

}  // namespace
}  // namespace volley
