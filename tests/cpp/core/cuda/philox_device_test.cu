// Philox on the device must produce exactly the host's numbers (sampling depends on it).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <vector>

#include "volley/core/philox.h"

namespace volley {
namespace {

__global__ void draw_kernel(uint64_t seed, uint32_t* out, int per_thread) {
  const int thread = blockIdx.x * blockDim.x + threadIdx.x;
  PhiloxStream stream(seed, {{0, static_cast<uint32_t>(thread), 0, 0}});
  for (int i = 0; i < per_thread; ++i) out[thread * per_thread + i] = stream.bounded(1000 + i);
}

bool have_device() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

TEST(PhiloxDevice, MatchesHost) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device on this machine";
  constexpr int kThreads = 256, kPerThread = 8;
  uint32_t* device_out = nullptr;
  ASSERT_EQ(cudaMalloc(&device_out, kThreads * kPerThread * sizeof(uint32_t)), cudaSuccess);
  draw_kernel<<<2, kThreads / 2>>>(99, device_out, kPerThread);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  std::vector<uint32_t> got(kThreads * kPerThread);
  ASSERT_EQ(
      cudaMemcpy(got.data(), device_out, got.size() * sizeof(uint32_t), cudaMemcpyDeviceToHost),
      cudaSuccess);
  cudaFree(device_out);
  for (int thread = 0; thread < kThreads; ++thread) {
    PhiloxStream stream(99, {{0, static_cast<uint32_t>(thread), 0, 0}});
    for (int i = 0; i < kPerThread; ++i) {
      ASSERT_EQ(got[thread * kPerThread + i], stream.bounded(1000 + i)) << thread << "," << i;
    }
  }
}

}  // namespace
}  // namespace volley
