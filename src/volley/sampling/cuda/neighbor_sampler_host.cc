// The GPU neighbor sampler on the host executor: the driver and bodies of neighbor_sampler.cu,
// compiled by the host compiler and run on host threads in a shuffled order (gpu-host tests).
#include "volley/core/internal/host_executor.h"
#include "volley/sampling/cuda/neighbor_driver.h"

namespace volley::sampling_internal {

std::unique_ptr<CudaSamplerBackend> make_host_sampler_backend(
    const internal::HostExecutorOptions& options) {
  return std::make_unique<SamplerBackend<internal::HostExecutor>>(options);
}

}  // namespace volley::sampling_internal
