// The partitioned dataset directory (format: partition.h): streaming writer and checked reader.
#include "volley/partition/internal/partitioned_dataset.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <memory>
#include <numeric>
#include <sstream>

#include <nlohmann/json.hpp>

#include "volley/core/parallel.h"
#include "volley/core/progress.h"
#include "volley/graph/io/npy.h"
#include "volley/graph/json_checker.h"
#include "volley/partition/internal/partitioners.h"

namespace volley {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

constexpr char kManifestFile[] = "partition.json";
constexpr char kPartFile[] = "part.json";
constexpr char kDatasetManifestFile[] = "volley.json";
constexpr char kNodeMapFile[] = "node_map.npy";
constexpr char kCacheIdsFile[] = "cache_ids.npy";
constexpr char kCacheFeaturesFile[] = "cache_features.npy";
constexpr char kFormatName[] = "volley-partitioned-dataset";
constexpr char kPartFormatName[] = "volley-partition";
constexpr int64_t kFormatVersion = 1;

std::string part_directory_name(int64_t part) { return fmt::format("part-{}", part); }
std::string crc_text(uint32_t crc) { return fmt::format("{:08x}", crc); }
std::string join_path(const std::string& a, const std::string& b) {
  return (fs::path(a) / b).string();
}

std::string read_text(const std::string& path, const std::string& what) {
  std::ifstream stream(path, std::ios::binary);
  if (!stream) {
    throw IoError(
        fmt::format("{}: cannot open the {}: {}", path, what, internal::errno_text(errno)));
  }
  std::stringstream text;
  text << stream.rdbuf();
  return text.str();
}

uint32_t text_crc(const std::string& text) { return crc32_of(text.data(), text.size()); }

void write_text_atomically(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream stream(temporary, std::ios::binary | std::ios::trunc);
    stream << text;
    stream.close();
    if (!stream) {
      throw IoError(fmt::format("cannot write '{}': {}", temporary, internal::errno_text(errno)));
    }
  }
  std::error_code error;
  fs::rename(temporary, path, error);
  if (error) throw IoError(fmt::format("cannot write '{}': {}", path, error.message()));
}

Json array_json(const std::string& file, DType dtype, const std::vector<int64_t>& shape,
                uint32_t crc) {
  return {{"file", file}, {"dtype", dtype_name(dtype)}, {"shape", shape}, {"crc32", crc_text(crc)}};
}

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

// --- writing --------------------------------------------------------------------------------

using WriterList = std::vector<std::unique_ptr<NpyWriter>>;

