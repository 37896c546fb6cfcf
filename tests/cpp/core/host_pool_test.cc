#include "volley/core/host_pool.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "volley/core/array.h"
#include "volley/core/buffer.h"
#include "volley/core/recycler.h"

namespace volley {
namespace {

// The pool is process-wide: each test starts from an empty pool with a known limit and puts
// the default back afterwards.
class HostPoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_limit_ = host_pool_limit();
    trim_host_pool();
    set_host_pool_limit(size_t{256} << 20);
  }
  void TearDown() override {
    trim_host_pool();
    set_host_pool_limit(saved_limit_);
  }

 private:
  size_t saved_limit_ = 0;
};

TEST_F(HostPoolTest, LargeBufferIsReusedAfterItsLastHandleGoes) {
  const size_t bytes = size_t{3} << 20;
  Buffer first = Buffer::allocate(bytes);
  std::byte* address = first.data();
  std::memset(address, 0x5a, bytes);
  Buffer view = first.slice(100, 10);
  first = Buffer();
  EXPECT_EQ(host_pool_stats().retained_blocks, 0u) << "a view still holds the block";
  view = Buffer();
  const HostPoolStats held = host_pool_stats();
  EXPECT_EQ(held.retained_blocks, 1u);
  EXPECT_EQ(held.retained_bytes, host_pool_block_bytes(bytes));

  // A request of the same size class takes the same block back, pages and contents as left.
  Buffer second = Buffer::allocate(bytes - 1000);
  EXPECT_EQ(second.data(), address);
  EXPECT_EQ(second.data()[12345], std::byte{0x5a});
  const HostPoolStats after = host_pool_stats();
  EXPECT_EQ(after.reused, held.reused + 1);
  EXPECT_EQ(after.mapped, held.mapped);
  EXPECT_EQ(after.retained_blocks, 0u);
}

TEST_F(HostPoolTest, ZerosClearsARecycledBlock) {
  const size_t bytes = size_t{1} << 20;
  {
    Buffer dirty = Buffer::allocate(bytes);
    std::memset(dirty.data(), 0xff, bytes);
  }
  Buffer zeros = Buffer::zeros(bytes);
  for (size_t i = 0; i < bytes; i += 4093) ASSERT_EQ(zeros.data()[i], std::byte{0}) << i;
}

TEST_F(HostPoolTest, BlocksArePageAlignedSizeClasses) {
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  for (size_t bytes : {kHostPoolMinBytes, kHostPoolMinBytes + 1, size_t{5} << 20,
                       (size_t{60} << 20) + 12345, size_t{100'000'000}}) {
    const size_t block = host_pool_block_bytes(bytes);
    EXPECT_GE(block, bytes);
    EXPECT_LE(block, bytes + bytes / 4) << bytes;
    EXPECT_EQ(block % page, 0u) << bytes;
    Buffer buffer = Buffer::allocate(bytes);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer.data()) % page, 0u) << bytes;
    buffer.data()[bytes - 1] = std::byte{1};  // the whole request is usable
  }
  // Small buffers stay on the heap (64-byte aligned), outside the pool.
  const HostPoolStats before = host_pool_stats();
  Buffer small = Buffer::allocate(kHostPoolMinBytes - 1);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(small.data()) % 64, 0u);
  small = Buffer();
  EXPECT_EQ(host_pool_stats().mapped, before.mapped);
  EXPECT_EQ(host_pool_stats().retained_blocks, before.retained_blocks);
}

