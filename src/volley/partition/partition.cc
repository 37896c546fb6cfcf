// Front end of partitioning, both kinds (partition.h, hetero_partition.h): options, dispatch to a
// strategy (a homogeneous dataset is the one-type case of the typed graph they take), loads and
// quality figures, and the timing of partition_dataset / partition_hetero_dataset. The directory
// is written in partitioned_writer.cc and read in partitioned_reader.cc.
#include "volley/partition/partition.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <numeric>

#include "volley/core/parallel.h"
#include "volley/partition/hetero_partition.h"
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

// Options the heterogeneous partitioner accepts, and at least K nodes in every node type.
void check_hetero(const HeteroDataset& dataset, const PartitionOptions& options) {
  validate_partition_options(options);
  VOLLEY_REQUIRE(options.method != PartitionMethod::kHotness, ValueError,
                 "partition: method '{}' is not available for heterogeneous datasets (expected "
                 "random, metis or stream)",
                 partition_method_name(options.method));
  VOLLEY_REQUIRE(!options.simulate_epoch, ValueError,
                 "partition: simulate_epoch is not available for heterogeneous datasets");
  for (const NodeTypeInfo& type : dataset.graph.node_types()) {
    VOLLEY_REQUIRE(type.num_nodes >= options.num_parts, ValueError,
                   "partition: num_parts = {} exceeds the {} nodes of node type '{}' (every "
                   "partition must own nodes of every type)",
                   options.num_parts, type.num_nodes, type.name);
    VOLLEY_REQUIRE(type.num_nodes < (int64_t{1} << 31) - 1, ValueError,
                   "partition: node type '{}' has {} nodes, too many for the int32 assignment",
                   type.name, type.num_nodes);
  }
}

// Random, METIS or stream on either kind.
std::vector<Array> assign_typed(const internal::TypedGraph& graph,
                                const PartitionOptions& options) {
  switch (options.method) {
    case PartitionMethod::kRandom:
      return internal::assign_random(graph, options);
    case PartitionMethod::kMetis:
      return internal::assign_metis(graph, options);
    case PartitionMethod::kStream:
      return internal::assign_stream(graph, options);
    case PartitionMethod::kHotness:
      break;
  }
  throw ValueError("partition: the hotness method is homogeneous only");
}

// Checks an assignment made elsewhere (tests, Python callers): one int32 [N_T] in [0, K) per node
// type ("assignment" of a homogeneous dataset, "assignment['T']" of node type T).
void check_assignment(const internal::TypedGraph& graph, const std::vector<std::string>& names,
                      const std::vector<Array>& assignment, int64_t num_parts) {
  VOLLEY_REQUIRE(num_parts >= 1, ValueError, "num_parts must be >= 1, got {}", num_parts);
  VOLLEY_REQUIRE(assignment.size() == graph.node_types.size(), ValueError,
                 "assignment: expected one array per node type ({}), found {}",
                 graph.node_types.size(), assignment.size());
  for (size_t t = 0; t < assignment.size(); ++t) {
    const std::string where =
        names.empty() ? "assignment" : fmt::format("assignment['{}']", names[t]);
    const Array& part = assignment[t];
    const int64_t n = graph.node_types[t].num_nodes;
    VOLLEY_REQUIRE(part.dtype() == DType::kInt32 && part.shape().size() == 1 && part.numel() == n,
                   ValueError, "{}: expected int32[{}], found {}", where, n, part.describe());
    const int32_t* part_of = part.data<int32_t>();
    for (int64_t v = 0; v < n; ++v) {
      VOLLEY_REQUIRE(part_of[v] >= 0 && part_of[v] < num_parts, IndexError,
                     "{}[{}] = {} out of range for {} partitions", where, v, part_of[v], num_parts);
    }
  }
}

// What each partition holds: nodes and training nodes per node type ([type][K]), in-edges per
// edge type ([K][edge type]).
struct Loads {
  std::vector<std::vector<int64_t>> nodes, train, edges;
};

