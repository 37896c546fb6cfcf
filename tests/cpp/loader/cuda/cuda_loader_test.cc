// The CUDA loader's batches equal the CPU loader's (same seeds, sampling, feature and label
// rows; GPU and UVA modes; shuffled; several epochs), batches held by the consumer stay intact
// while later ones are built, a failure surfaces for its batch, and a thousand batches do not
// grow device memory. Skips without a CUDA device.
//
// A .cc, not a .cu: public API only (nvcc cannot compile fmt, which the public headers include).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <random>

#include "volley/core/cuda_device.h"
#include "volley/loader/cuda_loader.h"
#include "volley/loader/neighbor_loader.h"

namespace volley {
namespace {

bool have_device() { return cuda_device_count() > 0; }

// `matrix` in GPU tiers of device 0: `budget` bytes of rows in device memory, the rest pinned.
FeatureStore on_gpu(const Array& matrix, size_t budget) {
  return FeatureStore::build(matrix,
                             {.tiers = {{.location = Location::kCuda, .byte_budget = budget}}});
}

struct Inputs {
  Csr graph;
  Array features;  // float32 [n, 12]
  Array labels;    // int64 [n]
  Array train;     // int64
};

Inputs make_inputs(int64_t n, int64_t m, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> src(m), dst(m);
  for (int64_t i = 0; i < m; ++i) {
    src[i] = static_cast<int64_t>(rng() % n);
    dst[i] = static_cast<int64_t>((rng() % n) * (rng() % n) / n);  // hubs at low ids
  }
  Inputs inputs;
  inputs.graph = build_csr(Array::from_vector(src), Array::from_vector(dst), std::nullopt,
                           {.num_nodes = n, .keep_edge_ids = true});
  std::vector<float> x(static_cast<size_t>(n) * 12);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 977) * 0.5f;
  inputs.features = Array(Array::from_vector(x).buffer(), DType::kFloat32, {n, 12});
  std::vector<int64_t> y(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) y[static_cast<size_t>(i)] = i % 7;
  inputs.labels = Array::from_vector(y);
  std::vector<int64_t> train;
  for (int64_t i = 0; i < n; i += 3) train.push_back(i);
  inputs.train = Array::from_vector(train);
  return inputs;
}

template <typename T>
std::vector<T> to_host(const Array& array) {
  std::vector<T> host(static_cast<size_t>(array.numel()));
  cuda_copy(host.data(), array.raw_data(), array.nbytes(), nullptr);
  cuda_synchronize(nullptr);
  return host;
}

template <typename T>
std::vector<T> host_values(const Array& array) {
  const T* data = array.data<T>();
  return std::vector<T>(data, data + array.numel());
}

void expect_same(const Batch& cpu, Batch& gpu, const std::string& where) {
  gpu.synchronize();
  EXPECT_EQ(cpu.index, gpu.index) << where;
  EXPECT_EQ(cpu.batch_size, gpu.batch_size) << where;
  EXPECT_EQ(host_values<int64_t>(cpu.nodes), to_host<int64_t>(gpu.nodes)) << where;
  EXPECT_EQ(host_values<int64_t>(cpu.input_ids), to_host<int64_t>(gpu.input_ids)) << where;
  EXPECT_EQ(host_values<int64_t>(cpu.edge_index), to_host<int64_t>(gpu.edge_index)) << where;
  EXPECT_EQ(host_values<int64_t>(cpu.edge_ids), to_host<int64_t>(gpu.edge_ids)) << where;
  EXPECT_EQ(host_values<float>(cpu.x), to_host<float>(gpu.x)) << where;
  EXPECT_EQ(host_values<int64_t>(cpu.y), to_host<int64_t>(gpu.y)) << where;
  EXPECT_EQ(cpu.x.shape(), gpu.x.shape()) << where;
  EXPECT_EQ(cpu.nodes_per_hop, gpu.nodes_per_hop) << where;
  EXPECT_EQ(cpu.edges_per_hop, gpu.edges_per_hop) << where;
}

LoaderOptions options_for(bool shuffle) {
  LoaderOptions options;
  options.batch_size = 64;
  options.shuffle = shuffle;
  options.num_threads = 2;
  options.seed = 1234;
  options.sampler.fanouts = {6, 4, 3};
  return options;
}

TEST(CudaLoader, BatchesEqualTheCpuLoaderInBothModes) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device on this machine";
  const Inputs inputs = make_inputs(3000, 40000, 7);
  for (const CudaSamplingMode mode : {CudaSamplingMode::kGpu, CudaSamplingMode::kUva}) {
    for (const bool shuffle : {false, true}) {
      const LoaderOptions options = options_for(shuffle);
      NeighborLoader cpu(inputs.graph, FeatureStore(inputs.features), FeatureStore(inputs.labels),
                         inputs.train, options);
      const CudaGraph graph = CudaGraph::place(inputs.graph, {.mode = mode});
      // UVA: half the feature rows in device memory, the rest pinned.
      const size_t budget = mode == CudaSamplingMode::kGpu ? ~size_t{0} : 1500 * 12 * sizeof(float);
      CudaNeighborLoader gpu(graph, on_gpu(inputs.features, budget), on_gpu(inputs.labels, 0),
                             inputs.train, options);
      ASSERT_EQ(cpu.num_batches(), gpu.num_batches());
      CudaStream consumer = CudaStream::create(0);
      for (int64_t epoch = 0; epoch < 2; ++epoch) {
        auto cpu_epoch = cpu.start_epoch(epoch);
        auto gpu_epoch = gpu.start_epoch(epoch);
        int64_t count = 0;
        while (auto expected = cpu_epoch->next()) {
          auto got = gpu_epoch->next_on(consumer.handle());
          ASSERT_TRUE(got.has_value());
          expect_same(*expected, *got,
                      fmt::format("mode {} shuffle {} epoch {} batch {}",
                                  cuda_sampling_mode_name(mode), shuffle, epoch, count));
          ++count;
        }
        EXPECT_FALSE(gpu_epoch->next_on(consumer.handle()).has_value());
        EXPECT_EQ(count, gpu.num_batches());
      }
    }
  }
}

