// volley/loader/internal/device_memory.h — stream-ordered device memory and events for the CUDA
// loader (cuda_loader.cc, every build), without CUDA headers.
//
// The classes are implemented in device_memory.cc (every build): on the host-executor device
// (cuda_emulated(), core/cuda_device.h) a block is host memory and events do nothing (the host
// executor's work is synchronous); otherwise they call the CUDA runtime through the functions
// at the end of this header, implemented in cuda/device_memory.cc (CUDA builds) and
// device_memory_stub.cc (otherwise: they throw RuntimeError "no CUDA support").
//
// A DeviceBlock is one allocation from a per-device stream-ordered memory pool
// (cudaMallocFromPoolAsync on the producer's stream). It is freed with cudaFreeAsync on its
// *release stream* when the last handle goes: set that to the consumer's stream when the block
// is handed over, so the memory returns to the pool only after the consumer's queued work has
// run (CUDA orders the reuse by another stream after that free). The pool keeps freed memory
// for reuse (no release to the driver), so a steady stream of batches reaches a fixed footprint.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>

namespace volley::loader_internal {

class DeviceBlock {
 public:
  // `bytes` (>= 1 is allocated) on `device`, queued on `stream` (a cudaStream_t as void*). The
  // release stream starts as `stream`.
  static std::shared_ptr<DeviceBlock> allocate(size_t bytes, int device, void* stream);
  ~DeviceBlock();  // cudaFreeAsync on the release stream (unchecked: destructors do not throw)
  DeviceBlock(const DeviceBlock&) = delete;
  DeviceBlock& operator=(const DeviceBlock&) = delete;

  std::byte* data() const { return data_; }
  size_t size() const { return size_; }
  int device() const { return device_; }
  void set_release_stream(void* stream) { release_stream_.store(stream); }

 private:
  DeviceBlock() = default;
  std::byte* data_ = nullptr;
  size_t size_ = 0;
  int device_ = 0;
  bool emulated_ = false;  // host memory of the host-executor device
  std::atomic<void*> release_stream_{nullptr};
};

// A CUDA event (timing disabled) on one device. Move-only; destroyed with the object.
class DeviceEvent {
 public:
  static DeviceEvent create(int device);
  DeviceEvent() = default;
  ~DeviceEvent();
  DeviceEvent(DeviceEvent&& other) noexcept;
  DeviceEvent& operator=(DeviceEvent&& other) noexcept;

  void record(void* stream);           // cudaEventRecord
  void make_wait(void* stream) const;  // cudaStreamWaitEvent(stream, event): no host wait
  void synchronize() const;            // cudaEventSynchronize
  bool defined() const { return handle_ != nullptr || emulated_; }

 private:
  void* handle_ = nullptr;
  int device_ = 0;
  bool emulated_ = false;  // the host-executor device's event: nothing to record or wait for
};

// Makes `device` current on the calling thread (cudaSetDevice, checked; nothing when emulated).
void set_current_device(int device);

// The CUDA runtime calls behind the classes above (checked; the free and destroy are not).
namespace cuda_runtime {
void* pool_allocate(size_t bytes, int device, void* stream);    // cudaMallocFromPoolAsync
void pool_free(void* data, int device, void* stream) noexcept;  // cudaFreeAsync
void* event_create(int device);
void event_destroy(void* event) noexcept;
void event_record(void* event, int device, void* stream);
void event_make_wait(void* event, void* stream);
void event_synchronize(void* event);
void set_device(int device);
}  // namespace cuda_runtime

}  // namespace volley::loader_internal
