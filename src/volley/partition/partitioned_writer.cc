// The one writer of a partitioned directory of either kind (formats: partition.h,
// hetero_partition.h): the node maps, the parts through the one part writer (partitioned_parts.cc:
// one streaming pass per array kind with K writers open at a time), each part's manifests, then
// partition.json last, all into a staging directory beside the output that is renamed onto it at
// the end (a failed or killed run leaves no half-written output; a crash may leave
// OUTPUT.partial-PID). The homogeneous kind (one node type, one edge type, node times and caches)
// is here; the heterogeneous kind's manifests are in hetero_partitioned_writer.cc.
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
Json write_cache(const std::string& dir, const Dataset& dataset, const std::vector<int64_t>& new_id,
                 const std::vector<int64_t>& old_ids) {
  const std::string cache_ids_path = join_path(dir, kCacheIdsFile);
  const std::string cache_features_path = join_path(dir, kCacheFeaturesFile);
  std::error_code ignored;
  fs::remove(cache_ids_path, ignored);
  fs::remove(cache_features_path, ignored);
  if (old_ids.empty() || !dataset.features) return nullptr;
  const auto rows = static_cast<int64_t>(old_ids.size());
  std::vector<int64_t> ids(old_ids.size());
  for (size_t r = 0; r < old_ids.size(); ++r) {
    ids[r] = new_id[static_cast<size_t>(old_ids[r])];
  }
  NpyWriter id_writer(cache_ids_path, DType::kInt64, {rows});
  id_writer.write(ids.data(), ids.size() * sizeof(int64_t));
  id_writer.close();
  const Array& features = *dataset.features;
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

// The homogeneous kind (format version 1): one DatasetWriter per part, caches, node times.
class HomogeneousKind : public KindWriter {
 public:
  HomogeneousKind(const Dataset& dataset, const PartitionResult& result,
                  const std::vector<std::vector<int64_t>>& cached, const PartitionOptions& options)
      : dataset_(dataset), result_(result), cached_(cached), options_(options) {}

  std::unique_ptr<PartArrays> open_part(std::string directory, std::string name,
                                        int64_t /*p*/) const override {
    return std::make_unique<DatasetParts>(std::move(directory), std::move(name));
  }

  Json finish_part(TypedWrite& write, int64_t p) const override {
    const auto i = static_cast<size_t>(p);
    const PartitionBook& book = result_.book;
    auto& part = static_cast<DatasetParts&>(*write.parts[i]);
    part.writer.finish(book.size(p), result_.part_edges[i], dataset_.num_classes,
                       dataset_.graph.orientation());
    static const std::vector<int64_t> kNone;
    const Json cache = write_cache(part.directory, dataset_, write.new_id.front(),
                                   i < cached_.size() ? cached_[i] : kNone);
    const Json part_json = {{"format", kPartFormatName},
                            {"version", kFormatVersion},
                            {"part", p},
                            {"num_parts", book.num_parts()},
                            {"first_node", book.begin(p)},
                            {"num_nodes", book.size(p)},
                            {"num_nodes_total", dataset_.graph.num_nodes()},
                            {"num_edges_total", dataset_.graph.num_edges()},
                            {"cache", cache}};
    return finish_part_entry(
        part.directory, p, part_json,
        {{"num_nodes", book.size(p)},
         {"num_edges", result_.part_edges[i]},
         {"num_train", result_.part_train[i]},
         {"num_cached", cache.is_null() ? 0 : static_cast<int64_t>(cached_[i].size())}});
  }

  Json manifest(const TypedWrite& write, const std::string& output, Json parts,
                double seconds) const override {
    const int64_t n = dataset_.graph.num_nodes();
    Json manifest = {
        {"format", kFormatName},
        {"version", kFormatVersion},
        {"name", dataset_.name},
        {"method", partition_method_name(options_.method)},
        {"num_parts", options_.num_parts},
        {"num_nodes", n},
        {"num_edges", dataset_.graph.num_edges()},
        {"num_classes", dataset_.num_classes},
        {"feature_dim", dataset_.features ? dataset_.features->dim(1) : 0},
        {"offsets", result_.book.offsets()},
        {"node_map", array_json(kNodeMapFile, DType::kInt64, {n}, write.node_map_crcs.front())},
        {"parts", std::move(parts)},
        {"quality", quality_json(result_.quality)},
        {"options",
         {{"balance_tolerance", options_.balance_tolerance},
          {"seed", options_.seed},
          {"fanouts", options_.fanouts},
          {"batch_size", options_.batch_size},
          {"cache_bytes", options_.cache_bytes}}},
        {"seconds", {{"assign", result_.assign_seconds}, {"total", seconds}}}};
    const Json node_time = write_node_time(output, dataset_.graph, write.new_id.front());
    if (!node_time.is_null()) manifest["node_time"] = node_time;
    return manifest;
  }

 private:
  const Dataset& dataset_;
  const PartitionResult& result_;
  const std::vector<std::vector<int64_t>>& cached_;
  const PartitionOptions& options_;
};

}  // namespace