// Features stored as float16 / bfloat16 arrive as float32, converted on the GPU exactly
// as the CPU loader converts them while gathering.
TEST(CudaLoader, FeatureDtypeIsConvertedOnTheGpuAsOnTheCpu) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device on this machine";
  const Inputs inputs = make_inputs(2000, 20000, 13);
  const LoaderOptions options = options_for(true);  // feature_dtype float32
  for (const DType stored : {DType::kFloat16, DType::kBFloat16}) {
    const Array features = inputs.features.cast(stored);
    NeighborLoader cpu(inputs.graph, FeatureStore(features), FeatureStore(inputs.labels),
                       inputs.train, options);
    CudaNeighborLoader gpu(CudaGraph::place(inputs.graph), on_gpu(features, ~size_t{0}),
                           on_gpu(inputs.labels, ~size_t{0}), inputs.train, options);
    auto cpu_epoch = cpu.start_epoch(0);
    auto gpu_epoch = gpu.start_epoch(0);
    int64_t count = 0;
    while (auto expected = cpu_epoch->next()) {
      auto got = gpu_epoch->next_on(nullptr);
      ASSERT_TRUE(got.has_value());
      ASSERT_EQ(got->x.dtype(), DType::kFloat32);
      expect_same(*expected, *got, fmt::format("{} batch {}", dtype_name(stored), count++));
    }
  }
}

