// The one part writer of both kinds (internal/partitioned_dataset.h): each edge type's rows split
// by owner in one streaming pass with K writers open, each node type's features streamed likewise,
// labels and splits by local row, and a finished part's entry in partition.json.
#include <algorithm>
#include <memory>
#include <tuple>

#include "volley/core/files.h"
#include "volley/core/parallel.h"
#include "volley/core/progress.h"
#include "volley/graph/io/npy.h"
#include "volley/partition/internal/format.h"
#include "volley/partition/internal/partitioned_dataset.h"
#include "volley/partition/internal/partitioners.h"

namespace volley::internal {
namespace {

using Json = nlohmann::ordered_json;
using namespace partition_format;
using WriterList = std::vector<std::unique_ptr<NpyWriter>>;

// Rows in old-id order; each partition receives its rows in the same order, i.e. in new-id order.
// Within a row, neighbors are renumbered and sorted by (new id, edge id), or by (time, new id,
// edge id) when the input's rows were sorted by time (`sort_by_*`, edge time or the neighbor's
// node time by old id), so sorted rows stay sorted. Edge times follow their edges.
struct EdgeTimes {
  const int64_t *edge_time = nullptr, *sort_by_edge = nullptr, *sort_by_node = nullptr;
  WriterList writers;
};

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

using RowEntry = std::tuple<int64_t, int64_t, int64_t, int64_t>;  // time, new id, edge id, position

// Row v's entries in the order they are written.
void order_row(const Csr& graph, const std::vector<int64_t>& new_id, const EdgeTimes& times,
               int64_t v, std::vector<RowEntry>& order) {
  order.clear();
  for (int64_t pos = graph.begin(v); pos < graph.end(v); ++pos) {
    const int64_t old = graph.neighbor(pos);
    const int64_t time = times.sort_by_edge != nullptr   ? times.sort_by_edge[pos]
                         : times.sort_by_node != nullptr ? times.sort_by_node[old]
                                                         : 0;
    order.emplace_back(time, new_id[static_cast<size_t>(old)], graph.edge_id(pos), pos);
  }
  std::sort(order.begin(), order.end());
}

struct EdgeWriters {
  WriterList indices, edge_ids, weights;
  EdgeTimes times;
};

template <typename Index>
void write_edges(const Csr& graph, const int32_t* part_of, const std::vector<int64_t>& new_id,
                 int64_t num_parts, EdgeWriters& writers, int64_t chunk_bytes) {
  const int64_t n = graph.num_nodes();
  const bool weighted = graph.has_weights();
  EdgeTimes& times = writers.times;
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
      std::vector<RowEntry> order;
      for (int64_t v = first; v < end; ++v) {
        order_row(graph, new_id, times, v, order);
        size_t out = static_cast<size_t>(graph.begin(v) - first_edge);
        for (const auto& [time, neighbor, edge_id, pos] : order) {
          out_index[out] = static_cast<Index>(neighbor);
          out_edge_id[out] = edge_id;
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
      writers.indices[p]->write(staged_index[p].data(), staged_index[p].size() * sizeof(Index));
      writers.edge_ids[p]->write(staged_edge_id[p].data(), staged_edge_id[p].size() * 8);
      if (weighted) writers.weights[p]->write(staged_weight[p].data(), staged_weight[p].size() * 4);
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

// indptr of each part's rows of `csr` (rows in old-id order, each to its owner's part).
void write_indptr(PartList& parts, Owner owner, const Csr& csr, const TypeRenumbering& dst) {
  const auto k = parts.size();
  std::vector<std::vector<int64_t>> indptr(k);
  for (size_t p = 0; p < k; ++p) {
    indptr[p].reserve(static_cast<size_t>(dst.book.size(static_cast<int64_t>(p))) + 1);
    indptr[p].push_back(0);
  }
  for (int64_t v = 0; v < csr.num_nodes(); ++v) {
    auto& rows = indptr[static_cast<size_t>(dst.part_of[v])];
    rows.push_back(rows.back() + csr.degree(v));
  }
  for (size_t p = 0; p < k; ++p)
    parts[p]->add_array(owner, "indptr", Array::from_vector(indptr[p]));
}

// Streams `source` ([N, D], possibly mapped) to the writer of each row's part, `chunk_bytes` at a
// time, in row order.
void write_features(const Array& features, const int32_t* part_of, WriterList& writers,
                    int64_t chunk_bytes) {
  const int64_t n = features.dim(0);
  const auto row_bytes = static_cast<size_t>(features.dim(1)) * dtype_size(features.dtype());
  const int64_t rows_per_chunk =
      std::max<int64_t>(1, chunk_bytes / 2 / std::max<int64_t>(1, static_cast<int64_t>(row_bytes)));
  std::vector<std::vector<std::byte>> staged(writers.size());
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

// Opens one writer per part of `field` (shape per part), for `owner`.
WriterList open_writers(const PartList& parts, Owner owner, const char* field, DType dtype,
                        const std::function<std::vector<int64_t>(int64_t)>& shape) {
  WriterList writers;
  for (size_t p = 0; p < parts.size(); ++p) {
    writers.push_back(std::make_unique<NpyWriter>(parts[p]->path_of(owner, field), dtype,
                                                  shape(static_cast<int64_t>(p))));
  }
  return writers;
}

// Closes the writers opened by open_writers and records their files.
void close_writers(PartList& parts, Owner owner, const char* field, DType dtype,
                   const std::function<std::vector<int64_t>(int64_t)>& shape, WriterList& writers) {
  for (size_t p = 0; p < writers.size(); ++p) {
    writers[p]->close();
    parts[p]->add_written(owner, field, dtype, shape(static_cast<int64_t>(p)), writers[p]->crc32());
  }
}

}  // namespace

void write_edge_type(PartList& parts, int r, const Csr& csr, const TypeRenumbering& src,
                     const TypeRenumbering& dst, const std::vector<int64_t>& part_edges,
                     bool with_times, int64_t chunk_bytes) {
  const Owner owner{true, r};
  write_indptr(parts, owner, csr, dst);
  const auto shape = [&](int64_t p) {
    return std::vector<int64_t>{part_edges[static_cast<size_t>(p)]};
  };
  EdgeWriters writers;
  writers.indices = open_writers(parts, owner, "indices", csr.index_dtype(), shape);
  writers.edge_ids = open_writers(parts, owner, "edge_ids", DType::kInt64, shape);
  if (csr.has_weights()) {
    writers.weights = open_writers(parts, owner, "weights", DType::kFloat32, shape);
  }
  if (with_times) writers.times = edge_times_of(csr);
  if (writers.times.edge_time != nullptr) {
    writers.times.writers = open_writers(parts, owner, "edge_time", DType::kInt64, shape);
  }
  const auto k = static_cast<int64_t>(parts.size());
  if (csr.index_dtype() == DType::kInt32) {
    write_edges<int32_t>(csr, dst.part_of, src.new_id, k, writers, chunk_bytes);
  } else {
    write_edges<int64_t>(csr, dst.part_of, src.new_id, k, writers, chunk_bytes);
  }
  close_writers(parts, owner, "indices", csr.index_dtype(), shape, writers.indices);
  close_writers(parts, owner, "edge_ids", DType::kInt64, shape, writers.edge_ids);
  close_writers(parts, owner, "weights", DType::kFloat32, shape, writers.weights);
  close_writers(parts, owner, "edge_time", DType::kInt64, shape, writers.times.writers);
}

void write_node_type(PartList& parts, int t, const NodeArrays& arrays, const TypeRenumbering& type,
                     int64_t chunk_bytes) {
  const Owner owner{false, t};
  const auto k = parts.size();
  if (arrays.features) {
    const Array& features = *arrays.features;
    const auto shape = [&](int64_t p) {
      return std::vector<int64_t>{type.book.size(p), features.dim(1)};
    };
    WriterList writers = open_writers(parts, owner, "features", features.dtype(), shape);
    write_features(features, type.part_of, writers, chunk_bytes);
    close_writers(parts, owner, "features", features.dtype(), shape, writers);
  }
  const auto local_row = [&](int64_t v) {
    return type.new_id[static_cast<size_t>(v)] - type.book.begin(type.part_of[v]);
  };
  if (arrays.labels) {
    std::vector<Array> labels;
    for (size_t p = 0; p < k; ++p) {
      labels.push_back(Array::empty(DType::kInt64, {type.book.size(static_cast<int64_t>(p))}));
    }
    const int64_t* source = arrays.labels->data<int64_t>();
    for (int64_t v = 0; v < arrays.labels->numel(); ++v) {
      labels[static_cast<size_t>(type.part_of[v])].data<int64_t>()[local_row(v)] = source[v];
    }
    for (size_t p = 0; p < k; ++p) parts[p]->add_array(owner, "labels", labels[p]);
  }
  const std::pair<const char*, const std::optional<Array>*> splits[] = {
      {"train_idx", &arrays.train_idx},
      {"val_idx", &arrays.val_idx},
      {"test_idx", &arrays.test_idx}};
  for (const auto& [field, ids] : splits) {
    if (!ids->has_value()) continue;
    std::vector<std::vector<int64_t>> local(k);
    for (int64_t v : (*ids)->span<int64_t>()) {
      local[static_cast<size_t>(type.part_of[v])].push_back(local_row(v));
    }
    for (size_t p = 0; p < k; ++p) {
      std::sort(local[p].begin(), local[p].end());
      parts[p]->add_array(owner, field, Array::from_vector(local[p]));
    }
  }
}

uint32_t write_root_array(const std::string& output, const std::string& file,
                          const std::vector<int64_t>& values) {
  NpyWriter writer(join_path(output, file), DType::kInt64, {static_cast<int64_t>(values.size())});
  writer.write(values.data(), values.size() * sizeof(int64_t));
  writer.close();
  return writer.crc32();
}

Json finish_part_entry(const std::string& part_dir, int64_t p, const Json& part_json,
                       const Json& counts) {
  const std::string part_text = part_json.dump(2) + "\n";
  write_file_atomically(join_path(part_dir, kPartFile), part_text);
  const std::string dataset_text =
      read_file_text(join_path(part_dir, kDatasetManifestFile), "dataset manifest");
  Json entry = {{"directory", part_directory_name(p)}};
  for (const auto& [key, value] : counts.items()) entry[key] = value;
  entry["volley_json_crc32"] = crc32_hex(text_crc(dataset_text));
  entry["part_json_crc32"] = crc32_hex(text_crc(part_text));
  return entry;
}

}  // namespace volley::internal
