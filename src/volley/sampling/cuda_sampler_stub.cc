// CPU-only build: the CUDA samplers' kernels are absent; asking for them is a clear error.
#include "volley/core/error.h"
#include "volley/sampling/internal/cuda_sampler_backend.h"

namespace volley::sampling_internal {
namespace {
[[noreturn]] void no_cuda_support() {
  throw RuntimeError(
      "CUDA neighbor sampling: this build of Volley has no CUDA support (built with "
      "VOLLEY_CUDA=OFF or without nvcc); use sample_neighbors on the CPU, or rebuild with CUDA");
}
}  // namespace

std::unique_ptr<CudaSamplerBackend> make_cuda_sampler_backend(int) { no_cuda_support(); }

std::unique_ptr<CudaHeteroSamplerBackend> make_cuda_hetero_sampler_backend(int) {
  no_cuda_support();
}

}  // namespace volley::sampling_internal
