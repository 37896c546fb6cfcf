// CPU-only build: the GPU gather kernel is absent; asking for it is a clear error.
#include "volley/core/error.h"
#include "volley/feature/internal/cuda_gather_kernel.h"

namespace volley::feature_internal {

int64_t launch_device_gather(const DeviceGatherPlan&, const int64_t*, int64_t, void*, void*, bool) {
  throw RuntimeError(
      "GPU feature gather: this build of Volley has no CUDA support (built with VOLLEY_CUDA=OFF "
      "or without nvcc); use FeatureStore::gather on the CPU, or rebuild with CUDA");
}

}  // namespace volley::feature_internal
