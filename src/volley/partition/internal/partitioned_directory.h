// volley/partition/internal/partitioned_directory.h — the one reader of a partitioned directory of
// either kind: partition.json read into one typed model (node types with their partition books
// and node maps, edge types with their totals, parts with the CRCs of their manifests), and what
// every loader does with a part (its manifests against those CRCs and against partition.json, its
// graph against the totals). Formats: partition.h (version 1) and hetero_partition.h (version 2).
//
// Version 1 is the one-type case: one node type named "" whose fields (num_nodes, offsets,
// node_map; in part.json first_node, num_nodes, num_nodes_total) sit at the top level of the
// manifests instead of in node_types[t], and one edge type ("" -> "") whose num_edges does too.
// The kind's own fields (version 1: quality, cache, node_time, ...) are read by the kind's loader
// from `PartitionedDirectory::json`.
//
// Errors: IoError "FILE: FIELD: expected X, found Y" for a missing, corrupt or mismatched file;
// IndexError for a part or an id out of range; ValueError for an unknown node type.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "volley/core/array.h"
#include "volley/graph/csr.h"
#include "volley/graph/hetero_graph.h"
#include "volley/graph/json_checker.h"
#include "volley/partition/partition.h"

namespace volley::internal {

// A manifest's entry for one .npy file.
struct ArrayRef {
  std::string file;
  DType dtype = DType::kInt64;
  std::vector<int64_t> shape;
  uint32_t crc32 = 0;
};
// {file, dtype, shape, crc32} at `json` (`where`: the dotted prefix of its fields in messages).
ArrayRef read_array_ref(const JsonChecker& check, const nlohmann::ordered_json& json,
                        const std::string& where);
// `directory`/ref.file checked against `ref` (dtype, shape; the CRC with `verify_checksum`).
Array open_checked(const std::string& directory, const ArrayRef& ref, const char* manifest,
                   bool memory_map, bool verify_checksum);

struct PartitionedNodeType {
  NodeTypeInfo info;  // name ("" in version 1) and total count
  PartitionBook book;
  ArrayRef node_map;  // int64 [num_nodes], old id -> new id
};

struct PartitionedPart {
  std::string directory;           // "part-P"
  std::vector<int64_t> num_edges;  // stored in-edges per edge type
  uint32_t volley_json_crc32 = 0;
  uint32_t part_json_crc32 = 0;
};

struct PartitionedDirectory {
  std::string directory;
  std::string text;             // partition.json as read
  nlohmann::ordered_json json;  // partition.json parsed
  int64_t version = 0;
  std::string name;
  PartitionMethod method = PartitionMethod::kRandom;
  int64_t num_parts = 0;
  std::vector<PartitionedNodeType> node_types;
  std::vector<EdgeType> edge_types;
  std::vector<int64_t> num_edges;  // per edge type
  std::vector<PartitionedPart> parts;

  // Node type t's object in a manifest of this layout (`manifest`: partition.json or part.json)
  // and the prefix of its fields in messages: the top level ("") in version 1, node_types[t].
  const nlohmann::ordered_json& node_type_json(const nlohmann::ordered_json& manifest,
                                               size_t t) const;
  std::string node_type_where(size_t t) const;
  // The index of node type `name`; "" names the only one. ValueError listing the types otherwise.
  size_t node_type_index(std::string_view name) const;
};

// partition.json of `directory` (version 1 or 2), checked field by field.
PartitionedDirectory read_partitioned_directory(const std::string& directory);
// IoError naming the loader of the other kind unless `model` is of `version`.
void require_version(const PartitionedDirectory& model, int64_t version);

// Part `part` of `model` (IndexError when out of range), after its volley.json and part.json
// matched the CRCs partition.json records and part.json's fields matched partition.json's.
struct OpenedPart {
  std::string directory;
  nlohmann::ordered_json json;  // part.json
};
OpenedPart open_part(const PartitionedDirectory& model, int64_t part);

// A loaded part's graph against `model`: `node_counts` (rows per node type) against the books,
// `edges` (one CSR per edge type, with its type) against the edge types and the part's edge
// counts (IoError); with `validate`, each CSR's indptr, source ids below the source type's total
// and edge ids below the edge type's total (IndexError naming the first bad position).
void check_part_graph(const PartitionedDirectory& model, int64_t part, const std::string& part_dir,
                      const std::vector<NodeTypeInfo>& node_counts,
                      const std::vector<std::pair<EdgeType, const Csr*>>& edges, bool validate);

// Node type t's node map, checked against partition.json (the CRC with `verify_checksums`).
Array load_node_map(const PartitionedDirectory& model, size_t t, bool verify_checksums);

}  // namespace volley::internal
