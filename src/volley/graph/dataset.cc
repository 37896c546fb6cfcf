#include "volley/graph/dataset.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "volley/core/files.h"
#include "volley/graph/internal/value_checks.h"
#include "volley/graph/io/npy.h"
#include "volley/graph/json_checker.h"

namespace volley {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

constexpr char kFormatName[] = "volley-dataset";
constexpr int64_t kFormatVersion = 1;
constexpr char kManifestFile[] = "volley.json";
using graph_internal::manifest_path;

// The arrays of the format, in manifest order.
constexpr const char* kFields[] = {"indptr",    "indices",    "edge_ids",      "weights",
                                   "features",  "labels",     "train_idx",     "val_idx",
                                   "test_idx",  "node_time",  "edge_time",     "train_edges",
                                   "val_edges", "test_edges", "val_neg_edges", "test_neg_edges"};

bool is_known_field(const std::string& field) {
  return std::find(std::begin(kFields), std::end(kFields), field) != std::end(kFields);
}

size_t field_rank(const std::string& field) {
  return static_cast<size_t>(std::find(std::begin(kFields), std::end(kFields), field) -
                             std::begin(kFields));
}

// "" when an array of `dtype` and `shape` suits `field` in a graph of `num_nodes` nodes and
// `num_edges` edges; otherwise "FIELD-PART: expected X, found Y".
std::string shape_problem(const std::string& field, DType dtype, const std::vector<int64_t>& shape,
                          int64_t num_nodes, int64_t num_edges) {
  auto dtype_must_be = [&](std::initializer_list<DType> allowed) -> std::string {
    if (std::find(allowed.begin(), allowed.end(), dtype) != allowed.end()) return "";
    std::vector<std::string_view> names;
    for (DType d : allowed) names.push_back(dtype_name(d));
    return fmt::format("dtype: expected {}, found {}", fmt::join(names, " or "), dtype_name(dtype));
  };
  auto shape_must_be = [&](std::vector<int64_t> expected) -> std::string {
    if (shape == expected) return "";
    return fmt::format("shape: expected {}, found {}", npy_shape_text(expected),
                       npy_shape_text(shape));
  };
  std::string problem;
  if (field == "indptr") {
    problem = dtype_must_be({DType::kInt64});
    if (problem.empty()) problem = shape_must_be({num_nodes + 1});
  } else if (field == "indices") {
    problem = dtype_must_be({DType::kInt32, DType::kInt64});
    if (problem.empty()) problem = shape_must_be({num_edges});
  } else if (field == "edge_ids") {
    problem = dtype_must_be({DType::kInt64});
    if (problem.empty()) problem = shape_must_be({num_edges});
  } else if (field == "node_time" || field == "edge_time") {
    problem = dtype_must_be({DType::kInt64});
    if (problem.empty()) problem = shape_must_be({field == "node_time" ? num_nodes : num_edges});
  } else if (field == "weights") {
    problem = dtype_must_be({DType::kFloat32});
    if (problem.empty()) problem = shape_must_be({num_edges});
  } else if (field == "features") {
    if (shape.size() != 2 || shape[0] != num_nodes) {
      problem = fmt::format("shape: expected [{}, D] (one row per node), found {}", num_nodes,
                            npy_shape_text(shape));
    }
  } else if (field == "labels") {
    problem = dtype_must_be({DType::kInt64});
    if (problem.empty()) problem = shape_must_be({num_nodes});
  } else if (field.ends_with("_edges")) {  // a link split's (src, dst) pairs
    problem = dtype_must_be({DType::kInt64});
    if (problem.empty() && (shape.size() != 2 || shape[0] != 2)) {
      problem =
          fmt::format("shape: expected [2, M] (src, dst) pairs, found {}", npy_shape_text(shape));
    }
  } else {  // train_idx, val_idx, test_idx
    problem = dtype_must_be({DType::kInt64});
    if (problem.empty() && shape.size() != 1) {
      problem =
          fmt::format("shape: expected a 1-d array of node ids, found {}", npy_shape_text(shape));
    }
  }
  return problem;
}

// Rethrows `error` as the same kind of Error with `prefix` before its message.
[[noreturn]] void rethrow_with_prefix(const Error& error, const std::string& prefix) {
  internal::throw_error(error.kind(), prefix + error.what());
}

// --- the manifest ---------------------------------------------------------------------------

struct ArrayEntry {
  std::string field;
  std::string file;
  DType dtype;
  std::vector<int64_t> shape;
  uint32_t crc32;
};

struct Manifest {
  std::string path;  // of volley.json, for messages
  std::string name;
  int64_t num_nodes = 0;
  int64_t num_edges = 0;
  int64_t num_classes = 0;
  Orientation orientation = Orientation::kIn;
  std::vector<ArrayEntry> arrays;

