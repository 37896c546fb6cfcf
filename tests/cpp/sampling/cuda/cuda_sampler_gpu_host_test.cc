// The GPU neighbor sampler's kernels, run by the host executor (no GPU): in GPU and UVA
// placement they return exactly what the CPU sampler (the oracle) returns — on skewed random
// graphs, a generated power-law graph with hubs, fanout -1, weighted sampling, with and without
// replacement, three hops. The items of every launch run shuffled on 8 threads, so a body that
// depends on launch order or misses an atomic fails here (and under ThreadSanitizer,
// scripts/tsan_gpu_host.sh). Label gpu-host.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>

#include "sampling/expect_subgraph.h"
#include "test_graphs.h"
#include "test_util.h"
#include "volley/core/internal/emulated_device.h"
#include "volley/graph/generate.h"
#include "volley/sampling/cuda/neighbor_driver.h"
#include "volley/sampling/cuda_graph.h"
#include "volley/sampling/internal/cuda_sampler_backend.h"

namespace volley {
namespace {

using sampling_internal::BackendResult;
using sampling_internal::DeviceGraphView;

enum class Placement { kGpu, kUva };

// The arrays of a Csr copied where CudaGraph::place puts them, with the host executor's memory
// (host memory for both "device" and "pinned"): indptr on the "device"; indices, edge ids and
// weights on the "device" (GPU) or in "pinned" memory (UVA).
struct HostPlacedGraph {
  Buffer indptr, indices, edge_ids, weights;
  bool indices_are_32bit = true;

  HostPlacedGraph(const Csr& graph, Placement placement) {
    internal::HostExecutor executor({.threads = 1});
    const auto bulk =
        placement == Placement::kGpu ? internal::Memory::kDevice : internal::Memory::kPinned;
    auto place = [&](const Array& array, internal::Memory memory) {
      Buffer placed = executor.allocate(memory, std::max<size_t>(array.nbytes(), 1));
      executor.copy(placed.data(), array.raw_data(), array.nbytes());
      return placed;
    };
    indptr = place(graph.indptr(), internal::Memory::kDevice);
    indices = place(graph.indices(), bulk);
    indices_are_32bit = graph.indices().dtype() == DType::kInt32;
    if (graph.edge_ids()) edge_ids = place(*graph.edge_ids(), bulk);
    if (graph.weights()) weights = place(*graph.weights(), bulk);
  }

