// The CUDA sampler returns exactly what the CPU sampler returns (GPU and UVA modes), and runs
// batch after batch without growing its memory. Skips without a CUDA device.
//
// A .cc, not a .cu: it uses only the public API (nvcc cannot compile fmt, which the public
// headers include); CUDA builds put every tests/cpp/*/cuda/*_test.{cc,cu} in volley_cuda_tests.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <random>

#include "sampling/expect_subgraph.h"
#include "test_graphs.h"
#include "volley/core/cuda_device.h"
#include "volley/sampling/neighbor_sampler.h"

namespace volley {
namespace {

bool have_device() { return cuda_device_count() > 0; }

std::vector<int64_t> random_seeds(int64_t n, size_t count, std::mt19937_64& rng) {
  std::vector<int64_t> seeds;
  std::vector<bool> taken(static_cast<size_t>(n), false);
  while (seeds.size() < count) {
    const int64_t seed =
        static_cast<int64_t>(seeds.size() < 8 ? rng() % 40 : rng() % static_cast<uint64_t>(n));
    if (!taken[static_cast<size_t>(seed)]) {
      taken[static_cast<size_t>(seed)] = true;
      seeds.push_back(seed);
    }
  }
  return seeds;
}

TEST(CudaSampler, EqualsTheCpuSamplerInBothModes) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device on this machine";
  const std::vector<std::vector<int64_t>> fanouts = {{15, 10, 5}, {-1, 3}, {2, 0, 4}, {100, 2},
                                                     {1},         {3, -1}, {0}};
  CudaStream stream = CudaStream::create(0);
  int64_t compared = 0;
  for (int graph_kind = 0; graph_kind < 3; ++graph_kind) {
    const Csr graph = skewed_random_graph(
        5000, 120000, 31 + graph_kind,
        {.keep_edge_ids = graph_kind != 2, .force_int64_indices = graph_kind == 1});
    for (auto mode : {CudaSamplingMode::kGpu, CudaSamplingMode::kUva}) {
      const CudaGraph placed = CudaGraph::place(graph, {.mode = mode});
      ASSERT_EQ(placed.mode(), mode);
      std::mt19937_64 rng(17 + graph_kind);
      for (const auto& fanout : fanouts) {
        for (int variant = 0; variant < 4; ++variant) {
          const NeighborSamplerOptions options{fanout, (variant & 1) != 0, (variant & 2) != 0,
                                               rng() % 1000};
          NeighborSampler sampler(placed, options);
          for (uint64_t batch = 0; batch < 3; ++batch) {
            const auto seeds = random_seeds(5000, batch == 2 ? 700 : 64, rng);
            const SampledSubgraph expected = sample_neighbors(graph, seeds, options, batch);
            const SampledSubgraph got =
                sampler.sample(seeds, batch, stream.handle()).to_host(stream.handle());
            expect_same_subgraph(
                expected, got,
                fmt::format("graph {} mode {} fanouts [{}] replace {} weighted {} batch {}",
                            graph_kind, cuda_sampling_mode_name(mode), fmt::join(fanout, ","),
                            options.replace, options.weighted, batch));
            compared += expected.num_edges();
            if (::testing::Test::HasFailure()) return;
          }
        }
      }
    }
  }
  EXPECT_GT(compared, 1000000);
}

// Temporal sampling on the device: for edge and node time (rows sorted by it), both strategies,
// with and without replacement, seeds repeating at different times, GPU and UVA: the batch
// (batch vector included) is the CPU sampler's. (The public CUDA sampler refuses untimed
// disjoint sampling; the backend's is checked on the host executor.)
TEST(CudaSampler, TemporalEqualsTheCpuSamplerInBothModes) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device on this machine";
  std::mt19937_64 rng(23);
  const int64_t n = 4000, m = 100000;
  std::vector<int64_t> node_time(n), edge_time(m);
  for (auto& t : node_time) t = static_cast<int64_t>(rng() % 1000);
  for (auto& t : edge_time) t = static_cast<int64_t>(rng() % 1000);
  const Csr timed = skewed_random_graph(n, m, 23, {.weighted = false})
                        .with_times(Array::from_vector(node_time), Array::from_vector(edge_time));
  CudaStream stream = CudaStream::create(0);
  int64_t compared = 0;
  for (TimeSource source : {TimeSource::kEdge, TimeSource::kNode}) {
    const Csr graph =
        sort_rows_by_time(timed, source == TimeSource::kEdge ? TimeKind::kEdge : TimeKind::kNode);
    for (auto mode : {CudaSamplingMode::kGpu, CudaSamplingMode::kUva}) {
      const CudaGraph placed = CudaGraph::place(graph, {.mode = mode});
      for (int variant = 0; variant < 4; ++variant) {
        const NeighborSamplerOptions options{.fanouts = {10, -1, 3},
                                             .replace = (variant & 1) != 0,
                                             .seed = rng() % 1000,
                                             .time_source = source,
                                             .temporal_strategy = (variant & 2) != 0
                                                                      ? TemporalStrategy::kLast
                                                                      : TemporalStrategy::kUniform};
        NeighborSampler sampler(placed, options);
        for (uint64_t batch = 0; batch < 2; ++batch) {
          std::vector<int64_t> seeds(300), times(300);
          for (size_t i = 0; i < seeds.size(); ++i) {
            seeds[i] = static_cast<int64_t>(rng() % 500);  // repeats
            times[i] = static_cast<int64_t>(rng() % 1100);
          }
          const SampledSubgraph expected = sample_neighbors(graph, seeds, times, options, batch);
          const SampledSubgraph got =
              sampler.sample(seeds, times, batch, stream.handle()).to_host(stream.handle());
          const std::string what =
              fmt::format("source {} mode {} variant {} batch {}", static_cast<int>(source),
                          cuda_sampling_mode_name(mode), variant, batch);
          expect_same_subgraph(expected, got, what);
          EXPECT_EQ(got.batch.to_vector<int64_t>(), expected.batch.to_vector<int64_t>()) << what;
          compared += expected.num_edges();
          if (::testing::Test::HasFailure()) return;
        }
      }
    }
  }
  EXPECT_GT(compared, 100000);
}