  const ArrayEntry* find(const std::string& field) const {
    for (const auto& entry : arrays) {
      if (entry.field == field) return &entry;
    }
    return nullptr;
  }
};

class ManifestReader {
 public:
  explicit ManifestReader(std::string path) : path_(path), check_(std::move(path)) {}

  Manifest read(const std::string& directory) {
    const Json json = graph_internal::read_manifest_json(directory, check_);

    Manifest manifest;
    manifest.path = path_;
    const Json& format = require(json, "format");
    if (format != kFormatName)
      fail("format", fmt::format("\"{}\"", kFormatName), JsonChecker::brief(format));
    const int64_t version = integer(json, "version");
    if (version == 2) {  // hetero_dataset.h
      fail("version",
           "1 (a homogeneous dataset; version 2 is a heterogeneous one: read it with "
           "load_hetero_dataset, or volley.load_dataset in Python)",
           "2");
    }
    if (version != kFormatVersion) {
      fail("version",
           fmt::format("{} (this Volley reads version {})", kFormatVersion, kFormatVersion),
           std::to_string(version));
    }
    manifest.name = fs::path(directory).lexically_normal().filename().string();
    if (json.contains("name")) {
      if (!json["name"].is_string()) fail("name", "a string", JsonChecker::brief(json["name"]));
      manifest.name = json["name"].get<std::string>();
    }
    manifest.num_nodes = integer(json, "num_nodes");
    manifest.num_edges = integer(json, "num_edges");
    manifest.num_classes = json.contains("num_classes") ? integer(json, "num_classes") : 0;
    if (json.contains("orientation")) {
      const Json& orientation = json["orientation"];
      if (orientation == "in") {
        manifest.orientation = Orientation::kIn;
      } else if (orientation == "out") {
        manifest.orientation = Orientation::kOut;
      } else {
        fail("orientation", "\"in\" or \"out\"", JsonChecker::brief(orientation));
      }
    }
    const Json& arrays = require(json, "arrays");
    if (!arrays.is_object()) fail("arrays", "an object", JsonChecker::brief(arrays));
    for (const auto& [field, entry] : arrays.items()) {
      manifest.arrays.push_back(read_entry(field, entry));
    }
    // Checked in the format's order, so that the first problem reported does not depend on how
    // the JSON object was ordered.
    std::sort(manifest.arrays.begin(), manifest.arrays.end(),
              [](const ArrayEntry& a, const ArrayEntry& b) {
                return field_rank(a.field) < field_rank(b.field);
              });
    for (const char* field : {"indptr", "indices"}) {
      if (manifest.find(field) == nullptr) {
        fail(fmt::format("arrays.{}", field), "an entry (it is required)", "none");
      }
    }
    return manifest;
  }

 private:
  [[noreturn]] void fail(const std::string& field, std::string_view expected,
                         std::string_view found) const {
    check_.fail(field, expected, found);
  }
  const Json& require(const Json& object, const std::string& key,
                      const std::string& where = "") const {
    return check_.require(object, key, where);
  }
  int64_t integer(const Json& object, const std::string& key, const std::string& where = "") const {
    return check_.integer(object, key, where);
  }

