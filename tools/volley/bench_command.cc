// `volley bench`: throughput measurements, one JSON line per measurement (ARCHITECTURE.md,
// "What is measured, and how"). Figures that are compared are measured in the same run.
// `sample` and `loader` take lists (`--threads 1,2 --batch-size 512,1024`) and measure every
// combination; `--plot FILE.png` (any bench) then draws the lines (bench_plot.h).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <ctime>
#include <iostream>
#include <numeric>
#include <optional>
#include <thread>

#include <nlohmann/json.hpp>

#include "bench_cuda.h"
#include "bench_disk.h"
#include "bench_hetero.h"
#include "bench_plot.h"
#include "bench_temporal.h"
#include "bench_util.h"
#include "commands.h"
#include "volley/core/parallel.h"
#include "volley/core/philox.h"
#include "volley/feature/feature_store.h"
#include "volley/feature/gather.h"
#include "volley/feature/hotness.h"
#include "volley/graph/dataset.h"
#include "volley/graph/hetero_dataset.h"
#include "volley/loader/neighbor_loader.h"
#include "volley/sampling/cuda_graph.h"
#include "volley/sampling/neighbor_sampler.h"

namespace volley::cli {
namespace {

struct SampleSettings {
  std::string dataset;
  std::string fanout = "15,10,5";
  std::vector<int64_t> batch_sizes = {1024};  // measured one after the other (a sweep)
  std::vector<int> thread_counts = {1};
  int64_t batch_size = 1024;  // the configuration being measured
  int threads = 1;
  int64_t batches = 50;
  int64_t warmup = 2;  // sample: untimed batches first (0: time a fresh process's first batches)
  bool replace = false;
  bool weighted = false;
  uint64_t seed = 0;
  bool with_features = false;
  bool time = false;  // sample --time: random edge times; untimed, uniform and last measured
  std::vector<std::string> modes = {"none", "none-disjoint", "uniform", "last"};  // with --time
  std::string device = "cpu";  // sample: cpu or cuda
  std::string mode = "GPU";    // sample --device cuda: GPU or UVA
  int cuda_device = 0;
  // loader: how the features are read (auto, mapped, static, dynamic) and the row cache.
  std::string policy = "auto";
  size_t cache_bytes = Buffer::npos;
  int lookahead = 8;        // loader: batches announced ahead (--policy lookahead)
  bool read_ahead = false;  // loader: read announced rows into the cache ahead
};

// Touches every page of the graph so the first timed batches do not pay for page faults.
void warm(const Csr& graph) {
  volatile uint64_t sink = 0;
  for (const Array* array : {&graph.indptr(), &graph.indices()}) {
    const auto* bytes = array->raw_data();
    uint64_t local = 0;
    for (size_t i = 0; i < array->nbytes(); i += 4096) local += static_cast<uint8_t>(bytes[i]);
    sink = sink + local;
  }
}

// Sampling only: `threads` threads, each taking whole batches. `seed_times` (temporal
// sampling): one time per entry of `seeds`.
SampleFigures run_sampling(const Csr& graph, const std::vector<int64_t>& seeds,
                           const SampleSettings& settings, const NeighborSamplerOptions& options,
                           const std::vector<int64_t>* seed_times = nullptr) {
  const int64_t available = static_cast<int64_t>(seeds.size()) / settings.batch_size;
  VOLLEY_REQUIRE(available >= 1, ValueError, "--batch-size {} exceeds the {} seeds available",
                 settings.batch_size, seeds.size());
  return run_batches<SamplerScratch>(
      settings.threads, settings.batches, [&](int64_t b, SamplerScratch& scratch) {
        const int64_t slot = b % available;
        std::span<const int64_t> batch(seeds.data() + slot * settings.batch_size,
                                       static_cast<size_t>(settings.batch_size));
        const auto result =
            seed_times == nullptr
                ? sample_neighbors(graph, batch, options, static_cast<uint64_t>(b), &scratch)
                : sample_neighbors(
                      graph, batch,
                      std::span<const int64_t>(seed_times->data() + slot * settings.batch_size,
                                               batch.size()),
                      options, static_cast<uint64_t>(b), &scratch);
        return std::pair{result.num_edges(), result.num_nodes()};
      });
}

nlohmann::json figures_json(const char* bench, const SampleSettings& settings,
                            const SampleFigures& figures) {
  return {{"bench", bench},
          {"threads", settings.threads},
          {"batches", settings.batches},
          {"batch_size", settings.batch_size},
          {"fanout", settings.fanout},
          {"sampled_edges", figures.edges},
          {"sampled_nodes", figures.nodes},
          {"seconds", figures.seconds},
          {"seps", static_cast<double>(figures.edges) / figures.seconds},
          {"nodes_per_second", static_cast<double>(figures.nodes) / figures.seconds}};
}

// `volley bench sample --weighted` on a dataset without weights: the graph with seeded random
// weights in [1, 100] (integers, as float32), so weighted sampling is measured on any graph.
Csr with_random_weights(const Csr& graph, uint64_t seed) {
  if (graph.has_weights()) return graph;
  Array weights = Array::empty(DType::kFloat32, {graph.num_edges()});
  float* weight = weights.data<float>();
  parallel_for(0, graph.num_edges(), 1 << 16, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      weight[k] =
          1.0f + static_cast<float>(PhiloxStream(seed, {{0, static_cast<uint32_t>(k),
                                                         static_cast<uint32_t>(k >> 32), 9}})
                                        .bounded64(100));
    }
  });
  return Csr::from_arrays(graph.indptr(), graph.indices(), graph.edge_ids(), std::move(weights),
                          graph.orientation(), /*validate=*/false);
}

