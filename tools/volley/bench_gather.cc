// `volley bench gather`: FeatureStore::gather bandwidth against a plain sequential memcpy of the
// same bytes, measured in the same run (ARCHITECTURE.md, "What is measured, and how").
//
//   volley bench gather --rows 2400000 --dim 100 --dtype float32 --batch 150000 --threads 1
//
// The table is generated (seeded) in the chosen tier: heap memory, a shared-memory segment, or
// an .npy file that is then memory-mapped (written to --file, removed afterwards). Batches are
// uniform random ids; gathers and memcpys alternate batch by batch, so both see the same machine
// state. On one thread the same rows are also read once without writing anything (prefetched as
// the gather prefetches): the random-access limit no gather can beat. Prints one JSON line.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "bench_cuda.h"
#include "bench_util.h"
#include "commands.h"
#include "volley/core/half.h"
#include "volley/core/parallel.h"
#include "volley/core/philox.h"
#include "volley/feature/feature_store.h"
#include "volley/feature/gather.h"
#include "volley/graph/io/npy.h"

namespace volley::cli {
namespace {

struct GatherSettings {
  int64_t rows = 2'400'000;
  int64_t dim = 100;
  std::string dtype = "float32";
  std::string out_dtype;  // default: the stored dtype
  int64_t batch = 150'000;
  int threads = 1;
  int64_t batches = 20;
  std::string tier = "host";
  std::string file;  // mapped tier: where to write the .npy (default: under /tmp)
  std::string stores = "auto";
  int64_t prefetch_bytes = 0;
  uint64_t seed = 0;
  bool huge_pages = true;
  std::string device = "cpu";    // cpu: host tiers; cuda: GPU tiers (FeatureStore::gather)
  double cache_fraction = 0.25;  // cuda: share of the table in device memory
  int cuda_device = 0;
};

void advise_huge_pages(std::byte* data, size_t bytes) {
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(data) + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(data) + bytes) & ~(kHuge - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
}

// Fills `bytes` at `data` with seeded pseudo-random bytes; for float dtypes, values that are
// finite numbers in [-1, 1) (random bit patterns would include NaNs, which are slow to convert on
// some machines and make no realistic feature matrix).
void fill_table(std::byte* data, int64_t rows, int64_t width, DType dtype, uint64_t seed) {
  const size_t row_bytes = static_cast<size_t>(width) * dtype_size(dtype);
  parallel_for(0, rows, 4096, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      PhiloxStream rng(seed, {{static_cast<uint32_t>(r), static_cast<uint32_t>(r >> 32), 7, 0}});
      std::byte* row = data + static_cast<size_t>(r) * row_bytes;
      for (int64_t j = 0; j < width; ++j) {
        const uint32_t bits = rng.next();
        const float value = static_cast<float>(bits >> 8) * (2.0f / 16777216.0f) - 1.0f;
        switch (dtype) {
          case DType::kFloat32:
            std::memcpy(row + j * 4, &value, 4);
            break;
          case DType::kFloat16: {
            const uint16_t half = float_to_half(value);
            std::memcpy(row + j * 2, &half, 2);
            break;
          }
          case DType::kBFloat16: {
            const uint16_t half = float_to_bfloat16(value);
            std::memcpy(row + j * 2, &half, 2);
            break;
          }
          default: {
            const size_t size = dtype_size(dtype);
            for (size_t b = 0; b < size; ++b) {
              row[static_cast<size_t>(j) * size + b] = static_cast<std::byte>(bits >> (8 * b));
            }
          }
        }
      }
    }
  });
}

// Random batches of ids (seeded).
std::vector<std::vector<int64_t>> random_batches(const GatherSettings& settings) {
  std::vector<std::vector<int64_t>> batches(static_cast<size_t>(settings.batches));
  PhiloxStream rng(settings.seed, {{0, 0, 0x6a7, 0}});
  for (auto& ids : batches) {
    ids.resize(static_cast<size_t>(settings.batch));
    for (auto& id : ids) {
      id = static_cast<int64_t>(rng.bounded64(static_cast<uint64_t>(settings.rows)));
    }
  }
  return batches;
}

