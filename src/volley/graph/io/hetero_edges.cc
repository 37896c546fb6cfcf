#include "volley/graph/io/hetero_edges.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "volley/graph/io/edge_list.h"
#include "volley/graph/io/npy.h"

namespace volley {
namespace {

namespace fs = std::filesystem;

constexpr const char* kEdgeExtensions[] = {".npy", ".txt", ".csv", ".tsv", ".el"};

bool is_edge_file(const fs::path& path) {
  const std::string stem = path.stem().string();
  const std::string extension = path.extension().string();
  return stem.find("__") != std::string::npos && stem.find('.') == std::string::npos &&
         std::find(std::begin(kEdgeExtensions), std::end(kEdgeExtensions), extension) !=
             std::end(kEdgeExtensions);
}

std::vector<fs::path> sorted_entries(const std::string& directory) {
  std::vector<fs::path> paths;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(directory, error)) {
    if (entry.is_regular_file()) paths.push_back(entry.path());
  }
  if (error)
    throw IoError(fmt::format("{}: cannot list the directory: {}", directory, error.message()));
  std::sort(paths.begin(), paths.end());
  return paths;
}

int64_t max_id(const Array& ids) {
  int64_t result = -1;
  const int64_t* data = ids.data<int64_t>();
  for (int64_t i = 0; i < ids.numel(); ++i) result = std::max(result, data[i]);
  return result;
}

Array as_int64(const Array& array, const std::string& source) {
  VOLLEY_REQUIRE(array.dtype() == DType::kInt64 || array.dtype() == DType::kInt32, ValueError,
                 "{}: expected int32 or int64 values, found {}", source, dtype_name(array.dtype()));
  Array out = Array::empty(DType::kInt64, {array.numel()});
  for (int64_t i = 0; i < array.numel(); ++i) {
    out.data<int64_t>()[i] =
        array.dtype() == DType::kInt64 ? array.data<int64_t>()[i] : array.data<int32_t>()[i];
  }
  return out;
}

struct NodeInput {
  std::optional<int64_t> given;  // T.num_nodes
  int64_t needed = 0;            // 1 + largest id, rows of features / labels
  NodeTypeData data;
};

// Reads the optional per-type files T.num_nodes, T.features.npy, T.labels.npy, T.*_idx.npy.
void read_node_files(const std::string& directory, const std::string& name, NodeInput& input) {
  const fs::path base = fs::path(directory);
  const fs::path count_file = base / (name + ".num_nodes");
  if (fs::exists(count_file)) {
    std::ifstream stream(count_file);
    int64_t count = -1;
    if (!(stream >> count) || count < 0) {
      throw IoError(fmt::format("{}: expected a non-negative node count", count_file.string()));
    }
    input.given = count;
  }
  auto read_optional = [&](const char* field) -> std::optional<Array> {
    const fs::path path = base / fmt::format("{}.{}.npy", name, field);
    if (!fs::exists(path)) return std::nullopt;
    return read_npy(path.string(), false);
  };
  input.data.features = read_optional("features");
  if (input.data.features) {
    VOLLEY_REQUIRE(input.data.features->ndim() == 2, ValueError,
                   "{}: {}.features.npy must be 2-d, got {}", directory, name,
                   input.data.features->describe());
    input.needed = std::max(input.needed, input.data.features->dim(0));
  }
  if (auto labels = read_optional("labels")) {
    input.data.labels = as_int64(*labels, name + ".labels.npy");
    input.needed = std::max(input.needed, input.data.labels->numel());
    input.data.num_classes = max_id(*input.data.labels) + 1;
  }
  for (const auto& [field, slot] :
       {std::pair{"train_idx", &input.data.train_idx}, std::pair{"val_idx", &input.data.val_idx},
        std::pair{"test_idx", &input.data.test_idx}}) {
    if (auto ids = read_optional(field)) *slot = as_int64(*ids, name + "." + field + ".npy");
  }
  if (input.given) {
    VOLLEY_REQUIRE(*input.given >= input.needed, IndexError,
                   "{}: node type {}: {}.num_nodes says {}, but ids or rows need {}", directory,
                   name, name, *input.given, input.needed);
  }
}

}  // namespace

bool is_hetero_edge_directory(const std::string& directory) {
  std::error_code error;
  if (!fs::is_directory(directory, error)) return false;
  try {
    const auto paths = sorted_entries(directory);
    return std::any_of(paths.begin(), paths.end(), is_edge_file);
  } catch (const Error&) {
    return false;
  }
}

HeteroDataset read_hetero_edge_directory(const std::string& directory) {
  std::map<std::string, EdgeList> edges;  // by edge type name (sorted)
  std::map<std::string, NodeInput> nodes;
  std::vector<std::string> node_order;
  auto node = [&](const std::string& name) -> NodeInput& {
    if (!nodes.count(name)) node_order.push_back(name);
    return nodes[name];
  };
  for (const fs::path& path : sorted_entries(directory)) {
    if (!is_edge_file(path)) continue;
    const std::string stem = path.stem().string();
    try {
      EdgeType::from_name(stem);
    } catch (const ValueError& error) {
      throw ValueError(fmt::format("{}: {}", path.string(), error.what()));
    }
    VOLLEY_REQUIRE(!edges.count(stem), ValueError, "{}: edge type {} has two files", directory,
                   stem);
    edges[stem] = path.extension() == ".npy"
                      ? edge_list_from_array(read_npy(path.string(), false), path.string())
                      : read_edge_list(path.string());
  }
  VOLLEY_REQUIRE(
      !edges.empty(), ValueError,
      "{}: no edge files (expected files named SRC__RELATION__DST.npy or .txt/.csv/.tsv)",
      directory);
  for (const auto& [name, list] : edges) {
    const EdgeType type = EdgeType::from_name(name);
    NodeInput& src = node(type.src);
    src.needed = std::max(src.needed, max_id(list.src) + 1);
    NodeInput& dst = node(type.dst);
    dst.needed = std::max(dst.needed, max_id(list.dst) + 1);
  }
  for (const std::string& name : node_order) read_node_files(directory, name, nodes[name]);
  std::vector<NodeTypeInfo> node_types;
  HeteroDataset dataset;
  dataset.name = fs::path(directory).lexically_normal().filename().string();
  for (const std::string& name : node_order) {
    const NodeInput& input = nodes[name];
    node_types.push_back({name, input.given.value_or(input.needed)});
    dataset.node_data.push_back(input.data);
  }
  std::vector<std::pair<EdgeType, Csr>> edge_types;
  for (const auto& [name, list] : edges) {
    const EdgeType type = EdgeType::from_name(name);
    const int64_t num_src = nodes[type.src].given.value_or(nodes[type.src].needed);
    const int64_t num_dst = nodes[type.dst].given.value_or(nodes[type.dst].needed);
    edge_types.emplace_back(
        type, build_bipartite_csr(list.src, list.dst, num_src, num_dst, list.weights, name));
  }
  dataset.graph = HeteroGraph(std::move(node_types), std::move(edge_types));
  return dataset;
}

}  // namespace volley
