// tests/cpp/sampling/expect_subgraph.h — one comparison of two sampled subgraphs, field by field,
// for every test that checks a sampler (CUDA, distributed, host runs of the pick rules) against
// the CPU sampler.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "volley/sampling/neighbor_sampler.h"

namespace volley {

inline void expect_same_subgraph(const SampledSubgraph& a, const SampledSubgraph& b,
                                 const std::string& where) {
  EXPECT_EQ(a.nodes, b.nodes) << where;
  EXPECT_EQ(a.num_seeds, b.num_seeds) << where;
  EXPECT_EQ(a.rows, b.rows) << where;
  EXPECT_EQ(a.cols, b.cols) << where;
  EXPECT_EQ(a.edge_ids, b.edge_ids) << where;
  EXPECT_EQ(a.nodes_per_hop, b.nodes_per_hop) << where;
  EXPECT_EQ(a.edges_per_hop, b.edges_per_hop) << where;
}

}  // namespace volley
