// volley/core/internal/cuda_memory.h — the CUDA allocation seam of Buffer.
//
// Implemented in core/cuda/cuda_memory.cc when built with CUDA, and by stubs that throw
// volley::RuntimeError ("built without CUDA") otherwise. Every CUDA call is checked.
#pragma once

#include <cstddef>

namespace volley::internal {

bool cuda_available();  // built with CUDA and at least one device visible
void* cuda_allocate_pinned(size_t bytes);
void cuda_free_pinned(void* pointer) noexcept;
void* cuda_allocate_device(size_t bytes, int device);
void cuda_free_device(void* pointer, int device) noexcept;

}  // namespace volley::internal
