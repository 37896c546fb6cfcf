// CPU-only build: cuda_device.h reports no devices; everything else is a clear error.
#include "volley/core/cuda_device.h"

#include <cstring>

#include "volley/core/error.h"
#include "volley/core/internal/emulated_device.h"

namespace volley {
namespace {
[[noreturn]] void no_cuda(const char* what) {
  throw RuntimeError(fmt::format(
      "{}: this build of Volley has no CUDA support (built with VOLLEY_CUDA=OFF or without "
      "nvcc); rebuild with CUDA to use a GPU",
      what));
}
}  // namespace

// The host-executor device (cuda_emulated()) works here too: it needs no CUDA runtime.
bool cuda_built() { return cuda_emulated(); }
int cuda_device_count() { return cuda_emulated() ? internal::emulated_devices().count : 0; }
std::string cuda_device_name(int) {
  if (cuda_emulated()) return "Volley host executor (emulated CUDA device)";
  no_cuda("cuda_device_name");
}
bool cuda_can_access_peer(int device, int peer) {
  if (!cuda_emulated()) no_cuda("cuda_can_access_peer");
  internal::check_emulated_ordinal(device);
  internal::check_emulated_ordinal(peer);
  return internal::emulated_can_access_peer(device, peer);
}
void cuda_enable_peer_access(int device, int peer) {
  if (!cuda_emulated()) no_cuda("cuda_enable_peer_access");
  internal::enable_emulated_peer_access(device, peer);
}
size_t cuda_free_memory(int) {
  if (!cuda_emulated()) no_cuda("cuda_free_memory");
  return internal::host_available_memory();
}
CudaStream CudaStream::create(int device) {
  if (!cuda_emulated()) no_cuda("CudaStream::create");
  CudaStream result;  // no stream: the host executor's work is synchronous
  result.device_ = device;
  return result;
}
CudaStream::~CudaStream() = default;
CudaStream::CudaStream(CudaStream&& other) noexcept
    : handle_(other.handle_), device_(other.device_) {}
CudaStream& CudaStream::operator=(CudaStream&& other) noexcept {
  handle_ = other.handle_;
  device_ = other.device_;
  return *this;
}
void CudaStream::synchronize() const {
  if (!cuda_emulated()) no_cuda("CudaStream::synchronize");
}
void cuda_synchronize(void*) {
  if (!cuda_emulated()) no_cuda("cuda_synchronize");
}
void cuda_copy(void* destination, const void* source, size_t bytes, void*) {
  if (!cuda_emulated()) no_cuda("cuda_copy");
  if (bytes > 0) std::memmove(destination, source, bytes);
}
double measure_device_copy_bandwidth(int, size_t, int) { no_cuda("measure_device_copy_bandwidth"); }
double measure_pinned_upload_bandwidth(int, size_t, int) {
  no_cuda("measure_pinned_upload_bandwidth");
}

}  // namespace volley
