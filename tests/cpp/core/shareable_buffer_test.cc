// Buffer::create_shareable: anonymous memfd segments attached through /proc/<pid>/fd/<fd>.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>

#include "test_util.h"
#include "volley/core/buffer.h"
#include "volley/core/error.h"

namespace volley {
namespace {

size_t volley_entries_in_dev_shm() {
  size_t count = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm")) {
    if (entry.path().filename().string().find(std::to_string(getpid())) != std::string::npos) {
      ++count;
    }
  }
  return count;
}

TEST(ShareableBuffer, AttachInSameProcessSeesSameBytesAndLeavesNoName) {
  const size_t before = volley_entries_in_dev_shm();
  Buffer owner = Buffer::create_shareable(1 << 16);
  EXPECT_EQ(owner.location(), Location::kSharedMemory);
  EXPECT_EQ(owner.size(), 1u << 16);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(owner.data()) % 64, 0u);
  EXPECT_EQ(owner.data()[100], std::byte{0});  // zero-filled
  const std::string name = owner.shared_name();
  ASSERT_EQ(name.rfind("memfd:" + std::to_string(getpid()) + ":", 0), 0u) << name;
  EXPECT_EQ(volley_entries_in_dev_shm(), before) << "a memfd segment has no /dev/shm name";
  std::memcpy(owner.data(), "hello", 6);

  Buffer attached = Buffer::attach_shared(name);
  EXPECT_EQ(attached.size(), owner.size());
  EXPECT_STREQ(reinterpret_cast<const char*>(attached.data()), "hello");
  EXPECT_NE(attached.shared_name(), name) << "an attached buffer has its own descriptor";
  attached.data()[0] = std::byte{'j'};
  EXPECT_EQ(owner.data()[0], std::byte{'j'});

  Buffer view = attached.slice(64, 128);
  EXPECT_EQ(view.offset(), 64u);
  EXPECT_EQ(view.shared_name(), attached.shared_name());
  EXPECT_EQ(owner.offset(), 0u);
}

TEST(ShareableBuffer, AttachFailsClearlyOnceTheHandleIsGone) {
  std::string name;
  {
    Buffer owner = Buffer::create_shareable(4096);
    name = owner.shared_name();
  }
  try {
    Buffer::attach_shared(name);
    FAIL() << "expected IoError";
  } catch (const IoError& error) {
    EXPECT_NE(std::string(error.what()).find(name), std::string::npos) << error.what();
  }
  EXPECT_THROW(Buffer::attach_shared("memfd:12:x"), ValueError);
  EXPECT_THROW(Buffer::attach_shared("memfd:1:2:3"), ValueError);

  // A live descriptor of another segment (wrong token or size) is not taken for the handle.
  Buffer other = Buffer::create_shareable(4096);
  std::string forged = other.shared_name();
  forged.back() = forged.back() == '0' ? '1' : '0';
  EXPECT_THROW(Buffer::attach_shared(forged), IoError);
}

TEST(ShareableBuffer, AttachFailsWhenTheCreatorProcessExited) {
  int to_parent[2];
  ASSERT_EQ(pipe(to_parent), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    Buffer owner = Buffer::create_shareable(4096);
    write_line(to_parent[1], owner.shared_name());
    _exit(0);
  }
  close(to_parent[1]);
  const std::string name = read_line(to_parent[0]);
  close(to_parent[0]);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  try {
    Buffer::attach_shared(name);
    FAIL() << "expected IoError";
  } catch (const IoError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find(name), std::string::npos) << message;
    EXPECT_NE(message.find("is gone"), std::string::npos) << message;
  }
}

// The child attaches, drops everything it inherited, and keeps reading and writing after the
// parent's handle is gone; the parent then attaches again through the child's own handle.
TEST(ShareableBuffer, ChildAttachesAndOutlivesTheCreatorsHandle) {
  constexpr int64_t kCount = 1 << 17;
  Buffer owner = Buffer::create_shareable(kCount * sizeof(int64_t));
  auto* values = reinterpret_cast<int64_t*>(owner.data());
  for (int64_t i = 0; i < kCount; ++i) values[i] = i * 3;
  const std::string name = owner.shared_name();
  int to_parent[2];
  int to_child[2];
  ASSERT_EQ(pipe(to_parent), 0);
  ASSERT_EQ(pipe(to_child), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(to_parent[0]);
    close(to_child[1]);
    int code = 0;
    try {
      Buffer attached = Buffer::attach_shared(name);
      owner = Buffer();  // the inherited copy: only the child's own attachment remains
      write_line(to_parent[1], attached.shared_name());
      read_line(to_child[0]);  // the parent has dropped its handle
      const auto* seen = reinterpret_cast<const int64_t*>(attached.data());
      for (int64_t i = 0; i < kCount; ++i) {
        if (seen[i] != i * 3) code = 2;
      }
      reinterpret_cast<int64_t*>(attached.data())[1] = -7;
      write_line(to_parent[1], "checked");
      read_line(to_child[0]);  // the parent re-attached
    } catch (...) {
      code = 3;
    }
    _exit(code);
  }
  close(to_parent[1]);
  close(to_child[0]);
  const std::string child_name = read_line(to_parent[0]);
  ASSERT_EQ(child_name.rfind("memfd:" + std::to_string(child) + ":", 0), 0u) << child_name;
  owner = Buffer();
  EXPECT_THROW(Buffer::attach_shared(name), IoError);  // the creator's handle is gone
  write_line(to_child[1], "dropped");
  EXPECT_EQ(read_line(to_parent[0]), "checked");
  Buffer again = Buffer::attach_shared(child_name);  // handed on through the child
  const auto* seen = reinterpret_cast<const int64_t*>(again.data());
  EXPECT_EQ(seen[1], -7);
  EXPECT_EQ(seen[kCount - 1], (kCount - 1) * 3);
  write_line(to_child[1], "done");
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  close(to_parent[0]);
  close(to_child[1]);
}

}  // namespace
}  // namespace volley
