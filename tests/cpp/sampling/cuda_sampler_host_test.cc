// NeighborSampler's CUDA branch and the GPU feature tiers, host side, in any build and without a
// GPU: mode parsing,
// argument checks that happen before any CUDA call (with the CPU sampler's messages), and a
// clear error — not a crash — where CUDA or a device is missing. (With a GPU,
// tests/cpp/sampling/cuda/ checks the results against the CPU sampler.)
#include <gtest/gtest.h>

#include "test_util.h"
#include "volley/core/cuda_device.h"
#include "volley/feature/feature_store.h"  // NoDeviceIsAClearError
#include "volley/sampling/cuda_graph.h"
#include "volley/sampling/internal/cuda_sampler_checks.h"

namespace volley {
namespace {

Csr small_graph(bool weights) {
  std::optional<Array> w;
  if (weights) w = Array::from_vector(std::vector<float>{1, 2, 3, 4});
  return build_csr(Array::from_vector(std::vector<int64_t>{0, 1, 2, 3}),
                   Array::from_vector(std::vector<int64_t>{1, 2, 3, 0}), w, {.num_nodes = 4});
}

TEST(CudaSamplerHost, ParsesModes) {
  EXPECT_EQ(parse_cuda_sampling_mode("GPU"), CudaSamplingMode::kGpu);
  EXPECT_EQ(parse_cuda_sampling_mode("gpu"), CudaSamplingMode::kGpu);
  EXPECT_EQ(parse_cuda_sampling_mode("UVA"), CudaSamplingMode::kUva);
  EXPECT_EQ(parse_cuda_sampling_mode("Uva"), CudaSamplingMode::kUva);
  EXPECT_EQ(cuda_sampling_mode_name(CudaSamplingMode::kUva), "UVA");
  EXPECT_EQ(cuda_sampling_mode_name(CudaSamplingMode::kGpu), "GPU");
  for (const char* bad : {"", "cpu", "GPUS", "zero-copy"}) {
    const std::string message = message_of<ValueError>([&] { parse_cuda_sampling_mode(bad); });
    EXPECT_NE(message.find(fmt::format("'{}' is not a CUDA sampling mode", bad)), std::string::npos)
        << message;
  }
}

// The option checks are the CPU sampler's, word for word, and need no device.
TEST(CudaSamplerHost, OptionErrorsMatchTheCpuSampler) {
  const Csr graph = small_graph(false);
  const std::vector<NeighborSamplerOptions> bad = {
      {{-2}, false, false, 0}, {{5, -2}, false, false, 0}, {std::vector<int64_t>(256, 1)}};
  for (const auto& options : bad) {
    const std::string cpu =
        message_of<ValueError>([&] { validate_sampler_options(graph, options); });
    ASSERT_NE(cpu, "<no exception>");
    EXPECT_EQ(message_of<ValueError>([&] { NeighborSampler(CudaGraph(), options); }), cpu);
  }
  // Valid options on an unplaced graph: a ValueError saying so.
  EXPECT_NE(message_of<ValueError>([&] {
              NeighborSampler(CudaGraph(), {{5}});
            }).find("needs a placed graph"),
            std::string::npos);
}

TEST(CudaSamplerHost, SeedErrorsMatchTheCpuSampler) {
  const Csr graph = small_graph(false);
  const NeighborSamplerOptions options{{2}};
  const std::vector<std::vector<int64_t>> bad_range = {{0, 4}, {-1}, {3, 2, 1, 100}};
  for (const auto& seeds : bad_range) {
    const std::string cpu =
        message_of<IndexError>([&] { sample_neighbors(graph, seeds, options, 0); });
    ASSERT_NE(cpu, "<no exception>");
    EXPECT_EQ(message_of<IndexError>([&] { sampling_internal::check_seeds(4, seeds); }), cpu);
  }
  const std::vector<int64_t> duplicate = {1, 2, 3, 2};
  const std::string cpu =
      message_of<ValueError>([&] { sample_neighbors(graph, duplicate, options, 0); });
  ASSERT_NE(cpu, "<no exception>");
  EXPECT_EQ(message_of<ValueError>([&] { sampling_internal::check_seeds(4, duplicate); }), cpu);
  EXPECT_NO_THROW(sampling_internal::check_seeds(4, std::vector<int64_t>{3, 0, 2}));
}

TEST(CudaSamplerHost, PlacementChecksArgumentsBeforeCuda) {
  const Csr graph = small_graph(false);
  EXPECT_NE(message_of<ValueError>([&] {
              CudaGraph::place(graph, {.mode = static_cast<CudaSamplingMode>(7)});
            }).find("CUDA sampling mode 7 is not GPU"),
            std::string::npos);
  EXPECT_NE(message_of<ValueError>([&] {
              CudaGraph::place(graph, {.device = -1});
            }).find("CUDA device must be >= 0, got -1"),
            std::string::npos);
  EXPECT_FALSE(CudaGraph().defined());
}

// Without CUDA support or without a device, asking for the GPU is a RuntimeError that says so.
TEST(CudaSamplerHost, NoDeviceIsAClearError) {
#ifdef VOLLEY_WITH_CUDA
  EXPECT_TRUE(cuda_built());
#else
  EXPECT_FALSE(cuda_built());
  EXPECT_EQ(cuda_device_count(), 0);
#endif
  if (cuda_device_count() > 0) GTEST_SKIP() << "a CUDA device is present";
  const Csr graph = small_graph(true);
  for (auto mode : {CudaSamplingMode::kGpu, CudaSamplingMode::kUva}) {
    const std::string message =
        message_of<RuntimeError>([&] { CudaGraph::place(graph, {.mode = mode}); });
    if (cuda_built()) {
      EXPECT_NE(message.find("CUDA device 0 requested, but 0 CUDA device(s) are visible"),
                std::string::npos)
          << message;
    } else {
      EXPECT_NE(message.find("this build of Volley has no CUDA support"), std::string::npos)
          << message;
    }
  }
  EXPECT_NE(message_of<RuntimeError>([] { CudaStream::create(0); }), "<no exception>");
  EXPECT_NE(message_of<RuntimeError>([] { measure_device_copy_bandwidth(0, 1 << 20); }),
            "<no exception>");
  const Array matrix = Array::zeros(DType::kFloat32, {10, 4});
  for (const Location where : {Location::kCuda, Location::kPinnedHost}) {
    const std::string message = message_of<RuntimeError>(
        [&] { FeatureStore::build(matrix, {.tiers = {{.location = where}}}); });
    EXPECT_NE(message.find(cuda_built() ? "0 CUDA device(s) are visible" : "no CUDA support"),
              std::string::npos)
        << message;
  }
}

}  // namespace
}  // namespace volley
