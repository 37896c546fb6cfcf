// volley/feature/cpu/gather_kernel.h — the CPU row-gather kernel behind gather_rows and
// FeatureStore::gather (internal to src/volley/feature).
//
// The kernel copies rows located by a `RowMap` (one tier in id order, or several tiers behind a
// packed id → (tier, slot) lookup) into a contiguous output, converting the element type on the
// way. It prefetches the lookup entry and every cache line of a row a fixed distance ahead, and
// writes large outputs with non-temporal stores (the output is bigger than the caches and is read
// later by someone else; skipping the read-for-ownership of each output line saves a third of the
// memory traffic). Ids must have been checked by the caller: the kernel does no bounds checks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "volley/core/dtype.h"

namespace volley::feature_internal {

// Where rows live: tier t's rows start at bases[t]; every row has the same byte size. With no
// lookup, row id lives in tier 0 at slot id. With a lookup, entry id packs (tier, slot): the
// tier in the bits from `tier_shift` up, the slot below; entries are uint32 (tier_shift 28) or
// uint64 (tier_shift 56).
struct RowMap {
  static constexpr int kMaxTiers = 8;
  const std::byte* bases[kMaxTiers] = {};
  const void* lookup = nullptr;
  bool lookup_is_32bit = false;
  size_t row_bytes = 0;  // bytes of one stored row
  int64_t width = 0;     // elements per row
  DType dtype = DType::kFloat32;
};

constexpr int kTierShift32 = 28;
constexpr int kTierShift64 = 56;

enum class StoreMode {
  kAuto,       // streaming stores when the output is large (>= kStreamingThreshold bytes)
  kCached,     // ordinary stores
  kStreaming,  // non-temporal stores where row size and alignment allow
};
constexpr size_t kStreamingThreshold = size_t{8} << 20;

// Tuning knob for experiments (bench): bytes of rows prefetched ahead (0 = default, 4096).
void set_prefetch_bytes(size_t bytes);
size_t prefetch_bytes();

// out[i, :] = convert(row(ids[i])) for every i. `out` holds ids.size() × width elements of
// `out_dtype` (volley::gather_supports(map.dtype, out_dtype) must hold). `total_output_bytes` (the
// whole output, of which this call may write a part) picks the store mode under kAuto.
// Single-threaded.
void gather_kernel(const RowMap& map, std::span<const int64_t> ids, DType out_dtype, std::byte* out,
                   StoreMode mode, size_t total_output_bytes);

}  // namespace volley::feature_internal
