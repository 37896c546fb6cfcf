// tests/cpp/test_graphs.h — the small graphs the C++ tests build (one fixture header for all).
//
//   const Csr graph = skewed_random_graph(2000, 30000, /*seed=*/3);
//   const Csr graph = skewed_random_graph(3000, 60000, 11, {.force_int64_indices = true});
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "volley/graph/csr.h"
#include "volley/graph/generate_hetero.h"

namespace volley {

struct RandomGraphOptions {
  bool weighted = true;              // attach the weights (drawn either way)
  float weight_unit = 0.25f;         // weights are (rng() % 5) * weight_unit: a fifth are zero
  bool keep_edge_ids = true;         // build_csr's option
  bool force_int64_indices = false;  // build_csr's option
};

// `m` random edges over `n` nodes from a std::mt19937_64 seeded with `seed`: sources uniform,
// targets skewed to low ids (hubs far above typical fanouts, and many nodes with no in-edges).
// The same (n, m, seed) gives the same edges whatever the options.
inline Csr skewed_random_graph(int64_t n, int64_t m, uint64_t seed,
                               const RandomGraphOptions& options = {}) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> src(static_cast<size_t>(m)), dst(static_cast<size_t>(m));
  std::vector<float> w(static_cast<size_t>(m));
  for (size_t i = 0; i < src.size(); ++i) {
    src[i] = static_cast<int64_t>(rng() % n);
    dst[i] = static_cast<int64_t>((rng() % n) * (rng() % n) / n);
    w[i] = static_cast<float>(rng() % 5) * options.weight_unit;
  }
  std::optional<Array> weights;
  if (options.weighted) weights = Array::from_vector(w);
  return build_csr(Array::from_vector(src), Array::from_vector(dst), weights,
                   {.num_nodes = n,
                    .keep_edge_ids = options.keep_edge_ids,
                    .force_int64_indices = options.force_int64_indices});
}

// A small ogbn-mag-shaped typed graph (2000 papers, 5 classes, reverse edge types, no
// features), built once.
inline const HeteroGraph& small_mag() {
  static const HeteroGraph graph = [] {
    GeneratorOptions options = mag_generator_options();
    options.num_nodes = 2000;
    options.num_classes = 5;
    options.feature_dim = 0;
    options.reverse = true;
    return generate_hetero_graph(options);
  }();
  return graph;
}

// The index of node type `name` in small_mag().
inline size_t small_mag_type(const std::string& name) {
  return static_cast<size_t>(small_mag().node_type_index(name));
}

// Every edge of `graph` as (row, neighbor, edge id), sorted: two graphs hold the same edges when
// these are equal.
inline std::vector<std::tuple<int64_t, int64_t, int64_t>> sorted_edges(const Csr& graph) {
  std::vector<std::tuple<int64_t, int64_t, int64_t>> edges;
  for (int64_t v = 0; v < graph.num_nodes(); ++v) {
    for (int64_t k = graph.begin(v); k < graph.end(v); ++k) {
      edges.emplace_back(v, graph.neighbor(k), graph.edge_id(k));
    }
  }
  std::sort(edges.begin(), edges.end());
  return edges;
}

}  // namespace volley
