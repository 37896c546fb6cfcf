#include "volley/core/parallel.h"

#include <atomic>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>

#include "volley/core/error.h"

namespace volley {
namespace {
thread_local bool tls_inside_pool = false;
}  // namespace

struct ThreadPool::Job {
  int64_t first;
  int64_t last;
  int64_t grain;
  const std::function<void(int64_t, int64_t)>* fn;
  std::atomic<int64_t> next;
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex error_mutex;
};

ThreadPool::ThreadPool(int num_threads) : num_threads_(num_threads) {
  VOLLEY_REQUIRE(num_threads >= 1, ValueError, "thread count must be >= 1, got {}", num_threads);
  threads_.reserve(static_cast<size_t>(num_threads - 1));
  for (int i = 0; i + 1 < num_threads; ++i) threads_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& thread : threads_) thread.join();
}

void ThreadPool::run_chunks(Job& job) {
  while (!job.failed.load(std::memory_order_relaxed)) {
    const int64_t begin = job.next.fetch_add(job.grain);
    if (begin >= job.last) break;
    const int64_t end = std::min(job.last, begin + job.grain);
    try {
      (*job.fn)(begin, end);
    } catch (...) {
      std::lock_guard lock(job.error_mutex);
      if (!job.error) job.error = std::current_exception();
      job.failed = true;
    }
  }
}

void ThreadPool::worker_loop() {
  tls_inside_pool = true;
  uint64_t seen = 0;
  while (true) {
    Job* job;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      job = job_;
      if (job == nullptr) continue;
      ++busy_;
    }
    run_chunks(*job);
    {
      std::lock_guard lock(mutex_);
      if (--busy_ == 0) done_.notify_all();
    }
  }
}

void ThreadPool::parallel_for(int64_t first, int64_t last, int64_t grain,
                              const std::function<void(int64_t, int64_t)>& fn) {
  if (first >= last) return;
  grain = std::max<int64_t>(grain, 1);
  if (tls_inside_pool || threads_.empty() || last - first <= grain) {
    for (int64_t begin = first; begin < last; begin += grain)
      fn(begin, std::min(last, begin + grain));
    return;
  }
  std::lock_guard submit(submit_mutex_);
  Job job;
  job.first = first;
  job.last = last;
  job.grain = grain;
  job.fn = &fn;
  job.next = first;
  {
    std::lock_guard lock(mutex_);
    job_ = &job;
    ++generation_;
  }
  wake_.notify_all();
  tls_inside_pool = true;
  run_chunks(job);
  tls_inside_pool = false;
  {
    std::unique_lock lock(mutex_);
    job_ = nullptr;  // late wakers find no job
    done_.wait(lock, [&] { return busy_ == 0; });
  }
  if (job.error) std::rethrow_exception(job.error);
}

int default_num_threads() {
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

namespace {

int default_thread_count() {
  if (const char* env = std::getenv("VOLLEY_NUM_THREADS")) {
    const int parsed = std::atoi(env);
    if (parsed >= 1) return parsed;
  }
  return default_num_threads();
}

std::mutex& pool_mutex() {
  static std::mutex mutex;
  return mutex;
}

std::unique_ptr<ThreadPool>& pool_slot() {
  static std::unique_ptr<ThreadPool> pool;
  return pool;
}

}  // namespace

ThreadPool& default_thread_pool() {
  std::lock_guard lock(pool_mutex());
  auto& pool = pool_slot();
  if (!pool) pool = std::make_unique<ThreadPool>(default_thread_count());
  return *pool;
}

void set_num_threads(int num_threads) {
  VOLLEY_REQUIRE(num_threads >= 1, ValueError, "thread count must be >= 1, got {}", num_threads);
  std::lock_guard lock(pool_mutex());
  auto& pool = pool_slot();
  if (pool && pool->num_threads() == num_threads) return;
  pool.reset();
  pool = std::make_unique<ThreadPool>(num_threads);
}

int get_num_threads() { return default_thread_pool().num_threads(); }

void parallel_for(int64_t first, int64_t last, int64_t grain,
                  const std::function<void(int64_t, int64_t)>& fn) {
  default_thread_pool().parallel_for(first, last, grain, fn);
}

}  // namespace volley