// `volley bench sample --time`: the graph with seeded random edge times in [0, 2^20), rows
// sorted by them, and a random time in the same range for every seed of the pool.
struct TimedGraph {
  Csr graph;
  std::vector<int64_t> seed_times;
};

TimedGraph with_random_times(const Csr& graph, size_t num_seeds, uint64_t seed) {
  Array times = Array::empty(DType::kInt64, {graph.num_edges()});
  int64_t* time = times.data<int64_t>();
  parallel_for(0, graph.num_edges(), 1 << 16, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      time[k] = static_cast<int64_t>(
          PhiloxStream(seed, {{0, static_cast<uint32_t>(k), static_cast<uint32_t>(k >> 32), 7}})
              .bounded64(1 << 20));
    }
  });
  TimedGraph out{sort_rows_by_time(graph.with_times(std::nullopt, times), TimeKind::kEdge), {}};
  PhiloxStream rng(seed, {{0, 0, 0, 8}});
  out.seed_times.resize(num_seeds);
  for (auto& t : out.seed_times) t = static_cast<int64_t>(rng.bounded64(1 << 20));
  return out;
}

// One CPU line of run_temporal_sampling: `mode` sampled on `timed`, and with "bound" among the
// modes the searches apart (bench_temporal.h): for "bound" inside the timed run, for "uniform"
// and "last" over their rows after it.
nlohmann::json temporal_cpu_line(const std::string& mode, const TimedGraph& timed,
                                 const std::vector<int64_t>& seeds, const SampleSettings& one,
                                 const NeighborSamplerOptions& options) {
  const bool temporal = options.time_source != TimeSource::kNone;
  const auto* times = temporal ? &timed.seed_times : nullptr;
  const TemporalRun run{&timed.graph, seeds, timed.seed_times, one.batch_size, one.batches};
  if (one.warmup > 0) {
    run_sampling(timed.graph, seeds,
                 {.batch_size = one.batch_size, .threads = 1, .batches = one.warmup}, options,
                 times);
  }
  SampleFigures figures;
  double searches = -1;
  if (mode == "bound") {
    VOLLEY_REQUIRE(one.threads == 1, ValueError, "--modes bound measures 1 thread only");
    const BoundFigures bound = run_bound(run, options);
    figures = bound.figures, searches = bound.search_seconds;
  } else {
    figures = run_sampling(timed.graph, seeds, one, options, times);
    const bool bound = std::find(one.modes.begin(), one.modes.end(), "bound") != one.modes.end();
    if (temporal && bound && one.threads == 1) searches = search_seconds(run, options);
  }
  nlohmann::json line = figures_json("sample", one, figures);
  line["device"] = "cpu";
  line["cpu_seconds"] = figures.cpu_seconds;
  line["seps_per_cpu_second"] = figures.seps_per_cpu();
  line["warmup"] = one.warmup;
  if (searches >= 0) {
    line["search_seconds"] = searches;
    line["seps_outside_search"] = static_cast<double>(figures.edges) / (figures.seconds - searches);
  }
  return line;
}

