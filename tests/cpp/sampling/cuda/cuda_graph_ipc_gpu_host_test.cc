// A placed graph shared by IPC handle (CudaGraph with CudaGraphOptions::shareable, core/ipc.h),
// on the emulated device: a forked child opens every array by handle, rebuilds the graph with
// CudaGraph::from_arrays and samples exactly the CPU sampler's batch from the parent's memory.
// Label gpu-host.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <optional>
#include <vector>

#include "sampling/expect_subgraph.h"
#include "test_graphs.h"
#include "test_util.h"
#include "volley/core/internal/emulated_device.h"
#include "volley/core/ipc.h"
#include "volley/sampling/cuda_graph.h"
#include "volley/sampling/neighbor_sampler.h"

namespace volley {
namespace {

// `array` opened by its handle as another process would (a new mapping of the same bytes).
Array reopen(const Array& array) {
  const Buffer& buffer = array.buffer();
  Buffer block = open_ipc(ipc_handle(buffer));
  return Array(block.slice(buffer.offset(), array.nbytes()), array.dtype(), array.shape());
}

#if defined(__SANITIZE_THREAD__)
constexpr bool kThreadSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
constexpr bool kThreadSanitizer = true;
#else
constexpr bool kThreadSanitizer = false;
#endif
#else
constexpr bool kThreadSanitizer = false;
#endif

std::optional<Array> reopen(const std::optional<Array>& array) {
  return array ? std::optional(reopen(*array)) : std::nullopt;
}

CudaGraph reopen(const CudaGraph& placed) {
  CudaGraphArrays arrays = placed.arrays();
  arrays.indptr = reopen(arrays.indptr);
  arrays.indices = reopen(arrays.indices);
  arrays.edge_ids = reopen(arrays.edge_ids);
  arrays.weights = reopen(arrays.weights);
  return CudaGraph::from_arrays(std::move(arrays));
}

bool same(const SampledSubgraph& got, const SampledSubgraph& want) {
  const HostSubgraph a = vectors_of(got), b = vectors_of(want);
  return a.nodes == b.nodes && a.rows == b.rows && a.cols == b.cols && a.edge_ids == b.edge_ids &&
         a.nodes_per_hop == b.nodes_per_hop;
}

TEST(CudaGraphIpcGpuHost, ChildOpensThePlacedGraphByHandleAndSamplesTheCpuBatch) {
  internal::ScopedCudaEmulation emulated({.count = 2});
  const Csr graph = skewed_random_graph(400, 5000, 9);
  const NeighborSamplerOptions options{.fanouts = {5, 3}, .seed = 4};
  const std::vector<int64_t> seeds{0, 3, 17, 99, 250, 399};
  const SampledSubgraph expected = sample_neighbors(graph, seeds, options, 2);
  for (auto mode : {CudaSamplingMode::kGpu, CudaSamplingMode::kUva}) {
    const CudaGraph placed =
        CudaGraph::place(graph, {.mode = mode, .device = 1, .shareable = true});
    ASSERT_TRUE(placed.shareable());
    EXPECT_EQ(placed.indptr().buffer().location(), Location::kCuda);
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      int code = 0;
      try {
        const CudaGraph opened = reopen(placed);
        if (opened.indices().raw_data() == placed.indices().raw_data()) code = 2;
        if (opened.mode() != mode || opened.device() != 1) code = 3;
        if (std::memcmp(opened.indices().raw_data(), placed.indices().raw_data(),
                        placed.indices().nbytes()) != 0) {
          code = 6;
        }
        // ThreadSanitizer cannot start threads in the forked child of a threaded process: there
        // the child checks the bytes only (test_cuda_ipc.py samples in fresh processes).
        if (!kThreadSanitizer) {
          NeighborSampler sampler(opened, options);
          if (!same(sampler.sample(seeds, 2), expected)) code = 4;
        }
      } catch (...) {
        code = 5;
      }
      _exit(code);
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << cuda_sampling_mode_name(mode);
  }
}

TEST(CudaGraphIpcGpuHost, ToShareableCopiesOnceAndFromArraysChecksPlacement) {
  internal::ScopedCudaEmulation emulated;
  const Csr graph = skewed_random_graph(100, 800, 2);
  const CudaGraph plain = CudaGraph::place(graph, {.mode = CudaSamplingMode::kUva});
  EXPECT_FALSE(plain.shareable());
  const CudaGraph shared = plain.to_shareable();
  EXPECT_TRUE(shared.shareable());
  EXPECT_NE(shared.indices().raw_data(), plain.indices().raw_data());
  EXPECT_EQ(shared.indices().buffer().location(), Location::kPinnedHost);
  EXPECT_EQ(shared.to_shareable().indices().raw_data(), shared.indices().raw_data());
  const NeighborSamplerOptions options{.fanouts = {4}, .seed = 1};
  const std::vector<int64_t> seeds{1, 2, 3};
  EXPECT_TRUE(same(NeighborSampler(reopen(shared), options).sample(seeds, 0),
                   sample_neighbors(graph, seeds, options, 0)));

  CudaGraphArrays host = shared.arrays();
  host.indptr = graph.indptr();
  EXPECT_EQ(message_of<ValueError>([&] { CudaGraph::from_arrays(host); }),
            "a placed graph's indptr must be int64 [N + 1] in device memory, got int64[101]");
  CudaGraphArrays mixed = shared.arrays();
  mixed.weights = graph.weights();
  EXPECT_NE(message_of<ValueError>([&] { CudaGraph::from_arrays(mixed); }).find("weights"),
            std::string::npos);
  EXPECT_THROW(CudaGraph().to_shareable(), ValueError);
}

}  // namespace
}  // namespace volley
