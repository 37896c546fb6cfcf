// volley/core/internal/emulated_device.h — the host-executor devices (internal; tests and the
// GPU front ends).
//
// When cuda_emulated() (volley/core/cuda_device.h) is true, N emulated CUDA devices, ordinals
// 0 .. N-1 (one by default), stand in for GPUs: Buffer::allocate_device / allocate_pinned give
// ordinary host memory (still tagged Location::kCuda with its device / kPinnedHost, so every
// GPU branch is taken), streams and events are no-ops, cuda_copy is memmove, and the GPU front
// ends (CUDA sampler, GPU feature tiers, CUDA loader) run their kernels through the host
// executor (host_executor.h) instead of the CUDA executor. Work is synchronous, so stream order
// holds trivially. An emulated peer-access matrix says which device may read which other's
// memory (cuda_can_access_peer); the front ends check it as they check the driver's answer on
// real GPUs, so their routing and fallbacks run in CI.
//
// Turned on by the environment variable VOLLEY_HOST_EXECUTOR=1 (read at the first query), or by
// set_cuda_emulated() in C++ tests. A user never gets it by default. Only builds with the host
// executor (the CUDA toolkit's CCCL headers at build time, VOLLEY_WITH_GPU_HOST) can emulate.
// The devices come from VOLLEY_HOST_EXECUTOR_DEVICES (a count, default 1) and
// VOLLEY_HOST_EXECUTOR_PEERS (the matrix, see parse_emulated_devices; default: every pair).
//
//   internal::ScopedCudaEmulation four({.count = 4, .peer_access = {1, 1, 0, 0,  // two cliques
//                                                                   1, 1, 0, 0,
//                                                                   0, 0, 1, 1,
//                                                                   0, 0, 1, 1}});
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace volley::internal {

// The emulated devices: `count` of them; peer_access[a * count + b] != 0 when device a can read
// device b's memory (the diagonal is ignored: a device reads its own). Empty: every pair.
struct EmulatedDevices {
  int count = 1;
  std::vector<uint8_t> peer_access;
};

// Whether this build can emulate (has the host executor's kernels).
bool cuda_emulation_built();
// Turns the emulated devices on or off for the process (tests only; set it before placing any
// GPU data: memory allocated in one mode is freed as allocated, but data placed with a real
// device cannot be used emulated, nor the reverse). RuntimeError when turning it on in a build
// without the host executor; ValueError for a count outside [1, 64] or a matrix that is not
// count × count.
void set_cuda_emulated(bool on, const EmulatedDevices& devices = {});
// The emulated devices now (count 1 and an empty matrix when emulation is off).
EmulatedDevices emulated_devices();
// Whether emulated device `device` can read emulated device `peer`'s memory (true for
// device == peer); false for an ordinal out of range.
bool emulated_can_access_peer(int device, int peer);
// RuntimeError "CUDA device 5 requested, but 4 CUDA device(s) are visible (emulated)" for an
// ordinal outside the emulated devices.
void check_emulated_ordinal(int device);
// cuda_enable_peer_access on emulated devices: checks both ordinals, then RuntimeError when the
// matrix says `device` cannot read `peer` (as the driver refuses it); otherwise nothing to do.
void enable_emulated_peer_access(int device, int peer);
// The devices of VOLLEY_HOST_EXECUTOR_DEVICES / _PEERS: `count` a decimal in [1, 64] (empty:
// 1); `peers` `count` rows of `count` '0' / '1' characters separated by ',' (row a, column b:
// a reads b), or "all" / "none" (empty: "all"). ValueError naming the bad text otherwise.
EmulatedDevices parse_emulated_devices(std::string_view count, std::string_view peers);

// Host memory standing in for device or pinned memory (256-byte aligned; >= 1 byte).
void* emulated_allocate(size_t bytes);
void emulated_free(void* pointer) noexcept;
// An emulated device's free memory: the host's available physical memory (sysconf).
size_t host_available_memory();

// Turns emulation on for a scope, with `devices`, and restores the previous state (tests).
class ScopedCudaEmulation {
 public:
  explicit ScopedCudaEmulation(bool on = true, const EmulatedDevices& devices = {});
  explicit ScopedCudaEmulation(const EmulatedDevices& devices)
      : ScopedCudaEmulation(true, devices) {}
  ~ScopedCudaEmulation();
  ScopedCudaEmulation(const ScopedCudaEmulation&) = delete;
  ScopedCudaEmulation& operator=(const ScopedCudaEmulation&) = delete;

 private:
  bool previous_;
  EmulatedDevices previous_devices_;
};

}  // namespace volley::internal
