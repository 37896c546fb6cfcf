// volley/graph/dataset.h — a graph with its node data, and the dataset directory format.
//
// A dataset directory (ARCHITECTURE.md, "On-disk formats") holds `volley.json` plus one `.npy`
// file per array:
//   indptr.npy    int64 [N + 1]         indices.npy  int32|int64 [E]
//   edge_ids.npy  int64 [E] (optional)  weights.npy  float32 [E] (optional)
//   features.npy  [N, D] any dtype (optional)       labels.npy  int64 [N] (optional)
//   train_idx.npy / val_idx.npy / test_idx.npy  int64 [*] (optional)
//   node_time.npy int64 [N] (optional)  edge_time.npy int64 [E] in CSR order (optional): the
//                 timestamps of temporal sampling, carried by Dataset::graph (Csr::node_time())
//   train_edges.npy / val_edges.npy / test_edges.npy / val_neg_edges.npy / test_neg_edges.npy
//                 int64 [2, M] (src, dst) pairs of a link split (optional; graph/edge_split.h)
// `volley.json`:
//   {"format": "volley-dataset", "version": 1, "name": "cora", "num_nodes": N, "num_edges": E,
//    "num_classes": C, "orientation": "in",
//    "arrays": {"indptr": {"file": "indptr.npy", "dtype": "int64", "shape": [N + 1],
//                          "crc32": "1a2b3c4d"}, ...}}
// The crc32 is zlib's CRC-32 of the array's data bytes (not the .npy header), as 8 lowercase hex
// digits. Label values lie in [0, num_classes), or are -1 for an unlabelled node; split ids lie
// in [0, N). "name", "num_classes" (default 0) and "orientation" (default "in") may be absent;
// the other fields and the indptr / indices arrays are required. Version 2 (hetero_dataset.h) is
// the typed form: this layout is its case of one node type and one edge type, files without a
// "<type>." prefix; one core (internal/dataset_format.h) reads, checks and writes both.
//
//   Dataset cora = load_dataset("data/cora");      // arrays memory-mapped, nothing copied
//   save_dataset(cora, "/tmp/cora-copy");
//
// load_dataset validates the manifest against each file (dtype, shape, size) and the graph
// (Csr::from_arrays with validation), label and split values, and with `verify_checksums` the
// CRCs too; every problem is an IoError / ValueError naming the file, the field, what was
// expected and what was found, e.g.
//   "cora/labels.npy: shape: expected [2708] (as volley.json says), found [2707]"
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "volley/core/array.h"
#include "volley/graph/csr.h"

namespace volley {

namespace graph_internal {
// An array a dataset writer has written: its manifest entry before the counts are known
// (internal/dataset_format.h).
struct WrittenArray {
  std::string owner;  // "" (version 1), or the node or edge type's name
  std::string field;
  DType dtype;
  std::vector<int64_t> shape;
  uint32_t crc32;
};
}  // namespace graph_internal

struct Dataset {
  std::string name;
  Csr graph;
  std::optional<Array> features;   // [N, D]
  std::optional<Array> labels;     // int64 [N]
  std::optional<Array> train_idx;  // int64 node ids
  std::optional<Array> val_idx;
  std::optional<Array> test_idx;
  // A link-prediction edge split (graph/edge_split.h): int64 [2, M] (src, dst) pairs.
  std::optional<Array> train_edges;
  std::optional<Array> val_edges;
  std::optional<Array> test_edges;
  std::optional<Array> val_neg_edges;
  std::optional<Array> test_neg_edges;
  int64_t num_classes = 0;  // 0 when there are no labels
};

struct DatasetLoadOptions {
  // Map arrays read-only (true) or read them into heap memory (false).
  bool memory_map = true;
  // Check every array's CRC-32 against the manifest (reads all bytes once).
  bool verify_checksums = false;
  // Validate the graph (indptr monotone, ids in range): O(E), on by default.
  bool validate_graph = true;
  // With memory_map: the topology (indptr, indices, edge_ids, weights) is read into heap memory
  // when its bytes fit this budget, so feature I/O through the page cache cannot evict it and
  // sampling keeps its in-memory speed. npos (the default): a quarter of the physical RAM; 0:
  // map the topology like the other arrays.
  size_t resident_graph_bytes = static_cast<size_t>(-1);
};

// Reads a dataset directory. Throws IoError (missing/truncated/corrupt file, bad manifest) or
// ValueError / IndexError (inconsistent arrays, ids out of range), naming the file and field.
Dataset load_dataset(const std::string& directory, const DatasetLoadOptions& options = {});

// Writes `dataset` as a dataset directory (created if missing; existing Volley files replaced).
// Throws IoError when the directory or a file cannot be written, ValueError when arrays disagree
// with the graph (e.g. features with a row count other than num_nodes).
void save_dataset(const Dataset& dataset, const std::string& directory);

// The result of verify_dataset: one line per problem found (empty when all is well).
struct DatasetCheck {
  std::vector<std::string> problems;
  bool ok() const { return problems.empty(); }
};
// Checks every file of a dataset directory against its manifest, checksums included, and
// reports all problems rather than stopping at the first.
DatasetCheck verify_dataset(const std::string& directory);

// Writes a dataset directory array by array, for producers that cannot hold everything in memory
// (the generators stream features through NpyWriter). save_dataset is built on it.
//
//   DatasetWriter writer(dir, "powerlaw");
//   writer.add_array("indptr", indptr);                      // writes indptr.npy, records its CRC
//   NpyWriter features(writer.path_of("features"), DType::kFloat32, {n, d});
//   ... features.write(...) ...; features.close();
//   writer.add_written("features", DType::kFloat32, {n, d}, features.crc32());
//   writer.finish(n, e, num_classes, Orientation::kIn);     // writes volley.json last
//
// Until finish() the directory has no (new) volley.json, so a crash never leaves a directory
// that looks complete: the constructor removes an old manifest, finish() checks every shape and
// dtype against the counts (ValueError), removes array files of the format that were not added
// (left over from an earlier dataset) and writes volley.json atomically (write, then rename).
// Fields are the array names of the format above; unknown or repeated names are a ValueError.
class DatasetWriter {
 public:
  DatasetWriter(std::string directory, std::string name);
  // "<directory>/<field>.npy"
  std::string path_of(const std::string& field) const;
  void add_array(const std::string& field, const Array& array);
  void add_written(const std::string& field, DType dtype, std::vector<int64_t> shape,
                   uint32_t crc32);
  void finish(int64_t num_nodes, int64_t num_edges, int64_t num_classes, Orientation orientation);

 private:
  std::string directory_;
  std::string name_;
  std::vector<graph_internal::WrittenArray> written_;
};

// Whether `path` is a dataset directory (has a volley.json).
bool is_dataset_directory(const std::string& path);

}  // namespace volley
