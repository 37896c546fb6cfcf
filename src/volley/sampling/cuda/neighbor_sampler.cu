// The GPU neighbor sampler on a CUDA device: neighbor_driver.h's driver and neighbor_kernels.h's
// bodies, run by the CUDA executor (CUDA builds only). The host executor runs the same driver
// and bodies in neighbor_sampler_host.cc.
#include "volley/core/cuda/cuda_executor.cuh"
#include "volley/sampling/cuda/neighbor_driver.h"

namespace volley::sampling_internal {

std::unique_ptr<CudaSamplerBackend> make_cuda_sampler_backend(int device) {
  return std::make_unique<SamplerBackend<cuda::CudaExecutor>>(device);
}

}  // namespace volley::sampling_internal
