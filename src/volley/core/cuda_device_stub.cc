// CPU-only build: cuda_device.h reports no devices; everything else is a clear error.
#include "volley/core/cuda_device.h"

#include "volley/core/error.h"

namespace volley {
namespace {
[[noreturn]] void no_cuda(const char* what) {
  throw RuntimeError(fmt::format(
      "{}: this build of Volley has no CUDA support (built with VOLLEY_CUDA=OFF or without "
      "nvcc); rebuild with CUDA to use a GPU",
      what));
}
}  // namespace

bool cuda_built() { return false; }
int cuda_device_count() { return 0; }
std::string cuda_device_name(int) { no_cuda("cuda_device_name"); }
CudaStream CudaStream::create(int) { no_cuda("CudaStream::create"); }
CudaStream::~CudaStream() = default;
CudaStream::CudaStream(CudaStream&& other) noexcept
    : handle_(other.handle_), device_(other.device_) {}
CudaStream& CudaStream::operator=(CudaStream&& other) noexcept {
  handle_ = other.handle_;
  device_ = other.device_;
  return *this;
}
void CudaStream::synchronize() const { no_cuda("CudaStream::synchronize"); }
void cuda_synchronize(void*) { no_cuda("cuda_synchronize"); }
void cuda_copy(void*, const void*, size_t, void*) { no_cuda("cuda_copy"); }
double measure_device_copy_bandwidth(int, size_t, int) { no_cuda("measure_device_copy_bandwidth"); }
double measure_pinned_upload_bandwidth(int, size_t, int) {
  no_cuda("measure_pinned_upload_bandwidth");
}

}  // namespace volley
