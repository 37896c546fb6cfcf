// tests/cpp/sampling/hetero_test_graphs.h — heterogeneous graphs and seeds for the tests that
// check a heterogeneous sampler against the CPU one (gpu-host and CUDA tests):
//
//   const HeteroGraph graph = varied_mag_graph(3000, /*reverse=*/true, /*seed=*/1);
//   auto seeds = distinct_ids(graph.num_nodes("paper"), 64, rng);
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "volley/graph/generate_hetero.h"
#include "volley/graph/hetero_graph.h"

namespace volley {

// `volley generate --model hetero`'s mag-shaped graph (no features), its edge types varied so
// that every kind of Csr is sampled: even edge types get weights (0.5..50, every seventh 0),
// the second keeps int64 indices, the third drops its edge ids (CSR positions). Deterministic.
inline HeteroGraph varied_mag_graph(int64_t num_papers, bool reverse, uint64_t seed) {
  GeneratorOptions options = mag_generator_options();
  options.num_nodes = num_papers;
  options.num_classes = 5;
  options.feature_dim = 0;
  options.reverse = reverse;
  options.seed = seed;
  const HeteroGraph generated = generate_hetero_graph(options);
  std::mt19937_64 rng(seed);
  std::vector<std::pair<EdgeType, Csr>> edge_types;
  for (int e = 0; e < generated.num_edge_types(); ++e) {
    const Csr& csr = generated.edges(e);
    Array indices = csr.indices();
    if (e == 1 && indices.dtype() == DType::kInt32) {
      std::vector<int64_t> wide(indices.data<int32_t>(), indices.data<int32_t>() + csr.num_edges());
      indices = Array::from_vector(wide);
    }
    std::optional<Array> edge_ids = e == 2 ? std::nullopt : csr.edge_ids();
    std::optional<Array> weights;
    if (e % 2 == 0) {
      std::vector<float> w(static_cast<size_t>(csr.num_edges()));
      for (size_t k = 0; k < w.size(); ++k)
        w[k] = k % 7 == 3 ? 0.0f : 0.5f * static_cast<float>(1 + rng() % 100);
      weights = Array::from_vector(w);
    }
    edge_types.emplace_back(generated.edge_types()[static_cast<size_t>(e)],
                            Csr::from_arrays(csr.indptr(), indices, edge_ids, weights,
                                             Orientation::kIn, /*validate=*/false));
  }
  return HeteroGraph(generated.node_types(), std::move(edge_types));  // validates every Csr
}

// `count` distinct ids in [0, n) (count <= n), the first few among the lowest 40 (shared
// neighborhoods), in random order.
inline std::vector<int64_t> distinct_ids(int64_t n, size_t count, std::mt19937_64& rng) {
  std::vector<int64_t> ids;
  std::vector<bool> taken(static_cast<size_t>(n), false);
  while (ids.size() < count) {
    const auto range = static_cast<uint64_t>(ids.size() < 8 ? std::min<int64_t>(40, n) : n);
    const auto id = static_cast<int64_t>(rng() % range);
    if (!taken[static_cast<size_t>(id)]) {
      taken[static_cast<size_t>(id)] = true;
      ids.push_back(id);
    }
  }
  return ids;
}

}  // namespace volley
