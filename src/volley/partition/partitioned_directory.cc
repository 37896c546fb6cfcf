// The one reader of a partitioned directory of either kind (internal/partitioned_directory.h):
// partition.json into the typed model, a part's manifests against it, a part's graph against it.
#include "volley/partition/internal/partitioned_directory.h"

#include <atomic>
#include <filesystem>

#include "volley/core/files.h"
#include "volley/core/parallel.h"
#include "volley/graph/io/npy.h"
#include "volley/partition/internal/format.h"
#include "volley/partition/internal/partitioned_dataset.h"

namespace volley::internal {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;
using namespace partition_format;

std::vector<int64_t> integer_list(const JsonChecker& check, const Json& json,
                                  const std::string& field) {
  std::vector<int64_t> values;
  if (!json.is_array()) check.fail(field, "a list of integers", JsonChecker::brief(json));
  for (const Json& value : json) {
    if (!value.is_number_integer())
      check.fail(field, "a list of integers", JsonChecker::brief(json));
    values.push_back(value.get<int64_t>());
  }
  return values;
}

// `list` at `field` of `json`: a list of `count` entries (any count when `count` < 0).
const Json& require_list(const JsonChecker& check, const Json& json, const std::string& field,
                         int64_t count) {
  const Json& list = check.require(json, field);
  if (!list.is_array() || list.empty() ||
      (count >= 0 && static_cast<int64_t>(list.size()) != count)) {
    check.fail(field, count >= 0 ? fmt::format("a list of {} entries", count) : "a non-empty list",
               list.is_array() ? fmt::format("{} entries", list.size()) : JsonChecker::brief(list));
  }
  return list;
}

// Node type t: name, total, book (offsets) and node map.
PartitionedNodeType read_node_type(const JsonChecker& check, const PartitionedDirectory& model,
                                   size_t t) {
  const Json& json = model.node_type_json(model.json, t);
  const std::string where = model.node_type_where(t);
  PartitionedNodeType type;
  type.info.name = model.version == kTypedFormatVersion ? check.string(json, "name", where) : "";
  const int64_t n = check.integer(json, "num_nodes", where);
  type.info.num_nodes = n;
  const std::vector<int64_t> offsets =
      integer_list(check, check.require(json, "offsets", where), where + "offsets");
  if (static_cast<int64_t>(offsets.size()) != model.num_parts + 1 || offsets.back() != n) {
    check.fail(
        where + "offsets",
        fmt::format("{} non-decreasing integers from 0 to num_nodes = {}", model.num_parts + 1, n),
        JsonChecker::brief(json["offsets"]));
  }
  try {
    type.book = PartitionBook(offsets);
  } catch (const ValueError& problem) {
    check.fail(where + "offsets", "non-decreasing integers from 0", problem.what());
  }
  type.node_map =
      read_array_ref(check, check.require(json, "node_map", where), where + "node_map.");
  const std::string file = node_map_file(type.info.name);
  if (type.node_map.file != file) {
    check.fail(where + "node_map.file", fmt::format("\"{}\"", file),
               fmt::format("\"{}\"", type.node_map.file));
  }
  if (type.node_map.dtype != DType::kInt64 || type.node_map.shape != std::vector<int64_t>{n}) {
    check.fail(
        where + "node_map", fmt::format("int64 [{}]", n),
        fmt::format("{} {}", dtype_name(type.node_map.dtype), npy_shape_text(type.node_map.shape)));
  }
  return type;
}

// Edge types and their totals: edge_types[r] (version 2), or one edge type whose num_edges is at
// the top level (version 1).
void read_edge_types(const JsonChecker& check, PartitionedDirectory& model) {
  if (model.version != kTypedFormatVersion) {
    model.edge_types.emplace_back();
    model.num_edges.push_back(check.integer(model.json, "num_edges"));
    return;
  }
  const Json& edge_types = check.require(model.json, "edge_types");
  if (!edge_types.is_array()) check.fail("edge_types", "a list", JsonChecker::brief(edge_types));
  for (size_t r = 0; r < edge_types.size(); ++r) {
    const std::string where = fmt::format("edge_types[{}].", r);
    model.edge_types.push_back({check.string(edge_types[r], "src", where),
                                check.string(edge_types[r], "relation", where),
                                check.string(edge_types[r], "dst", where)});
    model.num_edges.push_back(check.integer(edge_types[r], "num_edges", where));
  }
}

// A part entry's count per type: one integer (version 1) or {type name: count} (version 2).
std::vector<int64_t> per_type(const JsonChecker& check, const PartitionedDirectory& model,
                              const Json& entry, const std::string& key, const std::string& where,
                              const std::vector<std::string>& names) {
  if (model.version != kTypedFormatVersion) return {check.integer(entry, key, where)};
  const Json& counts = check.require(entry, key, where);
  if (!counts.is_object()) {
    check.fail(where + key, "an object of counts by type name", JsonChecker::brief(counts));
  }
  std::vector<int64_t> values;
  for (const std::string& name : names)
    values.push_back(check.integer(counts, name, where + key + "."));
  return values;
}

// parts[p]: its directory (part-p), its counts and the CRCs of its manifests.
void read_parts(const JsonChecker& check, PartitionedDirectory& model) {
  const Json& parts = require_list(check, model.json, "parts", model.num_parts);
  std::vector<std::string> node_names, edge_names;
  for (const PartitionedNodeType& type : model.node_types) node_names.push_back(type.info.name);
  for (const EdgeType& type : model.edge_types) edge_names.push_back(type.name());
  for (size_t p = 0; p < parts.size(); ++p) {
    const std::string where = fmt::format("parts[{}].", p);
    PartitionedPart entry;
    entry.directory = check.string(parts[p], "directory", where);
    if (entry.directory != part_directory_name(static_cast<int64_t>(p))) {
      check.fail(where + "directory", fmt::format("\"{}\"", part_directory_name(p)),
                 fmt::format("\"{}\"", entry.directory));
    }
    const std::vector<int64_t> nodes =
        per_type(check, model, parts[p], "num_nodes", where, node_names);
    for (size_t t = 0; t < nodes.size(); ++t) {
      const int64_t expected = model.node_types[t].book.size(static_cast<int64_t>(p));
      if (nodes[t] != expected) {
        check.fail(where + "num_nodes", fmt::format("{} (from offsets)", expected),
                   std::to_string(nodes[t]));
      }
    }
    entry.num_edges = per_type(check, model, parts[p], "num_edges", where, edge_names);
    entry.volley_json_crc32 = check.crc(parts[p], "volley_json_crc32", where);
    entry.part_json_crc32 = check.crc(parts[p], "part_json_crc32", where);
    model.parts.push_back(std::move(entry));
  }
}

}  // namespace