// --time: the --modes (default: untimed "none", untimed "none-disjoint" (temporal sampling is
// disjoint; CPU only), "uniform" and "last"; also "bound", untimed disjoint sampling plus the
// searches of its rows, CPU, 1 thread) on the same time-sorted graph and seeds, one line each
// with the ratio of its SEPS to the untimed and the disjoint lines' measured before it (on the
// CPU also per CPU second; with --device cuda on the GPU).
void run_temporal_sampling(const Dataset& dataset, const TimedGraph& timed,
                           const std::vector<int64_t>& seeds, const SampleSettings& one,
                           NeighborSamplerOptions options) {
  double untimed_seps = 0, untimed_cpu_seps = 0, disjoint_seps = 0, disjoint_cpu_seps = 0;
  for (const std::string& mode : one.modes) {
    // The CUDA sampler has no untimed disjoint mode (temporal sampling's trees are its own).
    if (one.device == "cuda" && (mode == "none-disjoint" || mode == "bound")) continue;
    const bool temporal = mode != "none" && mode != "none-disjoint" && mode != "bound";
    options.time_source = temporal ? TimeSource::kEdge : TimeSource::kNone;
    options.disjoint = mode == "none-disjoint" || mode == "bound";
    if (temporal) options.temporal_strategy = temporal_strategy_from_name(mode);
    nlohmann::json line;
    if (one.device == "cuda") {
      line = run_cuda_sample_bench(timed.graph, seeds, options,
                                   {.mode = one.mode,
                                    .device = one.cuda_device,
                                    .batch_size = one.batch_size,
                                    .batches = one.batches,
                                    .seed_times = temporal ? &timed.seed_times : nullptr});
      line["fanout"] = one.fanout;
    } else {
      line = temporal_cpu_line(mode, timed, seeds, one, options);
    }
    const double seps = line["seps"].get<double>();
    const double cpu_seps = line.value("seps_per_cpu_second", 0.0);
    if (mode == "none") untimed_seps = seps, untimed_cpu_seps = cpu_seps;
    if (mode == "none-disjoint") disjoint_seps = seps, disjoint_cpu_seps = cpu_seps;
    line["temporal_strategy"] = mode;
    if (untimed_seps > 0) line["ratio_to_untimed"] = seps / untimed_seps;
    if (untimed_cpu_seps > 0) line["cpu_ratio_to_untimed"] = cpu_seps / untimed_cpu_seps;
    if (disjoint_seps > 0) line["ratio_to_disjoint"] = seps / disjoint_seps;
    if (disjoint_cpu_seps > 0) line["cpu_ratio_to_disjoint"] = cpu_seps / disjoint_cpu_seps;
    line["dataset"] = dataset.name;
    std::cout << line.dump() << std::endl;
  }
}

// --threads and --batch-size as comma-separated lists: every combination is measured.
void add_sweep_options(CLI::App& command, SampleSettings& settings, const char* threads_help) {
  command
      .add_option("--batch-size", settings.batch_sizes,
                  "Seeds per batch; a list (512,1024) measures each")
      ->delimiter(',')
      ->check(kPositive)
      ->capture_default_str();
  command
      .add_option("--threads", settings.thread_counts,
                  fmt::format("{}; a list (1,2,4) measures each", threads_help))
      ->delimiter(',')
      ->check(kPositive)
      ->capture_default_str();
}

// Calls measure(one) for each (batch size, thread count) of the sweep, batch sizes outermost.
template <typename Measure>
void for_each_configuration(const SampleSettings& settings, Measure&& measure) {
  for (const int64_t batch_size : settings.batch_sizes) {
    for (const int threads : settings.thread_counts) {
      SampleSettings one = settings;
      one.batch_size = batch_size;
      one.threads = threads;
      measure(one);
    }
  }
}

// A heterogeneous dataset is sampled by bench_hetero.h (CPU only) through the same sweep and
// lines: true when it was one.
bool bench_hetero_sample(const SampleSettings& settings) {
  if (!is_hetero_dataset_directory(settings.dataset)) return false;
  VOLLEY_REQUIRE(settings.device == "cpu", ValueError,
                 "heterogeneous datasets are sampled on the CPU only (no --device cuda yet)");
  VOLLEY_REQUIRE(!settings.time, ValueError,
                 "--time measures homogeneous datasets only; '{}' is heterogeneous (its temporal "
                 "sampling has no bench yet: time it through volley.loader.NeighborLoader with "
                 "time_attr)",
                 settings.dataset);
  const HeteroSampleBench bench(settings.dataset, settings.fanout, settings.replace,
                                settings.weighted, settings.seed);
  for_each_configuration(settings, [&](const SampleSettings& one) {
    if (one.warmup > 0) bench.run(one.batch_size, 1, one.warmup);
    auto line = figures_json("sample", one, bench.run(one.batch_size, one.threads, one.batches));
    line.update(bench.describe());
    std::cout << line.dump() << std::endl;
  });
  return true;
}

