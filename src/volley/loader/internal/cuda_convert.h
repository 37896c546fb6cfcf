// volley/loader/internal/cuda_convert.h — element type conversion on a GPU, for the CUDA loader's
// feature dtype (cuda_loader.cc, every build). Implemented in cuda/convert_kernel.cu (CUDA
// builds) and cuda_convert_stub.cc (otherwise: throws RuntimeError "no CUDA support").
//
// The conversions of gather_rows (feature/gather.h), with its rounding: any dtype → float32
// (exact for integers up to 2^24, bool, int8/uint8/int16, float16, bfloat16; float64 and large
// integers round to nearest), integer or bool → int64, float32 → float16 / bfloat16 (round to
// nearest even).
#pragma once

#include <cstddef>
#include <cstdint>

#include "volley/core/dtype.h"

namespace volley::loader_internal {

// Queues out[i] = convert(in[i]) for i < count on `stream` (a cudaStream_t as void*), on CUDA
// device `device`. `in` and `out` are device memory (or pinned). Returns false, queuing
// nothing, for a pair that is not one of the above (the caller checks gather_supports first).
bool launch_convert(const std::byte* in, DType from, std::byte* out, DType to, int64_t count,
                    int device, void* stream);

}  // namespace volley::loader_internal
