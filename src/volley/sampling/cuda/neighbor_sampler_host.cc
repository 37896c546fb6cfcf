// The GPU neighbor samplers on the host executor: the drivers and bodies of neighbor_sampler.cu,
// compiled by the host compiler and run on host threads in a shuffled order (gpu-host tests).
#include "volley/core/internal/host_executor.h"
#include "volley/sampling/cuda/hetero_driver.h"
#include "volley/sampling/cuda/neighbor_driver.h"

namespace volley::sampling_internal {

std::unique_ptr<CudaSamplerBackend> make_host_sampler_backend(
    const internal::HostExecutorOptions& options) {
  return std::make_unique<SamplerBackend<internal::HostExecutor>>(options);
}

std::unique_ptr<CudaHeteroSamplerBackend> make_host_hetero_sampler_backend(
    const internal::HostExecutorOptions& options) {
  return std::make_unique<HeteroSamplerBackend<internal::HostExecutor>>(options);
}

}  // namespace volley::sampling_internal
