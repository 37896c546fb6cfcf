// CPU-only build: the GPU dtype conversion is absent; asking for it is a clear error.
#include "volley/core/error.h"
#include "volley/loader/internal/cuda_convert.h"

namespace volley::loader_internal {

bool launch_convert(const std::byte*, DType, std::byte*, DType, int64_t, int, void*) {
  throw RuntimeError(
      "GPU dtype conversion: this build of Volley has no CUDA support (built with "
      "VOLLEY_CUDA=OFF or without nvcc); use the CPU loader, or rebuild with CUDA");
}

}  // namespace volley::loader_internal
