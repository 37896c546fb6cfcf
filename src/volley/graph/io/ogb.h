// volley/graph/io/ogb.h — OGB node-property-prediction datasets, from the layout OGB keeps on
// disk, into a dataset directory (volley/graph/dataset.h).
//
// The input directory is what the `ogb` package (or PyG's OGB loaders) downloads and unpacks,
// e.g. `dataset/ogbn_products/`:
//   raw/num-node-list.csv.gz   one line: the number of nodes N                   (required)
//   raw/edge.csv.gz            one edge "src,dst" per line, ids in [0, N)        (required)
//   raw/node-feat.csv.gz       N lines of D comma-separated floats               (optional)
//   raw/node-label.csv.gz      N lines of one class id each; "nan": unlabelled   (optional)
//   split/<name>/train.csv.gz, valid.csv.gz, test.csv.gz: one node id per line  (optional)
// Other files (edge-feat, node_year, mapping/, processed/) are not read. Heterogeneous datasets
// (raw/relations/, ogbn-mag) and multi-label ones (ogbn-proteins: several label columns) are a
// ValueError saying so.
//
//   OgbConversion done = convert_ogb_node_dataset("dataset/ogbn_arxiv", "arxiv",
//                                                 {.undirected = true});
//
// Streaming: every file is decompressed through a bounded buffer; features go straight into
// features.npy row block by row block; the graph is built in two passes over edge.csv.gz
// (count degrees, then place neighbors into a scratch file in the output directory, mapped
// into memory and unlinked at once), so resident memory is O(N) plus the page cache however
// many edges there are (ogbn-products: 62 M edges, 24 bytes of heap a node). Each row's
// neighbors come out sorted, as build_csr sorts them. A progress bar counts compressed bytes.
//
// Errors: IoError for a missing required file or an unreadable / corrupt one, ValueError or
// IndexError for malformed content — each naming the file and 1-based line, e.g.
//   "ogbn_arxiv/raw/edge.csv.gz:17: node id 169343 out of range for 169343 nodes".
// Not thread-safe with respect to the output directory (one conversion per directory).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "volley/core/dtype.h"

namespace volley {

struct OgbConvertOptions {
  // Folder under split/ to store as train/val/test; empty: the only one there (none: no split;
  // several: a ValueError listing them).
  std::string split;
  // Store every edge both ways and keep one edge per (row, neighbor) — what PyG's to_undirected
  // gives; OGB's products and proteins are stored one way and meant to be read undirected.
  bool undirected = false;
  bool drop_self_loops = false;
  // Element type of the stored features: float32 (default), float16, or uint8 (every value must
  // then be an integer in [0, 255]; anything else is a ValueError naming the node and column).
  DType feature_dtype = DType::kFloat32;
  // Dataset name in volley.json; empty: the input directory's name.
  std::string name;
};

// What was written.
struct OgbConversion {
  std::string name;
  int64_t num_nodes = 0;
  int64_t num_edges = 0;    // edges stored (after symmetrizing / dropping)
  int64_t feature_dim = 0;  // 0 without node-feat.csv.gz
  int64_t num_classes = 0;  // 0 without node-label.csv.gz
  std::string split;        // the split/ folder read, or empty
  int64_t num_train = 0, num_val = 0, num_test = 0;
};

// Whether `directory` looks like an OGB node-property dataset (has raw/edge.csv.gz).
bool is_ogb_directory(const std::string& directory);

// Converts the OGB dataset in `input` into the dataset directory `output` (created if missing;
// see DatasetWriter for what happens to an existing one). Throws as described above.
OgbConversion convert_ogb_node_dataset(const std::string& input, const std::string& output,
                                       const OgbConvertOptions& options = {});

}  // namespace volley
