// volley/core/array.h — a Buffer with a dtype and a shape: the one array type of Volley.
//
//   Array ids = Array::empty(DType::kInt64, {n});
//   int64_t* p = ids.data<int64_t>();          // throws if the dtype is not int64
//   std::span<const int64_t> s = ids.span<int64_t>();
//
// Arrays are row-major and contiguous. Copies share the bytes (like a tensor); use clone() for a
// deep copy. Thread safety as for Buffer.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "volley/core/buffer.h"
#include "volley/core/dtype.h"
#include "volley/core/error.h"

namespace volley {

class Array {
 public:
  Array() = default;
  // Throws ValueError when `buffer` holds fewer bytes than dtype and shape need, or a dimension
  // is negative.
  Array(Buffer buffer, DType dtype, std::vector<int64_t> shape);

  // Uninitialised / zero-filled host arrays.
  static Array empty(DType dtype, std::vector<int64_t> shape);
  static Array zeros(DType dtype, std::vector<int64_t> shape);
  template <typename T>
  static Array from_vector(const std::vector<T>& values) {
    Array array = empty(dtype_of<T>(), {static_cast<int64_t>(values.size())});
    std::copy(values.begin(), values.end(), array.data<T>());
    return array;
  }

  bool defined() const { return defined_; }
  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t ndim() const { return static_cast<int64_t>(shape_.size()); }
  // Size of dimension `axis` (negative counts from the end); IndexError when out of range.
  int64_t dim(int64_t axis) const;
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return static_cast<size_t>(numel_) * dtype_size(dtype_); }
  const Buffer& buffer() const { return buffer_; }
  std::byte* raw_data() const { return buffer_.data(); }

  template <typename T>
  T* data() const {
    check_dtype(dtype_of<T>());
    return reinterpret_cast<T*>(buffer_.data());
  }
  template <typename T>
  std::span<const T> span() const {
    return {data<T>(), static_cast<size_t>(numel_)};
  }
  template <typename T>
  std::vector<T> to_vector() const {
    auto values = span<T>();
    return {values.begin(), values.end()};
  }

  // Deep copy into host memory.
  Array clone() const;
  // A host copy with another element type (integer ↔ integer, float ↔ float or int → float).
  Array cast(DType dtype) const;
  // "int64[2708]", "float32[2708, 1433]".
  std::string describe() const;

 private:
  void check_dtype(DType expected) const;

  Buffer buffer_;
  DType dtype_ = DType::kFloat32;
  std::vector<int64_t> shape_;
  int64_t numel_ = 0;
  bool defined_ = false;
};

}  // namespace volley
