// Device and pinned blocks shared between processes by handle (core/ipc.h), on the emulated
// devices: a child process opens the parent's handle and both see the same bytes (a write in one
// is read by the other: no copy); stale handles, missing ordinals and kind mismatches fail
// naming the handle. Label gpu-host.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>

#include "test_util.h"
#include "volley/core/array.h"
#include "volley/core/buffer.h"
#include "volley/core/error.h"
#include "volley/core/internal/emulated_device.h"
#include "volley/core/ipc.h"

namespace volley {
namespace {

using internal::ScopedCudaEmulation;

// A forked child with a pipe each way; `body` runs in the child and its return is the exit code.
struct Child {
  pid_t pid = -1;
  int from_child = -1;
  int to_child = -1;
  static Child start(const std::function<int(int to_parent, int from_parent)>& body) {
    int up[2];
    int down[2];
    EXPECT_EQ(pipe(up), 0);
    EXPECT_EQ(pipe(down), 0);
    Child child;
    child.pid = fork();
    if (child.pid == 0) {
      close(up[0]);
      close(down[1]);
      int code = 9;
      try {
        code = body(up[1], down[0]);
      } catch (...) {
        code = 8;
      }
      _exit(code);
    }
    close(up[1]);
    close(down[0]);
    child.from_child = up[0];
    child.to_child = down[1];
    return child;
  }
  // The child's exit code (-1 when it did not exit normally).
  int wait() {
    close(from_child);
    close(to_child);
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
    return WEXITSTATUS(status);
  }
};

TEST(IpcHandle, TextRoundTripsAndMalformedTextIsNamed) {
  IpcHandle memfd;
  memfd.location = Location::kCuda;
  memfd.device = 3;
  memfd.memfd = "memfd:42:7:" + std::to_string(4096 + sysconf(_SC_PAGESIZE)) + ":beef";
  const IpcHandle parsed = IpcHandle::parse(memfd.to_string());
  EXPECT_EQ(parsed.kind, IpcHandle::Kind::kMemfd);
  EXPECT_EQ(parsed.device, 3);
  EXPECT_EQ(parsed.pid, 42);
  EXPECT_EQ(parsed.bytes, 4096u);
  EXPECT_EQ(parsed.to_string(), memfd.to_string());

  IpcHandle cuda;
  cuda.kind = IpcHandle::Kind::kCudaIpc;
  cuda.device = 1;
  cuda.pid = 77;
  cuda.bytes = 123;
  for (size_t i = 0; i < cuda.cuda_ipc.size(); ++i) cuda.cuda_ipc[i] = static_cast<uint8_t>(i * 5);
  const IpcHandle back = IpcHandle::parse(cuda.to_string());
  EXPECT_EQ(back.kind, IpcHandle::Kind::kCudaIpc);
  EXPECT_EQ(back.cuda_ipc, cuda.cuda_ipc);
  EXPECT_EQ(back.bytes, 123u);
  EXPECT_EQ(back.to_string(), cuda.to_string());

  for (const std::string bad : {"", "ipc:", "ipc:cuda:-1:memfd:1:2:9000:ab", "memfd:1:2:3:4",
                                "ipc:host:0:memfd:1:2:9000:ab", "ipc:cuda:0:cuda-ipc:1:2:00"}) {
    try {
      IpcHandle::parse(bad);
      ADD_FAILURE() << "expected ValueError for '" << bad << "'";
    } catch (const ValueError& error) {
      EXPECT_NE(std::string(error.what()).find("'" + bad + "'"), std::string::npos) << error.what();
    }
  }
}

// The parent fills a block of emulated cuda:1; the child opens the handle, checks the bytes,
// writes; the parent sees the write, writes back; the child sees that. One copy of the bytes.
void check_hand_off(Location location, int device) {
  constexpr int64_t kCount = 1 << 15;
  Buffer block = allocate_shareable(kCount * sizeof(int64_t), location, device);
  ASSERT_TRUE(ipc_shareable(block));
  EXPECT_EQ(block.location(), location);
  EXPECT_EQ(block.device(), location == Location::kCuda ? device : -1);
  auto* values = reinterpret_cast<int64_t*>(block.data());
  for (int64_t i = 0; i < kCount; ++i) values[i] = i * 7;
  const std::string text = ipc_handle(block).to_string();
  ASSERT_EQ(text, block.shared_name());

  Child child = Child::start([&](int to_parent, int from_parent) {
    const Buffer opened = open_ipc(IpcHandle::parse(text));
    if (opened.data() == block.data()) return 2;  // must be a new mapping, not the inherited one
    if (opened.location() != location || opened.device() != block.device()) return 3;
    if (opened.size() != block.size() || !ipc_shareable(opened)) return 4;
    auto* seen = reinterpret_cast<int64_t*>(opened.data());
    for (int64_t i = 0; i < kCount; ++i) {
      if (seen[i] != i * 7) return 5;
    }
    seen[5] = -1;
    write_line(to_parent, "written");
    if (read_line(from_parent) != "your turn") return 6;
    return seen[6] == -2 ? 0 : 7;
  });
  EXPECT_EQ(read_line(child.from_child), "written");
  EXPECT_EQ(values[5], -1) << "the child's write must reach the parent's block";
  values[6] = -2;
  write_line(child.to_child, "your turn");
  EXPECT_EQ(child.wait(), 0);
}

TEST(Ipc, EmulatedDeviceBlockIsOpenedByAnotherProcessWithoutACopy) {
  ScopedCudaEmulation emulation({.count = 2});
  check_hand_off(Location::kCuda, 1);
}

TEST(Ipc, PinnedBlockIsOpenedByAnotherProcessWithoutACopy) {
  ScopedCudaEmulation emulation;
  check_hand_off(Location::kPinnedHost, -1);
}

TEST(Ipc, OpenedBlockCanBeHandedOnInTheSameProcess) {
  ScopedCudaEmulation emulation;
  Buffer block = allocate_shareable(256, Location::kCuda, 0);
  Buffer opened = open_ipc(ipc_handle(block));
  EXPECT_NE(opened.data(), block.data());
  EXPECT_NE(opened.shared_name(), block.shared_name()) << "names this process's own descriptor";
  block.data()[9] = std::byte{42};
  Buffer again = open_ipc(ipc_handle(opened.slice(8, 16)));
  EXPECT_EQ(again.data()[9], std::byte{42});
  EXPECT_EQ(opened.slice(8, 16).offset(), 8u);
}

TEST(Ipc, StaleHandleFailsNamingIt) {
  ScopedCudaEmulation emulation;
  Child child = Child::start([](int to_parent, int) {
    const Buffer block = allocate_shareable(4096, Location::kCuda, 0);
    write_line(to_parent, block.shared_name());
    return 0;
  });
  const std::string text = read_line(child.from_child);
  ASSERT_EQ(child.wait(), 0);
  ASSERT_FALSE(text.empty());
  try {
    open_ipc(IpcHandle::parse(text));
    FAIL() << "expected IoError";
  } catch (const IoError& error) {
    EXPECT_NE(std::string(error.what()).find("'" + text + "'"), std::string::npos) << error.what();
  }
}

TEST(Ipc, MissingDeviceOrOtherKindFailsNamingTheHandle) {
  std::string text;
  Buffer block;
  {
    ScopedCudaEmulation two({.count = 2});
    block = allocate_shareable(64, Location::kCuda, 1);
    text = block.shared_name();
  }
  const auto expect_runtime_error = [&](const std::string& detail) {
    try {
      open_ipc(IpcHandle::parse(text));
      ADD_FAILURE() << "expected RuntimeError";
    } catch (const RuntimeError& error) {
      const std::string message = error.what();
      EXPECT_NE(message.find("'" + text + "'"), std::string::npos) << message;
      EXPECT_NE(message.find(detail), std::string::npos) << message;
    }
  };
  {
    ScopedCudaEmulation one;
    expect_runtime_error("cuda:1");
    EXPECT_THROW(allocate_shareable(64, Location::kCuda, 1), RuntimeError);
  }
  ScopedCudaEmulation off(false);
  expect_runtime_error("does not emulate");
}

TEST(Ipc, ShareableArrayCopiesOnceAndKeepsShareableArrays) {
  ScopedCudaEmulation emulation;
  Array device(Buffer::allocate_device(4 * sizeof(int32_t), 0), DType::kInt32, {4});
  const int32_t numbers[4] = {4, 3, 2, 1};
  std::memcpy(device.raw_data(), numbers, sizeof(numbers));
  EXPECT_FALSE(ipc_shareable(device.buffer()));
  try {
    ipc_handle(device.buffer());
    ADD_FAILURE() << "expected ValueError";
  } catch (const ValueError& error) {
    EXPECT_NE(std::string(error.what()).find("cuda buffer of 16 bytes"), std::string::npos)
        << error.what();
  }
  const Array shared = shareable_array(device);
  EXPECT_NE(shared.raw_data(), device.raw_data());
  EXPECT_EQ(std::memcmp(shared.raw_data(), numbers, sizeof(numbers)), 0);
  EXPECT_EQ(shared.buffer().location(), Location::kCuda);
  EXPECT_TRUE(ipc_shareable(shared.buffer()));
  EXPECT_EQ(shareable_array(shared).raw_data(), shared.raw_data());
  Array host(Buffer::allocate(16), DType::kInt32, {4});
  EXPECT_THROW(shareable_array(host), ValueError);
  EXPECT_THROW(allocate_shareable(16, Location::kHost), ValueError);
}

}  // namespace
}  // namespace volley
