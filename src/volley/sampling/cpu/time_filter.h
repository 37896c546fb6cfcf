// volley/sampling/cpu/time_filter.h — temporal sampling's view of the graph for the CPU kernel
// (internal): the time of each CSR entry, and the search for a target's admissible prefix (the
// entries of a time-sorted row no later than the target's time limit).
//
// The search is the temporal sampler's own cost: the graph is far larger than the caches and the
// rows reached first are long (hubs'), so a plain binary search misses the cache at most probes,
// each miss waiting for the one before. The search instead guesses the boundary by interpolating
// between the row's first and last times (guess_prefix), counts the three lines around the guess
// in one step (where the prefix usually ends) and gallops outward only when it ends elsewhere;
// on any row the answer is exactly the binary search's, only the probes differ. The kernel
// searches many rows at once (admissible_prefixes), interleaving their probes so that their
// misses overlap; admissible_prefix is the same search for one row.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

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

// One row for admissible_prefixes: the sorted row [first, first + degree) and its time limit.
struct PrefixQuery {
  int64_t first, degree, limit;
};

namespace prefix_search {

// Entries read in one step around the interpolated guess: three lines of edge times.
constexpr int64_t kWindow = 24;

// One search of admissible_prefixes: the row's ends, then the window of kWindow entries around
// the interpolated guess, counted whole (one step, no branch per entry); when the prefix does not
// end inside the window, a gallop away from it by 8, 16, 32, ... entries, then bisection.
struct Search {
  enum class Stage { kEnds, kScan, kUp, kDown, kBisect };
  size_t query;
  Stage stage;
  int64_t guess, step, low, high;  // the answer is in [low, high]
};

// The entries of [first + low, first + high) no later than `limit` (a loop the compiler can
// vectorize for edge time).
template <typename Index>
int64_t count_admissible(const TimeFilter& filter, const Index* indices, int64_t first, int64_t low,
                         int64_t high, int64_t limit) {
  int64_t count = 0;
  if (filter.edge_time != nullptr) {
    const int64_t* times = filter.edge_time + first;
    for (int64_t p = low; p < high; ++p) count += times[p] <= limit;
  } else {
    for (int64_t p = low; p < high; ++p) count += filter.node_time[indices[first + p]] <= limit;
  }
  return count;
}

template <typename Index>
void prefetch(const TimeFilter& filter, const Index* indices, int64_t k) {
  if (filter.edge_time != nullptr) {
    __builtin_prefetch(filter.edge_time + k);
  } else {
    __builtin_prefetch(indices + k);
  }
}

// Makes the probe `search` waits for (its line prefetched when the probe was chosen), then
// prefetches the next one and returns -1, or returns the answer.
template <typename Index>
int64_t advance(const TimeFilter& filter, const Index* indices, const PrefixQuery& q,
                Search& search) {
  using Stage = Search::Stage;
  const auto at = [&](int64_t p) { return filter.time(indices, q.first + p); };
  switch (search.stage) {
    case Stage::kEnds:
      if (q.degree == 0 || q.limit < at(0)) return 0;
      if (q.limit >= at(q.degree - 1)) return q.degree;
      search.guess = guess_prefix(filter, indices, q.first, q.degree, q.limit);
      search.high =
          std::min(q.degree, std::max<int64_t>(0, search.guess - kWindow / 2 + 1) + kWindow);
      search.low = std::max<int64_t>(0, search.high - kWindow);
      search.stage = Stage::kScan;
      for (int64_t p = search.low; p < search.high; p += 8) prefetch(filter, indices, q.first + p);
      prefetch(filter, indices, q.first + search.high - 1);
      return -1;
    case Stage::kScan: {
      const int64_t low = search.low, high = search.high;
      const int64_t admissible = count_admissible(filter, indices, q.first, low, high, q.limit);
      if (admissible > 0 && admissible < high - low) return low + admissible;
      if (admissible == 0) {  // the prefix ends at or before `low`: at(low) > limit
        search.low = 0, search.high = low, search.guess = low, search.stage = Stage::kDown;
      } else {  // at or after `high`: at(high - 1) <= limit
        search.low = high, search.high = q.degree, search.guess = high - 1;
        search.stage = Stage::kUp;
      }
      search.step = 8;
      break;
    }
    case Stage::kUp:
      if (at(search.guess + search.step) > q.limit) {
        search.high = search.guess + search.step, search.stage = Stage::kBisect;
      } else {
        search.low = search.guess + search.step + 1, search.step *= 2;
      }
      break;
    case Stage::kDown:
      if (at(search.guess - search.step) <= q.limit) {
        search.low = search.guess - search.step + 1, search.stage = Stage::kBisect;
      } else {
        search.high = search.guess - search.step, search.step *= 2;
      }
      break;
    case Stage::kBisect: {
      const int64_t middle = search.low + (search.high - search.low) / 2;
      const bool admissible = at(middle) <= q.limit;
      search.low = admissible ? middle + 1 : search.low;
      search.high = admissible ? search.high : middle;
      break;
    }
  }
  // The gallop ends where its next probe would leave [low, high).
  if ((search.stage == Stage::kUp && search.guess + search.step >= search.high) ||
      (search.stage == Stage::kDown && search.guess - search.step < search.low)) {
    search.stage = Stage::kBisect;
  }
  int64_t next = 0;
  if (search.stage == Stage::kUp) {
    next = search.guess + search.step;
  } else if (search.stage == Stage::kDown) {
    next = search.guess - search.step;
  } else if (search.low == search.high) {
    return search.low;
  } else {
    next = search.low + (search.high - search.low) / 2;
  }
  prefetch(filter, indices, q.first + next);
  return -1;
}

}  // namespace prefix_search

// The number of entries of each query's sorted row no later than its limit (exactly
// std::upper_bound's answer), into prefixes[q], with the probes of different rows interleaved: one
// row's probes depend on each other (a cache miss each on a long row), so a ring of kInFlight
// searches advances one probe at a time, each prefetching its next probe before the ring moves on,
// and the misses of different rows overlap.
template <typename Index>
void admissible_prefixes(const TimeFilter& filter, const Index* indices,
                         std::span<const PrefixQuery> queries, int64_t* prefixes) {
  using prefix_search::Search;
  constexpr size_t kInFlight = 16;
  Search ring[kInFlight];
  size_t active = 0, next = 0;
  const auto start = [&](Search& search) {
    const PrefixQuery& q = queries[next];
    search = {next++, Search::Stage::kEnds, 0, 0, 0, 0};
    if (q.degree > 0) {
      prefix_search::prefetch(filter, indices, q.first);
      prefix_search::prefetch(filter, indices, q.first + q.degree - 1);
    }
  };
  while (active < kInFlight && next < queries.size()) start(ring[active++]);
  while (active > 0) {
    for (size_t s = 0; s < active;) {
      Search& search = ring[s];
      const int64_t answer = prefix_search::advance(filter, indices, queries[search.query], search);
      if (answer < 0) {
        ++s;
        continue;
      }
      prefixes[search.query] = answer;
      if (next < queries.size()) {
        start(ring[s++]);
      } else {
        search = ring[--active];
      }
    }
  }
}

// admissible_prefixes for one row [first, first + degree).
template <typename Index>
int64_t admissible_prefix(const TimeFilter& filter, const Index* indices, int64_t first,
                          int64_t degree, int64_t limit) {
  const PrefixQuery query{first, degree, limit};
  int64_t prefix = 0;
  admissible_prefixes<Index>(filter, indices, std::span<const PrefixQuery>(&query, 1), &prefix);
  return prefix;
}

}  // namespace volley::cpu
