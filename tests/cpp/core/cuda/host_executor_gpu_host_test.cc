// The host executor itself: every item of a launch runs exactly once, in a shuffled order, on
// several threads; launches are ordered; scans and Scratch behave as on the CUDA executor. The
// emulated devices: their count and peer-access matrix, from the environment's syntax or a test,
// and the allocations and peer access they allow. Label gpu-host.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <numeric>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "test_util.h"
#include "volley/core/buffer.h"
#include "volley/core/cuda_device.h"
#include "volley/core/error.h"
#include "volley/core/internal/emulated_device.h"
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

TEST(EmulatedDevices, TheEnvironmentSyntaxGivesTheMatrix) {
  EXPECT_EQ(parse_emulated_devices("", "").count, 1);
  const EmulatedDevices pairs = parse_emulated_devices("3", "110,110,001");
  EXPECT_EQ(pairs.count, 3);
  EXPECT_EQ(pairs.peer_access, (std::vector<uint8_t>{1, 1, 0, 1, 1, 0, 0, 0, 1}));
  EXPECT_TRUE(parse_emulated_devices("4", "all").peer_access.empty());
  EXPECT_EQ(parse_emulated_devices("2", "none").peer_access, (std::vector<uint8_t>(4, 0)));
  for (const auto& [count, peers, expected] :
       std::vector<std::tuple<const char*, const char*, const char*>>{
           {"0", "", "must be a count in [1, 64], got \"0\""},
           {"x2", "", "got \"x2\""},
           {"65", "", "got \"65\""},
           {"2", "11,1", "for 2 device(s) must be"},
           {"2", "111,11", "got \"111,11\""},
           {"2", "12,11", "got \"12,11\""},
           {"2", "11,11,11", "got \"11,11,11\""}}) {
    const char* const devices = count;  // (clang 14 cannot capture a structured binding)
    const char* const matrix = peers;
    const std::string message =
        message_of<ValueError>([&] { parse_emulated_devices(devices, matrix); });
    EXPECT_NE(message.find(expected), std::string::npos)
        << count << " " << peers << ": " << message;
  }
  EXPECT_NE(message_of<ValueError>([] {
              set_cuda_emulated(true, {.count = 2, .peer_access = {1, 1, 1}});
            }).find("needs 4 entries, got 3"),
            std::string::npos);
}

TEST(EmulatedDevices, CountsAllocationsAndPeerAccessFollowTheTopology) {
  {
    ScopedCudaEmulation three({.count = 3, .peer_access = {1, 0, 0, 0, 1, 1, 0, 1, 1}});
    EXPECT_EQ(cuda_device_count(), 3);
    const Buffer on_two = Buffer::allocate_device(64, 2);
    EXPECT_EQ(on_two.device(), 2);
    EXPECT_EQ(on_two.location(), Location::kCuda);
    EXPECT_TRUE(cuda_can_access_peer(1, 2));
    EXPECT_FALSE(cuda_can_access_peer(0, 1));
    EXPECT_THROW(cuda_can_access_peer(0, 3), RuntimeError);
    EXPECT_THROW(cuda_enable_peer_access(2, 0), RuntimeError);
    EXPECT_NO_THROW(cuda_enable_peer_access(2, 1));
    {
      ScopedCudaEmulation one;  // nested: one device, then the three again
      EXPECT_EQ(cuda_device_count(), 1);
      EXPECT_THROW(Buffer::allocate_device(8, 1), RuntimeError);
    }
    EXPECT_EQ(cuda_device_count(), 3);
    EXPECT_FALSE(cuda_can_access_peer(0, 2));
  }
  ScopedCudaEmulation off(false);
  EXPECT_EQ(emulated_devices().count, 1);
  EXPECT_FALSE(emulated_can_access_peer(0, 0));
}

}  // namespace
}  // namespace volley::internal