TEST(CudaSampler, DefaultStreamEmptySeedsAndSeedErrors) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device on this machine";
  const Csr graph = skewed_random_graph(1000, 20000, 3);
  NeighborSampler sampler(CudaGraph::place(graph), {{5, 5}, false, false, 9});
  const std::vector<int64_t> seeds = {4, 8, 15, 16, 23, 42};
  expect_same_subgraph(sample_neighbors(graph, seeds, sampler.options(), 3),
                       sampler.sample(seeds, 3).to_host(), "default stream");
  const SampledSubgraph empty = sampler.sample({}, 0).to_host();
  expect_same_subgraph(sample_neighbors(graph, {}, sampler.options(), 0), empty, "empty seeds");
  EXPECT_THROW(sampler.sample(std::vector<int64_t>{1, 1000}, 0), IndexError);
  EXPECT_THROW(sampler.sample(std::vector<int64_t>{1, 2, 1}, 0), ValueError);
}

// A batch the caller still holds is never overwritten by the next one.
TEST(CudaSampler, HeldResultsSurviveLaterBatches) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device on this machine";
  const Csr graph = skewed_random_graph(4000, 80000, 5);
  NeighborSampler sampler(CudaGraph::place(graph), {{10, 5}, false, false, 1});
  std::mt19937_64 rng(2);
  const auto first_seeds = random_seeds(4000, 200, rng);
  const SampledSubgraph first = sampler.sample(first_seeds, 0);
  const SampledSubgraph first_host = first.to_host();
  for (uint64_t batch = 1; batch < 5; ++batch) sampler.sample(random_seeds(4000, 300, rng), batch);
  expect_same_subgraph(first_host, first.to_host(), "held batch");
  expect_same_subgraph(sample_neighbors(graph, first_seeds, sampler.options(), 0), first_host,
                       "first");
}

TEST(CudaSampler, NoLeakOverAThousandBatches) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device on this machine";
  const Csr graph = skewed_random_graph(20000, 400000, 8);
  for (auto mode : {CudaSamplingMode::kGpu, CudaSamplingMode::kUva}) {
    NeighborSampler sampler(CudaGraph::place(graph, {.mode = mode}),
                            {{10, 10, 5}, false, false, 4});
    CudaStream stream = CudaStream::create(0);
    std::mt19937_64 rng(6);
    std::vector<std::vector<int64_t>> pool;
    for (int i = 0; i < 8; ++i) pool.push_back(random_seeds(20000, 512, rng));
    for (uint64_t batch = 0; batch < 20; ++batch) {  // warm up: the workspace reaches its size
      sampler.sample(pool[batch % pool.size()], batch, stream.handle());
    }
    stream.synchronize();
    size_t free_before = 0, free_after = 0, total = 0;
    ASSERT_EQ(cudaMemGetInfo(&free_before, &total), cudaSuccess);
    int64_t edges = 0;
    for (uint64_t batch = 0; batch < 1000; ++batch) {
      const auto result = sampler.sample(pool[batch % pool.size()], batch, stream.handle());
      edges += result.rows.numel();
    }
    stream.synchronize();
    ASSERT_EQ(cudaMemGetInfo(&free_after, &total), cudaSuccess);
    EXPECT_GT(edges, 0);
    // Allow a few MiB of growth for batches larger than any in the warm-up.
    EXPECT_LE(free_before - std::min(free_before, free_after), size_t{8} << 20)
        << cuda_sampling_mode_name(mode) << ": free device memory went from " << free_before
        << " to " << free_after;
  }
}

}  // namespace
}  // namespace volley
