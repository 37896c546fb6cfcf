// Reading and checking heterogeneous dataset directories (format version 2).
#include "volley/graph/hetero_dataset.h"

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <unistd.h>

#include "volley/core/files.h"
#include "volley/graph/internal/hetero_manifest.h"
#include "volley/graph/internal/value_checks.h"
#include "volley/graph/io/npy.h"
#include "volley/graph/json_checker.h"

namespace volley {
namespace {

using namespace hetero_internal;
using graph_internal::manifest_path;
namespace fs = std::filesystem;
using Json = JsonChecker::Json;

struct Entry {
  std::string field;
  std::string file;
  NpyExpectation expected;
};

struct NodeEntry {
  NodeTypeInfo info;
  int64_t num_classes = 0;
  std::vector<Entry> arrays;
};

struct EdgeEntry {
  EdgeType type;
  int64_t num_edges = 0;
  std::vector<Entry> arrays;
};

struct HeteroManifest {
  std::string path;
  std::string name;
  std::vector<NodeEntry> nodes;
  std::vector<EdgeEntry> edges;
};

// One "arrays" object: entries checked for names (`known`), file, dtype, shape and crc32.
template <typename Known>
std::vector<Entry> read_arrays(const JsonChecker& check, const Json& owner,
                               const std::string& where, Known known, const char* const* fields,
                               size_t num_fields) {
  const Json& arrays = check.require(owner, "arrays", where);
  if (!arrays.is_object()) check.fail(where + "arrays", "an object", JsonChecker::brief(arrays));
  std::vector<Entry> entries;
  for (const auto& [field, json] : arrays.items()) {
    const std::string at = fmt::format("{}arrays.{}", where, field);
    if (!known(field)) {
      check.fail(at, fmt::format("one of {}", fmt::join(fields, fields + num_fields, ", ")),
                 fmt::format("'{}'", field));
    }
    if (!json.is_object()) check.fail(at, "an object", JsonChecker::brief(json));
    Entry entry;
    entry.field = field;
    entry.file = check.string(json, "file", at + ".");
    if (entry.file.empty() || entry.file.find('/') != std::string::npos ||
        entry.file.find('\0') != std::string::npos || entry.file.starts_with(".")) {
      check.fail(at + ".file", "a file name inside the dataset directory",
                 JsonChecker::brief(json["file"]));
    }
    const std::string dtype = check.string(json, "dtype", at + ".");
    try {
      entry.expected.dtype = dtype_from_name(dtype);
    } catch (const ValueError&) {
      check.fail(at + ".dtype", "a dtype name such as \"int64\"",
                 JsonChecker::brief(json["dtype"]));
    }
    const Json& shape = check.require(json, "shape", at + ".");
    if (!shape.is_array()) check.fail(at + ".shape", "a list of sizes", JsonChecker::brief(shape));
    for (const Json& extent : shape) {
      if (!extent.is_number_integer() || extent.get<int64_t>() < 0) {
        check.fail(at + ".shape", "a list of non-negative integers", JsonChecker::brief(shape));
      }
      entry.expected.shape.push_back(extent.get<int64_t>());
    }
    entry.expected.crc32 = check.crc(json, "crc32", at + ".");
    entries.push_back(std::move(entry));
  }
  return entries;
}

void read_node_types(const JsonChecker& check, const Json& json, HeteroManifest& manifest) {
  const Json& nodes = check.require(json, "node_types");
  if (!nodes.is_array()) check.fail("node_types", "a list", JsonChecker::brief(nodes));
  for (size_t i = 0; i < nodes.size(); ++i) {
    const std::string where = fmt::format("node_types[{}].", i);
    NodeEntry entry;
    entry.info.name = check.string(nodes[i], "name", where);
    try {
      check_type_name(entry.info.name, "node type");
    } catch (const ValueError& error) {
      check.fail(where + "name", "a valid node type name", error.what());
    }
    entry.info.num_nodes = check.integer(nodes[i], "num_nodes", where);
    entry.num_classes =
        nodes[i].contains("num_classes") ? check.integer(nodes[i], "num_classes", where) : 0;
    entry.arrays =
        read_arrays(check, nodes[i], where, is_node_field, kNodeFields, std::size(kNodeFields));
    std::sort(entry.arrays.begin(), entry.arrays.end(), [](const Entry& a, const Entry& b) {
      return node_field_rank(a.field) < node_field_rank(b.field);
    });
    manifest.nodes.push_back(std::move(entry));
  }
}

void read_edge_types(const JsonChecker& check, const Json& json, HeteroManifest& manifest) {
  const Json& edges = check.require(json, "edge_types");
  if (!edges.is_array()) check.fail("edge_types", "a list", JsonChecker::brief(edges));
  for (size_t i = 0; i < edges.size(); ++i) {
    const std::string where = fmt::format("edge_types[{}].", i);
    EdgeEntry entry;
    entry.type = {check.string(edges[i], "src", where), check.string(edges[i], "relation", where),
                  check.string(edges[i], "dst", where)};
    entry.num_edges = check.integer(edges[i], "num_edges", where);
    entry.arrays =
        read_arrays(check, edges[i], where, is_edge_field, kEdgeFields, std::size(kEdgeFields));
    std::sort(entry.arrays.begin(), entry.arrays.end(), [](const Entry& a, const Entry& b) {
      return edge_field_rank(a.field) < edge_field_rank(b.field);
    });
    for (const char* field : {"indptr", "indices"}) {
      const bool found = std::any_of(entry.arrays.begin(), entry.arrays.end(),
                                     [&](const Entry& a) { return a.field == field; });
      if (!found) check.fail(where + "arrays." + field, "an entry (it is required)", "none");
    }
    manifest.edges.push_back(std::move(entry));
  }
}

HeteroManifest read_manifest(const std::string& directory) {
  const JsonChecker check(manifest_path(directory));
  const Json json = graph_internal::read_manifest_json(directory, check);
  const Json& format = check.require(json, "format");
  if (format != "volley-dataset")
    check.fail("format", "\"volley-dataset\"", JsonChecker::brief(format));
  const int64_t version = check.integer(json, "version");
  if (version != kHeteroFormatVersion) {
    check.fail("version",
               fmt::format("{} (a heterogeneous dataset; version 1 is homogeneous: read it with "
                           "load_dataset)",
                           kHeteroFormatVersion),
               std::to_string(version));
  }
  HeteroManifest manifest;
  manifest.path = check.path();
  manifest.name = fs::path(directory).lexically_normal().filename().string();
  if (json.contains("name")) manifest.name = check.string(json, "name");
  read_node_types(check, json, manifest);
  read_edge_types(check, json, manifest);
  return manifest;
}

int64_t count_of(const HeteroManifest& manifest, const std::string& node_type) {
  for (const NodeEntry& node : manifest.nodes) {
    if (node.info.name == node_type) return node.info.num_nodes;
  }
  return -1;  // HeteroGraph's constructor names the unknown type
}

// "" or the shape problem of `entry` (a node field of `node`, or an edge field of `edge`).
std::string shape_problem(const HeteroManifest& manifest, const NodeEntry* node,
                          const EdgeEntry* edge, const Entry& entry) {
  if (node != nullptr) {
    return node_shape_problem(entry.field, entry.expected.dtype, entry.expected.shape,
                              node->info.num_nodes);
  }
  const int64_t num_dst = std::max<int64_t>(count_of(manifest, edge->type.dst), 0);
  return edge_shape_problem(entry.field, entry.expected.dtype, entry.expected.shape, num_dst,
                            edge->num_edges);
}

bool topology_resident(const HeteroManifest& manifest, const DatasetLoadOptions& options) {
  if (!options.memory_map) return true;
  size_t budget = options.resident_graph_bytes;
  if (budget == static_cast<size_t>(-1)) {
    const long pages = sysconf(_SC_PHYS_PAGES), page_bytes = sysconf(_SC_PAGESIZE);
    budget = pages > 0 && page_bytes > 0
                 ? static_cast<size_t>(pages) * static_cast<size_t>(page_bytes) / 4
                 : 0;
  }
  size_t bytes = 0;
  for (const EdgeEntry& edge : manifest.edges) {
    for (const Entry& entry : edge.arrays) {
      size_t count = 1;
      for (int64_t extent : entry.expected.shape) count *= static_cast<size_t>(extent);
      bytes += count * dtype_size(entry.expected.dtype);
    }
  }
  return bytes <= budget;
}

// Opens one array: dtype/shape against the manifest, then values (labels, split ids).
Array open_entry(const std::string& directory, const HeteroManifest& manifest,
                 const NodeEntry* node, const EdgeEntry* edge, const Entry& entry, bool memory_map,
                 bool verify) {
  const std::string owner = node != nullptr ? node->info.name : edge->type.name();
  const std::string problem = shape_problem(manifest, node, edge, entry);
  if (!problem.empty()) {
    throw ValueError(fmt::format("{}: {} {}: arrays.{}.{}", manifest.path,
                                 node != nullptr ? "node type" : "edge type", owner, entry.field,
                                 problem));
  }
  const std::string path = (fs::path(directory) / entry.file).string();
  Array array = read_npy_expecting(path, entry.expected, "volley.json", memory_map, verify);
  if (node != nullptr) {
    const std::string values =
        graph_internal::value_problem(entry.field, array, node->info.num_nodes, node->num_classes);
    if (!values.empty()) throw ValueError(fmt::format("{}: node type {}: {}", path, owner, values));
  }
  return array;
}

std::optional<Array> pick(std::map<std::string, Array>& arrays, const char* field) {
  const auto it = arrays.find(field);
  if (it == arrays.end()) return std::nullopt;
  return it->second;
}

}  // namespace

int64_t dataset_format_version(const std::string& directory) {
  const JsonChecker check(manifest_path(directory));
  return check.integer(graph_internal::read_manifest_json(directory, check), "version");
}

bool is_hetero_dataset_directory(const std::string& path) {
  try {
    return dataset_format_version(path) == kHeteroFormatVersion;
  } catch (const Error&) {
    return false;
  }
}

HeteroDataset load_hetero_dataset(const std::string& directory, const DatasetLoadOptions& options) {
  const HeteroManifest manifest = read_manifest(directory);
  HeteroDataset dataset;
  dataset.name = manifest.name;
  std::vector<NodeTypeInfo> node_types;
  for (const NodeEntry& node : manifest.nodes) {
    std::map<std::string, Array> arrays;
    for (const Entry& entry : node.arrays) {
      arrays.emplace(entry.field, open_entry(directory, manifest, &node, nullptr, entry,
                                             options.memory_map, options.verify_checksums));
    }
    NodeTypeData data;
    data.features = pick(arrays, "features");
    data.labels = pick(arrays, "labels");
    data.train_idx = pick(arrays, "train_idx");
    data.val_idx = pick(arrays, "val_idx");
    data.test_idx = pick(arrays, "test_idx");
    data.num_classes = node.num_classes;
    dataset.node_data.push_back(std::move(data));
    node_types.push_back(node.info);
  }
  const bool map_topology = options.memory_map && !topology_resident(manifest, options);
  std::vector<std::pair<EdgeType, Csr>> edge_types;
  for (const EdgeEntry& edge : manifest.edges) {
    std::map<std::string, Array> arrays;
    for (const Entry& entry : edge.arrays) {
      arrays.emplace(entry.field, open_entry(directory, manifest, nullptr, &edge, entry,
                                             map_topology, options.verify_checksums));
    }
    try {
      edge_types.emplace_back(edge.type,
                              Csr::from_arrays(*pick(arrays, "indptr"), *pick(arrays, "indices"),
                                               pick(arrays, "edge_ids"), pick(arrays, "weights"),
                                               Orientation::kIn, /*validate=*/false));
    } catch (const Error& error) {
      internal::throw_error(error.kind(), fmt::format("{}: edge type {}: {}", directory,
                                                      edge.type.name(), error.what()));
    }
  }
  try {
    dataset.graph =
        HeteroGraph(std::move(node_types), std::move(edge_types), options.validate_graph);
  } catch (const Error& error) {
    internal::throw_error(error.kind(), fmt::format("{}: graph: {}", directory, error.what()));
  }
  return dataset;
}

DatasetCheck verify_hetero_dataset(const std::string& directory) {
  DatasetCheck check;
  HeteroManifest manifest;
  try {
    manifest = read_manifest(directory);
  } catch (const Error& error) {
    check.problems.push_back(error.what());
    return check;
  }
  auto verify = [&](const NodeEntry* node, const EdgeEntry* edge, const Entry& entry) {
    try {
      open_entry(directory, manifest, node, edge, entry, /*memory_map=*/true, /*verify=*/true);
    } catch (const Error& error) {
      check.problems.push_back(error.what());
    }
  };
  for (const NodeEntry& node : manifest.nodes) {
    for (const Entry& entry : node.arrays) verify(&node, nullptr, entry);
  }
  for (const EdgeEntry& edge : manifest.edges) {
    for (const Entry& entry : edge.arrays) verify(nullptr, &edge, entry);
  }
  if (check.ok()) {
    try {
      load_hetero_dataset(directory, {.memory_map = true, .validate_graph = true});
    } catch (const Error& error) {
      check.problems.push_back(error.what());
    }
  }
  return check;
}

}  // namespace volley
