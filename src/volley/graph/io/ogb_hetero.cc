#include "volley/graph/io/ogb_hetero.h"

#include <algorithm>
#include <filesystem>

#include "volley/graph/hetero_dataset.h"
#include "volley/graph/internal/ogb_files.h"
#include "volley/graph/io/gzip_lines.h"

namespace volley {
namespace {

namespace fs = std::filesystem;
using graph_internal::parse_number;

std::vector<std::string_view> split_commas(std::string_view line) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    const size_t comma = line.find(',', start);
    parts.push_back(
        line.substr(start, comma == std::string_view::npos ? line.npos : comma - start));
    if (comma == std::string_view::npos) return parts;
    start = comma + 1;
  }
}

std::vector<NodeTypeInfo> read_node_dict(const std::string& path) {
  GzipLines lines(path);
  std::string_view line;
  VOLLEY_REQUIRE(lines.next(&line), ValueError, "{}:1: expected the node type names", path);
  std::vector<NodeTypeInfo> types;
  for (std::string_view name : split_commas(line)) types.push_back({std::string(name), 0});
  VOLLEY_REQUIRE(lines.next(&line), ValueError, "{}:2: expected the node counts", path);
  const auto counts = split_commas(line);
  VOLLEY_REQUIRE(counts.size() == types.size(), ValueError, "{}:2: {} counts for {} node types",
                 path, counts.size(), types.size());
  for (size_t i = 0; i < counts.size(); ++i) {
    VOLLEY_REQUIRE(parse_number(counts[i], &types[i].num_nodes) && types[i].num_nodes >= 0,
                   ValueError, "{}:2: count {} of node type {} is not a non-negative integer", path,
                   i, types[i].name);
  }
  return types;
}

int64_t count_of(const std::vector<NodeTypeInfo>& types, const std::string& name,
                 const std::string& where) {
  for (const auto& type : types) {
    if (type.name == name) return type.num_nodes;
  }
  throw ValueError(fmt::format("{}: '{}' is not a node type of num-node-dict.csv.gz", where, name));
}

// One relation's edges, checked against both types' counts.
Csr read_relation(const std::string& path, const EdgeType& type, int64_t num_src, int64_t num_dst) {
  std::vector<int64_t> src, dst;
  GzipLines lines(path);
  std::string_view line;
  while (lines.next(&line)) {
    const auto parts = split_commas(line);
    int64_t s = -1, d = -1;
    VOLLEY_REQUIRE(parts.size() == 2 && parse_number(parts[0], &s) && parse_number(parts[1], &d),
                   ValueError, "{}:{}: expected 'src,dst', found '{}'", path, lines.line_number(),
                   line.substr(0, 60));
    VOLLEY_REQUIRE(s >= 0 && s < num_src && d >= 0 && d < num_dst, IndexError,
                   "{}:{}: edge {} -> {} out of range for {} {} and {} {} nodes", path,
                   lines.line_number(), s, d, num_src, type.src, num_dst, type.dst);
    src.push_back(s);
    dst.push_back(d);
  }
  return build_bipartite_csr(Array::from_vector(src), Array::from_vector(dst), num_src, num_dst,
                             std::nullopt, type.name());
}

}  // namespace

bool is_ogb_hetero_directory(const std::string& directory) {
  std::error_code error;
  const fs::path raw = fs::path(directory) / "raw";
  return fs::is_regular_file(raw / "num-node-dict.csv.gz", error) &&
         fs::is_directory(raw / "relations", error);
}

