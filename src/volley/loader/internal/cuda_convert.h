// volley/loader/internal/cuda_convert.h — element type conversion on a GPU, for the CUDA loader's
// feature dtype (cuda_loader.cc, every build). One set of bodies (cuda/convert_driver.h) run by
//   * the CUDA executor: launch_convert (cuda/convert_kernel.cu in CUDA builds,
//     cuda_convert_stub.cc otherwise, which throws RuntimeError "no CUDA support");
//   * the host executor: launch_host_convert (cuda/convert_kernel_host.cc, builds with the CUDA
//     toolkit's CCCL headers, VOLLEY_WITH_GPU_HOST), on host memory (the host-executor device).
//
// The conversions of gather_rows (feature/gather.h), with its rounding: any dtype → float32
// (exact for integers up to 2^24, bool, int8/uint8/int16, float16, bfloat16; float64 and large
// integers round to nearest), integer or bool → int64, float32 → float16 / bfloat16 (round to
// nearest even).
#pragma once

#include <cstddef>
#include <cstdint>

#include "volley/core/dtype.h"
#include "volley/core/internal/host_executor.h"

namespace volley::loader_internal {

// Queues out[i] = convert(in[i]) for i < count on `stream` (a cudaStream_t as void*), on CUDA
// device `device`. `in` and `out` are device memory (or pinned). Returns false, queuing
// nothing, for a pair that is not one of the above (the caller checks gather_supports first).
bool launch_convert(const std::byte* in, DType from, std::byte* out, DType to, int64_t count,
                    int device, void* stream);

// The same on the host executor, synchronously; `in` and `out` are host memory.
bool launch_host_convert(const std::byte* in, DType from, std::byte* out, DType to, int64_t count,
                         const internal::HostExecutorOptions& options = {});

}  // namespace volley::loader_internal
