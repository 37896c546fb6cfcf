#include "volley/core/dtype.h"

#include "volley/core/error.h"

namespace volley {
namespace {

struct DTypeInfo {
  DType dtype;
  size_t size;
  std::string_view name;
  std::string_view descr;  // without byte-order prefix; empty when numpy has none
  bool single_byte;
};

constexpr DTypeInfo kInfo[] = {
    {DType::kBool, 1, "bool", "b1", true},        {DType::kInt8, 1, "int8", "i1", true},
    {DType::kUInt8, 1, "uint8", "u1", true},      {DType::kInt16, 2, "int16", "i2", false},
    {DType::kInt32, 4, "int32", "i4", false},     {DType::kInt64, 8, "int64", "i8", false},
    {DType::kFloat16, 2, "float16", "f2", false}, {DType::kBFloat16, 2, "bfloat16", "", false},
    {DType::kFloat32, 4, "float32", "f4", false}, {DType::kFloat64, 8, "float64", "f8", false},
};

const DTypeInfo& info(DType dtype) {
  const auto index = static_cast<size_t>(dtype);
  VOLLEY_ASSERT(index < std::size(kInfo));
  return kInfo[index];
}

}  // namespace

size_t dtype_size(DType dtype) { return info(dtype).size; }

std::string_view dtype_name(DType dtype) { return info(dtype).name; }

DType dtype_from_name(std::string_view name) {
  for (const auto& entry : kInfo) {
    if (entry.name == name) return entry.dtype;
  }
  if (name == "float") return DType::kFloat32;
  if (name == "half") return DType::kFloat16;
  if (name == "double") return DType::kFloat64;
  if (name == "long") return DType::kInt64;
  if (name == "int") return DType::kInt32;
  throw ValueError(fmt::format(
      "unknown dtype '{}' (expected one of bool, int8, uint8, int16, int32, int64, float16, "
      "bfloat16, float32, float64)",
      name));
}

std::string npy_descr(DType dtype) {
  const auto& entry = info(dtype);
  VOLLEY_REQUIRE(!entry.descr.empty(), ValueError, "dtype {} has no .npy representation",
                 entry.name);
  return fmt::format("{}{}", entry.single_byte ? '|' : '<', entry.descr);
}

std::optional<DType> dtype_from_npy_descr(std::string_view descr) {
  if (descr.size() < 2) return std::nullopt;
  const char order = descr[0];
  if (order != '<' && order != '|' && order != '=') return std::nullopt;
  const std::string_view body = descr.substr(1);
  for (const auto& entry : kInfo) {
    if (!entry.descr.empty() && entry.descr == body) return entry.dtype;
  }
  return std::nullopt;
}

bool is_floating(DType dtype) {
  return dtype == DType::kFloat16 || dtype == DType::kBFloat16 || dtype == DType::kFloat32 ||
         dtype == DType::kFloat64;
}

bool is_integer(DType dtype) {
  return dtype == DType::kInt8 || dtype == DType::kUInt8 || dtype == DType::kInt16 ||
         dtype == DType::kInt32 || dtype == DType::kInt64;
}

}  // namespace volley