  DeviceGraphView view(bool weighted) const {
    DeviceGraphView view;
    view.indptr = reinterpret_cast<const int64_t*>(indptr.data());
    view.indices = indices.data();
    view.indices_are_32bit = indices_are_32bit;
    view.edge_ids = edge_ids.empty() ? nullptr : reinterpret_cast<const int64_t*>(edge_ids.data());
    view.weights = weighted ? reinterpret_cast<const float*>(weights.data()) : nullptr;
    return view;
  }
};

// The backend's result as the front end wraps it (cuda_sampler.cc): slices of its buffers,
// here host memory.
SampledSubgraph to_subgraph(const BackendResult& result, int64_t num_seeds) {
  auto array = [](const Buffer& buffer, int64_t count) {
    return Array(buffer.slice(0, static_cast<size_t>(count) * sizeof(int64_t)), DType::kInt64,
                 {count});
  };
  SampledSubgraph out;
  out.num_seeds = num_seeds;
  out.nodes = array(result.nodes, result.num_nodes);
  out.rows = array(result.rows, result.num_edges);
  out.cols = array(result.cols, result.num_edges);
  out.edge_ids = array(result.edge_ids, result.num_edges);
  out.nodes_per_hop = result.nodes_per_hop;
  out.edges_per_hop = result.edges_per_hop;
  return out;
}

// `volley generate`'s R-MAT graph (power-law degrees, hubs of thousands of neighbors), with
// random positive weights added.
Csr power_law_graph(int64_t n, int64_t m, uint64_t seed) {
  const Csr generated =
      generate_graph({.model = GraphModel::kRmat, .num_nodes = n, .num_edges = m, .seed = seed});
  std::vector<int64_t> src, dst;
  std::vector<float> w;
  std::mt19937_64 rng(seed);
  const int64_t* indptr = generated.indptr().data<int64_t>();
  const int32_t* indices = generated.indices().data<int32_t>();
  for (int64_t v = 0; v < n; ++v) {
    for (int64_t k = indptr[v]; k < indptr[v + 1]; ++k) {
      src.push_back(indices[k]);
      dst.push_back(v);
      w.push_back(0.5f + static_cast<float>(rng() % 100));
    }
  }
  return build_csr(Array::from_vector(src), Array::from_vector(dst), Array::from_vector(w),
                   {.num_nodes = n, .keep_edge_ids = true});
}

int64_t max_degree(const Csr& graph) {
  const int64_t* indptr = graph.indptr().data<int64_t>();
  int64_t best = 0;
  for (int64_t v = 0; v < graph.num_nodes(); ++v) best = std::max(best, indptr[v + 1] - indptr[v]);
  return best;
}

std::vector<int64_t> random_seeds(int64_t n, size_t count, std::mt19937_64& rng) {
  std::vector<int64_t> seeds;
  std::vector<bool> taken(static_cast<size_t>(n), false);
  while (seeds.size() < count) {
    const int64_t seed = static_cast<int64_t>(
        rng() % static_cast<uint64_t>(seeds.size() < 8 ? std::min<int64_t>(40, n) : n));
    if (!taken[static_cast<size_t>(seed)]) {
      taken[static_cast<size_t>(seed)] = true;
      seeds.push_back(seed);
    }
  }
  return seeds;
}

// Every fanout list × {replace} × {weighted} × batches on both placements; returns the edges
// compared.
int64_t compare_with_cpu(const Csr& graph, const std::vector<std::vector<int64_t>>& fanouts,
                         const std::vector<size_t>& batch_sizes, uint64_t seed,
                         const std::string& name) {
  int64_t compared = 0;
  for (auto placement : {Placement::kGpu, Placement::kUva}) {
    const HostPlacedGraph placed(graph, placement);
    std::mt19937_64 rng(seed);
    auto backend = sampling_internal::make_host_sampler_backend({.threads = 8, .seed = seed});
    for (const auto& fanout : fanouts) {
      for (int variant = 0; variant < 4; ++variant) {
        const NeighborSamplerOptions options{fanout, (variant & 1) != 0, (variant & 2) != 0,
                                             rng() % 1000};
        for (uint64_t batch = 0; batch < batch_sizes.size(); ++batch) {
          const auto seeds = random_seeds(graph.num_nodes(), batch_sizes[batch], rng);
          const SampledSubgraph expected = sample_neighbors(graph, seeds, options, batch);
          BackendResult result;
          backend->sample(placed.view(options.weighted), seeds,
                          {options.fanouts, sampling_internal::pick_rule_of(options), options.seed},
                          batch, nullptr, result);
          expect_same_subgraph(
              expected, to_subgraph(result, static_cast<int64_t>(seeds.size())),
              fmt::format("{} {} fanouts [{}] replace {} weighted {} batch {}", name,
                          placement == Placement::kGpu ? "GPU" : "UVA", fmt::join(fanout, ","),
                          options.replace, options.weighted, batch));
          compared += expected.num_edges();
          if (::testing::Test::HasFailure()) return compared;
        }
      }
    }
  }
  return compared;
}

// Temporal (and untimed disjoint) sampling: the backend with the graph's times equals the CPU
// oracle on a random multigraph sorted by time, for edge and node time, both strategies, with
// and without replacement, seeds repeating at different times.
TEST(CudaSamplerGpuHost, TemporalEqualsTheCpuSampler) {
  std::mt19937_64 rng(17);
  const int64_t n = 400, m = 9000;
  std::vector<int64_t> node_time(n), edge_time(m);
  for (auto& t : node_time) t = static_cast<int64_t>(rng() % 500);
  for (auto& t : edge_time) t = static_cast<int64_t>(rng() % 500);
  const Csr timed = skewed_random_graph(n, m, 17, {.weighted = false})
                        .with_times(Array::from_vector(node_time), Array::from_vector(edge_time));
  internal::HostExecutor executor({.threads = 1});
  auto place = [&](const Array& array) {
    Buffer placed = executor.allocate(internal::Memory::kDevice, array.nbytes());
    executor.copy(placed.data(), array.raw_data(), array.nbytes());
    return placed;
  };
  auto backend = sampling_internal::make_host_sampler_backend({.threads = 8, .seed = 3});
  int64_t compared = 0;
  for (TimeSource source : {TimeSource::kNone, TimeSource::kEdge, TimeSource::kNode}) {
    const Csr graph = source == TimeSource::kNone
                          ? timed
                          : sort_rows_by_time(timed, source == TimeSource::kEdge ? TimeKind::kEdge
                                                                                 : TimeKind::kNode);
    const HostPlacedGraph placed(graph, Placement::kGpu);
    const Buffer edge_times = place(*graph.edge_time()), node_times = place(*graph.node_time());
    DeviceGraphView view = placed.view(false);
    view.num_nodes = n;
    if (source == TimeSource::kEdge)
      view.edge_time = reinterpret_cast<const int64_t*>(edge_times.data());
    if (source == TimeSource::kNode)
      view.node_time = reinterpret_cast<const int64_t*>(node_times.data());
    for (int variant = 0; variant < 4; ++variant) {
      NeighborSamplerOptions options{.fanouts = {6, -1, 3},
                                     .replace = (variant & 1) != 0,
                                     .seed = rng() % 1000,
                                     .disjoint = true,
                                     .time_source = source,
                                     .temporal_strategy = (variant & 2) != 0
                                                              ? TemporalStrategy::kLast
                                                              : TemporalStrategy::kUniform};
      std::vector<int64_t> seeds(40), times(40);
      for (size_t i = 0; i < seeds.size(); ++i) {
        seeds[i] = static_cast<int64_t>(rng() % 60);  // repeats
        times[i] = static_cast<int64_t>(rng() % 600);
      }
      const SampledSubgraph expected = source == TimeSource::kNone
                                           ? sample_neighbors(graph, seeds, options, 2)
                                           : sample_neighbors(graph, seeds, times, options, 2);
      BackendResult result;
      sampling_internal::BackendOptions backend_options{
          options.fanouts, sampling_internal::pick_rule_of(options), options.seed, true};
      if (source != TimeSource::kNone) {
        backend_options.seed_times = times;
        backend_options.last = options.temporal_strategy == TemporalStrategy::kLast;
      }
      backend->sample(view, seeds, backend_options, 2, nullptr, result);
      SampledSubgraph got = to_subgraph(result, static_cast<int64_t>(seeds.size()));
      const std::string what =
          fmt::format("source {} variant {}", static_cast<int>(source), variant);
      expect_same_subgraph(expected, got, what);
      ASSERT_FALSE(result.batch.empty()) << what;
      const std::vector<int64_t> want_batch = expected.batch.to_vector<int64_t>();
      std::vector<int64_t> got_batch(want_batch.size());
      std::memcpy(got_batch.data(), result.batch.data(), got_batch.size() * sizeof(int64_t));
      EXPECT_EQ(got_batch, want_batch) << what;
      compared += expected.num_edges();
      if (::testing::Test::HasFailure()) return;
    }
  }
  EXPECT_GT(compared, 1000);
}

// The public path: CudaGraph::place carries the times, NeighborSampler::sample(seeds, times)
// on the emulated device returns the CPU's batch (batch vector included); unsorted rows and
// missing times are refused at construction.
TEST(CudaSamplerGpuHost, TemporalThroughThePublicSampler) {
  internal::ScopedCudaEmulation emulated;
  std::mt19937_64 rng(5);
  std::vector<int64_t> edge_time(3000);
  for (auto& t : edge_time) t = static_cast<int64_t>(rng() % 100);
  const Csr unsorted = skewed_random_graph(200, 3000, 5, {.weighted = false})
                           .with_times({}, Array::from_vector(edge_time));
  const Csr graph = sort_rows_by_time(unsorted, TimeKind::kEdge);
  const NeighborSamplerOptions options{.fanouts = {4, 3},
                                       .seed = 8,
                                       .time_source = TimeSource::kEdge,
                                       .temporal_strategy = TemporalStrategy::kUniform};
  const std::vector<int64_t> seeds{1, 1, 7, 30}, times{20, 90, 50, 70};
  const SampledSubgraph expected = sample_neighbors(graph, seeds, times, options, 4);
  for (auto mode : {CudaSamplingMode::kGpu, CudaSamplingMode::kUva}) {
    for (auto placement :
         {TimePlacement::kAuto, TimePlacement::kDevice, TimePlacement::kWithIndices}) {
      const CudaGraph placed = CudaGraph::place(graph, {.mode = mode, .times = placement});
      // UVA keeps the indices pinned; the times follow them only when asked to (the emulated
      // device's free memory is the host's, so "auto" finds room on the device).
      const bool pinned_times =
          mode == CudaSamplingMode::kUva && placement == TimePlacement::kWithIndices;
      EXPECT_EQ(placed.edge_time()->buffer().location(),
                pinned_times ? Location::kPinnedHost : Location::kCuda);
      EXPECT_EQ(placed.mode(), mode);
      NeighborSampler sampler(placed, options);
      const SampledSubgraph got = sampler.sample(seeds, times, 4).to_host();
      const std::string what =
          fmt::format("public sampler, mode {}, placement {}", cuda_sampling_mode_name(mode),
                      static_cast<int>(placement));
      expect_same_subgraph(expected, got, what);
      EXPECT_EQ(got.batch.to_vector<int64_t>(), expected.batch.to_vector<int64_t>()) << what;
      EXPECT_EQ(message_of<ValueError>([&] { sampler.sample(seeds, 0); }),
                "temporal sampling needs a time per seed (input_time / seed_times), got none");
    }
  }
  EXPECT_EQ(message_of<ValueError>([&] {
              CudaGraph::place(
                  graph, {.mode = CudaSamplingMode::kUva, .times = static_cast<TimePlacement>(7)});
            }),
            "time placement 7 is not auto (0), device (1) or with-indices (2)");
  EXPECT_EQ(message_of<ValueError>([&] { NeighborSampler(CudaGraph::place(unsorted), options); }),
            fmt::format("the CUDA sampler samples by time over rows sorted by edge_time, but row "
                        "{} is not; sort the graph first (sort_rows_by_time, Graph.sort_by_time(), "
                        "volley convert --sort-by-time)",
                        unsorted.first_row_unsorted_by_edge_time()));
  EXPECT_EQ(message_of<ValueError>([&] {
              NeighborSampler(CudaGraph::place(skewed_random_graph(50, 200, 1)), options);
            }),
            "temporal sampling by edge time needs the graph's edge_time, but it has none");
}

// Untimed disjoint sampling through the public sampler: every seed its own tree (a repeated seed
// too), the CPU sampler's batch and batch vector in both placements; no seeds, an empty batch.
TEST(CudaSamplerGpuHost, DisjointThroughThePublicSampler) {
  internal::ScopedCudaEmulation emulated;
  const Csr graph = skewed_random_graph(300, 4000, 9, {.weighted = false});
  const std::vector<int64_t> seeds{3, 3, 41, 7, 299, 41};
  for (const bool replace : {false, true}) {
    const NeighborSamplerOptions options{
        .fanouts = {5, -1, 2}, .replace = replace, .seed = 12, .disjoint = true};
    const SampledSubgraph expected = sample_neighbors(graph, seeds, options, 6);
    for (auto mode : {CudaSamplingMode::kGpu, CudaSamplingMode::kUva}) {
      NeighborSampler sampler(CudaGraph::place(graph, {.mode = mode}), options);
      const SampledSubgraph got = sampler.sample(seeds, 6).to_host();
      const std::string what =
          fmt::format("mode {}, replace {}", cuda_sampling_mode_name(mode), replace);
      expect_same_subgraph(expected, got, what);
      EXPECT_EQ(got.batch.to_vector<int64_t>(), expected.batch.to_vector<int64_t>()) << what;
      const SampledSubgraph none = sampler.sample(std::vector<int64_t>{}, 0).to_host();
      EXPECT_EQ(none.batch.numel(), 0) << what;
      EXPECT_TRUE(none.batch.defined()) << what;
    }
  }
}

TEST(CudaSamplerGpuHost, EqualsTheCpuSamplerOnRandomGraphs) {
  const std::vector<std::vector<int64_t>> fanouts = {{15, 10, 5}, {-1, 3}, {2, 0, 4}, {100, 2},
                                                     {1},         {3, -1}, {0},       {}};
  int64_t compared = 0;
  for (int kind = 0; kind < 3; ++kind) {
    // int32 indices with edge ids; int64 indices; no edge ids (CSR positions).
    const Csr graph = skewed_random_graph(
        1500, 30000, 31 + kind, {.keep_edge_ids = kind != 2, .force_int64_indices = kind == 1});
    compared +=
        compare_with_cpu(graph, fanouts, {64, 300}, 17 + kind, fmt::format("graph {}", kind));
    if (HasFailure()) return;
  }
  EXPECT_GT(compared, 200000);
}

TEST(CudaSamplerGpuHost, EqualsTheCpuSamplerOnAPowerLawGraphWithHubs) {
  const Csr graph = power_law_graph(8192, 150000, 5);
  const int64_t hub = max_degree(graph);
  RecordProperty("max_degree", std::to_string(hub));
  ASSERT_GE(hub, 1000) << "the generated graph should have hubs";
  const int64_t compared =
      compare_with_cpu(graph, {{10, 10, 10}, {-1, 5, 3}, {4, -1}}, {48, 200}, 9, "power law");
  EXPECT_GT(compared, 100000);
}

TEST(CudaSamplerGpuHost, SmallGraphsEmptyHopsAndTableGrowth) {
  // A 4-cycle, a graph with isolated nodes (hops that find nothing), and a star whose hub
  // brings in more nodes than the first table holds (rehash mid-batch).
  const Csr cycle = build_csr(Array::from_vector(std::vector<int64_t>{0, 1, 2, 3}),
                              Array::from_vector(std::vector<int64_t>{1, 2, 3, 0}),
                              Array::from_vector(std::vector<float>{1, 2, 3, 4}), {.num_nodes = 4});
  EXPECT_GT(compare_with_cpu(cycle, {{1}, {2, 2, 2}, {-1, -1, -1}}, {1, 4}, 3, "cycle"), 0);
  const Csr sparse = build_csr(Array::from_vector(std::vector<int64_t>{5, 6}),
                               Array::from_vector(std::vector<int64_t>{0, 0}),
                               Array::from_vector(std::vector<float>{1, 0}), {.num_nodes = 50});
  EXPECT_GT(compare_with_cpu(sparse, {{3, 3}, {-1}}, {2, 30}, 4, "sparse"), 0);
  std::vector<int64_t> src, dst;
  for (int64_t i = 1; i < 5000; ++i) {
    src.push_back(i);
    dst.push_back(0);
  }
  const Csr star =
      build_csr(Array::from_vector(src), Array::from_vector(dst),
                Array::from_vector(std::vector<float>(src.size(), 1.0f)), {.num_nodes = 5000});
  EXPECT_GT(compare_with_cpu(star, {{-1, 2}, {3000}}, {1, 3}, 5, "star"), 0);
}

// A batch the caller still holds is never overwritten by the next one.
TEST(CudaSamplerGpuHost, HeldResultsSurviveLaterBatches) {
  const Csr graph = skewed_random_graph(2000, 40000, 5);
  const HostPlacedGraph placed(graph, Placement::kGpu);
  auto backend = sampling_internal::make_host_sampler_backend();
  const NeighborSamplerOptions options{{10, 5}, false, false, 1};
  std::mt19937_64 rng(2);
  const auto first_seeds = random_seeds(2000, 200, rng);
  BackendResult first;
  backend->sample(placed.view(false), first_seeds, {options.fanouts, {}, 1}, 0, nullptr, first);
  const SampledSubgraph first_copy = vectors_of(to_subgraph(first, 200)).finish();  // a copy
  for (uint64_t batch = 1; batch < 5; ++batch) {
    BackendResult later;
    backend->sample(placed.view(false), random_seeds(2000, 300, rng), {options.fanouts, {}, 1},
                    batch, nullptr, later);
  }
  expect_same_subgraph(first_copy, to_subgraph(first, 200), "held batch");
  expect_same_subgraph(sample_neighbors(graph, first_seeds, options, 0), first_copy, "first");
}

// Sizes stay on the device: a batch whose hops all have a fanout waits for the device once (to
// read its sizes), whatever its hops find; a hop with fanout -1 has no bound and also reads its
// edge and node counts. Equal results either way (the tests above). (Each batch runs twice:
// the first grows the working memory, which waits for the device before freeing.)
TEST(CudaSamplerGpuHost, BoundedHopsWaitOncePerBatch) {
  const Csr graph = skewed_random_graph(3000, 60000, 8);
  const HostPlacedGraph placed(graph, Placement::kGpu);
  sampling_internal::SamplerBackend<internal::HostExecutor> backend(
      internal::HostExecutorOptions{.threads = 2});
  DeviceGraphView view = placed.view(false);
  view.num_nodes = graph.num_nodes();  // disjoint sampling's tree size
  std::mt19937_64 rng(4);
  auto waits_of = [&](const std::vector<int64_t>& fanouts, bool disjoint) {
    const auto seeds = random_seeds(3000, 256, rng);
    BackendResult result;
    backend.sample(view, seeds, {fanouts, {}, 3, disjoint}, 0, nullptr, result);
    const int64_t before = backend.executor().waits();
    backend.sample(view, seeds, {fanouts, {}, 3, disjoint}, 0, nullptr, result);
    EXPECT_EQ(result.num_nodes,
              std::accumulate(result.nodes_per_hop.begin(), result.nodes_per_hop.end(), 0));
    return backend.executor().waits() - before;
  };
  EXPECT_EQ(waits_of({15, 10, 5}, false), 1);
  EXPECT_EQ(waits_of({15, 10, 5}, true), 1);
  EXPECT_EQ(waits_of({2, 0, 4}, false), 1);
  EXPECT_EQ(waits_of({-1, 3}, false), 3);
  EXPECT_EQ(waits_of({3, -1}, true), 3);
}

}  // namespace
}  // namespace volley
