// Front end of heterogeneous partitioning (hetero_partition.h): options, the per-type random and
// the type-merged METIS assignment, quality figures, and the timing of partition_hetero_dataset.
// The directory is written in hetero_partitioned_writer.cc and read in partitioned_reader.cc.
#include "volley/partition/hetero_partition.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>

#include "volley/partition/internal/partitioned_dataset.h"
#include "volley/partition/internal/partitioners.h"

namespace volley {
namespace {

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

std::vector<uint8_t> training_flags(const HeteroDataset& dataset, int t) {
  return internal::training_flags(dataset.graph.num_nodes(t),
                                  dataset.node_data[static_cast<size_t>(t)].train_idx);
}

// One node type, balanced random (the homogeneous method's core): nodes and training nodes under
// hard caps (in-edges are not a constraint: on small types with skewed degrees it would force
// node imbalance).
Array assign_random_type(const HeteroDataset& dataset, int t, const PartitionOptions& options) {
  const int64_t n = dataset.graph.num_nodes(t);
  const std::vector<uint8_t> train = training_flags(dataset, t);
  const std::array<int64_t, internal::kNumConstraints> totals{
      n, 0, std::accumulate(train.begin(), train.end(), int64_t{0})};
  internal::BalancedPlacer placer(
      internal::balance_caps(totals, options.num_parts, options.balance_tolerance),
      options.num_parts);
  return internal::place_in_random_order(n, nullptr, train, std::move(placer), options,
                                         static_cast<uint32_t>(t) + 1);
}

// METIS over the type-merged graph, one one-hot constraint per node type.
std::vector<Array> assign_metis_merged(const HeteroDataset& dataset,
                                       const PartitionOptions& options) {
  const HeteroGraph& graph = dataset.graph;
  const int types = graph.num_node_types();
  std::vector<int64_t> offset(static_cast<size_t>(types) + 1, 0);
  for (int t = 0; t < types; ++t) {
    offset[static_cast<size_t>(t) + 1] = offset[static_cast<size_t>(t)] + graph.num_nodes(t);
  }
  const int64_t n = offset.back();
  std::vector<int64_t> weights(static_cast<size_t>(n) * static_cast<size_t>(types), 0);
  for (int t = 0; t < types; ++t) {
    for (int64_t v = offset[static_cast<size_t>(t)]; v < offset[static_cast<size_t>(t) + 1]; ++v) {
      weights[static_cast<size_t>(v) * static_cast<size_t>(types) + static_cast<size_t>(t)] = 1;
    }
  }
  const internal::EdgeVisitor for_each_edge =
      [&](const std::function<void(int64_t, int64_t)>& visit) {
        for (int r = 0; r < graph.num_edge_types(); ++r) {
          const EdgeType& type = graph.edge_types()[static_cast<size_t>(r)];
          const int64_t src = offset[static_cast<size_t>(graph.node_type_index(type.src))];
          const int64_t dst = offset[static_cast<size_t>(graph.node_type_index(type.dst))];
          const Csr& csr = graph.edges(r);
          for (int64_t v = 0; v < csr.num_nodes(); ++v) {
            for (int64_t pos = csr.begin(v); pos < csr.end(v); ++pos) {
              visit(dst + v, src + csr.neighbor(pos));
            }
          }
        }
      };
  const Array merged = internal::metis_kway(n, graph.total_edges(), for_each_edge,
                                            std::move(weights), types, options);
  std::vector<Array> result;
  for (int t = 0; t < types; ++t) {
    const int64_t count = graph.num_nodes(t);
    Array part = Array::empty(DType::kInt32, {count});
    std::copy_n(merged.data<int32_t>() + offset[static_cast<size_t>(t)], count,
                part.data<int32_t>());
    result.push_back(std::move(part));
  }
  return result;
}

// Fennel (as the homogeneous stream method), one pass over the node types in order and each
// type's nodes in id order: a node goes where most of its already placed in-neighbors (of any
// type, over every edge type ending at its type) are, minus Fennel's size penalty of its own
// type's partition, among partitions with room under the type's caps.
std::vector<Array> assign_stream_typed(const HeteroDataset& dataset,
                                       const PartitionOptions& options) {
  const HeteroGraph& graph = dataset.graph;
  const int64_t k = options.num_parts;
  constexpr double kGamma = 1.5;
  std::vector<Array> result;
  for (int t = 0; t < graph.num_node_types(); ++t) {
    result.push_back(Array::empty(DType::kInt32, {graph.num_nodes(t)}));
    std::fill_n(result.back().data<int32_t>(), graph.num_nodes(t), -1);
  }
  std::vector<int64_t> neighbors_in(static_cast<size_t>(k));
  for (int t = 0; t < graph.num_node_types(); ++t) {
    const int64_t n = graph.num_nodes(t);
    const std::vector<uint8_t> train = training_flags(dataset, t);
    std::vector<std::pair<const Csr*, const int32_t*>> incoming;  // (edges, their sources' parts)
    int64_t edges_in = 0;
    for (int r = 0; r < graph.num_edge_types(); ++r) {
      const EdgeType& type = graph.edge_types()[static_cast<size_t>(r)];
      if (graph.node_type_index(type.dst) != t) continue;
      incoming.emplace_back(
          &graph.edges(r),
          result[static_cast<size_t>(graph.node_type_index(type.src))].data<int32_t>());
      edges_in += graph.edges(r).num_edges();
    }
    const std::array<int64_t, internal::kNumConstraints> totals{
        n, 0, std::accumulate(train.begin(), train.end(), int64_t{0})};
    internal::BalancedPlacer placer(internal::balance_caps(totals, k, options.balance_tolerance),
                                    k);
    const double alpha = std::sqrt(static_cast<double>(k)) * static_cast<double>(edges_in) /
                         std::pow(static_cast<double>(n), kGamma);
    const double mean_nodes = static_cast<double>(n) / static_cast<double>(k);
    int32_t* part_of = result[static_cast<size_t>(t)].data<int32_t>();
    for (int64_t v = 0; v < n; ++v) {
      std::fill(neighbors_in.begin(), neighbors_in.end(), 0);
      for (const auto& [csr, source_part] : incoming) {
        for (int64_t pos = csr->begin(v); pos < csr->end(v); ++pos) {
          const int32_t owner = source_part[csr->neighbor(pos)];
          if (owner >= 0) ++neighbors_in[static_cast<size_t>(owner)];
        }
      }
      const bool is_train = train[static_cast<size_t>(v)] != 0;
      int64_t best = -1;
      double best_score = -std::numeric_limits<double>::infinity();
      for (int64_t p = 0; p < k; ++p) {
        if (!placer.fits(p, 0, is_train)) continue;
        const double score = static_cast<double>(neighbors_in[static_cast<size_t>(p)]) -
                             alpha * kGamma * std::sqrt(placer.relative_load(p) * mean_nodes);
        if (score > best_score) {
          best_score = score;
          best = p;
        }
      }
      if (best < 0) best = placer.least_loaded(0, is_train);
      placer.place(best, 0, is_train);
      part_of[v] = static_cast<int32_t>(best);
    }
    for (const auto& [csr, source_part] : incoming) {
      internal::release_mapped_pages(csr->indices(), 0, csr->indices().nbytes());
    }
  }
  return result;
}

}  // namespace

std::vector<Array> assign_hetero_partitions(const HeteroDataset& dataset,
                                            const PartitionOptions& options) {
  check_hetero(dataset, options);
  if (options.method == PartitionMethod::kMetis) return assign_metis_merged(dataset, options);
  if (options.method == PartitionMethod::kStream) return assign_stream_typed(dataset, options);
  std::vector<Array> result;
  for (int t = 0; t < dataset.graph.num_node_types(); ++t) {
    result.push_back(assign_random_type(dataset, t, options));
  }
  return result;
}

HeteroPartitionQuality hetero_partition_quality(const HeteroDataset& dataset,
                                                const std::vector<Array>& assignment,
                                                int64_t num_parts) {
  const HeteroGraph& graph = dataset.graph;
  VOLLEY_REQUIRE(static_cast<int>(assignment.size()) == graph.num_node_types(), ValueError,
                 "assignment: expected one array per node type ({}), found {}",
                 graph.num_node_types(), assignment.size());
  for (int t = 0; t < graph.num_node_types(); ++t) {
    const Array& part = assignment[static_cast<size_t>(t)];
    VOLLEY_REQUIRE(part.dtype() == DType::kInt32 && part.numel() == graph.num_nodes(t), ValueError,
                   "assignment of node type '{}': expected int32[{}], found {}",
                   graph.node_types()[static_cast<size_t>(t)].name, graph.num_nodes(t),
                   part.describe());
    for (int32_t p : part.span<int32_t>()) {
      VOLLEY_REQUIRE(p >= 0 && p < num_parts, IndexError,
                     "assignment of node type '{}': part {} out of range for {} partitions",
                     graph.node_types()[static_cast<size_t>(t)].name, p, num_parts);
    }
  }
  HeteroPartitionQuality quality;
  std::vector<int64_t> edge_loads(static_cast<size_t>(num_parts), 0);
  for (int r = 0; r < graph.num_edge_types(); ++r) {
    const EdgeType& type = graph.edge_types()[static_cast<size_t>(r)];
    const int32_t* src =
        assignment[static_cast<size_t>(graph.node_type_index(type.src))].data<int32_t>();
    const int32_t* dst =
        assignment[static_cast<size_t>(graph.node_type_index(type.dst))].data<int32_t>();
    const Csr& csr = graph.edges(r);
    for (int64_t v = 0; v < csr.num_nodes(); ++v) {
      edge_loads[static_cast<size_t>(dst[v])] += csr.degree(v);
    }
    const int64_t cut = internal::count_cut_edges(csr, src, dst, int64_t{64} << 20);
    quality.cut_edges_per_type.push_back(cut);
    quality.cut_edges += cut;
  }
  const int64_t total = graph.total_edges();
  quality.edge_cut_fraction =
      total > 0 ? static_cast<double>(quality.cut_edges) / static_cast<double>(total) : 0.0;
  quality.edge_balance = internal::balance_of(edge_loads);
  for (const Array& part : assignment) {
    std::vector<int64_t> loads(static_cast<size_t>(num_parts), 0);
    for (int32_t p : part.span<int32_t>()) ++loads[static_cast<size_t>(p)];
    quality.node_balance.push_back(internal::balance_of(loads));
  }
  return quality;
}

HeteroPartitionResult partition_hetero_dataset(const HeteroDataset& dataset,
                                               const std::string& output,
                                               const PartitionOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const std::vector<Array> assignment = assign_hetero_partitions(dataset, options);
  HeteroPartitionResult result;
  result.assign_seconds = internal::elapsed_since(start);
  result.quality = hetero_partition_quality(dataset, assignment, options.num_parts);
  const HeteroGraph& graph = dataset.graph;
  for (const Array& part : assignment) {
    result.books.push_back(internal::book_of(part, options.num_parts));
  }
  result.part_edges.assign(static_cast<size_t>(options.num_parts),
                           std::vector<int64_t>(static_cast<size_t>(graph.num_edge_types()), 0));
  for (int r = 0; r < graph.num_edge_types(); ++r) {
    const EdgeType& type = graph.edge_types()[static_cast<size_t>(r)];
    const int32_t* dst =
        assignment[static_cast<size_t>(graph.node_type_index(type.dst))].data<int32_t>();
    const Csr& csr = graph.edges(r);
    for (int64_t v = 0; v < csr.num_nodes(); ++v) {
      result.part_edges[static_cast<size_t>(dst[v])][static_cast<size_t>(r)] += csr.degree(v);
    }
  }
  internal::write_hetero_partitioned_dataset(dataset, assignment, options, result, output,
                                             [&] { return internal::elapsed_since(start); });
  result.seconds = internal::elapsed_since(start);
  return result;
}

HeteroPartitionResult partition_hetero_dataset(const std::string& input, const std::string& output,
                                               const PartitionOptions& options) {
  validate_partition_options(options);
  const HeteroDataset dataset =
      load_hetero_dataset(input, {.memory_map = true, .validate_graph = true});
  return partition_hetero_dataset(dataset, output, options);
}

}  // namespace volley
