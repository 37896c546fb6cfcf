// Writing the partitioned dataset directory (format: partition.h): one streaming pass per array
// kind with K writers open at a time, then each part's manifests, then partition.json last, all
// into a staging directory beside the output that is renamed onto it at the end (a failed or
// killed run leaves no half-written output; a crash may leave OUTPUT.partial-PID).
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <numeric>
#include <tuple>

#include <nlohmann/json.hpp>

#include "volley/core/files.h"
#include "volley/core/parallel.h"
#include "volley/core/progress.h"
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

using WriterList = std::vector<std::unique_ptr<NpyWriter>>;

// Rows in old-id order; each partition receives its rows in the same order, i.e. in new-id order.
// Within a row, neighbors are renumbered and sorted by new id (ties keep the input order), or by
// (time, new id) when the input's rows were sorted by time (`sort_by_*`, edge time or the
// neighbor's node time by old id), so sorted rows stay sorted. Edge times follow their edges.
struct EdgeTimes {
  const int64_t *edge_time = nullptr, *sort_by_edge = nullptr, *sort_by_node = nullptr;
  WriterList writers;
};

// Row v's entries as (time, new id, CSR position), in the order they are written.
void order_row(const Csr& graph, const std::vector<int64_t>& new_id, const EdgeTimes& times,
               int64_t v, std::vector<std::tuple<int64_t, int64_t, int64_t>>& order) {
  order.clear();
  for (int64_t pos = graph.begin(v); pos < graph.end(v); ++pos) {
    const int64_t old = graph.neighbor(pos);
    const int64_t time = times.sort_by_edge != nullptr   ? times.sort_by_edge[pos]
                         : times.sort_by_node != nullptr ? times.sort_by_node[old]
                                                         : 0;
    order.emplace_back(time, new_id[static_cast<size_t>(old)], pos);
  }
  std::sort(order.begin(), order.end());
}

template <typename Index>
void write_edges(const Csr& graph, const int32_t* part_of, const std::vector<int64_t>& new_id,
                 int64_t num_parts, WriterList& index_writers, WriterList& edge_id_writers,
                 WriterList& weight_writers, EdgeTimes& times, int64_t chunk_bytes) {
  const int64_t n = graph.num_nodes();
  const bool weighted = graph.has_weights();
  const bool timed = times.edge_time != nullptr;
  const int64_t per_edge =
      2 * static_cast<int64_t>(sizeof(Index) + 8 + (weighted ? 4 : 0) + (timed ? 8 : 0));
  const int64_t chunk_edges = std::max<int64_t>(1, chunk_bytes / per_edge);
  const float* weights = weighted ? graph.weights()->data<float>() : nullptr;
  std::vector<Index> out_index;
  std::vector<int64_t> out_edge_id, out_time;
  std::vector<float> out_weight;
  std::vector<std::vector<Index>> staged_index(static_cast<size_t>(num_parts));
  std::vector<std::vector<int64_t>> staged_edge_id(static_cast<size_t>(num_parts));
  std::vector<std::vector<float>> staged_weight(static_cast<size_t>(num_parts));
  std::vector<std::vector<int64_t>> staged_time(static_cast<size_t>(num_parts));
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
    if (timed) out_time.resize(count);
    parallel_for(row, last, 256, [&](int64_t first, int64_t end) {
      std::vector<std::tuple<int64_t, int64_t, int64_t>> order;  // (time, new id, CSR position)
      for (int64_t v = first; v < end; ++v) {
        order_row(graph, new_id, times, v, order);
        size_t out = static_cast<size_t>(graph.begin(v) - first_edge);
        for (const auto& [time, neighbor, pos] : order) {
          out_index[out] = static_cast<Index>(neighbor);
          out_edge_id[out] = graph.edge_id(pos);
          if (weighted) out_weight[out] = weights[pos];
          if (timed) out_time[out] = times.edge_time[pos];
          ++out;
        }
      }
    });
    for (int64_t v = row; v < last; ++v) {
      const auto p = static_cast<size_t>(part_of[v]);
      const auto begin = static_cast<ptrdiff_t>(graph.begin(v) - first_edge);
      const auto end = static_cast<ptrdiff_t>(graph.end(v) - first_edge);
      const auto stage = [&](auto& staged, const auto& out) {
        staged.insert(staged.end(), out.begin() + begin, out.begin() + end);
      };
      stage(staged_index[p], out_index);
      stage(staged_edge_id[p], out_edge_id);
      if (weighted) stage(staged_weight[p], out_weight);
      if (timed) stage(staged_time[p], out_time);
    }
    for (size_t p = 0; p < static_cast<size_t>(num_parts); ++p) {
      index_writers[p]->write(staged_index[p].data(), staged_index[p].size() * sizeof(Index));
      edge_id_writers[p]->write(staged_edge_id[p].data(), staged_edge_id[p].size() * 8);
      if (weighted) weight_writers[p]->write(staged_weight[p].data(), staged_weight[p].size() * 4);
      if (timed) times.writers[p]->write(staged_time[p].data(), staged_time[p].size() * 8);
      staged_time[p].clear();
      staged_index[p].clear();
      staged_edge_id[p].clear();
      staged_weight[p].clear();
    }
    const auto release = [&](const std::optional<Array>& array) {
      if (!array) return;
      const size_t size = dtype_size(array->dtype());
      release_mapped_pages(*array, static_cast<size_t>(first_edge) * size,
                           static_cast<size_t>(end_edge) * size);
    };
    for (const auto* array : {&graph.edge_ids(), &graph.weights(), &graph.edge_time()})
      release(*array);
    release(graph.indices());
    bar.advance(end_edge - first_edge);
    row = last;
  }
}

