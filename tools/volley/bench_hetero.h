// tools/volley/bench_hetero.h — `volley bench sample` on a heterogeneous dataset directory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace volley::cli {

struct HeteroSampleBench {
  std::string dataset;
  std::string fanout;  // one list for every edge type
  std::vector<int64_t> batch_sizes;
  std::vector<int> thread_counts;
  int64_t batches = 50;
  int64_t warmup = 2;
  bool replace = false;
  bool weighted = false;
  uint64_t seed = 0;
};

// Samples batches of the first node type with a training split (else the first node type),
// `threads` threads each taking whole batches, and prints one JSON line per configuration
// (sampled edges per second over all edge types, nodes per second, the load average).
void run_hetero_sample_bench(const HeteroSampleBench& bench);

}  // namespace volley::cli
