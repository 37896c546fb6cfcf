// `volley bench sample --dataset HETERO_DIR`: the heterogeneous CPU sampler's side of the bench.
#include "bench_hetero.h"

#include <span>

namespace volley::cli {

HeteroSampleBench::HeteroSampleBench(const std::string& dataset, const std::string& fanout,
                                     bool replace, bool weighted, uint64_t seed)
    : dataset_(load_hetero_dataset(dataset, {.validate_graph = false})) {
  size_t input = 0;
  for (size_t t = 0; t < dataset_.node_data.size(); ++t) {
    if (dataset_.node_data[t].train_idx && dataset_.node_data[t].train_idx->numel() > 0) {
      input = t;
      break;
    }
  }
  type_ = dataset_.graph.node_types().at(input).name;
  seeds_ =
      bench_seed_pool(dataset_.node_data[input].train_idx, dataset_.graph.num_nodes(type_), seed);
  options_.fanouts = parse_fanouts(fanout);
  options_.replace = replace;
  options_.weighted = weighted;
  options_.seed = seed;
  resolve_hetero_fanouts(dataset_.graph, options_);  // bad fanouts fail before any work
}

SampleFigures HeteroSampleBench::run(int64_t batch_size, int threads, int64_t batches) const {
  const int64_t available = static_cast<int64_t>(seeds_.size()) / batch_size;
  VOLLEY_REQUIRE(available >= 1, ValueError, "--batch-size {} exceeds the {} seeds of type {}",
                 batch_size, seeds_.size(), type_);
  struct Scratch {
    HeteroSamplerScratch sampler;
    HeteroSampledSubgraph result;  // reused: its vectors keep their capacity
  };
  return run_batches<Scratch>(threads, batches, [&](int64_t b, Scratch& scratch) {
    const std::span<const int64_t> ids(seeds_.data() + (b % available) * batch_size,
                                       static_cast<size_t>(batch_size));
    sample_hetero_neighbors(dataset_.graph, {{type_, ids}}, options_, static_cast<uint64_t>(b),
                            scratch.result, &scratch.sampler);
    return std::pair{scratch.result.total_edges(), scratch.result.total_nodes()};
  });
}

nlohmann::json HeteroSampleBench::describe() const {
  return {{"device", "cpu"},
          {"hetero", true},
          {"dataset", dataset_.name},
          {"input_type", type_},
          {"edge_types", dataset_.graph.num_edge_types()},
          {"load_average", load_average().text()}};
}

}  // namespace volley::cli
