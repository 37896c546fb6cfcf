// Reading the heterogeneous partitioned directory (format: hetero_partition.h): partition.json
// checked field by field, each part's manifests against the CRCs it records, each part's arrays
// against its own volley.json, and the part's graph against the totals.
#include <algorithm>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "volley/core/files.h"
#include "volley/graph/io/npy.h"
#include "volley/graph/json_checker.h"
#include "volley/partition/internal/format.h"
#include "volley/partition/internal/hetero_partitioned_dataset.h"
#include "volley/partition/internal/partitioned_dataset.h"

namespace volley {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;
using namespace internal::partition_format;

struct PartEntry {
  std::string directory;
  uint32_t volley_json_crc32 = 0, part_json_crc32 = 0;
};

struct FullManifest {
  HeteroPartitionManifest manifest;
  std::vector<Json> node_maps;  // per node type: {file, dtype, shape, crc32}
  std::vector<PartEntry> parts;
};

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

// node_types[t]: name, count, book.
void read_node_type(const JsonChecker& check, const Json& json, size_t t,
                    HeteroPartitionManifest& manifest, FullManifest& full) {
  const std::string where = fmt::format("node_types[{}].", t);
  const std::string name = check.string(json, "name", where);
  const int64_t n = check.integer(json, "num_nodes", where);
  manifest.node_types.push_back({name, n});
  const std::vector<int64_t> offsets =
      integer_list(check, check.require(json, "offsets", where), where + "offsets");
  if (static_cast<int64_t>(offsets.size()) != manifest.num_parts + 1 || offsets.back() != n) {
    check.fail(where + "offsets",
               fmt::format("{} non-decreasing integers from 0 to num_nodes = {}",
                           manifest.num_parts + 1, n),
               JsonChecker::brief(json["offsets"]));
  }
  try {
    manifest.books.emplace_back(offsets);
  } catch (const ValueError& problem) {
    check.fail(where + "offsets", "non-decreasing integers from 0", problem.what());
  }
  full.node_maps.push_back(check.require(json, "node_map", where));
  if (json.contains("balance") && json["balance"].is_number()) {
    manifest.quality.node_balance.push_back(json["balance"].get<double>());
  }
}

// parts[p]: its directory (part-p) and the CRCs of its manifests.
void read_parts(const JsonChecker& check, const Json& json, FullManifest& full) {
  const HeteroPartitionManifest& manifest = full.manifest;
  const Json& parts = check.require(json, "parts");
  if (!parts.is_array() || static_cast<int64_t>(parts.size()) != manifest.num_parts) {
    check.fail("parts", fmt::format("a list of num_parts = {} entries", manifest.num_parts),
               JsonChecker::brief(parts));
  }
  for (size_t p = 0; p < parts.size(); ++p) {
    const std::string where = fmt::format("parts[{}].", p);
    PartEntry entry{check.string(parts[p], "directory", where),
                    check.crc(parts[p], "volley_json_crc32", where),
                    check.crc(parts[p], "part_json_crc32", where)};
    if (entry.directory != part_directory_name(static_cast<int64_t>(p))) {
      check.fail(where + "directory", fmt::format("\"{}\"", part_directory_name(p)),
                 fmt::format("\"{}\"", entry.directory));
    }
    full.parts.push_back(std::move(entry));
  }
}

FullManifest read_full_manifest(const std::string& directory) {
  const std::string path = join_path(directory, kManifestFile);
  std::error_code error;
  if (!fs::exists(path, error)) {
    throw IoError(
        fmt::format("{}: no such file: '{}' is not a partitioned dataset directory "
                    "(volley partition writes one)",
                    path, directory));
  }
  const JsonChecker check(path);
  FullManifest full;
  HeteroPartitionManifest& manifest = full.manifest;
  manifest.directory = directory;
  manifest.json = read_file_text(path, "partition manifest");
  const Json json = check.parse(manifest.json);
  const Json& format = check.require(json, "format");
  if (format != kFormatName) {
    check.fail("format", fmt::format("\"{}\"", kFormatName), JsonChecker::brief(format));
  }
  const int64_t version = check.integer(json, "version");
  if (version != internal::kHeteroFormatVersion) {
    check.fail("version",
               "2 (a heterogeneous partitioned dataset; version 1 is homogeneous: "
               "read it with load_partition)",
               std::to_string(version));
  }
  manifest.name = json.value("name", "");
  const std::string method = check.string(json, "method");
  try {
    manifest.method = partition_method_from_name(method);
  } catch (const ValueError&) {
    check.fail("method", "random, metis or stream", fmt::format("\"{}\"", method));
  }
  manifest.num_parts = check.integer(json, "num_parts");
  if (manifest.num_parts < 1) check.fail("num_parts", "an integer >= 1", "0");
  const Json& node_types = check.require(json, "node_types");
  if (!node_types.is_array() || node_types.empty()) {
    check.fail("node_types", "a non-empty list", JsonChecker::brief(node_types));
  }
  for (size_t t = 0; t < node_types.size(); ++t) {
    read_node_type(check, node_types[t], t, manifest, full);
  }
  const Json& edge_types = check.require(json, "edge_types");
  if (!edge_types.is_array()) check.fail("edge_types", "a list", JsonChecker::brief(edge_types));
  for (size_t r = 0; r < edge_types.size(); ++r) {
    const std::string where = fmt::format("edge_types[{}].", r);
    manifest.edge_types.push_back({check.string(edge_types[r], "src", where),
                                   check.string(edge_types[r], "relation", where),
                                   check.string(edge_types[r], "dst", where)});
    manifest.num_edges.push_back(check.integer(edge_types[r], "num_edges", where));
    manifest.quality.cut_edges_per_type.push_back(
        edge_types[r].contains("cut_edges") ? check.integer(edge_types[r], "cut_edges", where) : 0);
  }
  read_parts(check, json, full);
  if (json.contains("quality") && json["quality"].is_object()) {
    const Json& quality = json["quality"];
    manifest.quality.cut_edges = check.integer(quality, "cut_edges", "quality.");
    manifest.quality.edge_cut_fraction =
        check.optional_number(quality, "edge_cut_fraction").value_or(0);
    manifest.quality.edge_balance = check.optional_number(quality, "edge_balance").value_or(1);
  }
  return full;
}

// part.json's fields against partition.json's.
void check_part_json(const std::string& path, const std::string& text,
                     const HeteroPartitionManifest& manifest, int64_t part) {
  const JsonChecker check(path);
  const Json json = check.parse(text);
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
  expect(json, "num_parts", manifest.num_parts, "");
  const Json& types = check.require(json, "node_types");
  if (!types.is_array() || types.size() != manifest.node_types.size()) {
    check.fail("node_types", fmt::format("{} entries", manifest.node_types.size()),
               JsonChecker::brief(types));
  }
  for (size_t t = 0; t < types.size(); ++t) {
    const std::string where = fmt::format("node_types[{}].", t);
    expect(types[t], "first_node", manifest.books[t].begin(part), where);
    expect(types[t], "num_nodes", manifest.books[t].size(part), where);
    expect(types[t], "num_nodes_total", manifest.node_types[t].num_nodes, where);
  }
}

// The part's graph against the manifest: counts per type, indptr, source ids below the totals.
void check_part_graph(const HeteroPartition& result, const std::string& part_dir, bool validate) {
  const HeteroPartitionManifest& manifest = result.manifest;
  const HeteroGraph& graph = result.data.graph;
  VOLLEY_REQUIRE(graph.num_node_types() == static_cast<int>(manifest.node_types.size()) &&
                     graph.num_edge_types() == static_cast<int>(manifest.edge_types.size()),
                 IoError,
                 "{}: expected {} node types and {} edge types (as {} says), found {} and {}",
                 part_dir, manifest.node_types.size(), manifest.edge_types.size(), kManifestFile,
                 graph.num_node_types(), graph.num_edge_types());
  for (size_t t = 0; t < manifest.node_types.size(); ++t) {
    const NodeTypeInfo& found = graph.node_types()[t];
    const int64_t expected = manifest.books[t].size(result.part);
    VOLLEY_REQUIRE(found.name == manifest.node_types[t].name && found.num_nodes == expected,
                   IoError,
                   "{}: node type {}: expected '{}' with {} nodes (as {} says), found "
                   "'{}' with {}",
                   part_dir, t, manifest.node_types[t].name, expected, kManifestFile, found.name,
                   found.num_nodes);
  }
  for (size_t r = 0; r < manifest.edge_types.size(); ++r) {
    const EdgeType& type = manifest.edge_types[r];
    VOLLEY_REQUIRE(graph.edge_types()[r] == type, IoError,
                   "{}: edge type {}: expected {} (as {} says), found {}", part_dir, r, type.name(),
                   kManifestFile, graph.edge_types()[r].name());
    const Csr& csr = graph.edges(static_cast<int>(r));
    if (!validate) continue;
    const std::string source = fmt::format("{}: edge type {}", part_dir, type.name());
    internal::check_indptr(csr, source);
    const int64_t total =
        manifest
            .node_types[static_cast<size_t>(
                std::find_if(manifest.node_types.begin(), manifest.node_types.end(),
                             [&](const NodeTypeInfo& info) { return info.name == type.src; }) -
                manifest.node_types.begin())]
            .num_nodes;
    for (int64_t k = 0; k < csr.num_edges(); ++k) {
      const int64_t id = csr.neighbor(k);
      VOLLEY_REQUIRE(id >= 0 && id < total, IndexError,
                     "{}: indices[{}] = {} out of range for source type '{}' with {} nodes", source,
                     k, id, type.src, total);
    }
  }
}

}  // namespace

