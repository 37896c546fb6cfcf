// volley/sampling/internal/cuda_sampler_checks.h — the CUDA sampler's host-side argument checks
// (cuda_sampler.cc), exposed for the tests that compare them with the CPU sampler's.
#pragma once

#include <cstdint>
#include <span>

#include "volley/sampling/cuda_graph.h"
#include "volley/sampling/neighbor_sampler.h"

namespace volley::sampling_internal {

// Seeds: IndexError for one out of range, ValueError for a duplicate (CPU sampler's messages).
void check_seeds(int64_t num_nodes, std::span<const int64_t> seeds, bool distinct = true);
// ValueError for the fanouts (checked first, needing no graph; validate_sampler_options's
// messages), an undefined graph, `weighted` without weights.
void check_cuda_sampler_options(const CudaGraph& graph, const NeighborSamplerOptions& options);

}  // namespace volley::sampling_internal