// Rows in old-id order; each partition receives its rows in the same order, i.e. in new-id order.
// Within a row, neighbors are renumbered and sorted by new id (ties keep the input order).
template <typename Index>
void write_edges(const Csr& graph, const int32_t* part_of, const std::vector<int64_t>& new_id,
                 int64_t num_parts, WriterList& index_writers, WriterList& edge_id_writers,
                 WriterList& weight_writers, int64_t chunk_bytes) {
  const int64_t n = graph.num_nodes();
  const bool weighted = graph.has_weights();
  const int64_t per_edge = 2 * static_cast<int64_t>(sizeof(Index) + 8 + (weighted ? 4 : 0));
  const int64_t chunk_edges = std::max<int64_t>(1, chunk_bytes / per_edge);
  const float* weights = weighted ? graph.weights()->data<float>() : nullptr;
  std::vector<Index> out_index;
  std::vector<int64_t> out_edge_id;
  std::vector<float> out_weight;
  std::vector<std::vector<Index>> staged_index(static_cast<size_t>(num_parts));
  std::vector<std::vector<int64_t>> staged_edge_id(static_cast<size_t>(num_parts));
  std::vector<std::vector<float>> staged_weight(static_cast<size_t>(num_parts));
  ProgressBar bar("write edges", graph.num_edges());
  int64_t row = 0;
  while (row < n) {
    const int64_t first_edge = graph.begin(row);
    int64_t last = row + 1;
    while (last < n && graph.end(last) - first_edge <= chunk_edges) ++last;
    const int64_t end_edge = graph.begin(last);
    const auto count = static_cast<size_t>(end_edge - first_edge);
    out_index.resize(count);
    out_edge_id.resize(count);
    if (weighted) out_weight.resize(count);
    parallel_for(row, last, 256, [&](int64_t first, int64_t end) {
      std::vector<std::pair<int64_t, int64_t>> order;  // (new neighbor id, CSR position)
      for (int64_t v = first; v < end; ++v) {
        order.clear();
        for (int64_t pos = graph.begin(v); pos < graph.end(v); ++pos) {
          order.emplace_back(new_id[static_cast<size_t>(graph.neighbor(pos))], pos);
        }
        std::sort(order.begin(), order.end());
        size_t out = static_cast<size_t>(graph.begin(v) - first_edge);
        for (const auto& [neighbor, pos] : order) {
          out_index[out] = static_cast<Index>(neighbor);
          out_edge_id[out] = graph.edge_id(pos);
          if (weighted) out_weight[out] = weights[pos];
          ++out;
        }
      }
    });
    for (int64_t v = row; v < last; ++v) {
      const auto p = static_cast<size_t>(part_of[v]);
      const auto begin = static_cast<ptrdiff_t>(graph.begin(v) - first_edge);
      const auto end = static_cast<ptrdiff_t>(graph.end(v) - first_edge);
      staged_index[p].insert(staged_index[p].end(), out_index.begin() + begin,
                             out_index.begin() + end);
      staged_edge_id[p].insert(staged_edge_id[p].end(), out_edge_id.begin() + begin,
                               out_edge_id.begin() + end);
      if (weighted) {
        staged_weight[p].insert(staged_weight[p].end(), out_weight.begin() + begin,
                                out_weight.begin() + end);
      }
    }
    for (size_t p = 0; p < static_cast<size_t>(num_parts); ++p) {
      index_writers[p]->write(staged_index[p].data(), staged_index[p].size() * sizeof(Index));
      edge_id_writers[p]->write(staged_edge_id[p].data(), staged_edge_id[p].size() * 8);
      if (weighted) weight_writers[p]->write(staged_weight[p].data(), staged_weight[p].size() * 4);
      staged_index[p].clear();
      staged_edge_id[p].clear();
      staged_weight[p].clear();
    }
    const size_t index_size = dtype_size(graph.index_dtype());
    internal::release_mapped_pages(graph.indices(), static_cast<size_t>(first_edge) * index_size,
                                   static_cast<size_t>(end_edge) * index_size);
    if (graph.edge_ids()) {
      internal::release_mapped_pages(*graph.edge_ids(), static_cast<size_t>(first_edge) * 8,
                                     static_cast<size_t>(end_edge) * 8);
    }
    if (weighted) {
      internal::release_mapped_pages(*graph.weights(), static_cast<size_t>(first_edge) * 4,
                                     static_cast<size_t>(end_edge) * 4);
    }
    bar.advance(end_edge - first_edge);
    row = last;
  }
}

void write_features(const Array& features, const int32_t* part_of, int64_t num_parts,
                    WriterList& writers, int64_t chunk_bytes) {
  const int64_t n = features.dim(0);
  const auto row_bytes = static_cast<size_t>(features.dim(1)) * dtype_size(features.dtype());
  const int64_t rows_per_chunk =
      std::max<int64_t>(1, chunk_bytes / 2 / std::max<int64_t>(1, static_cast<int64_t>(row_bytes)));
  std::vector<std::vector<std::byte>> staged(static_cast<size_t>(num_parts));
  const std::byte* source = features.raw_data();
  ProgressBar bar("write features", n);
  for (int64_t first = 0; first < n; first += rows_per_chunk) {
    const int64_t last = std::min(n, first + rows_per_chunk);
    for (int64_t v = first; v < last; ++v) {
      const std::byte* row = source + static_cast<size_t>(v) * row_bytes;
      auto& out = staged[static_cast<size_t>(part_of[v])];
      out.insert(out.end(), row, row + row_bytes);
    }
    for (size_t p = 0; p < staged.size(); ++p) {
      writers[p]->write(staged[p].data(), staged[p].size());
      staged[p].clear();
    }
    internal::release_mapped_pages(features, static_cast<size_t>(first) * row_bytes,
                                   static_cast<size_t>(last) * row_bytes);
    bar.advance(last - first);
  }
}

}  // namespace

