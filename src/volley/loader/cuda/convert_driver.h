// volley/loader/cuda/convert_driver.h — the CUDA loader's element type conversion, written once
// for both executors (core/internal/executor.h): convert_kernel.cu runs it with the CUDA
// executor, convert_kernel_host.cc with the host executor (the host-executor device and the
// gpu-host tests).
//
// One item converts one element, as gather_rows converts it on the CPU (feature/gather.h):
// any dtype → float32, integer or bool → int64, float32 → float16 / bfloat16, with the rounding
// of core/half.h (round to nearest even; NaN and infinity kept).
#pragma once

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

#include <cstddef>
#include <cstdint>

#include "volley/core/dtype.h"
#include "volley/core/half.h"
#include "volley/core/host_device.h"

namespace volley::loader_internal {

// 16-bit floats as stored: their bits.
struct Half {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};

// On a GPU the 16-bit conversions are the hardware's (one cvt instruction, round to nearest
// even, as before this kernel was shared); on the host core/half.h's, which the CPU gather uses
// and which give the same bits for every finite value and infinity (NaN payloads may differ).
VOLLEY_HOST_DEVICE inline float to_float(Half value) {
#if defined(__CUDA_ARCH__)
  return __half2float(__ushort_as_half(value.bits));
#else
  return half_to_float(value.bits);
#endif
}
VOLLEY_HOST_DEVICE inline float to_float(BFloat16 value) {
#if defined(__CUDA_ARCH__)
  return __bfloat162float(__ushort_as_bfloat16(value.bits));
#else
  return bfloat16_to_float(value.bits);
#endif
}
VOLLEY_HOST_DEVICE inline Half to_half(float value) {
#if defined(__CUDA_ARCH__)
  return {__half_as_ushort(__float2half_rn(value))};
#else
  return {float_to_half(value)};
#endif
}
VOLLEY_HOST_DEVICE inline BFloat16 to_bfloat16(float value) {
#if defined(__CUDA_ARCH__)
  return {__bfloat16_as_ushort(__float2bfloat16_rn(value))};
#else
  return {float_to_bfloat16(value)};
#endif
}
template <typename From>
VOLLEY_HOST_DEVICE inline float to_float(From value) {
  return static_cast<float>(value);
}

template <typename To>
struct Convert;
template <>
struct Convert<float> {
  template <typename From>
  VOLLEY_HOST_DEVICE static float apply(From value) {
    return to_float(value);
  }
};
template <>
struct Convert<int64_t> {
  template <typename From>
  VOLLEY_HOST_DEVICE static int64_t apply(From value) {
    return static_cast<int64_t>(value);
  }
};
template <>
struct Convert<Half> {
  VOLLEY_HOST_DEVICE static Half apply(float value) { return to_half(value); }
};
template <>
struct Convert<BFloat16> {
  VOLLEY_HOST_DEVICE static BFloat16 apply(float value) { return to_bfloat16(value); }
};

// out[i] = convert(in[i]).
template <typename From, typename To>
struct ConvertBody {
  static constexpr const char* kName = "convert dtype";
  const From* in;
  To* out;
  VOLLEY_HOST_DEVICE void operator()(int64_t i) const { out[i] = Convert<To>::apply(in[i]); }
};

template <typename From, typename To, class Executor>
bool launch_body(Executor& executor, const std::byte* in, std::byte* out, int64_t count) {
  executor.for_each(
      count, ConvertBody<From, To>{reinterpret_cast<const From*>(in), reinterpret_cast<To*>(out)});
  return true;
}

// Integer or bool → To (float or int64).
template <typename To, class Executor>
bool launch_from_integer(Executor& executor, const std::byte* in, DType from, std::byte* out,
                         int64_t count) {
  switch (from) {
    case DType::kBool:
    case DType::kUInt8:
      return launch_body<uint8_t, To>(executor, in, out, count);
    case DType::kInt8:
      return launch_body<int8_t, To>(executor, in, out, count);
    case DType::kInt16:
      return launch_body<int16_t, To>(executor, in, out, count);
    case DType::kInt32:
      return launch_body<int32_t, To>(executor, in, out, count);
    case DType::kInt64:
      return launch_body<int64_t, To>(executor, in, out, count);
    default:
      return false;
  }
}

// Queues out[i] = convert(in[i]) for i < count on `executor`; false (nothing queued) for a pair
// that is not one of the conversions above.
template <class Executor>
bool convert_with(Executor& executor, const std::byte* in, DType from, std::byte* out, DType to,
                  int64_t count) {
  if (to == DType::kFloat32) {
    if (from == DType::kFloat16) return launch_body<Half, float>(executor, in, out, count);
    if (from == DType::kBFloat16) return launch_body<BFloat16, float>(executor, in, out, count);
    if (from == DType::kFloat64) return launch_body<double, float>(executor, in, out, count);
    return launch_from_integer<float>(executor, in, from, out, count);
  }
  if (to == DType::kInt64) {
    return from != DType::kInt64 && launch_from_integer<int64_t>(executor, in, from, out, count);
  }
  if (from == DType::kFloat32 && to == DType::kFloat16)
    return launch_body<float, Half>(executor, in, out, count);
  if (from == DType::kFloat32 && to == DType::kBFloat16)
    return launch_body<float, BFloat16>(executor, in, out, count);
  return false;
}

}  // namespace volley::loader_internal
