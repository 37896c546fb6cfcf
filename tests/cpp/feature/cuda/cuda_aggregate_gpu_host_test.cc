// The whole-graph aggregation's GPU body, run by the host executor (no GPU): it equals the CPU
// aggregate() bit for bit for sum, mean and gcn (with and without self-loops), weighted or not,
// int32 and int64 neighbor ids, rows without neighbors and a bipartite x with more rows than the
// graph; and aggregate() on an emulated device runs it and returns a device array. Label
// gpu-host.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "test_util.h"
#include "volley/core/internal/emulated_device.h"
#include "volley/feature/aggregate.h"
#include "volley/feature/internal/cuda_aggregate_kernel.h"

namespace volley {
namespace {

// A random "in" CSR over `rows` targets and `sources` sources (some rows empty), with weights,
// neighbor ids of `index_dtype`.
Csr random_graph(int64_t rows, int64_t sources, int64_t edges, DType index_dtype, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> indptr{0};
  std::vector<int64_t> indices;
  std::vector<float> weights;
  for (int64_t v = 0; v < rows; ++v) {
    const int64_t degree = v % 7 == 3 ? 0 : static_cast<int64_t>(rng() % (2 * edges / rows + 1));
    for (int64_t k = 0; k < degree; ++k) {
      indices.push_back(static_cast<int64_t>(rng() % sources));
      weights.push_back(0.25f + static_cast<float>(rng() % 1000) / 400.0f);
    }
    indptr.push_back(static_cast<int64_t>(indices.size()));
  }
  Array index_array = Array::from_vector(indices);
  if (index_dtype == DType::kInt32) {
    std::vector<int32_t> narrow(indices.begin(), indices.end());
    index_array = Array::from_vector(narrow);
  }
  return Csr::from_arrays(Array::from_vector(indptr), std::move(index_array), std::nullopt,
                          Array::from_vector(weights), Orientation::kIn, /*validate=*/false);
}

Array random_rows(int64_t rows, int64_t dim, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> values(static_cast<size_t>(rows * dim));
  for (float& value : values) value = normal(rng);
  Array out = Array::empty(DType::kFloat32, {rows, dim});
  std::memcpy(out.raw_data(), values.data(), values.size() * sizeof(float));
  return out;
}

void expect_same_bits(const Array& a, const Array& b) {
  ASSERT_EQ(a.shape(), b.shape());
  EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()), 0);
}

TEST(CudaAggregateGpuHost, EqualsTheCpuAggregateBitForBit) {
  for (const DType index_dtype : {DType::kInt64, DType::kInt32}) {
    for (const int64_t sources : {int64_t{120}, int64_t{140}}) {
      const Csr graph = random_graph(120, sources, 900, index_dtype, 7 + sources);
      const Array x = random_rows(sources, 13, 11);
      for (const Aggregation op : {Aggregation::kSum, Aggregation::kMean, Aggregation::kGcn}) {
        for (const bool weighted : {false, true}) {
          for (const bool self_loops : {true, false}) {
            const AggregateOptions options{
                .op = op, .weighted = weighted, .self_loops = self_loops};
            const Array expected = aggregate(graph, x, options);
            std::vector<float> weights;
            for (int64_t k = 0; k < graph.num_edges(); ++k) {
              weights.push_back(graph.weights()->data<float>()[k]);
            }
            Array out = Array::empty(DType::kFloat32, {120, 13});
            feature_internal::launch_host_aggregate(
                {.indptr = graph.indptr().data<int64_t>(),
                 .indices = graph.indices().raw_data(),
                 .indices_32bit = index_dtype == DType::kInt32,
                 .weights = weighted ? weights.data() : nullptr,
                 .rows = 120,
                 .sources = sources,
                 .edges = graph.num_edges(),
                 .dim = 13,
                 .op = static_cast<int>(op),
                 .self_loops = op == Aggregation::kGcn && self_loops,
                 .x = x.data<float>(),
                 .out = out.data<float>()},
                {.threads = 3, .seed = static_cast<uint64_t>(sources)});
            SCOPED_TRACE(testing::Message() << "op " << static_cast<int>(op) << " weighted "
                                            << weighted << " self_loops " << self_loops);
            expect_same_bits(out, expected);
          }
        }
      }
    }
  }
}

TEST(CudaAggregateGpuHost, DeviceRowsRunOnTheEmulatedDevice) {
  internal::ScopedCudaEmulation emulated;
  const Csr graph = random_graph(120, 120, 900, DType::kInt64, 3);
  const Array x = random_rows(120, 16, 5);
  Array device_x(Buffer::allocate_device(x.nbytes(), 0), DType::kFloat32, {120, 16});
  std::memcpy(device_x.raw_data(), x.raw_data(), x.nbytes());  // emulated: host memory
  const Array out = aggregate(graph, device_x, {.op = Aggregation::kGcn, .weighted = true});
  EXPECT_EQ(out.buffer().location(), Location::kCuda);
  expect_same_bits(out, aggregate(graph, x, {.op = Aggregation::kGcn, .weighted = true}));
  const Array narrow = random_rows(50, 16, 6);
  Array device_narrow(Buffer::allocate_device(narrow.nbytes(), 0), DType::kFloat32, {50, 16});
  EXPECT_THROW(aggregate(graph, device_narrow, {.op = Aggregation::kSum}), IndexError);
}

}  // namespace
}  // namespace volley
