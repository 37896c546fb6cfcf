// volley/sampling/cpu/time_filter.h — temporal sampling's view of the graph for the CPU kernel
// (internal): the time of each CSR entry, and the search for a target's admissible prefix (the
// entries of a time-sorted row no later than the target's time limit).
//
// The search is the temporal sampler's own cost: the graph is far larger than the caches and the
// rows reached first are long (hubs'), so a plain binary search misses the cache at most probes,
// each miss waiting for the one before. The kernel instead prefetches a row's first and last
// times early, guesses the boundary by interpolating between them (guess_prefix), prefetches the
// guessed line, and searches outward from the guess (admissible_prefix): on rows whose times
// spread evenly that is one or two cached lines; on any row the answer is exactly the binary
// search's, only the probes differ.
#pragma once

#include <algorithm>
#include <cstdint>

namespace volley::cpu {

struct TimeFilter {
  const int64_t* seed_times = nullptr;  // null: not temporal
  const int64_t* edge_time = nullptr;   // TimeSource::kEdge: the time of each CSR entry
  const int64_t* node_time = nullptr;   // TimeSource::kNode: the time of each node
  bool sorted = false;                  // every row in non-decreasing time order
  bool last = false;                    // TemporalStrategy::kLast

  bool active() const { return seed_times != nullptr; }
  template <typename Index>
  int64_t time(const Index* indices, int64_t k) const {
    return edge_time != nullptr ? edge_time[k] : node_time[indices[k]];
  }
};

// A guess in [0, degree) at the admissible prefix's end of the sorted row [first, first +
// degree) (degree >= 1) for `limit`, interpolated between the row's first and last times.
template <typename Index>
int64_t guess_prefix(const TimeFilter& filter, const Index* indices, int64_t first, int64_t degree,
                     int64_t limit) {
  const int64_t low = filter.time(indices, first);
  const int64_t high = filter.time(indices, first + degree - 1);
  if (limit < low) return 0;
  if (limit >= high) return degree - 1;
  const double share = (static_cast<double>(limit) - static_cast<double>(low)) /
                       (static_cast<double>(high) - static_cast<double>(low));
  return std::clamp<int64_t>(static_cast<int64_t>(share * static_cast<double>(degree - 1)), 0,
                             degree - 1);
}

// The number of entries of the sorted row [first, first + degree) no later than `limit`:
// exactly std::upper_bound's answer. Gallops from guess_prefix's guess by 8, 16, 32, ...
// entries (the first step stays within the guessed line or the next), then bisects.
template <typename Index>
int64_t admissible_prefix(const TimeFilter& filter, const Index* indices, int64_t first,
                          int64_t degree, int64_t limit) {
  if (degree == 0) return 0;
  const auto at = [&](int64_t p) { return filter.time(indices, first + p); };
  const int64_t guess = guess_prefix(filter, indices, first, degree, limit);
  int64_t low = 0, high = degree;  // the answer is in [low, high]
  if (at(guess) <= limit) {
    low = guess + 1;
    for (int64_t step = 8; guess + step < high; step *= 2) {
      if (at(guess + step) > limit) {
        high = guess + step;
        break;
      }
      low = guess + step + 1;
    }
  } else {
    high = guess;
    for (int64_t step = 8; guess - step >= low; step *= 2) {
      if (at(guess - step) <= limit) {
        low = guess - step + 1;
        break;
      }
      high = guess - step;
    }
  }
  while (low < high) {
    const int64_t middle = low + (high - low) / 2;
    if (at(middle) <= limit) {
      low = middle + 1;
    } else {
      high = middle;
    }
  }
  return low;
}

}  // namespace volley::cpu
