// Front end of partitioning: options, dispatch to a strategy, quality figures, and the timing of
// partition_dataset. The directory format is written in partitioned_writer.cc and read in
// partitioned_reader.cc.
#include "volley/partition/partition.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <numeric>

#include "volley/core/parallel.h"
#include "volley/partition/internal/partitioned_dataset.h"
#include "volley/partition/internal/partitioners.h"

namespace volley {

namespace internal {

double balance_of(const std::vector<int64_t>& loads) {
  int64_t total = 0;
  int64_t largest = 0;
  for (int64_t load : loads) {
    total += load;
    largest = std::max(largest, load);
  }
  if (total == 0) return 1.0;
  return static_cast<double>(largest) * static_cast<double>(loads.size()) /
         static_cast<double>(total);
}

int64_t count_cut_edges(const Csr& graph, const int32_t* source_part, const int32_t* row_part,
                        int64_t chunk_bytes) {
  const int64_t n = graph.num_nodes();
  const size_t index_bytes = dtype_size(graph.index_dtype());
  const int64_t chunk_edges = std::max<int64_t>(1, chunk_bytes / static_cast<int64_t>(index_bytes));
  std::atomic<int64_t> cut{0};
  int64_t row = 0;
  while (row < n) {
    const int64_t first_edge = graph.begin(row);
    int64_t last = row + 1;
    while (last < n && graph.end(last) - first_edge <= chunk_edges) ++last;
    parallel_for(row, last, 1024, [&](int64_t first, int64_t end) {
      int64_t local = 0;
      for (int64_t v = first; v < end; ++v) {
        const int32_t home = row_part[v];
        for (int64_t pos = graph.begin(v); pos < graph.end(v); ++pos) {
          local += source_part[graph.neighbor(pos)] != home ? 1 : 0;
        }
      }
      cut.fetch_add(local, std::memory_order_relaxed);
    });
    release_mapped_pages(graph.indices(), static_cast<size_t>(first_edge) * index_bytes,
                         static_cast<size_t>(graph.begin(last)) * index_bytes);
    row = last;
  }
  return cut.load();
}

PartitionBook book_of(const Array& assignment, int64_t num_parts) {
  std::vector<int64_t> offsets(static_cast<size_t>(num_parts) + 1, 0);
  for (int32_t p : assignment.span<int32_t>()) ++offsets[static_cast<size_t>(p) + 1];
  std::partial_sum(offsets.begin(), offsets.end(), offsets.begin());
  return PartitionBook(std::move(offsets));
}

}  // namespace internal

std::string_view partition_method_name(PartitionMethod method) {
  switch (method) {
    case PartitionMethod::kRandom:
      return "random";
    case PartitionMethod::kMetis:
      return "metis";
    case PartitionMethod::kHotness:
      return "hotness";
    case PartitionMethod::kStream:
      return "stream";
  }
  return "unknown";
}

PartitionMethod partition_method_from_name(std::string_view name) {
  for (PartitionMethod method : {PartitionMethod::kRandom, PartitionMethod::kMetis,
                                 PartitionMethod::kHotness, PartitionMethod::kStream}) {
    if (partition_method_name(method) == name) return method;
  }
  throw ValueError(fmt::format(
      "unknown partition method '{}' (expected random, metis, hotness or stream)", name));
}

void validate_partition_options(const PartitionOptions& options) {
  VOLLEY_REQUIRE(options.num_parts >= 1 && options.num_parts <= (int64_t{1} << 20), ValueError,
                 "num_parts must be in [1, 2^20], got {}", options.num_parts);
  VOLLEY_REQUIRE(options.balance_tolerance > 0.0 && options.balance_tolerance <= 10.0, ValueError,
                 "balance_tolerance must be in (0, 10], got {}", options.balance_tolerance);
  VOLLEY_REQUIRE(options.batch_size >= 1, ValueError, "batch_size must be >= 1, got {}",
                 options.batch_size);
  VOLLEY_REQUIRE(options.cache_bytes >= 0, ValueError, "cache_bytes must be >= 0, got {}",
                 options.cache_bytes);
  VOLLEY_REQUIRE(options.cache_bytes == 0 || options.method == PartitionMethod::kHotness,
                 ValueError,
                 "cache_bytes ({}) needs the hotness method (it caches the remote nodes a "
                 "simulated epoch reads most); the method is {}",
                 options.cache_bytes, partition_method_name(options.method));
  VOLLEY_REQUIRE(options.chunk_bytes >= 4096, ValueError, "chunk_bytes must be >= 4096, got {}",
                 options.chunk_bytes);
  const bool simulates = options.method == PartitionMethod::kHotness || options.simulate_epoch;
  if (simulates) {
    VOLLEY_REQUIRE(!options.fanouts.empty(), ValueError,
                   "fanouts must not be empty for the simulated epoch");
    for (size_t hop = 0; hop < options.fanouts.size(); ++hop) {
      VOLLEY_REQUIRE(options.fanouts[hop] >= -1, ValueError,
                     "fanouts[{}] = {}: expected a count >= 0 or -1 (all neighbors)", hop,
                     options.fanouts[hop]);
    }
  }
}

namespace {

void check_dataset(const Dataset& dataset, const PartitionOptions& options) {
  const Csr& graph = dataset.graph;
  VOLLEY_REQUIRE(graph.indptr().defined(), ValueError, "partition: the dataset has no graph");
  VOLLEY_REQUIRE(graph.num_nodes() < (int64_t{1} << 31) - 1, ValueError,
                 "partition: {} nodes do not fit the int32 partition assignment",
                 graph.num_nodes());
  if (options.method == PartitionMethod::kHotness || options.simulate_epoch) {
    VOLLEY_REQUIRE(dataset.train_idx.has_value() && dataset.train_idx->numel() > 0, ValueError,
                   "partition: the {} method simulates an epoch of training seeds, but the "
                   "dataset has no train_idx",
                   partition_method_name(options.method));
  }
}

struct Loads {
  std::vector<int64_t> nodes, edges, train;
};

Loads loads_of(const Dataset& dataset, const Array& assignment, int64_t num_parts) {
  const Csr& graph = dataset.graph;
  const int32_t* part_of = assignment.data<int32_t>();
  Loads loads{std::vector<int64_t>(static_cast<size_t>(num_parts), 0),
              std::vector<int64_t>(static_cast<size_t>(num_parts), 0),
              std::vector<int64_t>(static_cast<size_t>(num_parts), 0)};
  for (int64_t v = 0; v < graph.num_nodes(); ++v) {
    ++loads.nodes[static_cast<size_t>(part_of[v])];
    loads.edges[static_cast<size_t>(part_of[v])] += graph.degree(v);
  }
  const std::vector<uint8_t> train = internal::training_flags(dataset);
  for (int64_t v = 0; v < graph.num_nodes(); ++v) {
    loads.train[static_cast<size_t>(part_of[v])] += train[static_cast<size_t>(v)];
  }
  return loads;
}

// Checks an assignment made elsewhere (tests, Python callers): int32 [N] in [0, K).
void check_assignment(const Array& assignment, int64_t num_nodes, int64_t num_parts) {
  VOLLEY_REQUIRE(assignment.dtype() == DType::kInt32 && assignment.shape().size() == 1 &&
                     assignment.numel() == num_nodes,
                 ValueError, "assignment: expected int32[{}], found {}", num_nodes,
                 assignment.describe());
  const int32_t* part_of = assignment.data<int32_t>();
  for (int64_t v = 0; v < num_nodes; ++v) {
    VOLLEY_REQUIRE(part_of[v] >= 0 && part_of[v] < num_parts, IndexError,
                   "assignment[{}] = {} out of range for {} partitions", v, part_of[v], num_parts);
  }
}

// Edge cut and node / edge / training-node balance of an assignment.
PartitionQuality cut_and_balance(const Dataset& dataset, const Array& assignment,
                                 const Loads& loads, int64_t chunk_bytes) {
  PartitionQuality quality;
  const int32_t* part_of = assignment.data<int32_t>();
  quality.cut_edges = internal::count_cut_edges(dataset.graph, part_of, part_of, chunk_bytes);
  quality.edge_cut_fraction =
      dataset.graph.num_edges() > 0
          ? static_cast<double>(quality.cut_edges) / static_cast<double>(dataset.graph.num_edges())
          : 0.0;
  quality.node_balance = internal::balance_of(loads.nodes);
  quality.edge_balance = internal::balance_of(loads.edges);
  quality.train_balance = internal::balance_of(loads.train);
  return quality;
}

}  // namespace

PartitionQuality partition_quality(const Dataset& dataset, const Array& assignment,
                                   int64_t num_parts) {
  VOLLEY_REQUIRE(num_parts >= 1, ValueError, "num_parts must be >= 1, got {}", num_parts);
  check_assignment(assignment, dataset.graph.num_nodes(), num_parts);
  const Loads loads = loads_of(dataset, assignment, num_parts);
  return cut_and_balance(dataset, assignment, loads, int64_t{64} << 20);
}

namespace {

struct Assigned {
  Array assignment;
  std::vector<std::vector<int64_t>> cached;  // per partition, old ids, hottest first
  std::optional<internal::AccessFigures> figures;
  std::optional<double> metis_remote, random_remote;
};

Assigned assign(const Dataset& dataset, const PartitionOptions& options, bool with_cache) {
  validate_partition_options(options);
  check_dataset(dataset, options);
  const std::vector<uint8_t> train = internal::training_flags(dataset);
  Assigned result;
  switch (options.method) {
    case PartitionMethod::kRandom:
      result.assignment = internal::assign_random(dataset, options, train);
      break;
    case PartitionMethod::kMetis:
      result.assignment = internal::assign_metis(dataset, options, train);
      break;
    case PartitionMethod::kStream:
      result.assignment = internal::assign_stream(dataset, options, train);
      break;
    case PartitionMethod::kHotness: {
      const Array initial = internal::assign_metis(dataset, options, train);
      std::vector<uint32_t> reads;
      const internal::AccessFigures metis =
          internal::measure_accesses(dataset, initial, options, 0, &reads);
      result.metis_remote = metis.remote_fraction();
      result.assignment = internal::refine_by_hotness(dataset, initial, options, train, reads);
      std::vector<uint32_t>().swap(reads);
      const Array random = internal::assign_random(dataset, options, train);
      result.random_remote =
          internal::measure_accesses(dataset, random, options, 0).remote_fraction();
      break;
    }
  }
  const bool simulate = options.method == PartitionMethod::kHotness || options.simulate_epoch;
  if (simulate) {
    int64_t cache_rows = 0;
    if (with_cache && options.cache_bytes > 0 && dataset.features) {
      const int64_t row_bytes =
          dataset.features->dim(1) * static_cast<int64_t>(dtype_size(dataset.features->dtype()));
      cache_rows = row_bytes > 0 ? options.cache_bytes / row_bytes : 0;
    }
    result.figures = internal::measure_accesses(dataset, result.assignment, options, cache_rows);
    result.cached = result.figures->cached;
  }
  return result;
}

}  // namespace

Array assign_partitions(const Dataset& dataset, const PartitionOptions& options) {
  PartitionOptions quiet = options;
  quiet.simulate_epoch = false;
  if (quiet.method != PartitionMethod::kHotness) return assign(dataset, quiet, false).assignment;
  // hotness: the moved assignment, without the final measurement.
  validate_partition_options(quiet);
  check_dataset(dataset, quiet);
  const std::vector<uint8_t> train = internal::training_flags(dataset);
  const Array initial = internal::assign_metis(dataset, quiet, train);
  std::vector<uint32_t> reads;
  internal::measure_accesses(dataset, initial, quiet, 0, &reads);
  return internal::refine_by_hotness(dataset, initial, quiet, train, reads);
}

PartitionResult partition_dataset(const Dataset& dataset, const std::string& output,
                                  const PartitionOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  Assigned assigned = assign(dataset, options, /*with_cache=*/true);
  PartitionResult result;
  result.assign_seconds = internal::elapsed_since(start);

  const Loads loads = loads_of(dataset, assigned.assignment, options.num_parts);
  result.part_nodes = loads.nodes;
  result.part_edges = loads.edges;
  result.part_train = loads.train;
  result.part_cached.assign(static_cast<size_t>(options.num_parts), 0);
  for (int64_t p = 0; p < options.num_parts; ++p) {
    result.part_cached[static_cast<size_t>(p)] = static_cast<int64_t>(
        assigned.cached.empty() ? 0 : assigned.cached[static_cast<size_t>(p)].size());
  }
  PartitionQuality& quality = result.quality;
  quality = cut_and_balance(dataset, assigned.assignment, loads, options.chunk_bytes);
  if (assigned.figures) {
    quality.remote_access_fraction = assigned.figures->remote_fraction();
    quality.remote_access_fraction_cached = assigned.figures->remote_fraction_cached();
  }
  quality.metis_remote_access_fraction = assigned.metis_remote;
  quality.random_remote_access_fraction = assigned.random_remote;

  result.book = internal::book_of(assigned.assignment, options.num_parts);
  internal::write_partitioned_dataset(dataset, assigned.assignment, assigned.cached, options,
                                      result, output,
                                      [&] { return internal::elapsed_since(start); });
  result.seconds = internal::elapsed_since(start);
  return result;
}

PartitionResult partition_dataset(const std::string& input, const std::string& output,
                                  const PartitionOptions& options) {
  validate_partition_options(options);
  // The stream method must not touch the whole graph: its pass checks every neighbor id, so
  // only the O(N) indptr is validated here.
  const bool stream = options.method == PartitionMethod::kStream && !options.simulate_epoch;
  Dataset dataset = load_dataset(
      input, {.memory_map = true, .verify_checksums = false, .validate_graph = !stream});
  if (stream) internal::check_indptr(dataset.graph, input);
  return partition_dataset(dataset, output, options);
}

}  // namespace volley
