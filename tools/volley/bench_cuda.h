// tools/volley/bench_cuda.h — the GPU halves of `volley bench sample` and `volley bench gather`
// (bench_cuda.cc). Plain C++ on Volley's public headers: the tool builds without nvcc, and in
// a build without CUDA these throw RuntimeError ("this build of Volley has no CUDA support").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "volley/core/array.h"
#include "volley/graph/dataset.h"
#include "volley/sampling/neighbor_sampler.h"

namespace volley::cli {

// RuntimeError unless this build has CUDA and `device` is visible; `flag` names the option.
void require_cuda_device(const std::string& flag, int device);

struct CudaSampleBench {
  std::string mode = "GPU";  // GPU or UVA
  int device = 0;
  int64_t batch_size = 1024;
  int64_t batches = 50;
  // Temporal sampling: one time per entry of the seed pool (options.time_source set); the line
  // then has no latency or copy figures (the untimed run of the same graph has them).
  const std::vector<int64_t>* seed_times = nullptr;
};

// SEPS of the CUDA sampler over `batches` batches of `seeds` (one stream, batches in a row),
// with the device-to-device and pinned host-to-device copy bandwidth measured in the same run.
nlohmann::json run_cuda_sample_bench(const Csr& graph, const std::vector<int64_t>& seeds,
                                     const NeighborSamplerOptions& options,
                                     const CudaSampleBench& settings);

struct CudaGatherBench {
  int device = 0;
  double cache_fraction = 0.25;  // share of the table's bytes in the device tier
  uint64_t seed = 0;
};

// GB/s of FeatureStore::gather on GPU tiers (device ids → device output) over `batches`, with the
// copy bandwidths of the same run and the bound the tier mix allows.
nlohmann::json run_cuda_gather_bench(const Array& table,
                                     const std::vector<std::vector<int64_t>>& batches,
                                     const CudaGatherBench& settings);

}  // namespace volley::cli
