#include "volley/core/parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <numeric>
#include <vector>

#include "volley/core/error.h"
#include "volley/core/progress.h"

namespace volley {
namespace {

TEST(ThreadPool, CoversEveryIndexOnce) {
  for (int threads : {1, 2, 4}) {
    ThreadPool pool(threads);
    std::vector<std::atomic<int>> hits(100'003);
    pool.parallel_for(0, 100'003, 1000, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) hits[static_cast<size_t>(i)]++;
    });
    for (auto& hit : hits) ASSERT_EQ(hit.load(), 1);
  }
}

TEST(ThreadPool, RethrowsFirstErrorInCaller) {
  ThreadPool pool(3);
  EXPECT_THROW(pool.parallel_for(0, 1000, 10,
                                 [](int64_t begin, int64_t) {
                                   if (begin == 500) throw ValueError("chunk 500 failed");
                                 }),
               ValueError);
  // The pool is still usable afterwards.
  std::atomic<int64_t> sum{0};
  pool.parallel_for(0, 100, 7, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) sum += i;
  });
  EXPECT_EQ(sum.load(), 4950);
}

TEST(ThreadPool, NestedCallsRunSerially) {
  ThreadPool pool(2);
  std::atomic<int64_t> count{0};
  pool.parallel_for(0, 8, 1, [&](int64_t, int64_t) {
    parallel_for(0, 10, 1, [&](int64_t b, int64_t e) { count += e - b; });
  });
  EXPECT_EQ(count.load(), 80);
}

TEST(ThreadPool, RejectsZeroThreads) {
  EXPECT_THROW(ThreadPool(0), ValueError);
  EXPECT_THROW(set_num_threads(0), ValueError);
}

TEST(ThreadPool, DefaultPoolResizes) {
  set_num_threads(3);
  EXPECT_EQ(get_num_threads(), 3);
  set_num_threads(1);
  EXPECT_EQ(get_num_threads(), 1);
  set_num_threads(2);
}

TEST(ProgressBar, SilentWhenNotATerminal) {
  // Test output is captured (not a TTY), so the bar must not draw.
  ProgressBar bar("work", 10);
  EXPECT_FALSE(bar.visible());
  bar.advance(10);
  bar.finish();
}

}  // namespace
}  // namespace volley
