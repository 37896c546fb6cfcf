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
#include <random>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "bench_disk.h"
#include "bench_util.h"
#include "commands.h"
#include "volley/core/error.h"
#include "volley/feature/cache_simulation.h"
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

// Static hotness: the first `capacity` rows of `hot` are cached from the start, nothing else.
int64_t static_hits(std::span<const std::vector<int64_t>> trace, const Array& hot,
                    int64_t capacity) {
  std::vector<uint8_t> cached(static_cast<size_t>(hot.numel()), 0);
  for (int64_t i = 0; i < std::min(capacity, hot.numel()); ++i) cached[hot.data<int64_t>()[i]] = 1;
  int64_t hits = 0;
  for (const auto& batch : trace) {
    for (const int64_t id : batch) hits += cached[static_cast<size_t>(id)];
  }
  return hits;
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
  int64_t accesses = 0;
  for (const auto& batch : trace) accesses += static_cast<int64_t>(batch.size());
  const Array hot = hotness_by_degree(dataset.graph);
  nlohmann::json line = {{"bench", "cache"},
                         {"dataset", dataset.name},
                         {"batches", trace.size()},
                         {"batch_size", settings.batch_size},
                         {"fanout", settings.fanout},
                         {"rows_accessed", accesses},
                         {"cache_bytes", settings.cache_bytes},
                         {"cache_rows", capacity}};
  auto rate = [&](int64_t hits) {
    return accesses == 0 ? 0.0 : static_cast<double>(hits) / static_cast<double>(accesses);
  };
  std::vector<int64_t> rank(static_cast<size_t>(hot.numel()));  // 0: the hottest row
  for (int64_t r = 0; r < hot.numel(); ++r) rank[static_cast<size_t>(hot.data<int64_t>()[r])] = r;
  const std::vector<int64_t> hottest(hot.data<int64_t>(),
                                     hot.data<int64_t>() + std::min(capacity, hot.numel()));
  const int64_t k = settings.lookahead;
  line["lookahead_batches"] = k;
  line["hit_rate_static_degree"] = rate(static_hits(trace, hot, capacity));
  line["hit_rate_sieve"] = rate(cache_hits_sieve(trace, capacity));
  // The earlier simulation: Belady within the window, rows with no use in it least recently
  // used first, cold start, every miss admitted.
  line["hit_rate_lookahead_lru"] = rate(cache_hits_window_belady(trace, capacity, {.window = k}));
  // The lookahead policy: pre-filled with the hottest rows by degree, rows with no use in the
  // window evicted coldest (lowest degree) first, a miss not admitted when it would be the
  // first victim.
  line["hit_rate_lookahead"] = rate(cache_hits_window_belady(
      trace, capacity, {.window = k, .bypass = true, .rank = &rank, .prefill = hottest}));
  line["hit_rate_belady_offline"] =
      rate(cache_hits_window_belady(trace, capacity, {.bypass = true}));
  line["hit_rate_belady_offline_prefilled"] = rate(cache_hits_window_belady(
      trace, capacity, {.bypass = true, .prefill = first_used_rows(trace, capacity)}));
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
  disk->add_option("--seconds", seconds, "How long to probe")->check(kPositiveSeconds);
  disk->callback([] { run_disk_probe(file, seconds); });

  static CacheBenchSettings settings;
  auto* cache = bench.add_subcommand(
      "cache",
      "Hit rates of the disk tier's row-cache policies (static degree, SIEVE, lookahead) on an "
      "epoch's sampled rows, against Belady's offline optimum");
  cache->add_option("--dataset", settings.dataset, "Dataset directory")->required();
  cache->add_option("--fanout", settings.fanout, "Fanouts per hop, comma separated");
  cache->add_option("--batch-size", settings.batch_size, "Seeds per batch")->check(kPositive);
  cache->add_option("--batches", settings.batches, "Batches of the trace (0: the whole epoch)")
      ->check(kNonNegative);
  cache->add_option("--cache-bytes", settings.cache_bytes, "Cache budget (e.g. 8G)")
      ->check(kByteSize)
      ->transform(CLI::AsSizeValue(false));
  cache->add_option("--lookahead", settings.lookahead, "Batches the lookahead policy sees ahead")
      ->check(kNonNegative);
  cache->add_option("--seed", settings.seed, "Random seed")->check(kSeed);
  cache->callback([] { run_cache_bench(settings); });
}

}  // namespace volley::cli
