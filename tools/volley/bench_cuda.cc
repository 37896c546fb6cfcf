// The GPU halves of `volley bench sample --device cuda` and `volley bench gather --device cuda`.
// Figures are printed next to the copy bandwidths measured in the same run (ARCHITECTURE.md,
// "What is measured, and how"): device-to-device copy (the device-memory limit) and pinned
// host-to-device copy (the host-link limit UVA and the pinned tier live under).
#include "bench_cuda.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <span>
#include <utility>

#include "bench_util.h"

#include "volley/core/cuda_device.h"
#include "volley/core/error.h"
#include "volley/feature/feature_store.h"
#include "volley/sampling/neighbor_sampler.h"

namespace volley::cli {
namespace {

constexpr size_t kProbeBytes = size_t{256} << 20;

// The `count` nodes of highest in-degree (ties: lower id first): a batch of hubs.
std::vector<int64_t> highest_degree_nodes(const Csr& graph, int64_t count) {
  const int64_t* indptr = graph.indptr().data<int64_t>();
  std::vector<int64_t> nodes(static_cast<size_t>(graph.num_nodes()));
  for (size_t v = 0; v < nodes.size(); ++v) nodes[v] = static_cast<int64_t>(v);
  count = std::min<int64_t>(count, graph.num_nodes());
  auto degree = [&](int64_t v) { return indptr[v + 1] - indptr[v]; };
  std::partial_sort(nodes.begin(), nodes.begin() + count, nodes.end(), [&](int64_t a, int64_t b) {
    return degree(a) != degree(b) ? degree(a) > degree(b) : a < b;
  });
  nodes.resize(static_cast<size_t>(count));
  return nodes;
}

// One synchronised batch of `seeds`: the median seconds of `repeats` runs, and its edges.
std::pair<double, int64_t> time_one_batch(NeighborSampler& sampler, CudaStream& stream,
                                          std::span<const int64_t> seeds, uint64_t batch,
                                          int repeats) {
  std::vector<double> times;
  int64_t edges = 0;
  for (int r = 0; r < repeats; ++r) {
    const auto start = Clock::now();
    edges = sampler.sample(seeds, batch, stream.handle()).num_edges();
    stream.synchronize();
    times.push_back(seconds_since(start));
  }
  std::sort(times.begin(), times.end());
  return {times[times.size() / 2], edges};
}

// Per-batch latency (each batch synchronised): the median and slowest of up to 64 ordinary
// batches, and a batch of the highest in-degree nodes (the one-thread-per-target straggler).
void add_batch_latencies(nlohmann::json& line, const Csr& graph, NeighborSampler& sampler,
                         CudaStream& stream,
                         const std::function<std::span<const int64_t>(int64_t)>& batch_seeds,
                         int64_t batches, int64_t batch_size) {
  std::vector<double> times;
  for (int64_t b = 0; b < std::min<int64_t>(64, batches); ++b) {
    times.push_back(
        time_one_batch(sampler, stream, batch_seeds(b), static_cast<uint64_t>(b), 1).first);
  }
  std::sort(times.begin(), times.end());
  const std::vector<int64_t> hubs = highest_degree_nodes(graph, batch_size);
  const auto [hub, hub_edges] = time_one_batch(sampler, stream, hubs, 0, 5);
  const int64_t* indptr = graph.indptr().data<int64_t>();
  line["median_batch_ms"] = times[times.size() / 2] * 1e3;
  line["max_batch_ms"] = times.back() * 1e3;
  line["hub_batch_ms"] = hub * 1e3;
  line["hub_over_median"] = hub / times[times.size() / 2];
  line["hub_batch_edges"] = hub_edges;
  line["hub_batch_seps"] = static_cast<double>(hub_edges) / hub;
  line["max_in_degree"] = indptr[hubs.front() + 1] - indptr[hubs.front()];
}

void add_copy_figures(nlohmann::json& line, int device) {
  const double d2d = measure_device_copy_bandwidth(device, kProbeBytes);
  const double h2d = measure_pinned_upload_bandwidth(device, kProbeBytes);
  line["d2d_copy_gbps"] = d2d / 1e9;
  line["pinned_h2d_gbps"] = h2d / 1e9;
}

}  // namespace

void require_cuda_device(const std::string& flag, int device) {
  VOLLEY_REQUIRE(cuda_built(), RuntimeError,
                 "{} cuda: this build of Volley has no CUDA support (built with VOLLEY_CUDA=OFF "
                 "or without nvcc); use --device cpu",
                 flag);
  const int count = cuda_device_count();
  VOLLEY_REQUIRE(device >= 0 && device < count, RuntimeError,
                 "{} cuda: CUDA device {} requested, but {} CUDA device(s) are visible", flag,
                 device, count);
}

nlohmann::json run_cuda_sample_bench(const Csr& host_graph, const std::vector<int64_t>& seeds,
                                     const NeighborSamplerOptions& options,
                                     const CudaSampleBench& settings) {
  const CudaSamplingMode mode = parse_cuda_sampling_mode(settings.mode);
  require_cuda_device("--device", settings.device);
  const int64_t available = static_cast<int64_t>(seeds.size()) / settings.batch_size;
  VOLLEY_REQUIRE(available >= 1, ValueError, "--batch-size {} exceeds the {} seeds available",
                 settings.batch_size, seeds.size());
  const CudaGraph graph = CudaGraph::place(host_graph, {.mode = mode, .device = settings.device});
  NeighborSampler sampler(graph, options);
  CudaStream stream = CudaStream::create(settings.device);
  auto slice = [&](const std::vector<int64_t>& pool, int64_t b) {
    return std::span<const int64_t>(pool.data() + (b % available) * settings.batch_size,
                                    static_cast<size_t>(settings.batch_size));
  };
  auto batch_seeds = [&](int64_t b) { return slice(seeds, b); };
  auto sample = [&](int64_t b) {
    const auto batch = static_cast<uint64_t>(b);
    return settings.seed_times == nullptr
               ? sampler.sample(batch_seeds(b), batch, stream.handle())
               : sampler.sample(batch_seeds(b), slice(*settings.seed_times, b), batch,
                                stream.handle());
  };
  for (int64_t b = 0; b < std::min<int64_t>(3, settings.batches); ++b) sample(b);  // workspace
  stream.synchronize();
  int64_t edges = 0, nodes = 0;
  const auto start = Clock::now();
  for (int64_t b = 0; b < settings.batches; ++b) {
    const auto batch = sample(b);
    edges += batch.num_edges();
    nodes += batch.num_nodes();
  }
  stream.synchronize();
  const double seconds = seconds_since(start);
  nlohmann::json line = {{"bench", "sample"},
                         {"device", "cuda"},
                         {"device_name", cuda_device_name(settings.device)},
                         {"mode", cuda_sampling_mode_name(mode)},
                         {"batches", settings.batches},
                         {"batch_size", settings.batch_size},
                         {"replace", options.replace},
                         {"weighted", options.weighted},
                         {"sampled_edges", edges},
                         {"sampled_nodes", nodes},
                         {"seconds", seconds},
                         {"seps", static_cast<double>(edges) / seconds},
                         {"nodes_per_second", static_cast<double>(nodes) / seconds},
                         {"graph_device_bytes", graph.device_bytes()},
                         {"graph_pinned_bytes", graph.pinned_bytes()}};
  if (settings.seed_times != nullptr) return line;
  add_batch_latencies(line, host_graph, sampler, stream, batch_seeds, settings.batches,
                      settings.batch_size);
  add_copy_figures(line, settings.device);
  return line;
}

nlohmann::json run_cuda_gather_bench(const Array& table,
                                     const std::vector<std::vector<int64_t>>& batches,
                                     const CudaGatherBench& settings) {
  require_cuda_device("--device", settings.device);
  VOLLEY_REQUIRE(settings.cache_fraction >= 0 && settings.cache_fraction <= 1, ValueError,
                 "--cache-fraction must be in [0, 1], got {}", settings.cache_fraction);
  VOLLEY_REQUIRE(!batches.empty() && !batches.front().empty(), ValueError,
                 "the gather bench needs at least one non-empty batch");
  const auto budget =
      static_cast<size_t>(settings.cache_fraction * static_cast<double>(table.nbytes()));
  const FeatureStore store = FeatureStore::build(
      table,
      {.tiers = {{.location = Location::kCuda, .byte_budget = budget, .device = settings.device}}});
  const int64_t device_rows = store.tiers()[0].num_slots();
  const size_t per_batch = batches.front().size();
  const size_t out_bytes = per_batch * store.row_bytes();
  const auto count = static_cast<int64_t>(per_batch);
  // All batches' ids on the device up front, as a sampler would leave them.
  Buffer ids =
      Buffer::allocate_device(batches.size() * per_batch * sizeof(int64_t), settings.device);
  int64_t device_hits = 0;
  for (size_t b = 0; b < batches.size(); ++b) {
    VOLLEY_REQUIRE(batches[b].size() == per_batch, ValueError, "batches must have equal sizes");
    cuda_copy(ids.data() + b * per_batch * sizeof(int64_t), batches[b].data(),
              per_batch * sizeof(int64_t), nullptr);
    for (int64_t id : batches[b]) device_hits += id < device_rows ? 1 : 0;
  }
  cuda_synchronize(nullptr);
  std::vector<int64_t> out_shape = {count};
  if (store.ndim() == 2) out_shape.push_back(store.width());
  const Array out(Buffer::allocate_device(out_bytes, settings.device), store.dtype(), out_shape);
  CudaStream stream = CudaStream::create(settings.device);
  GatherOptions options;
  options.stream = stream.handle();
  options.check_ids = false;
  auto gather = [&](size_t b) {
    const Array batch_ids(ids.slice(b * per_batch * sizeof(int64_t), per_batch * sizeof(int64_t)),
                          DType::kInt64, {count});
    store.gather(batch_ids, out, options);
  };
  gather(0);  // warm
  stream.synchronize();
  const auto start = Clock::now();
  for (size_t b = 0; b < batches.size(); ++b) gather(b);
  stream.synchronize();
  const double seconds = seconds_since(start);
  const double total = static_cast<double>(out_bytes) * static_cast<double>(batches.size());
  const double hit_rate =
      static_cast<double>(device_hits) / static_cast<double>(batches.size() * per_batch);
  nlohmann::json line = {{"bench", "gather"},
                         {"device", "cuda"},
                         {"device_name", cuda_device_name(settings.device)},
                         {"rows", store.num_rows()},
                         {"dim", store.width()},
                         {"dtype", dtype_name(store.dtype())},
                         {"batch", per_batch},
                         {"batches", batches.size()},
                         {"cache_fraction", settings.cache_fraction},
                         {"device_rows", device_rows},
                         {"device_hit_rate", hit_rate},
                         {"bytes_per_batch", out_bytes},
                         {"gather_seconds", seconds},
                         {"gather_gbps", total / seconds / 1e9}};
  add_copy_figures(line, settings.device);
  // The tier mix's bound: hits at device-copy speed, misses at pinned-upload speed.
  const double d2d = line["d2d_copy_gbps"].get<double>(),
               h2d = line["pinned_h2d_gbps"].get<double>();
  const double bound = 1.0 / (hit_rate / d2d + (1.0 - hit_rate) / h2d);
  line["tier_mix_bound_gbps"] = bound;
  line["ratio_to_bound"] = (total / seconds / 1e9) / bound;
  return line;
}

}  // namespace volley::cli
