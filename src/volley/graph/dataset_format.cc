// The dataset directory format's one core (internal/dataset_format.h): the field table, the
// manifest reader and writer of both versions, the array opener and verify.
#include "volley/graph/internal/dataset_format.h"

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "volley/core/files.h"

namespace volley::graph_internal {
namespace {

namespace fs = std::filesystem;
using Json = JsonChecker::Json;

constexpr char kFormatName[] = "volley-dataset";
constexpr char kManifestFile[] = "volley.json";

struct FieldSpec {
  const char* name;
  OwnerKind kind;
  bool in_version_2;  // node_time, edge_time and the link split are version 1's only
};

// The arrays of the format, in manifest order.
constexpr FieldSpec kFields[] = {
    {"indptr", OwnerKind::kEdge, true},         {"indices", OwnerKind::kEdge, true},
    {"edge_ids", OwnerKind::kEdge, true},       {"weights", OwnerKind::kEdge, true},
    {"features", OwnerKind::kNode, true},       {"labels", OwnerKind::kNode, true},
    {"train_idx", OwnerKind::kNode, true},      {"val_idx", OwnerKind::kNode, true},
    {"test_idx", OwnerKind::kNode, true},       {"node_time", OwnerKind::kEdge, false},
    {"edge_time", OwnerKind::kEdge, false},     {"train_edges", OwnerKind::kNode, false},
    {"val_edges", OwnerKind::kNode, false},     {"test_edges", OwnerKind::kNode, false},
    {"val_neg_edges", OwnerKind::kNode, false}, {"test_neg_edges", OwnerKind::kNode, false}};

// Whether `spec` is an array of a `kind` owner in `version` (version 1: of its one flat list).
bool in(const FieldSpec& spec, int64_t version, OwnerKind kind) {
  return version == 1 || (spec.in_version_2 && spec.kind == kind);
}

// The position of `field` in kFields (std::size(kFields) when unknown).
size_t rank_of(std::string_view field) {
  return static_cast<size_t>(
      std::find_if(std::begin(kFields), std::end(kFields),
                   [&](const FieldSpec& spec) { return field == spec.name; }) -
      std::begin(kFields));
}

bool known(std::string_view field, int64_t version, OwnerKind kind) {
  const size_t rank = rank_of(field);
  return rank < std::size(kFields) && in(kFields[rank], version, kind);
}

std::string field_list(int64_t version, OwnerKind kind) {
  std::vector<std::string_view> names;
  for (const FieldSpec& spec : kFields) {
    if (in(spec, version, kind)) names.push_back(spec.name);
  }
  return fmt::format("{}", fmt::join(names, ", "));
}

// Version 1: the format's order; version 2: by owner, then the format's order.
void sort_entries(Manifest& manifest) {
  const bool by_owner = manifest.version != 1;
  std::stable_sort(
      manifest.arrays.begin(), manifest.arrays.end(),
      [&](const ArrayEntry& a, const ArrayEntry& b) {
        const size_t owner_a = by_owner ? a.owner : 0, owner_b = by_owner ? b.owner : 0;
        return std::pair(owner_a, rank_of(a.field)) < std::pair(owner_b, rank_of(b.field));
      });
}

// " (num_nodes N, num_edges E)" and the like: the counts a shape was checked against.
std::string counts_text(const Manifest& manifest, const Owner& owner) {
  if (manifest.version == 1) {
    return fmt::format(" (num_nodes {}, num_edges {})", owner.rows, owner.num_edges);
  }
  if (owner.kind == OwnerKind::kNode) return fmt::format(" (num_nodes {})", owner.rows);
  return fmt::format(" ({} nodes of type {}, num_edges {})", owner.rows, owner.edge_type.dst,
                     owner.num_edges);
}

// --- reading the manifest -------------------------------------------------------------------

// One "arrays" object of `json` into `manifest.arrays`: names (`kind`'s fields of the version;
// version 1: any, its owner by kind), file, dtype, shape and crc32.
void read_arrays(const JsonChecker& check, const Json& json, const std::string& where,
                 std::optional<size_t> owner, Manifest& manifest) {
  const OwnerKind kind = owner ? manifest.owners[*owner].kind : OwnerKind::kNode;
  const Json& arrays = check.require(json, "arrays", where);
  if (!arrays.is_object()) check.fail(where + "arrays", "an object", JsonChecker::brief(arrays));
  for (const auto& [field, value] : arrays.items()) {
    const std::string at = fmt::format("{}arrays.{}", where, field);
    if (!known(field, manifest.version, kind)) {
      check.fail(at, "one of " + field_list(manifest.version, kind), fmt::format("'{}'", field));
    }
    if (!value.is_object()) check.fail(at, "an object", JsonChecker::brief(value));
    ArrayEntry entry;
    entry.owner = owner ? *owner : (kFields[rank_of(field)].kind == OwnerKind::kEdge ? 0 : 1);
    entry.field = field;
    const Json& file = check.require(value, "file", at + ".");
    if (!file.is_string() || file.get<std::string>().empty() ||
        file.get<std::string>().find('/') != std::string::npos ||
        file.get<std::string>().find('\0') != std::string::npos ||
        file.get<std::string>().starts_with(".")) {
      check.fail(at + ".file", "a file name inside the dataset directory",
                 JsonChecker::brief(file));
    }
    entry.file = file.get<std::string>();
    const Json& dtype = check.require(value, "dtype", at + ".");
    try {
      if (!dtype.is_string()) throw ValueError("not a string");
      entry.expected.dtype = dtype_from_name(dtype.get<std::string>());
    } catch (const ValueError&) {
      check.fail(at + ".dtype", "a dtype name such as \"int64\"", JsonChecker::brief(dtype));
    }
    const Json& shape = check.require(value, "shape", at + ".");
    if (!shape.is_array()) check.fail(at + ".shape", "a list of sizes", JsonChecker::brief(shape));
    for (const Json& extent : shape) {
      if (!extent.is_number_integer() || extent.get<int64_t>() < 0) {
        check.fail(at + ".shape", "a list of non-negative integers", JsonChecker::brief(shape));
      }
      entry.expected.shape.push_back(extent.get<int64_t>());
    }
    entry.expected.crc32 = check.crc(value, "crc32", at + ".");
    manifest.arrays.push_back(std::move(entry));
  }
}

// Every edge owner's indptr and indices are listed (`where(owner)`: its place in the JSON).
void require_topology(const JsonChecker& check, const Manifest& manifest, size_t owner,
                      const std::string& where) {
  for (const char* field : {"indptr", "indices"}) {
    const bool found =
        std::any_of(manifest.arrays.begin(), manifest.arrays.end(),
                    [&](const ArrayEntry& a) { return a.owner == owner && a.field == field; });
    if (!found) check.fail(where + "arrays." + field, "an entry (it is required)", "none");
  }
}

// Version 1: counts, orientation and the flat "arrays" of one edge owner and one node owner.
void read_flat(const JsonChecker& check, const Json& json, Manifest& manifest) {
  Owner nodes;
  nodes.rows = check.integer(json, "num_nodes");
  nodes.num_edges = check.integer(json, "num_edges");
  nodes.num_classes = json.contains("num_classes") ? check.integer(json, "num_classes") : 0;
  if (json.contains("orientation")) {
    const Json& orientation = json["orientation"];
    if (orientation == "in") {
      manifest.orientation = Orientation::kIn;
    } else if (orientation == "out") {
      manifest.orientation = Orientation::kOut;
    } else {
      check.fail("orientation", "\"in\" or \"out\"", JsonChecker::brief(orientation));
    }
  }
  Owner graph = nodes;
  graph.kind = OwnerKind::kEdge;
  graph.num_classes = 0;
  manifest.owners = {graph, nodes};
  read_arrays(check, json, "", std::nullopt, manifest);
  sort_entries(manifest);
  require_topology(check, manifest, 0, "");
}

const Json& list_of(const JsonChecker& check, const Json& json, const std::string& key) {
  const Json& list = check.require(json, key);
  if (!list.is_array()) check.fail(key, "a list", JsonChecker::brief(list));
  return list;
}

// Version 2: "node_types", then "edge_types", each entry an owner with its "arrays".
void read_typed(const JsonChecker& check, const Json& json, Manifest& manifest) {
  const Json& nodes = list_of(check, json, "node_types");
  for (size_t i = 0; i < nodes.size(); ++i) {
    const std::string where = fmt::format("node_types[{}].", i);
    Owner owner;
    owner.name = check.string(nodes[i], "name", where);
    try {
      check_type_name(owner.name, "node type");
    } catch (const ValueError& error) {
      check.fail(where + "name", "a valid node type name", error.what());
    }
    owner.rows = check.integer(nodes[i], "num_nodes", where);
    owner.num_classes =
        nodes[i].contains("num_classes") ? check.integer(nodes[i], "num_classes", where) : 0;
    manifest.owners.push_back(owner);
    read_arrays(check, nodes[i], where, manifest.owners.size() - 1, manifest);
  }
  const size_t num_node_types = manifest.owners.size();
  const Json& edges = list_of(check, json, "edge_types");
  for (size_t i = 0; i < edges.size(); ++i) {
    const std::string where = fmt::format("edge_types[{}].", i);
    Owner owner;
    owner.kind = OwnerKind::kEdge;
    owner.edge_type = {check.string(edges[i], "src", where),
                       check.string(edges[i], "relation", where),
                       check.string(edges[i], "dst", where)};
    owner.name = owner.edge_type.name();
    owner.num_edges = check.integer(edges[i], "num_edges", where);
    for (size_t t = 0; t < num_node_types; ++t) {  // an unknown dst: HeteroGraph names it
      if (manifest.owners[t].name == owner.edge_type.dst) owner.rows = manifest.owners[t].rows;
    }
    manifest.owners.push_back(owner);
    read_arrays(check, edges[i], where, manifest.owners.size() - 1, manifest);
    require_topology(check, manifest, manifest.owners.size() - 1, where);
  }
  sort_entries(manifest);
}

// --- opening arrays -------------------------------------------------------------------------

// A read-only view of `array` (a resident topology array keeps the read-only contract of a
// mapped dataset).
Array read_only(Array array) {
  const Buffer& bytes = array.buffer();
  auto owner = std::make_shared<Buffer>(bytes);
  Buffer view = Buffer::borrow(bytes.data(), bytes.size(), std::move(owner), /*writable=*/false,
                               Location::kHost);
  return Array(std::move(view), array.dtype(), array.shape());
}

// Whether the edge owners' arrays are read into memory rather than mapped (DatasetLoadOptions).
bool topology_resident(const Manifest& manifest, const DatasetLoadOptions& options) {
  if (!options.memory_map) return true;
  size_t budget = options.resident_graph_bytes;
  if (budget == static_cast<size_t>(-1)) {
    const long pages = sysconf(_SC_PHYS_PAGES), page_bytes = sysconf(_SC_PAGESIZE);
    budget = pages > 0 && page_bytes > 0
                 ? static_cast<size_t>(pages) * static_cast<size_t>(page_bytes) / 4
                 : 0;
  }
  size_t bytes = 0;
  for (const ArrayEntry& entry : manifest.arrays) {
    if (manifest.owners[entry.owner].kind != OwnerKind::kEdge) continue;
    size_t count = 1;
    for (const int64_t extent : entry.expected.shape) count *= static_cast<size_t>(extent);
    bytes += count * dtype_size(entry.expected.dtype);
  }
  return bytes <= budget;
}

// Opens one array: its shape against the owner's counts, the file against its entry, then its
// values (labels, split ids).
Array open_entry(const std::string& directory, const Manifest& manifest, const ArrayEntry& entry,
                 bool memory_map, bool verify) {
  const Owner& owner = manifest.owners[entry.owner];
  const std::string problem = shape_problem(entry.field, entry.expected.dtype, entry.expected.shape,
                                            owner.rows, owner.num_edges);
  if (!problem.empty()) {
    throw ValueError(fmt::format("{}: {}arrays.{}.{}{}", manifest.path, owner_label(owner),
                                 entry.field, problem, counts_text(manifest, owner)));
  }
  const std::string path = (fs::path(directory) / entry.file).string();
  Array array = read_npy_expecting(path, entry.expected, kManifestFile, memory_map, verify);
  const std::string values = value_problem(entry.field, array, owner.rows, owner.num_classes);
  if (!values.empty()) throw ValueError(fmt::format("{}: {}{}", path, owner_label(owner), values));
  return array;
}

// --- writing the manifest -------------------------------------------------------------------

Json owner_arrays_json(const Manifest& manifest, std::optional<size_t> owner) {
  Json arrays = Json::object();
  for (const ArrayEntry& entry : manifest.arrays) {
    if (owner && entry.owner != *owner) continue;
    arrays[entry.field] = {{"file", entry.file},
                           {"dtype", dtype_name(entry.expected.dtype)},
                           {"shape", entry.expected.shape},
                           {"crc32", crc32_hex(entry.expected.crc32)}};
  }
  return arrays;
}

Json manifest_json(const Manifest& manifest) {
  Json json = {{"format", kFormatName}, {"version", manifest.version}, {"name", manifest.name}};
  if (manifest.version == 1) {
    const Owner& nodes = manifest.owners[1];
    json["num_nodes"] = nodes.rows;
    json["num_edges"] = nodes.num_edges;
    json["num_classes"] = nodes.num_classes;
    json["orientation"] = orientation_name(manifest.orientation);
    json["arrays"] = owner_arrays_json(manifest, std::nullopt);
    return json;
  }
  Json nodes = Json::array(), edges = Json::array();
  for (size_t i = 0; i < manifest.owners.size(); ++i) {
    const Owner& owner = manifest.owners[i];
    if (owner.kind == OwnerKind::kNode) {
      nodes.push_back({{"name", owner.name},
                       {"num_nodes", owner.rows},
                       {"num_classes", owner.num_classes},
                       {"arrays", owner_arrays_json(manifest, i)}});
    } else {
      edges.push_back({{"src", owner.edge_type.src},
                       {"relation", owner.edge_type.relation},
                       {"dst", owner.edge_type.dst},
                       {"num_edges", owner.num_edges},
                       {"arrays", owner_arrays_json(manifest, i)}});
    }
  }
  json["node_types"] = nodes;
  json["edge_types"] = edges;
  return json;
}

}  // namespace

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

Manifest read_manifest(const std::string& directory, int64_t version) {
  const JsonChecker check(manifest_path(directory));
  const Json json = read_manifest_json(directory, check);
  const Json& format = check.require(json, "format");
  if (format != kFormatName) {
    check.fail("format", fmt::format("\"{}\"", kFormatName), JsonChecker::brief(format));
  }
  const int64_t found = check.integer(json, "version");
  if (found != version) {
    std::string expected =
        version == 1 ? "1 (a homogeneous dataset; version 2 is a heterogeneous one: read it with "
                       "load_hetero_dataset, or volley.load_dataset in Python)"
                     : "2 (a heterogeneous dataset; version 1 is homogeneous: read it with "
                       "load_dataset)";
    if (found != 1 && found != 2) {
      expected = fmt::format("{} (this Volley reads versions 1 and 2)", version);
    }
    check.fail("version", expected, std::to_string(found));
  }
  Manifest manifest;
  manifest.path = check.path();
  manifest.version = version;
  manifest.name = fs::path(directory).lexically_normal().filename().string();
  if (json.contains("name")) manifest.name = check.string(json, "name");
  if (version == 1) {
    read_flat(check, json, manifest);
  } else {
    read_typed(check, json, manifest);
  }
  return manifest;
}

std::string owner_label(const Owner& owner) {
  if (owner.name.empty()) return "";
  return fmt::format("{} type {}: ", owner.kind == OwnerKind::kNode ? "node" : "edge", owner.name);
}

std::string array_file(int64_t version, OwnerKind kind, std::string_view owner,
                       std::string_view field, std::string_view who) {
  const char* kind_word = version == 1 ? "" : kind == OwnerKind::kNode ? "node " : "edge ";
  VOLLEY_REQUIRE(known(field, version, kind), ValueError,
                 "{}: unknown {}array '{}' (expected one of {})", who, kind_word, field,
                 field_list(version, kind));
  if (owner.empty()) return fmt::format("{}.npy", field);
  return fmt::format("{}.{}.npy", owner, field);
}

std::string shape_problem(std::string_view field, DType dtype, const std::vector<int64_t>& shape,
                          int64_t rows, int64_t num_edges) {
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
  if (field == "features") {
    if (shape.size() == 2 && shape[0] == rows) return "";
    return fmt::format("shape: expected [{}, D] (one row per node), found {}", rows,
                       npy_shape_text(shape));
  }
  std::string problem = field == "indices"   ? dtype_must_be({DType::kInt32, DType::kInt64})
                        : field == "weights" ? dtype_must_be({DType::kFloat32})
                                             : dtype_must_be({DType::kInt64});
  if (!problem.empty()) return problem;
  if (field == "indptr") return shape_must_be({rows + 1});
  if (field == "labels" || field == "node_time") return shape_must_be({rows});
  if (field.ends_with("_idx")) {
    if (shape.size() == 1) return "";
    return fmt::format("shape: expected a 1-d array of node ids, found {}", npy_shape_text(shape));
  }
  if (field.ends_with("_edges")) {  // a link split's (src, dst) pairs
    if (shape.size() == 2 && shape[0] == 2) return "";
    return fmt::format("shape: expected [2, M] (src, dst) pairs, found {}", npy_shape_text(shape));
  }
  return shape_must_be({num_edges});  // indices, edge_ids, weights, edge_time
}

std::string value_problem(std::string_view field, const Array& array, int64_t rows,
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
      if (ids[i] < 0 || ids[i] >= rows) {
        const std::string at =
            columns > 0 ? fmt::format("{}, {}", i / columns, i % columns) : std::to_string(i);
        return fmt::format("{}[{}] = {} out of range for {} nodes", field, at, ids[i], rows);
      }
    }
  }
  return "";
}