// --device cuda: the table's hottest rows (here: the first, as ids are uniform) in device
// memory, the rest in pinned host memory; device ids gathered into device memory.
void run_cuda_gather(const GatherSettings& settings, DType dtype) {
  require_cuda_device("--device", settings.cuda_device);
  VOLLEY_REQUIRE(settings.out_dtype.empty() || dtype_from_name(settings.out_dtype) == dtype,
                 ValueError, "--device cuda gathers the stored dtype; drop --out-dtype");
  Array table = Array::empty(dtype, {settings.rows, settings.dim});
  fill_table(table.raw_data(), settings.rows, settings.dim, dtype, settings.seed);
  auto line = run_cuda_gather_bench(table, random_batches(settings),
                                    {.device = settings.cuda_device,
                                     .cache_fraction = settings.cache_fraction,
                                     .seed = settings.seed});
  line["load_average"] = load_average().one;
  std::cout << line.dump() << std::endl;
}

// The bench's table (seeded values) as a FeatureStore in the requested tier; the mapped tier
// writes it to `file` (removed by the caller).
FeatureStore table_store(const GatherSettings& settings, DType dtype, std::string& file) {
  const std::vector<int64_t> shape = {settings.rows, settings.dim};
  FeatureStore store;
  Array table = Array::empty(dtype, shape);
  if (settings.huge_pages && settings.tier == "host") {
    advise_huge_pages(table.raw_data(), table.nbytes());
  }
  fill_table(table.raw_data(), settings.rows, settings.dim, dtype, settings.seed);
  if (settings.tier == "host") {
    store = FeatureStore(table);
  } else if (settings.tier == "shared") {
    store = FeatureStore::create_shared(table);
  } else {
    file = settings.file.empty()
               ? fmt::format("/tmp/volley-bench-gather-{}.npy", static_cast<long>(getpid()))
               : settings.file;
    write_npy(file, table);
    table = Array();
    store = FeatureStore::from_npy(file);
  }
  return store;
}

// The random-read limit a gather cannot beat: every row of `ids` read once (summed, nothing
// written), its lines prefetched `prefetch` bytes of rows ahead as the gather kernel does.
// Returns the seconds it took; `sink` keeps the sums alive.
double random_read_seconds(const std::byte* base, size_t row_bytes, const std::vector<int64_t>& ids,
                           size_t prefetch, uint64_t& sink) {
  const size_t ahead = std::clamp<size_t>((prefetch + row_bytes - 1) / row_bytes, 1, 32);
  const size_t words = row_bytes / sizeof(uint64_t);
  const auto start = Clock::now();
  uint64_t sums[4] = {};  // independent chains: the loads, not the adds, set the pace
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i + ahead < ids.size()) {
      const std::byte* next = base + static_cast<size_t>(ids[i + ahead]) * row_bytes;
      for (size_t line = 0; line < row_bytes; line += 64) __builtin_prefetch(next + line, 0, 2);
    }
    const auto* row =
        reinterpret_cast<const uint64_t*>(base + static_cast<size_t>(ids[i]) * row_bytes);
    size_t w = 0;
    for (; w + 4 <= words; w += 4) {
      sums[0] += row[w], sums[1] += row[w + 1], sums[2] += row[w + 2], sums[3] += row[w + 3];
    }
    for (; w < words; ++w) sums[0] += row[w];
  }
  sink += sums[0] + sums[1] + sums[2] + sums[3];
  return std::chrono::duration<double>(Clock::now() - start).count();
}

struct Timings {
  double gather = 0, memcpy = 0, read = 0;  // seconds over all batches
  uint64_t sink = 0;                        // the read pass's sums
};

