// The version-2 (heterogeneous) front of the dataset directory format: a HeteroDataset assembled
// from, and written through, the one core in internal/dataset_format.h.
#include "volley/graph/hetero_dataset.h"

#include <algorithm>
#include <filesystem>

#include "volley/graph/internal/dataset_format.h"

namespace volley {

using namespace graph_internal;

int64_t dataset_format_version(const std::string& directory) {
  const JsonChecker check(manifest_path(directory));
  return check.integer(read_manifest_json(directory, check), "version");
}

bool is_hetero_dataset_directory(const std::string& path) {
  try {
    return dataset_format_version(path) == 2;
  } catch (const Error&) {
    return false;
  }
}

HeteroDataset load_hetero_dataset(const std::string& directory, const DatasetLoadOptions& options) {
  const Manifest manifest = read_manifest(directory, 2);
  const std::vector<OwnerArrays> arrays = open_arrays(directory, manifest, options);
  HeteroDataset dataset;
  dataset.name = manifest.name;
  std::vector<NodeTypeInfo> node_types;
  std::vector<std::pair<EdgeType, Csr>> edge_types;
  for (size_t i = 0; i < manifest.owners.size(); ++i) {
    const Owner& owner = manifest.owners[i];
    const OwnerArrays& a = arrays[i];
    if (owner.kind == OwnerKind::kNode) {
      node_types.push_back({owner.name, owner.rows});
      dataset.node_data.push_back({take(a, "features"), take(a, "labels"), take(a, "train_idx"),
                                   take(a, "val_idx"), take(a, "test_idx"), owner.num_classes});
      continue;
    }
    try {
      edge_types.emplace_back(
          owner.edge_type,
          Csr::from_arrays(*take(a, "indptr"), *take(a, "indices"), take(a, "edge_ids"),
                           take(a, "weights"), Orientation::kIn, /*validate=*/false));
    } catch (const Error& error) {
      internal::throw_error(
          error.kind(), fmt::format("{}: edge type {}: {}", directory, owner.name, error.what()));
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
  return verify_directory(directory, 2, [&] {
    load_hetero_dataset(directory, {.memory_map = true, .validate_graph = true});
  });
}

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
  prepare_directory(directory_);
}

std::string HeteroDatasetWriter::node_path(std::string_view node_type,
                                           std::string_view field) const {
  const bool known = std::any_of(node_types_.begin(), node_types_.end(),
                                 [&](const NodeTypeInfo& info) { return info.name == node_type; });
  VOLLEY_REQUIRE(known, ValueError, "HeteroDatasetWriter: unknown node type '{}'", node_type);
  return (std::filesystem::path(directory_) /
          array_file(2, OwnerKind::kNode, node_type, field, "HeteroDatasetWriter"))
      .string();
}

std::string HeteroDatasetWriter::edge_path(const EdgeType& edge_type,
                                           std::string_view field) const {
  VOLLEY_REQUIRE(std::find(edge_types_.begin(), edge_types_.end(), edge_type) != edge_types_.end(),
                 ValueError, "HeteroDatasetWriter: unknown edge type {}", edge_type.name());
  return (std::filesystem::path(directory_) /
          array_file(2, OwnerKind::kEdge, edge_type.name(), field, "HeteroDatasetWriter"))
      .string();
}

void HeteroDatasetWriter::add_node_array(std::string_view node_type, std::string_view field,
                                         const Array& array) {
  write_array(node_path(node_type, field), array, node_type, field, written_,
              "HeteroDatasetWriter");
}

void HeteroDatasetWriter::add_node_written(std::string_view node_type, std::string_view field,
                                           DType dtype, std::vector<int64_t> shape,
                                           uint32_t crc32) {
  node_path(node_type, field);  // checks the names
  add_written({std::string(node_type), std::string(field), dtype, std::move(shape), crc32},
              written_, "HeteroDatasetWriter");
}

void HeteroDatasetWriter::add_edge_array(const EdgeType& edge_type, std::string_view field,
                                         const Array& array) {
  write_array(edge_path(edge_type, field), array, edge_type.name(), field, written_,
              "HeteroDatasetWriter");
}

void HeteroDatasetWriter::add_edge_written(const EdgeType& edge_type, std::string_view field,
                                           DType dtype, std::vector<int64_t> shape,
                                           uint32_t crc32) {
  edge_path(edge_type, field);  // checks the names
  add_written({edge_type.name(), std::string(field), dtype, std::move(shape), crc32}, written_,
              "HeteroDatasetWriter");
}

void HeteroDatasetWriter::finish(const std::vector<std::pair<std::string, int64_t>>& num_classes) {
  for (const auto& [type, classes] : num_classes) {
    node_path(type, "labels");  // checks the type
    VOLLEY_REQUIRE(classes >= 0, ValueError, "HeteroDatasetWriter: node type {}: num_classes {}",
                   type, classes);
  }
  Manifest manifest;
  manifest.version = 2;
  manifest.name = name_;
  for (const NodeTypeInfo& type : node_types_) {
    Owner owner;
    owner.name = type.name;
    owner.rows = type.num_nodes;
    for (const auto& [name, count] : num_classes) {
      if (name == type.name) owner.num_classes = count;
    }
    manifest.owners.push_back(owner);
  }
  for (const EdgeType& type : edge_types_) {
    Owner owner;
    owner.kind = OwnerKind::kEdge;
    owner.name = type.name();
    owner.edge_type = type;
    for (const WrittenArray& array : written_) {  // no indices: write_manifest refuses it
      if (array.owner == owner.name && array.field == "indices" && !array.shape.empty()) {
        owner.num_edges = array.shape[0];
      }
    }
    for (const NodeTypeInfo& info : node_types_) {
      if (info.name == type.dst) owner.rows = info.num_nodes;
    }
    manifest.owners.push_back(owner);
  }
  write_manifest(directory_, std::move(manifest), written_, "HeteroDatasetWriter");
}

void save_hetero_dataset(const HeteroDataset& dataset, const std::string& directory) {
  const HeteroGraph& graph = dataset.graph;
  VOLLEY_REQUIRE(dataset.node_data.size() == graph.node_types().size(), ValueError,
                 "save_hetero_dataset('{}'): node_data has {} entries for {} node types", directory,
                 dataset.node_data.size(), graph.node_types().size());
  // Check everything before writing anything (the graph's arrays are sound by construction).
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
      const std::string problem =
          array_problem(field, **array, type.num_nodes, 0, data.num_classes);
      VOLLEY_REQUIRE(problem.empty(), ValueError, "save_hetero_dataset('{}'): node type {}: {}: {}",
                     directory, type.name, field, problem);
      node_arrays.emplace_back(type.name, field, **array);
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
