// tests/cpp/sampling/expect_subgraph.h — one comparison of two sampled subgraphs, field by field,
// for every test that checks a sampler (CUDA, distributed, host runs of the pick rules) against
// the CPU sampler; and the subgraph as host vectors, for tests that index it. The same for
// heterogeneous batches.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "volley/sampling/hetero_sampler.h"
#include "volley/sampling/neighbor_sampler.h"

namespace volley {

// The subgraph's arrays as host vectors (copied to the host first when they live on a GPU).
inline HostSubgraph vectors_of(const SampledSubgraph& subgraph) {
  const SampledSubgraph host = subgraph.to_host();
  HostSubgraph out;
  out.nodes = host.nodes.to_vector<int64_t>();
  out.num_seeds = host.num_seeds;
  out.rows = host.rows.to_vector<int64_t>();
  out.cols = host.cols.to_vector<int64_t>();
  out.edge_ids = host.edge_ids.to_vector<int64_t>();
  out.nodes_per_hop = host.nodes_per_hop;
  out.edges_per_hop = host.edges_per_hop;
  return out;
}

inline void expect_same_subgraph(const SampledSubgraph& got, const SampledSubgraph& want,
                                 const std::string& where) {
  const HostSubgraph a = vectors_of(got);
  const HostSubgraph b = vectors_of(want);
  EXPECT_EQ(a.nodes, b.nodes) << where;
  EXPECT_EQ(a.num_seeds, b.num_seeds) << where;
  EXPECT_EQ(a.rows, b.rows) << where;
  EXPECT_EQ(a.cols, b.cols) << where;
  EXPECT_EQ(a.edge_ids, b.edge_ids) << where;
  EXPECT_EQ(a.nodes_per_hop, b.nodes_per_hop) << where;
  EXPECT_EQ(a.edges_per_hop, b.edges_per_hop) << where;
}

// Two heterogeneous batches, field by field (the disjoint trees `batch` too).
inline void expect_same_hetero(const HeteroSampledSubgraph& got, const HeteroSampledSubgraph& want,
                               const std::string& where) {
  EXPECT_EQ(got.nodes, want.nodes) << where << ": nodes";
  EXPECT_EQ(got.num_seeds, want.num_seeds) << where << ": num_seeds";
  EXPECT_EQ(got.nodes_per_hop, want.nodes_per_hop) << where << ": nodes_per_hop";
  EXPECT_EQ(got.rows, want.rows) << where << ": rows";
  EXPECT_EQ(got.cols, want.cols) << where << ": cols";
  EXPECT_EQ(got.edge_ids, want.edge_ids) << where << ": edge_ids";
  EXPECT_EQ(got.edges_per_hop, want.edges_per_hop) << where << ": edges_per_hop";
  EXPECT_EQ(got.batch, want.batch) << where << ": batch (trees)";
}

}  // namespace volley
