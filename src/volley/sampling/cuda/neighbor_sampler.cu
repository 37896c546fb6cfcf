// The GPU neighbor samplers on a CUDA device: the homogeneous and heterogeneous drivers
// (neighbor_driver.h, hetero_driver.h) and neighbor_kernels.h's bodies, run by the CUDA executor
// (CUDA builds only). The host executor runs the same drivers and bodies in
// neighbor_sampler_host.cc.
#include "volley/core/cuda/cuda_executor.cuh"
#include "volley/sampling/cuda/hetero_driver.h"
#include "volley/sampling/cuda/neighbor_driver.h"

namespace volley::sampling_internal {

std::unique_ptr<CudaSamplerBackend> make_cuda_sampler_backend(int device) {
  return std::make_unique<SamplerBackend<cuda::CudaExecutor>>(device);
}

std::unique_ptr<CudaHeteroSamplerBackend> make_cuda_hetero_sampler_backend(int device) {
  return std::make_unique<HeteroSamplerBackend<cuda::CudaExecutor>>(device);
}

}  // namespace volley::sampling_internal