void check_indptr(const Csr& graph, const std::string& source) {
  const int64_t* indptr = graph.indptr().data<int64_t>();
  const int64_t n = graph.num_nodes();
  VOLLEY_REQUIRE(indptr[0] == 0, ValueError, "{}: graph: indptr[0] = {}, expected 0", source,
                 indptr[0]);
  for (int64_t v = 0; v < n; ++v) {
    VOLLEY_REQUIRE(indptr[v + 1] >= indptr[v], ValueError,
                   "{}: graph: indptr[{}] = {} < indptr[{}] = {} (must be non-decreasing)", source,
                   v + 1, indptr[v + 1], v, indptr[v]);
  }
  VOLLEY_REQUIRE(indptr[n] == graph.num_edges(), ValueError,
                 "{}: graph: indptr[{}] = {}, expected num_edges = {}", source, n, indptr[n],
                 graph.num_edges());
}

ArrayRef read_array_ref(const JsonChecker& check, const Json& json, const std::string& where) {
  ArrayRef ref;
  ref.file = check.string(json, "file", where);
  if (ref.file.empty() || ref.file.find('/') != std::string::npos || ref.file.starts_with(".")) {
    check.fail(where + "file", "a file name inside the directory", fmt::format("\"{}\"", ref.file));
  }
  const std::string dtype = check.string(json, "dtype", where);
  try {
    ref.dtype = dtype_from_name(dtype);
  } catch (const ValueError&) {
    check.fail(where + "dtype", "a dtype name such as \"int64\"", fmt::format("\"{}\"", dtype));
  }
  const Json& shape = check.require(json, "shape", where);
  if (!shape.is_array()) check.fail(where + "shape", "a list of sizes", JsonChecker::brief(shape));
  for (const Json& extent : shape) {
    if (!extent.is_number_integer() || extent.get<int64_t>() < 0) {
      check.fail(where + "shape", "a list of non-negative integers", JsonChecker::brief(shape));
    }
    ref.shape.push_back(extent.get<int64_t>());
  }
  ref.crc32 = check.crc(json, "crc32", where);
  return ref;
}

Array open_checked(const std::string& directory, const ArrayRef& ref, const char* manifest,
                   bool memory_map, bool verify_checksum) {
  return read_npy_expecting(join_path(directory, ref.file), {ref.dtype, ref.shape, ref.crc32},
                            manifest, memory_map, verify_checksum);
}

const Json& PartitionedDirectory::node_type_json(const Json& manifest, size_t t) const {
  return version == kTypedFormatVersion ? manifest["node_types"][t] : manifest;
}

