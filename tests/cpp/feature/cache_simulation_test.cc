#include "volley/feature/cache_simulation.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <tuple>

#include "volley/core/error.h"

namespace volley {
namespace {

using Trace = std::vector<std::vector<int64_t>>;

Trace one_row_batches(const std::vector<int64_t>& rows) {
  Trace trace;
  for (const int64_t id : rows) trace.push_back({id});
  return trace;
}

// Belady within a window, written the slow way: at every miss each cached row's next use is
// found by scanning the trace.
int64_t reference_hits(const Trace& trace, int64_t capacity, const WindowBeladyPolicy& policy) {
  std::vector<std::pair<int64_t, int64_t>> flat;  // (id, batch)
  for (size_t b = 0; b < trace.size(); ++b) {
    for (const int64_t id : trace[b]) flat.emplace_back(id, static_cast<int64_t>(b));
  }
  std::vector<std::pair<int64_t, int64_t>> cached;  // (id, last access + 1; 0: prefilled)
  for (const int64_t id : policy.prefill) {
    const bool present =
        std::any_of(cached.begin(), cached.end(), [&](auto& c) { return c.first == id; });
    if (!present && static_cast<int64_t>(cached.size()) < capacity) cached.emplace_back(id, 0);
  }
  using Key = std::tuple<int, int64_t, int64_t>;
  auto key = [&](int64_t id, int64_t last, size_t from, int64_t batch) {
    for (size_t j = from; j < flat.size(); ++j) {
      if (flat[j].first != id) continue;
      if (policy.window < 0 || flat[j].second <= batch + policy.window) {
        return Key{0, static_cast<int64_t>(j), id};
      }
      break;
    }
    return Key{1, policy.rank ? (*policy.rank)[static_cast<size_t>(id)] : -last, id};
  };
  int64_t hits = 0;
  for (size_t i = 0; i < flat.size(); ++i) {
    const int64_t id = flat[i].first;  // clang-14 lambdas cannot capture a structured binding
    const auto batch = flat[i].second;
    auto found = std::find_if(cached.begin(), cached.end(), [&](auto& c) { return c.first == id; });
    if (found != cached.end()) {
      ++hits;
      found->second = static_cast<int64_t>(i) + 1;
      continue;
    }
    if (static_cast<int64_t>(cached.size()) >= capacity) {
      if (capacity == 0) continue;
      size_t victim = 0;
      for (size_t c = 1; c < cached.size(); ++c) {
        if (key(cached[c].first, cached[c].second, i + 1, batch) >
            key(cached[victim].first, cached[victim].second, i + 1, batch)) {
          victim = c;
        }
      }
      const Key own = key(id, static_cast<int64_t>(i) + 1, i + 1, batch);
      if (policy.bypass && own > key(cached[victim].first, cached[victim].second, i + 1, batch)) {
        continue;
      }
      cached.erase(cached.begin() + static_cast<std::ptrdiff_t>(victim));
    }
    cached.emplace_back(id, static_cast<int64_t>(i) + 1);
  }
  return hits;
}

TEST(CacheSimulation, OfflineBeladyOnTheTextbookTrace) {
  // 1 2 3 4 1 2 5 1 2 3 4 5 with 3 frames: MIN faults 7 times, so 5 hits.
  const Trace trace = one_row_batches({1, 2, 3, 4, 1, 2, 5, 1, 2, 3, 4, 5});
  EXPECT_EQ(cache_hits_window_belady(trace, 3, {}), 5);
  EXPECT_EQ(cache_hits_window_belady(trace, 0, {}), 0);
  EXPECT_EQ(cache_hits_window_belady(trace, 5, {}), 7);  // only the compulsory misses
}

TEST(CacheSimulation, TheWindowDecidesWhatIsKept) {
  // One slot; row 1 comes back two batches later. Seeing one batch ahead keeps it (2 is not
  // admitted); seeing only the current batch, 2 replaces it.
  const Trace trace = {{1}, {2}, {1}};
  EXPECT_EQ(cache_hits_window_belady(trace, 1, {.window = 1, .bypass = true}), 1);
  EXPECT_EQ(cache_hits_window_belady(trace, 1, {.window = 0, .bypass = true}), 0);
  EXPECT_EQ(cache_hits_window_belady(trace, 1, {.window = -1, .bypass = true}), 1);
  EXPECT_EQ(cache_hits_window_belady(trace, 1, {.window = -1, .bypass = false}), 0);
}

TEST(CacheSimulation, RowsWithNoKnownUseGoColdestFirst) {
  // Row 5 is pre-filled and hotter than 7; with no use of either in the window, 7 is declined.
  const Trace trace = {{7}, {5}};
  const std::vector<int64_t> rank = {0, 0, 0, 0, 0, /*5:*/ 0, 0, /*7:*/ 1};
  EXPECT_EQ(cache_hits_window_belady(trace, 1,
                                     {.window = 0, .bypass = true, .rank = &rank, .prefill = {5}}),
            1);
  // Least recently used first instead: 7 (used later than the pre-filled 5) evicts it.
  EXPECT_EQ(cache_hits_window_belady(trace, 1, {.window = 0, .bypass = true, .prefill = {5}}), 0);
}

TEST(CacheSimulation, MatchesTheSlowReferenceOnRandomTraces) {
  std::mt19937_64 rng(3);
  for (int round = 0; round < 40; ++round) {
    Trace trace(static_cast<size_t>(3 + rng() % 12));
    for (auto& batch : trace) {
      batch.resize(1 + rng() % 6);
      for (auto& id : batch) id = static_cast<int64_t>(rng() % (rng() % 2 ? 8 : 30));
    }
    std::vector<int64_t> rank(30);
    for (auto& r : rank) r = static_cast<int64_t>(rng() % 30);
    const int64_t capacity = static_cast<int64_t>(rng() % 10);
    for (const int64_t window : {-1, 0, 1, 2, 4}) {
      for (const bool bypass : {false, true}) {
        for (const bool ranked : {false, true}) {
          WindowBeladyPolicy policy{
              .window = window,
              .bypass = bypass,
              .rank = ranked ? &rank : nullptr,
              .prefill = ranked ? std::vector<int64_t>{3, 1, 4, 1, 5} : std::vector<int64_t>{}};
          EXPECT_EQ(cache_hits_window_belady(trace, capacity, policy),
                    reference_hits(trace, capacity, policy))
              << "round " << round << " window " << window << " bypass " << bypass << " ranked "
              << ranked;
        }
      }
    }
  }
}

TEST(CacheSimulation, OfflineOptimumBoundsEveryPolicy) {
  std::mt19937_64 rng(5);
  Trace trace(50);
  for (auto& batch : trace) {
    batch.resize(8);
    for (auto& id : batch) id = static_cast<int64_t>(rng() % 40);
  }
  for (const int64_t capacity : {1, 4, 16}) {
    const int64_t optimum = cache_hits_window_belady(trace, capacity, {.bypass = true});
    EXPECT_LE(cache_hits_sieve(trace, capacity), optimum);
    EXPECT_LE(cache_hits_window_belady(trace, capacity, {.window = 3, .bypass = true}), optimum);
  }
}

TEST(CacheSimulation, SieveOnAHandTrace) {
  // 1 2 1 | 3 evicts 2 (1 was visited, its bit is cleared) | 2 evicts 1 | 3 hits.
  EXPECT_EQ(cache_hits_sieve(one_row_batches({1, 2, 1, 3, 2, 3}), 2), 2);
  EXPECT_EQ(cache_hits_sieve(one_row_batches({1, 1}), 0), 0);
}

TEST(CacheSimulation, FirstUsedRows) {
  EXPECT_EQ(first_used_rows(Trace{{4, 2, 4}, {9, 2, 1}}, 3), (std::vector<int64_t>{4, 2, 9}));
  EXPECT_TRUE(first_used_rows(Trace{{4}}, 0).empty());
}

TEST(CacheSimulation, BadInputsNameTheValue) {
  const Trace trace = {{1, -3}};
  try {
    cache_hits_window_belady(trace, 2, {});
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("-3"), std::string::npos) << e.what();
  }
  try {
    cache_hits_sieve(Trace{{1}}, -2);
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("-2"), std::string::npos) << e.what();
  }
  EXPECT_THROW(cache_hits_window_belady(Trace{{1}}, -1, {}), ValueError);
}

}  // namespace
}  // namespace volley