Loads loads_of(const internal::TypedGraph& graph, const std::vector<Array>& assignment,
               int64_t num_parts) {
  const auto k = static_cast<size_t>(num_parts);
  Loads loads;
  for (size_t t = 0; t < graph.node_types.size(); ++t) {
    loads.nodes.emplace_back(k, 0);
    loads.train.emplace_back(k, 0);
    const int32_t* part_of = assignment[t].data<int32_t>();
    for (int64_t v = 0; v < graph.node_types[t].num_nodes; ++v) {
      ++loads.nodes[t][static_cast<size_t>(part_of[v])];
      loads.train[t][static_cast<size_t>(part_of[v])] +=
          graph.node_types[t].train[static_cast<size_t>(v)];
    }
  }
  loads.edges.assign(k, std::vector<int64_t>(graph.edge_types.size(), 0));
  for (size_t r = 0; r < graph.edge_types.size(); ++r) {
    const Csr& csr = *graph.edge_types[r].csr;
    const int32_t* dst = assignment[static_cast<size_t>(graph.edge_types[r].dst)].data<int32_t>();
    for (int64_t v = 0; v < csr.num_nodes(); ++v) {
      loads.edges[static_cast<size_t>(dst[v])][r] += csr.degree(v);
    }
  }
  return loads;
}

// Edge cut (in all and per edge type), node balance per node type, in-edge balance.
HeteroPartitionQuality cut_and_balance(const internal::TypedGraph& graph,
                                       const std::vector<Array>& assignment, const Loads& loads,
                                       int64_t chunk_bytes) {
  HeteroPartitionQuality quality;
  for (const internal::TypedGraph::EdgeType& type : graph.edge_types) {
    const int64_t cut = internal::count_cut_edges(
        *type.csr, assignment[static_cast<size_t>(type.src)].data<int32_t>(),
        assignment[static_cast<size_t>(type.dst)].data<int32_t>(), chunk_bytes);
    quality.cut_edges_per_type.push_back(cut);
    quality.cut_edges += cut;
  }
  const int64_t total = graph.total_edges();
  quality.edge_cut_fraction =
      total > 0 ? static_cast<double>(quality.cut_edges) / static_cast<double>(total) : 0.0;
  std::vector<int64_t> edge_loads;
  for (const std::vector<int64_t>& part : loads.edges) {
    edge_loads.push_back(std::accumulate(part.begin(), part.end(), int64_t{0}));
  }
  quality.edge_balance = internal::balance_of(edge_loads);
  for (const std::vector<int64_t>& nodes : loads.nodes) {
    quality.node_balance.push_back(internal::balance_of(nodes));
  }
  return quality;
}

// The homogeneous figures: the one node type's and edge type's, and training-node balance.
PartitionQuality homogeneous_quality(const HeteroPartitionQuality& typed, const Loads& loads) {
  PartitionQuality quality;
  quality.cut_edges = typed.cut_edges;
  quality.edge_cut_fraction = typed.edge_cut_fraction;
  quality.node_balance = typed.node_balance.front();
  quality.edge_balance = typed.edge_balance;
  quality.train_balance = internal::balance_of(loads.train.front());
  return quality;
}

}  // namespace

PartitionQuality partition_quality(const Dataset& dataset, const Array& assignment,
                                   int64_t num_parts) {
  const internal::TypedGraph graph = internal::typed_graph(dataset);
  check_assignment(graph, {}, {assignment}, num_parts);
  const Loads loads = loads_of(graph, {assignment}, num_parts);
  return homogeneous_quality(cut_and_balance(graph, {assignment}, loads, int64_t{64} << 20), loads);
}

HeteroPartitionQuality hetero_partition_quality(const HeteroDataset& dataset,
                                                const std::vector<Array>& assignment,
                                                int64_t num_parts) {
  const internal::TypedGraph graph = internal::typed_graph(dataset);
  std::vector<std::string> names;
  for (const NodeTypeInfo& type : dataset.graph.node_types()) names.push_back(type.name);
  check_assignment(graph, names, assignment, num_parts);
  return cut_and_balance(graph, assignment, loads_of(graph, assignment, num_parts),
                         int64_t{64} << 20);
}

