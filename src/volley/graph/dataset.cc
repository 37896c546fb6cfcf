// The version-1 (homogeneous) front of the dataset directory format: a Dataset assembled from, and
// written through, the one core in internal/dataset_format.h.
#include "volley/graph/dataset.h"

#include <filesystem>

#include "volley/graph/internal/dataset_format.h"

namespace volley {

using namespace graph_internal;

Dataset load_dataset(const std::string& directory, const DatasetLoadOptions& options) {
  const Manifest manifest = read_manifest(directory, 1);
  const std::vector<OwnerArrays> arrays = open_arrays(directory, manifest, options);
  const OwnerArrays& graph = arrays[0];
  const OwnerArrays& nodes = arrays[1];
  Dataset dataset;
  dataset.name = manifest.name;
  try {
    dataset.graph =
        Csr::from_arrays(*take(graph, "indptr"), *take(graph, "indices"), take(graph, "edge_ids"),
                         take(graph, "weights"), manifest.orientation, options.validate_graph);
    if (take(graph, "node_time") || take(graph, "edge_time")) {
      dataset.graph = dataset.graph.with_times(take(graph, "node_time"), take(graph, "edge_time"));
    }
  } catch (const Error& error) {
    internal::throw_error(error.kind(), fmt::format("{}: graph: {}", directory, error.what()));
  }
  dataset.features = take(nodes, "features");
  dataset.labels = take(nodes, "labels");
  dataset.train_idx = take(nodes, "train_idx");
  dataset.val_idx = take(nodes, "val_idx");
  dataset.test_idx = take(nodes, "test_idx");
  dataset.train_edges = take(nodes, "train_edges");
  dataset.val_edges = take(nodes, "val_edges");
  dataset.test_edges = take(nodes, "test_edges");
  dataset.val_neg_edges = take(nodes, "val_neg_edges");
  dataset.test_neg_edges = take(nodes, "test_neg_edges");
  dataset.num_classes = manifest.owners[1].num_classes;
  return dataset;
}

DatasetCheck verify_dataset(const std::string& directory) {
  return verify_directory(directory, 1, [&] {
    load_dataset(directory,
                 {.memory_map = true, .verify_checksums = false, .validate_graph = true});
  });
}

bool is_dataset_directory(const std::string& path) {
  std::error_code error;
  return std::filesystem::is_regular_file(manifest_path(path), error);
}

DatasetWriter::DatasetWriter(std::string directory, std::string name)
    : directory_(std::move(directory)), name_(std::move(name)) {
  prepare_directory(directory_);
}

std::string DatasetWriter::path_of(const std::string& field) const {
  return (std::filesystem::path(directory_) /
          array_file(1, OwnerKind::kNode, "", field, "DatasetWriter"))
      .string();
}

void DatasetWriter::add_array(const std::string& field, const Array& array) {
  write_array(path_of(field), array, "", field, written_, "DatasetWriter");
}

void DatasetWriter::add_written(const std::string& field, DType dtype, std::vector<int64_t> shape,
                                uint32_t crc32) {
  path_of(field);  // checks the name
  graph_internal::add_written({"", field, dtype, std::move(shape), crc32}, written_,
                              "DatasetWriter");
}

void DatasetWriter::finish(int64_t num_nodes, int64_t num_edges, int64_t num_classes,
                           Orientation orientation) {
  VOLLEY_REQUIRE(num_nodes >= 0 && num_edges >= 0 && num_classes >= 0, ValueError,
                 "DatasetWriter: counts must be >= 0, got {} nodes, {} edges, {} classes",
                 num_nodes, num_edges, num_classes);
  Manifest manifest;
  manifest.name = name_;
  manifest.orientation = orientation;
  manifest.owners.resize(2);  // the graph, its nodes
  for (Owner& owner : manifest.owners) {
    owner.rows = num_nodes;
    owner.num_edges = num_edges;
  }
  manifest.owners[0].kind = OwnerKind::kEdge;
  manifest.owners[1].num_classes = num_classes;
  write_manifest(directory_, std::move(manifest), written_, "DatasetWriter");
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
    const std::string problem = array_problem(field, array, n, e, dataset.num_classes);
    VOLLEY_REQUIRE(problem.empty(), ValueError, "save_dataset('{}'): {}: {}", directory, field,
                   problem);
  }
  DatasetWriter writer(directory, dataset.name);
  for (const auto& [field, array] : arrays) writer.add_array(field, array);
  writer.finish(n, e, dataset.num_classes, graph.orientation());
}

}  // namespace volley
