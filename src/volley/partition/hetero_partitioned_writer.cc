// The heterogeneous kind of the one partitioned directory writer (partitioned_writer.cc; format:
// hetero_partition.h): each part a heterogeneous dataset directory, every node and edge type's
// fields in the manifests.
#include <memory>

#include <nlohmann/json.hpp>

#include "volley/core/files.h"
#include "volley/graph/io/npy.h"
#include "volley/partition/internal/format.h"
#include "volley/partition/internal/partitioned_dataset.h"

namespace volley::internal {
namespace {

using Json = nlohmann::ordered_json;
using namespace partition_format;

// One part's HeteroDatasetWriter, its node and edge types by index.
class TypedParts : public PartArrays {
 public:
  TypedParts(std::string directory, std::string name, std::vector<NodeTypeInfo> node_types,
             std::vector<EdgeType> edge_types)
      : directory(directory),
        writer(std::move(directory), std::move(name), node_types, edge_types),
        node_types_(std::move(node_types)),
        edge_types_(std::move(edge_types)) {}
  std::string path_of(Owner owner, std::string_view field) const override {
    return owner.edge ? writer.edge_path(edge_type(owner), field)
                      : writer.node_path(node_type(owner), field);
  }
  void add_array(Owner owner, std::string_view field, const Array& array) override {
    owner.edge ? writer.add_edge_array(edge_type(owner), field, array)
               : writer.add_node_array(node_type(owner), field, array);
  }
  void add_written(Owner owner, std::string_view field, DType dtype, std::vector<int64_t> shape,
                   uint32_t crc32) override {
    owner.edge ? writer.add_edge_written(edge_type(owner), field, dtype, std::move(shape), crc32)
               : writer.add_node_written(node_type(owner), field, dtype, std::move(shape), crc32);
  }
  std::string directory;
  HeteroDatasetWriter writer;

 private:
  const std::string& node_type(Owner owner) const {
    return node_types_[static_cast<size_t>(owner.index)].name;
  }
  const EdgeType& edge_type(Owner owner) const {
    return edge_types_[static_cast<size_t>(owner.index)];
  }
  std::vector<NodeTypeInfo> node_types_;
  std::vector<EdgeType> edge_types_;
};

// The heterogeneous kind (format version 2): one HeteroDatasetWriter per part, every node and edge
// type's fields in the manifests' node_types and edge_types.
class HeteroKind : public KindWriter {
 public:
  HeteroKind(const HeteroDataset& dataset, const HeteroPartitionResult& result,
             const PartitionOptions& options)
      : dataset_(dataset), graph_(dataset.graph), result_(result), options_(options) {}

  std::unique_ptr<PartArrays> open_part(std::string directory, std::string name,
                                        int64_t p) const override {
    std::vector<NodeTypeInfo> counts;
    for (int t = 0; t < graph_.num_node_types(); ++t) {
      counts.push_back({type_name(t), result_.books[static_cast<size_t>(t)].size(p)});
    }
    return std::make_unique<TypedParts>(std::move(directory), std::move(name), counts,
                                        graph_.edge_types());
  }

  Json finish_part(TypedWrite& write, int64_t p) const override {
    auto& part = static_cast<TypedParts&>(*write.parts[static_cast<size_t>(p)]);
    std::vector<std::pair<std::string, int64_t>> classes;
    Json types = Json::array(), nodes = Json::object(), edges = Json::object();
    for (int t = 0; t < graph_.num_node_types(); ++t) {
      const PartitionBook& book = result_.books[static_cast<size_t>(t)];
      classes.emplace_back(type_name(t), dataset_.node_data[static_cast<size_t>(t)].num_classes);
      types.push_back({{"name", type_name(t)},
                       {"first_node", book.begin(p)},
                       {"num_nodes", book.size(p)},
                       {"num_nodes_total", graph_.num_nodes(t)}});
      nodes[type_name(t)] = book.size(p);
    }
    for (int r = 0; r < graph_.num_edge_types(); ++r) {
      edges[graph_.edge_types()[static_cast<size_t>(r)].name()] =
          result_.part_edges[static_cast<size_t>(p)][static_cast<size_t>(r)];
    }
    part.writer.finish(classes);
    const Json part_json = {{"format", kPartFormatName},
                            {"version", kTypedFormatVersion},
                            {"part", p},
                            {"num_parts", options_.num_parts},
                            {"node_types", types}};
    return finish_part_entry(part.directory, p, part_json,
                             {{"num_nodes", nodes}, {"num_edges", edges}});
  }

