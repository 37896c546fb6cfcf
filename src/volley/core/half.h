// volley/core/half.h — float16 / bfloat16 <-> float32 conversions (host and device).
//
// Round-to-nearest-even, NaN and infinity preserved, subnormals handled. Bit-exact with numpy's
// float16 and torch's bfloat16 conversions.
#pragma once

#include <cstdint>
#include <cstring>

#include "volley/core/host_device.h"

namespace volley {

VOLLEY_HOST_DEVICE inline uint32_t float_bits(float value) {
  uint32_t bits;
  memcpy(&bits, &value, sizeof(bits));
  return bits;
}

VOLLEY_HOST_DEVICE inline float bits_float(uint32_t bits) {
  float value;
  memcpy(&value, &bits, sizeof(value));
  return value;
}

VOLLEY_HOST_DEVICE inline float half_to_float(uint16_t half) {
  const uint32_t sign = static_cast<uint32_t>(half & 0x8000u) << 16;
  const uint32_t exponent = (half >> 10) & 0x1fu;
  uint32_t mantissa = half & 0x3ffu;
  if (exponent == 0x1f) return bits_float(sign | 0x7f800000u | (mantissa << 13));  // inf / NaN
  if (exponent == 0) {
    if (mantissa == 0) return bits_float(sign);  // ±0
    // Subnormal: value = mantissa * 2^-24.
    const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
    return sign ? -magnitude : magnitude;
  }
  return bits_float(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

VOLLEY_HOST_DEVICE inline uint16_t float_to_half(float value) {
  const uint32_t bits = float_bits(value);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t abs_bits = bits & 0x7fffffffu;
  if (abs_bits >= 0x7f800000u) {  // inf or NaN
    return sign | 0x7c00u | (abs_bits > 0x7f800000u ? 0x200u : 0u);
  }
  if (abs_bits >= 0x477ff000u) return sign | 0x7c00u;  // rounds to >= 65520: overflow to inf
  if (abs_bits < 0x38800000u) {                        // below the smallest normal half
    // Round-to-nearest-even on (|x| / 2^-24) using float arithmetic, which is exact here.
    const float scaled = bits_float(abs_bits) * 16777216.0f;  // * 2^24
    uint32_t integer = static_cast<uint32_t>(scaled);
    const float remainder = scaled - static_cast<float>(integer);
    if (remainder > 0.5f || (remainder == 0.5f && (integer & 1u))) ++integer;
    return sign | static_cast<uint16_t>(integer);
  }
  const uint32_t rounding = 0xfffu + ((abs_bits >> 13) & 1u);
  return sign | static_cast<uint16_t>((abs_bits + rounding - 0x38000000u) >> 13);
}

VOLLEY_HOST_DEVICE inline float bfloat16_to_float(uint16_t value) {
  return bits_float(static_cast<uint32_t>(value) << 16);
}

VOLLEY_HOST_DEVICE inline uint16_t float_to_bfloat16(float value) {
  const uint32_t bits = float_bits(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  const uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

}  // namespace volley
