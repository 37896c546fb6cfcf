#include "volley/graph/io/ogb_hetero.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <map>

#include "volley/graph/hetero_dataset.h"
#include "volley/graph/internal/ogb_split.h"
#include "volley/graph/io/gzip_lines.h"
#include "volley/graph/io/npy.h"

namespace volley {
namespace {

namespace fs = std::filesystem;

template <typename T>
bool parse_number(std::string_view text, T* value) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), *value);
  return error == std::errc() && end == text.data() + text.size() && !text.empty();
}

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

// Streams TYPE's node-feat.csv.gz into the writer; returns the width.
int64_t write_features(const std::string& path, const NodeTypeInfo& type,
                       HeteroDatasetWriter& writer) {
  GzipLines lines(path);
  std::string_view line;
  std::vector<float> row;
  std::optional<NpyWriter> out;
  int64_t dim = 0, rows = 0;
  while (lines.next(&line)) {
    const auto parts = split_commas(line);
    if (!out) {
      dim = static_cast<int64_t>(parts.size());
      out.emplace(writer.node_path(type.name, "features"), DType::kFloat32,
                  std::vector<int64_t>{type.num_nodes, dim});
    }
    VOLLEY_REQUIRE(static_cast<int64_t>(parts.size()) == dim && rows < type.num_nodes, ValueError,
                   "{}:{}: expected {} values on one of {} rows", path, lines.line_number(), dim,
                   type.num_nodes);
    row.resize(parts.size());
    for (size_t j = 0; j < parts.size(); ++j) {
      VOLLEY_REQUIRE(parse_number(parts[j], &row[j]), ValueError, "{}:{}: column {}: not a number",
                     path, lines.line_number(), j);
    }
    out->write(row.data(), row.size() * sizeof(float));
    ++rows;
  }
  VOLLEY_REQUIRE(out && rows == type.num_nodes, ValueError,
                 "{}: {} rows, node type {} has {} nodes", path, rows, type.name, type.num_nodes);
  out->close();
  writer.add_node_written(type.name, "features", DType::kFloat32, {type.num_nodes, dim},
                          out->crc32());
  return dim;
}

// One integer (or "nan" when `allow_nan`, read as -1) per line, each in [-1 or 0, limit).
std::vector<int64_t> read_ints(const std::string& path, int64_t limit, bool allow_nan) {
  std::vector<int64_t> values;
  GzipLines lines(path);
  std::string_view line;
  while (lines.next(&line)) {
    int64_t value = -1;
    bool ok = parse_number(line, &value) || (allow_nan && line == "nan");
    double real = 0;
    if (!ok && parse_number(line, &real) && real == std::floor(real) && std::abs(real) < 1e15) {
      value = static_cast<int64_t>(real);  // "3.0"
      ok = true;
    }
    VOLLEY_REQUIRE(ok && value >= (allow_nan ? -1 : 0) && value < limit, ValueError,
                   "{}:{}: expected an id in [0, {}), found '{}'", path, lines.line_number(), limit,
                   line.substr(0, 60));
    values.push_back(value);
  }
  return values;
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
  for (const NodeTypeInfo& type : nodes) {
    result.num_nodes += type.num_nodes;
    const fs::path features = raw / "node-feat" / type.name / "node-feat.csv.gz";
    if (fs::is_regular_file(features, error)) {
      result.feature_dim =
          std::max(result.feature_dim, write_features(features.string(), type, writer));
    }
    const fs::path labels = raw / "node-label" / type.name / "node-label.csv.gz";
    if (fs::is_regular_file(labels, error)) {
      const auto values = read_ints(labels.string(), int64_t{1} << 40, true);
      VOLLEY_REQUIRE(static_cast<int64_t>(values.size()) == type.num_nodes, ValueError,
                     "{}: {} labels, node type {} has {} nodes", labels.string(), values.size(),
                     type.name, type.num_nodes);
      const int64_t count =
          values.empty() ? 0 : *std::max_element(values.begin(), values.end()) + 1;
      writer.add_node_array(type.name, "labels", Array::from_vector(values));
      classes.emplace_back(type.name, count);
      result.num_classes = std::max(result.num_classes, count);
    }
    const std::pair<const char*, const char*> splits[] = {
        {"train.csv.gz", "train_idx"}, {"valid.csv.gz", "val_idx"}, {"test.csv.gz", "test_idx"}};
    for (const auto& [file, field] : splits) {
      const fs::path path = root / "split" / result.split / type.name / file;
      if (result.split.empty() || !fs::is_regular_file(path, error)) continue;
      const auto ids = read_ints(path.string(), type.num_nodes, false);
      writer.add_node_array(type.name, field, Array::from_vector(ids));
      if (std::string_view(field) == "train_idx")
        result.num_train += static_cast<int64_t>(ids.size());
      if (std::string_view(field) == "val_idx") result.num_val += static_cast<int64_t>(ids.size());
      if (std::string_view(field) == "test_idx")
        result.num_test += static_cast<int64_t>(ids.size());
    }
  }
  writer.finish(classes);
  return result;
}

}  // namespace volley
