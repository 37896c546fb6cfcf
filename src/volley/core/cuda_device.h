// volley/core/cuda_device.h — CUDA devices, streams and copy probes without CUDA headers.
//
// For code outside cuda/ folders (the CLI, loaders, tests) that needs a stream or a device
// count. Streams cross Volley's APIs as an opaque `void*` holding a cudaStream_t; nullptr is
// the legacy default stream.
//
//   if (cuda_device_count() > 0) {
//     CudaStream stream = CudaStream::create(/*device=*/0);
//     sampler.sample(seeds, batch, stream.handle());
//     stream.synchronize();
//   }
//
// In a build without CUDA, cuda_device_count() is 0 and everything else throws RuntimeError
// ("this build of Volley has no CUDA support"). CUDA failures throw RuntimeError with the CUDA
// error string and the file:line of the call.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace volley {

// Whether this build of Volley has CUDA support (VOLLEY_CUDA), or the host-executor device
// stands in for one (cuda_emulated()).
bool cuda_built();
// Visible CUDA devices; 0 without CUDA support or when the driver reports none; the emulated
// devices' count (1 unless a test asks for more) when cuda_emulated(). Throws only as
// cuda_emulated() does.
int cuda_device_count();
// Whether host-executor devices stand in for CUDA devices in this process: only when the
// environment variable VOLLEY_HOST_EXECUTOR=1 was set (read once, at the first query) in a
// build with the host executor, for testing the GPU paths on a machine without a GPU. Then
// "device" and "pinned" memory are host memory, streams and events do nothing, cuda_copy is a
// memmove, and the GPU kernels run on host threads (core/internal/emulated_device.h; one
// device unless VOLLEY_HOST_EXECUTOR_DEVICES / _PEERS say more). Never the default; throws
// only ValueError for malformed VOLLEY_HOST_EXECUTOR_DEVICES / _PEERS.
bool cuda_emulated();
// "NVIDIA H100 80GB HBM3" for device `device`.
std::string cuda_device_name(int device);
// Whether a kernel on `device` can read `peer`'s memory once peer access is enabled
// (cudaDeviceCanAccessPeer; true for device == peer; the emulated peer-access matrix when
// cuda_emulated()). RuntimeError without CUDA support or for a failed query or a bad ordinal.
bool cuda_can_access_peer(int device, int peer);
// Lets kernels on `device` read `peer`'s memory (cudaDeviceEnablePeerAccess; process-wide,
// idempotent; a no-op for device == peer). RuntimeError when cuda_can_access_peer is false.
void cuda_enable_peer_access(int device, int peer);
// `devices` grouped into peer-access cliques: in each, every device can read every other's
// memory. Greedy in list order: a device joins the first clique whose every member it can read
// and be read by, else starts its own, so devices without peer access are cliques of one. The
// devices must be distinct (not checked here); RuntimeError as cuda_can_access_peer.
//   cuda_peer_cliques({0, 1, 2, 3}) == {{0, 1}, {2, 3}}   // two NVLink pairs, no link between
std::vector<std::vector<int>> cuda_peer_cliques(std::span<const int> devices);
// Free memory of `device` in bytes now (cudaMemGetInfo); the host's available memory for the
// emulated device. RuntimeError without CUDA support or for a failed query.
size_t cuda_free_memory(int device);

// An owned non-blocking CUDA stream on one device. Move-only.
class CudaStream {
 public:
  CudaStream() = default;  // no stream: handle() == nullptr (the legacy default stream)
  static CudaStream create(int device);
  ~CudaStream();
  CudaStream(CudaStream&& other) noexcept;
  CudaStream& operator=(CudaStream&& other) noexcept;
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;

  void* handle() const { return handle_; }
  int device() const { return device_; }
  // Waits for all work queued on the stream; throws RuntimeError for an error it reports.
  void synchronize() const;

 private:
  void* handle_ = nullptr;
  int device_ = 0;
};

// Waits for `stream` (a cudaStream_t as void*, nullptr = default stream).
void cuda_synchronize(void* stream);
// cudaMemcpyAsync(destination, source, bytes, cudaMemcpyDefault, stream): any direction
// between host, pinned and device memory (unified addressing). Checked.
void cuda_copy(void* destination, const void* source, size_t bytes, void* stream);

// Copy bandwidth in bytes per second (bytes copied / time, best of `repeats` timed copies of
// `bytes`, CUDA events on a private stream) — the reference figures `volley bench` prints next
// to its own: device-to-device within `device`, and pinned host memory to `device`.
double measure_device_copy_bandwidth(int device, size_t bytes, int repeats = 5);
double measure_pinned_upload_bandwidth(int device, size_t bytes, int repeats = 5);

}  // namespace volley