// sample --time and --modes.
void add_time_options(CLI::App& command, SampleSettings& settings) {
  command.add_flag("--time", settings.time,
                   "Temporal sampling: seeded random edge times (rows sorted by them) and seed "
                   "times; measures untimed, temporal uniform and last on that graph (CPU or "
                   "--device cuda)");
  command
      .add_option("--modes", settings.modes,
                  "With --time: what to measure, in order: none, none-disjoint, uniform, last, "
                  "bound (untimed disjoint sampling plus the admissible-prefix searches of its "
                  "rows; then uniform and last also report their searches timed apart)")
      ->delimiter(',')
      ->check(CLI::IsMember({"none", "none-disjoint", "uniform", "last", "bound"}))
      ->capture_default_str();
}

void add_sample(CLI::App& bench, SampleSettings& settings) {
  auto* command = bench.add_subcommand(
      "sample", "Sampled edges per second (SEPS) of the neighbor sampler (CPU, or CUDA GPU/UVA)");
  command->add_option("--dataset", settings.dataset, "Dataset directory")->required();
  command->add_option("--fanout", settings.fanout, "Fanouts per hop, comma separated");
  add_sweep_options(*command, settings, "Sampling threads (CPU)");
  command->add_option("--batches", settings.batches, "Batches to sample")->check(kPositive);
  command
      ->add_option("--warmup", settings.warmup,
                   "Untimed batches before the timed ones (CPU; 0 times the first batches of a "
                   "fresh process, page faults and all)")
      ->check(kNonNegative)
      ->capture_default_str();
  command->add_flag("--replace", settings.replace, "Sample with replacement");
  command->add_flag("--weighted", settings.weighted,
                    "Sample proportionally to edge weights (a dataset without weights gets seeded "
                    "random weights in [1, 100])");
  command->add_option("--seed", settings.seed, "Random seed")->check(kSeed);
  add_time_options(*command, settings);
  command->add_option("--device", settings.device,
                      "cpu, or cuda: the CUDA sampler on --cuda-device (prints the copy "
                      "bandwidths of the same run next to its SEPS)");
  auto* mode = command->add_option(
      "--mode", settings.mode,
      "With --device cuda: GPU (graph in device memory) or UVA (indices in pinned host memory)");
  command->add_option("--cuda-device", settings.cuda_device, "CUDA device ordinal")
      ->check(kNonNegative);
  command->callback([&settings, mode] {
    VOLLEY_REQUIRE(settings.device == "cpu" || settings.device == "cuda", ValueError,
                   "--device must be cpu or cuda, got '{}'", settings.device);
    VOLLEY_REQUIRE(settings.device == "cuda" || mode->count() == 0, ValueError,
                   "--mode {} applies to --device cuda only", settings.mode);
    const NeighborSamplerOptions options{parse_fanouts(settings.fanout), settings.replace,
                                         settings.weighted, settings.seed};
    if (settings.device == "cuda") {
      parse_cuda_sampling_mode(settings.mode);  // a bad mode fails before any work
      require_cuda_device("--device", settings.cuda_device);
    }
    if (bench_hetero_sample(settings)) return;
    Dataset dataset = load_dataset(settings.dataset, {.validate_graph = false});
    if (settings.weighted) dataset.graph = with_random_weights(dataset.graph, settings.seed);
    const auto seeds = bench_seed_pool(dataset, settings.seed);
    if (settings.device == "cpu") warm(dataset.graph);
    std::optional<TimedGraph> timed;
    if (settings.time) timed = with_random_times(dataset.graph, seeds.size(), settings.seed);
    for_each_configuration(settings, [&](const SampleSettings& one) {
      if (timed) return run_temporal_sampling(dataset, *timed, seeds, one, options);
      if (one.device == "cuda") {
        auto line = run_cuda_sample_bench(dataset.graph, seeds, options,
                                          {.mode = one.mode,
                                           .device = one.cuda_device,
                                           .batch_size = one.batch_size,
                                           .batches = one.batches});
        line["fanout"] = one.fanout;
        line["dataset"] = dataset.name;
        std::cout << line.dump() << std::endl;
        return;
      }
      if (one.warmup > 0) {
        run_sampling(dataset.graph, seeds,
                     {.batch_size = one.batch_size, .threads = 1, .batches = one.warmup}, options);
      }
      const auto figures = run_sampling(dataset.graph, seeds, one, options);
      auto line = figures_json("sample", one, figures);
      line["device"] = "cpu";
      line["weighted"] = one.weighted;
      line["warmup"] = one.warmup;
      line["dataset"] = dataset.name;
      std::cout << line.dump() << std::endl;
    });
  });
}