namespace internal {

void check_indptr(const Csr& graph, const std::string& source) {
  const int64_t* indptr = graph.indptr().data<int64_t>();
  const int64_t n = graph.num_nodes();
  VOLLEY_REQUIRE(indptr[0] == 0, ValueError, "{}: graph: indptr[0] = {}, expected 0", source,
                 indptr[0]);
  for (int64_t v = 0; v < n; ++v) {
    VOLLEY_REQUIRE(indptr[v + 1] >= indptr[v], ValueError,
                   "{}: graph: indptr[{}] = {} < indptr[{}] = {} (must be non-decreasing)", source,
                   v + 1, indptr[v + 1], v, indptr[v]);
  }
  VOLLEY_REQUIRE(indptr[n] == graph.num_edges(), ValueError,
                 "{}: graph: indptr[{}] = {}, expected num_edges = {}", source, n, indptr[n],
                 graph.num_edges());
}

void write_partitioned_dataset(const Dataset& dataset, const Array& assignment,
                               const std::vector<std::vector<int64_t>>& cached,
                               const PartitionOptions& options, const PartitionResult& result,
                               const std::string& output, const std::function<double()>& elapsed) {
  const Csr& graph = dataset.graph;
  const int64_t n = graph.num_nodes();
  const int64_t k = options.num_parts;
  const int32_t* part_of = assignment.data<int32_t>();
  const PartitionBook& book = result.book;

  std::error_code error;
  fs::create_directories(output, error);
  if (error || !fs::is_directory(output)) {
    throw IoError(fmt::format("cannot create the partitioned dataset directory '{}': {}", output,
                              error ? error.message() : "a file of that name exists"));
  }
  // No manifest until the end: a half-written directory never looks complete.
  fs::remove(join_path(output, kManifestFile), error);

  // Renumbering: partition p's nodes, in old-id order, get offsets[p], offsets[p] + 1, ...
  std::vector<int64_t> new_id(static_cast<size_t>(n));
  {
    std::vector<int64_t> next(book.offsets().begin(), book.offsets().end() - 1);
    for (int64_t v = 0; v < n; ++v)
      new_id[static_cast<size_t>(v)] = next[static_cast<size_t>(part_of[v])]++;
  }
  uint32_t node_map_crc = 0;
  {
    NpyWriter writer(join_path(output, kNodeMapFile), DType::kInt64, {n});
    writer.write(new_id.data(), new_id.size() * sizeof(int64_t));
    writer.close();
    node_map_crc = writer.crc32();
  }

  std::vector<std::string> part_dirs;
  std::vector<std::unique_ptr<DatasetWriter>> datasets;
  for (int64_t p = 0; p < k; ++p) {
    part_dirs.push_back(join_path(output, part_directory_name(p)));
    std::error_code ignored;
    fs::remove(join_path(part_dirs.back(), kPartFile), ignored);
    datasets.push_back(std::make_unique<DatasetWriter>(part_dirs.back(),
                                                       fmt::format("{}.part-{}", dataset.name, p)));
  }

  // indptr of each partition.
  {
    std::vector<std::vector<int64_t>> indptr(static_cast<size_t>(k));
    for (int64_t p = 0; p < k; ++p) {
      indptr[static_cast<size_t>(p)].reserve(static_cast<size_t>(book.size(p)) + 1);
      indptr[static_cast<size_t>(p)].push_back(0);
    }
    for (int64_t v = 0; v < n; ++v) {
      auto& rows = indptr[static_cast<size_t>(part_of[v])];
      rows.push_back(rows.back() + graph.degree(v));
    }
    for (int64_t p = 0; p < k; ++p) {
      datasets[static_cast<size_t>(p)]->add_array(
          "indptr", Array::from_vector(indptr[static_cast<size_t>(p)]));
    }
  }

  // Edges: indices, edge ids, weights, one streaming pass with K writers of each.
  {
    WriterList index_writers, edge_id_writers, weight_writers;
    for (int64_t p = 0; p < k; ++p) {
      const int64_t edges = result.part_edges[static_cast<size_t>(p)];
      auto& writer = *datasets[static_cast<size_t>(p)];
      index_writers.push_back(std::make_unique<NpyWriter>(
          writer.path_of("indices"), graph.index_dtype(), std::vector<int64_t>{edges}));
      edge_id_writers.push_back(std::make_unique<NpyWriter>(
          writer.path_of("edge_ids"), DType::kInt64, std::vector<int64_t>{edges}));
      if (graph.has_weights()) {
        weight_writers.push_back(std::make_unique<NpyWriter>(
            writer.path_of("weights"), DType::kFloat32, std::vector<int64_t>{edges}));
      }
    }
    if (graph.index_dtype() == DType::kInt32) {
      write_edges<int32_t>(graph, part_of, new_id, k, index_writers, edge_id_writers,
                           weight_writers, options.chunk_bytes);
    } else {
      write_edges<int64_t>(graph, part_of, new_id, k, index_writers, edge_id_writers,
                           weight_writers, options.chunk_bytes);
    }
    for (int64_t p = 0; p < k; ++p) {
      const auto i = static_cast<size_t>(p);
      const std::vector<int64_t> shape = {result.part_edges[i]};
      index_writers[i]->close();
      datasets[i]->add_written("indices", graph.index_dtype(), shape, index_writers[i]->crc32());
      edge_id_writers[i]->close();
      datasets[i]->add_written("edge_ids", DType::kInt64, shape, edge_id_writers[i]->crc32());
      if (graph.has_weights()) {
        weight_writers[i]->close();
        datasets[i]->add_written("weights", DType::kFloat32, shape, weight_writers[i]->crc32());
      }
    }
  }

  // Features, streamed likewise.
  if (dataset.features) {
    const Array& features = *dataset.features;
    WriterList writers;
    for (int64_t p = 0; p < k; ++p) {
      writers.push_back(std::make_unique<NpyWriter>(
          datasets[static_cast<size_t>(p)]->path_of("features"), features.dtype(),
          std::vector<int64_t>{book.size(p), features.dim(1)}));
    }
    write_features(features, part_of, k, writers, options.chunk_bytes);
    for (int64_t p = 0; p < k; ++p) {
      writers[static_cast<size_t>(p)]->close();
      datasets[static_cast<size_t>(p)]->add_written("features", features.dtype(),
                                                    {book.size(p), features.dim(1)},
                                                    writers[static_cast<size_t>(p)]->crc32());
    }
  }

  // Labels and splits (O(N) and O(split) memory).
  if (dataset.labels) {
    std::vector<Array> labels;
    for (int64_t p = 0; p < k; ++p) labels.push_back(Array::empty(DType::kInt64, {book.size(p)}));
    const int64_t* source = dataset.labels->data<int64_t>();
    for (int64_t v = 0; v < n; ++v) {
      const auto p = static_cast<size_t>(part_of[v]);
      labels[p].data<int64_t>()[new_id[static_cast<size_t>(v)] - book.offsets()[p]] = source[v];
    }
    for (int64_t p = 0; p < k; ++p) {
      datasets[static_cast<size_t>(p)]->add_array("labels", labels[static_cast<size_t>(p)]);
    }
  }
  const std::pair<const char*, const std::optional<Array>*> splits[] = {
      {"train_idx", &dataset.train_idx},
      {"val_idx", &dataset.val_idx},
      {"test_idx", &dataset.test_idx}};
  for (const auto& [field, ids] : splits) {
    if (!ids->has_value()) continue;
    std::vector<std::vector<int64_t>> local(static_cast<size_t>(k));
    for (int64_t v : (*ids)->span<int64_t>()) {
      const auto p = static_cast<size_t>(part_of[v]);
      local[p].push_back(new_id[static_cast<size_t>(v)] - book.offsets()[p]);
    }
    for (int64_t p = 0; p < k; ++p) {
      auto& rows = local[static_cast<size_t>(p)];
      std::sort(rows.begin(), rows.end());
      datasets[static_cast<size_t>(p)]->add_array(field, Array::from_vector(rows));
    }
  }

  // Finish each part: its dataset manifest, its cache, its part.json.
  Json parts = Json::array();
  for (int64_t p = 0; p < k; ++p) {
    const auto i = static_cast<size_t>(p);
    datasets[i]->finish(book.size(p), result.part_edges[i], dataset.num_classes,
                        graph.orientation());
    Json cache = nullptr;
    const std::string cache_ids_path = join_path(part_dirs[i], kCacheIdsFile);
    const std::string cache_features_path = join_path(part_dirs[i], kCacheFeaturesFile);
    std::error_code ignored;
    fs::remove(cache_ids_path, ignored);
    fs::remove(cache_features_path, ignored);
    const bool has_cache = i < cached.size() && !cached[i].empty() && dataset.features;
    if (has_cache) {
      const std::vector<int64_t>& old_ids = cached[i];
      const auto rows = static_cast<int64_t>(old_ids.size());
      std::vector<int64_t> ids(old_ids.size());
      for (size_t r = 0; r < old_ids.size(); ++r) ids[r] = new_id[static_cast<size_t>(old_ids[r])];
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
      internal::release_mapped_pages(features, 0, features.nbytes());
      NpyWriter feature_writer(cache_features_path, features.dtype(), {rows, features.dim(1)});
      feature_writer.write(rows_data.data(), rows_data.size());
      feature_writer.close();
      cache = {{"num_rows", rows},
               {"ids", array_json(kCacheIdsFile, DType::kInt64, {rows}, id_writer.crc32())},
               {"features", array_json(kCacheFeaturesFile, features.dtype(),
                                       {rows, features.dim(1)}, feature_writer.crc32())}};
    }
    const Json part_json = {{"format", kPartFormatName},
                            {"version", kFormatVersion},
                            {"part", p},
                            {"num_parts", k},
                            {"first_node", book.begin(p)},
                            {"num_nodes", book.size(p)},
                            {"num_nodes_total", n},
                            {"num_edges_total", graph.num_edges()},
                            {"cache", cache}};
    const std::string part_text = part_json.dump(2) + "\n";
    write_text_atomically(join_path(part_dirs[i], kPartFile), part_text);
    const std::string dataset_text =
        read_text(join_path(part_dirs[i], kDatasetManifestFile), "dataset manifest");
    parts.push_back({{"directory", part_directory_name(p)},
                     {"num_nodes", book.size(p)},
                     {"num_edges", result.part_edges[i]},
                     {"num_train", result.part_train[i]},
                     {"num_cached", has_cache ? static_cast<int64_t>(cached[i].size()) : 0},
                     {"volley_json_crc32", crc_text(text_crc(dataset_text))},
                     {"part_json_crc32", crc_text(text_crc(part_text))}});
  }
  // Part directories left over from an earlier run with more partitions would only confuse.
  for (int64_t p = k;; ++p) {
    const std::string stale = join_path(output, part_directory_name(p));
    std::error_code ignored;
    if (!fs::exists(join_path(stale, kPartFile), ignored)) break;
    fs::remove_all(stale, ignored);
  }

  const Json manifest = {{"format", kFormatName},
                         {"version", kFormatVersion},
                         {"name", dataset.name},
                         {"method", partition_method_name(options.method)},
                         {"num_parts", k},
                         {"num_nodes", n},
                         {"num_edges", graph.num_edges()},
                         {"num_classes", dataset.num_classes},
                         {"feature_dim", dataset.features ? dataset.features->dim(1) : 0},
                         {"offsets", book.offsets()},
                         {"node_map", array_json(kNodeMapFile, DType::kInt64, {n}, node_map_crc)},
                         {"parts", parts},
                         {"quality", quality_json(result.quality)},
                         {"options",
                          {{"balance_tolerance", options.balance_tolerance},
                           {"seed", options.seed},
                           {"fanouts", options.fanouts},
                           {"batch_size", options.batch_size},
                           {"cache_bytes", options.cache_bytes}}},
                         {"seconds", {{"assign", result.assign_seconds}, {"total", elapsed()}}}};
  write_text_atomically(join_path(output, kManifestFile), manifest.dump(2) + "\n");
}

}  // namespace internal