std::string PartitionedDirectory::node_type_where(size_t t) const {
  return version == kTypedFormatVersion ? fmt::format("node_types[{}].", t) : "";
}

size_t PartitionedDirectory::node_type_index(std::string_view name) const {
  for (size_t t = 0; t < node_types.size(); ++t) {
    if (node_types[t].info.name == name) return t;
  }
  if (name.empty() && node_types.size() == 1) return 0;
  std::string known;
  for (const PartitionedNodeType& type : node_types) {
    known += (known.empty() ? "" : ", ") + type.info.name;
  }
  throw ValueError(fmt::format(
      "{} (node types: {})",
      name.empty() ? std::string("name a node type") : fmt::format("unknown node type '{}'", name),
      known));
}

PartitionedDirectory read_partitioned_directory(const std::string& directory) {
  const std::string path = join_path(directory, kManifestFile);
  std::error_code error;
  if (!fs::exists(path, error)) {
    throw IoError(fmt::format(
        "{}: no such file: '{}' is not a partitioned dataset directory (volley partition "
        "writes one)",
        path, directory));
  }
  const JsonChecker check(path);
  PartitionedDirectory model;
  model.directory = directory;
  model.text = read_file_text(path, "partition manifest");
  model.json = check.parse(model.text);
  const Json& format = check.require(model.json, "format");
  if (format != kFormatName) {
    check.fail("format", fmt::format("\"{}\"", kFormatName), JsonChecker::brief(format));
  }
  model.version = check.integer(model.json, "version");
  if (model.version != kFormatVersion && model.version != kTypedFormatVersion) {
    check.fail("version", "1 or 2 (the versions this Volley reads)", std::to_string(model.version));
  }
  model.name = model.json.contains("name") && model.json["name"].is_string()
                   ? model.json["name"].get<std::string>()
                   : "";
  const std::string method = check.string(model.json, "method");
  try {
    model.method = partition_method_from_name(method);
  } catch (const ValueError&) {
    check.fail("method", "random, metis, hotness or stream", fmt::format("\"{}\"", method));
  }
  model.num_parts = check.integer(model.json, "num_parts");
  if (model.num_parts < 1) check.fail("num_parts", "an integer >= 1", "0");
  const size_t types = model.version == kTypedFormatVersion
                           ? require_list(check, model.json, "node_types", -1).size()
                           : 1;
  for (size_t t = 0; t < types; ++t) model.node_types.push_back(read_node_type(check, model, t));
  read_edge_types(check, model);
  read_parts(check, model);
  return model;
}

void require_version(const PartitionedDirectory& model, int64_t version) {
  if (model.version == version) return;
  JsonChecker(join_path(model.directory, kManifestFile))
      .fail("version",
            version == kFormatVersion
                ? "1 (version 2 is a heterogeneous partitioned dataset: read it with "
                  "load_hetero_partition)"
                : "2 (a heterogeneous partitioned dataset; version 1 is homogeneous: read it "
                  "with load_partition)",
            std::to_string(model.version));
}

OpenedPart open_part(const PartitionedDirectory& model, int64_t part) {
  VOLLEY_REQUIRE(part >= 0 && part < model.num_parts, IndexError,
                 "partition {} out of range: '{}' has {} partitions", part, model.directory,
                 model.num_parts);
  const PartitionedPart& entry = model.parts[static_cast<size_t>(part)];
  OpenedPart opened{join_path(model.directory, entry.directory), {}};
  read_recorded(join_path(opened.directory, kDatasetManifestFile), entry.volley_json_crc32,
                "dataset manifest");
  const std::string path = join_path(opened.directory, kPartFile);
  const JsonChecker check(path);
  opened.json = check.parse(read_recorded(path, entry.part_json_crc32, "part manifest"));
  const Json& json = opened.json;
  if (json.value("format", "") != kPartFormatName) {
    check.fail("format", fmt::format("\"{}\"", kPartFormatName),
               json.contains("format") ? JsonChecker::brief(json["format"]) : "none");
  }
  auto expect = [&](const Json& object, const std::string& key, int64_t expected,
                    const std::string& where) {
    const int64_t found = check.integer(object, key, where);
    if (found != expected) {
      check.fail(where + key, fmt::format("{} (as {} says)", expected, kManifestFile),
                 std::to_string(found));
    }
  };
  expect(json, "part", part, "");
  expect(json, "num_parts", model.num_parts, "");
  if (model.version == kTypedFormatVersion) {
    require_list(check, json, "node_types", static_cast<int64_t>(model.node_types.size()));
  } else {
    expect(json, "num_edges_total", model.num_edges.front(), "");
  }
  for (size_t t = 0; t < model.node_types.size(); ++t) {
    const PartitionedNodeType& type = model.node_types[t];
    const Json& object = model.node_type_json(json, t);
    const std::string where = model.node_type_where(t);
    expect(object, "first_node", type.book.begin(part), where);
    expect(object, "num_nodes", type.book.size(part), where);
    expect(object, "num_nodes_total", type.info.num_nodes, where);
  }
  return opened;
}