TEST(CudaLoader, HeldBatchesStayIntact) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device on this machine";
  const Inputs inputs = make_inputs(2000, 20000, 11);
  LoaderOptions options = options_for(true);
  options.prefetch = 3;
  NeighborLoader cpu(inputs.graph, FeatureStore(inputs.features), std::nullopt, inputs.train,
                     options);
  CudaNeighborLoader gpu(CudaGraph::place(inputs.graph), on_gpu(inputs.features, ~size_t{0}),
                         std::nullopt, inputs.train, options);
  auto gpu_epoch = gpu.start_epoch(3);
  std::vector<Batch> held;
  while (auto batch = gpu_epoch->next_on(nullptr)) held.push_back(std::move(*batch));
  auto cpu_epoch = gpu.num_batches() > 0 ? cpu.start_epoch(3) : nullptr;
  for (auto& batch : held) {
    auto expected = cpu_epoch->next();
    ASSERT_TRUE(expected.has_value());
    EXPECT_EQ(host_values<int64_t>(expected->nodes), to_host<int64_t>(batch.nodes));
    EXPECT_EQ(host_values<float>(expected->x), to_host<float>(batch.x));
    EXPECT_FALSE(batch.y.defined());
  }
}

TEST(CudaLoader, AFailingBatchIsRethrownForThatBatch) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device on this machine";
  const Inputs inputs = make_inputs(1000, 8000, 3);
  LoaderOptions options = options_for(false);
  options.on_batch_start = [](int64_t index) {
    if (index == 2) throw ValueError("injected failure in batch 2");
  };
  CudaNeighborLoader gpu(CudaGraph::place(inputs.graph), std::nullopt, std::nullopt, inputs.train,
                         options);
  auto epoch = gpu.start_epoch(0);
  EXPECT_TRUE(epoch->next_on(nullptr).has_value());
  EXPECT_TRUE(epoch->next_on(nullptr).has_value());
  EXPECT_THROW(epoch->next_on(nullptr), ValueError);
  EXPECT_FALSE(epoch->next_on(nullptr).has_value());
}

TEST(CudaLoader, StoppingEarlyAndDestroyingMidEpochIsClean) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device on this machine";
  const Inputs inputs = make_inputs(1000, 8000, 5);
  CudaNeighborLoader gpu(CudaGraph::place(inputs.graph), std::nullopt, std::nullopt, inputs.train,
                         options_for(true));
  std::optional<Batch> kept;
  {
    auto epoch = gpu.start_epoch(0);
    kept = epoch->next_on(nullptr);
    epoch->stop();
    EXPECT_FALSE(epoch->next_on(nullptr).has_value());
  }
  ASSERT_TRUE(kept.has_value());
  EXPECT_EQ(to_host<int64_t>(kept->nodes).size(), static_cast<size_t>(kept->nodes.numel()));
}

TEST(CudaLoader, NoDeviceMemoryGrowthOverAThousandBatches) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device on this machine";
  const Inputs inputs = make_inputs(5000, 60000, 9);
  LoaderOptions options = options_for(true);
  options.batch_size = 16;
  CudaNeighborLoader gpu(CudaGraph::place(inputs.graph), on_gpu(inputs.features, ~size_t{0}),
                         on_gpu(inputs.labels, ~size_t{0}), std::nullopt, options);
  CudaStream consumer = CudaStream::create(0);
  auto run = [&](int64_t batches, int64_t first_epoch) {
    int64_t done = 0;
    for (int64_t epoch = first_epoch; done < batches; ++epoch) {
      auto stream = gpu.start_epoch(epoch);
      while (done < batches) {
        auto batch = stream->next_on(consumer.handle());
        if (!batch) break;
        ++done;
      }
    }
    consumer.synchronize();
  };
  run(200, 0);  // warm: pools and workspaces reach their size
  size_t free_before = 0, free_after = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_before, &total), cudaSuccess);
  run(1000, 100);
  ASSERT_EQ(cudaMemGetInfo(&free_after, &total), cudaSuccess);
  // Allow some slack for pool granularity (2 MiB pages) and the driver.
  EXPECT_LE(free_before, free_after + (size_t{64} << 20))
      << "device memory shrank by " << (free_before - free_after) << " bytes over 1000 batches";
}

}  // namespace
}  // namespace volley
