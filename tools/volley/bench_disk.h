// tools/volley/bench_disk.h — `volley bench disk` (the disk's random-read limit) and `volley
// bench cache` (row-cache policies' hit rates on an epoch's trace against Belady's optimum).
#pragma once

#include <cstdint>
#include <string>

namespace CLI {
class App;
}

namespace volley::cli {

struct CacheBenchSettings {
  std::string dataset;
  std::string fanout = "10,5";
  int64_t batch_size = 512;
  int64_t batches = 0;  // 0: the whole epoch
  size_t cache_bytes = size_t{8} << 30;
  int64_t lookahead = 8;  // batches the lookahead policy sees ahead
  uint64_t seed = 0;
};

// One JSON line: hit rates of static hotness (degree), SIEVE, lookahead-Belady (window of
// settings.lookahead batches) and Belady's offline optimum, on the epoch's access trace.
void run_cache_bench(const CacheBenchSettings& settings);
// One JSON line: 4 KiB random O_DIRECT reads of `file`, 64 in flight (io_uring), for `seconds`.
void run_disk_probe(const std::string& file, double seconds);
// Adds `bench disk` and `bench cache` to `bench`.
void add_bench_disk(CLI::App& bench);

}  // namespace volley::cli