std::string array_problem(std::string_view field, const Array& array, int64_t rows,
                          int64_t num_edges, int64_t num_classes) {
  std::string problem = shape_problem(field, array.dtype(), array.shape(), rows, num_edges);
  if (problem.empty() && array.buffer().host_accessible()) {
    problem = value_problem(field, array, rows, num_classes);
  }
  return problem;
}

std::vector<OwnerArrays> open_arrays(const std::string& directory, const Manifest& manifest,
                                     const DatasetLoadOptions& options) {
  const bool resident = topology_resident(manifest, options);
  std::vector<OwnerArrays> arrays(manifest.owners.size());
  for (const ArrayEntry& entry : manifest.arrays) {
    const bool read_in =
        options.memory_map && resident && manifest.owners[entry.owner].kind == OwnerKind::kEdge;
    Array array = open_entry(directory, manifest, entry, options.memory_map && !read_in,
                             options.verify_checksums);
    if (read_in) array = read_only(std::move(array));
    arrays[entry.owner].emplace(entry.field, std::move(array));
  }
  return arrays;
}

std::optional<Array> take(const OwnerArrays& arrays, std::string_view field) {
  const auto it = arrays.find(field);
  if (it == arrays.end()) return std::nullopt;
  return it->second;
}

DatasetCheck verify_directory(const std::string& directory, int64_t version,
                              const std::function<void()>& load_graph) {
  DatasetCheck check;
  Manifest manifest;
  try {
    manifest = read_manifest(directory, version);
  } catch (const Error& error) {
    check.problems.push_back(error.what());
    return check;
  }
  for (const ArrayEntry& entry : manifest.arrays) {
    try {
      open_entry(directory, manifest, entry, /*memory_map=*/true, /*verify=*/true);
    } catch (const Error& error) {
      check.problems.push_back(error.what());
    }
  }
  if (check.ok()) {
    // The files match their manifest; now the graph itself (monotone indptr, ids in range).
    try {
      load_graph();
    } catch (const Error& error) {
      check.problems.push_back(error.what());
    }
  }
  return check;
}

