// Reading the partitioned dataset directory (format: partition.h): every manifest checked field by
// field, each part's files against the CRCs partition.json records for them.
#include <algorithm>
#include <atomic>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "volley/core/files.h"
#include "volley/core/parallel.h"
#include "volley/graph/io/npy.h"
#include "volley/graph/json_checker.h"
#include "volley/partition/internal/format.h"
#include "volley/partition/internal/partitioned_dataset.h"
#include "volley/partition/partition.h"

namespace volley {

namespace internal {

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

}  // namespace internal

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;
using namespace internal::partition_format;

struct ArrayRef {
  std::string file;
  DType dtype;
  std::vector<int64_t> shape;
  uint32_t crc32;
};

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

// Reads an array and checks it against its reference (as `manifest` says).
Array open_checked(const std::string& directory, const ArrayRef& ref, const char* manifest,
                   bool memory_map, bool verify_checksum) {
  return read_npy_expecting(join_path(directory, ref.file), {ref.dtype, ref.shape, ref.crc32},
                            manifest, memory_map, verify_checksum);
}

struct PartEntry {
  std::string directory;
  int64_t num_nodes, num_edges, num_train, num_cached;
  uint32_t volley_json_crc32, part_json_crc32;
};

struct FullManifest {
  PartitionManifest manifest;
  ArrayRef node_map;
  std::optional<ArrayRef> node_time;  // absent: no node times
  std::vector<PartEntry> parts;
};

// partition.json's text, parsed, after its format and version are checked.
Json parse_manifest(const JsonChecker& check, const std::string& directory, const std::string& path,
                    std::string& text) {
  std::error_code error;
  if (!fs::exists(path, error)) {
    throw IoError(fmt::format(
        "{}: no such file: '{}' is not a partitioned dataset directory (volley partition "
        "writes one)",
        path, directory));
  }
  text = read_file_text(path, "partition manifest");
  Json json = check.parse(text);
  const Json& format = check.require(json, "format");
  if (format != kFormatName)
    check.fail("format", fmt::format("\"{}\"", kFormatName), JsonChecker::brief(format));
  const int64_t version = check.integer(json, "version");
  if (version != kFormatVersion) {
    check.fail("version",
               version == 2 ? std::string("1 (version 2 is a heterogeneous partitioned dataset: "
                                          "read it with load_hetero_partition)")
                            : fmt::format("{} (this Volley reads version {})", kFormatVersion,
                                          kFormatVersion),
               std::to_string(version));
  }
  return json;
}

// name, method, sizes and the partition book (offsets); returns num_parts.
int64_t read_header(const JsonChecker& check, const Json& json, PartitionManifest& manifest) {
  manifest.name =
      json.contains("name") && json["name"].is_string() ? json["name"].get<std::string>() : "";
  const std::string method = check.string(json, "method");
  try {
    manifest.method = partition_method_from_name(method);
  } catch (const ValueError&) {
    check.fail("method", "random, metis, hotness or stream", fmt::format("\"{}\"", method));
  }
  const int64_t num_parts = check.integer(json, "num_parts");
  manifest.num_nodes = check.integer(json, "num_nodes");
  manifest.num_edges = check.integer(json, "num_edges");
  manifest.num_classes = json.contains("num_classes") ? check.integer(json, "num_classes") : 0;
  manifest.feature_dim = json.contains("feature_dim") ? check.integer(json, "feature_dim") : 0;
  const Json& offsets = check.require(json, "offsets");
  std::vector<int64_t> offset_values;
  if (offsets.is_array()) {
    for (const Json& value : offsets) {
      if (!value.is_number_integer())
        check.fail("offsets", "a list of integers", JsonChecker::brief(offsets));
      offset_values.push_back(value.get<int64_t>());
    }
  }
  if (!offsets.is_array() || static_cast<int64_t>(offset_values.size()) != num_parts + 1 ||
      offset_values.empty() || offset_values.back() != manifest.num_nodes) {
    check.fail("offsets",
               fmt::format("{} non-decreasing integers from 0 to num_nodes = {}", num_parts + 1,
                           manifest.num_nodes),
               JsonChecker::brief(offsets));
  }
  try {
    manifest.book = PartitionBook(offset_values);
  } catch (const ValueError& problem) {
    check.fail("offsets", "non-decreasing integers from 0", problem.what());
  }
  return num_parts;
}

// parts[p]: its directory, sizes and the CRCs of its manifests.
PartEntry read_part_entry(const JsonChecker& check, const Json& json, int64_t p,
                          const PartitionBook& book) {
  const std::string where = fmt::format("parts[{}].", p);
  PartEntry entry;
  entry.directory = check.string(json, "directory", where);
  if (entry.directory != part_directory_name(p)) {
    check.fail(where + "directory", fmt::format("\"{}\"", part_directory_name(p)),
               fmt::format("\"{}\"", entry.directory));
  }
  entry.num_nodes = check.integer(json, "num_nodes", where);
  if (entry.num_nodes != book.size(p)) {
    check.fail(where + "num_nodes", fmt::format("{} (from offsets)", book.size(p)),
               std::to_string(entry.num_nodes));
  }
  entry.num_edges = check.integer(json, "num_edges", where);
  entry.num_train = check.integer(json, "num_train", where);
  entry.num_cached = check.integer(json, "num_cached", where);
  entry.volley_json_crc32 = check.crc(json, "volley_json_crc32", where);
  entry.part_json_crc32 = check.crc(json, "part_json_crc32", where);
  return entry;
}

PartitionQuality read_quality(const JsonChecker& check, const Json& json) {
  const Json& quality = check.require(json, "quality");
  PartitionQuality q;
  auto number = [&](const char* key) {
    const Json& value = check.require(quality, key, "quality.");
    if (!value.is_number())
      check.fail(fmt::format("quality.{}", key), "a number", JsonChecker::brief(value));
    return value.get<double>();
  };
  q.edge_cut_fraction = number("edge_cut_fraction");
  q.cut_edges = check.integer(quality, "cut_edges", "quality.");
  q.node_balance = number("node_balance");
  q.edge_balance = number("edge_balance");
  q.train_balance = number("train_balance");
  q.remote_access_fraction = check.optional_number(quality, "remote_access_fraction");
  q.remote_access_fraction_cached = check.optional_number(quality, "remote_access_fraction_cached");
  q.metis_remote_access_fraction = check.optional_number(quality, "metis_remote_access_fraction");
  q.random_remote_access_fraction = check.optional_number(quality, "random_remote_access_fraction");
  return q;
}

FullManifest read_full_manifest(const std::string& directory) {
  const std::string path = join_path(directory, kManifestFile);
  const JsonChecker check(path);
  FullManifest full;
  PartitionManifest& manifest = full.manifest;
  manifest.directory = directory;
  const Json json = parse_manifest(check, directory, path, manifest.json);
  const int64_t num_parts = read_header(check, json, manifest);
  full.node_map = read_array_ref(check, check.require(json, "node_map"), "node_map.");
  if (full.node_map.dtype != DType::kInt64 ||
      full.node_map.shape != std::vector<int64_t>{manifest.num_nodes}) {
    check.fail(
        "node_map", fmt::format("int64 [{}]", manifest.num_nodes),
        fmt::format("{} {}", dtype_name(full.node_map.dtype), npy_shape_text(full.node_map.shape)));
  }
  if (json.contains("node_time")) {
    full.node_time = read_array_ref(check, json["node_time"], "node_time.");
    if (full.node_time->dtype != DType::kInt64 ||
        full.node_time->shape != std::vector<int64_t>{manifest.num_nodes}) {
      check.fail("node_time", fmt::format("int64 [{}]", manifest.num_nodes),
                 fmt::format("{} {}", dtype_name(full.node_time->dtype),
                             npy_shape_text(full.node_time->shape)));
    }
  }
  const Json& parts = check.require(json, "parts");
  if (!parts.is_array() || static_cast<int64_t>(parts.size()) != num_parts) {
    check.fail(
        "parts", fmt::format("a list of {} partitions", num_parts),
        parts.is_array() ? fmt::format("{} entries", parts.size()) : JsonChecker::brief(parts));
  }
  for (size_t p = 0; p < parts.size(); ++p) {
    PartEntry entry = read_part_entry(check, parts[p], static_cast<int64_t>(p), manifest.book);
    manifest.part_edges.push_back(entry.num_edges);
    manifest.part_train.push_back(entry.num_train);
    manifest.part_cached.push_back(entry.num_cached);
    full.parts.push_back(std::move(entry));
  }
  manifest.quality = read_quality(check, json);
  return full;
}

void validate_part_graph(const Csr& graph, const std::string& directory, int64_t num_nodes_total,
                         int64_t num_edges_total) {
  internal::check_indptr(graph, directory);
  const int64_t e = graph.num_edges();
  std::atomic<int64_t> bad{-1};
  parallel_for(0, e, 1 << 16, [&](int64_t first, int64_t last) {
    for (int64_t k = first; k < last; ++k) {
      const int64_t u = graph.neighbor(k);
      const int64_t id = graph.edge_id(k);
      if (u < 0 || u >= num_nodes_total || id < 0 || id >= num_edges_total) {
        int64_t expected = -1;
        bad.compare_exchange_strong(expected, k);
        return;
      }
    }
  });
  const int64_t k = bad.load();
  if (k >= 0) {
    const int64_t u = graph.neighbor(k);
    if (u < 0 || u >= num_nodes_total) {
      throw IndexError(fmt::format(
          "{}/indices.npy: indices[{}] = {} out of range for a partitioned graph with {} nodes",
          directory, k, u, num_nodes_total));
    }
    throw IndexError(
        fmt::format("{}/edge_ids.npy: edge_ids[{}] = {} out of range for a graph with {} edges",
                    directory, k, graph.edge_id(k), num_edges_total));
  }
}

// Whether every row's neighbors are in non-decreasing order of their (global) node time;
// IndexError naming a neighbor beyond node_time.
bool rows_sorted_by_node_time(const Csr& graph, const Array& node_time) {
  const int64_t* time = node_time.data<int64_t>();
  const int64_t count = node_time.numel();
  bool sorted = true;
  for (int64_t r = 0; r < graph.num_nodes(); ++r) {
    for (int64_t k = graph.begin(r); k < graph.end(r); ++k) {
      const int64_t neighbor = graph.neighbor(k);
      VOLLEY_REQUIRE(neighbor >= 0 && neighbor < count, IndexError,
                     "neighbor {} of row {} has no node time: node_time.npy has {} entries",
                     neighbor, r, count);
      if (k > graph.begin(r) && time[graph.neighbor(k - 1)] > time[neighbor]) sorted = false;
    }
  }
  return sorted;
}

}  // namespace