// --- reading --------------------------------------------------------------------------------

namespace {

struct ArrayRef {
  std::string file;
  DType dtype;
  std::vector<int64_t> shape;
  uint32_t crc32;
};

ArrayRef read_array_ref(const JsonChecker& check, const Json& json, const std::string& where) {
  ArrayRef ref;
  ref.file = check.string(json, "file", where);
  if (ref.file.empty() || ref.file.find('/') != std::string::npos || ref.file.starts_with(".")) {
    check.fail(where + "file", "a file name inside the directory", fmt::format("\"{}\"", ref.file));
  }
  const std::string dtype = check.string(json, "dtype", where);
  try {
    ref.dtype = dtype_from_name(dtype);
  } catch (const ValueError&) {
    check.fail(where + "dtype", "a dtype name such as \"int64\"", fmt::format("\"{}\"", dtype));
  }
  const Json& shape = check.require(json, "shape", where);
  if (!shape.is_array()) check.fail(where + "shape", "a list of sizes", shape.dump());
  for (const Json& extent : shape) {
    if (!extent.is_number_integer() || extent.get<int64_t>() < 0) {
      check.fail(where + "shape", "a list of non-negative integers", shape.dump());
    }
    ref.shape.push_back(extent.get<int64_t>());
  }
  ref.crc32 = check.crc(json, "crc32", where);
  return ref;
}

// Reads an array and checks it against its reference (as `manifest` says).
Array open_checked(const std::string& directory, const ArrayRef& ref, const char* manifest,
                   bool memory_map, bool verify_checksum) {
  return read_npy_expecting(join_path(directory, ref.file), {ref.dtype, ref.shape, ref.crc32},
                            manifest, memory_map, verify_checksum);
}

struct PartEntry {
  std::string directory;
  int64_t num_nodes, num_edges, num_train, num_cached;
  uint32_t volley_json_crc32, part_json_crc32;
};

struct FullManifest {
  PartitionManifest manifest;
  ArrayRef node_map;
  std::vector<PartEntry> parts;
};

FullManifest read_full_manifest(const std::string& directory) {
  const std::string path = join_path(directory, kManifestFile);
  std::error_code error;
  if (!fs::exists(path, error)) {
    throw IoError(fmt::format(
        "{}: no such file: '{}' is not a partitioned dataset directory (volley partition "
        "writes one)",
        path, directory));
  }
  const JsonChecker check(path);
  const std::string text = read_text(path, "partition manifest");
  const Json json = check.parse(text);
  FullManifest full;
  PartitionManifest& manifest = full.manifest;
  manifest.directory = directory;
  manifest.json = text;
  const Json& format = check.require(json, "format");
  if (format != kFormatName)
    check.fail("format", fmt::format("\"{}\"", kFormatName), format.dump());
  const int64_t version = check.integer(json, "version");
  if (version != kFormatVersion) {
    check.fail("version",
               fmt::format("{} (this Volley reads version {})", kFormatVersion, kFormatVersion),
               std::to_string(version));
  }
  manifest.name =
      json.contains("name") && json["name"].is_string() ? json["name"].get<std::string>() : "";
  const std::string method = check.string(json, "method");
  try {
    manifest.method = partition_method_from_name(method);
  } catch (const ValueError&) {
    check.fail("method", "random, metis, hotness or stream", fmt::format("\"{}\"", method));
  }
  const int64_t num_parts = check.integer(json, "num_parts");
  manifest.num_nodes = check.integer(json, "num_nodes");
  manifest.num_edges = check.integer(json, "num_edges");
  manifest.num_classes = json.contains("num_classes") ? check.integer(json, "num_classes") : 0;
  manifest.feature_dim = json.contains("feature_dim") ? check.integer(json, "feature_dim") : 0;
  const Json& offsets = check.require(json, "offsets");
  std::vector<int64_t> offset_values;
  if (offsets.is_array()) {
    for (const Json& value : offsets) {
      if (!value.is_number_integer()) check.fail("offsets", "a list of integers", offsets.dump());
      offset_values.push_back(value.get<int64_t>());
    }
  }
  if (!offsets.is_array() || static_cast<int64_t>(offset_values.size()) != num_parts + 1 ||
      offset_values.empty() || offset_values.back() != manifest.num_nodes) {
    check.fail("offsets",
               fmt::format("{} non-decreasing integers from 0 to num_nodes = {}", num_parts + 1,
                           manifest.num_nodes),
               offsets.dump());
  }
  try {
    manifest.book = PartitionBook(offset_values);
  } catch (const ValueError& problem) {
    check.fail("offsets", "non-decreasing integers from 0", problem.what());
  }
  full.node_map = read_array_ref(check, check.require(json, "node_map"), "node_map.");
  if (full.node_map.dtype != DType::kInt64 ||
      full.node_map.shape != std::vector<int64_t>{manifest.num_nodes}) {
    check.fail(
        "node_map", fmt::format("int64 [{}]", manifest.num_nodes),
        fmt::format("{} {}", dtype_name(full.node_map.dtype), npy_shape_text(full.node_map.shape)));
  }
  const Json& parts = check.require(json, "parts");
  if (!parts.is_array() || static_cast<int64_t>(parts.size()) != num_parts) {
    check.fail("parts", fmt::format("a list of {} partitions", num_parts),
               parts.is_array() ? fmt::format("{} entries", parts.size()) : parts.dump());
  }
  for (size_t p = 0; p < parts.size(); ++p) {
    const std::string where = fmt::format("parts[{}].", p);
    PartEntry entry;
    entry.directory = check.string(parts[p], "directory", where);
    if (entry.directory != part_directory_name(static_cast<int64_t>(p))) {
      check.fail(where + "directory",
                 fmt::format("\"{}\"", part_directory_name(static_cast<int64_t>(p))),
                 fmt::format("\"{}\"", entry.directory));
    }
    entry.num_nodes = check.integer(parts[p], "num_nodes", where);
    if (entry.num_nodes != manifest.book.size(static_cast<int64_t>(p))) {
      check.fail(where + "num_nodes",
                 fmt::format("{} (from offsets)", manifest.book.size(static_cast<int64_t>(p))),
                 std::to_string(entry.num_nodes));
    }
    entry.num_edges = check.integer(parts[p], "num_edges", where);
    entry.num_train = check.integer(parts[p], "num_train", where);
    entry.num_cached = check.integer(parts[p], "num_cached", where);
    entry.volley_json_crc32 = check.crc(parts[p], "volley_json_crc32", where);
    entry.part_json_crc32 = check.crc(parts[p], "part_json_crc32", where);
    manifest.part_edges.push_back(entry.num_edges);
    manifest.part_train.push_back(entry.num_train);
    manifest.part_cached.push_back(entry.num_cached);
    full.parts.push_back(entry);
  }
  const Json& quality = check.require(json, "quality");
  PartitionQuality& q = manifest.quality;
  auto number = [&](const char* key) {
    const Json& value = check.require(quality, key, "quality.");
    if (!value.is_number()) check.fail(fmt::format("quality.{}", key), "a number", value.dump());
    return value.get<double>();
  };
  q.edge_cut_fraction = number("edge_cut_fraction");
  q.cut_edges = check.integer(quality, "cut_edges", "quality.");
  q.node_balance = number("node_balance");
  q.edge_balance = number("edge_balance");
  q.train_balance = number("train_balance");
  q.remote_access_fraction = check.optional_number(quality, "remote_access_fraction");
  q.remote_access_fraction_cached = check.optional_number(quality, "remote_access_fraction_cached");
  q.metis_remote_access_fraction = check.optional_number(quality, "metis_remote_access_fraction");
  q.random_remote_access_fraction = check.optional_number(quality, "random_remote_access_fraction");
  return full;
}

// Checks a file against the CRC partition.json recorded for it; returns its text.
std::string read_recorded(const std::string& path, uint32_t expected, const std::string& what) {
  const std::string text = read_text(path, what);
  const uint32_t found = text_crc(text);
  if (found != expected) {
    throw IoError(fmt::format(
        "{}: crc32: expected {:08x} (as {} says), found {:08x}: the partition directory does "
        "not belong to this partitioned dataset (or was modified)",
        path, expected, kManifestFile, found));
  }
  return text;
}

void validate_part_graph(const Csr& graph, const std::string& directory, int64_t num_nodes_total,
                         int64_t num_edges_total) {
  internal::check_indptr(graph, directory);
  const int64_t e = graph.num_edges();
  std::atomic<int64_t> bad{-1};
  parallel_for(0, e, 1 << 16, [&](int64_t first, int64_t last) {
    for (int64_t k = first; k < last; ++k) {
      const int64_t u = graph.neighbor(k);
      const int64_t id = graph.edge_id(k);
      if (u < 0 || u >= num_nodes_total || id < 0 || id >= num_edges_total) {
        int64_t expected = -1;
        bad.compare_exchange_strong(expected, k);
        return;
      }
    }
  });
  const int64_t k = bad.load();
  if (k >= 0) {
    const int64_t u = graph.neighbor(k);
    if (u < 0 || u >= num_nodes_total) {
      throw IndexError(fmt::format(
          "{}/indices.npy: indices[{}] = {} out of range for a partitioned graph with {} nodes",
          directory, k, u, num_nodes_total));
    }
    throw IndexError(
        fmt::format("{}/edge_ids.npy: edge_ids[{}] = {} out of range for a graph with {} edges",
                    directory, k, graph.edge_id(k), num_edges_total));
  }
}

}  // namespace

