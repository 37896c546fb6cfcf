// volley/partition/partition.h — cutting a graph into K partitions, and partitioned datasets.
// (Heterogeneous datasets: hetero_partition.h, a version-2 partitioned directory.) One writer and
// one reader serve both kinds: a homogeneous directory is the one-type case of a typed one (one
// node type with its book and node map, one edge type), so the node-map loader, the manifest and
// part checks and verify_partitioned_dataset below take a directory of either kind.
//
// One entry point per kind (partition_dataset; partition_hetero_dataset, hetero_partition.h), four
// methods (PartitionOptions::method). Random, METIS and stream are one code path for both kinds: a
// homogeneous dataset is the one-type case of a typed graph, whose node types are placed in their
// order, each balanced on its own; a homogeneous one's in-edges are balanced too (a typed one's by
// chance only):
//   kRandom   balanced random: per node type, nodes in a seeded random order, each to the
//             partition whose relative load (nodes, in-edges, training nodes) is lowest;
//   kMetis    k-way METIS (libmetis) on the symmetrised graph (no self loops, no duplicates; node
//             types merged: global id = type offset + id, every edge type's edges), one balance
//             constraint per node type (one-hot vertex weights), and for a homogeneous graph two
//             more per node: its in-degree, whether it trains;
//   kHotness  (homogeneous only) GLT's frequency partitioner done right: start from METIS,
//             simulate one epoch of each partition's training seeds with the neighbor sampler
//             (same fanouts, batch size and Philox seeds as training), count how often each
//             partition reads each node, then move every non-training node to the partition that
//             reads it most, hottest first, when that partition has room under the same balance
//             caps. Training nodes (the seeds) stay, so the simulated reads stay exact and every
//             move lowers the epoch's remote reads (a moved seed would change the very reads
//             being counted). Each partition caches the rows of the remote nodes it reads most,
//             within `cache_bytes`;
//   kStream   Fennel (Tsourakakis et al., WSDM'14), one pass over the node types in order and each
//             type's rows in id order, reading the CSR arrays in chunks (mapped pages are dropped
//             after each chunk): O(N + K) state, never the whole graph in memory. Each node goes
//             where most of its already placed in-neighbors are (of any type, over every edge type
//             ending at its type: a typed graph needs reverse edge types to see the neighbors of a
//             type placed before it), minus Fennel's size penalty (size measured by the
//             partition's heaviest constraint), among partitions with room; for a homogeneous
//             graph first among those whose constraints stay within `tolerance` of each other (so
//             the last nodes still fit somewhere).
// Balance: each partition's load of each constraint is capped at max((1 + tolerance) * mean,
// ceil(mean)); random, hotness and stream enforce it (hard caps), METIS treats it as its
// `ubvec` (it usually holds; the figures say when it did not).
//
// Renumbering: partition p owns new ids [offsets[p], offsets[p + 1]) (a PartitionBook); inside
// a partition, nodes keep their relative old order. old → new is stored once (node_map.npy).
//
// Partitioned dataset directory (written by partition_dataset):
//   partition.json   {"format": "volley-partitioned-dataset", "version": 1, "name", "method",
//                     "num_parts", "num_nodes", "num_edges", "num_classes", "feature_dim",
//                     "offsets": [K + 1], "node_map": {file, dtype, shape, crc32},
//                     "parts": [{"directory": "part-0", "num_nodes", "num_edges", "num_train",
//                                "num_cached", "volley_json_crc32", "part_json_crc32"}, ...],
//                     "quality": {...PartitionQuality...}, "options": {...}, "seconds"}
//   node_map.npy     int64 [N]: new id of each old id
//   node_time.npy    int64 [N] (when the input has node times): the time of each NEW id, and
//                    "node_time": {file, dtype, shape, crc32} in partition.json (every part's
//                    sampler needs its neighbors' times, which may be owned elsewhere)
//   Rows of a part are in new-id order, each row's neighbors sorted by (new id, edge id); when the
//   input's rows were sorted by time (edge time, else the neighbor's node time;
//   sort_rows_by_time) by (time, new id, edge id), so they stay sorted and temporal_strategy
//   "last" works on the parts.
//   part-P/          a dataset directory (dataset.h) of the n_P owned nodes: row r is new id
//                    offsets[P] + r; `indices` are neighbor ids in the NEW GLOBAL numbering (so
//                    they may exceed n_P: load it with load_partition, not load_dataset's graph
//                    validation); `edge_ids` the input edge ids (CSR positions when the input had
//                    none); weights, features, labels follow their edges and nodes; train/val/
//                    test_idx are LOCAL row numbers (add offsets[P] for new global ids);
//                    edge_time.npy (when the input has edge times) follows its edges. Plus
//                    part.json ({"format": "volley-partition", "part", "num_parts", "first_node",
//                    "num_nodes", "num_nodes_total", "num_edges_total", "cache": {...}}) and,
//                    with a cache, cache_ids.npy (int64 new global ids of remote nodes, hottest
//                    first) and cache_features.npy ([C, D], their feature rows).
// Every file is written in one streaming pass over the source (per-partition writers), so
// partitioning never holds the features, and the stream method never holds the graph.
//
//   PartitionOptions options{.method = PartitionMethod::kMetis, .num_parts = 4};
//   PartitionResult result = partition_dataset("/data/products", "/data/products-4", options);
//   fmt::print("{:.3f} of edges cut\n", result.quality.edge_cut_fraction);
//   Partition part = load_partition("/data/products-4", 2);
//   part.book.owner_of(id);  part.data.graph.neighbor(k);  part.data.features->data<float>();
//
// Thread safety: the functions are reentrant; a PartitionBook / Partition is immutable.
// Errors: ValueError for bad options (naming the option and value) or a dataset that cannot be
// partitioned; IoError for unreadable/unwritable files and for a corrupt or mismatched
// partitioned directory, naming the file, the field, what was expected and what was found.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "volley/core/array.h"
#include "volley/graph/dataset.h"
#include "volley/partition/partition_book.h"

