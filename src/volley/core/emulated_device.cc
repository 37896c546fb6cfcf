// The host-executor device's switch and memory (every build; see internal/emulated_device.h).
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>

#include "volley/core/cuda_device.h"
#include "volley/core/error.h"
#include "volley/core/internal/emulated_device.h"

namespace volley {
namespace {

constexpr int kUnset = -1;
std::atomic<int> emulated_state{kUnset};

bool from_environment() {
  const char* value = std::getenv("VOLLEY_HOST_EXECUTOR");
  return value != nullptr && std::strcmp(value, "1") == 0 && internal::cuda_emulation_built();
}

}  // namespace

bool cuda_emulated() {
  int state = emulated_state.load(std::memory_order_acquire);
  if (state == kUnset) {
    int expected = kUnset;
    emulated_state.compare_exchange_strong(expected, from_environment() ? 1 : 0);
    state = emulated_state.load(std::memory_order_acquire);
  }
  return state == 1;
}

namespace internal {

bool cuda_emulation_built() {
#if defined(VOLLEY_WITH_GPU_HOST)
  return true;
#else
  return false;
#endif
}

void set_cuda_emulated(bool on) {
  VOLLEY_REQUIRE(!on || cuda_emulation_built(), RuntimeError,
                 "the host-executor device needs a build with the host executor (the CUDA "
                 "toolkit's CCCL headers at build time, VOLLEY_GPU_HOST)");
  emulated_state.store(on ? 1 : 0, std::memory_order_release);
}

void* emulated_allocate(size_t bytes) {
  const size_t size = (std::max<size_t>(bytes, 1) + 255) & ~size_t{255};
  void* pointer = std::aligned_alloc(256, size);
  if (pointer == nullptr) throw std::bad_alloc();
  return pointer;
}

void emulated_free(void* pointer) noexcept { std::free(pointer); }

size_t host_available_memory() {
  const long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page) : 0;
}

ScopedCudaEmulation::ScopedCudaEmulation(bool on) : previous_(cuda_emulated()) {
  set_cuda_emulated(on);
}

ScopedCudaEmulation::~ScopedCudaEmulation() { emulated_state.store(previous_ ? 1 : 0); }

}  // namespace internal
}  // namespace volley