bool is_partitioned_directory(const std::string& path) {
  std::error_code error;
  return fs::is_regular_file(join_path(path, kManifestFile), error);
}

PartitionManifest read_partition_manifest(const std::string& directory) {
  return read_full_manifest(directory).manifest;
}

Partition load_partition(const std::string& directory, int64_t part,
                         const PartitionLoadOptions& options) {
  const FullManifest full = read_full_manifest(directory);
  const PartitionManifest& manifest = full.manifest;
  const int64_t num_parts = manifest.book.num_parts();
  VOLLEY_REQUIRE(part >= 0 && part < num_parts, IndexError,
                 "partition {} out of range: '{}' has {} partitions", part, directory, num_parts);
  const PartEntry& entry = full.parts[static_cast<size_t>(part)];
  const std::string part_dir = join_path(directory, entry.directory);
  read_recorded(join_path(part_dir, kDatasetManifestFile), entry.volley_json_crc32,
                "dataset manifest");
  const std::string part_path = join_path(part_dir, kPartFile);
  const std::string part_text = read_recorded(part_path, entry.part_json_crc32, "part manifest");
  const JsonChecker check(part_path);
  const Json json = check.parse(part_text);
  if (json.value("format", "") != kPartFormatName) {
    check.fail("format", fmt::format("\"{}\"", kPartFormatName),
               json.contains("format") ? json["format"].dump() : "none");
  }
  auto expect = [&](const char* key, int64_t expected) {
    const int64_t found = check.integer(json, key);
    if (found != expected) {
      check.fail(key, fmt::format("{} (as {} says)", expected, kManifestFile),
                 std::to_string(found));
    }
  };
  expect("part", part);
  expect("num_parts", num_parts);
  expect("first_node", manifest.book.begin(part));
  expect("num_nodes", manifest.book.size(part));
  expect("num_nodes_total", manifest.num_nodes);
  expect("num_edges_total", manifest.num_edges);

  Partition result;
  result.part = part;
  result.book = manifest.book;
  result.data = load_dataset(part_dir, {.memory_map = options.memory_map,
                                        .verify_checksums = options.verify_checksums,
                                        .validate_graph = false});
  const Csr& graph = result.data.graph;
  if (graph.num_nodes() != manifest.book.size(part) || graph.num_edges() != entry.num_edges) {
    throw IoError(fmt::format("{}: expected {} nodes and {} edges (as {} says), found {} and {}",
                              part_dir, manifest.book.size(part), entry.num_edges, kManifestFile,
                              graph.num_nodes(), graph.num_edges()));
  }
  if (options.validate_graph) {
    validate_part_graph(graph, part_dir, manifest.num_nodes, manifest.num_edges);
  }
  const Json& cache = check.require(json, "cache");
  if (!cache.is_null()) {
    const ArrayRef ids_ref =
        read_array_ref(check, check.require(cache, "ids", "cache."), "cache.ids.");
    const ArrayRef features_ref =
        read_array_ref(check, check.require(cache, "features", "cache."), "cache.features.");
    result.cache_ids =
        open_checked(part_dir, ids_ref, kPartFile, options.memory_map, options.verify_checksums);
    result.cache_features = open_checked(part_dir, features_ref, kPartFile, options.memory_map,
                                         options.verify_checksums);
    const int64_t first = manifest.book.begin(part);
    const int64_t last = manifest.book.end(part);
    const int64_t* ids = result.cache_ids->data<int64_t>();
    for (int64_t r = 0; r < result.cache_ids->numel(); ++r) {
      VOLLEY_REQUIRE(
          ids[r] >= 0 && ids[r] < manifest.num_nodes && (ids[r] < first || ids[r] >= last),
          IndexError,
          "{}/{}: cache_ids[{}] = {}: expected a node of another partition in [0, {}) "
          "outside [{}, {})",
          part_dir, kCacheIdsFile, r, ids[r], manifest.num_nodes, first, last);
    }
  }
  return result;
}

