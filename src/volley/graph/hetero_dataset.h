// volley/graph/hetero_dataset.h — a heterogeneous graph with per-type node data, and its
// dataset directory (version 2 of the dataset format).
//
// A heterogeneous dataset directory holds `volley.json` plus one `.npy` file per array per type,
// named "<type>.<field>.npy":
//   per node type T (fields optional; a node type may have none):
//     T.features.npy  [N_T, D_T] any dtype       T.labels.npy  int64 [N_T]
//     T.train_idx.npy / T.val_idx.npy / T.test_idx.npy   int64 [*], ids of type T
//   per edge type S__R__D (an in-neighbor Csr over D's ids whose indices are S ids):
//     S__R__D.indptr.npy    int64 [N_D + 1]    S__R__D.indices.npy  int32|int64 [E]
//     S__R__D.edge_ids.npy  int64 [E] (opt.)   S__R__D.weights.npy  float32 [E] (opt.)
// `volley.json` (version 2; a homogeneous dataset is version 1 and reads exactly as before):
//   {"format": "volley-dataset", "version": 2, "name": "mag",
//    "node_types": [{"name": "paper", "num_nodes": N, "num_classes": C,
//                    "arrays": {"features": {"file": "paper.features.npy", "dtype": "float32",
//                                            "shape": [N, D], "crc32": "1a2b3c4d"}, ...}},
//                   {"name": "author", "num_nodes": M, "num_classes": 0, "arrays": {}}, ...],
//    "edge_types": [{"src": "author", "relation": "writes", "dst": "paper", "num_edges": E,
//                    "arrays": {"indptr": {...}, "indices": {...}}}, ...]}
// Type names follow hetero_graph.h (so file names are always safe). The lists keep their order
// (the graph's type order). Array entries are as in version 1 (crc32 of the data bytes).
//
//   HeteroDataset mag = load_hetero_dataset("data/mag");   // arrays memory-mapped
//   save_hetero_dataset(mag, "/tmp/mag-copy");
//
// Errors: IoError for a missing/corrupt file or bad manifest ("PATH: FIELD: expected X, found
// Y", FIELD e.g. "node_types[1].arrays.labels.dtype"), ValueError / IndexError for arrays that
// disagree with the counts (naming the type, the field and the counts), e.g.
//   "mag/volley.json: node type paper: arrays.labels.shape: expected [736389], found [5]
//    (num_nodes 736389)"
// Read, checked and written by the same core as version 1 (internal/dataset_format.h), so the
// checks, the resident read-only topology and the writer's guarantees are those of dataset.h.
// Thread safety: the functions are reentrant; a HeteroDataset is immutable data, safe to read
// from many threads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "volley/core/array.h"
#include "volley/graph/dataset.h"
#include "volley/graph/hetero_graph.h"

namespace volley {

// The node data of one node type (every array optional).
struct NodeTypeData {
  std::optional<Array> features;   // [N_T, D]
  std::optional<Array> labels;     // int64 [N_T], in [0, num_classes) or -1
  std::optional<Array> train_idx;  // int64 ids of this type
  std::optional<Array> val_idx;
  std::optional<Array> test_idx;
  int64_t num_classes = 0;
};

struct HeteroDataset {
  std::string name;
  HeteroGraph graph;
  // One entry per node type, in graph.node_types() order.
  std::vector<NodeTypeData> node_data;

  // The data of node type `type` (ValueError listing the node types when unknown).
  const NodeTypeData& node(std::string_view type) const {
    return node_data.at(static_cast<size_t>(graph.node_type_index(type)));
  }
};

// The manifest's format version of a dataset directory: 1 (homogeneous) or 2 (heterogeneous).
// IoError when there is no readable manifest.
int64_t dataset_format_version(const std::string& directory);
// Whether `path` holds a heterogeneous dataset (a version-2 volley.json); false on any error.
bool is_hetero_dataset_directory(const std::string& path);

// Reads a heterogeneous dataset directory (DatasetLoadOptions as for load_dataset: mapping,
// checksums, graph validation, resident topology budget). Errors as above.
HeteroDataset load_hetero_dataset(const std::string& directory,
                                  const DatasetLoadOptions& options = {});

// Writes `dataset` (checked first: nothing is written for a dataset load would refuse).
// ValueError naming the type and field of an inconsistent array; IoError for a failed write.
void save_hetero_dataset(const HeteroDataset& dataset, const std::string& directory);

// Checks every file of a heterogeneous dataset directory against its manifest (checksums
// included) and the graph, reporting all problems.
DatasetCheck verify_hetero_dataset(const std::string& directory);

// Writes a heterogeneous dataset directory array by array (the generator streams features):
//   HeteroDatasetWriter writer(dir, "mag", {{"paper", n_paper}, {"author", n_author}},
//                              {{"author", "writes", "paper"}});
//   writer.add_edge_array(writes, "indptr", indptr);
//   NpyWriter x(writer.node_path("paper", "features"), DType::kFloat32, {n_paper, d});
//   ... x.write(...); x.close();
//   writer.add_node_written("paper", "features", DType::kFloat32, {n_paper, d}, x.crc32());
//   writer.finish({{"paper", 349}});   // num_classes per node type; volley.json last
// As DatasetWriter: the old manifest is removed first, finish() checks every shape against the
// counts (ValueError naming type and field), requires indptr and indices of every edge type,
// and writes volley.json atomically. Unknown types or fields, or an array added twice, are a
// ValueError.
class HeteroDatasetWriter {
 public:
  HeteroDatasetWriter(std::string directory, std::string name, std::vector<NodeTypeInfo> node_types,
                      std::vector<EdgeType> edge_types);
  std::string node_path(std::string_view node_type, std::string_view field) const;
  std::string edge_path(const EdgeType& edge_type, std::string_view field) const;
  void add_node_array(std::string_view node_type, std::string_view field, const Array& array);
  void add_node_written(std::string_view node_type, std::string_view field, DType dtype,
                        std::vector<int64_t> shape, uint32_t crc32);
  void add_edge_array(const EdgeType& edge_type, std::string_view field, const Array& array);
  void add_edge_written(const EdgeType& edge_type, std::string_view field, DType dtype,
                        std::vector<int64_t> shape, uint32_t crc32);
  // `num_classes`: (node type, classes) for the labelled types (others 0).
  void finish(const std::vector<std::pair<std::string, int64_t>>& num_classes = {});

 private:
  std::string directory_;
  std::string name_;
  std::vector<NodeTypeInfo> node_types_;
  std::vector<EdgeType> edge_types_;
  std::vector<graph_internal::WrittenArray> written_;
};

}  // namespace volley