// What every step of one write shares.
struct PartsWrite {
  const Dataset& dataset;
  const PartitionBook& book;
  const int32_t* part_of;                                // [N]: each old id's part
  std::vector<int64_t> new_id;                           // [N]: each old id's new id
  std::vector<std::string> part_dirs;                    // [K]
  std::vector<std::unique_ptr<DatasetWriter>> datasets;  // [K]: each part's arrays and manifest

  int64_t num_parts() const { return static_cast<int64_t>(datasets.size()); }
  DatasetWriter& part(int64_t p) { return *datasets[static_cast<size_t>(p)]; }
};

// An int64 [N] file at the root (node_map.npy: old id → new id; node_time.npy); returns its CRC.
uint32_t write_root_array(const std::string& output, const char* file,
                          const std::vector<int64_t>& values) {
  NpyWriter writer(join_path(output, file), DType::kInt64, {static_cast<int64_t>(values.size())});
  writer.write(values.data(), values.size() * sizeof(int64_t));
  writer.close();
  return writer.crc32();
}

// Each part's directory and dataset writer (its part.json removed until the part is complete).
void open_parts(const std::string& output, int64_t num_parts, PartsWrite& write) {
  for (int64_t p = 0; p < num_parts; ++p) {
    write.part_dirs.push_back(join_path(output, part_directory_name(p)));
    std::error_code ignored;
    fs::remove(join_path(write.part_dirs.back(), kPartFile), ignored);
    write.datasets.push_back(std::make_unique<DatasetWriter>(
        write.part_dirs.back(), fmt::format("{}.part-{}", write.dataset.name, p)));
  }
}

// indptr of each partition.
void write_indptr(PartsWrite& write) {
  const Csr& graph = write.dataset.graph;
  const int64_t k = write.num_parts();
  std::vector<std::vector<int64_t>> indptr(static_cast<size_t>(k));
  for (int64_t p = 0; p < k; ++p) {
    indptr[static_cast<size_t>(p)].reserve(static_cast<size_t>(write.book.size(p)) + 1);
    indptr[static_cast<size_t>(p)].push_back(0);
  }
  for (int64_t v = 0; v < graph.num_nodes(); ++v) {
    auto& rows = indptr[static_cast<size_t>(write.part_of[v])];
    rows.push_back(rows.back() + graph.degree(v));
  }
  for (int64_t p = 0; p < k; ++p) {
    write.part(p).add_array("indptr", Array::from_vector(indptr[static_cast<size_t>(p)]));
  }
}

// The input's times as write_edges takes them (rows sorted by edge time before node time).
EdgeTimes edge_times_of(const Csr& graph) {
  EdgeTimes times;
  if (graph.edge_time()) times.edge_time = graph.edge_time()->data<int64_t>();
  if (graph.edge_time() && graph.first_row_unsorted_by_edge_time() < 0) {
    times.sort_by_edge = times.edge_time;
  } else if (graph.node_time() && graph.first_row_unsorted_by_node_time() < 0) {
    times.sort_by_node = graph.node_time()->data<int64_t>();
  }
  return times;
}

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