void prepare_directory(const std::string& directory) {
  std::error_code error;
  fs::create_directories(directory, error);
  if (error || !fs::is_directory(directory)) {
    throw IoError(fmt::format("cannot create the dataset directory '{}': {}", directory,
                              error ? error.message() : "a file of that name exists"));
  }
  // No manifest until the writer finishes: a half-written directory never looks complete.
  fs::remove(manifest_path(directory), error);
  if (error) {
    throw IoError(
        fmt::format("cannot remove the old manifest in '{}': {}", directory, error.message()));
  }
}

void write_array(const std::string& path, const Array& array, std::string_view owner,
                 std::string_view field, std::vector<WrittenArray>& written, std::string_view who) {
  VOLLEY_REQUIRE(array.defined(), ValueError, "{}: array '{}' is undefined", who, path);
  VOLLEY_REQUIRE(array.buffer().host_accessible(), ValueError,
                 "{}: array '{}' lives in {} memory; copy it to the host first", who, path,
                 location_name(array.buffer().location()));
  NpyWriter writer(path, array.dtype(), array.shape());
  writer.write(array.raw_data(), array.nbytes());
  writer.close();
  add_written(
      {std::string(owner), std::string(field), array.dtype(), array.shape(), writer.crc32()},
      written, who);
}

