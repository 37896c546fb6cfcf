// The loader's lookahead window: every batch sampled exactly once, by whichever worker, handed to
// its own worker; a sampling error surfaces at its batch only; the sampler output kept is bounded.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "volley/loader/internal/lookahead_window.h"

namespace volley::loader_internal {
namespace {

// A "sample" of batch b: nodes {b, b + 1000}; batch `bad` throws.
LookaheadWindow::SampleBatch fake_sampler(std::vector<std::atomic<int>>& calls, int64_t bad) {
  return [&calls, bad](int64_t b, SampledSubgraph& out) {
    calls[static_cast<size_t>(b)].fetch_add(1);
    if (b == bad) throw std::runtime_error("sampling batch " + std::to_string(b) + " failed");
    out.nodes = Array::from_vector(std::vector<int64_t>{b, b + 1000});
    out.num_seeds = 1;
  };
}

TEST(LookaheadWindow, SamplesEveryBatchOnceForItsOwnWorker) {
  constexpr int64_t kBatches = 60;
  for (const int64_t depth : {0, 1, 4, 100}) {
    for (const int workers : {1, 2, 4}) {
      std::vector<std::atomic<int>> calls(kBatches);
      const FeatureStore store(Array::from_vector(std::vector<float>(2000, 1.0f)));
      LookaheadWindow window({batch_nodes_target(store)}, 0, kBatches, depth,
                             fake_sampler(calls, -1));
      std::atomic<int64_t> next{0};
      std::atomic<int64_t> most_kept{0};
      std::vector<std::thread> threads;
      for (int w = 0; w < workers; ++w) {
        threads.emplace_back([&] {
          SampledSubgraph out;
          for (int64_t b = next++; b < kBatches; b = next++) {
            window.take(b, out);
            EXPECT_EQ(out.nodes.to_vector<int64_t>(), (std::vector<int64_t>{b, b + 1000}));
            int64_t kept = window.kept();
            int64_t seen = most_kept.load();
            while (kept > seen && !most_kept.compare_exchange_weak(seen, kept)) {
            }
          }
        });
      }
      for (auto& thread : threads) thread.join();
      for (int64_t b = 0; b < kBatches; ++b)
        EXPECT_EQ(calls[static_cast<size_t>(b)].load(), 1) << "batch " << b << " depth " << depth;
      // One worker keeps the depth batches after the one it builds (several: also those claimed
      // ahead by the others; the loader's prefetch bounds how far they run ahead).
      if (workers == 1) EXPECT_LE(most_kept.load(), depth);
      EXPECT_EQ(window.kept(), 0);
    }
  }
}

TEST(LookaheadWindow, ASamplingErrorSurfacesAtItsBatchOnly) {
  constexpr int64_t kBatches = 10;
  std::vector<std::atomic<int>> calls(kBatches);
  const FeatureStore store(Array::from_vector(std::vector<float>(2000, 1.0f)));
  LookaheadWindow window({batch_nodes_target(store)}, 0, kBatches, 3, fake_sampler(calls, 5));
  SampledSubgraph out;
  for (int64_t b = 0; b < kBatches; ++b) {
    if (b == 5) {
      try {
        window.take(b, out);
        FAIL() << "no error";
      } catch (const std::runtime_error& e) {
        EXPECT_EQ(std::string(e.what()), "sampling batch 5 failed");
      }
      continue;
    }
    window.take(b, out);  // batches 0-4 were sampled while 5 failed ahead of them: no error
    EXPECT_EQ(out.nodes.to_vector<int64_t>()[0], b);
  }
}

}  // namespace
}  // namespace volley::loader_internal
