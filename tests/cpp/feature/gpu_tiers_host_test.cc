// FeatureStore's GPU tiers, host side, in any build and without a GPU: argument checks happen
// before any CUDA call (tests/cpp/feature/cuda/ checks the gathers on a GPU).
#include <gtest/gtest.h>

#include "test_util.h"
#include "volley/feature/feature_store.h"

namespace volley {
namespace {

FeatureStoreOptions on_device(std::optional<Array> hot_order = std::nullopt, int device = 0) {
  return {.tiers = {{.location = Location::kCuda, .device = device}},
          .hot_order = std::move(hot_order)};
}

TEST(GpuTiersHost, ChecksArgumentsBeforeCuda) {
  const Array matrix = Array::zeros(DType::kFloat32, {10, 4});
  EXPECT_NE(message_of<ValueError>([] {
              FeatureStore::build(Array::zeros(DType::kFloat32, {2, 2, 2}), on_device());
            }).find("an [N, D] matrix or an [N] vector"),
            std::string::npos);
  EXPECT_NE(
      message_of<ValueError>([&] {
        FeatureStore::build(matrix, on_device(Array::from_vector(std::vector<int64_t>{3, 1, 3})));
      }).find("hot_order lists row 3 twice (second time at position 2)"),
      std::string::npos);
  EXPECT_NE(
      message_of<IndexError>([&] {
        FeatureStore::build(matrix, on_device(Array::from_vector(std::vector<int64_t>{0, 10})));
      }).find("hot_order id 10 at position 1 out of range"),
      std::string::npos);
  EXPECT_NE(
      message_of<ValueError>([&] {
        FeatureStore::build(matrix, on_device(Array::from_vector(std::vector<int32_t>{0, 1})));
      }).find("hot_order must be a 1-d int64 array"),
      std::string::npos);
  EXPECT_NE(message_of<ValueError>([&] {
              FeatureStore::build(matrix, on_device(std::nullopt, -3));
            }).find("CUDA device must be >= 0, got -3"),
            std::string::npos);
  EXPECT_NE(message_of<ValueError>([&] {
              FeatureStore::build(Array::zeros(DType::kFloat32, {10, 0}), on_device());
            }).find("rows of at least one element"),
            std::string::npos);
}

TEST(GpuTiersHost, HostAndGpuTiersDoNotMix) {
  const Array matrix = Array::zeros(DType::kFloat32, {10, 4});
  const std::vector<std::vector<Location>> bad = {
      {Location::kHost, Location::kCuda},
      {Location::kPinnedHost, Location::kCuda},
      {Location::kCuda, Location::kSharedMemory},
      {Location::kCuda, Location::kPinnedHost, Location::kPinnedHost}};
  for (const auto& locations : bad) {
    FeatureStoreOptions options;
    for (Location where : locations) options.tiers.push_back({.location = where});
    const std::string message =
        message_of<ValueError>([&] { FeatureStore::build(matrix, options); });
    EXPECT_NE(message.find("GPU tiers are [cuda], [cuda, pinned_host] or [pinned_host]"),
              std::string::npos)
        << message;
  }
  FeatureStoreOptions two_devices;
  two_devices.tiers = {{.location = Location::kCuda, .device = 0},
                       {.location = Location::kPinnedHost, .device = 1}};
  EXPECT_NE(message_of<ValueError>([&] {
              FeatureStore::build(matrix, two_devices);
            }).find("use one device"),
            std::string::npos);
}

// A host store stays a host store: not on a device, and its Array gather refuses device ids.
TEST(GpuTiersHost, HostStoresReportNoDevice) {
  const FeatureStore store(Array::zeros(DType::kFloat32, {10, 4}));
  EXPECT_FALSE(store.on_cuda());
  EXPECT_EQ(store.device(), -1);
  const FeatureStore empty;
  EXPECT_FALSE(empty.on_cuda());
  const Array ids = Array::from_vector(std::vector<int64_t>{1, 2});
  const Array out = Array::empty(DType::kFloat32, {2, 4});
  EXPECT_NE(message_of<ValueError>([&] {
              store.gather(ids, Array::empty(DType::kFloat32, {3, 4}));
            }).find("out must be a writable array of 2 rows × 4 elements"),
            std::string::npos);
  EXPECT_NE(message_of<ValueError>([&] {
              store.gather(Array::from_vector(std::vector<int32_t>{1}), out);
            }).find("ids must be a 1-d int64 array"),
            std::string::npos);
}

// The Array entry on a host store is the span entry: same rows, out's dtype converts.
TEST(GpuTiersHost, ArrayGatherOnAHostStoreIsTheCpuGather) {
  std::vector<float> values(40);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) * 0.5f;
  Array matrix(Array::from_vector(values).buffer(), DType::kFloat32, {10, 4});
  const FeatureStore store(matrix);
  const Array ids = Array::from_vector(std::vector<int64_t>{7, 0, 7, 3});
  const Array want = store.gather(ids.span<int64_t>());
  const Array got = Array::empty(DType::kFloat32, {4, 4});
  store.gather(ids, got);
  EXPECT_EQ(got.to_vector<float>(), want.to_vector<float>());
  const Array half = Array::empty(DType::kFloat16, {4, 4});
  store.gather(ids, half);
  EXPECT_EQ(half.cast(DType::kFloat32).to_vector<float>(), want.to_vector<float>());
  EXPECT_NE(message_of<IndexError>([&] {
              store.gather(Array::from_vector(std::vector<int64_t>{1, 10}),
                           Array::empty(DType::kFloat32, {2, 4}));
            }).find("row id 10 at position 1 out of range"),
            std::string::npos);
}

}  // namespace
}  // namespace volley
