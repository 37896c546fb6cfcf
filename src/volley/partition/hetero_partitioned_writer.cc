// Writing the heterogeneous partitioned directory (format: hetero_partition.h): node maps, then the
// parts through the one part writer of both kinds (partitioned_parts.cc: each edge type's rows and
// each node type's arrays streamed to K writers), each part's manifests, and partition.json last,
// in a staging directory renamed onto the output (partitioned_output.cc).
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <memory>

#include <nlohmann/json.hpp>

#include "volley/core/files.h"
#include "volley/graph/io/npy.h"
#include "volley/partition/internal/format.h"
#include "volley/partition/internal/partitioned_dataset.h"

namespace volley::internal {
namespace {

namespace fs = std::filesystem;
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

// What every step of one write shares.
struct HeteroWrite {
  const HeteroDataset& dataset;
  const HeteroPartitionResult& result;
  PartList parts;  // [K]: TypedParts

  int64_t num_parts() const { return static_cast<int64_t>(parts.size()); }
  TypedParts& part(int64_t p) { return static_cast<TypedParts&>(*parts[static_cast<size_t>(p)]); }
  const std::string& type_name(int t) const {
    return dataset.graph.node_types()[static_cast<size_t>(t)].name;
  }
};

// Finishes part p (its volley.json and part.json); returns its partition.json entry.
Json finish_part(HeteroWrite& write, int64_t p) {
  const auto i = static_cast<size_t>(p);
  const HeteroGraph& graph = write.dataset.graph;
  std::vector<std::pair<std::string, int64_t>> classes;
  Json types = Json::array(), nodes = Json::object(), edges = Json::object();
  for (int t = 0; t < graph.num_node_types(); ++t) {
    const PartitionBook& book = write.result.books[static_cast<size_t>(t)];
    classes.emplace_back(write.type_name(t),
                         write.dataset.node_data[static_cast<size_t>(t)].num_classes);
    types.push_back({{"name", write.type_name(t)},
                     {"first_node", book.begin(p)},
                     {"num_nodes", book.size(p)},
                     {"num_nodes_total", graph.num_nodes(t)}});
    nodes[write.type_name(t)] = book.size(p);
  }
  for (int r = 0; r < graph.num_edge_types(); ++r) {
    edges[graph.edge_types()[static_cast<size_t>(r)].name()] =
        write.result.part_edges[i][static_cast<size_t>(r)];
  }
  write.part(p).writer.finish(classes);
  const Json part_json = {{"format", kPartFormatName},
                          {"version", kTypedFormatVersion},
                          {"part", p},
                          {"num_parts", write.num_parts()},
                          {"node_types", types}};
  return finish_part_entry(write.part(p).directory, p, part_json,
                           {{"num_nodes", nodes}, {"num_edges", edges}});
}

Json manifest_json(const HeteroWrite& write, const PartitionOptions& options,
                   const std::vector<uint32_t>& node_map_crcs, Json parts, double seconds) {
  const HeteroGraph& graph = write.dataset.graph;
  const HeteroPartitionQuality& quality = write.result.quality;
  Json node_types = Json::array(), edge_types = Json::array(), balance = Json::object();
  for (int t = 0; t < graph.num_node_types(); ++t) {
    const auto i = static_cast<size_t>(t);
    const NodeTypeData& data = write.dataset.node_data[i];
    node_types.push_back({{"name", write.type_name(t)},
                          {"num_nodes", graph.num_nodes(t)},
                          {"num_classes", data.num_classes},
                          {"feature_dim", data.features ? data.features->dim(1) : 0},
                          {"offsets", write.result.books[i].offsets()},
                          {"node_map", array_json(node_map_file(write.type_name(t)), DType::kInt64,
                                                  {graph.num_nodes(t)}, node_map_crcs[i])},
                          {"balance", quality.node_balance[i]}});
    balance[write.type_name(t)] = quality.node_balance[i];
  }
  for (int r = 0; r < graph.num_edge_types(); ++r) {
    const EdgeType& type = graph.edge_types()[static_cast<size_t>(r)];
    edge_types.push_back({{"src", type.src},
                          {"relation", type.relation},
                          {"dst", type.dst},
                          {"num_edges", graph.edges(r).num_edges()},
                          {"cut_edges", quality.cut_edges_per_type[static_cast<size_t>(r)]}});
  }
  return {{"format", kFormatName},
          {"version", kTypedFormatVersion},
          {"heterogeneous", true},
          {"name", write.dataset.name},
          {"method", partition_method_name(options.method)},
          {"num_parts", options.num_parts},
          {"node_types", node_types},
          {"edge_types", edge_types},
          {"parts", std::move(parts)},
          {"quality",
           {{"cut_edges", quality.cut_edges},
            {"edge_cut_fraction", quality.edge_cut_fraction},
            {"node_balance", balance},
            {"edge_balance", quality.edge_balance}}},
          {"options", {{"balance_tolerance", options.balance_tolerance}, {"seed", options.seed}}},
          {"seconds", {{"assign", write.result.assign_seconds}, {"total", seconds}}}};
}

void write_everything(const HeteroDataset& dataset, const std::vector<Array>& assignment,
                      const PartitionOptions& options, const HeteroPartitionResult& result,
                      const std::string& output, const std::function<double()>& elapsed) {
  prepare_output(output);
  const HeteroGraph& graph = dataset.graph;
  HeteroWrite write{dataset, result, {}};
  std::vector<std::vector<int64_t>> new_id;  // [type][old id]
  std::vector<uint32_t> node_map_crcs;
  for (int t = 0; t < graph.num_node_types(); ++t) {
    new_id.push_back(renumber(result.books[static_cast<size_t>(t)],
                              assignment[static_cast<size_t>(t)].data<int32_t>(),
                              graph.num_nodes(t)));
    node_map_crcs.push_back(
        write_root_array(output, node_map_file(write.type_name(t)), new_id.back()));
  }
  std::vector<TypeRenumbering> types;
  for (int t = 0; t < graph.num_node_types(); ++t) {
    const auto i = static_cast<size_t>(t);
    types.push_back({assignment[i].data<int32_t>(), new_id[i], result.books[i]});
  }
  for (int64_t p = 0; p < options.num_parts; ++p) {
    std::vector<NodeTypeInfo> counts;
    for (int t = 0; t < graph.num_node_types(); ++t) {
      counts.push_back({write.type_name(t), result.books[static_cast<size_t>(t)].size(p)});
    }
    write.parts.push_back(std::make_unique<TypedParts>(join_path(output, part_directory_name(p)),
                                                       fmt::format("{}.part-{}", dataset.name, p),
                                                       counts, graph.edge_types()));
  }
  // Parts carry no edge times (the time files sit at the root: hetero_partition.h).
  for (int r = 0; r < graph.num_edge_types(); ++r) {
    const EdgeType& type = graph.edge_types()[static_cast<size_t>(r)];
    std::vector<int64_t> part_edges;
    for (const auto& edges : result.part_edges) part_edges.push_back(edges[static_cast<size_t>(r)]);
    write_edge_type(write.parts, r, graph.edges(r),
                    types[static_cast<size_t>(graph.node_type_index(type.src))],
                    types[static_cast<size_t>(graph.node_type_index(type.dst))], part_edges,
                    /*with_times=*/false, options.chunk_bytes);
  }
  for (int t = 0; t < graph.num_node_types(); ++t) {
    const NodeTypeData& data = dataset.node_data[static_cast<size_t>(t)];
    write_node_type(write.parts, t,
                    {data.features, data.labels, data.train_idx, data.val_idx, data.test_idx},
                    types[static_cast<size_t>(t)], options.chunk_bytes);
  }
  Json parts = Json::array();
  for (int64_t p = 0; p < write.num_parts(); ++p) parts.push_back(finish_part(write, p));
  const Json manifest = manifest_json(write, options, node_map_crcs, std::move(parts), elapsed());
  write_file_atomically(join_path(output, kManifestFile), manifest.dump(2) + "\n");
}

}  // namespace

void write_hetero_partitioned_dataset(const HeteroDataset& dataset,
                                      const std::vector<Array>& assignment,
                                      const PartitionOptions& options,
                                      const HeteroPartitionResult& result,
                                      const std::string& output,
                                      const std::function<double()>& elapsed) {
  write_staged(output, options.num_parts, [&](const std::string& staging) {
    write_everything(dataset, assignment, options, result, staging, elapsed);
  });
}

}  // namespace volley::internal
