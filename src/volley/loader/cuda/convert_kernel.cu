// The CUDA loader's dtype conversion (CUDA builds only): one grid-stride loop per
// (from, to) pair, each element converted as gather_rows converts it on the CPU.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "volley/core/cuda/cuda_check.h"
#include "volley/loader/internal/cuda_convert.h"

namespace volley::loader_internal {
namespace {

constexpr int kBlock = 256;

__device__ inline float to_float(__half value) { return __half2float(value); }
__device__ inline float to_float(__nv_bfloat16 value) { return __bfloat162float(value); }
template <typename From>
__device__ inline float to_float(From value) {
  return static_cast<float>(value);
}

template <typename To>
struct Convert;
template <>
struct Convert<float> {
  template <typename From>
  __device__ static float apply(From value) {
    return to_float(value);
  }
};
template <>
struct Convert<int64_t> {
  template <typename From>
  __device__ static int64_t apply(From value) {
    return static_cast<int64_t>(value);
  }
};
template <>
struct Convert<__half> {
  __device__ static __half apply(float value) { return __float2half_rn(value); }
};
template <>
struct Convert<__nv_bfloat16> {
  __device__ static __nv_bfloat16 apply(float value) { return __float2bfloat16_rn(value); }
};

template <typename From, typename To>
__global__ void convert_kernel(const From* in, To* out, int64_t count) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    out[i] = Convert<To>::apply(in[i]);
  }
}

template <typename From, typename To>
void launch(const std::byte* in, std::byte* out, int64_t count, cudaStream_t stream) {
  const auto blocks = static_cast<unsigned>(std::min<int64_t>((count + kBlock - 1) / kBlock, 4096));
  convert_kernel<From, To><<<blocks, kBlock, 0, stream>>>(reinterpret_cast<const From*>(in),
                                                          reinterpret_cast<To*>(out), count);
  VOLLEY_CUDA_CHECK_LAUNCH("convert_kernel");
}

// Any dtype → To (float or int64).
template <typename To>
bool launch_from(const std::byte* in, DType from, std::byte* out, int64_t count,
                 cudaStream_t stream) {
  switch (from) {
    case DType::kBool:
    case DType::kUInt8:
      launch<uint8_t, To>(in, out, count, stream);
      return true;
    case DType::kInt8:
      launch<int8_t, To>(in, out, count, stream);
      return true;
    case DType::kInt16:
      launch<int16_t, To>(in, out, count, stream);
      return true;
    case DType::kInt32:
      launch<int32_t, To>(in, out, count, stream);
      return true;
    case DType::kInt64:
      launch<int64_t, To>(in, out, count, stream);
      return true;
    default:
      return false;
  }
}

}  // namespace

bool launch_convert(const std::byte* in, DType from, std::byte* out, DType to, int64_t count,
                    int device, void* stream_handle) {
  if (count == 0) return true;
  cuda::DeviceGuard guard(device);
  auto* stream = static_cast<cudaStream_t>(stream_handle);
  bool launched = false;
  if (to == DType::kFloat32) {
    if (from == DType::kFloat16) {
      launch<__half, float>(in, out, count, stream);
      launched = true;
    } else if (from == DType::kBFloat16) {
      launch<__nv_bfloat16, float>(in, out, count, stream);
      launched = true;
    } else if (from == DType::kFloat64) {
      launch<double, float>(in, out, count, stream);
      launched = true;
    } else {
      launched = launch_from<float>(in, from, out, count, stream);
    }
  } else if (to == DType::kInt64) {
    launched = from != DType::kInt64 && launch_from<int64_t>(in, from, out, count, stream);
  } else if (from == DType::kFloat32 && to == DType::kFloat16) {
    launch<float, __half>(in, out, count, stream);
    launched = true;
  } else if (from == DType::kFloat32 && to == DType::kBFloat16) {
    launch<float, __nv_bfloat16>(in, out, count, stream);
    launched = true;
  }
  return launched;
}

}  // namespace volley::loader_internal
