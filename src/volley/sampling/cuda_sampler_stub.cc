// CPU-only build: the CUDA sampler's kernels are absent; asking for them is a clear error.
#include "volley/core/error.h"
#include "volley/sampling/internal/cuda_sampler_backend.h"

namespace volley::sampling_internal {

std::unique_ptr<CudaSamplerBackend> make_cuda_sampler_backend(int) {
  throw RuntimeError(
      "CUDA neighbor sampling: this build of Volley has no CUDA support (built with "
      "VOLLEY_CUDA=OFF or without nvcc); use sample_neighbors on the CPU, or rebuild with CUDA");
}

}  // namespace volley::sampling_internal