// Edges: indices, edge ids, weights, edge times, one streaming pass with K writers of each.
void write_all_edges(PartsWrite& write, const PartitionResult& result, int64_t chunk_bytes) {
  const Csr& graph = write.dataset.graph;
  const int64_t k = write.num_parts();
  WriterList index_writers, edge_id_writers, weight_writers;
  EdgeTimes times = edge_times_of(graph);
  for (int64_t p = 0; p < k; ++p) {
    const std::vector<int64_t> shape = {result.part_edges[static_cast<size_t>(p)]};
    DatasetWriter& part = write.part(p);
    index_writers.push_back(
        std::make_unique<NpyWriter>(part.path_of("indices"), graph.index_dtype(), shape));
    edge_id_writers.push_back(
        std::make_unique<NpyWriter>(part.path_of("edge_ids"), DType::kInt64, shape));
    if (graph.has_weights()) {
      weight_writers.push_back(
          std::make_unique<NpyWriter>(part.path_of("weights"), DType::kFloat32, shape));
    }
    if (times.edge_time != nullptr) {
      times.writers.push_back(
          std::make_unique<NpyWriter>(part.path_of("edge_time"), DType::kInt64, shape));
    }
  }
  if (graph.index_dtype() == DType::kInt32) {
    write_edges<int32_t>(graph, write.part_of, write.new_id, k, index_writers, edge_id_writers,
                         weight_writers, times, chunk_bytes);
  } else {
    write_edges<int64_t>(graph, write.part_of, write.new_id, k, index_writers, edge_id_writers,
                         weight_writers, times, chunk_bytes);
  }
  for (int64_t p = 0; p < k; ++p) {
    const auto i = static_cast<size_t>(p);
    const std::vector<int64_t> shape = {result.part_edges[i]};
    index_writers[i]->close();
    write.part(p).add_written("indices", graph.index_dtype(), shape, index_writers[i]->crc32());
    edge_id_writers[i]->close();
    write.part(p).add_written("edge_ids", DType::kInt64, shape, edge_id_writers[i]->crc32());
    if (graph.has_weights()) {
      weight_writers[i]->close();
      write.part(p).add_written("weights", DType::kFloat32, shape, weight_writers[i]->crc32());
    }
    if (times.edge_time != nullptr) {
      times.writers[i]->close();
      write.part(p).add_written("edge_time", DType::kInt64, shape, times.writers[i]->crc32());
    }
  }
}

// Features, streamed likewise.
void write_all_features(PartsWrite& write, int64_t chunk_bytes) {
  const Array& features = *write.dataset.features;
  const int64_t k = write.num_parts();
  WriterList writers;
  for (int64_t p = 0; p < k; ++p) {
    writers.push_back(
        std::make_unique<NpyWriter>(write.part(p).path_of("features"), features.dtype(),
                                    std::vector<int64_t>{write.book.size(p), features.dim(1)}));
  }
  write_features(features, write.part_of, k, writers, chunk_bytes);
  for (int64_t p = 0; p < k; ++p) {
    writers[static_cast<size_t>(p)]->close();
    write.part(p).add_written("features", features.dtype(), {write.book.size(p), features.dim(1)},
                              writers[static_cast<size_t>(p)]->crc32());
  }
}

// Labels and splits (O(N) and O(split) memory).
void write_labels_and_splits(PartsWrite& write) {
  const Dataset& dataset = write.dataset;
  const PartitionBook& book = write.book;
  const int64_t k = write.num_parts();
  if (dataset.labels) {
    std::vector<Array> labels;
    for (int64_t p = 0; p < k; ++p) labels.push_back(Array::empty(DType::kInt64, {book.size(p)}));
    const int64_t* source = dataset.labels->data<int64_t>();
    for (int64_t v = 0; v < dataset.graph.num_nodes(); ++v) {
      const auto p = static_cast<size_t>(write.part_of[v]);
      labels[p].data<int64_t>()[write.new_id[static_cast<size_t>(v)] - book.offsets()[p]] =
          source[v];
    }
    for (int64_t p = 0; p < k; ++p)
      write.part(p).add_array("labels", labels[static_cast<size_t>(p)]);
  }
  const std::pair<const char*, const std::optional<Array>*> splits[] = {
      {"train_idx", &dataset.train_idx},
      {"val_idx", &dataset.val_idx},
      {"test_idx", &dataset.test_idx}};
  for (const auto& [field, ids] : splits) {
    if (!ids->has_value()) continue;
    std::vector<std::vector<int64_t>> local(static_cast<size_t>(k));
    for (int64_t v : (*ids)->span<int64_t>()) {
      const auto p = static_cast<size_t>(write.part_of[v]);
      local[p].push_back(write.new_id[static_cast<size_t>(v)] - book.offsets()[p]);
    }
    for (int64_t p = 0; p < k; ++p) {
      auto& rows = local[static_cast<size_t>(p)];
      std::sort(rows.begin(), rows.end());
      write.part(p).add_array(field, Array::from_vector(rows));
    }
  }
}

