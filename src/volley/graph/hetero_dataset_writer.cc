// The heterogeneous dataset writer, save_hetero_dataset, and the manifest's field checks.
#include <algorithm>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "volley/core/files.h"
#include "volley/graph/hetero_dataset.h"
#include "volley/graph/internal/hetero_manifest.h"
#include "volley/graph/internal/value_checks.h"
#include "volley/graph/io/npy.h"

namespace volley {

namespace hetero_internal {

namespace {
template <size_t N>
size_t rank_in(const char* const (&fields)[N], std::string_view field) {
  return static_cast<size_t>(std::find(std::begin(fields), std::end(fields), field) -
                             std::begin(fields));
}

std::string dtype_must_be(DType dtype, std::initializer_list<DType> allowed) {
  if (std::find(allowed.begin(), allowed.end(), dtype) != allowed.end()) return "";
  std::vector<std::string_view> names;
  for (DType d : allowed) names.push_back(dtype_name(d));
  return fmt::format("dtype: expected {}, found {}", fmt::join(names, " or "), dtype_name(dtype));
}

std::string shape_must_be(const std::vector<int64_t>& shape, const std::vector<int64_t>& expected) {
  if (shape == expected) return "";
  return fmt::format("shape: expected {}, found {}", npy_shape_text(expected),
                     npy_shape_text(shape));
}
}  // namespace

bool is_node_field(std::string_view field) {
  return node_field_rank(field) < std::size(kNodeFields);
}
bool is_edge_field(std::string_view field) {
  return edge_field_rank(field) < std::size(kEdgeFields);
}
size_t node_field_rank(std::string_view field) { return rank_in(kNodeFields, field); }
size_t edge_field_rank(std::string_view field) { return rank_in(kEdgeFields, field); }

std::string file_name(std::string_view owner, std::string_view field) {
  return fmt::format("{}.{}.npy", owner, field);
}

std::string node_shape_problem(std::string_view field, DType dtype,
                               const std::vector<int64_t>& shape, int64_t num_nodes) {
  if (field == "features") {
    if (shape.size() == 2 && shape[0] == num_nodes) return "";
    return fmt::format("shape: expected [{}, D] (one row per node), found {}", num_nodes,
                       npy_shape_text(shape));
  }
  std::string problem = dtype_must_be(dtype, {DType::kInt64});
  if (!problem.empty()) return problem;
  if (field == "labels") return shape_must_be(shape, {num_nodes});
  if (shape.size() != 1) {
    return fmt::format("shape: expected a 1-d array of node ids, found {}", npy_shape_text(shape));
  }
  return "";
}

std::string edge_shape_problem(std::string_view field, DType dtype,
                               const std::vector<int64_t>& shape, int64_t num_dst,
                               int64_t num_edges) {
  std::string problem;
  if (field == "indptr") {
    problem = dtype_must_be(dtype, {DType::kInt64});
    return problem.empty() ? shape_must_be(shape, {num_dst + 1}) : problem;
  }
  if (field == "indices") {
    problem = dtype_must_be(dtype, {DType::kInt32, DType::kInt64});
  } else if (field == "edge_ids") {
    problem = dtype_must_be(dtype, {DType::kInt64});
  } else {
    problem = dtype_must_be(dtype, {DType::kFloat32});
  }
  return problem.empty() ? shape_must_be(shape, {num_edges}) : problem;
}

}  // namespace hetero_internal

using namespace hetero_internal;
namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

HeteroDatasetWriter::HeteroDatasetWriter(std::string directory, std::string name,
                                         std::vector<NodeTypeInfo> node_types,
                                         std::vector<EdgeType> edge_types)
    : directory_(std::move(directory)),
      name_(std::move(name)),
      node_types_(std::move(node_types)),
      edge_types_(std::move(edge_types)) {
  {
    // Checks names and that every edge type's ends exist (an empty graph of these types).
    HeteroGraph check(node_types_, {}, false);
    for (const EdgeType& type : edge_types_) {
      check_type_name(type.relation, "relation");
      check.node_type_index(type.src);
      check.node_type_index(type.dst);
      VOLLEY_REQUIRE(std::count(edge_types_.begin(), edge_types_.end(), type) == 1, ValueError,
                     "edge type {} is given twice", type.name());
    }
  }
  std::error_code error;
  fs::create_directories(directory_, error);
  if (error || !fs::is_directory(directory_)) {
    throw IoError(fmt::format("cannot create the dataset directory '{}': {}", directory_,
                              error ? error.message() : "a file of that name exists"));
  }
  fs::remove(graph_internal::manifest_path(directory_), error);
  if (error) {
    throw IoError(
        fmt::format("cannot remove the old manifest in '{}': {}", directory_, error.message()));
  }
}

std::string HeteroDatasetWriter::node_path(std::string_view node_type,
                                           std::string_view field) const {
  const bool known = std::any_of(node_types_.begin(), node_types_.end(),
                                 [&](const NodeTypeInfo& info) { return info.name == node_type; });
  VOLLEY_REQUIRE(known, ValueError, "HeteroDatasetWriter: unknown node type '{}'", node_type);
  VOLLEY_REQUIRE(is_node_field(field), ValueError,
                 "HeteroDatasetWriter: unknown node array '{}' (expected one of {})", field,
                 fmt::join(kNodeFields, ", "));
  return (fs::path(directory_) / file_name(node_type, field)).string();
}

std::string HeteroDatasetWriter::edge_path(const EdgeType& edge_type,
                                           std::string_view field) const {
  VOLLEY_REQUIRE(std::find(edge_types_.begin(), edge_types_.end(), edge_type) != edge_types_.end(),
                 ValueError, "HeteroDatasetWriter: unknown edge type {}", edge_type.name());
  VOLLEY_REQUIRE(is_edge_field(field), ValueError,
                 "HeteroDatasetWriter: unknown edge array '{}' (expected one of {})", field,
                 fmt::join(kEdgeFields, ", "));
  return (fs::path(directory_) / file_name(edge_type.name(), field)).string();
}

void HeteroDatasetWriter::write(const std::string& path, const Array& array, uint32_t* crc) const {
  VOLLEY_REQUIRE(array.defined() && array.buffer().host_accessible(), ValueError,
                 "HeteroDatasetWriter: '{}': the array is undefined or not in host memory", path);
  NpyWriter writer(path, array.dtype(), array.shape());
  writer.write(array.raw_data(), array.nbytes());
  writer.close();
  *crc = writer.crc32();
}

void HeteroDatasetWriter::add_node_array(std::string_view node_type, std::string_view field,
                                         const Array& array) {
  uint32_t crc = 0;
  write(node_path(node_type, field), array, &crc);
  add_node_written(node_type, field, array.dtype(), array.shape(), crc);
}

void HeteroDatasetWriter::add_node_written(std::string_view node_type, std::string_view field,
                                           DType dtype, std::vector<int64_t> shape,
                                           uint32_t crc32) {
  node_path(node_type, field);  // checks the names
  add(std::string(node_type), field, dtype, std::move(shape), crc32);
}

void HeteroDatasetWriter::add_edge_array(const EdgeType& edge_type, std::string_view field,
                                         const Array& array) {
  uint32_t crc = 0;
  write(edge_path(edge_type, field), array, &crc);
  add_edge_written(edge_type, field, array.dtype(), array.shape(), crc);
}

void HeteroDatasetWriter::add_edge_written(const EdgeType& edge_type, std::string_view field,
                                           DType dtype, std::vector<int64_t> shape,
                                           uint32_t crc32) {
  edge_path(edge_type, field);
  add(edge_type.name(), field, dtype, std::move(shape), crc32);
}

void HeteroDatasetWriter::add(std::string owner, std::string_view field, DType dtype,
                              std::vector<int64_t> shape, uint32_t crc32) {
  const bool duplicate = std::any_of(entries_.begin(), entries_.end(), [&](const Entry& entry) {
    return entry.owner == owner && entry.field == field;
  });
  VOLLEY_REQUIRE(!duplicate, ValueError, "HeteroDatasetWriter: array {}.{} was added twice", owner,
                 field);
  entries_.push_back({std::move(owner), std::string(field), dtype, std::move(shape), crc32});
}

namespace {
// The manifest entries of `owner`'s arrays, in the fields' order (ValueError for a bad shape).
template <typename Problem>
Json array_entries(const std::vector<std::string>& fields, const std::string& owner,
                   const std::string& directory, Problem problem_of, const auto& entries) {
  Json arrays = Json::object();
  for (const std::string& field : fields) {
    const auto it = std::find_if(entries.begin(), entries.end(), [&](const auto& entry) {
      return entry.owner == owner && entry.field == field;
    });
    if (it == entries.end()) {
      std::error_code ignored;  // a file left over from an earlier dataset would only confuse
      fs::remove(fs::path(directory) / file_name(owner, field), ignored);
      continue;
    }
    const std::string problem = problem_of(field, it->dtype, it->shape);
    VOLLEY_REQUIRE(problem.empty(), ValueError, "HeteroDatasetWriter('{}'): {}.{}: {}", directory,
                   owner, field, problem);
    arrays[field] = {{"file", file_name(owner, field)},
                     {"dtype", dtype_name(it->dtype)},
                     {"shape", it->shape},
                     {"crc32", crc32_hex(it->crc32)}};
  }
  return arrays;
}
}  // namespace

void HeteroDatasetWriter::finish(const std::vector<std::pair<std::string, int64_t>>& num_classes) {
  const std::vector<std::string> node_fields(std::begin(kNodeFields), std::end(kNodeFields));
  const std::vector<std::string> edge_fields(std::begin(kEdgeFields), std::end(kEdgeFields));
  for (const auto& [type, classes] : num_classes) {
    node_path(type, "labels");  // checks the type
    VOLLEY_REQUIRE(classes >= 0, ValueError, "HeteroDatasetWriter: node type {}: num_classes {}",
                   type, classes);
  }
  Json nodes = Json::array();
  for (const NodeTypeInfo& type : node_types_) {
    int64_t classes = 0;
    for (const auto& [name, count] : num_classes) {
      if (name == type.name) classes = count;
    }
    Json arrays = array_entries(
        node_fields, type.name, directory_,
        [&](const std::string& field, DType dtype, const std::vector<int64_t>& shape) {
          return node_shape_problem(field, dtype, shape, type.num_nodes);
        },
        entries_);
    nodes.push_back({{"name", type.name},
                     {"num_nodes", type.num_nodes},
                     {"num_classes", classes},
                     {"arrays", arrays}});
  }
  Json edges = Json::array();
  for (const EdgeType& type : edge_types_) {
    const std::string owner = type.name();
    const auto indices = std::find_if(entries_.begin(), entries_.end(), [&](const Entry& entry) {
      return entry.owner == owner && entry.field == "indices";
    });
    const bool has_indptr = std::any_of(entries_.begin(), entries_.end(), [&](const Entry& e) {
      return e.owner == owner && e.field == "indptr";
    });
    VOLLEY_REQUIRE(indices != entries_.end() && has_indptr, ValueError,
                   "HeteroDatasetWriter('{}'): edge type {} needs indptr and indices", directory_,
                   owner);
    const int64_t num_edges = indices->shape.empty() ? 0 : indices->shape[0];
    int64_t num_dst = 0;
    for (const NodeTypeInfo& info : node_types_) {
      if (info.name == type.dst) num_dst = info.num_nodes;
    }
    Json arrays = array_entries(
        edge_fields, owner, directory_,
        [&](const std::string& field, DType dtype, const std::vector<int64_t>& shape) {
          return edge_shape_problem(field, dtype, shape, num_dst, num_edges);
        },
        entries_);
    edges.push_back({{"src", type.src},
                     {"relation", type.relation},
                     {"dst", type.dst},
                     {"num_edges", num_edges},
                     {"arrays", arrays}});
  }
  const Json manifest = {{"format", "volley-dataset"},
                         {"version", kHeteroFormatVersion},
                         {"name", name_},
                         {"node_types", nodes},
                         {"edge_types", edges}};
  write_file_atomically(graph_internal::manifest_path(directory_), manifest.dump(2) + "\n");
}

void save_hetero_dataset(const HeteroDataset& dataset, const std::string& directory) {
  const HeteroGraph& graph = dataset.graph;
  VOLLEY_REQUIRE(dataset.node_data.size() == graph.node_types().size(), ValueError,
                 "save_hetero_dataset('{}'): node_data has {} entries for {} node types", directory,
                 dataset.node_data.size(), graph.node_types().size());
  // Check everything before writing anything.
  std::vector<std::tuple<std::string, const char*, Array>> node_arrays;
  for (size_t t = 0; t < graph.node_types().size(); ++t) {
    const NodeTypeInfo& type = graph.node_types()[t];
    const NodeTypeData& data = dataset.node_data[t];
    const std::pair<const char*, const std::optional<Array>*> fields[] = {
        {"features", &data.features},
        {"labels", &data.labels},
        {"train_idx", &data.train_idx},
        {"val_idx", &data.val_idx},
        {"test_idx", &data.test_idx}};
    for (const auto& [field, array] : fields) {
      if (!array->has_value()) continue;
      const Array& value = **array;
      std::string problem = node_shape_problem(field, value.dtype(), value.shape(), type.num_nodes);
      if (problem.empty() && value.buffer().host_accessible()) {
        problem = graph_internal::value_problem(field, value, type.num_nodes, data.num_classes);
      }
      VOLLEY_REQUIRE(problem.empty(), ValueError, "save_hetero_dataset('{}'): node type {}: {}: {}",
                     directory, type.name, field, problem);
      node_arrays.emplace_back(type.name, field, value);
    }
  }
  HeteroDatasetWriter writer(directory, dataset.name, graph.node_types(), graph.edge_types());
  for (const auto& [type, field, array] : node_arrays) writer.add_node_array(type, field, array);
  for (int e = 0; e < graph.num_edge_types(); ++e) {
    const EdgeType& type = graph.edge_types()[static_cast<size_t>(e)];
    const Csr& csr = graph.edges(e);
    writer.add_edge_array(type, "indptr", csr.indptr());
    writer.add_edge_array(type, "indices", csr.indices());
    if (csr.has_edge_ids()) writer.add_edge_array(type, "edge_ids", *csr.edge_ids());
    if (csr.has_weights()) writer.add_edge_array(type, "weights", *csr.weights());
  }
  std::vector<std::pair<std::string, int64_t>> classes;
  for (size_t t = 0; t < graph.node_types().size(); ++t) {
    classes.emplace_back(graph.node_types()[t].name, dataset.node_data[t].num_classes);
  }
  writer.finish(classes);
}

}  // namespace volley
