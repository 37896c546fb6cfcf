// volley/graph/internal/dataset_format.h — the one core of the dataset directory format, behind
// both fronts (dataset.h: version 1, homogeneous; hetero_dataset.h: version 2, heterogeneous;
// the format and the errors are specified there). Defined in dataset_format.cc.
//
// A manifest is a list of owners — node types with their node arrays, edge types with their edge
// arrays — and the list of array entries, each naming its owner. Version 1 is the case of one
// edge owner and one node owner, both unnamed: files carry no "<type>." prefix and the entries
// sit in one flat "arrays" object. Version 2 nests each owner's entries under "node_types" /
// "edge_types". One reader, one array opener (shape against the counts, the .npy against its
// entry, then the values), one verify and one manifest writer serve both.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "volley/core/array.h"
#include "volley/graph/dataset.h"
#include "volley/graph/hetero_graph.h"
#include "volley/graph/io/npy.h"
#include "volley/graph/json_checker.h"

namespace volley::graph_internal {

enum class OwnerKind { kNode, kEdge };

// A node type (its node arrays) or an edge type (its Csr's arrays).
struct Owner {
  OwnerKind kind = OwnerKind::kNode;
  std::string name;         // the node or edge type's name; "" in version 1
  EdgeType edge_type;       // an edge owner's, in version 2
  int64_t rows = 0;         // a node owner's nodes; an edge owner's Csr rows (dst nodes)
  int64_t num_edges = 0;    // an edge owner's edges (in version 1 both owners carry it)
  int64_t num_classes = 0;  // a node owner's label classes
};

struct ArrayEntry {
  size_t owner = 0;  // index into Manifest::owners
  std::string field;
  std::string file;
  NpyExpectation expected;
};

struct Manifest {
  std::string path;  // of volley.json, for messages
  int64_t version = 1;
  std::string name;
  Orientation orientation = Orientation::kIn;  // version 1 (version 2's Csrs are in-neighbor)
  // Version 1: {the graph (edge owner), its nodes (node owner)}; version 2: the node types, then
  // the edge types, in the graph's order.
  std::vector<Owner> owners;
  std::vector<ArrayEntry> arrays;  // in the format's order (the order problems are found in)
};

// `directory`/volley.json.
std::string manifest_path(const std::string& directory);
// The manifest at check.path(), parsed (IoError for a missing or unreadable file, naming
// `directory`; the checker's error for bad JSON).
JsonChecker::Json read_manifest_json(const std::string& directory, const JsonChecker& check);
// Reads and checks `directory`'s manifest, which must be of format `version` (IoError "PATH:
// FIELD: expected X, found Y" otherwise, pointing at the other reader for the other version).
Manifest read_manifest(const std::string& directory, int64_t version);

// "node type paper: " or "edge type author__writes__paper: "; "" for version 1's owners.
std::string owner_label(const Owner& owner);
// "<field>.npy" for an unnamed owner, else "<owner>.<field>.npy". `field` must be an array of an
// owner of `kind` in `version` (version 1: of its flat list, any kind), else ValueError "WHO:
// unknown [node |edge ]array 'F' (expected one of ...)".
std::string array_file(int64_t version, OwnerKind kind, std::string_view owner,
                       std::string_view field, std::string_view who);

// "" when an array of `dtype` and `shape` suits `field` for an owner of `rows` rows (nodes) and
// `num_edges` edges; otherwise "FIELD-PART: expected X, found Y".
std::string shape_problem(std::string_view field, DType dtype, const std::vector<int64_t>& shape,
                          int64_t rows, int64_t num_edges);
// Label values in [-1, num_classes) (-1: unlabelled), split ids (`*_idx`) and link-split
// endpoints (`*_edges`) in [0, rows): "" or the first bad value, such as "train_idx[3] = 5000 out
// of range for 2708 nodes". Other fields: "".
std::string value_problem(std::string_view field, const Array& array, int64_t rows,
                          int64_t num_classes);
// shape_problem, then (for host arrays) value_problem: what save_* check before writing.
std::string array_problem(std::string_view field, const Array& array, int64_t rows,
                          int64_t num_edges, int64_t num_classes);

// Each owner's arrays by field, opened as DatasetLoadOptions say (the edge owners' arrays read
// into read-only heap memory when they fit the resident budget) and checked.
using OwnerArrays = std::map<std::string, Array, std::less<>>;
std::vector<OwnerArrays> open_arrays(const std::string& directory, const Manifest& manifest,
                                     const DatasetLoadOptions& options);
std::optional<Array> take(const OwnerArrays& arrays, std::string_view field);

// Every array of a `version` manifest checked (checksums included), all problems listed; when
// the files are sound, `load_graph` (the front's load with graph validation) too.
DatasetCheck verify_directory(const std::string& directory, int64_t version,
                              const std::function<void()>& load_graph);

// --- writing (DatasetWriter, HeteroDatasetWriter) ---

// Creates `directory` and removes its old manifest (IoError when it cannot).
void prepare_directory(const std::string& directory);
// Writes `array` (host memory) to `path` as .npy and records it in `written` (ValueError for an
// undefined or device array, or an (owner, field) added twice).
void write_array(const std::string& path, const Array& array, std::string_view owner,
                 std::string_view field, std::vector<WrittenArray>& written, std::string_view who);
void add_written(WrittenArray array, std::vector<WrittenArray>& written, std::string_view who);
// Fills `manifest.arrays` from `written` (owners and counts given), removes the owners' array
// files that were not written (left from an earlier dataset), checks each shape against the
// counts and that every edge owner has indptr and indices (ValueError "WHO('DIR'): ..."), and
// writes volley.json atomically.
void write_manifest(const std::string& directory, Manifest manifest,
                    const std::vector<WrittenArray>& written, std::string_view who);

}  // namespace volley::graph_internal