namespace volley {

enum class PartitionMethod { kRandom, kMetis, kHotness, kStream };

std::string_view partition_method_name(PartitionMethod method);
// "random", "metis", "hotness" or "stream"; ValueError otherwise.
PartitionMethod partition_method_from_name(std::string_view name);

struct PartitionOptions {
  PartitionMethod method = PartitionMethod::kMetis;
  int64_t num_parts = 2;  // >= 1
  // Allowed imbalance per constraint (nodes, in-edges, training nodes): > 0 and <= 10.
  double balance_tolerance = 0.05;
  uint64_t seed = 0;
  // The simulated epoch (hotness; and remote-access figures of any method when
  // `simulate_epoch`): neighbor-sampler fanouts and batch size.
  std::vector<int64_t> fanouts = {15, 10, 5};
  int64_t batch_size = 1024;
  // Per-partition byte budget for cached rows of hot remote features (hotness only; 0 = none).
  int64_t cache_bytes = 0;
  // Also simulate an epoch for random / metis / stream to report remote-access shares (hotness
  // always does, and also reports them for METIS and random assignments).
  bool simulate_epoch = false;
  // Rows of the source read per chunk are limited to about this many bytes (stream reading,
  // writing partitions): bounds the memory of both.
  int64_t chunk_bytes = int64_t{64} << 20;
};

// Throws ValueError naming the first bad option.
void validate_partition_options(const PartitionOptions& options);

// Whether this build has METIS (needed by the metis and hotness methods, which otherwise throw
// RuntimeError).
bool metis_available();

// Quality of an assignment. Balance figures are max part load / mean part load (1 = perfect).
struct PartitionQuality {
  int64_t cut_edges = 0;  // input edges whose endpoints lie in different partitions
  double edge_cut_fraction = 0.0;
  double node_balance = 1.0;
  double edge_balance = 1.0;   // in-edges stored by each partition
  double train_balance = 1.0;  // training nodes (1 when there are none)
  // Share of feature reads (a node in a sampled batch of a partition's training seeds) that hit
  // a node owned by another partition, over one simulated epoch; with the cache counted as
  // local. Absent when no epoch was simulated.
  std::optional<double> remote_access_fraction;
  std::optional<double> remote_access_fraction_cached;
  // hotness only: the same figure for its starting METIS assignment and for a random one.
  std::optional<double> metis_remote_access_fraction;
  std::optional<double> random_remote_access_fraction;
};

struct PartitionResult {
  PartitionBook book;
  std::vector<int64_t> part_nodes;  // per partition
  std::vector<int64_t> part_edges;
  std::vector<int64_t> part_train;
  std::vector<int64_t> part_cached;  // cached remote rows
  PartitionQuality quality;
  double seconds = 0.0;         // wall time of the whole call
  double assign_seconds = 0.0;  // of the assignment (METIS, streaming pass, simulation)
};

// The partition of each node (int32 [N], values in [0, num_parts)) by `options.method`, with
// nothing written. For kHotness this is the moved assignment (no cache). The dataset's arrays
// may be memory-mapped; kStream reads them in chunks.
Array assign_partitions(const Dataset& dataset, const PartitionOptions& options);

// Quality figures of `assignment` (int32 [N]) for `dataset` (no epoch simulated).
PartitionQuality partition_quality(const Dataset& dataset, const Array& assignment,
                                   int64_t num_parts);

// Partitions the dataset and writes a partitioned dataset directory at `output` (created; an
// old partition.json there is removed first and written last). Progress bars for long phases.
PartitionResult partition_dataset(const Dataset& dataset, const std::string& output,
                                  const PartitionOptions& options);
// Same, reading the dataset directory `input` memory-mapped.
PartitionResult partition_dataset(const std::string& input, const std::string& output,
                                  const PartitionOptions& options);

// --- reading --------------------------------------------------------------------------------

// partition.json, parsed and checked (IoError naming the field otherwise).
struct PartitionManifest {
  std::string directory;
  std::string name;
  PartitionMethod method = PartitionMethod::kRandom;
  PartitionBook book;
  int64_t num_nodes = 0;
  int64_t num_edges = 0;
  int64_t num_classes = 0;
  int64_t feature_dim = 0;
  std::vector<int64_t> part_edges;
  std::vector<int64_t> part_train;
  std::vector<int64_t> part_cached;
  PartitionQuality quality;
  std::string json;  // the whole manifest text, for tools
};

// Whether `path` is a partitioned dataset directory of either kind (has a partition.json).
bool is_partitioned_directory(const std::string& path);
// partition.json of a homogeneous (version 1) directory. Both kinds' manifests are read by one
// reader: the homogeneous layout is the one-type case of the heterogeneous one (one node type with
// its book and node map, one edge type); IoError naming load_hetero_partition for a version-2 one.
PartitionManifest read_partition_manifest(const std::string& directory);
// partition.json of a directory of either kind as text, checked as the kind's reader checks it
// (read_partition_manifest, read_hetero_partition_manifest): for tools.
std::string read_partition_manifest_text(const std::string& directory);

// One partition, loaded without the rest of the graph.
struct Partition {
  int64_t part = 0;
  PartitionBook book;
  // Rows are the owned nodes (row r = new id book.begin(part) + r); graph.neighbor(k) is a new
  // global id; features / labels rows are local; train/val/test_idx hold local rows.
  Dataset data;
  std::optional<Array> cache_ids;       // int64 [C] new global ids of cached remote nodes
  std::optional<Array> cache_features;  // [C, D]
  // Node times (the root's node_time.npy): int64 [N] by NEW GLOBAL id, for every node (a
  // neighbor's time decides admissibility); whether this part's rows are sorted by them.
  std::optional<Array> node_time;
  bool node_time_rows_sorted = false;
  int64_t first_node() const { return book.begin(part); }
};

struct PartitionLoadOptions {
  bool memory_map = true;
  // Check every array's CRC-32 (reads every byte once). Manifests are always checked.
  bool verify_checksums = false;
  // Check indptr, neighbor ids (in [0, N)) and edge ids (in [0, E)): O(edges of the part).
  bool validate_graph = true;
};

// Loads partition `part` of the partitioned dataset at `directory`. IndexError for a bad part;
// IoError when the part's files do not match partition.json (e.g. a part directory from
// another run: "part-1/volley.json: crc32: expected 1a2b3c4d (as partition.json says), found
// ..."), or are corrupt.
Partition load_partition(const std::string& directory, int64_t part,
                         const PartitionLoadOptions& options = {});

// The node map of `node_type` in a partitioned directory of either kind (int64 [N_T], old id →
// new id: node_map.npy, or "T.node_map.npy" in a heterogeneous one), checked against
// partition.json (shape, and CRC with `verify_checksums`). "" names the only node type (the one
// of a homogeneous directory); ValueError listing the node types for an unknown one.
Array load_node_map(const std::string& directory, std::string_view node_type = "",
                    bool verify_checksums = false);
// The inverse permutation (new id → old id); ValueError if `node_map` is not a permutation.
Array invert_node_map(const Array& node_map);

// Checks every file of a partitioned directory of either kind (partition.json, every node map,
// every part with checksums and graph validation, and a heterogeneous one's time files); one line
// per problem, empty when intact.
std::vector<std::string> verify_partitioned_dataset(const std::string& directory);

}  // namespace volley
