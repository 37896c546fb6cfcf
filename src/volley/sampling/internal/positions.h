// volley/sampling/internal/positions.h — the CPU samplers' last step of a hop (internal): the
// picked edges, recorded as CSR positions, turned into ids.
//
// The samplers' pick loops record positions only and leave the reads of the picked entries
// (their neighbor ids, their edge ids) to one pass each, where the reads — one cache miss each on
// a graph far larger than the caches — are prefetched ahead and overlap, instead of filling the
// pick loop's window while they wait.
#pragma once

#include <cstddef>
#include <cstdint>

namespace volley::sampling_internal {

// positions[j] = ids[positions[j]] for j in [0, count): `ids` is a graph's indices (int32 or
// int64) or its edge ids; every position must be within it.
template <typename Id>
void positions_to_ids(const Id* ids, int64_t* positions, size_t count) {
  constexpr size_t kAhead = 16;
  for (size_t j = 0; j < count; ++j) {
    if (j + kAhead < count) __builtin_prefetch(ids + positions[j + kAhead]);
    positions[j] = static_cast<int64_t>(ids[positions[j]]);
  }
}

}  // namespace volley::sampling_internal
