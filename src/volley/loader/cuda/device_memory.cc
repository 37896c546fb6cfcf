// CUDA build: stream-ordered device memory from one pool per device, and events (plain C++
// against the CUDA runtime; no device code).
#include <cuda_runtime.h>

#include <cstdint>
#include <mutex>
#include <utility>
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

std::shared_ptr<DeviceBlock> DeviceBlock::allocate(size_t bytes, int device, void* stream) {
  cuda::DeviceGuard guard(device);
  cudaMemPool_t pool = pool_for(device);
  std::shared_ptr<DeviceBlock> block(new DeviceBlock());
  void* pointer = nullptr;
  const size_t size = bytes > 0 ? bytes : 1;
  VOLLEY_CUDA_CHECK(
      cudaMallocFromPoolAsync(&pointer, size, pool, static_cast<cudaStream_t>(stream)));
  block->data_ = static_cast<std::byte*>(pointer);
  block->size_ = bytes;
  block->device_ = device;
  block->release_stream_.store(stream);
  return block;
}

DeviceBlock::~DeviceBlock() {
  if (data_ == nullptr) return;
  int previous = 0;
  if (cudaGetDevice(&previous) != cudaSuccess) return;
  cudaSetDevice(device_);
  if (cudaFreeAsync(data_, static_cast<cudaStream_t>(release_stream_.load())) != cudaSuccess) {
    cudaGetLastError();  // e.g. the driver shutting down at exit: nothing left to free into
  }
  cudaSetDevice(previous);
}

DeviceEvent DeviceEvent::create(int device) {
  cuda::DeviceGuard guard(device);
  cudaEvent_t event = nullptr;
  VOLLEY_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  DeviceEvent result;
  result.handle_ = event;
  result.device_ = device;
  return result;
}

DeviceEvent::~DeviceEvent() {
  if (handle_ != nullptr) cudaEventDestroy(static_cast<cudaEvent_t>(handle_));
}

DeviceEvent::DeviceEvent(DeviceEvent&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)), device_(other.device_) {}

DeviceEvent& DeviceEvent::operator=(DeviceEvent&& other) noexcept {
  if (this != &other) {
    if (handle_ != nullptr) cudaEventDestroy(static_cast<cudaEvent_t>(handle_));
    handle_ = std::exchange(other.handle_, nullptr);
    device_ = other.device_;
  }
  return *this;
}

void DeviceEvent::record(void* stream) {
  cuda::DeviceGuard guard(device_);
  VOLLEY_CUDA_CHECK(
      cudaEventRecord(static_cast<cudaEvent_t>(handle_), static_cast<cudaStream_t>(stream)));
}

void DeviceEvent::make_wait(void* stream) const {
  VOLLEY_CUDA_CHECK(
      cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), static_cast<cudaEvent_t>(handle_), 0));
}

void DeviceEvent::synchronize() const {
  VOLLEY_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(handle_)));
}

void set_current_device(int device) { VOLLEY_CUDA_CHECK(cudaSetDevice(device)); }

}  // namespace volley::loader_internal