// The loader bench's feature store: --policy auto (FeatureStore's own choice), mapped, static
// (a host tier of the highest-degree rows) or dynamic (a SIEVE cache); static and dynamic read
// the other rows through the disk tier whatever the file's size.
FeatureStore bench_features(const Dataset& dataset, const SampleSettings& settings) {
  const Array& matrix = *dataset.features;
  if (settings.policy == "auto" && settings.cache_bytes == Buffer::npos)
    return FeatureStore(matrix);
  FeatureStoreOptions options;
  options.cache_bytes = settings.cache_bytes;
  if (settings.policy == "mapped") {
    options.source_reads = SourceReads::kMapped;
  } else if (settings.policy == "static" || settings.policy == "lookahead") {
    options.cache_policy =
        settings.policy == "static" ? CachePolicy::kStatic : CachePolicy::kLookahead;
    options.hot_order = hotness_by_degree(dataset.graph);
    options.read_ahead = settings.read_ahead;
  } else {
    VOLLEY_REQUIRE(settings.policy == "dynamic" || settings.policy == "auto", ValueError,
                   "--policy must be auto, mapped, static, dynamic or lookahead, got '{}'",
                   settings.policy);
  }
  const bool mapped = matrix.buffer().location() == Location::kMappedFile;
  if (mapped && settings.policy != "auto" && settings.policy != "mapped")
    options.source_reads = SourceReads::kDisk;
  return FeatureStore::build(matrix, options);
}

// A progress bar on stderr for runs longer than a few seconds.
void progress(const char* what, int64_t done, int64_t total, Clock::time_point start) {
  const double elapsed = seconds_since(start);
  if (elapsed < 2 || (done % 4 != 0 && done != total)) return;
  const int width = 30;
  const auto filled = static_cast<int>(width * done / std::max<int64_t>(1, total));
  std::cerr << fmt::format("\r{} [{}{}] {}/{} batches, {:.1f} s", what, std::string(filled, '#'),
                           std::string(width - filled, '.'), done, total, elapsed)
            << (done == total ? "\n" : "") << std::flush;
}