  ArrayEntry read_entry(const std::string& field, const Json& json) const {
    const std::string where = fmt::format("arrays.{}.", field);
    if (!is_known_field(field)) {
      fail(fmt::format("arrays.{}", field), fmt::format("one of {}", fmt::join(kFields, ", ")),
           fmt::format("'{}'", field));
    }
    if (!json.is_object())
      fail(where.substr(0, where.size() - 1), "an object", JsonChecker::brief(json));
    ArrayEntry entry;
    entry.field = field;
    const Json& file = require(json, "file", where);
    if (!file.is_string() || file.get<std::string>().empty() ||
        file.get<std::string>().find('/') != std::string::npos ||
        file.get<std::string>().find('\0') != std::string::npos ||
        file.get<std::string>().starts_with(".")) {
      fail(where + "file", "a file name inside the dataset directory", JsonChecker::brief(file));
    }
    entry.file = file.get<std::string>();
    const Json& dtype = require(json, "dtype", where);
    try {
      if (!dtype.is_string()) throw ValueError("not a string");
      entry.dtype = dtype_from_name(dtype.get<std::string>());
    } catch (const ValueError&) {
      fail(where + "dtype", "a dtype name such as \"int64\"", JsonChecker::brief(dtype));
    }
    const Json& shape = require(json, "shape", where);
    if (!shape.is_array()) fail(where + "shape", "a list of sizes", JsonChecker::brief(shape));
    for (const Json& extent : shape) {
      if (!extent.is_number_integer() || extent.get<int64_t>() < 0) {
        fail(where + "shape", "a list of non-negative integers", JsonChecker::brief(shape));
      }
      entry.shape.push_back(extent.get<int64_t>());
    }
    const Json& crc = require(json, "crc32", where);
    const std::string crc_text = crc.is_string() ? crc.get<std::string>() : "";
    const auto [end, error] =
        std::from_chars(crc_text.data(), crc_text.data() + crc_text.size(), entry.crc32, 16);
    if (crc_text.size() != 8 || error != std::errc() || end != crc_text.data() + 8) {
      fail(where + "crc32", "8 hex digits", JsonChecker::brief(crc));
    }
    return entry;
  }

  std::string path_;
  JsonChecker check_;
};

// Reads one array and checks it against its manifest entry (dtype and shape from the .npy
// header; checksum when asked).
Array open_array(const std::string& directory, const ArrayEntry& entry, bool memory_map,
                 bool verify_checksum) {
  return read_npy_expecting((fs::path(directory) / entry.file).string(),
                            {entry.dtype, entry.shape, entry.crc32}, kManifestFile, memory_map,
                            verify_checksum);
}

// A read-only view of `array` (a resident topology array keeps the read-only contract of a
// mapped dataset).
Array read_only(Array array) {
  const Buffer& bytes = array.buffer();
  auto owner = std::make_shared<Buffer>(bytes);
  Buffer view = Buffer::borrow(bytes.data(), bytes.size(), std::move(owner), /*writable=*/false,
                               Location::kHost);
  return Array(std::move(view), array.dtype(), array.shape());
}

bool is_topology(const std::string& field) {
  return field == "indptr" || field == "indices" || field == "edge_ids" || field == "weights" ||
         field == "node_time" || field == "edge_time";
}

// Whether the topology arrays are read into memory rather than mapped (see DatasetLoadOptions).
bool topology_resident(const Manifest& manifest, const DatasetLoadOptions& options) {
  if (!options.memory_map) return true;
  size_t budget = options.resident_graph_bytes;
  if (budget == static_cast<size_t>(-1)) {
    const long pages = sysconf(_SC_PHYS_PAGES);
    const long page_bytes = sysconf(_SC_PAGESIZE);
    budget = pages > 0 && page_bytes > 0
                 ? static_cast<size_t>(pages) * static_cast<size_t>(page_bytes) / 4
                 : 0;
  }
  size_t bytes = 0;
  for (const ArrayEntry& entry : manifest.arrays) {
    if (!is_topology(entry.field)) continue;
    size_t count = 1;
    for (const int64_t extent : entry.shape)
      count *= static_cast<size_t>(std::max<int64_t>(0, extent));
    bytes += count * dtype_size(entry.dtype);
  }
  return bytes <= budget;
}

}  // namespace