namespace {

// One edge type's CSR of a part against the totals: indptr, source ids in [0, `sources`), edge
// ids in [0, `edges`). `prefix`: the edge type's name, which starts its files' names in a typed
// part ("S__R__D.indices.npy"), or "" (version 1: "indices.npy").
void validate_edges(const Csr& graph, const std::string& part_dir, const std::string& prefix,
                    const std::string& source_type, int64_t sources, int64_t edges) {
  check_indptr(graph, prefix.empty() ? part_dir : fmt::format("{}: {}", part_dir, prefix));
  std::atomic<int64_t> bad{-1};
  parallel_for(0, graph.num_edges(), 1 << 16, [&](int64_t first, int64_t last) {
    for (int64_t k = first; k < last; ++k) {
      const int64_t u = graph.neighbor(k);
      const int64_t id = graph.edge_id(k);
      if (u < 0 || u >= sources || id < 0 || id >= edges) {
        int64_t expected = -1;
        bad.compare_exchange_strong(expected, k);
        return;
      }
    }
  });
  const int64_t k = bad.load();
  if (k < 0) return;
  const std::string file = prefix.empty() ? "" : prefix + ".";
  const int64_t u = graph.neighbor(k);
  if (u < 0 || u >= sources) {
    throw IndexError(fmt::format(
        "{}/{}indices.npy: indices[{}] = {} out of range for a partitioned graph with {} nodes{}",
        part_dir, file, k, u, sources,
        source_type.empty() ? "" : fmt::format(" of source type '{}'", source_type)));
  }
  throw IndexError(
      fmt::format("{}/{}edge_ids.npy: edge_ids[{}] = {} out of range for a graph with {} edges",
                  part_dir, file, k, graph.edge_id(k), edges));
}

}  // namespace

void check_part_graph(const PartitionedDirectory& model, int64_t part, const std::string& part_dir,
                      const std::vector<NodeTypeInfo>& node_counts,
                      const std::vector<std::pair<EdgeType, const Csr*>>& edges, bool validate) {
  VOLLEY_REQUIRE(
      node_counts.size() == model.node_types.size() && edges.size() == model.edge_types.size(),
      IoError, "{}: expected {} node types and {} edge types (as {} says), found {} and {}",
      part_dir, model.node_types.size(), model.edge_types.size(), kManifestFile, node_counts.size(),
      edges.size());
  for (size_t t = 0; t < node_counts.size(); ++t) {
    const PartitionedNodeType& type = model.node_types[t];
    VOLLEY_REQUIRE(node_counts[t].name == type.info.name, IoError,
                   "{}: node type {}: expected '{}' (as {} says), found '{}'", part_dir, t,
                   type.info.name, kManifestFile, node_counts[t].name);
  }
  const PartitionedPart& entry = model.parts[static_cast<size_t>(part)];
  for (size_t r = 0; r < edges.size(); ++r) {
    const auto& [type, csr] = edges[r];
    const EdgeType& expected = model.edge_types[r];
    const bool typed = model.version == kTypedFormatVersion;
    VOLLEY_REQUIRE(type == expected, IoError,
                   "{}: edge type {}: expected {} (as {} says), found {}", part_dir, r,
                   expected.name(), kManifestFile, type.name());
    const std::string prefix = typed ? expected.name() : "";
    const size_t src = model.node_type_index(expected.src);
    const size_t dst = model.node_type_index(expected.dst);
    const int64_t rows = model.node_types[dst].book.size(part);
    if (csr->num_nodes() != rows || csr->num_edges() != entry.num_edges[r]) {
      throw IoError(
          fmt::format("{}{}: expected {} nodes and {} edges (as {} says), found {} and {}",
                      part_dir, typed ? ": edge type " + prefix : "", rows, entry.num_edges[r],
                      kManifestFile, csr->num_nodes(), csr->num_edges()));
    }
    if (validate) {
      validate_edges(*csr, part_dir, prefix, expected.src, model.node_types[src].info.num_nodes,
                     model.num_edges[r]);
    }
  }
}

Array load_node_map(const PartitionedDirectory& model, size_t t, bool verify_checksums) {
  return open_checked(model.directory, model.node_types[t].node_map, kManifestFile,
                      /*memory_map=*/true, verify_checksums);
}

}  // namespace volley::internal
