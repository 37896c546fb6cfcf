// tools/volley/bench_util.h — small helpers shared by the `volley bench` subcommands.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "volley/graph/dataset.h"

namespace volley::cli {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The CPU time of the whole process (every thread, servers included) so far, in seconds.
double process_cpu_seconds();

// What a sampling run did: edges and nodes sampled, wall and process CPU seconds.
struct SampleFigures {
  int64_t edges = 0;
  int64_t nodes = 0;
  double seconds = 0;
  double cpu_seconds = 0;  // the process's CPU time meanwhile (less sensitive to a busy machine)
  double seps() const { return static_cast<double>(edges) / seconds; }
  // Edges per CPU-second: what the figures would be if the process had its cores to itself
  // (the machine is shared; wall-clock SEPS also measures the other jobs).
  double seps_per_cpu() const { return static_cast<double>(edges) / cpu_seconds; }
};

// `batches` batches on `threads` threads, each thread taking whole batches in turn with its own
// `Scratch`: sample(b, scratch) samples batch b and returns its {edges, nodes}. Either kind of
// sampler, local or distributed, runs here, so all are measured alike. The first exception a
// batch throws stops the other threads and is rethrown.
template <typename Scratch, typename Sample>
SampleFigures run_batches(int threads, int64_t batches, Sample&& sample) {
  std::atomic<int64_t> next{0}, edges{0}, nodes{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto work = [&] {
    Scratch scratch;
    int64_t my_edges = 0, my_nodes = 0;
    try {
      for (int64_t b = next++; b < batches; b = next++) {
        const std::pair<int64_t, int64_t> sampled = sample(b, scratch);
        my_edges += sampled.first;
        my_nodes += sampled.second;
      }
    } catch (...) {
      std::lock_guard lock(error_mutex);
      if (!error) error = std::current_exception();
      next = batches;
    }
    edges += my_edges;
    nodes += my_nodes;
  };
  const auto start = Clock::now();
  const double cpu_start = process_cpu_seconds();
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) workers.emplace_back(work);
  for (auto& worker : workers) worker.join();
  if (error) std::rethrow_exception(error);
  return {edges.load(), nodes.load(), seconds_since(start), process_cpu_seconds() - cpu_start};
}

// "15,10,5" → {15, 10, 5}; ValueError naming the item that is not an integer.
std::vector<int64_t> parse_fanouts(const std::string& text);

// The bench seeds: the training nodes `train_idx` when there are any, else all `num_nodes` nodes,
// in a shuffle seeded by `seed` (seeded_permutation): the same seeds for every bench of one
// dataset (of either kind: a heterogeneous one's input node type) and seed.
std::vector<int64_t> bench_seed_pool(const std::optional<Array>& train_idx, int64_t num_nodes,
                                     uint64_t seed);
inline std::vector<int64_t> bench_seed_pool(const Dataset& dataset, uint64_t seed) {
  return bench_seed_pool(dataset.train_idx, dataset.graph.num_nodes(), seed);
}

// The 1-, 5- and 15-minute load averages from /proc/loadavg, -1 each when unreadable.
struct LoadAverage {
  double one = -1, five = -1, fifteen = -1;
  // "0.47 1.98 3.16" as /proc/loadavg writes them, or "unknown".
  std::string text() const;
};
LoadAverage load_average();

}  // namespace volley::cli
