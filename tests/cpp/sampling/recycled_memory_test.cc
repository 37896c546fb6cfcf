// Calls without a scratch borrow one from a process-wide stock, and sample_neighbors can write into
// a recycled subgraph: neither may change a result, whatever the scratch or subgraph held before.
#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "expect_subgraph.h"
#include "volley/sampling/neighbor_sampler.h"

namespace volley {
namespace {

Csr uniform_graph(int64_t n, int64_t m, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> src(static_cast<size_t>(m)), dst(static_cast<size_t>(m));
  for (size_t i = 0; i < src.size(); ++i) {
    src[i] = static_cast<int64_t>(rng() % static_cast<uint64_t>(n));
    dst[i] = static_cast<int64_t>(rng() % static_cast<uint64_t>(n));
  }
  return build_csr(Array::from_vector(src), Array::from_vector(dst), std::nullopt,
                   {.num_nodes = n});
}

std::vector<int64_t> seeds_of(int64_t n, int64_t count, uint64_t seed) {
  std::vector<int64_t> seeds;
  for (int64_t i = 0; i < count; ++i) seeds.push_back((i * 7919 + static_cast<int64_t>(seed)) % n);
  return seeds;
}

TEST(RecycledMemory, BorrowedScratchAndRecycledOutputsGiveTheSameResults) {
  // Two graphs of different sizes, alternated: a borrowed scratch sized for one serves the other.
  const Csr large = uniform_graph(3000, 30000, 1);
  const Csr small = uniform_graph(700, 9000, 2);
  const NeighborSamplerOptions options{.fanouts = {6, 4, -1}, .seed = 9};
  HostSubgraph reused;  // one subgraph written into again and again
  for (uint64_t batch = 0; batch < 12; ++batch) {
    const Csr& graph = batch % 3 == 2 ? small : large;
    const auto seeds = seeds_of(graph.num_nodes(), 40 + static_cast<int64_t>(batch) * 10, batch);
    SamplerScratch fresh;
    const SampledSubgraph want = sample_neighbors(graph, seeds, options, batch, &fresh);
    sample_neighbors(graph, seeds, options, batch, reused);  // borrowed scratch, recycled out
    expect_same_subgraph(HostSubgraph::view(std::make_shared<HostSubgraph>(reused)), want,
                         "batch " + std::to_string(batch));
  }
}

TEST(RecycledMemory, ConcurrentCallsWithoutScratchAgree) {
  const Csr graph = uniform_graph(2000, 24000, 3);
  const NeighborSamplerOptions options{.fanouts = {5, 5}, .seed = 4};
  std::vector<HostSubgraph> want(16);
  for (uint64_t b = 0; b < want.size(); ++b) {
    SamplerScratch fresh;
    want[b] = vectors_of(sample_neighbors(graph, seeds_of(2000, 64, b), options, b, &fresh));
  }
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      HostSubgraph out;
      for (int round = 0; round < 8; ++round) {
        for (uint64_t b = static_cast<uint64_t>(t); b < want.size(); b += 4) {
          sample_neighbors(graph, seeds_of(2000, 64, b), options, b, out);
          mismatches[static_cast<size_t>(t)] +=
              out.nodes != want[b].nodes || out.cols != want[b].cols || out.rows != want[b].rows;
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(mismatches[static_cast<size_t>(t)], 0) << "thread " << t;
}

}  // namespace
}  // namespace volley