namespace graph_internal {

std::string manifest_path(const std::string& directory) {
  return (fs::path(directory) / kManifestFile).string();
}

Json read_manifest_json(const std::string& directory, const JsonChecker& check) {
  const std::string& path = check.path();
  require_regular_file(path, "dataset manifest");
  std::ifstream stream(path);
  if (!stream) {
    throw IoError(fmt::format(
        "{}: cannot open the dataset manifest: {} (is '{}' a Volley dataset directory?)", path,
        internal::errno_text(errno), directory));
  }
  std::stringstream text;
  text << stream.rdbuf();
  return check.parse(text.str());
}

std::string value_problem(std::string_view field, const Array& array, int64_t num_nodes,
                          int64_t num_classes) {
  if (field == "labels") {
    const int64_t* label = array.data<int64_t>();
    for (int64_t i = 0; i < array.numel(); ++i) {
      if (label[i] < -1 || label[i] >= std::max<int64_t>(num_classes, 0)) {
        return fmt::format(
            "labels[{}] = {}: expected a class in [0, {}) (num_classes) or -1 (unlabelled)", i,
            label[i], num_classes);
      }
    }
  } else if (field.ends_with("_idx") || field.ends_with("_edges")) {
    const int64_t* ids = array.data<int64_t>();
    const int64_t columns = field.ends_with("_edges") ? array.dim(1) : 0;
    for (int64_t i = 0; i < array.numel(); ++i) {
      if (ids[i] < 0 || ids[i] >= num_nodes) {
        const std::string at =
            columns > 0 ? fmt::format("{}, {}", i / columns, i % columns) : std::to_string(i);
        return fmt::format("{}[{}] = {} out of range for {} nodes", field, at, ids[i], num_nodes);
      }
    }
  }
  return "";
}

}  // namespace graph_internal

Dataset load_dataset(const std::string& directory, const DatasetLoadOptions& options) {
  const Manifest manifest = ManifestReader(manifest_path(directory)).read(directory);
  const int64_t n = manifest.num_nodes;
  const int64_t e = manifest.num_edges;
  const bool resident = topology_resident(manifest, options);
  std::map<std::string, Array> arrays;
  for (const ArrayEntry& entry : manifest.arrays) {
    const std::string problem = shape_problem(entry.field, entry.dtype, entry.shape, n, e);
    if (!problem.empty()) {
      throw ValueError(fmt::format("{}: arrays.{}.{} (num_nodes {}, num_edges {})", manifest.path,
                                   entry.field, problem, n, e));
    }
    const bool read_in = options.memory_map && resident && is_topology(entry.field);
    Array array =
        open_array(directory, entry, options.memory_map && !read_in, options.verify_checksums);
    if (read_in) array = read_only(std::move(array));
    const std::string values =
        graph_internal::value_problem(entry.field, array, n, manifest.num_classes);
    if (!values.empty()) {
      throw ValueError(fmt::format("{}: {}", (fs::path(directory) / entry.file).string(), values));
    }
    arrays.emplace(entry.field, std::move(array));
  }
  auto take = [&](const char* field) -> std::optional<Array> {
    auto it = arrays.find(field);
    if (it == arrays.end()) return std::nullopt;
    return it->second;
  };

  Dataset dataset;
  dataset.name = manifest.name;
  try {
    dataset.graph = Csr::from_arrays(*take("indptr"), *take("indices"), take("edge_ids"),
                                     take("weights"), manifest.orientation, options.validate_graph);
    if (take("node_time") || take("edge_time")) {
      dataset.graph = dataset.graph.with_times(take("node_time"), take("edge_time"));
    }
  } catch (const Error& error) {
    rethrow_with_prefix(error, fmt::format("{}: graph: ", directory));
  }
  dataset.features = take("features");
  dataset.labels = take("labels");
  dataset.train_idx = take("train_idx");
  dataset.val_idx = take("val_idx");
  dataset.test_idx = take("test_idx");
  dataset.train_edges = take("train_edges");
  dataset.val_edges = take("val_edges");
  dataset.test_edges = take("test_edges");
  dataset.val_neg_edges = take("val_neg_edges");
  dataset.test_neg_edges = take("test_neg_edges");
  dataset.num_classes = manifest.num_classes;
  return dataset;
}

