// The host executor itself: every item of a launch runs exactly once, in a shuffled order, on
// several threads; launches are ordered; scans and Scratch behave as on the CUDA executor.
// Label gpu-host.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <numeric>
#include <set>
#include <thread>
#include <vector>

#include "volley/core/error.h"
#include "volley/core/internal/host_executor.h"

namespace volley::internal {
namespace {

struct RecordBody {
  static constexpr const char* kName = "record";
  std::atomic<int64_t>* cursor;
  int64_t* order;  // order[k] = the k-th item run
  std::atomic<int>* runs;
  void operator()(int64_t i) const {
    order[cursor->fetch_add(1)] = i;
    runs[i].fetch_add(1);
  }
};

TEST(HostExecutor, RunsEveryItemOnceInAShuffledOrder) {
  HostExecutor executor({.threads = 8, .seed = 3});
  constexpr int64_t n = 5000;
  std::vector<int64_t> first(n), second(n);
  for (auto* order : {&first, &second}) {
    std::atomic<int64_t> cursor{0};
    std::vector<std::atomic<int>> runs(n);
    executor.for_each(n, RecordBody{&cursor, order->data(), runs.data()});
    EXPECT_EQ(cursor.load(), n);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(runs[i].load(), 1) << "item " << i;
  }
  std::vector<int64_t> identity(n);
  std::iota(identity.begin(), identity.end(), int64_t{0});
  EXPECT_NE(first, identity);  // shuffled
  EXPECT_NE(first, second);    // a fresh order per launch
  EXPECT_EQ(executor.launches(), 2);
  executor.for_each(0, RecordBody{nullptr, nullptr, nullptr});  // nothing runs
  EXPECT_EQ(executor.launches(), 2);
}

struct ThreadIdBody {
  static constexpr const char* kName = "threads";
  std::mutex* mutex;
  std::set<std::thread::id>* ids;
  void operator()(int64_t) const {
    std::this_thread::yield();
    std::lock_guard lock(*mutex);
    ids->insert(std::this_thread::get_id());
  }
};

TEST(HostExecutor, UsesSeveralThreads) {
  HostExecutor executor({.threads = 8});
  std::mutex mutex;
  std::set<std::thread::id> ids;
  for (int attempt = 0; attempt < 50 && ids.size() < 2; ++attempt) {
    executor.for_each(20000, ThreadIdBody{&mutex, &ids});
  }
  EXPECT_GE(ids.size(), 2u);
  EXPECT_EQ(ids.count(std::this_thread::get_id()), 0u);  // workers, not the caller
}

TEST(HostExecutor, ScanFillCopyAndMemory) {
  HostExecutor executor;
  const std::vector<int64_t> in = {3, 0, 2, 5};
  std::vector<int64_t> out(4);
  executor.exclusive_scan(in.data(), out.data(), 4);
  EXPECT_EQ(out, (std::vector<int64_t>{0, 3, 3, 5}));
  Buffer device = executor.allocate(Memory::kDevice, 32);
  Buffer pinned = executor.allocate(Memory::kPinned, 32);
  EXPECT_EQ(device.location(), Location::kHost);  // host memory stands in for both
  EXPECT_EQ(pinned.location(), Location::kHost);
  executor.fill(device.data(), 0xff, 32);
  EXPECT_EQ(executor.read(reinterpret_cast<const int64_t*>(device.data())), -1);
  executor.upload(pinned.data(), in.data(), 32);
  executor.copy(device.data(), pinned.data(), 32);
  EXPECT_EQ(executor.read(reinterpret_cast<const int64_t*>(device.data()) + 3), 5);
  EXPECT_THROW(HostExecutor({.threads = 0}), ValueError);
}

TEST(HostExecutor, ScratchGrowsKeepsAndNeverOverwritesAHeldBuffer) {
  HostExecutor executor;
  Scratch<HostExecutor> scratch(executor, Memory::kDevice);
  auto* first = scratch.reserve(100);
  std::memset(first, 7, 100);
  EXPECT_EQ(scratch.reserve(50), first);  // large enough: reused
  EXPECT_EQ(scratch.allocations(), 1);
  auto* grown = scratch.reserve(1000, 100);  // grows, keeping 100 bytes
  EXPECT_EQ(grown[99], std::byte{7});
  EXPECT_EQ(scratch.allocations(), 2);
  const Buffer held = scratch.buffer();  // a caller holds the result
  auto* fresh = scratch.reserve(10);
  EXPECT_NE(fresh, held.data());
  EXPECT_EQ(scratch.allocations(), 3);
}

}  // namespace
}  // namespace volley::internal
