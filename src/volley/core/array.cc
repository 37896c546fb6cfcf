#include "volley/core/array.h"

#include <cstring>

#include "volley/core/half.h"

namespace volley {

Array::Array(Buffer buffer, DType dtype, std::vector<int64_t> shape)
    : buffer_(std::move(buffer)), dtype_(dtype), shape_(std::move(shape)), defined_(true) {
  numel_ = 1;
  for (int64_t extent : shape_) {
    VOLLEY_REQUIRE(extent >= 0, ValueError, "array dimension must be >= 0, got shape {}",
                   fmt::join(shape_, "x"));
    numel_ *= extent;
  }
  VOLLEY_REQUIRE(buffer_.size() >= nbytes(), ValueError,
                 "buffer of {} bytes is too small for a {} array of shape [{}] ({} bytes)",
                 buffer_.size(), dtype_name(dtype_), fmt::join(shape_, ", "), nbytes());
}

Array Array::empty(DType dtype, std::vector<int64_t> shape) {
  int64_t count = 1;
  for (int64_t extent : shape) {
    VOLLEY_REQUIRE(extent >= 0, ValueError, "array dimension must be >= 0, got shape [{}]",
                   fmt::join(shape, ", "));
    count *= extent;
  }
  return Array(Buffer::allocate(static_cast<size_t>(count) * dtype_size(dtype)), dtype,
               std::move(shape));
}

Array Array::zeros(DType dtype, std::vector<int64_t> shape) {
  Array array = empty(dtype, std::move(shape));
  if (array.nbytes() > 0) std::memset(array.raw_data(), 0, array.nbytes());
  return array;
}

int64_t Array::dim(int64_t axis) const {
  const int64_t n = ndim();
  const int64_t index = axis < 0 ? axis + n : axis;
  VOLLEY_REQUIRE(index >= 0 && index < n, IndexError, "axis {} out of range for a {}-d array", axis,
                 n);
  return shape_[static_cast<size_t>(index)];
}

void Array::check_dtype(DType expected) const {
  VOLLEY_REQUIRE(dtype_ == expected, ValueError, "array holds {}, but {} was asked for",
                 dtype_name(dtype_), dtype_name(expected));
}

Array Array::clone() const {
  VOLLEY_REQUIRE(buffer_.host_accessible(), ValueError,
                 "clone() of a {} array: copy it to the host first",
                 location_name(buffer_.location()));
  Array copy = empty(dtype_, shape_);
  if (nbytes() > 0) std::memcpy(copy.raw_data(), raw_data(), nbytes());
  return copy;
}

namespace {

template <typename T>
double load_as_double(const std::byte* base, int64_t i) {
  return static_cast<double>(reinterpret_cast<const T*>(base)[i]);
}

double load_element(DType dtype, const std::byte* base, int64_t i) {
  switch (dtype) {
    case DType::kBool:
      return reinterpret_cast<const uint8_t*>(base)[i] != 0 ? 1.0 : 0.0;
    case DType::kInt8:
      return load_as_double<int8_t>(base, i);
    case DType::kUInt8:
      return load_as_double<uint8_t>(base, i);
    case DType::kInt16:
      return load_as_double<int16_t>(base, i);
    case DType::kInt32:
      return load_as_double<int32_t>(base, i);
    case DType::kInt64:
      return load_as_double<int64_t>(base, i);
    case DType::kFloat16:
      return half_to_float(reinterpret_cast<const uint16_t*>(base)[i]);
    case DType::kBFloat16:
      return bfloat16_to_float(reinterpret_cast<const uint16_t*>(base)[i]);
    case DType::kFloat32:
      return load_as_double<float>(base, i);
    case DType::kFloat64:
      return load_as_double<double>(base, i);
  }
  return 0.0;
}

void store_element(DType dtype, std::byte* base, int64_t i, double value) {
  switch (dtype) {
    case DType::kBool:
      reinterpret_cast<uint8_t*>(base)[i] = value != 0.0;
      break;
    case DType::kInt8:
      reinterpret_cast<int8_t*>(base)[i] = static_cast<int8_t>(value);
      break;
    case DType::kUInt8:
      reinterpret_cast<uint8_t*>(base)[i] = static_cast<uint8_t>(value);
      break;
    case DType::kInt16:
      reinterpret_cast<int16_t*>(base)[i] = static_cast<int16_t>(value);
      break;
    case DType::kInt32:
      reinterpret_cast<int32_t*>(base)[i] = static_cast<int32_t>(value);
      break;
    case DType::kInt64:
      reinterpret_cast<int64_t*>(base)[i] = static_cast<int64_t>(value);
      break;
    case DType::kFloat16:
      reinterpret_cast<uint16_t*>(base)[i] = float_to_half(static_cast<float>(value));
      break;
    case DType::kBFloat16:
      reinterpret_cast<uint16_t*>(base)[i] = float_to_bfloat16(static_cast<float>(value));
      break;
    case DType::kFloat32:
      reinterpret_cast<float*>(base)[i] = static_cast<float>(value);
      break;
    case DType::kFloat64:
      reinterpret_cast<double*>(base)[i] = value;
      break;
  }
}

}  // namespace

Array Array::cast(DType dtype) const {
  VOLLEY_REQUIRE(buffer_.host_accessible(), ValueError,
                 "cast() of a {} array: copy it to the host first",
                 location_name(buffer_.location()));
  if (dtype == dtype_) return clone();
  VOLLEY_REQUIRE(!(is_floating(dtype_) && is_integer(dtype)), ValueError,
                 "cast from {} to {} would truncate; round explicitly first", dtype_name(dtype_),
                 dtype_name(dtype));
  Array result = empty(dtype, shape_);
  if (dtype_ == DType::kInt32 && dtype == DType::kInt64) {
    const auto* in = data<int32_t>();
    auto* out = result.data<int64_t>();
    for (int64_t i = 0; i < numel_; ++i) out[i] = in[i];
    return result;
  }
  for (int64_t i = 0; i < numel_; ++i) {
    store_element(dtype, result.raw_data(), i, load_element(dtype_, raw_data(), i));
  }
  return result;
}

std::string Array::describe() const {
  if (!defined_) return "undefined";
  return fmt::format("{}[{}]", dtype_name(dtype_), fmt::join(shape_, ", "));
}

}  // namespace volley