DatasetCheck verify_dataset(const std::string& directory) {
  DatasetCheck check;
  Manifest manifest;
  try {
    manifest = ManifestReader(manifest_path(directory)).read(directory);
  } catch (const Error& error) {
    check.problems.push_back(error.what());
    return check;
  }
  for (const ArrayEntry& entry : manifest.arrays) {
    const std::string problem = shape_problem(entry.field, entry.dtype, entry.shape,
                                              manifest.num_nodes, manifest.num_edges);
    if (!problem.empty()) {
      check.problems.push_back(
          fmt::format("{}: arrays.{}.{}", manifest.path, entry.field, problem));
      continue;
    }
    try {
      const Array array = open_array(directory, entry, /*memory_map=*/true, /*verify=*/true);
      const std::string values = graph_internal::value_problem(
          entry.field, array, manifest.num_nodes, manifest.num_classes);
      if (!values.empty()) {
        check.problems.push_back(
            fmt::format("{}: {}", (fs::path(directory) / entry.file).string(), values));
      }
    } catch (const Error& error) {
      check.problems.push_back(error.what());
    }
  }
  if (check.ok()) {
    // The files match their manifest; now the graph itself (monotone indptr, ids in range).
    try {
      load_dataset(directory,
                   {.memory_map = true, .verify_checksums = false, .validate_graph = true});
    } catch (const Error& error) {
      check.problems.push_back(error.what());
    }
  }
  return check;
}

bool is_dataset_directory(const std::string& path) {
  std::error_code error;
  return fs::is_regular_file(fs::path(path) / kManifestFile, error);
}

// --- writing --------------------------------------------------------------------------------

DatasetWriter::DatasetWriter(std::string directory, std::string name)
    : directory_(std::move(directory)), name_(std::move(name)) {
  std::error_code error;
  fs::create_directories(directory_, error);
  if (error || !fs::is_directory(directory_)) {
    throw IoError(fmt::format("cannot create the dataset directory '{}': {}", directory_,
                              error ? error.message() : "a file of that name exists"));
  }
  // No manifest until finish(): a half-written directory never looks complete.
  fs::remove(fs::path(directory_) / kManifestFile, error);
  if (error) {
    throw IoError(
        fmt::format("cannot remove the old manifest in '{}': {}", directory_, error.message()));
  }
}

std::string DatasetWriter::path_of(const std::string& field) const {
  VOLLEY_REQUIRE(is_known_field(field), ValueError,
                 "DatasetWriter: unknown array '{}' (expected one of {})", field,
                 fmt::join(kFields, ", "));
  return (fs::path(directory_) / (field + ".npy")).string();
}

void DatasetWriter::add_array(const std::string& field, const Array& array) {
  const std::string path = path_of(field);
  VOLLEY_REQUIRE(array.defined(), ValueError, "DatasetWriter: array '{}' is undefined", field);
  VOLLEY_REQUIRE(array.buffer().host_accessible(), ValueError,
                 "DatasetWriter: array '{}' lives in {} memory; copy it to the host first", field,
                 location_name(array.buffer().location()));
  NpyWriter writer(path, array.dtype(), array.shape());
  writer.write(array.raw_data(), array.nbytes());
  writer.close();
  add_written(field, array.dtype(), array.shape(), writer.crc32());
}

void DatasetWriter::add_written(const std::string& field, DType dtype, std::vector<int64_t> shape,
                                uint32_t crc32) {
  path_of(field);  // checks the name
  const bool duplicate = std::any_of(entries_.begin(), entries_.end(),
                                     [&](const Entry& entry) { return entry.field == field; });
  VOLLEY_REQUIRE(!duplicate, ValueError, "DatasetWriter: array '{}' was added twice", field);
  entries_.push_back({field, dtype, std::move(shape), crc32});
}