const PartitionBook& HeteroPartitionManifest::book(std::string_view type) const {
  for (size_t t = 0; t < node_types.size(); ++t) {
    if (node_types[t].name == type) return books[t];
  }
  std::string known;
  for (const NodeTypeInfo& info : node_types) known += (known.empty() ? "" : ", ") + info.name;
  throw ValueError(fmt::format("unknown node type '{}' (node types: {})", type, known));
}

bool is_hetero_partitioned_directory(const std::string& path) {
  try {
    const std::string text = read_file_text(join_path(path, kManifestFile), "partition manifest");
    const Json json = Json::parse(text);
    return json.value("version", int64_t{0}) == internal::kHeteroFormatVersion;
  } catch (const std::exception&) {
    return false;
  }
}

HeteroPartitionManifest read_hetero_partition_manifest(const std::string& directory) {
  return read_full_manifest(directory).manifest;
}

HeteroPartition load_hetero_partition(const std::string& directory, int64_t part,
                                      const PartitionLoadOptions& options) {
  FullManifest full = read_full_manifest(directory);
  VOLLEY_REQUIRE(part >= 0 && part < full.manifest.num_parts, IndexError,
                 "partition {} out of range: '{}' has {} partitions", part, directory,
                 full.manifest.num_parts);
  const PartEntry& entry = full.parts[static_cast<size_t>(part)];
  const std::string part_dir = join_path(directory, entry.directory);
  read_recorded(join_path(part_dir, kDatasetManifestFile), entry.volley_json_crc32,
                "dataset manifest");
  const std::string part_path = join_path(part_dir, kPartFile);
  check_part_json(part_path, read_recorded(part_path, entry.part_json_crc32, "part manifest"),
                  full.manifest, part);
  HeteroPartition result;
  result.part = part;
  result.manifest = std::move(full.manifest);
  result.data = load_hetero_dataset(part_dir, {.memory_map = options.memory_map,
                                               .verify_checksums = options.verify_checksums,
                                               .validate_graph = false});
  check_part_graph(result, part_dir, options.validate_graph);
  return result;
}

