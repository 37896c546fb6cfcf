// `volley bench disk` and `volley bench cache`: the disk's own random-read limit (an io_uring,
// O_DIRECT probe, as fio --rw=randread --direct=1 --ioengine=io_uring --iodepth=64 does), and
// the hit rates of the disk tier's row-cache policies on an epoch's real access trace against
// Belady's offline optimum.
#include <fcntl.h>
#include <liburing.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <list>
#include <random>
#include <set>
#include <tuple>
#include <unordered_map>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "bench_disk.h"
#include "bench_util.h"
#include "volley/core/error.h"
#include "volley/feature/hotness.h"
#include "volley/graph/dataset.h"
#include "volley/sampling/neighbor_sampler.h"

namespace volley::cli {
namespace {

// Random `block`-byte O_DIRECT reads of `path`, `depth` in flight, for `seconds`.
nlohmann::json probe_disk(const std::string& path, double seconds, unsigned depth, size_t block) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC);
  VOLLEY_REQUIRE(fd >= 0, IoError, "cannot open '{}' with O_DIRECT: {}", path,
                 internal::errno_text(errno));
  struct stat info {};
  fstat(fd, &info);
  const uint64_t blocks = static_cast<uint64_t>(info.st_size) / block;
  VOLLEY_REQUIRE(blocks > 0, ValueError, "'{}' is smaller than one {}-byte block", path, block);
  io_uring ring{};
  const int init = io_uring_queue_init(depth, &ring, 0);
  VOLLEY_REQUIRE(init == 0, IoError, "io_uring refused: {}", internal::errno_text(-init));
  auto* memory = static_cast<std::byte*>(std::aligned_alloc(4096, depth * block));
  std::mt19937_64 rng(1);
  int64_t reads = 0;
  const auto start = Clock::now();
  auto submit = [&](unsigned slot) {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring);
    io_uring_prep_read(sqe, fd, memory + slot * block, static_cast<unsigned>(block),
                       (rng() % blocks) * block);
    io_uring_sqe_set_data64(sqe, slot);
  };
  for (unsigned slot = 0; slot < depth; ++slot) submit(slot);
  io_uring_submit(&ring);
  unsigned in_flight = depth;
  bool stopping = false;
  while (in_flight > 0) {
    io_uring_cqe* cqe = nullptr;
    VOLLEY_REQUIRE(io_uring_wait_cqe(&ring, &cqe) == 0, IoError, "io_uring wait failed");
    const auto slot = static_cast<unsigned>(io_uring_cqe_get_data64(cqe));
    VOLLEY_REQUIRE(cqe->res > 0, IoError, "probe read of '{}' failed: {}", path,
                   internal::errno_text(-cqe->res));
    io_uring_cqe_seen(&ring, cqe);
    --in_flight;
    ++reads;
    if (!stopping && (reads & 255) == 0) stopping = seconds_since(start) >= seconds;
    if (!stopping) {
      submit(slot);
      io_uring_submit(&ring);
      ++in_flight;
    }
  }
  const double elapsed = seconds_since(start);
  io_uring_queue_exit(&ring);
  std::free(memory);
  ::close(fd);
  const double iops = static_cast<double>(reads) / elapsed;
  return {{"bench", "disk"},
          {"file", path},
          {"block_bytes", block},
          {"depth", depth},
          {"seconds", elapsed},
          {"iops", iops},
          {"mib_per_second", iops * static_cast<double>(block) / (1 << 20)}};
}