void add_written(WrittenArray array, std::vector<WrittenArray>& written, std::string_view who) {
  const bool duplicate = std::any_of(written.begin(), written.end(), [&](const WrittenArray& a) {
    return a.owner == array.owner && a.field == array.field;
  });
  VOLLEY_REQUIRE(!duplicate, ValueError, "{}: array '{}{}{}' was added twice", who, array.owner,
                 array.owner.empty() ? "" : ".", array.field);
  written.push_back(std::move(array));
}

void write_manifest(const std::string& directory, Manifest manifest,
                    const std::vector<WrittenArray>& written, std::string_view who) {
  for (size_t o = 0; o < manifest.owners.size(); ++o) {
    const Owner& owner = manifest.owners[o];
    for (const FieldSpec& spec : kFields) {
      if (spec.kind != owner.kind || !in(spec, manifest.version, owner.kind)) continue;
      const std::string file = array_file(manifest.version, owner.kind, owner.name, spec.name, who);
      const auto it = std::find_if(written.begin(), written.end(), [&](const WrittenArray& a) {
        return a.owner == owner.name && a.field == spec.name;
      });
      if (it == written.end()) {
        const std::string_view field = spec.name;
        VOLLEY_REQUIRE(owner.kind != OwnerKind::kEdge || (field != "indptr" && field != "indices"),
                       ValueError, "{}('{}'): {}the required array '{}' was not added", who,
                       directory, owner_label(owner), field);
        // A file left over from an earlier dataset in this directory would only confuse.
        std::error_code ignored;
        fs::remove(fs::path(directory) / file, ignored);
        continue;
      }
      const std::string problem =
          shape_problem(spec.name, it->dtype, it->shape, owner.rows, owner.num_edges);
      VOLLEY_REQUIRE(problem.empty(), ValueError, "{}('{}'): {}{}: {}{}", who, directory,
                     owner_label(owner), spec.name, problem, counts_text(manifest, owner));
      manifest.arrays.push_back({o, spec.name, file, {it->dtype, it->shape, it->crc32}});
    }
  }
  sort_entries(manifest);
  // Written beside, then renamed: the manifest appears complete or not at all.
  write_file_atomically(manifest_path(directory), manifest_json(manifest).dump(2) + "\n");
}

}  // namespace volley::graph_internal
