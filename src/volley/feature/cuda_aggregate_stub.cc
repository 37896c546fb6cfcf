// CPU-only build: the GPU aggregation kernel is absent; asking for it is a clear error.
#include "volley/core/error.h"
#include "volley/feature/internal/cuda_aggregate_kernel.h"

namespace volley::feature_internal {

void launch_device_aggregate(const AggregatePlan&, void*) {
  throw RuntimeError(
      "aggregate on a CUDA device: this build of Volley has no CUDA support (built with "
      "VOLLEY_CUDA=OFF or without nvcc); aggregate host rows, or rebuild with CUDA");
}

}  // namespace volley::feature_internal