// One loader measurement: an epoch of the pipeline, and sampling alone over the same seeds at
// the same thread count (the stage split --plot draws).
void run_loader_bench(const Dataset& dataset, const std::vector<int64_t>& seeds,
                      const SampleSettings& settings) {
  const int64_t count =
      std::min<int64_t>(static_cast<int64_t>(seeds.size()), settings.batches * settings.batch_size);
  std::vector<int64_t> inputs(seeds.begin(), seeds.begin() + count);
  const NeighborSamplerOptions sampler{parse_fanouts(settings.fanout), false, false, settings.seed};
  const FeatureStore features = bench_features(dataset, settings);
  NeighborLoader loader(dataset.graph, features, dataset.labels, Array::from_vector(inputs),
                        {.batch_size = settings.batch_size,
                         .drop_last = true,
                         .num_threads = settings.threads,
                         .lookahead = settings.lookahead,
                         .seed = settings.seed,
                         .sampler = sampler});
  auto run_epoch = [&](int64_t epoch_index) {
    SampleFigures figures;
    const auto start = Clock::now();
    auto epoch = loader.start_epoch(epoch_index);
    int64_t done = 0;
    while (auto batch = epoch->next()) {
      figures.edges += batch->edge_ids.numel();
      figures.nodes += batch->nodes.numel();
      progress("loader", ++done, count / settings.batch_size, start);
    }
    figures.seconds = seconds_since(start);
    return figures;
  };
  // Warm the pages of a matrix in memory and the allocator; a disk tier is measured cold (a warm
  // epoch would fill its cache with the very rows measured).
  if (features.disk_io().empty()) run_epoch(1000);
  const auto sampled = run_sampling(dataset.graph, inputs,
                                    {.batch_size = settings.batch_size,
                                     .threads = settings.threads,
                                     .batches = count / settings.batch_size},
                                    sampler);
  const auto loaded = run_epoch(0);
  SampleSettings shown = settings;
  shown.batches = count / settings.batch_size;
  auto line = figures_json("loader", shown, loaded);
  line["batches_per_second"] = static_cast<double>(shown.batches) / loaded.seconds;
  line["sampling_only_seps"] = static_cast<double>(sampled.edges) / sampled.seconds;
  line["sampling_only_seconds"] = sampled.seconds;
  line["ratio_to_sampling_only"] = (static_cast<double>(loaded.edges) / loaded.seconds) /
                                   (static_cast<double>(sampled.edges) / sampled.seconds);
  line["feature_dim"] = dataset.features->dim(1);
  line["features"] = features.describe();
  line["rows_per_second"] = static_cast<double>(loaded.nodes) / loaded.seconds;
  if (!features.disk_io().empty()) {
    const FeatureStore::DiskStats stats = features.disk_stats();
    line["row_hits"] = stats.hits;
    line["rows_from_disk"] = stats.misses + stats.read_ahead;
    line["rows_read_ahead"] = stats.read_ahead;
    line["disk_rows_per_second"] =
        static_cast<double>(stats.misses + stats.read_ahead) / loaded.seconds;
    line["row_hit_rate"] = static_cast<double>(stats.hits) /
                           static_cast<double>(std::max<int64_t>(1, stats.hits + stats.misses));
  }
  if (settings.policy == "lookahead") {
    line["lookahead"] = settings.lookahead;
    line["read_ahead"] = settings.read_ahead;
  }
  line["dataset"] = dataset.name;
  std::cout << line.dump() << std::endl;
}

// The loader with features and labels against sampling alone at the same thread count.
void add_loader(CLI::App& bench, SampleSettings& settings) {
  auto* command = bench.add_subcommand(
      "loader",
      "Batches per second of the full pipeline (sample + gather features and labels), "
      "against sampling alone in the same run");
  command->add_option("--dataset", settings.dataset, "Dataset directory")->required();
  command->add_option("--fanout", settings.fanout, "Fanouts per hop, comma separated");
  add_sweep_options(*command, settings, "Worker threads");
  command->add_option("--batches", settings.batches, "Batches to run")->check(kPositive);
  command->add_option("--seed", settings.seed, "Random seed")->check(kSeed);
  command->add_option("--policy", settings.policy,
                      "Features: auto (the disk tier past half the RAM), mapped, static (a host "
                      "tier of the hottest --cache-bytes rows, the rest from the disk tier), "
                      "dynamic (disk tier + SIEVE cache) or lookahead (disk tier + a cache "
                      "steered by the next --lookahead batches)");
  command
      ->add_option("--lookahead", settings.lookahead,
                   "With --policy lookahead: batches sampled and announced ahead")
      ->check(kNonNegative);
  command->add_flag("--read-ahead", settings.read_ahead,
                    "With --policy lookahead: read the announced batches' missing rows into the "
                    "cache in the background");
  command->add_option("--cache-bytes", settings.cache_bytes, "Row cache budget (e.g. 8G)")
      ->check(kByteSize)
      ->transform(CLI::AsSizeValue(false));
  command->callback([&settings] {
    const Dataset dataset = load_dataset(settings.dataset, {.validate_graph = false});
    warm(dataset.graph);
    VOLLEY_REQUIRE(dataset.features.has_value(), ValueError, "dataset '{}' has no features to load",
                   settings.dataset);
    const auto seeds = bench_seed_pool(dataset, settings.seed);
    for_each_configuration(
        settings, [&](const SampleSettings& one) { run_loader_bench(dataset, seeds, one); });
  });
}

}  // namespace

void add_bench_command(CLI::App& app, GlobalOptions& /*global*/) {
  auto* bench = app.add_subcommand("bench", "Measure throughput (one JSON line per figure)");
  bench->require_subcommand(1);
  static SampleSettings sample_settings;
  static SampleSettings loader_settings;
  add_sample(*bench, sample_settings);
  add_loader(*bench, loader_settings);
  add_bench_gather(*bench);
  add_bench_dist(*bench);
  add_bench_disk(*bench);
  add_plot_option(*bench);
}

}  // namespace volley::cli
