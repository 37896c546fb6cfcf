#include "volley/core/buffer.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "volley/core/array.h"
#include "volley/core/error.h"

namespace volley {
namespace {

bool segment_exists(const std::string& name) { return std::filesystem::exists("/dev/shm" + name); }

TEST(Buffer, HostAllocationIsAlignedAndWritable) {
  Buffer buffer = Buffer::allocate(1000);
  ASSERT_NE(buffer.data(), nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer.data()) % 64, 0u);
  EXPECT_EQ(buffer.size(), 1000u);
  EXPECT_EQ(buffer.location(), Location::kHost);
  EXPECT_TRUE(buffer.writable());
  Buffer zeros = Buffer::zeros(100);
  for (size_t i = 0; i < 100; ++i) EXPECT_EQ(zeros.data()[i], std::byte{0});
}

TEST(Buffer, SliceSharesBytesAndChecksRange) {
  Buffer buffer = Buffer::zeros(64);
  Buffer view = buffer.slice(8, 16);
  view.data()[0] = std::byte{7};
  EXPECT_EQ(buffer.data()[8], std::byte{7});
  EXPECT_THROW(buffer.slice(60, 8), IndexError);
}

TEST(Buffer, SharedSegmentAttachedInSameProcessSeesSameBytes) {
  std::string name;
  {
    Buffer owner = Buffer::create_shared(4096);
    name = owner.shared_name();
    ASSERT_EQ(name.rfind("/volley-", 0), 0u);
    EXPECT_TRUE(segment_exists(name));
    std::memcpy(owner.data(), "hello", 6);
    Buffer attached = Buffer::attach_shared(name);
    EXPECT_EQ(attached.size(), 4096u);
    EXPECT_STREQ(reinterpret_cast<const char*>(attached.data()), "hello");
    owner = Buffer();  // the attached handle keeps the segment alive
    EXPECT_TRUE(segment_exists(name));
  }
  EXPECT_FALSE(segment_exists(name)) << "last owner must unlink the segment";
  EXPECT_THROW(Buffer::attach_shared(name), IoError);
}

TEST(Buffer, SharedSegmentAttachedFromAnotherProcess) {
  Buffer owner = Buffer::create_shared(1 << 20);
  auto* values = reinterpret_cast<int64_t*>(owner.data());
  for (int64_t i = 0; i < (1 << 17); ++i) values[i] = i * 3;
  const std::string name = owner.shared_name();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Child: attach by name, check, write back a marker. Exit code says what happened.
    int code = 0;
    try {
      Buffer attached = Buffer::attach_shared(name);
      auto* seen = reinterpret_cast<int64_t*>(attached.data());
      for (int64_t i = 0; i < (1 << 17); ++i) {
        if (seen[i] != i * 3) code = 2;
      }
      seen[0] = -1;
    } catch (...) {
      code = 3;
    }
    _exit(code);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(values[0], -1);
  EXPECT_TRUE(segment_exists(name)) << "child letting go must not unlink while the parent owns it";
}

TEST(Buffer, SharedNameIsValidated) {
  EXPECT_THROW(Buffer::create_shared(16, "no-slash"), ValueError);
  EXPECT_THROW(Buffer::create_shared(16, "/a/b"), ValueError);
  Buffer first = Buffer::create_shared(16);
  EXPECT_THROW(Buffer::create_shared(16, first.shared_name()), IoError);  // exists already
}

TEST(Buffer, AttachRejectsForeignSegment) {
  const std::string name = "/volley-test-foreign-" + std::to_string(getpid());
  const int fd = shm_open(name.c_str(), O_CREAT | O_RDWR, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 100), 0);
  close(fd);
  try {
    Buffer::attach_shared(name);
    FAIL() << "expected IoError";
  } catch (const IoError& error) {
    EXPECT_NE(std::string(error.what()).find("not a Volley segment"), std::string::npos);
  }
  shm_unlink(name.c_str());
}

TEST(Buffer, MapFileIsReadOnlyAndChecksLength) {
  const auto path =
      std::filesystem::temp_directory_path() / ("volley_map_" + std::to_string(getpid()));
  {
    std::ofstream out(path, std::ios::binary);
    for (int i = 0; i < 5000; ++i) out.put(static_cast<char>(i % 251));
  }
  Buffer whole = Buffer::map_file(path);
  EXPECT_EQ(whole.size(), 5000u);
  EXPECT_FALSE(whole.writable());
  EXPECT_EQ(whole.location(), Location::kMappedFile);
  Buffer tail = Buffer::map_file(path, 4097, 10);  // offset not page-aligned
  EXPECT_EQ(static_cast<int>(tail.data()[0]), 4097 % 251);
  try {
    Buffer::map_file(path, 4000, 2000);
    FAIL() << "expected IoError";
  } catch (const IoError& error) {
    EXPECT_NE(std::string(error.what()).find("truncated"), std::string::npos) << error.what();
  }
  EXPECT_THROW(Buffer::map_file(path.string() + ".missing"), IoError);
  std::filesystem::remove(path);
}

TEST(Buffer, BorrowKeepsOwnerAlive) {
  auto owner = std::make_shared<std::vector<int>>(10, 5);
  std::weak_ptr<std::vector<int>> watch = owner;
  Buffer borrowed = Buffer::borrow(owner->data(), 40, owner);
  owner.reset();
  EXPECT_FALSE(watch.expired());
  borrowed = Buffer();
  EXPECT_TRUE(watch.expired());
}

TEST(Buffer, CudaLocationsNeedCudaOrADevice) {
#ifndef VOLLEY_WITH_CUDA
  try {
    Buffer::allocate_pinned(16);
    FAIL() << "expected RuntimeError";
  } catch (const RuntimeError& error) {
    EXPECT_NE(std::string(error.what()).find("without CUDA"), std::string::npos);
  }
#endif
  EXPECT_THROW(Buffer::allocate_device(16, -1), ValueError);
}

TEST(Array, ShapeDtypeAndChecks) {
  Array array = Array::zeros(DType::kFloat32, {3, 4});
  EXPECT_EQ(array.numel(), 12);
  EXPECT_EQ(array.nbytes(), 48u);
  EXPECT_EQ(array.dim(-1), 4);
  EXPECT_THROW(array.dim(2), IndexError);
  EXPECT_THROW(array.data<int64_t>(), ValueError);
  EXPECT_EQ(array.describe(), "float32[3, 4]");
  EXPECT_THROW(Array(Buffer::allocate(10), DType::kInt64, {2}), ValueError);
  EXPECT_THROW(Array::empty(DType::kInt8, {-1}), ValueError);
}

TEST(Array, CastConvertsValues) {
  Array ints = Array::from_vector<int32_t>({1, -2, 3});
  Array wide = ints.cast(DType::kInt64);
  EXPECT_EQ(wide.to_vector<int64_t>(), (std::vector<int64_t>{1, -2, 3}));
  Array halves = Array::from_vector<float>({0.5f, -2.0f, 65504.0f}).cast(DType::kFloat16);
  Array back = halves.cast(DType::kFloat32);
  EXPECT_EQ(back.to_vector<float>(), (std::vector<float>{0.5f, -2.0f, 65504.0f}));
  EXPECT_THROW(Array::from_vector<float>({1.5f}).cast(DType::kInt32), ValueError);
}

}  // namespace
}  // namespace volley