Array load_hetero_node_map(const std::string& directory, std::string_view node_type,
                           bool verify_checksums) {
  const FullManifest full = read_full_manifest(directory);
  const PartitionBook& book = full.manifest.book(node_type);  // checks the type
  const size_t t = static_cast<size_t>(&book - full.manifest.books.data());
  const std::string where = fmt::format("node_types[{}].node_map.", t);
  const JsonChecker check(join_path(directory, kManifestFile));
  const Json& ref = full.node_maps[t];
  const std::string file = check.string(ref, "file", where);
  if (file != internal::hetero_node_map_file(node_type)) {
    check.fail(where + "file", fmt::format("\"{}\"", internal::hetero_node_map_file(node_type)),
               fmt::format("\"{}\"", file));
  }
  return read_npy_expecting(join_path(directory, file),
                            {DType::kInt64, {book.num_nodes()}, check.crc(ref, "crc32", where)},
                            kManifestFile, /*memory_map=*/true, verify_checksums);
}

namespace {

// `directory`/`file` when present: 1-d int64 of `expected` entries (ValueError naming `what` and
// the file otherwise).
std::optional<Array> read_times(const std::string& directory, const std::string& file,
                                int64_t expected, const std::string& what, const char* per) {
  const std::string path = join_path(directory, file);
  if (!fs::exists(path)) return std::nullopt;
  Array time = read_npy(path, /*memory_map=*/true);
  VOLLEY_REQUIRE(time.dtype() == DType::kInt64 && time.ndim() == 1 && time.numel() == expected,
                 ValueError,
                 "{}: the times of {} must be a 1-d int64 array of {} entries (one per {}), got "
                 "{}",
                 path, what, expected, per, time.describe());
  return time;
}

}  // namespace

HeteroPartitionTimes load_hetero_partition_times(const HeteroPartitionManifest& manifest) {
  HeteroPartitionTimes times;
  for (const NodeTypeInfo& type : manifest.node_types) {
    times.node_time.push_back(read_times(manifest.directory, type.name + ".node_time.npy",
                                         type.num_nodes, fmt::format("node type '{}'", type.name),
                                         "node of the type, by new id"));
  }
  for (size_t e = 0; e < manifest.edge_types.size(); ++e) {
    const EdgeType& type = manifest.edge_types[e];
    times.edge_time.push_back(
        read_times(manifest.directory, type.name() + ".edge_time.npy", manifest.num_edges[e],
                   fmt::format("edge type {}", type.name()), "edge, by edge id"));
  }
  return times;
}

std::vector<std::string> verify_hetero_partitioned_dataset(const std::string& path) {
  std::vector<std::string> problems;
  HeteroPartitionManifest manifest;
  try {
    manifest = read_hetero_partition_manifest(path);
  } catch (const Error& error) {
    return {error.what()};
  }
  for (const NodeTypeInfo& type : manifest.node_types) {
    try {
      load_hetero_node_map(path, type.name, /*verify_checksums=*/true);
    } catch (const Error& error) {
      problems.emplace_back(error.what());
    }
  }
  for (int64_t p = 0; p < manifest.num_parts; ++p) {
    try {
      load_hetero_partition(path, p, {.verify_checksums = true, .validate_graph = true});
    } catch (const Error& error) {
      problems.emplace_back(error.what());
    }
  }
  try {
    load_hetero_partition_times(manifest);
  } catch (const Error& error) {
    problems.emplace_back(error.what());
  }
  return problems;
}

}  // namespace volley
