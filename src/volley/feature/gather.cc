#include "volley/feature/gather.h"

#include <algorithm>

#include "volley/feature/cpu/gather_kernel.h"
#include "volley/feature/feature_store.h"

namespace volley {
namespace {

void check_ids(std::span<const int64_t> ids, int64_t rows) {
  for (size_t i = 0; i < ids.size(); ++i) {
    VOLLEY_REQUIRE(ids[i] >= 0 && ids[i] < rows, IndexError,
                   "row id {} at position {} out of range for a table with {} rows", ids[i], i,
                   rows);
  }
}

feature_internal::RowMap table_map(const Array& table, DType out_dtype) {
  VOLLEY_REQUIRE(table.defined() && table.ndim() >= 1 && table.ndim() <= 2, ValueError,
                 "gather_rows needs a 1-d or 2-d table, got {}", table.describe());
  VOLLEY_REQUIRE(table.buffer().host_accessible(), ValueError,
                 "gather_rows reads host memory; the table lives in {} memory",
                 location_name(table.buffer().location()));
  VOLLEY_REQUIRE(gather_supports(table.dtype(), out_dtype), ValueError,
                 "cannot gather {} rows as {}", dtype_name(table.dtype()), dtype_name(out_dtype));
  feature_internal::RowMap map;
  map.bases[0] = table.raw_data();
  map.width = table.ndim() == 2 ? table.dim(1) : 1;
  map.dtype = table.dtype();
  map.row_bytes = static_cast<size_t>(map.width) * dtype_size(map.dtype);
  return map;
}

}  // namespace

void set_gather_prefetch_bytes(size_t bytes) { feature_internal::set_prefetch_bytes(bytes); }

bool gather_supports(DType from, DType to) {
  if (from == to) return true;
  if (to == DType::kFloat32) return true;  // every dtype converts to float32
  if (to == DType::kInt64) return is_integer(from) || from == DType::kBool;
  if (from == DType::kFloat32) return to == DType::kFloat16 || to == DType::kBFloat16;
  return false;
}

void gather_rows(const Array& table, std::span<const int64_t> ids, DType out_dtype,
                 std::byte* out) {
  const auto map = table_map(table, out_dtype);
  check_ids(ids, table.dim(0));
  const size_t out_bytes = ids.size() * static_cast<size_t>(map.width) * dtype_size(out_dtype);
  feature_internal::gather_kernel(map, ids, out_dtype, out, feature_internal::StoreMode::kAuto,
                                  out_bytes);
}

void gather_rows_parallel(const Array& table, std::span<const int64_t> ids, DType out_dtype,
                          std::byte* out) {
  table_map(table, out_dtype);  // argument checks before the store wraps the table
  GatherOptions options;
  options.out_dtype = out_dtype;
  FeatureStore(table).gather(ids, out, options);
}

}  // namespace volley
