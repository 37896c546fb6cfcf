// volley/partition/hetero_partition.h — cutting a heterogeneous dataset (hetero_dataset.h) into K
// partitions, and reading its partitioned directory.
//
// Methods: partition.h, one code path for both kinds (options as there, balance_tolerance and seed
// used): each node type balanced on its own, its nodes and (random, stream) its training nodes;
// in-edges balance by chance only. kHotness and simulate_epoch are homogeneous only (ValueError).
// Each node type needs at least K nodes.
//
// Renumbering is PER TYPE: within node type T, partition p owns new ids
// [offsets_T[p], offsets_T[p + 1]) (a PartitionBook per type), nodes keeping their relative old
// order; "T.node_map.npy" maps old → new ids of T.
//
// Partitioned directory (format version 2; version 1 is the homogeneous one of partition.h):
//   partition.json  {"format": "volley-partitioned-dataset", "version": 2, "heterogeneous": true,
//                    "name", "method", "num_parts",
//                    "node_types": [{"name", "num_nodes", "num_classes", "feature_dim",
//                                    "offsets": [K + 1], "node_map": {file, dtype, shape, crc32},
//                                    "balance"}, ...],
//                    "edge_types": [{"src", "relation", "dst", "num_edges", "cut_edges"}, ...],
//                    "parts": [{"directory": "part-0", "num_nodes": {T: n}, "num_edges": {S__R__D:
//                               e}, "volley_json_crc32", "part_json_crc32"}, ...],
//                    "quality": {"cut_edges", "edge_cut_fraction", "node_balance": {T: b},
//                                "edge_balance"}, "options": {...}, "seconds": {...}}
//   T.node_map.npy  int64 [N_T]: new id of each old id of type T
//   T.node_time.npy, S__R__D.edge_time.npy  (optional, added after partitioning, e.g. by
//                   Python's volley.partition.write_times; not in partition.json) int64
//                   [N_T] the node time of every NEW id of T / int64 [E] the time of every edge
//                   of S__R__D by edge id: temporal sampling over the service reads the whole
//                   arrays in every part (a neighbor owned elsewhere is admitted by its time)
//   part-P/         a heterogeneous dataset directory (version 2) of the owned nodes: node type T
//                   has offsets_T[P + 1] - offsets_T[P] rows (row r = new id offsets_T[P] + r);
//                   edge type S__R__D's rows are the owned D nodes, its indices SOURCE ids in the
//                   NEW GLOBAL numbering of S (so they may exceed the part's S count: read parts
//                   with load_hetero_partition, not load_hetero_dataset's graph validation),
//                   neighbors sorted by (new id, edge id); edge_ids the input's edge ids (CSR
//                   positions when it had none); weights, features, labels follow; train/val/
//                   test_idx are LOCAL row numbers. Plus part.json ({"format": "volley-partition",
//                   "version": 2, "part", "num_parts", "node_types": [{"name", "first_node",
//                   "num_nodes", "num_nodes_total"}]}).
// Written and read by the one writer and reader of both kinds (partition.h): each edge type's rows
// and each node type's features streamed to the parts in chunks (never held), into a staging
// directory renamed onto `output` at the end; parts carry no edge times.
//
//   PartitionOptions options{.method = PartitionMethod::kMetis, .num_parts = 4};
//   HeteroPartitionResult result = partition_hetero_dataset("data/mag", "data/mag-4", options);
//   HeteroPartition part = load_hetero_partition("data/mag-4", 2);
//   part.book("author").owner_of(id);   part.data.graph.edges({"author", "writes", "paper"});
//   Array authors = load_node_map("data/mag-4", "author");   // partition.h, either kind
//
// Errors: ValueError for bad options (naming the option and value, e.g. "num_parts = 30 exceeds
// the 24 nodes of node type 'institution'"); IoError for unreadable / unwritable files and for a
// corrupt or mismatched partitioned directory ("FILE: FIELD: expected X, found Y"). Reentrant;
// results are immutable.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "volley/core/array.h"
#include "volley/graph/hetero_dataset.h"
#include "volley/partition/partition.h"