bool is_partitioned_directory(const std::string& path) {
  std::error_code error;
  return fs::is_regular_file(join_path(path, kManifestFile), error);
}

PartitionManifest read_partition_manifest(const std::string& directory) {
  return read_full_manifest(directory).manifest;
}

Partition load_partition(const std::string& directory, int64_t part,
                         const PartitionLoadOptions& options) {
  const FullManifest full = read_full_manifest(directory);
  const PartitionManifest& manifest = full.manifest;
  const int64_t num_parts = manifest.book.num_parts();
  VOLLEY_REQUIRE(part >= 0 && part < num_parts, IndexError,
                 "partition {} out of range: '{}' has {} partitions", part, directory, num_parts);
  const PartEntry& entry = full.parts[static_cast<size_t>(part)];
  const std::string part_dir = join_path(directory, entry.directory);
  read_recorded(join_path(part_dir, kDatasetManifestFile), entry.volley_json_crc32,
                "dataset manifest");
  const std::string part_path = join_path(part_dir, kPartFile);
  const std::string part_text = read_recorded(part_path, entry.part_json_crc32, "part manifest");
  const JsonChecker check(part_path);
  const Json json = check.parse(part_text);
  if (json.value("format", "") != kPartFormatName) {
    check.fail("format", fmt::format("\"{}\"", kPartFormatName),
               json.contains("format") ? JsonChecker::brief(json["format"]) : "none");
  }
  auto expect = [&](const char* key, int64_t expected) {
    const int64_t found = check.integer(json, key);
    if (found != expected) {
      check.fail(key, fmt::format("{} (as {} says)", expected, kManifestFile),
                 std::to_string(found));
    }
  };
  expect("part", part);
  expect("num_parts", num_parts);
  expect("first_node", manifest.book.begin(part));
  expect("num_nodes", manifest.book.size(part));
  expect("num_nodes_total", manifest.num_nodes);
  expect("num_edges_total", manifest.num_edges);

  Partition result;
  result.part = part;
  result.book = manifest.book;
  result.data = load_dataset(part_dir, {.memory_map = options.memory_map,
                                        .verify_checksums = options.verify_checksums,
                                        .validate_graph = false});
  const Csr& graph = result.data.graph;
  if (graph.num_nodes() != manifest.book.size(part) || graph.num_edges() != entry.num_edges) {
    throw IoError(fmt::format("{}: expected {} nodes and {} edges (as {} says), found {} and {}",
                              part_dir, manifest.book.size(part), entry.num_edges, kManifestFile,
                              graph.num_nodes(), graph.num_edges()));
  }
  if (options.validate_graph) {
    validate_part_graph(graph, part_dir, manifest.num_nodes, manifest.num_edges);
  }
  if (full.node_time) {
    result.node_time = open_checked(directory, *full.node_time, kManifestFile, options.memory_map,
                                    options.verify_checksums);
    result.node_time_rows_sorted = rows_sorted_by_node_time(graph, *result.node_time);
  }
  const Json& cache = check.require(json, "cache");
  if (!cache.is_null()) {
    const ArrayRef ids_ref =
        read_array_ref(check, check.require(cache, "ids", "cache."), "cache.ids.");
    const ArrayRef features_ref =
        read_array_ref(check, check.require(cache, "features", "cache."), "cache.features.");
    result.cache_ids =
        open_checked(part_dir, ids_ref, kPartFile, options.memory_map, options.verify_checksums);
    result.cache_features = open_checked(part_dir, features_ref, kPartFile, options.memory_map,
                                         options.verify_checksums);
    const int64_t first = manifest.book.begin(part);
    const int64_t last = manifest.book.end(part);
    const int64_t* ids = result.cache_ids->data<int64_t>();
    for (int64_t r = 0; r < result.cache_ids->numel(); ++r) {
      VOLLEY_REQUIRE(
          ids[r] >= 0 && ids[r] < manifest.num_nodes && (ids[r] < first || ids[r] >= last),
          IndexError,
          "{}/{}: cache_ids[{}] = {}: expected a node of another partition in [0, {}) "
          "outside [{}, {})",
          part_dir, kCacheIdsFile, r, ids[r], manifest.num_nodes, first, last);
    }
  }
  return result;
}