OgbConversion convert_ogb_hetero_dataset(const std::string& input, const std::string& output,
                                         const OgbConvertOptions& options) {
  VOLLEY_REQUIRE(
      !options.undirected && !options.drop_self_loops && options.feature_dtype == DType::kFloat32,
      ValueError,
      "{}: a heterogeneous OGB dataset takes no --undirected, --drop-self-loops or "
      "--feature-dtype (its relations are stored as they are; add reverse relations "
      "as edge files instead)",
      input);
  const fs::path root(input), raw = root / "raw";
  const std::vector<NodeTypeInfo> nodes = read_node_dict((raw / "num-node-dict.csv.gz").string());
  std::vector<std::pair<EdgeType, fs::path>> relations;
  for (const auto& entry : fs::directory_iterator(raw / "relations")) {
    if (!entry.is_directory()) continue;
    std::string name = entry.path().filename().string();
    const size_t first = name.find("___"), second = name.find("___", first + 3);
    VOLLEY_REQUIRE(first != name.npos && second != name.npos, ValueError,
                   "{}: expected a folder named SRC___RELATION___DST", entry.path().string());
    relations.push_back({{name.substr(0, first), name.substr(first + 3, second - first - 3),
                          name.substr(second + 3)},
                         entry.path() / "edge.csv.gz"});
  }
  std::sort(relations.begin(), relations.end(),
            [](const auto& a, const auto& b) { return a.first.name() < b.first.name(); });
  std::vector<EdgeType> edge_types;
  for (const auto& relation : relations) edge_types.push_back(relation.first);
  OgbConversion result;
  fs::path name_path = root.lexically_normal();
  if (name_path.filename().empty()) name_path = name_path.parent_path();
  result.name = options.name.empty() ? name_path.filename().string() : options.name;
  result.split = graph_internal::choose_ogb_split(root, options.split);
  HeteroDatasetWriter writer(output, result.name, nodes, edge_types);
  for (const auto& [type, path] : relations) {
    const Csr csr = read_relation(path.string(), type, count_of(nodes, type.src, path.string()),
                                  count_of(nodes, type.dst, path.string()));
    writer.add_edge_array(type, "indptr", csr.indptr());
    writer.add_edge_array(type, "indices", csr.indices());
    writer.add_edge_array(type, "edge_ids", *csr.edge_ids());
    result.num_edges += csr.num_edges();
  }
  std::vector<std::pair<std::string, int64_t>> classes;
  std::error_code error;
  graph_internal::ByteProgress silent;
  for (const NodeTypeInfo& type : nodes) {
    result.num_nodes += type.num_nodes;
    const fs::path features = raw / "node-feat" / type.name / "node-feat.csv.gz";
    if (fs::is_regular_file(features, error)) {
      const auto written =
          graph_internal::write_ogb_features(features.string(), type.num_nodes, DType::kFloat32,
                                             writer.node_path(type.name, "features"), silent);
      if (written.dim > 0) {
        writer.add_node_written(type.name, "features", DType::kFloat32,
                                {type.num_nodes, written.dim}, written.crc32);
      }
      result.feature_dim = std::max(result.feature_dim, written.dim);
    }
    const fs::path labels = raw / "node-label" / type.name / "node-label.csv.gz";
    if (fs::is_regular_file(labels, error)) {
      auto [array, count] =
          graph_internal::read_ogb_labels(labels.string(), type.num_nodes, silent);
      writer.add_node_array(type.name, "labels", array);
      classes.emplace_back(type.name, count);
      result.num_classes = std::max(result.num_classes, count);
    }
    int64_t* sizes[] = {&result.num_train, &result.num_val, &result.num_test};
    const std::pair<const char*, const char*> splits[] = {
        {"train.csv.gz", "train_idx"}, {"valid.csv.gz", "val_idx"}, {"test.csv.gz", "test_idx"}};
    for (int i = 0; i < 3; ++i) {
      const fs::path path = root / "split" / result.split / type.name / splits[i].first;
      if (result.split.empty() || !fs::is_regular_file(path, error)) continue;
      const Array ids = graph_internal::read_ogb_split(path.string(), type.num_nodes, silent);
      writer.add_node_array(type.name, splits[i].second, ids);
      *sizes[i] += ids.numel();
    }
  }
  writer.finish(classes);
  return result;
}

}  // namespace volley
