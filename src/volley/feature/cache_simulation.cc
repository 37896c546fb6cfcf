#include "volley/feature/cache_simulation.h"

#include <climits>
#include <iterator>
#include <list>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "volley/core/error.h"

namespace volley {
namespace {

struct Access {
  int64_t id;
  int64_t batch;
  int64_t next;  // position of this id's next access, or INT64_MAX
  int64_t prev;  // position of its previous access, or -1
};

// The trace's accesses in order, each linked to the previous and next use of its row.
std::vector<Access> flatten(std::span<const std::vector<int64_t>> trace) {
  std::vector<Access> accesses;
  for (size_t b = 0; b < trace.size(); ++b) {
    for (const int64_t id : trace[b]) {
      VOLLEY_REQUIRE(id >= 0, ValueError, "row id {} in batch {} of the trace is negative", id, b);
      accesses.push_back({id, static_cast<int64_t>(b), INT64_MAX, -1});
    }
  }
  std::unordered_map<int64_t, int64_t> seen;
  for (int64_t i = static_cast<int64_t>(accesses.size()) - 1; i >= 0; --i) {
    auto [it, fresh] = seen.try_emplace(accesses[i].id, i);
    if (!fresh) {
      accesses[i].next = it->second;
      accesses[it->second].prev = i;
      it->second = i;
    }
  }
  return accesses;
}

void check_capacity(int64_t capacity) {
  VOLLEY_REQUIRE(capacity >= 0, ValueError, "cache capacity must be >= 0 rows, got {}", capacity);
}

}  // namespace

int64_t cache_hits_sieve(std::span<const std::vector<int64_t>> trace, int64_t capacity) {
  check_capacity(capacity);
  if (capacity == 0) return 0;
  const std::vector<Access> accesses = flatten(trace);
  std::list<std::pair<int64_t, bool>> queue;  // front = head (newest)
  std::unordered_map<int64_t, std::list<std::pair<int64_t, bool>>::iterator> where;
  auto hand = queue.end();
  int64_t hits = 0;
  for (const Access& a : accesses) {
    if (auto it = where.find(a.id); it != where.end()) {
      it->second->second = true;
      ++hits;
      continue;
    }
    if (static_cast<int64_t>(where.size()) >= capacity) {
      if (hand == queue.end()) hand = std::prev(queue.end());
      while (hand->second) {
        hand->second = false;
        hand = hand == queue.begin() ? std::prev(queue.end()) : std::prev(hand);
      }
      auto victim = hand;
      hand = victim == queue.begin() ? queue.end() : std::prev(victim);
      where.erase(victim->first);
      queue.erase(victim);
    }
    queue.emplace_front(a.id, false);
    where[a.id] = queue.begin();
  }
  return hits;
}

int64_t cache_hits_window_belady(std::span<const std::vector<int64_t>> trace, int64_t capacity,
                                 const WindowBeladyPolicy& policy) {
  check_capacity(capacity);
  const std::vector<Access> accesses = flatten(trace);
  // Keys: (0, next use, id) for rows with a known next use; (1, priority, id) for the others.
  // The victim is the largest key.
  using Key = std::tuple<int, int64_t, int64_t>;
  std::set<Key> order;
  std::unordered_map<int64_t, Key> key_of;
  int64_t tick = 0;  // accesses so far: with no priority, the least recently used goes first
  auto unknown_key = [&](int64_t id) {
    const int64_t p = policy.rank ? (*policy.rank)[static_cast<size_t>(id)] : -tick;
    return Key{1, p, id};
  };
  std::vector<size_t> batch_begin;  // first access of each batch, then accesses.size()
  for (size_t i = 0; i < accesses.size(); ++i) {
    if (i == 0 || accesses[i].batch != accesses[i - 1].batch) batch_begin.push_back(i);
  }
  batch_begin.push_back(accesses.size());
  auto next_known = [&](size_t i) {  // the next use of access i's row, if within the window
    const int64_t next = accesses[i].next;
    if (next == INT64_MAX) return false;
    return policy.window < 0 || accesses[next].batch <= accesses[i].batch + policy.window;
  };
  // Prefilled rows: their first use is their next use.
  std::unordered_map<int64_t, size_t> first_use;
  for (size_t i = accesses.size(); i-- > 0;) first_use[accesses[i].id] = i;
  for (const int64_t id : policy.prefill) {
    if (static_cast<int64_t>(key_of.size()) >= capacity) break;
    auto f = first_use.find(id);
    const bool known =
        f != first_use.end() && (policy.window < 0 || accesses[f->second].batch <= policy.window);
    const Key key = known ? Key{0, static_cast<int64_t>(f->second), id} : unknown_key(id);
    if (key_of.emplace(id, key).second) order.insert(key);
  }
  int64_t hits = 0;
  for (size_t i = 0; i < accesses.size(); ++i) {
    const Access& a = accesses[i];
    ++tick;
    const bool new_batch = i == 0 || accesses[i - 1].batch != a.batch;
    if (policy.window >= 0 && new_batch) {
      // Batch a.batch + window enters the window: cached rows it uses next get a known use.
      const auto entering = static_cast<size_t>(a.batch + policy.window);
      if (entering + 1 < batch_begin.size()) {
        for (size_t j = batch_begin[entering]; j < batch_begin[entering + 1]; ++j) {
          if (accesses[j].prev >= 0 && static_cast<size_t>(accesses[j].prev) >= i) continue;
          auto cached = key_of.find(accesses[j].id);
          if (cached == key_of.end() || std::get<0>(cached->second) == 0) continue;
          order.erase(cached->second);
          cached->second = Key{0, static_cast<int64_t>(j), accesses[j].id};
          order.insert(cached->second);
        }
      }
    }
    const Key key = next_known(i) ? Key{0, a.next, a.id} : unknown_key(a.id);
    if (auto it = key_of.find(a.id); it != key_of.end()) {
      ++hits;
      order.erase(it->second);
      it->second = key;
      order.insert(key);
      continue;
    }
    if (static_cast<int64_t>(key_of.size()) >= capacity) {
      if (capacity == 0) continue;
      const Key victim = *order.rbegin();
      if (policy.bypass && key > victim) continue;
      order.erase(victim);
      key_of.erase(std::get<2>(victim));
    }
    key_of.emplace(a.id, key);
    order.insert(key);
  }
  return hits;
}

std::vector<int64_t> first_used_rows(std::span<const std::vector<int64_t>> trace,
                                     int64_t capacity) {
  std::vector<int64_t> rows;
  std::unordered_set<int64_t> seen;
  for (const auto& batch : trace) {
    for (const int64_t id : batch) {
      if (static_cast<int64_t>(rows.size()) >= capacity) return rows;
      if (seen.insert(id).second) rows.push_back(id);
    }
  }
  return rows;
}

}  // namespace volley