// The rows of each batch of an epoch, as the loader samples them (a pure function of (seed,
// batch index)): the access trace every policy is measured on.
std::vector<std::vector<int64_t>> epoch_trace(const Dataset& dataset, const CacheBenchSettings& s) {
  const std::vector<int64_t> seeds = bench_seed_pool(dataset, s.seed);
  const NeighborSamplerOptions options{parse_fanouts(s.fanout), false, false, s.seed};
  const int64_t available = static_cast<int64_t>(seeds.size()) / s.batch_size;
  const int64_t batches = s.batches > 0 ? std::min(s.batches, available) : available;
  std::vector<std::vector<int64_t>> trace(static_cast<size_t>(batches));
  SamplerScratch scratch;
  for (int64_t b = 0; b < batches; ++b) {
    std::span<const int64_t> batch(seeds.data() + b * s.batch_size,
                                   static_cast<size_t>(s.batch_size));
    const auto sub =
        sample_neighbors(dataset.graph, batch, options, static_cast<uint64_t>(b), &scratch);
    const Array& nodes = sub.nodes;
    trace[static_cast<size_t>(b)].assign(nodes.data<int64_t>(),
                                         nodes.data<int64_t>() + nodes.numel());
    if (b % 50 == 0) std::cerr << fmt::format("\rsampling the trace: batch {}/{}", b, batches);
  }
  std::cerr << "\r" << std::string(48, ' ') << "\r";
  return trace;
}

struct Access {
  int64_t id;
  int64_t batch;
  int64_t next;  // position of this id's next access, or INT64_MAX
  int64_t prev;  // position of its previous access, or -1
};

