// CPU-only build: no CUDA runtime behind DeviceBlock and DeviceEvent; asking for it is a clear
// error (the host-executor device, device_memory.cc, needs none of these).
#include "volley/core/error.h"
#include "volley/loader/internal/device_memory.h"

namespace volley::loader_internal::cuda_runtime {
namespace {
[[noreturn]] void no_cuda() {
  throw RuntimeError(
      "CUDA loader: this build of Volley has no CUDA support (built with VOLLEY_CUDA=OFF or "
      "without nvcc); use the CPU loader, or rebuild with CUDA");
}
}  // namespace

void* pool_allocate(size_t, int, void*) { no_cuda(); }
void pool_free(void*, int, void*) noexcept {}
void* event_create(int) { no_cuda(); }
void event_destroy(void*) noexcept {}
void event_record(void*, int, void*) { no_cuda(); }
void event_make_wait(void*, void*) { no_cuda(); }
void event_synchronize(void*) { no_cuda(); }
void set_device(int) { no_cuda(); }

}  // namespace volley::loader_internal::cuda_runtime