namespace volley {

// Quality of a heterogeneous assignment. Balance: max part load / mean part load (1 = perfect).
struct HeteroPartitionQuality {
  int64_t cut_edges = 0;  // edges (all edge types) whose endpoints lie in different partitions
  double edge_cut_fraction = 0.0;
  std::vector<int64_t> cut_edges_per_type;  // per edge type
  std::vector<double> node_balance;         // per node type
  double edge_balance = 1.0;                // in-edges (all types) stored by each partition
};

struct HeteroPartitionResult {
  std::vector<PartitionBook> books;              // per node type
  std::vector<std::vector<int64_t>> part_edges;  // [K][edge type]
  HeteroPartitionQuality quality;
  double seconds = 0.0;         // the whole call
  double assign_seconds = 0.0;  // the assignment (METIS included)
};

// The partition of each node, per node type (int32 [N_T], values in [0, K)); nothing written.
std::vector<Array> assign_hetero_partitions(const HeteroDataset& dataset,
                                            const PartitionOptions& options);

// Quality figures of `assignment` (one int32 [N_T] per node type).
HeteroPartitionQuality hetero_partition_quality(const HeteroDataset& dataset,
                                                const std::vector<Array>& assignment,
                                                int64_t num_parts);

// Partitions `dataset` and writes the partitioned directory `output` (format above).
HeteroPartitionResult partition_hetero_dataset(const HeteroDataset& dataset,
                                               const std::string& output,
                                               const PartitionOptions& options);
// Same, reading the heterogeneous dataset directory `input` memory-mapped.
HeteroPartitionResult partition_hetero_dataset(const std::string& input, const std::string& output,
                                               const PartitionOptions& options);

// --- reading --------------------------------------------------------------------------------

// Whether `path` holds a heterogeneous partitioned directory (partition.json of version 2).
bool is_hetero_partitioned_directory(const std::string& path);

// partition.json of a heterogeneous partitioned directory, parsed and checked.
struct HeteroPartitionManifest {
  std::string directory;
  std::string name;
  PartitionMethod method = PartitionMethod::kRandom;
  int64_t num_parts = 0;
  std::vector<NodeTypeInfo> node_types;  // total counts
  std::vector<EdgeType> edge_types;
  std::vector<int64_t> num_edges;    // per edge type
  std::vector<PartitionBook> books;  // per node type
  HeteroPartitionQuality quality;
  std::string json;  // the whole manifest text, for tools

  // The book of node type `type` (ValueError listing the types when unknown).
  const PartitionBook& book(std::string_view type) const;
};
HeteroPartitionManifest read_hetero_partition_manifest(const std::string& directory);

// One partition of a heterogeneous partitioned directory.
struct HeteroPartition {
  int64_t part = 0;
  HeteroPartitionManifest manifest;
  // Node type T's rows are the owned nodes (row r = new id book(T).begin(part) + r); every edge
  // type's indices are new global source ids; features / labels rows and splits are local.
  HeteroDataset data;

  const PartitionBook& book(std::string_view type) const { return manifest.book(type); }
  int64_t first_node(std::string_view type) const { return book(type).begin(part); }
};

// Loads partition `part` (IndexError for a bad part). IoError when the part's files do not match
// partition.json ("part-1/volley.json: crc32: expected ... (as partition.json says), found ..."),
// or are corrupt; with options.validate_graph, IndexError for a source id >= the source type's
// total or an edge id >= the edge type's total.
HeteroPartition load_hetero_partition(const std::string& directory, int64_t part,
                                      const PartitionLoadOptions& options = {});

// Node maps: load_node_map(directory, node_type) (partition.h), one loader for both kinds.

// The optional time files of a partitioned directory (format above), memory-mapped.
struct HeteroPartitionTimes {
  std::vector<std::optional<Array>> node_time;  // per node type: int64 [N_T] by new id, or none
  std::vector<std::optional<Array>> edge_time;  // per edge type: int64 [E] by edge id, or none
};
// Reads those present in `manifest.directory`; ValueError naming the type and the file for one
// that is not 1-d int64 of the type's length, IoError for an unreadable one.
HeteroPartitionTimes load_hetero_partition_times(const HeteroPartitionManifest& manifest);

// Verification: verify_partitioned_dataset (partition.h) checks either kind.

}  // namespace volley