Array load_node_map(const std::string& directory, bool verify_checksums) {
  const FullManifest full = read_full_manifest(directory);
  return open_checked(directory, full.node_map, kManifestFile, /*memory_map=*/true,
                      verify_checksums);
}

Array invert_node_map(const Array& node_map) {
  VOLLEY_REQUIRE(node_map.dtype() == DType::kInt64 && node_map.ndim() == 1, ValueError,
                 "node map: expected int64[N], found {}", node_map.describe());
  const int64_t n = node_map.numel();
  const int64_t* forward = node_map.data<int64_t>();
  Array inverse = Array::empty(DType::kInt64, {n});
  int64_t* backward = inverse.data<int64_t>();
  std::fill(backward, backward + n, -1);
  for (int64_t v = 0; v < n; ++v) {
    const int64_t id = forward[v];
    VOLLEY_REQUIRE(id >= 0 && id < n && backward[id] < 0, ValueError,
                   "node map: entry {} = {} is {} (not a permutation of [0, {}))", v, id,
                   id < 0 || id >= n ? "out of range" : "a repeated new id", n);
    backward[id] = v;
  }
  return inverse;
}

std::vector<std::string> verify_partitioned_dataset(const std::string& directory) {
  std::vector<std::string> problems;
  FullManifest full;
  try {
    full = read_full_manifest(directory);
  } catch (const Error& error) {
    problems.push_back(error.what());
    return problems;
  }
  try {
    invert_node_map(load_node_map(directory, /*verify_checksums=*/true));
  } catch (const Error& error) {
    problems.push_back(error.what());
  }
  for (int64_t p = 0; p < full.manifest.book.num_parts(); ++p) {
    try {
      load_partition(directory, p,
                     {.memory_map = true, .verify_checksums = true, .validate_graph = true});
    } catch (const Error& error) {
      problems.push_back(error.what());
    }
  }
  return problems;
}

}  // namespace volley
