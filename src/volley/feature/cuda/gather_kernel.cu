// The row gather of FeatureStore's GPU tiers on a CUDA device (any device of a sharded cache):
// gather_driver.h's body run by the CUDA executor (CUDA builds only; gather_kernel_host.cc runs it
// on the host executor).
#include <memory>
#include <unordered_map>

#include "volley/core/buffer.h"
#include "volley/core/cuda/cuda_executor.cuh"
#include "volley/feature/cuda/gather_driver.h"

namespace volley::feature_internal {
namespace {

// Per thread and device: the executor, the word the kernel reports a bad id in.
struct GatherState {
  std::unique_ptr<cuda::CudaExecutor> executor;
  Buffer first_bad;
};

}  // namespace

int64_t launch_device_gather(const DeviceGatherPlan& plan, const int64_t* ids, int64_t count,
                             void* out, void* stream, bool check) {
  if (count == 0) return -1;
  cuda::DeviceGuard guard(plan.device);
  thread_local std::unordered_map<int, GatherState> states;  // a sharded store: one per device
  GatherState& state = states[plan.device];
  if (state.executor == nullptr) {
    state.executor = std::make_unique<cuda::CudaExecutor>(plan.device);
    state.first_bad = Buffer::allocate_device(sizeof(unsigned long long), plan.device);
  }
  cuda::CudaExecutor& executor = *state.executor;
  executor.set_stream(stream);
  auto* first_bad = check ? reinterpret_cast<unsigned long long*>(state.first_bad.data()) : nullptr;
  gather_with(executor, plan, ids, count, out, first_bad);
  if (!check) return -1;
  const int64_t first = executor.read(reinterpret_cast<const int64_t*>(first_bad));
  return first < 0 ? -1 : first;  // ~0: no bad id
}

}  // namespace volley::feature_internal