TEST_F(HostPoolTest, RetainedBytesStayWithinTheLimitOldestReleasedFirst) {
  set_host_pool_limit(size_t{8} << 20);
  const uint64_t released_before = host_pool_stats().released;
  const size_t bytes = size_t{1} << 20;
  std::vector<Buffer> buffers;
  for (int i = 0; i < 12; ++i) buffers.push_back(Buffer::allocate(bytes));
  std::byte* last = buffers.back().data();
  for (Buffer& buffer : buffers) buffer = Buffer();  // in order: the first ones are the oldest
  const HostPoolStats stats = host_pool_stats();
  EXPECT_LE(stats.retained_bytes, size_t{8} << 20);
  EXPECT_EQ(stats.retained_blocks, 8u);
  EXPECT_EQ(stats.released, released_before + 4);
  // The most recently freed block is among those kept, and handed out first.
  EXPECT_EQ(Buffer::allocate(bytes).data(), last);

  // A block over a quarter of the limit is never kept.
  { Buffer large = Buffer::allocate(size_t{3} << 20); }
  EXPECT_LE(host_pool_stats().retained_bytes, size_t{8} << 20);
  const HostPoolStats before = host_pool_stats();
  { Buffer large = Buffer::allocate(size_t{3} << 20); }
  EXPECT_EQ(host_pool_stats().released, before.released + 1);

  // Limit 0: nothing is retained.
  set_host_pool_limit(0);
  EXPECT_EQ(host_pool_stats().retained_bytes, 0u);
  { Buffer gone = Buffer::allocate(bytes); }
  EXPECT_EQ(host_pool_stats().retained_blocks, 0u);
}

TEST_F(HostPoolTest, ConcurrentAllocationsNeverShareABlock) {
  constexpr int kThreads = 4;
  constexpr int kRounds = 50;
  std::atomic<int> corrupted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &corrupted] {
      for (int round = 0; round < kRounds; ++round) {
        const size_t bytes = (size_t{1} << 18) * static_cast<size_t>(1 + (round + t) % 4);
        Buffer buffer = Buffer::allocate(bytes);
        const auto mark = static_cast<std::byte>(t * 31 + round);
        std::memset(buffer.data(), static_cast<int>(mark), bytes);
        std::this_thread::yield();
        for (size_t i = 0; i < bytes; i += 4096) {
          if (buffer.data()[i] != mark) ++corrupted;
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(corrupted.load(), 0);
  EXPECT_LE(host_pool_stats().retained_bytes, size_t{256} << 20);
  EXPECT_GT(host_pool_stats().reused, 0u);
}

TEST_F(HostPoolTest, ArraysGoThroughThePool) {
  const HostPoolStats before = host_pool_stats();
  { Array array = Array::empty(DType::kFloat32, {1000, 100}); }
  EXPECT_EQ(host_pool_stats().retained_blocks, before.retained_blocks + 1);
}

TEST(Recycler, ReturnsObjectsWithCapacityAndBoundsTheStock) {
  Recycler<std::vector<int>> stock({.max_idle = 2, .keep = [](std::vector<int>& list) {
                                      list.clear();
                                      return list.capacity() <= 1000;
                                    }});
  const int* data = nullptr;
  {
    auto list = stock.acquire();
    list->resize(500);
    data = list->data();
    auto copy = list;  // the object returns with its last owner only
    list.reset();
    EXPECT_EQ(stock.idle(), 0u);
  }
  EXPECT_EQ(stock.idle(), 1u);
  auto again = stock.acquire();
  EXPECT_TRUE(again->empty());
  EXPECT_EQ(again->data(), data);  // capacity kept
  again->resize(5000);             // grown past what `keep` accepts: deleted on return
  again.reset();
  EXPECT_EQ(stock.idle(), 0u);
  {
    std::vector<std::shared_ptr<std::vector<int>>> many;
    for (int i = 0; i < 5; ++i) many.push_back(stock.acquire());
  }
  EXPECT_EQ(stock.idle(), 2u);  // max_idle
}

TEST(Recycler, ObjectsOutliveTheRecycler) {
  std::shared_ptr<std::vector<int>> kept;
  {
    Recycler<std::vector<int>> stock({.max_idle = 1});
    kept = stock.acquire();
    kept->push_back(7);
  }
  EXPECT_EQ(kept->at(0), 7);
  kept.reset();  // the stock is gone: deleted, no crash
}

}  // namespace
}  // namespace volley