namespace {

struct Assigned {
  Array assignment;
  std::vector<std::vector<int64_t>> cached;  // per partition, old ids, hottest first
  std::optional<internal::AccessFigures> figures;
  std::optional<double> metis_remote, random_remote;
};

// hotness: METIS's assignment refined by the reads of a simulated epoch (`metis_remote`: that
// epoch's remote share).
Array assign_hotness(const Dataset& dataset, const internal::TypedGraph& graph,
                     const PartitionOptions& options, std::optional<double>* metis_remote) {
  const Array initial = internal::assign_metis(graph, options).front();
  std::vector<uint32_t> reads;
  const internal::AccessFigures metis =
      internal::measure_accesses(dataset, initial, options, 0, &reads);
  if (metis_remote != nullptr) *metis_remote = metis.remote_fraction();
  return internal::refine_by_hotness(dataset, initial, options, graph.node_types.front().train,
                                     reads);
}

Assigned assign(const Dataset& dataset, const PartitionOptions& options, bool with_cache) {
  validate_partition_options(options);
  check_dataset(dataset, options);
  const internal::TypedGraph graph = internal::typed_graph(dataset);
  Assigned result;
  if (options.method != PartitionMethod::kHotness) {
    result.assignment = assign_typed(graph, options).front();
  } else {
    result.assignment = assign_hotness(dataset, graph, options, &result.metis_remote);
    const Array random = internal::assign_random(graph, options).front();
    result.random_remote =
        internal::measure_accesses(dataset, random, options, 0).remote_fraction();
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
  return assign_hotness(dataset, internal::typed_graph(dataset), quiet, nullptr);
}

std::vector<Array> assign_hetero_partitions(const HeteroDataset& dataset,
                                            const PartitionOptions& options) {
  check_hetero(dataset, options);
  return assign_typed(internal::typed_graph(dataset), options);
}

PartitionResult partition_dataset(const Dataset& dataset, const std::string& output,
                                  const PartitionOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  Assigned assigned = assign(dataset, options, /*with_cache=*/true);
  PartitionResult result;
  result.assign_seconds = internal::elapsed_since(start);

  const internal::TypedGraph graph = internal::typed_graph(dataset);
  const Loads loads = loads_of(graph, {assigned.assignment}, options.num_parts);
  result.part_nodes = loads.nodes.front();
  for (const std::vector<int64_t>& part : loads.edges) result.part_edges.push_back(part.front());
  result.part_train = loads.train.front();
  result.part_cached.assign(static_cast<size_t>(options.num_parts), 0);
  for (int64_t p = 0; p < options.num_parts; ++p) {
    result.part_cached[static_cast<size_t>(p)] = static_cast<int64_t>(
        assigned.cached.empty() ? 0 : assigned.cached[static_cast<size_t>(p)].size());
  }
  PartitionQuality& quality = result.quality;
  quality = homogeneous_quality(
      cut_and_balance(graph, {assigned.assignment}, loads, options.chunk_bytes), loads);
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

HeteroPartitionResult partition_hetero_dataset(const HeteroDataset& dataset,
                                               const std::string& output,
                                               const PartitionOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const std::vector<Array> assignment = assign_hetero_partitions(dataset, options);
  HeteroPartitionResult result;
  result.assign_seconds = internal::elapsed_since(start);
  const internal::TypedGraph graph = internal::typed_graph(dataset);
  Loads loads = loads_of(graph, assignment, options.num_parts);
  result.quality = cut_and_balance(graph, assignment, loads, int64_t{64} << 20);
  for (const Array& part : assignment) {
    result.books.push_back(internal::book_of(part, options.num_parts));
  }
  result.part_edges = std::move(loads.edges);
  internal::write_hetero_partitioned_dataset(dataset, assignment, options, result, output,
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

HeteroPartitionResult partition_hetero_dataset(const std::string& input, const std::string& output,
                                               const PartitionOptions& options) {
  validate_partition_options(options);
  const HeteroDataset dataset =
      load_hetero_dataset(input, {.memory_map = true, .validate_graph = true});
  return partition_hetero_dataset(dataset, output, options);
}

}  // namespace volley
