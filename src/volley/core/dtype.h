// volley/core/dtype.h — element types of Volley arrays.
//
// Names follow numpy/torch ("float32", "int64"); `npy_descr` gives the little-endian `.npy`
// descriptor ("<f4"). bfloat16 has no numpy descriptor: arrays of it cannot be saved as `.npy`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace volley {

enum class DType : uint8_t {
  kBool,
  kInt8,
  kUInt8,
  kInt16,
  kInt32,
  kInt64,
  kFloat16,
  kBFloat16,
  kFloat32,
  kFloat64,
};

// Bytes per element.
size_t dtype_size(DType dtype);
// "float32", "int64", ...
std::string_view dtype_name(DType dtype);
// Parses a name of `dtype_name` (also "float"/"half"/"long"/"int"); throws ValueError otherwise.
DType dtype_from_name(std::string_view name);
// "<f4", "|u1", ...; throws ValueError for bfloat16.
std::string npy_descr(DType dtype);
// Inverse of npy_descr; accepts '<', '|' and '=' byte orders. nullopt for anything else.
std::optional<DType> dtype_from_npy_descr(std::string_view descr);
bool is_floating(DType dtype);
bool is_integer(DType dtype);

// Compile-time map from C++ element type to DType.
template <typename T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<bool>() {
  return DType::kBool;
}
template <>
constexpr DType dtype_of<int8_t>() {
  return DType::kInt8;
}
template <>
constexpr DType dtype_of<uint8_t>() {
  return DType::kUInt8;
}
template <>
constexpr DType dtype_of<int16_t>() {
  return DType::kInt16;
}
template <>
constexpr DType dtype_of<int32_t>() {
  return DType::kInt32;
}
template <>
constexpr DType dtype_of<int64_t>() {
  return DType::kInt64;
}
template <>
constexpr DType dtype_of<float>() {
  return DType::kFloat32;
}
template <>
constexpr DType dtype_of<double>() {
  return DType::kFloat64;
}

}  // namespace volley
