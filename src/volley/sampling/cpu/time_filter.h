// volley/sampling/cpu/time_filter.h — temporal sampling's view of the graph for the CPU kernel
// (internal): the time of each CSR entry, and the search for a target's admissible prefix (the
// entries of a time-sorted row no later than the target's time limit).
//
// The search is the temporal sampler's own cost: the graph is far larger than the caches and the
// rows reached first are long (hubs'), so a plain binary search misses the cache at most probes,
// each miss waiting for the one before. The search instead interpolates: it reads the row's
// first and last times, guesses where the prefix ends from them, and counts the 8 entries around
// the guess (a line of edge times) in one step. When the prefix ends outside that window, the
// window's edge is a new bound with a known time, and the next guess is interpolated between the
// nearer bounds, a few entries away on evenly spread times; after kWindows windows (times far
// from even) it bisects. On any row the answer is exactly the binary search's, only the reads
// differ. The kernel searches many rows at once (admissible_prefixes) so that their misses
// overlap; admissible_prefix is the same search for one row.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

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

// One row for admissible_prefixes: the sorted row [first, first + degree) and its time limit.
struct PrefixQuery {
  int64_t first, degree, limit;
};

namespace prefix_search {

// Entries counted in one step around an interpolated guess: a line's worth of edge times (wider
// windows missed less often but read more lines, and the search waits on lines: 24 entries were
// 4% slower in the sampler, 10% in the search alone). A search counts at most kWindows windows
// before it bisects.
constexpr int64_t kWindow = 8;
constexpr int kWindows = 4;

// One search of admissible_prefixes. The answer is in [low, high]; the entries just outside,
// at(low - 1) <= limit < at(high), have times t_low and t_high (read), between which the next
// window's guess is interpolated.
struct Search {
  enum class Stage { kEnds, kWindow, kBisect };
  size_t query;
  Stage stage;
  int64_t low, high, t_low, t_high;
  int64_t scan_low, scan_high;  // kWindow: the entries counted; kBisect: scan_low, the probe
  int windows;                  // windows counted
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

// Sets `search` to count, next, the window of kWindow entries around the guess interpolated
// between its bounds (all of [low, high) when that is as short), prefetched.
template <typename Index>
void place_window(const TimeFilter& filter, const Index* indices, const PrefixQuery& q,
                  Search& search) {
  int64_t low = search.low, high = search.high;
  if (high - low > kWindow) {
    // The answer's position between the known entries low - 1 and high.
    const double share = (static_cast<double>(q.limit) - static_cast<double>(search.t_low)) /
                         (static_cast<double>(search.t_high) - static_cast<double>(search.t_low));
    const auto span = static_cast<double>(high - low + 1);
    const int64_t guess =
        low + std::clamp<int64_t>(static_cast<int64_t>(share * span), 0, high - low);
    low = std::clamp<int64_t>(guess - kWindow / 2, low, high - kWindow);
    high = low + kWindow;
  }
  search.scan_low = low, search.scan_high = high, search.stage = Search::Stage::kWindow;
  for (int64_t p = low; p < high; p += 8) prefetch(filter, indices, q.first + p);
  if (high > low) prefetch(filter, indices, q.first + high - 1);
}

// Sets up the search's next read, prefetched: a window (all of [low, high) when that is short),
// or once kWindows windows missed (times far from even), the middle entry of [low, high).
template <typename Index>
void next_read(const TimeFilter& filter, const Index* indices, const PrefixQuery& q,
               Search& search) {
  if (search.windows < kWindows || search.high - search.low <= kWindow) {
    place_window(filter, indices, q, search);
    return;
  }
  search.stage = Search::Stage::kBisect;
  search.scan_low = search.low + (search.high - search.low) / 2;
  prefetch(filter, indices, q.first + search.scan_low);
}

// The first read of a search: the row's ends (prefetched when it started). Returns the answer
// when the limit is outside them, else places the first window and returns -1.
template <typename Index>
int64_t read_ends(const TimeFilter& filter, const Index* indices, const PrefixQuery& q,
                  Search& search) {
  if (q.degree == 0) return 0;
  const int64_t first = filter.time(indices, q.first);
  if (q.limit < first) return 0;
  const int64_t last = filter.time(indices, q.first + q.degree - 1);
  if (q.limit >= last) return q.degree;
  search.low = 1, search.high = q.degree - 1, search.t_low = first, search.t_high = last;
  search.windows = 0;
  place_window(filter, indices, q, search);
  return -1;
}

// Counts the window `search` waits for: the answer when the prefix ends inside it, else -1 with
// the bounds narrowed to one side of it and the next read (window or bisection probe) prefetched.
template <typename Index>
int64_t count_window(const TimeFilter& filter, const Index* indices, const PrefixQuery& q,
                     Search& search) {
  const int64_t low = search.scan_low, high = search.scan_high;
  const int64_t admissible = count_admissible(filter, indices, q.first, low, high, q.limit);
  if (admissible < high - low) {
    if (admissible > 0 || low == search.low) return low + admissible;
    search.high = low, search.t_high = filter.time(indices, q.first + low);
  } else {
    if (high == search.high) return high;
    search.low = high, search.t_low = filter.time(indices, q.first + high - 1);
  }
  ++search.windows;
  next_read(filter, indices, q, search);
  return -1;
}

// Makes the read `search` waits for (prefetched when it was chosen), then prefetches the next one
// and returns -1, or returns the answer.
template <typename Index>
int64_t advance(const TimeFilter& filter, const Index* indices, const PrefixQuery& q,
                Search& search) {
  switch (search.stage) {
    case Search::Stage::kEnds:
      return read_ends(filter, indices, q, search);
    case Search::Stage::kWindow:
      return count_window(filter, indices, q, search);
    case Search::Stage::kBisect:
      break;
  }
  const int64_t probe = search.scan_low;
  const int64_t time = filter.time(indices, q.first + probe);
  if (time <= q.limit) {
    search.low = probe + 1, search.t_low = time;
  } else {
    search.high = probe, search.t_high = time;
  }
  next_read(filter, indices, q, search);
  return -1;
}

}  // namespace prefix_search

// The number of entries of each query's sorted row no later than its limit (exactly
// std::upper_bound's answer), into prefixes[q]. One row's reads depend on each other (a cache miss
// each on a long row), so rows go through a pipeline whose stages are kAhead rows apart: prefetch
// a row's ends; read them and prefetch the window around the guess; count the window. Many rows
// end there; the others (their prefix ends outside the window) go on in a ring of kInFlight
// searches (windows re-interpolated, then bisection) that advance one read at a time, each
// prefetching its next before the ring moves on.
template <typename Index>
void admissible_prefixes(const TimeFilter& filter, const Index* indices,
                         std::span<const PrefixQuery> queries, int64_t* prefixes) {
  using prefix_search::Search;
  constexpr size_t kAhead = 8, kSlots = 16, kInFlight = 16;
  static_assert(kSlots > kAhead, "a slot is reused only after its row left the pipeline");
  constexpr size_t kDone = SIZE_MAX;
  const size_t count = queries.size();
  Search windows[kSlots];
  thread_local std::vector<Search> slow;
  slow.clear();
  for (size_t i = 0; i < count + 2 * kAhead; ++i) {
    if (i < count && queries[i].degree > 0) {
      prefix_search::prefetch(filter, indices, queries[i].first);
      prefix_search::prefetch(filter, indices, queries[i].first + queries[i].degree - 1);
    }
    if (i >= kAhead && i - kAhead < count) {
      const size_t j = i - kAhead;
      Search& search = windows[j % kSlots];
      search = {j, Search::Stage::kEnds, 0, 0, 0, 0, 0, 0, 0};
      const int64_t answer = prefix_search::read_ends(filter, indices, queries[j], search);
      if (answer >= 0) prefixes[j] = answer, search.query = kDone;
    }
    if (i >= 2 * kAhead) {
      Search& search = windows[(i - 2 * kAhead) % kSlots];
      if (search.query == kDone) continue;
      const PrefixQuery& q = queries[search.query];
      const int64_t answer = prefix_search::count_window(filter, indices, q, search);
      if (answer >= 0) {
        prefixes[search.query] = answer;
      } else {
        slow.push_back(search);
      }
    }
  }
  // The rows not done, kInFlight at a time.
  size_t active = std::min(kInFlight, slow.size()), next = active;
  while (active > 0) {
    for (size_t s = 0; s < active;) {
      Search& search = slow[s];
      const int64_t answer = prefix_search::advance(filter, indices, queries[search.query], search);
      if (answer < 0) {
        ++s;
        continue;
      }
      prefixes[search.query] = answer;
      if (next < slow.size()) {
        search = slow[next++], ++s;
      } else {
        search = slow[--active];
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