// Gathers each batch, then copies the same bytes sequentially, then (one thread) reads its rows
// without writing: the three alternate batch by batch.
Timings time_batches(const GatherSettings& settings, const FeatureStore& store,
                     const std::vector<std::vector<int64_t>>& batches, const GatherOptions& options,
                     Buffer& out, DType dtype) {
  const Array& rows = store.tiers().front().rows();
  const size_t out_bytes = out.size();
  const size_t row_bytes = static_cast<size_t>(settings.dim) * dtype_size(dtype);
  const size_t prefetch =
      settings.prefetch_bytes > 0 ? static_cast<size_t>(settings.prefetch_bytes) : size_t{4096};
  const size_t windows = rows.nbytes() / out_bytes;
  Timings timed;
  for (size_t k = 0; k < batches.size(); ++k) {
    const auto start = Clock::now();
    store.gather(batches[k], out.data(), options);
    const auto middle = Clock::now();
    std::memcpy(out.data(), rows.raw_data() + (k % windows) * out_bytes, out_bytes);
    const auto end = Clock::now();
    timed.gather += std::chrono::duration<double>(middle - start).count();
    timed.memcpy += std::chrono::duration<double>(end - middle).count();
    if (settings.threads == 1) {
      timed.read +=
          random_read_seconds(rows.raw_data(), row_bytes, batches[k], prefetch, timed.sink);
    }
  }
  return timed;
}

void run_gather_bench(const GatherSettings& settings) {
  const DType dtype = dtype_from_name(settings.dtype);
  VOLLEY_REQUIRE(settings.device == "cpu" || settings.device == "cuda", ValueError,
                 "--device must be cpu or cuda, got '{}'", settings.device);
  if (settings.device == "cuda") return run_cuda_gather(settings, dtype);
  const DType out_dtype = settings.out_dtype.empty() ? dtype : dtype_from_name(settings.out_dtype);
  VOLLEY_REQUIRE(settings.tier == "host" || settings.tier == "shared" || settings.tier == "mapped",
                 ValueError, "--tier must be host, shared or mapped, got '{}'", settings.tier);
  VOLLEY_REQUIRE(
      settings.stores == "auto" || settings.stores == "cached" || settings.stores == "streaming",
      ValueError, "--stores must be auto, cached or streaming, got '{}'", settings.stores);
  set_num_threads(settings.threads);
  set_gather_prefetch_bytes(static_cast<size_t>(settings.prefetch_bytes));

  // The table, in the requested tier.
  std::string file;  // the mapped tier's .npy
  FeatureStore store = table_store(settings, dtype, file);
  const Array& rows = store.tiers().front().rows();

  // Random batches (seeded), the output buffer (touched once), and the memcpy source windows.
  const std::vector<std::vector<int64_t>> batches = random_batches(settings);
  const size_t out_bytes =
      static_cast<size_t>(settings.batch * settings.dim) * dtype_size(out_dtype);
  Buffer out = Buffer::zeros(out_bytes);
  const size_t table_bytes = rows.nbytes();
  VOLLEY_REQUIRE(out_bytes <= table_bytes, ValueError,
                 "the batch's {} output bytes exceed the {}-byte table: choose --batch <= --rows",
                 out_bytes, table_bytes);

  GatherOptions options{.out_dtype = out_dtype, .threads = settings.threads};
  if (settings.stores != "auto") options.streaming_stores = settings.stores == "streaming";
  // Warm-up: page in the table (the mapped file's page cache) and the code paths.
  {
    volatile uint64_t sink = 0;
    for (size_t i = 0; i < table_bytes; i += 4096)
      sink = sink + static_cast<uint8_t>(rows.raw_data()[i]);
  }
  store.gather(batches.front(), out.data(), options);

  const Timings timed = time_batches(settings, store, batches, options, out, dtype);
  const double gather_seconds = timed.gather, memcpy_seconds = timed.memcpy;
  const double read_seconds = timed.read;
  const uint64_t sink = timed.sink;
  if (!file.empty()) std::remove(file.c_str());

  const double total = static_cast<double>(out_bytes) * static_cast<double>(settings.batches);
  const double gather_gbps = total / gather_seconds / 1e9;
  const double memcpy_gbps = total / memcpy_seconds / 1e9;
  nlohmann::json line = {
      {"bench", "gather"},
      {"rows", settings.rows},
      {"dim", settings.dim},
      {"dtype", dtype_name(dtype)},
      {"out_dtype", dtype_name(out_dtype)},
      {"tier", settings.tier},
      {"batch", settings.batch},
      {"batches", settings.batches},
      {"threads", settings.threads},
      {"stores", settings.stores},
      {"huge_pages", settings.huge_pages && settings.tier == "host"},
      {"bytes_per_batch", out_bytes},
      {"gather_seconds", gather_seconds},
      {"gather_gbps", gather_gbps},
      {"memcpy_gbps", memcpy_gbps},
      {"ratio_to_memcpy", gather_gbps / memcpy_gbps},
      // One thread: the same rows read once (no output), the random-access limit of the gather.
      {"random_read_gbps", read_seconds > 0 ? total / read_seconds / 1e9 : 0.0},
      {"ratio_to_random_read", read_seconds > 0 ? read_seconds / gather_seconds : 0.0},
      {"read_checksum", sink % 1000},
      {"rows_per_second", static_cast<double>(settings.batch * settings.batches) / gather_seconds},
      {"load_average", load_average().one}};
  std::cout << line.dump() << std::endl;
}

}  // namespace

