// CUDA build: cuda_device.h (plain C++ on the CUDA runtime).
#include "volley/core/cuda_device.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "volley/core/buffer.h"
#include "volley/core/cuda/cuda_check.h"
#include "volley/core/error.h"
#include "volley/core/internal/emulated_device.h"

namespace volley {

bool cuda_built() { return true; }

int cuda_device_count() {
  if (cuda_emulated()) return internal::emulated_devices().count;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

std::string cuda_device_name(int device) {
  if (cuda_emulated()) return "Volley host executor (emulated CUDA device)";
  cudaDeviceProp properties{};
  VOLLEY_CUDA_CHECK(cudaGetDeviceProperties(&properties, device));
  return properties.name;
}

bool cuda_can_access_peer(int device, int peer) {
  if (cuda_emulated()) {
    internal::check_emulated_ordinal(device);
    internal::check_emulated_ordinal(peer);
    return internal::emulated_can_access_peer(device, peer);
  }
  if (device == peer) return true;
  int can = 0;
  VOLLEY_CUDA_CHECK(cudaDeviceCanAccessPeer(&can, device, peer));
  return can != 0;
}

void cuda_enable_peer_access(int device, int peer) {
  if (cuda_emulated()) return internal::enable_emulated_peer_access(device, peer);
  if (device == peer) return;
  VOLLEY_REQUIRE(cuda_can_access_peer(device, peer), RuntimeError,
                 "cuda:{} cannot read cuda:{}'s memory (no peer access between them)", device,
                 peer);
  cuda::DeviceGuard guard(device);
  const cudaError_t status = cudaDeviceEnablePeerAccess(peer, 0);
  if (status == cudaErrorPeerAccessAlreadyEnabled) {
    cudaGetLastError();  // enabled before: what this call promises
    return;
  }
  VOLLEY_CUDA_CHECK(status);
}

size_t cuda_free_memory(int device) {
  if (cuda_emulated()) return internal::host_available_memory();
  cuda::DeviceGuard guard(device);
  size_t free = 0, total = 0;
  VOLLEY_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  return free;
}

CudaStream CudaStream::create(int device) {
  if (cuda_emulated()) {  // no stream: the host executor's work is synchronous
    CudaStream result;
    result.device_ = device;
    return result;
  }
  cuda::DeviceGuard guard(device);
  cudaStream_t stream = nullptr;
  VOLLEY_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  CudaStream result;
  result.handle_ = stream;
  result.device_ = device;
  return result;
}

CudaStream::~CudaStream() {
  if (handle_ != nullptr) cudaStreamDestroy(static_cast<cudaStream_t>(handle_));
}

CudaStream::CudaStream(CudaStream&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)), device_(other.device_) {}

CudaStream& CudaStream::operator=(CudaStream&& other) noexcept {
  if (this != &other) {
    if (handle_ != nullptr) cudaStreamDestroy(static_cast<cudaStream_t>(handle_));
    handle_ = std::exchange(other.handle_, nullptr);
    device_ = other.device_;
  }
  return *this;
}

void CudaStream::synchronize() const { cuda_synchronize(handle_); }

void cuda_synchronize(void* stream) {
  if (cuda_emulated()) return;
  VOLLEY_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)));
}

void cuda_copy(void* destination, const void* source, size_t bytes, void* stream) {
  if (bytes == 0) return;
  if (cuda_emulated()) {
    std::memmove(destination, source, bytes);
    return;
  }
  VOLLEY_CUDA_CHECK(cudaMemcpyAsync(destination, source, bytes, cudaMemcpyDefault,
                                    static_cast<cudaStream_t>(stream)));
}

namespace {

double measure_copy(int device, const Buffer& destination, const Buffer& source, size_t bytes,
                    int repeats) {
  VOLLEY_REQUIRE(bytes > 0 && repeats > 0, ValueError,
                 "copy probe needs bytes > 0 and repeats > 0, got {} and {}", bytes, repeats);
  cuda::DeviceGuard guard(device);
  CudaStream stream = CudaStream::create(device);
  auto* handle = static_cast<cudaStream_t>(stream.handle());
  cudaEvent_t start = nullptr, stop = nullptr;
  VOLLEY_CUDA_CHECK(cudaEventCreate(&start));
  VOLLEY_CUDA_CHECK(cudaEventCreate(&stop));
  float best_ms = 0;
  try {
    // One untimed copy first (first-touch, clocks).
    VOLLEY_CUDA_CHECK(
        cudaMemcpyAsync(destination.data(), source.data(), bytes, cudaMemcpyDefault, handle));
    for (int r = 0; r < repeats; ++r) {
      VOLLEY_CUDA_CHECK(cudaEventRecord(start, handle));
      VOLLEY_CUDA_CHECK(
          cudaMemcpyAsync(destination.data(), source.data(), bytes, cudaMemcpyDefault, handle));
      VOLLEY_CUDA_CHECK(cudaEventRecord(stop, handle));
      VOLLEY_CUDA_CHECK(cudaEventSynchronize(stop));
      float ms = 0;
      VOLLEY_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
      best_ms = r == 0 ? ms : std::min(best_ms, ms);
    }
  } catch (...) {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    throw;
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return static_cast<double>(bytes) / (static_cast<double>(best_ms) * 1e-3);
}

}  // namespace

double measure_device_copy_bandwidth(int device, size_t bytes, int repeats) {
  const Buffer source = Buffer::allocate_device(bytes, device);
  const Buffer destination = Buffer::allocate_device(bytes, device);
  return measure_copy(device, destination, source, bytes, repeats);
}

double measure_pinned_upload_bandwidth(int device, size_t bytes, int repeats) {
  const Buffer source = Buffer::allocate_pinned(bytes);
  const Buffer destination = Buffer::allocate_device(bytes, device);
  return measure_copy(device, destination, source, bytes, repeats);
}

}  // namespace volley
