// CPU-only build: no device memory and no events; asking for them is a clear error.
#include "volley/core/error.h"
#include "volley/loader/internal/device_memory.h"

namespace volley::loader_internal {
namespace {
[[noreturn]] void no_cuda() {
  throw RuntimeError(
      "CUDA loader: this build of Volley has no CUDA support (built with VOLLEY_CUDA=OFF or "
      "without nvcc); use the CPU loader, or rebuild with CUDA");
}
}  // namespace

std::shared_ptr<DeviceBlock> DeviceBlock::allocate(size_t, int, void*) { no_cuda(); }
DeviceBlock::~DeviceBlock() = default;
DeviceEvent DeviceEvent::create(int) { no_cuda(); }
DeviceEvent::~DeviceEvent() = default;
DeviceEvent::DeviceEvent(DeviceEvent&& other) noexcept
    : handle_(other.handle_), device_(other.device_) {
  other.handle_ = nullptr;
}
DeviceEvent& DeviceEvent::operator=(DeviceEvent&& other) noexcept {
  handle_ = other.handle_;
  device_ = other.device_;
  other.handle_ = nullptr;
  return *this;
}
void DeviceEvent::record(void*) { no_cuda(); }
void DeviceEvent::make_wait(void*) const { no_cuda(); }
void DeviceEvent::synchronize() const { no_cuda(); }
void set_current_device(int) { no_cuda(); }

}  // namespace volley::loader_internal
