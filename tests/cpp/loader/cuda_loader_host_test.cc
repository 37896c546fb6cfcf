// The CUDA loader's host side, in any build and without a GPU: argument checks that happen
// before any CUDA call, and a clear error — not a crash — where CUDA or a device is missing.
// (With a GPU, tests/cpp/loader/cuda/ compares its batches with the CPU loader's.)
#include <gtest/gtest.h>

#include <algorithm>

#include "test_util.h"
#include "volley/core/cuda_device.h"
#include "volley/loader/cuda_loader.h"

namespace volley {
namespace {

Csr small_graph() {
  return build_csr(Array::from_vector(std::vector<int64_t>{0, 1, 2, 3}),
                   Array::from_vector(std::vector<int64_t>{1, 2, 3, 0}), std::nullopt,
                   {.num_nodes = 4});
}

TEST(CudaLoaderHost, AnUnplacedGraphIsAValueError) {
  LoaderOptions options;
  options.sampler.fanouts = {2};
  const std::string message = message_of<ValueError>(
      [&] { CudaNeighborLoader(CudaGraph(), std::nullopt, std::nullopt, std::nullopt, options); });
  EXPECT_NE(message.find("needs a placed graph"), std::string::npos) << message;
}

TEST(CudaLoaderHost, HostStoresAreRefused) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "a CUDA device is present";
  // A placed graph needs a device; the store check is reached through sample_device_batch.
  LoaderOptions options;
  options.sampler.fanouts = {2};
  NeighborSampler cpu(small_graph(), options.sampler);
  const FeatureStore host(Array::zeros(DType::kFloat32, {4, 2}));
  const std::vector<int64_t> seeds = {0};
  EXPECT_NE(message_of<ValueError>([&] {
              sample_device_batch(cpu, seeds, 0, &host, nullptr, nullptr);
            }).find("needs a sampler over a CudaGraph"),
            std::string::npos);
  EXPECT_NE(message_of<ValueError>([&] {
              gather_to_device(host, Array::from_vector(std::vector<int64_t>{1}), nullptr);
            }).find("needs a feature store in GPU tiers"),
            std::string::npos);
}

TEST(CudaLoaderHost, NoCudaOrNoDeviceIsAClearRuntimeError) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "a CUDA device is present";
  const std::string message =
      message_of<RuntimeError>([&] { CudaGraph::place(small_graph(), {}); });
  if (cuda_built()) {
    EXPECT_NE(message.find("0 CUDA device(s) are visible"), std::string::npos) << message;
  } else {
    EXPECT_NE(message.find("no CUDA support"), std::string::npos) << message;
  }
}

TEST(CudaLoaderHost, EpochOrderAndSeedAreTheCpuLoaders) {
  // The shared helpers: shuffled orders are permutations, differ per epoch, repeat per seed.
  const Array a = loader_internal::epoch_order(100, true, 5, 0);
  const Array b = loader_internal::epoch_order(100, true, 5, 0);
  const Array c = loader_internal::epoch_order(100, true, 5, 1);
  const Array plain = loader_internal::epoch_order(100, false, 5, 0);
  std::vector<int64_t> va(a.data<int64_t>(), a.data<int64_t>() + 100);
  std::vector<int64_t> vb(b.data<int64_t>(), b.data<int64_t>() + 100);
  std::vector<int64_t> vc(c.data<int64_t>(), c.data<int64_t>() + 100);
  EXPECT_EQ(va, vb);
  EXPECT_NE(va, vc);
  for (int64_t i = 0; i < 100; ++i) EXPECT_EQ(plain.data<int64_t>()[i], i);
  std::sort(va.begin(), va.end());
  for (int64_t i = 0; i < 100; ++i) EXPECT_EQ(va[static_cast<size_t>(i)], i);
  EXPECT_NE(loader_internal::epoch_sampler_seed(5, 0), loader_internal::epoch_sampler_seed(5, 1));
  const std::string message = message_of<IndexError>([&] {
    loader_internal::checked_input_nodes(Array::from_vector(std::vector<int64_t>{1, 9}), 4);
  });
  EXPECT_NE(message.find("input node 9 at position 1 out of range"), std::string::npos) << message;
}

}  // namespace
}  // namespace volley
