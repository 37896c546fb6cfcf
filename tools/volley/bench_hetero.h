// tools/volley/bench_hetero.h — `volley bench sample` on a heterogeneous dataset directory: its
// sampler side (bench_command.cc runs the sweep and prints the lines of either kind).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench_util.h"
#include "volley/graph/hetero_dataset.h"
#include "volley/sampling/hetero_sampler.h"

namespace volley::cli {

class HeteroSampleBench {
 public:
  // Loads the dataset; the input type is the first node type with training nodes (else the first
  // node type), its seeds bench_seed_pool's. ValueError for fanouts the graph cannot take.
  HeteroSampleBench(const std::string& dataset, const std::string& fanout, bool replace,
                    bool weighted, uint64_t seed);
  // `batches` batches of `batch_size` input seeds on `threads` threads (run_batches).
  SampleFigures run(int64_t batch_size, int threads, int64_t batches) const;
  // What a line adds for this dataset: its name, input type and edge type count, the device and
  // the load average now.
  nlohmann::json describe() const;

 private:
  HeteroDataset dataset_;
  std::string type_;
  std::vector<int64_t> seeds_;
  HeteroSamplerOptions options_;
};

}  // namespace volley::cli
