// HostExecutor: a fixed team of worker threads; each launch shuffles its item order with a
// per-launch seed and the workers take items one at a time from that order.
#include "volley/core/internal/host_executor.h"

#include <algorithm>
#include <numeric>
#include <random>

#include "volley/core/error.h"

namespace volley::internal {

HostExecutor::HostExecutor(HostExecutorOptions options) : options_(options) {
  VOLLEY_REQUIRE(options_.threads >= 1, ValueError, "a HostExecutor needs >= 1 thread, got {}",
                 options_.threads);
  threads_.reserve(static_cast<size_t>(options_.threads));
  for (int worker = 0; worker < options_.threads; ++worker) {
    threads_.emplace_back([this, worker] { work(worker); });
  }
}

HostExecutor::~HostExecutor() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  start_.notify_all();
  for (std::thread& thread : threads_) thread.join();
}

void HostExecutor::exclusive_scan(const int64_t* in, int64_t* out, int64_t n) {
  std::exclusive_scan(in, in + n, out, int64_t{0});
}

void HostExecutor::launch(int64_t n, Invoker invoker, const void* body) {
  std::unique_lock lock(mutex_);
  order_.resize(static_cast<size_t>(n));
  std::iota(order_.begin(), order_.end(), int64_t{0});
  std::mt19937_64 rng(options_.seed ^ (0x9e3779b97f4a7c15ull * static_cast<uint64_t>(++launches_)));
  std::shuffle(order_.begin(), order_.end(), rng);
  invoker_ = invoker;
  body_ = body;
  next_.store(0, std::memory_order_relaxed);
  running_ = options_.threads;
  ++generation_;
  start_.notify_all();
  done_.wait(lock, [this] { return running_ == 0; });
}

void HostExecutor::work(int) {
  uint64_t seen = 0;
  while (true) {
    std::unique_lock lock(mutex_);
    start_.wait(lock, [&] { return stopping_ || generation_ != seen; });
    if (stopping_) return;
    seen = generation_;
    const Invoker invoker = invoker_;
    const void* body = body_;
    const int64_t* order = order_.data();
    const auto n = static_cast<int64_t>(order_.size());
    lock.unlock();
    for (int64_t k = next_.fetch_add(1, std::memory_order_relaxed); k < n;
         k = next_.fetch_add(1, std::memory_order_relaxed)) {
      invoker(body, order[k]);
    }
    lock.lock();
    if (--running_ == 0) done_.notify_one();
  }
}

}  // namespace volley::internal
