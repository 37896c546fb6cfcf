// CPU-only build: every CUDA location is a clear error, not a link failure.
#include "volley/core/error.h"
#include "volley/core/internal/cuda_memory.h"

namespace volley::internal {
namespace {
[[noreturn]] void no_cuda(const char* what) {
  throw RuntimeError(
      fmt::format("{} needs CUDA, but this Volley was built without CUDA "
                  "(VOLLEY_CUDA=OFF or no nvcc at build time)",
                  what));
}
}  // namespace

bool cuda_available() { return false; }
void* cuda_allocate_pinned(size_t) { no_cuda("pinned host memory"); }
void cuda_free_pinned(void*) noexcept {}
void* cuda_allocate_device(size_t, int) { no_cuda("device memory"); }
void cuda_free_device(void*, int) noexcept {}
void cuda_ipc_get_handle(void*, int, unsigned char*) { no_cuda("CUDA IPC"); }
void* cuda_ipc_open(const unsigned char*, int) { no_cuda("CUDA IPC"); }
void cuda_ipc_close(void*, int) noexcept {}
void cuda_host_register(void*, size_t) { no_cuda("registering pinned host memory"); }
void cuda_host_unregister(void*) noexcept {}

}  // namespace volley::internal
