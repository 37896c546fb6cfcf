// DeviceFeatureStore's host side, in any build and without a GPU: argument checks happen
// before any CUDA call (tests/cpp/feature/cuda/ checks the gathers on a GPU).
#include <gtest/gtest.h>

#include "test_util.h"
#include "volley/feature/cuda_gather.h"

namespace volley {
namespace {

TEST(DeviceFeatureStoreHost, ChecksArgumentsBeforeCuda) {
  const Array matrix = Array::zeros(DType::kFloat32, {10, 4});
  EXPECT_NE(message_of<ValueError>([] {
              DeviceFeatureStore::build(Array::zeros(DType::kFloat32, {2, 2, 2}));
            }).find("needs a 1-d or 2-d matrix"),
            std::string::npos);
  EXPECT_NE(message_of<ValueError>([&] {
              DeviceFeatureStore::build(
                  matrix, {.hot_order = Array::from_vector(std::vector<int64_t>{3, 1, 3})});
            }).find("hot_order lists row 3 twice (second time at position 2)"),
            std::string::npos);
  EXPECT_NE(message_of<IndexError>([&] {
              DeviceFeatureStore::build(
                  matrix, {.hot_order = Array::from_vector(std::vector<int64_t>{0, 10})});
            }).find("hot_order id 10 at position 1 out of range"),
            std::string::npos);
  EXPECT_NE(message_of<ValueError>([&] {
              DeviceFeatureStore::build(
                  matrix, {.hot_order = Array::from_vector(std::vector<int32_t>{0, 1})});
            }).find("hot_order must be a 1-d int64 array"),
            std::string::npos);
  EXPECT_NE(message_of<ValueError>([&] {
              DeviceFeatureStore::build(matrix, {.device = -3});
            }).find("CUDA device must be >= 0, got -3"),
            std::string::npos);
  const DeviceFeatureStore empty;
  EXPECT_FALSE(empty.defined());
  EXPECT_NE(message_of<ValueError>([&] { empty.gather(nullptr, 3, nullptr); }), "<no exception>");
}

}  // namespace
}  // namespace volley
