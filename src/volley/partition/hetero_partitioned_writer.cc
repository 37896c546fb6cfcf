// Writing the heterogeneous partitioned directory (format: hetero_partition.h): node maps, then
// each edge type's rows split by owner (one edge type in memory at a time), each node type's
// features streamed through K writers, labels and splits, each part's manifests, and
// partition.json last, in a staging directory renamed onto the output (partitioned_output.cc).
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

// What every step of one write shares.
struct HeteroWrite {
  const HeteroDataset& dataset;
  const std::vector<Array>& assignment;  // [type]: int32 part of each old id
  const HeteroPartitionResult& result;
  std::vector<std::vector<int64_t>> new_id;                 // [type][old id]
  std::vector<std::string> part_dirs;                       // [K]
  std::vector<std::unique_ptr<HeteroDatasetWriter>> parts;  // [K]

  int64_t num_parts() const { return static_cast<int64_t>(parts.size()); }
  const std::string& type_name(int t) const {
    return dataset.graph.node_types()[static_cast<size_t>(t)].name;
  }
  const int32_t* part_of(int t) const { return assignment[static_cast<size_t>(t)].data<int32_t>(); }
  int64_t local_row(int t, int64_t old) const {
    const int64_t id = new_id[static_cast<size_t>(t)][static_cast<size_t>(old)];
    return id - result.books[static_cast<size_t>(t)].begin(part_of(t)[old]);
  }
};

// Each part's directory and heterogeneous dataset writer (owned counts per node type).
void open_parts(const std::string& output, HeteroWrite& write, int64_t num_parts) {
  const HeteroGraph& graph = write.dataset.graph;
  for (int64_t p = 0; p < num_parts; ++p) {
    write.part_dirs.push_back(join_path(output, part_directory_name(p)));
    std::vector<NodeTypeInfo> types;
    for (int t = 0; t < graph.num_node_types(); ++t) {
      types.push_back({write.type_name(t), write.result.books[static_cast<size_t>(t)].size(p)});
    }
    write.parts.push_back(std::make_unique<HeteroDatasetWriter>(
        write.part_dirs.back(), fmt::format("{}.part-{}", write.dataset.name, p), types,
        graph.edge_types()));
  }
}

// One edge type's rows, split by the owner of their destination; neighbors renumbered (new
// global source ids) and sorted by (new id, edge id).
template <typename Index>
void write_edge_type(HeteroWrite& write, int r) {
  const HeteroGraph& graph = write.dataset.graph;
  const EdgeType& type = graph.edge_types()[static_cast<size_t>(r)];
  const Csr& csr = graph.edges(r);
  const int src = graph.node_type_index(type.src);
  const int dst = graph.node_type_index(type.dst);
  const int32_t* owner = write.part_of(dst);
  const std::vector<int64_t>& new_src = write.new_id[static_cast<size_t>(src)];
  const auto k = static_cast<size_t>(write.num_parts());
  std::vector<std::vector<int64_t>> indptr(k, std::vector<int64_t>{0}), edge_ids(k);
  std::vector<std::vector<Index>> indices(k);
  std::vector<std::vector<float>> weights(k);
  const float* source_weights = csr.has_weights() ? csr.weights()->data<float>() : nullptr;
  std::vector<std::pair<int64_t, int64_t>> row;  // (new source id, CSR position)
  for (int64_t v = 0; v < csr.num_nodes(); ++v) {
    const auto p = static_cast<size_t>(owner[v]);
    row.clear();
    for (int64_t pos = csr.begin(v); pos < csr.end(v); ++pos) {
      row.emplace_back(new_src[static_cast<size_t>(csr.neighbor(pos))], pos);
    }
    std::sort(row.begin(), row.end(), [&](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first : csr.edge_id(a.second) < csr.edge_id(b.second);
    });
    for (const auto& [neighbor, pos] : row) {
      indices[p].push_back(static_cast<Index>(neighbor));
      edge_ids[p].push_back(csr.edge_id(pos));
      if (source_weights != nullptr) weights[p].push_back(source_weights[pos]);
    }
    indptr[p].push_back(static_cast<int64_t>(indices[p].size()));
  }
  for (size_t p = 0; p < k; ++p) {
    HeteroDatasetWriter& part = *write.parts[p];
    part.add_edge_array(type, "indptr", Array::from_vector(indptr[p]));
    part.add_edge_array(type, "indices", Array::from_vector(indices[p]));
    part.add_edge_array(type, "edge_ids", Array::from_vector(edge_ids[p]));
    if (source_weights != nullptr)
      part.add_edge_array(type, "weights", Array::from_vector(weights[p]));
    std::vector<int64_t>().swap(indptr[p]);
    std::vector<int64_t>().swap(edge_ids[p]);
    std::vector<Index>().swap(indices[p]);
  }
}

