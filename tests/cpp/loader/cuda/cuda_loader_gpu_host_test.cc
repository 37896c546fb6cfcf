// The GPU loader on the host-executor device (no GPU): CudaNeighborLoader's batch stream equals
// NeighborLoader's (the CPU oracle), batch for batch, for whole epochs — GPU and UVA placement,
// shuffled or not, every rank of three, with and without drop_last, and feature dtype
// conversion by the loader's convert bodies. The public API runs end to end: CudaGraph::place,
// FeatureStore GPU tiers, stream-ordered batch memory and events, the sampler, gather and
// convert bodies on the shuffling host executor (core/internal/emulated_device.h).
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "test_graphs.h"
#include "test_util.h"
#include "volley/core/cuda_device.h"
#include "volley/core/internal/emulated_device.h"
#include "volley/loader/cuda_loader.h"
#include "volley/loader/internal/cuda_convert.h"
#include "volley/loader/neighbor_loader.h"

namespace volley {
namespace {

using internal::ScopedCudaEmulation;

struct Inputs {
  Csr graph;
  Array features;  // float32 [n, 6], values exact in float16 and bfloat16 only in part
  Array integers;  // int64 [n, 6], values 0..100 (every integer dtype holds them)
  Array labels;    // int64 [n]
  Array train;     // int64, every third node
};

Inputs make_inputs(int64_t n, int64_t m, uint64_t seed) {
  Inputs inputs;
  inputs.graph = skewed_random_graph(n, m, seed);
  std::vector<float> x(static_cast<size_t>(n) * 6);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 977) * 0.37f - 100.0f;
  inputs.features = Array(Array::from_vector(x).buffer(), DType::kFloat32, {n, 6});
  std::vector<int64_t> k(x.size());
  for (size_t i = 0; i < k.size(); ++i) k[i] = static_cast<int64_t>(i % 101);
  inputs.integers = Array(Array::from_vector(k).buffer(), DType::kInt64, {n, 6});
  std::vector<int64_t> y(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) y[static_cast<size_t>(i)] = i % 7;
  inputs.labels = Array::from_vector(y);
  std::vector<int64_t> train;
  for (int64_t i = 0; i < n; i += 3) train.push_back(i);
  inputs.train = Array::from_vector(train);
  return inputs;
}

// The bytes of an array (host memory on the host-executor device, read through cuda_copy).
std::vector<std::byte> bytes_of(const Array& array) {
  std::vector<std::byte> bytes(array.defined() ? array.nbytes() : 0);
  if (!bytes.empty()) cuda_copy(bytes.data(), array.raw_data(), bytes.size(), nullptr);
  return bytes;
}

void expect_same(const Batch& cpu, Batch& gpu, const std::string& where) {
  gpu.synchronize();
  EXPECT_EQ(gpu.location(), Location::kCuda) << where;  // the GPU path, not a CPU fallback
  EXPECT_EQ(cpu.index, gpu.index) << where;
  EXPECT_EQ(cpu.batch_size, gpu.batch_size) << where;
  EXPECT_EQ(bytes_of(cpu.nodes), bytes_of(gpu.nodes)) << where;
  EXPECT_EQ(bytes_of(cpu.input_ids), bytes_of(gpu.input_ids)) << where;
  EXPECT_EQ(bytes_of(cpu.edge_index), bytes_of(gpu.edge_index)) << where;
  EXPECT_EQ(bytes_of(cpu.edge_ids), bytes_of(gpu.edge_ids)) << where;
  EXPECT_EQ(cpu.x.defined(), gpu.x.defined()) << where;
  if (cpu.x.defined()) {
    EXPECT_EQ(cpu.x.dtype(), gpu.x.dtype()) << where;
    EXPECT_EQ(cpu.x.shape(), gpu.x.shape()) << where;
    EXPECT_EQ(bytes_of(cpu.x), bytes_of(gpu.x)) << where;
  }
  EXPECT_EQ(bytes_of(cpu.y), bytes_of(gpu.y)) << where;
  EXPECT_EQ(cpu.batch_ids.defined(), gpu.batch_ids.defined()) << where;
  EXPECT_EQ(bytes_of(cpu.batch_ids), bytes_of(gpu.batch_ids)) << where;
  EXPECT_EQ(cpu.nodes_per_hop, gpu.nodes_per_hop) << where;
  EXPECT_EQ(cpu.edges_per_hop, gpu.edges_per_hop) << where;
}

// Runs epoch `epoch` of both loaders to the end; returns the number of batches compared.
template <class GpuLoader>
int64_t compare_epoch(const NeighborLoader& cpu, const GpuLoader& gpu, int64_t epoch,
                      const std::string& where) {
  auto cpu_epoch = cpu.start_epoch(epoch);
  auto gpu_epoch = gpu.start_epoch(epoch);
  int64_t count = 0;
  while (auto expected = cpu_epoch->next()) {
    auto got = gpu_epoch->next_on(nullptr);
    if (!got.has_value()) {
      ADD_FAILURE() << where << ": the GPU loader ended after " << count << " batches";
      return count;
    }
    expect_same(*expected, *got, fmt::format("{} epoch {} batch {}", where, epoch, count));
    ++count;
  }
  EXPECT_FALSE(gpu_epoch->next_on(nullptr).has_value()) << where;
  return count;
}

FeatureStore on_gpu(const Array& matrix, size_t budget) {
  return FeatureStore::build(matrix,
                             {.tiers = {{.location = Location::kCuda, .byte_budget = budget}}});
}

LoaderOptions options_for(bool shuffle, bool drop_last, int rank, int world_size) {
  LoaderOptions options;
  options.batch_size = 48;
  options.shuffle = shuffle;
  options.drop_last = drop_last;
  options.rank = rank;
  options.world_size = world_size;
  options.num_threads = 2;
  options.seed = 1234;
  options.sampler.fanouts = {5, 3, 2};
  return options;
}

TEST(CudaLoaderGpuHost, TheEmulatedDeviceIsOffUnlessAskedFor) {
  EXPECT_FALSE(cuda_emulated());  // the test binary does not set VOLLEY_HOST_EXECUTOR
  {
    ScopedCudaEmulation emulated;
    EXPECT_TRUE(cuda_emulated());
    EXPECT_TRUE(cuda_built());
    EXPECT_EQ(cuda_device_count(), 1);
    EXPECT_EQ(Buffer::allocate_device(16, 0).location(), Location::kCuda);
    EXPECT_THROW(Buffer::allocate_device(16, 1), RuntimeError);  // one emulated device
  }
  EXPECT_FALSE(cuda_emulated());
}

TEST(CudaLoaderGpuHost, BatchStreamEqualsTheCpuLoaderForWholeEpochs) {
  ScopedCudaEmulation emulated;
  const Inputs inputs = make_inputs(1200, 14000, 7);
  for (const CudaSamplingMode mode : {CudaSamplingMode::kGpu, CudaSamplingMode::kUva}) {
    const CudaGraph graph = CudaGraph::place(inputs.graph, {.mode = mode});
    ASSERT_EQ(graph.mode(), mode);
    // UVA: 40% of the feature rows in device memory, the rest pinned; labels all pinned.
    const size_t budget = mode == CudaSamplingMode::kGpu ? ~size_t{0} : 480 * 6 * sizeof(float);
    const FeatureStore x = on_gpu(inputs.features, budget);
    const FeatureStore y = on_gpu(inputs.labels, 0);
    for (const bool shuffle : {false, true}) {
      for (const bool drop_last : {false, true}) {
        for (int rank = 0; rank < 3; ++rank) {
          const LoaderOptions options = options_for(shuffle, drop_last, rank, 3);
          const NeighborLoader cpu(inputs.graph, FeatureStore(inputs.features),
                                   FeatureStore(inputs.labels), inputs.train, options);
          const CudaNeighborLoader gpu(graph, x, y, inputs.train, options);
          ASSERT_EQ(cpu.num_batches(), gpu.num_batches());
          const std::string where =
              fmt::format("{} shuffle {} drop_last {} rank {}/3", cuda_sampling_mode_name(mode),
                          shuffle, drop_last, rank);
          for (int64_t epoch = 0; epoch < 2; ++epoch) {
            EXPECT_EQ(compare_epoch(cpu, gpu, epoch, where), gpu.num_batches()) << where;
          }
        }
      }
    }
  }
}

TEST(CudaLoaderGpuHost, FeatureDtypeIsConvertedAsOnTheCpu) {
  ScopedCudaEmulation emulated;
  const Inputs inputs = make_inputs(900, 9000, 13);
  struct Case {
    DType stored, wanted;
  };
  const std::vector<Case> cases = {
      {DType::kFloat16, DType::kFloat32},  {DType::kBFloat16, DType::kFloat32},
      {DType::kFloat64, DType::kFloat32},  {DType::kInt32, DType::kFloat32},
      {DType::kInt8, DType::kFloat32},     {DType::kFloat32, DType::kFloat16},
      {DType::kFloat32, DType::kBFloat16}, {DType::kInt16, DType::kInt64},
      {DType::kUInt8, DType::kInt64}};
  const CudaGraph graph = CudaGraph::place(inputs.graph, {.mode = CudaSamplingMode::kUva});
  for (const Case& c : cases) {
    const Array& source = is_integer(c.stored) ? inputs.integers : inputs.features;
    const Array features = source.cast(c.stored);
    LoaderOptions options = options_for(true, false, 1, 2);
    options.feature_dtype = c.wanted;
    const NeighborLoader cpu(inputs.graph, FeatureStore(features), FeatureStore(inputs.labels),
                             inputs.train, options);
    const CudaNeighborLoader gpu(graph, on_gpu(features, 300 * features.dim(1) * 8),
                                 on_gpu(inputs.labels, ~size_t{0}), inputs.train, options);
    const std::string where = fmt::format("{} -> {}", dtype_name(c.stored), dtype_name(c.wanted));
    EXPECT_EQ(compare_epoch(cpu, gpu, 0, where), gpu.num_batches()) << where;
  }
}

// Labels are int64 on every device (batch.h), whatever integer type they are stored in: the
// GPU batch's y equals the CPU batch's, bytes and dtype; labels that are not integers are
// refused when the loader is made.
TEST(CudaLoaderGpuHost, LabelsAreInt64InEveryBatch) {
  ScopedCudaEmulation emulated;
  const Inputs inputs = make_inputs(700, 7000, 17);
  const CudaGraph graph = CudaGraph::place(inputs.graph);
  const LoaderOptions options = options_for(true, false, 1, 2);
  for (DType stored : {DType::kInt32, DType::kUInt8, DType::kInt16, DType::kInt64}) {
    const Array labels = inputs.labels.cast(stored);
    const NeighborLoader cpu(inputs.graph, std::nullopt, FeatureStore(labels), inputs.train,
                             options);
    const CudaNeighborLoader gpu(graph, std::nullopt, on_gpu(labels, ~size_t{0}), inputs.train,
                                 options);
    auto epoch = gpu.start_epoch(0);
    auto first = epoch->next_on(nullptr);
    ASSERT_TRUE(first.has_value());
    EXPECT_EQ(first->y.dtype(), DType::kInt64) << dtype_name(stored);
    EXPECT_EQ(compare_epoch(cpu, gpu, 0, std::string(dtype_name(stored))), gpu.num_batches());
  }
  try {
    CudaNeighborLoader(graph, std::nullopt, on_gpu(inputs.labels.cast(DType::kFloat32), ~size_t{0}),
                       inputs.train, options);
    ADD_FAILURE() << "float labels were taken";
  } catch (const ValueError& error) {
    EXPECT_STREQ(error.what(),
                 "labels must hold integers (batches carry them as int64), got float32");
  }
}

TEST(CudaLoaderGpuHost, HeldBatchesStayIntactAndFailuresSurfaceForTheirBatch) {
  ScopedCudaEmulation emulated;
  const Inputs inputs = make_inputs(800, 8000, 11);
  LoaderOptions options = options_for(true, false, 0, 1);
  options.prefetch = 3;
  const NeighborLoader cpu(inputs.graph, FeatureStore(inputs.features), std::nullopt, inputs.train,
                           options);
  const CudaNeighborLoader gpu(CudaGraph::place(inputs.graph), on_gpu(inputs.features, 4096),
                               std::nullopt, inputs.train, options);
  std::vector<Batch> held;
  {
    auto gpu_epoch = gpu.start_epoch(3);
    while (auto batch = gpu_epoch->next_on(nullptr)) held.push_back(std::move(*batch));
  }
  auto cpu_epoch = cpu.start_epoch(3);
  for (auto& batch : held) {
    auto expected = cpu_epoch->next();
    ASSERT_TRUE(expected.has_value());
    expect_same(*expected, batch, fmt::format("held batch {}", batch.index));
  }
  options.on_batch_start = [](int64_t index) {
    if (index == 2) throw ValueError("injected failure in batch 2");
  };
  const CudaNeighborLoader failing(CudaGraph::place(inputs.graph), std::nullopt, std::nullopt,
                                   inputs.train, options);
  auto epoch = failing.start_epoch(0);
  EXPECT_TRUE(epoch->next_on(nullptr).has_value());
  EXPECT_TRUE(epoch->next_on(nullptr).has_value());
  EXPECT_THROW(epoch->next_on(nullptr), ValueError);
  EXPECT_FALSE(epoch->next_on(nullptr).has_value());
}

// NeighborLoader is the one entry: given a placed graph it builds the batches on the GPU, in
// the mode the graph's placement says.
TEST(CudaLoaderGpuHost, OneLoaderEntryPicksTheDeviceFromWhereTheGraphLives) {
  ScopedCudaEmulation emulated;
  const Inputs inputs = make_inputs(600, 6000, 17);
  const LoaderOptions options = options_for(true, true, 1, 2);
  const NeighborLoader cpu(inputs.graph, FeatureStore(inputs.features), FeatureStore(inputs.labels),
                           inputs.train, options);
  EXPECT_FALSE(cpu.on_cuda());
  for (const CudaSamplingMode mode : {CudaSamplingMode::kGpu, CudaSamplingMode::kUva}) {
    const NeighborLoader gpu(CudaGraph::place(inputs.graph, {.mode = mode}),
                             on_gpu(inputs.features, 2048), on_gpu(inputs.labels, 0), inputs.train,
                             options);
    EXPECT_TRUE(gpu.on_cuda());
    EXPECT_EQ(gpu.num_inputs(), cpu.num_inputs());
    EXPECT_EQ(gpu.num_batches(), cpu.num_batches());
    EXPECT_EQ(bytes_of(gpu.epoch_positions(1)), bytes_of(cpu.epoch_positions(1)));
    const std::string where = fmt::format("one entry, {}", cuda_sampling_mode_name(mode));
    EXPECT_EQ(compare_epoch(cpu, gpu, 1, where), cpu.num_batches()) << where;
  }
  EXPECT_THROW(NeighborLoader(CudaGraph::place(inputs.graph), FeatureStore(inputs.features),
                              std::nullopt, inputs.train, options),
               ValueError);  // host tiers with a placed graph
}

TEST(CudaLoaderGpuHost, ArgumentsAreCheckedAsOnAGpu) {
  ScopedCudaEmulation emulated;
  const Inputs inputs = make_inputs(300, 2000, 5);
  const CudaGraph graph = CudaGraph::place(inputs.graph);
  const LoaderOptions options = options_for(false, false, 0, 1);
  // Host tiers are refused; so is a store with the wrong row count, or an unsupported dtype.
  EXPECT_THROW(
      CudaNeighborLoader(graph, FeatureStore(inputs.features), std::nullopt, inputs.train, options),
      ValueError);
  const Array short_rows =
      Array(inputs.features.buffer().slice(0, 10 * 6 * 4), DType::kFloat32, {10, 6});
  EXPECT_THROW(
      CudaNeighborLoader(graph, on_gpu(short_rows, 0), std::nullopt, inputs.train, options),
      ValueError);
  LoaderOptions to_int = options;
  to_int.feature_dtype = DType::kInt64;
  EXPECT_THROW(
      CudaNeighborLoader(graph, on_gpu(inputs.features, 0), std::nullopt, inputs.train, to_int),
      ValueError);
  // Out-of-range ids given to the device gather from the host are an IndexError.
  const FeatureStore x = on_gpu(inputs.features, 1024);
  EXPECT_THROW(gather_to_device(x, Array::from_vector(std::vector<int64_t>{1, 300}), nullptr),
               IndexError);
  const Array rows = gather_to_device(x, Array::from_vector(std::vector<int64_t>{299, 0}), nullptr);
  std::vector<std::byte> want(2 * 6 * 4);
  std::memcpy(want.data(), inputs.features.raw_data() + 299 * 24, 24);
  std::memcpy(want.data() + 24, inputs.features.raw_data(), 24);
  EXPECT_EQ(bytes_of(rows), want);
}

// Temporal sampling: input_time reaches the CUDA sampler, and the batch stream equals
// the CPU loader's — node and edge time, both strategies, GPU and UVA placement, input nodes
// repeating at different times, batch_ids (disjoint trees) included. Rows must be sorted by the
// time in use; input_time is checked as in the CPU loader.
TEST(CudaLoaderGpuHost, TemporalBatchesEqualTheCpuLoaders) {
  ScopedCudaEmulation emulated;
  const Inputs inputs = make_inputs(700, 7000, 23);
  std::mt19937_64 rng(5);
  std::vector<int64_t> node_time(700), edge_time(static_cast<size_t>(inputs.graph.num_edges()));
  for (auto& t : node_time) t = static_cast<int64_t>(rng() % 400);
  for (auto& t : edge_time) t = static_cast<int64_t>(rng() % 400);
  const Csr timed =
      inputs.graph.with_times(Array::from_vector(node_time), Array::from_vector(edge_time));
  std::vector<int64_t> seeds, times;  // every train node twice, at two times
  for (int64_t i = 0; i < inputs.train.numel(); ++i) {
    for (int k = 0; k < 2; ++k) {
      seeds.push_back(inputs.train.data<int64_t>()[i]);
      times.push_back(static_cast<int64_t>(rng() % 500));
    }
  }
  const Array input_nodes = Array::from_vector(seeds);
  for (const TimeSource source : {TimeSource::kNode, TimeSource::kEdge}) {
    const Csr sorted =
        sort_rows_by_time(timed, source == TimeSource::kEdge ? TimeKind::kEdge : TimeKind::kNode);
    for (const TemporalStrategy strategy : {TemporalStrategy::kUniform, TemporalStrategy::kLast}) {
      LoaderOptions options = options_for(true, false, 0, 1);
      options.sampler.time_source = source;
      options.sampler.temporal_strategy = strategy;
      options.sampler.disjoint = true;
      options.input_time = Array::from_vector(times);
      const NeighborLoader cpu(sorted, FeatureStore(inputs.features), FeatureStore(inputs.labels),
                               input_nodes, options);
      for (const CudaSamplingMode mode : {CudaSamplingMode::kGpu, CudaSamplingMode::kUva}) {
        const CudaNeighborLoader gpu(CudaGraph::place(sorted, {.mode = mode}),
                                     on_gpu(inputs.features, 4096), on_gpu(inputs.labels, 0),
                                     input_nodes, options);
        const std::string where =
            fmt::format("{} time, {}, {}", source == TimeSource::kEdge ? "edge" : "node",
                        temporal_strategy_name(strategy), cuda_sampling_mode_name(mode));
        EXPECT_EQ(compare_epoch(cpu, gpu, 1, where), cpu.num_batches()) << where;
      }
    }
  }
  // The checks: rows unsorted by the time in use, no input_time, input_time of the wrong length.
  LoaderOptions options = options_for(false, false, 0, 1);
  options.sampler.time_source = TimeSource::kEdge;
  options.sampler.disjoint = true;
  options.input_time = Array::from_vector(times);
  const std::string unsorted = message_of<ValueError>([&] {
    CudaNeighborLoader(CudaGraph::place(timed), std::nullopt, std::nullopt, input_nodes, options);
  });
  EXPECT_NE(unsorted.find("rows sorted by edge_time"), std::string::npos) << unsorted;
  const CudaGraph graph = CudaGraph::place(sort_rows_by_time(timed, TimeKind::kEdge));
  options.input_time = Array::from_vector(std::vector<int64_t>{1, 2, 3});
  const std::string length = message_of<ValueError>(
      [&] { CudaNeighborLoader(graph, std::nullopt, std::nullopt, input_nodes, options); });
  EXPECT_NE(length.find(fmt::format("input_time has 3 entries, but there are {} input nodes",
                                    input_nodes.numel())),
            std::string::npos)
      << length;
  options.input_time.reset();
  const std::string missing = message_of<ValueError>(
      [&] { CudaNeighborLoader(graph, std::nullopt, std::nullopt, input_nodes, options); });
  EXPECT_NE(missing.find("needs input_time"), std::string::npos) << missing;
}

// The convert bodies refuse what gather_supports refuses (the loader checks it first), queuing
// nothing; an empty launch is a success.
TEST(CudaLoaderGpuHost, ConvertRefusesUnsupportedPairs) {
  std::vector<std::byte> in(64, std::byte{1}), out(64, std::byte{7});
  using loader_internal::launch_host_convert;
  EXPECT_FALSE(launch_host_convert(in.data(), DType::kFloat16, out.data(), DType::kInt64, 4));
  EXPECT_FALSE(launch_host_convert(in.data(), DType::kInt64, out.data(), DType::kInt64, 4));
  EXPECT_FALSE(launch_host_convert(in.data(), DType::kFloat64, out.data(), DType::kFloat16, 4));
  EXPECT_FALSE(launch_host_convert(in.data(), DType::kInt32, out.data(), DType::kBFloat16, 4));
  EXPECT_TRUE(launch_host_convert(in.data(), DType::kInt32, out.data(), DType::kFloat32, 0));
  EXPECT_EQ(out, std::vector<std::byte>(64, std::byte{7}));  // nothing written
}

}  // namespace
}  // namespace volley
