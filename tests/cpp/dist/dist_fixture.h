// tests/cpp/dist/dist_fixture.h — partitioned copies of the bundled Cora and the oracles the
// distributed service is checked against (only compiled with VOLLEY_WITH_DIST).
//
// The oracle of a partitioned dataset is its whole renumbered graph: the parts' rows in part
// order (each part holds its rows in new-id order with neighbors as new global ids), edge ids
// and weights alongside; features and labels are the originals permuted to new ids. Sampling
// is a pure function of (graph, seeds, options, batch), so DistGraph must return exactly what
// sample_neighbors returns on the oracle.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "sampling/expect_subgraph.h"
#include "test_util.h"
#include "volley/dist/client.h"
#include "volley/dist/server.h"
#include "volley/graph/dataset.h"
#include "volley/loader/neighbor_loader.h"
#include "volley/partition/partition.h"
#include "volley/sampling/neighbor_sampler.h"

namespace volley::dist_test {

namespace fs = std::filesystem;

inline const std::string kCoraDirectory = std::string(VOLLEY_SOURCE_DIR) + "/data/cora";

// A partitioned-dataset scratch directory (test_util.h's TempDir).
using volley::TempDir;

// The whole renumbered graph of the partitioned dataset at `directory`.
inline Csr whole_renumbered_graph(const std::string& directory) {
  const PartitionManifest manifest = read_partition_manifest(directory);
  std::vector<int64_t> indptr{0}, indices, edge_ids;
  std::vector<float> weights;
  bool weighted = false;
  for (int64_t p = 0; p < manifest.book.num_parts(); ++p) {
    const Partition part = load_partition(directory, p);
    const Csr& graph = part.data.graph;
    weighted = graph.has_weights();
    const int64_t base = static_cast<int64_t>(indices.size());
    for (int64_t r = 0; r < graph.num_nodes(); ++r) indptr.push_back(base + graph.end(r));
    for (int64_t k = 0; k < graph.num_edges(); ++k) {
      indices.push_back(graph.neighbor(k));
      edge_ids.push_back(graph.edge_id(k));
      if (weighted) weights.push_back(graph.weights()->data<float>()[k]);
    }
  }
  std::optional<Array> weight_array;
  if (weighted) weight_array = Array::from_vector(weights);
  return Csr::from_arrays(Array::from_vector(indptr), Array::from_vector(indices),
                          Array::from_vector(edge_ids), weight_array);
}

// Rows of `table` ([N, ...] by old id) in new-id order: out[node_map[v]] = table[v].
inline Array rows_in_new_order(const Array& table, const Array& node_map) {
  Array out = Array::empty(table.dtype(), table.shape());
  const size_t row_bytes = table.nbytes() / static_cast<size_t>(table.dim(0));
  for (int64_t v = 0; v < table.dim(0); ++v) {
    std::memcpy(out.raw_data() + static_cast<size_t>(node_map.data<int64_t>()[v]) * row_bytes,
                table.raw_data() + static_cast<size_t>(v) * row_bytes, row_bytes);
  }
  return out;
}

// `count` distinct ids in [0, n), in a seeded random order.
inline std::vector<int64_t> distinct_ids(int64_t n, int64_t count, uint64_t seed) {
  std::vector<int64_t> ids(static_cast<size_t>(n));
  std::iota(ids.begin(), ids.end(), 0);
  std::mt19937_64 rng(seed);
  std::shuffle(ids.begin(), ids.end(), rng);
  ids.resize(static_cast<size_t>(count));
  return ids;
}

inline bool same_array(const Array& a, const Array& b) {
  if (a.defined() != b.defined()) return false;
  if (!a.defined()) return true;
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         (a.nbytes() == 0 || std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0);
}

inline void expect_same_batch(const Batch& got, const Batch& want, const std::string& where) {
  EXPECT_EQ(got.index, want.index) << where;
  EXPECT_EQ(got.batch_size, want.batch_size) << where;
  EXPECT_TRUE(same_array(got.nodes, want.nodes)) << where << ": nodes";
  EXPECT_TRUE(same_array(got.input_ids, want.input_ids)) << where << ": input_ids";
  EXPECT_TRUE(same_array(got.edge_index, want.edge_index)) << where << ": edge_index";
  EXPECT_TRUE(same_array(got.edge_ids, want.edge_ids)) << where << ": edge_ids";
  EXPECT_TRUE(same_array(got.x, want.x)) << where << ": x";
  EXPECT_TRUE(same_array(got.y, want.y)) << where << ": y";
  EXPECT_EQ(got.nodes_per_hop, want.nodes_per_hop) << where;
  EXPECT_EQ(got.edges_per_hop, want.edges_per_hop) << where;
}

// The typed parts of two batches (nodes, trees, edges, counts; not the attributes), and their
// seeds.
inline void expect_same_typed_batch(const Batch& got, const Batch& want, const std::string& where) {
  EXPECT_EQ(got.index, want.index) << where;
  EXPECT_EQ(got.batch_size, want.batch_size) << where;
  EXPECT_TRUE(same_array(got.input_ids, want.input_ids)) << where << ": input_ids";
  ASSERT_EQ(got.node_types.size(), want.node_types.size()) << where;
  ASSERT_EQ(got.edge_types.size(), want.edge_types.size()) << where;
  for (size_t t = 0; t < got.node_types.size(); ++t) {
    const NodeTypeBatch &a = got.node_types[t], &b = want.node_types[t];
    EXPECT_TRUE(same_array(a.nodes, b.nodes)) << where << ": nodes of type " << t;
    EXPECT_TRUE(same_array(a.batch_ids, b.batch_ids)) << where << ": trees of type " << t;
    EXPECT_EQ(a.nodes_per_hop, b.nodes_per_hop) << where << ": type " << t;
  }
  for (size_t e = 0; e < got.edge_types.size(); ++e) {
    const EdgeTypeBatch &a = got.edge_types[e], &b = want.edge_types[e];
    EXPECT_TRUE(same_array(a.edge_index, b.edge_index)) << where << ": edge type " << e;
    EXPECT_TRUE(same_array(a.edge_ids, b.edge_ids)) << where << ": edge type " << e;
    EXPECT_EQ(a.edges_per_hop, b.edges_per_hop) << where << ": edge type " << e;
  }
}

// The rows of table `name` among `part`'s attributes, or an undefined array.
inline Array typed_attr(const NodeTypeBatch& part, const std::string& name) {
  for (const auto& [key, rows] : part.attrs) {
    if (key == name) return rows;
  }
  return Array();
}

// Seconds since `start`.
inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A partitioned dataset, its servers (one per part, loopback, port 0) and its oracle.
struct ServedDataset {
  std::string directory;
  PartitionManifest manifest;
  Array node_map;  // old -> new
  Csr whole;       // the oracle graph (new ids)
  std::vector<std::unique_ptr<dist::Server>> servers;

  ServedDataset(std::string dir, const dist::ServerOptions& options = {})
      : directory(std::move(dir)),
        manifest(read_partition_manifest(directory)),
        node_map(load_node_map(directory)),
        whole(whole_renumbered_graph(directory)) {
    for (int64_t p = 0; p < manifest.book.num_parts(); ++p) {
      servers.push_back(std::make_unique<dist::Server>(directory, p, options));
    }
  }
  int64_t num_parts() const { return manifest.book.num_parts(); }
  std::vector<std::string> addresses() const {
    std::vector<std::string> list;
    for (const auto& server : servers) list.push_back(server->address());
    return list;
  }
  // All parts remote.
  std::shared_ptr<const dist::DistGraph> client(dist::ClientOptions options = {}) const {
    return dist::DistGraph::connect(addresses(), options);
  }
  // Worker mode: part `part` in-process (shared with its server), the rest remote.
  std::shared_ptr<const dist::DistGraph> worker(int64_t part,
                                                dist::ClientOptions options = {}) const {
    const auto& server = *servers[static_cast<size_t>(part)];
    return dist::DistGraph::connect(addresses(), options, server.partition(), server.fingerprint());
  }
};

}  // namespace volley::dist_test