  Json manifest(const TypedWrite& write, const std::string& /*output*/, Json parts,
                double seconds) const override {
    const HeteroPartitionQuality& quality = result_.quality;
    Json node_types = Json::array(), edge_types = Json::array(), balance = Json::object();
    for (int t = 0; t < graph_.num_node_types(); ++t) {
      const auto i = static_cast<size_t>(t);
      const NodeTypeData& data = dataset_.node_data[i];
      node_types.push_back({{"name", type_name(t)},
                            {"num_nodes", graph_.num_nodes(t)},
                            {"num_classes", data.num_classes},
                            {"feature_dim", data.features ? data.features->dim(1) : 0},
                            {"offsets", result_.books[i].offsets()},
                            {"node_map", array_json(node_map_file(type_name(t)), DType::kInt64,
                                                    {graph_.num_nodes(t)}, write.node_map_crcs[i])},
                            {"balance", quality.node_balance[i]}});
      balance[type_name(t)] = quality.node_balance[i];
    }
    for (int r = 0; r < graph_.num_edge_types(); ++r) {
      const EdgeType& type = graph_.edge_types()[static_cast<size_t>(r)];
      edge_types.push_back({{"src", type.src},
                            {"relation", type.relation},
                            {"dst", type.dst},
                            {"num_edges", graph_.edges(r).num_edges()},
                            {"cut_edges", quality.cut_edges_per_type[static_cast<size_t>(r)]}});
    }
    return {
        {"format", kFormatName},
        {"version", kTypedFormatVersion},
        {"heterogeneous", true},
        {"name", dataset_.name},
        {"method", partition_method_name(options_.method)},
        {"num_parts", options_.num_parts},
        {"node_types", node_types},
        {"edge_types", edge_types},
        {"parts", std::move(parts)},
        {"quality",
         {{"cut_edges", quality.cut_edges},
          {"edge_cut_fraction", quality.edge_cut_fraction},
          {"node_balance", balance},
          {"edge_balance", quality.edge_balance}}},
        {"options", {{"balance_tolerance", options_.balance_tolerance}, {"seed", options_.seed}}},
        {"seconds", {{"assign", result_.assign_seconds}, {"total", seconds}}}};
  }

 private:
  const std::string& type_name(int t) const {
    return graph_.node_types()[static_cast<size_t>(t)].name;
  }
  const HeteroDataset& dataset_;
  const HeteroGraph& graph_;
  const HeteroPartitionResult& result_;
  const PartitionOptions& options_;
};

}  // namespace

void write_hetero_partitioned_dataset(const HeteroDataset& dataset,
                                      const std::vector<Array>& assignment,
                                      const PartitionOptions& options,
                                      const HeteroPartitionResult& result,
                                      const std::string& output,
                                      const std::function<double()>& elapsed) {
  const HeteroGraph& graph = dataset.graph;
  WriteSource source{dataset.name, {}, {}, assignment, result.books, {}, {}, result.part_edges};
  for (int t = 0; t < graph.num_node_types(); ++t) {
    const NodeTypeData& data = dataset.node_data[static_cast<size_t>(t)];
    source.node_types.push_back(graph.node_types()[static_cast<size_t>(t)].name);
    source.arrays.push_back(
        {data.features, data.labels, data.train_idx, data.val_idx, data.test_idx});
  }
  for (int r = 0; r < graph.num_edge_types(); ++r) {
    const EdgeType& type = graph.edge_types()[static_cast<size_t>(r)];
    source.edge_ends.emplace_back(graph.node_type_index(type.src), graph.node_type_index(type.dst));
    source.edges.push_back(&graph.edges(r));
  }
  // Parts carry no edge times (the time files sit at the root: hetero_partition.h).
  write_typed_partitioned_dataset(source, HeteroKind(dataset, result, options), options, output,
                                  elapsed);
}

}  // namespace volley::internal