// Node type t's features, streamed through one writer per part.
void write_type_features(HeteroWrite& write, int t, int64_t chunk_bytes) {
  const Array& features = *write.dataset.node_data[static_cast<size_t>(t)].features;
  const PartitionBook& book = write.result.books[static_cast<size_t>(t)];
  std::vector<std::unique_ptr<NpyWriter>> writers;
  for (int64_t p = 0; p < write.num_parts(); ++p) {
    writers.push_back(std::make_unique<NpyWriter>(
        write.parts[static_cast<size_t>(p)]->node_path(write.type_name(t), "features"),
        features.dtype(), std::vector<int64_t>{book.size(p), features.dim(1)}));
  }
  write_features(features, write.part_of(t), write.num_parts(), writers, chunk_bytes);
  for (int64_t p = 0; p < write.num_parts(); ++p) {
    writers[static_cast<size_t>(p)]->close();
    write.parts[static_cast<size_t>(p)]->add_node_written(
        write.type_name(t), "features", features.dtype(), {book.size(p), features.dim(1)},
        writers[static_cast<size_t>(p)]->crc32());
  }
}

// Node type t's labels (by local row) and splits (sorted local rows).
void write_type_labels_and_splits(HeteroWrite& write, int t) {
  const NodeTypeData& data = write.dataset.node_data[static_cast<size_t>(t)];
  const PartitionBook& book = write.result.books[static_cast<size_t>(t)];
  const int32_t* part_of = write.part_of(t);
  const auto k = static_cast<size_t>(write.num_parts());
  if (data.labels) {
    std::vector<Array> labels;
    for (size_t p = 0; p < k; ++p) {
      labels.push_back(Array::empty(DType::kInt64, {book.size(static_cast<int64_t>(p))}));
    }
    const int64_t* source = data.labels->data<int64_t>();
    for (int64_t v = 0; v < data.labels->numel(); ++v) {
      labels[static_cast<size_t>(part_of[v])].data<int64_t>()[write.local_row(t, v)] = source[v];
    }
    for (size_t p = 0; p < k; ++p)
      write.parts[p]->add_node_array(write.type_name(t), "labels", labels[p]);
  }
  const std::pair<const char*, const std::optional<Array>*> splits[] = {
      {"train_idx", &data.train_idx}, {"val_idx", &data.val_idx}, {"test_idx", &data.test_idx}};
  for (const auto& [field, ids] : splits) {
    if (!ids->has_value()) continue;
    std::vector<std::vector<int64_t>> local(k);
    for (int64_t v : (*ids)->span<int64_t>()) {
      local[static_cast<size_t>(part_of[v])].push_back(write.local_row(t, v));
    }
    for (size_t p = 0; p < k; ++p) {
      std::sort(local[p].begin(), local[p].end());
      write.parts[p]->add_node_array(write.type_name(t), field, Array::from_vector(local[p]));
    }
  }
}

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
  write.parts[i]->finish(classes);
  const Json part_json = {{"format", kPartFormatName},
                          {"version", kTypedFormatVersion},
                          {"part", p},
                          {"num_parts", write.num_parts()},
                          {"node_types", types}};
  const std::string part_text = part_json.dump(2) + "\n";
  write_file_atomically(join_path(write.part_dirs[i], kPartFile), part_text);
  const std::string dataset_text =
      read_file_text(join_path(write.part_dirs[i], kDatasetManifestFile), "dataset manifest");
  return {{"directory", part_directory_name(p)},
          {"num_nodes", nodes},
          {"num_edges", edges},
          {"volley_json_crc32", crc32_hex(text_crc(dataset_text))},
          {"part_json_crc32", crc32_hex(text_crc(part_text))}};
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
  HeteroWrite write{dataset, assignment, result, {}, {}, {}};
  std::vector<uint32_t> node_map_crcs;
  for (int t = 0; t < graph.num_node_types(); ++t) {
    write.new_id.push_back(
        renumber(result.books[static_cast<size_t>(t)], write.part_of(t), graph.num_nodes(t)));
    const std::vector<int64_t>& ids = write.new_id.back();
    NpyWriter map(join_path(output, node_map_file(write.type_name(t))), DType::kInt64,
                  {static_cast<int64_t>(ids.size())});
    map.write(ids.data(), ids.size() * sizeof(int64_t));
    map.close();
    node_map_crcs.push_back(map.crc32());
  }
  open_parts(output, write, options.num_parts);
  for (int r = 0; r < graph.num_edge_types(); ++r) {
    if (graph.edges(r).index_dtype() == DType::kInt32) {
      write_edge_type<int32_t>(write, r);
    } else {
      write_edge_type<int64_t>(write, r);
    }
  }
  for (int t = 0; t < graph.num_node_types(); ++t) {
    if (dataset.node_data[static_cast<size_t>(t)].features) {
      write_type_features(write, t, options.chunk_bytes);
    }
    write_type_labels_and_splits(write, t);
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
