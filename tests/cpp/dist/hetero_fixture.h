// tests/cpp/dist/hetero_fixture.h — what the heterogeneous dist tests share: the whole
// renumbered graph of a heterogeneous partitioned directory (the oracle the local sampler runs
// on) and a directory served by in-process servers (batches compare with expect_same_hetero,
// sampling/expect_subgraph.h).
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sampling/expect_subgraph.h"
#include "volley/dist/server.h"
#include "volley/partition/hetero_partition.h"
#include "volley/sampling/hetero_sampler.h"

namespace volley::dist_test {

// The whole renumbered graph of a heterogeneous partitioned directory: per edge type, the parts'
// rows in part order (each part's rows are its owned destination nodes in new-id order, their
// neighbors new global source ids); node data per type concatenated the same way.
struct HeteroOracle {
  HeteroGraph graph;
  std::vector<std::optional<Array>> features;  // per node type
  std::vector<std::optional<Array>> labels;
};

inline HeteroOracle whole_renumbered(const std::string& directory) {
  const HeteroPartitionManifest manifest = read_hetero_partition_manifest(directory);
  std::vector<HeteroPartition> parts;
  for (int64_t p = 0; p < manifest.num_parts; ++p) {
    parts.push_back(load_hetero_partition(directory, p));
  }
  std::vector<std::pair<EdgeType, Csr>> edge_types;
  for (const EdgeType& type : manifest.edge_types) {
    std::vector<int64_t> indptr{0}, indices, edge_ids;
    for (const HeteroPartition& part : parts) {
      const Csr& csr = part.data.graph.edges(type);
      const int64_t base = static_cast<int64_t>(indices.size());
      for (int64_t r = 0; r < csr.num_nodes(); ++r) indptr.push_back(base + csr.end(r));
      for (int64_t k = 0; k < csr.num_edges(); ++k) {
        indices.push_back(csr.neighbor(k));
        edge_ids.push_back(csr.edge_id(k));
      }
    }
    // Bipartite rows: HeteroGraph checks the indices against the source type's count.
    edge_types.emplace_back(
        type, Csr::from_arrays(Array::from_vector(indptr), Array::from_vector(indices),
                               Array::from_vector(edge_ids), std::nullopt, Orientation::kIn,
                               /*validate=*/false));
  }
  HeteroOracle oracle{HeteroGraph(manifest.node_types, std::move(edge_types)), {}, {}};
  for (size_t t = 0; t < manifest.node_types.size(); ++t) {
    std::vector<std::byte> feature_bytes;
    std::vector<int64_t> labels;
    const NodeTypeData& first = parts[0].data.node_data[t];
    for (const HeteroPartition& part : parts) {
      const NodeTypeData& data = part.data.node_data[t];
      if (data.features) {
        const auto* bytes = data.features->raw_data();
        feature_bytes.insert(feature_bytes.end(), bytes, bytes + data.features->nbytes());
      }
      if (data.labels) {
        const auto* values = data.labels->data<int64_t>();
        labels.insert(labels.end(), values, values + data.labels->numel());
      }
    }
    std::optional<Array> features;
    if (first.features) {
      const int64_t dim = first.features->dim(1);
      const auto rows = static_cast<int64_t>(
          feature_bytes.size() / dtype_size(first.features->dtype()) / static_cast<size_t>(dim));
      features = Array::empty(first.features->dtype(), {rows, dim});
      std::memcpy(features->raw_data(), feature_bytes.data(), feature_bytes.size());
    }
    oracle.features.push_back(features);
    oracle.labels.push_back(first.labels ? std::optional<Array>(Array::from_vector(labels))
                                         : std::nullopt);
  }
  return oracle;
}

// One partitioned copy, its servers and its oracle.
struct ServedHetero {
  std::string directory;
  HeteroOracle oracle;
  std::vector<std::unique_ptr<dist::Server>> servers;

  ServedHetero(std::string dir, int64_t parts) : directory(std::move(dir)) {
    oracle = whole_renumbered(directory);
    for (int64_t p = 0; p < parts; ++p) {
      servers.push_back(std::make_unique<dist::Server>(directory, p));
    }
  }
  std::vector<std::string> addresses() const {
    std::vector<std::string> list;
    for (const auto& server : servers) list.push_back(server->address());
    return list;
  }
};

}  // namespace volley::dist_test
