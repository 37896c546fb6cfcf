#include "volley/feature/gather.h"

#include <cstring>

#include "volley/core/half.h"
#include "volley/core/parallel.h"

namespace volley {
namespace {

constexpr int kPrefetchDistance = 8;

template <typename From, typename To, typename Convert>
void gather_convert(const std::byte* base, int64_t width, std::span<const int64_t> ids, To* out,
                    Convert convert) {
  const auto* table = reinterpret_cast<const From*>(base);
  const size_t count = ids.size();
  for (size_t i = 0; i < count; ++i) {
    if (i + kPrefetchDistance < count) {
      __builtin_prefetch(table + ids[i + kPrefetchDistance] * width);
    }
    const From* row = table + ids[i] * width;
    To* destination = out + static_cast<int64_t>(i) * width;
    for (int64_t j = 0; j < width; ++j) destination[j] = convert(row[j]);
  }
}

void check_ids(std::span<const int64_t> ids, int64_t rows) {
  for (size_t i = 0; i < ids.size(); ++i) {
    VOLLEY_REQUIRE(ids[i] >= 0 && ids[i] < rows, IndexError,
                   "row id {} at position {} out of range for a table with {} rows", ids[i], i,
                   rows);
  }
}

}  // namespace

bool gather_supports(DType from, DType to) {
  if (from == to) return true;
  if (to == DType::kFloat32) return true;  // every dtype converts to float32
  if (to == DType::kInt64) return is_integer(from) || from == DType::kBool;
  return false;
}

void gather_rows(const Array& table, std::span<const int64_t> ids, DType out_dtype,
                 std::byte* out) {
  VOLLEY_REQUIRE(table.defined() && table.ndim() >= 1 && table.ndim() <= 2, ValueError,
                 "gather_rows needs a 1-d or 2-d table, got {}", table.describe());
  VOLLEY_REQUIRE(table.buffer().host_accessible(), ValueError,
                 "gather_rows reads host memory; the table lives in {} memory",
                 location_name(table.buffer().location()));
  VOLLEY_REQUIRE(gather_supports(table.dtype(), out_dtype), ValueError,
                 "cannot gather {} rows as {}", dtype_name(table.dtype()), dtype_name(out_dtype));
  const int64_t rows = table.dim(0);
  const int64_t width = table.ndim() == 2 ? table.dim(1) : 1;
  check_ids(ids, rows);
  const std::byte* base = table.raw_data();
  const DType from = table.dtype();
  if (from == out_dtype) {
    const size_t row_bytes = static_cast<size_t>(width) * dtype_size(from);
    for (size_t i = 0; i < ids.size(); ++i) {
      if (i + kPrefetchDistance < ids.size()) {
        __builtin_prefetch(base + ids[i + kPrefetchDistance] * row_bytes);
      }
      std::memcpy(out + i * row_bytes, base + ids[i] * row_bytes, row_bytes);
    }
    return;
  }
  if (out_dtype == DType::kFloat32) {
    auto* destination = reinterpret_cast<float*>(out);
    auto cast = [](auto value) { return static_cast<float>(value); };
    switch (from) {
      case DType::kBool:
      case DType::kUInt8:
        return gather_convert<uint8_t>(base, width, ids, destination, cast);
      case DType::kInt8:
        return gather_convert<int8_t>(base, width, ids, destination, cast);
      case DType::kInt16:
        return gather_convert<int16_t>(base, width, ids, destination, cast);
      case DType::kInt32:
        return gather_convert<int32_t>(base, width, ids, destination, cast);
      case DType::kInt64:
        return gather_convert<int64_t>(base, width, ids, destination, cast);
      case DType::kFloat64:
        return gather_convert<double>(base, width, ids, destination, cast);
      case DType::kFloat16:
        return gather_convert<uint16_t>(base, width, ids, destination, half_to_float);
      case DType::kBFloat16:
        return gather_convert<uint16_t>(base, width, ids, destination, bfloat16_to_float);
      case DType::kFloat32:
        break;
    }
  } else if (out_dtype == DType::kInt64) {
    auto* destination = reinterpret_cast<int64_t*>(out);
    auto cast = [](auto value) { return static_cast<int64_t>(value); };
    switch (from) {
      case DType::kBool:
      case DType::kUInt8:
        return gather_convert<uint8_t>(base, width, ids, destination, cast);
      case DType::kInt8:
        return gather_convert<int8_t>(base, width, ids, destination, cast);
      case DType::kInt16:
        return gather_convert<int16_t>(base, width, ids, destination, cast);
      case DType::kInt32:
        return gather_convert<int32_t>(base, width, ids, destination, cast);
      default:
        break;
    }
  }
  VOLLEY_ASSERT(false);
}

void gather_rows_parallel(const Array& table, std::span<const int64_t> ids, DType out_dtype,
                          std::byte* out) {
  const int64_t width = table.ndim() == 2 ? table.dim(1) : 1;
  const size_t out_row_bytes = static_cast<size_t>(width) * dtype_size(out_dtype);
  const int64_t grain = std::max<int64_t>(
      1024, (1 << 20) / std::max<int64_t>(1, static_cast<int64_t>(out_row_bytes)));
  parallel_for(0, static_cast<int64_t>(ids.size()), grain, [&](int64_t begin, int64_t end) {
    gather_rows(table, ids.subspan(static_cast<size_t>(begin), static_cast<size_t>(end - begin)),
                out_dtype, out + static_cast<size_t>(begin) * out_row_bytes);
  });
}

}  // namespace volley