void add_bench_gather(CLI::App& bench) {
  static GatherSettings settings;
  auto* command = bench.add_subcommand(
      "gather",
      "Feature gather bandwidth (GB/s) against a sequential memcpy of the same bytes, same run");
  command->add_option("--rows", settings.rows, "Rows N of the generated table")->check(kPositive);
  command->add_option("--dim", settings.dim, "Row width D")->check(kPositive);
  command->add_option("--dtype", settings.dtype, "Stored dtype (float32, float16, bfloat16, ...)");
  command->add_option("--out-dtype", settings.out_dtype, "Gathered dtype (default: stored)");
  command->add_option("--batch", settings.batch, "Random ids per batch")->check(kPositive);
  command->add_option("--threads", settings.threads, "Gather threads")->check(kPositive);
  command->add_option("--batches", settings.batches, "Timed batches")->check(kPositive);
  command->add_option("--tier", settings.tier, "host, shared or mapped");
  command->add_option("--file", settings.file, "Mapped tier: .npy path to write (removed after)");
  command->add_option("--stores", settings.stores,
                      "Output stores: auto, cached or streaming (non-temporal)");
  command
      ->add_option("--prefetch-bytes", settings.prefetch_bytes,
                   "Bytes of rows prefetched ahead (tuning; 0 = default)")
      ->check(kNonNegative);
  command->add_option("--seed", settings.seed, "Random seed")->check(kSeed);
  command->add_flag("--huge-pages,!--no-huge-pages", settings.huge_pages,
                    "Host tier: back the table with transparent huge pages, as FeatureStore does "
                    "for the host tiers it allocates and numpy for large arrays (default: on)");
  command->add_option(
      "--device", settings.device,
      "cpu, or cuda: FeatureStore::gather on GPU tiers of --cuda-device (device cache + "
      "pinned host rows), printed next to the copy bandwidths of the same run");
  command
      ->add_option("--cache-fraction", settings.cache_fraction,
                   "With --device cuda: share of the table's bytes in device memory")
      ->check(kFraction);
  command->add_option("--cuda-device", settings.cuda_device, "CUDA device ordinal")
      ->check(kNonNegative);
  command->callback([] { run_gather_bench(settings); });
}

}  // namespace volley::cli
