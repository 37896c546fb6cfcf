// volley/feature/gather.h — copy selected rows of a row-major table, converting dtype on the way.
//
//   gather_rows(features, ids, DType::kFloat32, out);   // out[i, :] = float(features[ids[i], :])
//
// The low-level kernel under FeatureStore (feature_store.h), for a table held in one Array.
// `table` is [N, D] (or [N], treated as D = 1), host-accessible, any dtype. `out` is host memory
// for ids.size() × D elements of `out_dtype`. Conversions: same dtype (a plain copy), any
// integer or float dtype → float32 (exact for uint8/int8/int16/float16/bfloat16), any integer →
// int64, float32 → float16 / bfloat16 (round to nearest even, as numpy and torch); signaling
// NaNs may come out quieted, payload and sign kept (the hardware conversion does so). Throws
// IndexError naming the first out-of-range id and its position (nothing is read out of bounds),
// ValueError for an unsupported conversion. gather_rows runs on the calling thread: callers
// parallelise across batches (the loader) or across chunks of ids (gather_rows_parallel).
// Outputs of 8 MiB or more are written with non-temporal stores (see cpu/gather_kernel.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "volley/core/array.h"

namespace volley {

void gather_rows(const Array& table, std::span<const int64_t> ids, DType out_dtype, std::byte* out);

// Same, split over the default thread pool.
void gather_rows_parallel(const Array& table, std::span<const int64_t> ids, DType out_dtype,
                          std::byte* out);

// Whether gather_rows supports storing `from` as `to`.
bool gather_supports(DType from, DType to);

// Tuning knob for experiments (`volley bench gather --prefetch-bytes`): bytes of rows the CPU
// gather (gather_rows and FeatureStore::gather) prefetches ahead; 0 restores the default (4096).
// Process-wide, thread-safe; results never depend on it, only speed.
void set_gather_prefetch_bytes(size_t bytes);

}  // namespace volley
