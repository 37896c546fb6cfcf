// volley/feature/cache_simulation.h — row-cache policies replayed over a trace of batches:
// how many row accesses each would serve from the cache. `volley bench cache` measures the
// disk tier's policies with it on the rows the loader samples (a pure function of (seed, batch
// index), so the trace of the coming batches is known exactly).
//
//   std::vector<std::vector<int64_t>> trace = ...;  // the row ids of each batch, in order
//   int64_t optimum = cache_hits_window_belady(trace, capacity, {.bypass = true});
//   int64_t lookahead = cache_hits_window_belady(
//       trace, capacity, {.window = 8, .bypass = true, .rank = &rank, .prefill = hottest});
//
// A hit is an access served from the cache; a miss reads the row (and may admit it). Rows
// repeated within one batch are separate accesses. Pure functions: thread-safe, deterministic.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace volley {

// Belady's rule over a window of the coming batches (the lookahead policy), or over the whole
// trace (window < 0: the offline optimum, MIN).
struct WindowBeladyPolicy {
  // While batch b is served, the uses in batches b .. b + window are known (window >= 0), or
  // every use (window < 0). Cached rows with a known next use are evicted farthest use first,
  // after every cached row with none.
  int64_t window = -1;
  // True: a missed row is not admitted when it would itself be the first victim (a cache may
  // decline a row); false: every miss is admitted (demand paging).
  bool bypass = false;
  // Per row id, its coldness (larger is evicted first among rows with no known use; e.g. the
  // row's position in a hotness order). nullptr: the least recently used goes first. Must hold
  // every id of the trace and of `prefill` (not checked).
  const std::vector<int64_t>* rank = nullptr;
  // Rows cached before the first batch, up to the capacity (in order; duplicates ignored).
  std::vector<int64_t> prefill;
};

// The hits of `policy` with `capacity` rows on `trace` (each batch's row ids, non-negative;
// capacity >= 0). ValueError for a negative capacity or id.
int64_t cache_hits_window_belady(std::span<const std::vector<int64_t>> trace, int64_t capacity,
                                 const WindowBeladyPolicy& policy);

// The hits of SIEVE (Zhang et al., NSDI '24) with `capacity` rows, starting empty. ValueError
// for a negative capacity.
int64_t cache_hits_sieve(std::span<const std::vector<int64_t>> trace, int64_t capacity);

// The first `capacity` distinct rows of `trace` in order of first use: the contents that a
// pre-filled offline optimum starts with.
std::vector<int64_t> first_used_rows(std::span<const std::vector<int64_t>> trace, int64_t capacity);

}  // namespace volley
