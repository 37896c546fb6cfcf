// DeviceBlock and DeviceEvent (every build): host memory and no-op events on the host-executor
// device, the CUDA runtime (cuda/device_memory.cc; the stub throws without CUDA) otherwise.
#include <utility>

#include "volley/core/cuda_device.h"
#include "volley/core/internal/emulated_device.h"
#include "volley/loader/internal/device_memory.h"

namespace volley::loader_internal {

std::shared_ptr<DeviceBlock> DeviceBlock::allocate(size_t bytes, int device, void* stream) {
  std::shared_ptr<DeviceBlock> block(new DeviceBlock());
  block->emulated_ = cuda_emulated();
  void* pointer = block->emulated_ ? internal::emulated_allocate(bytes)
                                   : cuda_runtime::pool_allocate(bytes, device, stream);
  block->data_ = static_cast<std::byte*>(pointer);
  block->size_ = bytes;
  block->device_ = device;
  block->release_stream_.store(stream);
  return block;
}

DeviceBlock::~DeviceBlock() {
  if (data_ == nullptr) return;
  if (emulated_) {
    internal::emulated_free(data_);
  } else {
    cuda_runtime::pool_free(data_, device_, release_stream_.load());
  }
}

DeviceEvent DeviceEvent::create(int device) {
  DeviceEvent result;
  result.device_ = device;
  result.emulated_ = cuda_emulated();
  if (!result.emulated_) result.handle_ = cuda_runtime::event_create(device);
  return result;
}

DeviceEvent::~DeviceEvent() {
  if (handle_ != nullptr) cuda_runtime::event_destroy(handle_);
}

DeviceEvent::DeviceEvent(DeviceEvent&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)),
      device_(other.device_),
      emulated_(std::exchange(other.emulated_, false)) {}

DeviceEvent& DeviceEvent::operator=(DeviceEvent&& other) noexcept {
  if (this != &other) {
    if (handle_ != nullptr) cuda_runtime::event_destroy(handle_);
    handle_ = std::exchange(other.handle_, nullptr);
    device_ = other.device_;
    emulated_ = std::exchange(other.emulated_, false);
  }
  return *this;
}

void DeviceEvent::record(void* stream) {
  if (handle_ != nullptr) cuda_runtime::event_record(handle_, device_, stream);
}

void DeviceEvent::make_wait(void* stream) const {
  if (handle_ != nullptr) cuda_runtime::event_make_wait(handle_, stream);
}

void DeviceEvent::synchronize() const {
  if (handle_ != nullptr) cuda_runtime::event_synchronize(handle_);
}

void set_current_device(int device) {
  if (!cuda_emulated()) cuda_runtime::set_device(device);
}

}  // namespace volley::loader_internal