void DatasetWriter::finish(int64_t num_nodes, int64_t num_edges, int64_t num_classes,
                           Orientation orientation) {
  VOLLEY_REQUIRE(num_nodes >= 0 && num_edges >= 0 && num_classes >= 0, ValueError,
                 "DatasetWriter: counts must be >= 0, got {} nodes, {} edges, {} classes",
                 num_nodes, num_edges, num_classes);
  Json arrays = Json::object();
  for (const char* field : kFields) {
    const auto it = std::find_if(entries_.begin(), entries_.end(),
                                 [&](const Entry& entry) { return entry.field == field; });
    if (it == entries_.end()) {
      VOLLEY_REQUIRE(std::string_view(field) != "indptr" && std::string_view(field) != "indices",
                     ValueError, "DatasetWriter('{}'): the required array '{}' was not added",
                     directory_, field);
      // A file left over from an earlier dataset in this directory would only confuse.
      std::error_code ignored;
      fs::remove(path_of(field), ignored);
      continue;
    }
    const std::string problem = shape_problem(field, it->dtype, it->shape, num_nodes, num_edges);
    VOLLEY_REQUIRE(problem.empty(), ValueError,
                   "DatasetWriter('{}'): {}: {} (num_nodes {}, num_edges {})", directory_, field,
                   problem, num_nodes, num_edges);
    arrays[field] = {{"file", std::string(field) + ".npy"},
                     {"dtype", dtype_name(it->dtype)},
                     {"shape", it->shape},
                     {"crc32", crc32_hex(it->crc32)}};
  }
  const Json manifest = {{"format", kFormatName},
                         {"version", kFormatVersion},
                         {"name", name_},
                         {"num_nodes", num_nodes},
                         {"num_edges", num_edges},
                         {"num_classes", num_classes},
                         {"orientation", orientation_name(orientation)},
                         {"arrays", arrays}};
  // Written beside, then renamed: the manifest appears complete or not at all.
  write_file_atomically(manifest_path(directory_), manifest.dump(2) + "\n");
}

void save_dataset(const Dataset& dataset, const std::string& directory) {
  const Csr& graph = dataset.graph;
  VOLLEY_REQUIRE(graph.indptr().defined(), ValueError,
                 "save_dataset('{}'): the dataset has no graph", directory);
  const int64_t n = graph.num_nodes();
  const int64_t e = graph.num_edges();
  std::vector<std::pair<std::string, Array>> arrays = {{"indptr", graph.indptr()},
                                                       {"indices", graph.indices()}};
  auto add = [&](const char* field, const std::optional<Array>& array) {
    if (array.has_value()) arrays.emplace_back(field, *array);
  };
  add("edge_ids", graph.edge_ids());
  add("weights", graph.weights());
  add("features", dataset.features);
  add("labels", dataset.labels);
  add("train_idx", dataset.train_idx);
  add("val_idx", dataset.val_idx);
  add("test_idx", dataset.test_idx);
  add("node_time", graph.node_time());
  add("edge_time", graph.edge_time());
  add("train_edges", dataset.train_edges);
  add("val_edges", dataset.val_edges);
  add("test_edges", dataset.test_edges);
  add("val_neg_edges", dataset.val_neg_edges);
  add("test_neg_edges", dataset.test_neg_edges);
  // Check everything before writing anything: never write what load_dataset would refuse.
  for (const auto& [field, array] : arrays) {
    std::string problem = shape_problem(field, array.dtype(), array.shape(), n, e);
    if (problem.empty() && array.buffer().host_accessible()) {
      problem = graph_internal::value_problem(field, array, n, dataset.num_classes);
    }
    VOLLEY_REQUIRE(problem.empty(), ValueError, "save_dataset('{}'): {}: {}", directory, field,
                   problem);
  }
  DatasetWriter writer(directory, dataset.name);
  for (const auto& [field, array] : arrays) writer.add_array(field, array);
  writer.finish(n, e, dataset.num_classes, graph.orientation());
}

}  // namespace volley
