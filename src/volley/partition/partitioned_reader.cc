// Loading a partitioned directory of either kind (formats: partition.h, hetero_partition.h): the
// one reader (partitioned_directory.cc) checks partition.json, a part's manifests and its graph;
// here each kind's loader opens the part's dataset and reads the kind's own fields (version 1:
// quality, cache, node times; version 2: per-type quality, the time files).
#include <algorithm>
#include <filesystem>

#include "volley/core/files.h"
#include "volley/graph/io/npy.h"
#include "volley/partition/hetero_partition.h"
#include "volley/partition/internal/format.h"
#include "volley/partition/internal/partitioned_dataset.h"
#include "volley/partition/internal/partitioned_directory.h"
#include "volley/partition/partition.h"

namespace volley {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;
using namespace internal::partition_format;
using internal::PartitionedDirectory;

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

// The homogeneous view of a version-1 model: its one node type and edge type, and its own fields.
PartitionManifest homogeneous_manifest(const PartitionedDirectory& model) {
  internal::require_version(model, kFormatVersion);
  const JsonChecker check(join_path(model.directory, kManifestFile));
  const Json& json = model.json;
  PartitionManifest manifest;
  manifest.directory = model.directory;
  manifest.name = model.name;
  manifest.method = model.method;
  manifest.book = model.node_types.front().book;
  manifest.num_nodes = model.node_types.front().info.num_nodes;
  manifest.num_edges = model.num_edges.front();
  manifest.num_classes = json.contains("num_classes") ? check.integer(json, "num_classes") : 0;
  manifest.feature_dim = json.contains("feature_dim") ? check.integer(json, "feature_dim") : 0;
  for (size_t p = 0; p < model.parts.size(); ++p) {
    const std::string where = fmt::format("parts[{}].", p);
    manifest.part_edges.push_back(model.parts[p].num_edges.front());
    manifest.part_train.push_back(check.integer(json["parts"][p], "num_train", where));
    manifest.part_cached.push_back(check.integer(json["parts"][p], "num_cached", where));
  }
  manifest.quality = read_quality(check, json);
  manifest.json = model.text;
  return manifest;
}

// The typed view of a version-2 model, with its per-type quality figures.
HeteroPartitionManifest typed_manifest(const PartitionedDirectory& model) {
  internal::require_version(model, kTypedFormatVersion);
  const JsonChecker check(join_path(model.directory, kManifestFile));
  HeteroPartitionManifest manifest;
  manifest.directory = model.directory;
  manifest.name = model.name;
  manifest.method = model.method;
  manifest.num_parts = model.num_parts;
  manifest.edge_types = model.edge_types;
  manifest.num_edges = model.num_edges;
  for (size_t t = 0; t < model.node_types.size(); ++t) {
    manifest.node_types.push_back(model.node_types[t].info);
    manifest.books.push_back(model.node_types[t].book);
    const Json& type = model.json["node_types"][t];
    if (type.contains("balance") && type["balance"].is_number()) {
      manifest.quality.node_balance.push_back(type["balance"].get<double>());
    }
  }
  for (size_t r = 0; r < model.edge_types.size(); ++r) {
    const Json& type = model.json["edge_types"][r];
    manifest.quality.cut_edges_per_type.push_back(
        type.contains("cut_edges")
            ? check.integer(type, "cut_edges", fmt::format("edge_types[{}].", r))
            : 0);
  }
  if (model.json.contains("quality") && model.json["quality"].is_object()) {
    const Json& quality = model.json["quality"];
    manifest.quality.cut_edges = check.integer(quality, "cut_edges", "quality.");
    manifest.quality.edge_cut_fraction =
        check.optional_number(quality, "edge_cut_fraction").value_or(0);
    manifest.quality.edge_balance = check.optional_number(quality, "edge_balance").value_or(1);
  }
  manifest.json = model.text;
  return manifest;
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

// node_time.npy of a version-1 directory (int64 [N] by new id), when partition.json lists it.
void load_node_time(const PartitionedDirectory& model, const PartitionLoadOptions& options,
                    Partition& result) {
  if (!model.json.contains("node_time")) return;
  const JsonChecker check(join_path(model.directory, kManifestFile));
  const internal::ArrayRef ref =
      internal::read_array_ref(check, model.json["node_time"], "node_time.");
  const int64_t n = model.node_types.front().info.num_nodes;
  if (ref.dtype != DType::kInt64 || ref.shape != std::vector<int64_t>{n}) {
    check.fail("node_time", fmt::format("int64 [{}]", n),
               fmt::format("{} {}", dtype_name(ref.dtype), npy_shape_text(ref.shape)));
  }
  result.node_time = internal::open_checked(model.directory, ref, kManifestFile, options.memory_map,
                                            options.verify_checksums);
  result.node_time_rows_sorted = rows_sorted_by_node_time(result.data.graph, *result.node_time);
}

// part.json's cache (cache_ids.npy, cache_features.npy), when the part has one.
void load_cache(const internal::OpenedPart& opened, const PartitionLoadOptions& options,
                int64_t num_nodes, Partition& result) {
  const JsonChecker check(join_path(opened.directory, kPartFile));
  const Json& cache = check.require(opened.json, "cache");
  if (cache.is_null()) return;
  auto open = [&](const char* key) {
    const internal::ArrayRef ref = internal::read_array_ref(
        check, check.require(cache, key, "cache."), fmt::format("cache.{}.", key));
    return internal::open_checked(opened.directory, ref, kPartFile, options.memory_map,
                                  options.verify_checksums);
  };
  result.cache_ids = open("ids");
  result.cache_features = open("features");
  const int64_t first = result.book.begin(result.part);
  const int64_t last = result.book.end(result.part);
  const int64_t* ids = result.cache_ids->data<int64_t>();
  for (int64_t r = 0; r < result.cache_ids->numel(); ++r) {
    VOLLEY_REQUIRE(ids[r] >= 0 && ids[r] < num_nodes && (ids[r] < first || ids[r] >= last),
                   IndexError,
                   "{}/{}: cache_ids[{}] = {}: expected a node of another partition in [0, {}) "
                   "outside [{}, {})",
                   opened.directory, kCacheIdsFile, r, ids[r], num_nodes, first, last);
  }
}

}  // namespace

bool is_partitioned_directory(const std::string& path) {
  std::error_code error;
  return fs::is_regular_file(join_path(path, kManifestFile), error);
}

bool is_hetero_partitioned_directory(const std::string& path) {
  try {
    const std::string text = read_file_text(join_path(path, kManifestFile), "partition manifest");
    return Json::parse(text).value("version", int64_t{0}) == kTypedFormatVersion;
  } catch (const std::exception&) {
    return false;
  }
}

PartitionManifest read_partition_manifest(const std::string& directory) {
  return homogeneous_manifest(internal::read_partitioned_directory(directory));
}

std::string read_partition_manifest_text(const std::string& directory) {
  const PartitionedDirectory model = internal::read_partitioned_directory(directory);
  model.version == kTypedFormatVersion ? (void)typed_manifest(model)
                                       : (void)homogeneous_manifest(model);
  return model.text;
}

HeteroPartitionManifest read_hetero_partition_manifest(const std::string& directory) {
  return typed_manifest(internal::read_partitioned_directory(directory));
}

const PartitionBook& HeteroPartitionManifest::book(std::string_view type) const {
  for (size_t t = 0; t < node_types.size(); ++t) {
    if (node_types[t].name == type) return books[t];
  }
  std::string known;
  for (const NodeTypeInfo& info : node_types) known += (known.empty() ? "" : ", ") + info.name;
  throw ValueError(fmt::format("unknown node type '{}' (node types: {})", type, known));
}

Partition load_partition(const std::string& directory, int64_t part,
                         const PartitionLoadOptions& options) {
  const PartitionedDirectory model = internal::read_partitioned_directory(directory);
  internal::require_version(model, kFormatVersion);
  const internal::OpenedPart opened = internal::open_part(model, part);
  Partition result;
  result.part = part;
  result.book = model.node_types.front().book;
  result.data = load_dataset(opened.directory, {.memory_map = options.memory_map,
                                                .verify_checksums = options.verify_checksums,
                                                .validate_graph = false});
  const Csr& graph = result.data.graph;
  internal::check_part_graph(model, part, opened.directory, {{"", graph.num_nodes()}},
                             {{EdgeType{}, &graph}}, options.validate_graph);
  load_node_time(model, options, result);
  load_cache(opened, options, model.node_types.front().info.num_nodes, result);
  return result;
}

HeteroPartition load_hetero_partition(const std::string& directory, int64_t part,
                                      const PartitionLoadOptions& options) {
  const PartitionedDirectory model = internal::read_partitioned_directory(directory);
  internal::require_version(model, kTypedFormatVersion);
  const internal::OpenedPart opened = internal::open_part(model, part);
  HeteroPartition result;
  result.part = part;
  result.manifest = typed_manifest(model);
  result.data = load_hetero_dataset(opened.directory, {.memory_map = options.memory_map,
                                                       .verify_checksums = options.verify_checksums,
                                                       .validate_graph = false});
  const HeteroGraph& graph = result.data.graph;
  std::vector<std::pair<EdgeType, const Csr*>> edges;
  for (int r = 0; r < graph.num_edge_types(); ++r) {
    edges.emplace_back(graph.edge_types()[static_cast<size_t>(r)], &graph.edges(r));
  }
  internal::check_part_graph(model, part, opened.directory, graph.node_types(), edges,
                             options.validate_graph);
  return result;
}

Array load_node_map(const std::string& directory, std::string_view node_type,
                    bool verify_checksums) {
  const PartitionedDirectory model = internal::read_partitioned_directory(directory);
  return internal::load_node_map(model, model.node_type_index(node_type), verify_checksums);
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

std::vector<std::string> verify_partitioned_dataset(const std::string& directory) {
  std::vector<std::string> problems;
  auto attempt = [&](const auto& check) {
    try {
      check();
    } catch (const Error& error) {
      problems.emplace_back(error.what());
    }
  };
  PartitionedDirectory model;
  attempt([&] { model = internal::read_partitioned_directory(directory); });
  if (!problems.empty()) return problems;
  for (size_t t = 0; t < model.node_types.size(); ++t) {
    attempt([&] { invert_node_map(internal::load_node_map(model, t, /*verify_checksums=*/true)); });
  }
  const PartitionLoadOptions all{
      .memory_map = true, .verify_checksums = true, .validate_graph = true};
  const bool typed = model.version == kTypedFormatVersion;
  for (int64_t p = 0; p < model.num_parts; ++p) {
    attempt([&] {
      typed ? (void)load_hetero_partition(directory, p, all)
            : (void)load_partition(directory, p, all);
    });
  }
  if (typed) attempt([&] { load_hetero_partition_times(typed_manifest(model)); });
  return problems;
}

}  // namespace volley
