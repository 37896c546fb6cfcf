// volley/core/internal/atomics.h — the atomics of kernel bodies (internal), on libcu++'s
// ::cuda::atomic_ref: device atomics under nvcc, std-style atomics on host memory under g++ (the
// host executor, and ThreadSanitizer, see them as atomics). Relaxed order, as atomicCAS and
// atomicMin: a later launch (or read-back) orders everything a launch wrote.
//
// Needs the CCCL headers of the CUDA toolkit (nvcc finds them itself; CMake adds
// <toolkit>/include/cccl for g++ builds of the host executor).
#pragma once

#include <cuda/atomic>

#include "volley/core/host_device.h"

namespace volley::internal {

template <typename T>
using DeviceAtomic = ::cuda::atomic_ref<T, ::cuda::thread_scope_device>;

// Stores `desired` at *address if it holds `expected`; returns the value it held before.
template <typename T>
VOLLEY_HOST_DEVICE inline T atomic_compare_exchange(T* address, T expected, T desired) {
  DeviceAtomic<T>(*address).compare_exchange_strong(expected, desired,
                                                    ::cuda::memory_order_relaxed);
  return expected;  // on failure compare_exchange_strong loaded the current value into it
}

// *address = min(*address, value).
template <typename T>
VOLLEY_HOST_DEVICE inline void atomic_min(T* address, T value) {
  DeviceAtomic<T>(*address).fetch_min(value, ::cuda::memory_order_relaxed);
}

// A relaxed atomic load (for words another item of the same launch may write).
template <typename T>
VOLLEY_HOST_DEVICE inline T atomic_load(const T* address) {
  return DeviceAtomic<T>(*const_cast<T*>(address)).load(::cuda::memory_order_relaxed);
}

}  // namespace volley::internal
