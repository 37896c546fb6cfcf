// volley/core/internal/host_executor.h — runs GPU kernel bodies on host threads, to find bugs
// (internal; the executor seam is described in executor.h).
//
// Built to make a kernel's mistakes visible on a CPU-only machine, not to be fast:
//   * each for_each runs its items in a seeded, shuffled order (a fresh permutation per launch)
//     on `threads` threads of Volley's own (std::thread, so ThreadSanitizer sees every access),
//     8 by default — more than the cores of a CI machine, so items interleave and preempt each
//     other. A body that depends on launch order, or writes a shared word without an atomic,
//     gives a wrong answer here (and a ThreadSanitizer report);
//   * a launch returns after all its items ran (a stream's launches are ordered);
//   * "device" and "pinned" memory are ordinary host memory (Location::kHost), so pointers to
//     either are read by the same code: UVA addressing is the GPU path.
//
//   HostExecutor executor({.threads = 8, .seed = 7});
//   executor.for_each(n, CountBody{...});
//
// Thread safety: one caller at a time (like a CUDA stream). Bodies must not throw.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "volley/core/buffer.h"
#include "volley/core/internal/executor.h"

namespace volley::internal {

struct HostExecutorOptions {
  int threads = 8;         // worker threads (>= 1)
  uint64_t seed = 0x5eed;  // seeds the item order of every launch
};

class HostExecutor {
 public:
  explicit HostExecutor(HostExecutorOptions options = {});
  ~HostExecutor();
  HostExecutor(const HostExecutor&) = delete;
  HostExecutor& operator=(const HostExecutor&) = delete;

  void set_stream(void*) {}
  template <class Body>
  void for_each(int64_t n, const Body& body) {
    if (n > 0) launch(n, &invoke<Body>, &body);
  }
  // Earlier launches have run, so the count is read here, as the kernel reads it.
  template <class Body>
  void for_each_counted(DeviceCount n, const Body& body) {
    const int64_t items = *n.end - (n.begin != nullptr ? *n.begin : 0);
    for_each(std::min(items, n.bound), body);
  }
  void exclusive_scan(const int64_t* in, int64_t* out, int64_t n);
  void fill(void* data, int byte, size_t bytes) { std::memset(data, byte, bytes); }
  void copy(void* to, const void* from, size_t bytes) {
    if (bytes > 0) std::memmove(to, from, bytes);
  }
  void upload(void* to, const void* host_from, size_t bytes) { copy(to, host_from, bytes); }
  int64_t read(const int64_t* from) {
    ++waits_;
    return *from;
  }
  void read(const int64_t* from, int64_t* to, int64_t n) {
    ++waits_;
    copy(to, from, static_cast<size_t>(n) * sizeof(int64_t));
  }
  void synchronize() { ++waits_; }
  Buffer allocate(Memory, size_t bytes) { return Buffer::allocate(bytes); }

  const HostExecutorOptions& options() const { return options_; }
  int64_t launches() const { return launches_; }  // for_each calls with n > 0 so far
  int64_t waits() const { return waits_; }        // read and synchronize calls so far

 private:
  using Invoker = void (*)(const void* body, int64_t item);
  template <class Body>
  static void invoke(const void* body, int64_t item) {
    (*static_cast<const Body*>(body))(item);
  }
  void launch(int64_t n, Invoker invoker, const void* body);
  void work(int worker);

  HostExecutorOptions options_;
  int64_t launches_ = 0;
  int64_t waits_ = 0;
  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable start_, done_;
  // The current launch (written under mutex_ before workers wake).
  uint64_t generation_ = 0;
  bool stopping_ = false;
  int running_ = 0;
  Invoker invoker_ = nullptr;
  const void* body_ = nullptr;
  std::vector<int64_t> order_;
  std::atomic<int64_t> next_{0};
};

}  // namespace volley::internal
