// CUDA build: the CUDA runtime calls behind DeviceBlock and DeviceEvent (device_memory.cc):
// stream-ordered device memory from one pool per device, and events (plain C++ against the
// CUDA runtime; no device code).
#include <cuda_runtime.h>

#include <cstdint>
#include <mutex>
#include <vector>

#include "volley/core/cuda/cuda_check.h"
#include "volley/loader/internal/device_memory.h"

namespace volley::loader_internal {
namespace {

// One pool per device, created on first use and kept for the life of the process (blocks may
// outlive every loader). Freed memory stays in the pool (release threshold: unlimited), so a
// steady stream of batches allocates from the driver only until it reaches its high-water mark.
cudaMemPool_t pool_for(int device) {
  static std::mutex mutex;
  static std::vector<cudaMemPool_t> pools;
  std::lock_guard lock(mutex);
  if (static_cast<size_t>(device) >= pools.size()) pools.resize(static_cast<size_t>(device) + 1);
  cudaMemPool_t& pool = pools[static_cast<size_t>(device)];
  if (pool == nullptr) {
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = cudaMemHandleTypeNone;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    VOLLEY_CUDA_CHECK(cudaMemPoolCreate(&pool, &props));
    uint64_t threshold = UINT64_MAX;
    VOLLEY_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  }
  return pool;
}

}  // namespace

namespace cuda_runtime {

void* pool_allocate(size_t bytes, int device, void* stream) {
  cuda::DeviceGuard guard(device);
  cudaMemPool_t pool = pool_for(device);
  void* pointer = nullptr;
  VOLLEY_CUDA_CHECK(cudaMallocFromPoolAsync(&pointer, bytes > 0 ? bytes : 1, pool,
                                            static_cast<cudaStream_t>(stream)));
  return pointer;
}

void pool_free(void* data, int device, void* stream) noexcept {
  int previous = 0;
  if (cudaGetDevice(&previous) != cudaSuccess) return;
  cudaSetDevice(device);
  if (cudaFreeAsync(data, static_cast<cudaStream_t>(stream)) != cudaSuccess) {
    cudaGetLastError();  // e.g. the driver shutting down at exit: nothing left to free into
  }
  cudaSetDevice(previous);
}

void* event_create(int device) {
  cuda::DeviceGuard guard(device);
  cudaEvent_t event = nullptr;
  VOLLEY_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  return event;
}

void event_destroy(void* event) noexcept { cudaEventDestroy(static_cast<cudaEvent_t>(event)); }

void event_record(void* event, int device, void* stream) {
  cuda::DeviceGuard guard(device);
  VOLLEY_CUDA_CHECK(
      cudaEventRecord(static_cast<cudaEvent_t>(event), static_cast<cudaStream_t>(stream)));
}

void event_make_wait(void* event, void* stream) {
  VOLLEY_CUDA_CHECK(
      cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), static_cast<cudaEvent_t>(event), 0));
}

void event_synchronize(void* event) {
  VOLLEY_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(event)));
}

void set_device(int device) { VOLLEY_CUDA_CHECK(cudaSetDevice(device)); }

}  // namespace cuda_runtime

}  // namespace volley::loader_internal