void write_typed_partitioned_dataset(const WriteSource& source, const KindWriter& kind,
                                     const PartitionOptions& options, const std::string& output,
                                     const std::function<double()>& elapsed) {
  write_staged(output, options.num_parts, [&](const std::string& staging) {
    prepare_output(staging);
    TypedWrite write;
    std::vector<TypeRenumbering> types;
    for (size_t t = 0; t < source.node_types.size(); ++t) {
      const int32_t* part_of = source.assignment[t].data<int32_t>();
      write.new_id.push_back(renumber(source.books[t], part_of, source.assignment[t].numel()));
      write.node_map_crcs.push_back(
          write_root_array(staging, node_map_file(source.node_types[t]), write.new_id.back()));
    }
    for (size_t t = 0; t < source.node_types.size(); ++t) {  // refer into the finished new_id
      types.push_back({source.assignment[t].data<int32_t>(), write.new_id[t], source.books[t]});
    }
    for (int64_t p = 0; p < options.num_parts; ++p) {
      write.parts.push_back(kind.open_part(join_path(staging, part_directory_name(p)),
                                           fmt::format("{}.part-{}", source.name, p), p));
    }
    for (size_t r = 0; r < source.edges.size(); ++r) {
      std::vector<int64_t> part_edges;
      for (const auto& edges : source.part_edges) part_edges.push_back(edges[r]);
      const auto [src, dst] = source.edge_ends[r];
      write_edge_type(write.parts, static_cast<int>(r), *source.edges[r],
                      types[static_cast<size_t>(src)], types[static_cast<size_t>(dst)], part_edges,
                      source.with_times, options.chunk_bytes);
    }
    for (size_t t = 0; t < source.node_types.size(); ++t) {
      write_node_type(write.parts, static_cast<int>(t), source.arrays[t], types[t],
                      options.chunk_bytes);
    }
    Json parts = Json::array();
    for (int64_t p = 0; p < options.num_parts; ++p) parts.push_back(kind.finish_part(write, p));
    const Json manifest = kind.manifest(write, staging, std::move(parts), elapsed());
    write_file_atomically(join_path(staging, kManifestFile), manifest.dump(2) + "\n");
  });
}

void write_partitioned_dataset(const Dataset& dataset, const Array& assignment,
                               const std::vector<std::vector<int64_t>>& cached,
                               const PartitionOptions& options, const PartitionResult& result,
                               const std::string& output, const std::function<double()>& elapsed) {
  const std::vector<Array> assignments = {assignment};
  const std::vector<PartitionBook> books = {result.book};
  std::vector<std::vector<int64_t>> part_edges;
  for (int64_t edges : result.part_edges) part_edges.push_back({edges});
  const WriteSource source{
      dataset.name,
      {""},
      {{dataset.features, dataset.labels, dataset.train_idx, dataset.val_idx, dataset.test_idx}},
      assignments,
      books,
      {{0, 0}},
      {&dataset.graph},
      part_edges,
      /*with_times=*/true};
  write_typed_partitioned_dataset(source, HomogeneousKind(dataset, result, cached, options),
                                  options, output, elapsed);
}

}  // namespace volley::internal