Array load_node_map(const std::string& directory, bool verify_checksums) {
  const FullManifest full = read_full_manifest(directory);
  return open_checked(directory, full.node_map, kManifestFile, /*memory_map=*/true,
                      verify_checksums);
}

Array invert_node_map(const Array& node_map) {
  VOLLEY_REQUIRE(node_map.dtype() == DType::kInt64 && node_map.ndim() == 1, ValueError,
                 "node map: expected int64[N], found {}", node_map.describe());
  const int64_t n = node_map.numel();
  const int64_t* forward = node_map.data<int64_t>();
  Array inverse = Array::empty(DType::kInt64, {n});
  int64_t* backward = inverse.data<int64_t>();
  std::fill(backward, backward + n, -1);
  for (int64_t v = 0; v < n; ++v) {
    const int64_t id = forward[v];
    VOLLEY_REQUIRE(id >= 0 && id < n && backward[id] < 0, ValueError,
                   "node map: entry {} = {} is {} (not a permutation of [0, {}))", v, id,
                   id < 0 || id >= n ? "out of range" : "a repeated new id", n);
    backward[id] = v;
  }
  return inverse;
}

std::vector<std::string> verify_partitioned_dataset(const std::string& directory) {
  std::vector<std::string> problems;
  FullManifest full;
  try {
    full = read_full_manifest(directory);
  } catch (const Error& error) {
    problems.push_back(error.what());
    return problems;
  }
  try {
    invert_node_map(load_node_map(directory, /*verify_checksums=*/true));
  } catch (const Error& error) {
    problems.push_back(error.what());
  }
  for (int64_t p = 0; p < full.manifest.book.num_parts(); ++p) {
    try {
      load_partition(directory, p,
                     {.memory_map = true, .verify_checksums = true, .validate_graph = true});
    } catch (const Error& error) {
      problems.push_back(error.what());
    }
  }
  return problems;
}

}  // namespace volley