std::vector<Access> flatten(const std::vector<std::vector<int64_t>>& trace) {
  std::vector<Access> accesses;
  for (size_t b = 0; b < trace.size(); ++b) {
    for (const int64_t id : trace[b])
      accesses.push_back({id, static_cast<int64_t>(b), INT64_MAX, -1});
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

double static_hit_rate(const std::vector<Access>& accesses, const Array& hot, int64_t capacity) {
  std::vector<uint8_t> cached(static_cast<size_t>(hot.numel()), 0);
  for (int64_t i = 0; i < std::min(capacity, hot.numel()); ++i) cached[hot.data<int64_t>()[i]] = 1;
  int64_t hits = 0;
  for (const Access& a : accesses) hits += cached[static_cast<size_t>(a.id)];
  return static_cast<double>(hits) / static_cast<double>(accesses.size());
}

double sieve_hit_rate(const std::vector<Access>& accesses, int64_t capacity) {
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
  return static_cast<double>(hits) / static_cast<double>(accesses.size());
}

// Belady's rule over a window of the coming batches, as the lookahead policy and the offline
// optimum apply it. A cached row's next use is known when it falls within `window` batches of
// the current one (window < 0: the whole epoch, the offline optimum); rows with a known next use
// are evicted farthest first, after every row with no known use, which go in order of
// `unknown_priority` (largest first). With `bypass`, a missed row is not admitted when it would
// itself be the first victim. `prefill` rows start cached (not counted as hits or misses).
// Returns the hits: accesses served from the cache without a disk read at access time.
struct WindowPolicy {
  int64_t window = -1;
  bool bypass = false;
  const std::vector<int64_t>* priority = nullptr;  // per row; nullptr: oldest admitted first
  std::vector<int64_t> prefill;
};

int64_t window_belady_hits(const std::vector<Access>& accesses, int64_t capacity,
                           const WindowPolicy& policy) {
  // Keys: (0, next use, id) for rows with a known next use; (1, priority, id) for the others.
  // The victim is the largest key.
  using Key = std::tuple<int, int64_t, int64_t>;
  std::set<Key> order;
  std::unordered_map<int64_t, Key> key_of;
  int64_t tick = 0;  // accesses so far: with no priority, the least recently used goes first
  auto unknown_key = [&](int64_t id) {
    const int64_t p = policy.priority ? (*policy.priority)[static_cast<size_t>(id)] : -tick;
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

double rate(int64_t hits, const std::vector<Access>& accesses) {
  return static_cast<double>(hits) / static_cast<double>(accesses.size());
}

// The rows whose first use is earliest: the best possible pre-filled contents.
std::vector<int64_t> first_used_rows(const std::vector<Access>& accesses, int64_t capacity) {
  std::vector<int64_t> rows;
  for (const Access& a : accesses) {
    if (static_cast<int64_t>(rows.size()) >= capacity) break;
    if (a.prev < 0) rows.push_back(a.id);
  }
  return rows;
}

}  // namespace

void run_cache_bench(const CacheBenchSettings& settings) {
  const Dataset dataset = load_dataset(settings.dataset, {.validate_graph = false});
  VOLLEY_REQUIRE(dataset.features.has_value(), ValueError, "dataset '{}' has no features",
                 settings.dataset);
  const size_t row_bytes =
      dataset.features->nbytes() / static_cast<size_t>(dataset.features->dim(0));
  const auto capacity = static_cast<int64_t>(settings.cache_bytes / row_bytes);
  const auto trace = epoch_trace(dataset, settings);
  const std::vector<Access> accesses = flatten(trace);
  const Array hot = hotness_by_degree(dataset.graph);
  nlohmann::json line = {{"bench", "cache"},
                         {"dataset", dataset.name},
                         {"batches", trace.size()},
                         {"batch_size", settings.batch_size},
                         {"fanout", settings.fanout},
                         {"rows_accessed", accesses.size()},
                         {"cache_bytes", settings.cache_bytes},
                         {"cache_rows", capacity}};
  std::vector<int64_t> rank(static_cast<size_t>(hot.numel()));  // 0: the hottest row
  for (int64_t r = 0; r < hot.numel(); ++r) rank[static_cast<size_t>(hot.data<int64_t>()[r])] = r;
  const std::vector<int64_t> hottest(hot.data<int64_t>(),
                                     hot.data<int64_t>() + std::min(capacity, hot.numel()));
  const int64_t k = settings.lookahead;
  line["lookahead_batches"] = k;
  line["hit_rate_static_degree"] = static_hit_rate(accesses, hot, capacity);
  line["hit_rate_sieve"] = sieve_hit_rate(accesses, capacity);
  // The earlier simulation: Belady within the window, rows with no use in it least recently
  // used first, cold start, every miss admitted.
  line["hit_rate_lookahead_lru"] =
      rate(window_belady_hits(accesses, capacity, {.window = k}), accesses);
  // The lookahead policy: pre-filled with the hottest rows by degree, rows with no use in the
  // window evicted coldest (lowest degree) first, a miss not admitted when it would be the
  // first victim.
  line["hit_rate_lookahead"] =
      rate(window_belady_hits(accesses, capacity,
                              {.window = k, .bypass = true, .priority = &rank, .prefill = hottest}),
           accesses);
  line["hit_rate_belady_offline"] =
      rate(window_belady_hits(accesses, capacity, {.bypass = true}), accesses);
  line["hit_rate_belady_offline_prefilled"] =
      rate(window_belady_hits(accesses, capacity,
                              {.bypass = true, .prefill = first_used_rows(accesses, capacity)}),
           accesses);
  std::cout << line.dump() << std::endl;
}

void run_disk_probe(const std::string& file, double seconds) {
  std::cout << probe_disk(file, seconds, 64, 4096).dump() << std::endl;
}

void add_bench_disk(CLI::App& bench) {
  static std::string file;
  static double seconds = 10;
  auto* disk = bench.add_subcommand(
      "disk", "The disk's 4 KiB random-read limit: O_DIRECT reads, io_uring, 64 in flight");
  disk->add_option("--file", file, "A large file on the disk to probe (only read)")->required();
  disk->add_option("--seconds", seconds, "How long to probe")->check(CLI::PositiveNumber);
  disk->callback([] { run_disk_probe(file, seconds); });

  static CacheBenchSettings settings;
  auto* cache = bench.add_subcommand(
      "cache",
      "Hit rates of the disk tier's row-cache policies (static degree, SIEVE, lookahead) on an "
      "epoch's sampled rows, against Belady's offline optimum");
  cache->add_option("--dataset", settings.dataset, "Dataset directory")->required();
  cache->add_option("--fanout", settings.fanout, "Fanouts per hop, comma separated");
  cache->add_option("--batch-size", settings.batch_size, "Seeds per batch")
      ->check(CLI::PositiveNumber);
  cache->add_option("--batches", settings.batches, "Batches of the trace (0: the whole epoch)");
  cache->add_option("--cache-bytes", settings.cache_bytes, "Cache budget (e.g. 8G)")
      ->transform(CLI::AsSizeValue(false));
  cache->add_option("--lookahead", settings.lookahead, "Batches the lookahead policy sees ahead")
      ->check(CLI::NonNegativeNumber);
  cache->add_option("--seed", settings.seed, "Random seed");
  cache->callback([] { run_cache_bench(settings); });
}

}  // namespace volley::cli
