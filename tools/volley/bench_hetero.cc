// `volley bench sample --dataset HETERO_DIR`: the heterogeneous CPU sampler's throughput.
#include "bench_hetero.h"

#include <atomic>
#include <iostream>
#include <numeric>
#include <span>
#include <thread>

#include <nlohmann/json.hpp>

#include "bench_util.h"
#include "volley/graph/hetero_dataset.h"
#include "volley/loader/neighbor_loader.h"  // seeded_permutation
#include "volley/sampling/hetero_sampler.h"

namespace volley::cli {
namespace {

SampleFigures run(const HeteroGraph& graph, const std::string& type,
                  const std::vector<int64_t>& seeds, const HeteroSamplerOptions& options,
                  int64_t batch_size, int threads, int64_t batches) {
  const int64_t available = static_cast<int64_t>(seeds.size()) / batch_size;
  VOLLEY_REQUIRE(available >= 1, ValueError, "--batch-size {} exceeds the {} seeds of type {}",
                 batch_size, seeds.size(), type);
  std::atomic<int64_t> next{0}, edges{0}, nodes{0};
  auto work = [&] {
    HeteroSamplerScratch scratch;
    HeteroSampledSubgraph result;  // reused: its vectors keep their capacity
    int64_t my_edges = 0, my_nodes = 0;
    for (int64_t b = next++; b < batches; b = next++) {
      const std::span<const int64_t> ids(seeds.data() + (b % available) * batch_size,
                                         static_cast<size_t>(batch_size));
      sample_hetero_neighbors(graph, {{type, ids}}, options, static_cast<uint64_t>(b), result,
                              &scratch);
      my_edges += result.total_edges();
      my_nodes += result.total_nodes();
    }
    edges += my_edges;
    nodes += my_nodes;
  };
  const auto start = Clock::now();
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) workers.emplace_back(work);
  for (auto& worker : workers) worker.join();
  return {edges.load(), nodes.load(), seconds_since(start)};
}

}  // namespace

void run_hetero_sample_bench(const HeteroSampleBench& bench) {
  const HeteroDataset dataset = load_hetero_dataset(bench.dataset, {.validate_graph = false});
  const HeteroGraph& graph = dataset.graph;
  size_t input = 0;
  for (size_t t = 0; t < dataset.node_data.size(); ++t) {
    if (dataset.node_data[t].train_idx && dataset.node_data[t].train_idx->numel() > 0) {
      input = t;
      break;
    }
  }
  const std::string type = graph.node_types().at(input).name;
  std::vector<int64_t> pool;
  if (dataset.node_data[input].train_idx) {
    pool = dataset.node_data[input].train_idx->to_vector<int64_t>();
  } else {
    pool.resize(static_cast<size_t>(graph.num_nodes(type)));
    std::iota(pool.begin(), pool.end(), 0);
  }
  const Array order = seeded_permutation(static_cast<int64_t>(pool.size()), bench.seed);
  std::vector<int64_t> seeds(pool.size());
  for (size_t i = 0; i < pool.size(); ++i) {
    seeds[i] = pool[static_cast<size_t>(order.data<int64_t>()[i])];
  }
  HeteroSamplerOptions options;
  options.fanouts = parse_fanouts(bench.fanout);
  options.replace = bench.replace;
  options.weighted = bench.weighted;
  options.seed = bench.seed;
  resolve_hetero_fanouts(graph, options);  // bad fanouts fail before any work
  for (const int64_t batch_size : bench.batch_sizes) {
    for (const int threads : bench.thread_counts) {
      if (bench.warmup > 0) run(graph, type, seeds, options, batch_size, 1, bench.warmup);
      const SampleFigures figures =
          run(graph, type, seeds, options, batch_size, threads, bench.batches);
      const nlohmann::json line = {
          {"bench", "sample"},
          {"device", "cpu"},
          {"hetero", true},
          {"dataset", dataset.name},
          {"input_type", type},
          {"edge_types", graph.num_edge_types()},
          {"threads", threads},
          {"batches", bench.batches},
          {"batch_size", batch_size},
          {"fanout", bench.fanout},
          {"sampled_edges", figures.edges},
          {"sampled_nodes", figures.nodes},
          {"seconds", figures.seconds},
          {"seps", static_cast<double>(figures.edges) / figures.seconds},
          {"nodes_per_second", static_cast<double>(figures.nodes) / figures.seconds},
          {"load_average", load_average().text()}};
      std::cout << line.dump() << std::endl;
    }
  }
}

}  // namespace volley::cli
