// `volley info` on a heterogeneous dataset directory (format version 2): every node type (count,
// features, labels, split) and every edge type (edges, index dtype, edge ids, weights, degrees).
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "text.h"
#include "volley/graph/hetero_dataset.h"

namespace volley::cli {
namespace {

using Json = nlohmann::ordered_json;

Json node_json(const NodeTypeInfo& type, const NodeTypeData& data) {
  auto size = [](const std::optional<Array>& ids) { return ids ? ids->numel() : 0; };
  Json json = {{"name", type.name}, {"num_nodes", type.num_nodes}};
  json["features"] = data.features ? Json{{"width", data.features->dim(1)},
                                          {"dtype", dtype_name(data.features->dtype())}}
                                   : Json();
  json["num_classes"] = data.num_classes;
  json["labels"] = data.labels.has_value();
  json["split"] = data.train_idx || data.val_idx || data.test_idx
                      ? Json{{"train", size(data.train_idx)},
                             {"val", size(data.val_idx)},
                             {"test", size(data.test_idx)}}
                      : Json();
  return json;
}

}  // namespace

void describe_hetero_dataset(const std::string& path, bool as_json, bool verify) {
  Json json = {{"path", path}, {"kind", "hetero_dataset"}};
  if (verify) {
    report_problems_or_throw(path, verify_hetero_dataset(path).problems, as_json, json);
  }
  const HeteroDataset dataset = load_hetero_dataset(path);
  const HeteroGraph& graph = dataset.graph;
  Json nodes = Json::array(), edges = Json::array();
  std::vector<std::string> lines;
  for (size_t t = 0; t < graph.node_types().size(); ++t) {
    const NodeTypeInfo& type = graph.node_types()[t];
    const NodeTypeData& data = dataset.node_data[t];
    nodes.push_back(node_json(type, data));
    std::string line = fmt::format("  {}: {} nodes", type.name, grouped(type.num_nodes));
    line += data.features ? fmt::format(", features {} {}", grouped(data.features->dim(1)),
                                        dtype_name(data.features->dtype()))
                          : ", no features";
    if (data.labels) line += fmt::format(", {} classes", grouped(data.num_classes));
    if (data.train_idx || data.val_idx || data.test_idx) {
      auto size = [](const std::optional<Array>& ids) { return ids ? ids->numel() : 0; };
      line += fmt::format(", split train {} / val {} / test {}", grouped(size(data.train_idx)),
                          grouped(size(data.val_idx)), grouped(size(data.test_idx)));
    }
    lines.push_back(line);
  }
  lines.push_back("edge types (in-neighbor CSR over the destination type):");
  for (int e = 0; e < graph.num_edge_types(); ++e) {
    const EdgeType& type = graph.edge_types()[static_cast<size_t>(e)];
    const Csr& csr = graph.edges(e);
    const auto [in_degree, out_degree] = row_column_degrees(csr, graph.num_nodes(type.src));
    edges.push_back({{"name", type.name()},
                     {"src", type.src},
                     {"relation", type.relation},
                     {"dst", type.dst},
                     {"num_edges", csr.num_edges()},
                     {"index_dtype", dtype_name(csr.index_dtype())},
                     {"edge_ids", csr.has_edge_ids()},
                     {"weights", csr.has_weights()},
                     {"in_degree", {{"mean", in_degree.mean}, {"max", in_degree.max}}},
                     {"out_degree_max", out_degree.max}});
    lines.push_back(fmt::format(
        "  {}: {} edges, {} indices, edge ids {}, weights {}, in-degree mean {:.2f} max {}, "
        "out-degree max {}",
        type.name(), grouped(csr.num_edges()), dtype_name(csr.index_dtype()),
        csr.has_edge_ids() ? "stored" : "CSR positions", csr.has_weights() ? "yes" : "no",
        in_degree.mean, grouped(in_degree.max), grouped(out_degree.max)));
  }
  if (as_json) {
    json["name"] = dataset.name;
    json["num_nodes"] = graph.total_nodes();
    json["num_edges"] = graph.total_edges();
    json["node_types"] = nodes;
    json["edge_types"] = edges;
    if (verify) json["verify"] = {{"ok", true}, {"problems", Json::array()}};
    std::printf("%s\n", json.dump().c_str());
    return;
  }
  std::printf("heterogeneous dataset: %s (%s)\n", dataset.name.c_str(), path.c_str());
  std::printf("nodes: %s in %d types; edges: %s in %d types\n",
              grouped(graph.total_nodes()).c_str(), graph.num_node_types(),
              grouped(graph.total_edges()).c_str(), graph.num_edge_types());
  std::printf("node types:\n");
  for (const auto& line : lines) std::printf("%s\n", line.c_str());
  if (verify) std::printf("verify: ok (every file matches volley.json, checksums included)\n");
}

}  // namespace volley::cli
