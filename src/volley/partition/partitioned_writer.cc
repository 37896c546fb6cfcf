// Writing the homogeneous partitioned directory (format: partition.h): the node map and node
// times, the parts through the one part writer of both kinds (partitioned_parts.cc: one streaming
// pass per array kind with K writers open at a time) as its one node type and one edge type, each
// part's cache and manifests, then partition.json last, all into a staging directory beside the
// output that is renamed onto it at the end (a failed or killed run leaves no half-written output;
// a crash may leave OUTPUT.partial-PID).
#include <algorithm>
#include <filesystem>
#include <memory>
#include <numeric>

#include <nlohmann/json.hpp>

#include "volley/core/files.h"
#include "volley/graph/io/npy.h"
#include "volley/partition/internal/format.h"
#include "volley/partition/internal/partitioned_dataset.h"
#include "volley/partition/internal/partitioners.h"

namespace volley::internal {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;
using namespace partition_format;

Json quality_json(const PartitionQuality& quality) {
  Json json = {{"edge_cut_fraction", quality.edge_cut_fraction},
               {"cut_edges", quality.cut_edges},
               {"node_balance", quality.node_balance},
               {"edge_balance", quality.edge_balance},
               {"train_balance", quality.train_balance}};
  auto optional = [&](const char* key, const std::optional<double>& value) {
    json[key] = value ? Json(*value) : Json(nullptr);
  };
  optional("remote_access_fraction", quality.remote_access_fraction);
  optional("remote_access_fraction_cached", quality.remote_access_fraction_cached);
  optional("metis_remote_access_fraction", quality.metis_remote_access_fraction);
  optional("random_remote_access_fraction", quality.random_remote_access_fraction);
  return json;
}

// One part's DatasetWriter: the one node type and the one edge type of a homogeneous dataset.
class DatasetParts : public PartArrays {
 public:
  DatasetParts(std::string directory, std::string name)
      : directory(directory), writer(std::move(directory), std::move(name)) {}
  std::string path_of(Owner, std::string_view field) const override {
    return writer.path_of(std::string(field));
  }
  void add_array(Owner, std::string_view field, const Array& array) override {
    writer.add_array(std::string(field), array);
  }
  void add_written(Owner, std::string_view field, DType dtype, std::vector<int64_t> shape,
                   uint32_t crc32) override {
    writer.add_written(std::string(field), dtype, std::move(shape), crc32);
  }
  std::string directory;
  DatasetWriter writer;
};

// What every step of one write shares.
struct PartsWrite {
  const Dataset& dataset;
  const PartitionResult& result;
  std::vector<int64_t> new_id;  // [N]: each old id's new id
  PartList parts;               // [K]: DatasetParts

