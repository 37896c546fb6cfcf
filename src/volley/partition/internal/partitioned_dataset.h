// volley/partition/internal/partitioned_dataset.h — writing the partitioned dataset directory of
// either kind (formats: partition.h, hetero_partition.h). Reading is public (load_partition and
// friends; the one reader: partitioned_directory.h).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "volley/graph/dataset.h"
#include "volley/graph/hetero_dataset.h"
#include "volley/graph/io/npy.h"
#include "volley/partition/hetero_partition.h"
#include "volley/partition/partition.h"

namespace volley::internal {

// indptr[0] == 0, non-decreasing, indptr[N] == E: O(N), for graphs loaded without validation.
// ValueError naming `source` and the first bad position.
void check_indptr(const Csr& graph, const std::string& source);

// The output directory (partitioned_output.cc), shared by both writers. write_staged checks
// `output` (IoError before anything is written when it exists and is neither empty nor a
// partitioned dataset), raises the soft limit on open files for about 3 files of each of
// `num_parts` parts, calls `write` with a staging directory beside `output`
// ("<output>.partial-PID", trailing slashes of `output` ignored) and renames it onto `output` when
// `write` returns; on an error the staging directory is removed and the error rethrown.
// prepare_output creates the empty staging directory (a crashed run's removed).
void write_staged(const std::string& output, int64_t num_parts,
                  const std::function<void(const std::string& staging)>& write);
void prepare_output(const std::string& staging);

// --- the one part writer of both kinds (partitioned_parts.cc) ---------------------------------
// A homogeneous dataset is the one-type case: one node type and one edge type (index 0).

// Where one part's arrays go: a node array of node type `t` or an edge array of edge type `r`
// (Owner{kind, index}); a part's DatasetWriter (one of each) or HeteroDatasetWriter behind it.
struct Owner {
  bool edge = false;
  int index = 0;
};
class PartArrays {
 public:
  virtual ~PartArrays() = default;
  virtual std::string path_of(Owner owner, std::string_view field) const = 0;
  virtual void add_array(Owner owner, std::string_view field, const Array& array) = 0;
  virtual void add_written(Owner owner, std::string_view field, DType dtype,
                           std::vector<int64_t> shape, uint32_t crc32) = 0;
};
using PartList = std::vector<std::unique_ptr<PartArrays>>;  // [K]

// How one node type is renumbered: its part of each old id, the new ids, the book.
struct TypeRenumbering {
  const int32_t* part_of;              // [N_T]
  const std::vector<int64_t>& new_id;  // [N_T]
  const PartitionBook& book;
};

// One node type's arrays, as the source holds them (Dataset and NodeTypeData alike).
struct NodeArrays {
  const std::optional<Array>& features;  // [N_T, D], possibly mapped
  const std::optional<Array>& labels;    // int64 [N_T]
  const std::optional<Array>& train_idx;
  const std::optional<Array>& val_idx;
  const std::optional<Array>& test_idx;
};

// Edge type r's rows (`csr`: rows are `dst` nodes, indices `src` ids) to the part owning each row,
// in one streaming pass, `chunk_bytes` of edges at a time: indptr, indices renumbered to new
// global source ids (each row sorted by (time, new id, edge id): time only with `with_times` and
// rows sorted by time in the input, see partition.h), edge_ids, weights, and with `with_times` the
// input's edge times. `part_edges[p]`: the edges part p receives.
void write_edge_type(PartList& parts, int r, const Csr& csr, const TypeRenumbering& src,
                     const TypeRenumbering& dst, const std::vector<int64_t>& part_edges,
                     bool with_times, int64_t chunk_bytes);

// Node type t's features (streamed, `chunk_bytes` at a time), labels (by local row) and splits
// (sorted local rows), each to the part owning the node.
void write_node_type(PartList& parts, int t, const NodeArrays& arrays, const TypeRenumbering& type,
                     int64_t chunk_bytes);

// An int64 [N] file at the root (a node map, node_time.npy); returns its CRC-32.
uint32_t write_root_array(const std::string& output, const std::string& file,
                          const std::vector<int64_t>& values);

// Writes part p's part.json (`part_json`) into `part_dir` (after its volley.json) and returns its
// partition.json entry: {"directory", the items of `counts`, the CRCs of both manifests}.
nlohmann::ordered_json finish_part_entry(const std::string& part_dir, int64_t p,
                                         const nlohmann::ordered_json& part_json,
                                         const nlohmann::ordered_json& counts);

// --- the one directory writer of both kinds (partitioned_writer.cc) ---------------------------

// What a write holds once the nodes are renumbered: each node type's new ids and node map CRC,
// and the parts' writers.
struct TypedWrite {
  std::vector<std::vector<int64_t>> new_id;  // [type][old id]
  std::vector<uint32_t> node_map_crcs;       // [type]
  PartList parts;                            // [K]
};

// One kind's side of a write: its parts' writers (a DatasetWriter or HeteroDatasetWriter each) and
// its manifests (a homogeneous one adds node times and caches).
class KindWriter {
 public:
  virtual ~KindWriter() = default;
  // Part p's writer into `directory`, its dataset named `name`.
  virtual std::unique_ptr<PartArrays> open_part(std::string directory, std::string name,
                                                int64_t p) const = 0;
  // Finishes part p (its dataset manifest, part.json); returns its partition.json entry.
  virtual nlohmann::ordered_json finish_part(TypedWrite& write, int64_t p) const = 0;
  // partition.json (`output`: the staging directory, for root files of the kind).
  virtual nlohmann::ordered_json manifest(const TypedWrite& write, const std::string& output,
                                          nlohmann::ordered_json parts, double seconds) const = 0;
};

// The source of a write: per node type its name ("" for the homogeneous one), arrays, assignment
// (int32 [N_T]) and book; per edge type its CSR with source and destination type; the edges each
// part receives ([K][edge type]); whether parts carry the input's edge times.
struct WriteSource {
  std::string name;  // the dataset's
  std::vector<std::string> node_types;
  std::vector<NodeArrays> arrays;
  const std::vector<Array>& assignment;
  const std::vector<PartitionBook>& books;
  std::vector<std::pair<int, int>> edge_ends;  // [edge type]: (src, dst) node type
  std::vector<const Csr*> edges;               // [edge type]
  const std::vector<std::vector<int64_t>>& part_edges;
  bool with_times = false;
};

// Writes `output` (formats: partition.h, hetero_partition.h) in a staging directory renamed onto
// it (write_staged): the node maps, every edge type's rows and node type's arrays streamed to the
// K parts (write_edge_type, write_node_type), each part finished and partition.json last by `kind`.
// `elapsed` gives the seconds spent so far, for the manifest.
void write_typed_partitioned_dataset(const WriteSource& source, const KindWriter& kind,
                                     const PartitionOptions& options, const std::string& output,
                                     const std::function<double()>& elapsed);

// The homogeneous kind: `assignment` (int32 [N]), `cached[p]` the old ids of partition p's cached
// remote nodes, hottest first (may be empty); `result` holds the book, loads and quality.
void write_partitioned_dataset(const Dataset& dataset, const Array& assignment,
                               const std::vector<std::vector<int64_t>>& cached,
                               const PartitionOptions& options, const PartitionResult& result,
                               const std::string& output, const std::function<double()>& elapsed);

// The heterogeneous kind: `assignment` (int32 [N_T] per node type); `result` holds the books, loads
// and quality.
void write_hetero_partitioned_dataset(const HeteroDataset& dataset,
                                      const std::vector<Array>& assignment,
                                      const PartitionOptions& options,
                                      const HeteroPartitionResult& result,
                                      const std::string& output,
                                      const std::function<double()>& elapsed);

}  // namespace volley::internal