// Part p's cache (its cached remote nodes' new ids and feature rows, hottest first); returns its
// part.json entry, or null when the part caches nothing.
Json write_cache(const PartsWrite& write, int64_t p, const std::vector<int64_t>& old_ids) {
  const std::string& dir = write.part_dirs[static_cast<size_t>(p)];
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
Json finish_part(PartsWrite& write, int64_t p, const std::vector<std::vector<int64_t>>& cached,
                 const PartitionResult& result) {
  const auto i = static_cast<size_t>(p);
  const Dataset& dataset = write.dataset;
  const PartitionBook& book = write.book;
  write.part(p).finish(book.size(p), result.part_edges[i], dataset.num_classes,
                       dataset.graph.orientation());
  static const std::vector<int64_t> kNone;
  const Json cache = write_cache(write, p, i < cached.size() ? cached[i] : kNone);
  const Json part_json = {{"format", kPartFormatName},
                          {"version", kFormatVersion},
                          {"part", p},
                          {"num_parts", write.num_parts()},
                          {"first_node", book.begin(p)},
                          {"num_nodes", book.size(p)},
                          {"num_nodes_total", dataset.graph.num_nodes()},
                          {"num_edges_total", dataset.graph.num_edges()},
                          {"cache", cache}};
  const std::string part_text = part_json.dump(2) + "\n";
  write_file_atomically(join_path(write.part_dirs[i], kPartFile), part_text);
  const std::string dataset_text =
      read_file_text(join_path(write.part_dirs[i], kDatasetManifestFile), "dataset manifest");
  return {{"directory", part_directory_name(p)},
          {"num_nodes", book.size(p)},
          {"num_edges", result.part_edges[i]},
          {"num_train", result.part_train[i]},
          {"num_cached", cache.is_null() ? 0 : static_cast<int64_t>(cached[i].size())},
          {"volley_json_crc32", crc32_hex(text_crc(dataset_text))},
          {"part_json_crc32", crc32_hex(text_crc(part_text))}};
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
  const int32_t* part_of = assignment.data<int32_t>();
  PartsWrite write{dataset, result.book,
                   part_of, renumber(result.book, part_of, dataset.graph.num_nodes()),
                   {},      {}};
  const uint32_t node_map_crc = write_root_array(output, kNodeMapFile, write.new_id);
  const Json node_time = write_node_time(output, dataset.graph, write.new_id);
  open_parts(output, options.num_parts, write);
  write_indptr(write);
  write_all_edges(write, result, options.chunk_bytes);
  if (dataset.features) write_all_features(write, options.chunk_bytes);
  write_labels_and_splits(write);
  Json parts = Json::array();
  for (int64_t p = 0; p < write.num_parts(); ++p) {
    parts.push_back(finish_part(write, p, cached, result));
  }
  Json manifest =
      manifest_json(dataset, options, result, node_map_crc, std::move(parts), elapsed());
  if (!node_time.is_null()) manifest["node_time"] = node_time;
  write_file_atomically(join_path(output, kManifestFile), manifest.dump(2) + "\n");
}

}  // namespace

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
    release_mapped_pages(features, static_cast<size_t>(first) * row_bytes,
                         static_cast<size_t>(last) * row_bytes);
    bar.advance(last - first);
  }
}

void write_partitioned_dataset(const Dataset& dataset, const Array& assignment,
                               const std::vector<std::vector<int64_t>>& cached,
                               const PartitionOptions& options, const PartitionResult& result,
                               const std::string& output, const std::function<double()>& elapsed) {
  write_staged(output, options.num_parts, [&](const std::string& staging) {
    write_everything(dataset, assignment, cached, options, result, staging, elapsed);
  });
}

}  // namespace volley::internal