  DatasetParts& part(int64_t p) {
    return static_cast<DatasetParts&>(*parts[static_cast<size_t>(p)]);
  }
};

// node_time.npy (int64 [N], new-id order) at the root; returns its partition.json entry, or
// null when the input has no node times.
Json write_node_time(const std::string& output, const Csr& graph,
                     const std::vector<int64_t>& new_id) {
  if (!graph.node_time()) return nullptr;
  const int64_t n = graph.num_nodes();
  std::vector<int64_t> time(static_cast<size_t>(n));
  const int64_t* source = graph.node_time()->data<int64_t>();
  for (int64_t v = 0; v < n; ++v)
    time[static_cast<size_t>(new_id[static_cast<size_t>(v)])] = source[v];
  return array_json(kNodeTimeFile, DType::kInt64, {n},
                    write_root_array(output, kNodeTimeFile, time));
}

// Part p's cache (its cached remote nodes' new ids and feature rows, hottest first); returns its
// part.json entry, or null when the part caches nothing.
Json write_cache(PartsWrite& write, int64_t p, const std::vector<int64_t>& old_ids) {
  const std::string& dir = write.part(p).directory;
  const std::string cache_ids_path = join_path(dir, kCacheIdsFile);
  const std::string cache_features_path = join_path(dir, kCacheFeaturesFile);
  std::error_code ignored;
  fs::remove(cache_ids_path, ignored);
  fs::remove(cache_features_path, ignored);
  if (old_ids.empty() || !write.dataset.features) return nullptr;
  const auto rows = static_cast<int64_t>(old_ids.size());
  std::vector<int64_t> ids(old_ids.size());
  for (size_t r = 0; r < old_ids.size(); ++r) {
    ids[r] = write.new_id[static_cast<size_t>(old_ids[r])];
  }
  NpyWriter id_writer(cache_ids_path, DType::kInt64, {rows});
  id_writer.write(ids.data(), ids.size() * sizeof(int64_t));
  id_writer.close();
  const Array& features = *write.dataset.features;
  const auto row_bytes = static_cast<size_t>(features.dim(1)) * dtype_size(features.dtype());
  // Rows read in old-id order (sequential on disk), placed in hotness order.
  std::vector<size_t> by_id(old_ids.size());
  std::iota(by_id.begin(), by_id.end(), size_t{0});
  std::sort(by_id.begin(), by_id.end(),
            [&](size_t a, size_t b) { return old_ids[a] < old_ids[b]; });
  std::vector<std::byte> rows_data(old_ids.size() * row_bytes);
  for (size_t r : by_id) {
    std::copy_n(features.raw_data() + static_cast<size_t>(old_ids[r]) * row_bytes, row_bytes,
                rows_data.data() + r * row_bytes);
  }
  release_mapped_pages(features, 0, features.nbytes());
  NpyWriter feature_writer(cache_features_path, features.dtype(), {rows, features.dim(1)});
  feature_writer.write(rows_data.data(), rows_data.size());
  feature_writer.close();
  return {{"num_rows", rows},
          {"ids", array_json(kCacheIdsFile, DType::kInt64, {rows}, id_writer.crc32())},
          {"features", array_json(kCacheFeaturesFile, features.dtype(), {rows, features.dim(1)},
                                  feature_writer.crc32())}};
}

// Finishes part p (its dataset manifest, its cache, its part.json); returns its partition.json
// entry.
Json finish_part(PartsWrite& write, int64_t p, const std::vector<std::vector<int64_t>>& cached) {
  const auto i = static_cast<size_t>(p);
  const Dataset& dataset = write.dataset;
  const PartitionResult& result = write.result;
  const PartitionBook& book = result.book;
  write.part(p).writer.finish(book.size(p), result.part_edges[i], dataset.num_classes,
                              dataset.graph.orientation());
  static const std::vector<int64_t> kNone;
  const Json cache = write_cache(write, p, i < cached.size() ? cached[i] : kNone);
  const Json part_json = {{"format", kPartFormatName},
                          {"version", kFormatVersion},
                          {"part", p},
                          {"num_parts", book.num_parts()},
                          {"first_node", book.begin(p)},
                          {"num_nodes", book.size(p)},
                          {"num_nodes_total", dataset.graph.num_nodes()},
                          {"num_edges_total", dataset.graph.num_edges()},
                          {"cache", cache}};
  return finish_part_entry(
      write.part(p).directory, p, part_json,
      {{"num_nodes", book.size(p)},
       {"num_edges", result.part_edges[i]},
       {"num_train", result.part_train[i]},
       {"num_cached", cache.is_null() ? 0 : static_cast<int64_t>(cached[i].size())}});
}

Json manifest_json(const Dataset& dataset, const PartitionOptions& options,
                   const PartitionResult& result, uint32_t node_map_crc, Json parts,
                   double seconds) {
  const int64_t n = dataset.graph.num_nodes();
  return {{"format", kFormatName},
          {"version", kFormatVersion},
          {"name", dataset.name},
          {"method", partition_method_name(options.method)},
          {"num_parts", options.num_parts},
          {"num_nodes", n},
          {"num_edges", dataset.graph.num_edges()},
          {"num_classes", dataset.num_classes},
          {"feature_dim", dataset.features ? dataset.features->dim(1) : 0},
          {"offsets", result.book.offsets()},
          {"node_map", array_json(kNodeMapFile, DType::kInt64, {n}, node_map_crc)},
          {"parts", std::move(parts)},
          {"quality", quality_json(result.quality)},
          {"options",
           {{"balance_tolerance", options.balance_tolerance},
            {"seed", options.seed},
            {"fanouts", options.fanouts},
            {"batch_size", options.batch_size},
            {"cache_bytes", options.cache_bytes}}},
          {"seconds", {{"assign", result.assign_seconds}, {"total", seconds}}}};
}

// write_partitioned_dataset's body: writes the whole directory `output` (a fresh staging one).
void write_everything(const Dataset& dataset, const Array& assignment,
                      const std::vector<std::vector<int64_t>>& cached,
                      const PartitionOptions& options, const PartitionResult& result,
                      const std::string& output, const std::function<double()>& elapsed) {
  prepare_output(output);
  const Csr& graph = dataset.graph;
  const int32_t* part_of = assignment.data<int32_t>();
  PartsWrite write{dataset, result, renumber(result.book, part_of, graph.num_nodes()), {}};
  const uint32_t node_map_crc = write_root_array(output, kNodeMapFile, write.new_id);
  const Json node_time = write_node_time(output, graph, write.new_id);
  for (int64_t p = 0; p < options.num_parts; ++p) {
    write.parts.push_back(std::make_unique<DatasetParts>(
        join_path(output, part_directory_name(p)), fmt::format("{}.part-{}", dataset.name, p)));
  }
  const TypeRenumbering nodes{part_of, write.new_id, result.book};
  write_edge_type(write.parts, 0, graph, nodes, nodes, result.part_edges, /*with_times=*/true,
                  options.chunk_bytes);
  write_node_type(
      write.parts, 0,
      {dataset.features, dataset.labels, dataset.train_idx, dataset.val_idx, dataset.test_idx},
      nodes, options.chunk_bytes);
  Json parts = Json::array();
  for (int64_t p = 0; p < options.num_parts; ++p) parts.push_back(finish_part(write, p, cached));
  Json manifest =
      manifest_json(dataset, options, result, node_map_crc, std::move(parts), elapsed());
  if (!node_time.is_null()) manifest["node_time"] = node_time;
  write_file_atomically(join_path(output, kManifestFile), manifest.dump(2) + "\n");
}

}  // namespace

void write_partitioned_dataset(const Dataset& dataset, const Array& assignment,
                               const std::vector<std::vector<int64_t>>& cached,
                               const PartitionOptions& options, const PartitionResult& result,
                               const std::string& output, const std::function<double()>& elapsed) {
  write_staged(output, options.num_parts, [&](const std::string& staging) {
    write_everything(dataset, assignment, cached, options, result, staging, elapsed);
  });
}

}  // namespace volley::internal
