// volley/sampling/cpu/neighbor_kernel.h — the CPU neighbor-sampling kernel (internal).
//
// Callers use volley/sampling/neighbor_sampler.h; this header exists so the kernel's scratch
// type and the random-stream layout (shared with the CUDA kernel) are in one place.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "volley/core/philox.h"
#include "volley/sampling/neighbor_sampler.h"

namespace volley::cpu {

// The Philox counter of the random stream for expanding `node` at `hop` of batch `batch`.
// word[0] counts blocks within the stream. Nodes up to 2^48 and 256 hops are distinct.
VOLLEY_HOST_DEVICE inline PhiloxCounter neighbor_stream_counter(int64_t node, int hop,
                                                                uint64_t batch) {
  const auto id = static_cast<uint64_t>(node);
  return {{0u, static_cast<uint32_t>(id),
           static_cast<uint32_t>((id >> 32) & 0xffffu) | (static_cast<uint32_t>(hop) << 16),
           static_cast<uint32_t>(batch)}};
}

// Per-thread map from global node id to local index, reset in O(1) by a generation stamp.
struct NeighborScratch {
  struct Slot {
    uint32_t stamp;
    int32_t local;
  };
  std::vector<Slot> slots;
  uint32_t generation = 0;
  std::vector<int64_t> picked;
  std::vector<int64_t> neighbors;  // global ids of one hop's sampled neighbors
  std::vector<uint64_t> bitmap;
  std::vector<double> keys;
};

void sample_neighbors_cpu(const Csr& graph, std::span<const int64_t> seeds,
                          const NeighborSamplerOptions& options, uint64_t batch_index,
                          NeighborScratch& scratch, SampledSubgraph& out);

}  // namespace volley::cpu
