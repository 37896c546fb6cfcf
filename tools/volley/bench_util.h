// tools/volley/bench_util.h — small helpers shared by the `volley bench` subcommands.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
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

// "15,10,5" → {15, 10, 5}; ValueError naming the item that is not an integer.
std::vector<int64_t> parse_fanouts(const std::string& text);

// The bench seeds: the dataset's training nodes when it has them, else all nodes, in a shuffle
// seeded by `seed` (seeded_permutation): the same seeds for every bench of one dataset and seed.
std::vector<int64_t> bench_seed_pool(const Dataset& dataset, uint64_t seed);

// The 1-, 5- and 15-minute load averages from /proc/loadavg, -1 each when unreadable.
struct LoadAverage {
  double one = -1, five = -1, fifteen = -1;
  // "0.47 1.98 3.16" as /proc/loadavg writes them, or "unknown".
  std::string text() const;
};
LoadAverage load_average();

}  // namespace volley::cli
