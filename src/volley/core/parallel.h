// volley/core/parallel.h — a small thread pool and parallel_for.
//
//   parallel_for(0, n, 4096, [&](int64_t begin, int64_t end) { ... });
//
// Work is cut into chunks of `grain` items taken dynamically by the pool's threads and the
// calling thread. The first exception thrown by any chunk is rethrown in the caller after all
// chunks have stopped. A parallel_for called from inside a pool thread runs serially (no
// deadlock, no oversubscription). `set_num_threads` sizes the default pool (default: the number
// of hardware threads, or VOLLEY_NUM_THREADS).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace volley {

class ThreadPool {
 public:
  // A pool running `num_threads` threads in total, the caller included (so num_threads - 1
  // background threads). num_threads must be >= 1.
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return num_threads_; }

  // Calls fn(begin, end) over [first, last) in chunks of at most `grain` items.
  void parallel_for(int64_t first, int64_t last, int64_t grain,
                    const std::function<void(int64_t, int64_t)>& fn);

 private:
  struct Job;
  void worker_loop();
  static void run_chunks(Job& job);

  int num_threads_;
  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  Job* job_ = nullptr;
  uint64_t generation_ = 0;
  int busy_ = 0;
  bool stopping_ = false;
  std::mutex submit_mutex_;  // one parallel_for at a time per pool
};

// The number of hardware threads (at least 1): what a thread count of 0 ("all") means wherever
// Volley takes one (the default pool, loaders, servers, the tools). The default pool also
// honours VOLLEY_NUM_THREADS.
int default_num_threads();

// The process-wide pool used by parallel_for.
ThreadPool& default_thread_pool();
// Resizes the default pool (>= 1). Not to be called while a parallel_for is running.
void set_num_threads(int num_threads);
int get_num_threads();

void parallel_for(int64_t first, int64_t last, int64_t grain,
                  const std::function<void(int64_t, int64_t)>& fn);

}  // namespace volley
