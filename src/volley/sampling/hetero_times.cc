// Timestamps of temporal heterogeneous sampling (contract in hetero_sampler.h): checks the
// HeteroTimes against the graph and gives every timed edge type's Csr the time of each entry as
// its edge_time, rows sorted by it, so the sampler reads one kind of time with binary search.
#include <fmt/format.h>

#include <optional>

#include "volley/core/error.h"
#include "volley/sampling/hetero_sampler.h"
#include "volley/sampling/internal/hetero_seeds.h"

namespace volley {
namespace {

// Per node type (graph order): its node time, or null when untimed.
std::vector<const Array*> node_times(const HeteroGraph& graph, const HeteroTimes& times) {
  std::vector<const Array*> result(static_cast<size_t>(graph.num_node_types()), nullptr);
  for (const auto& [name, time] : times.node_time) {
    const int type = graph.find_node_type(name);
    VOLLEY_REQUIRE(type >= 0, ValueError,
                   "node time of node type '{}', which the graph does not have (node types: {})",
                   name, graph.node_type_list());
    VOLLEY_REQUIRE(result[static_cast<size_t>(type)] == nullptr, ValueError,
                   "node time of node type '{}' is given twice", name);
    check_time_array(time, graph.num_nodes(type), fmt::format("node time of node type '{}'", name),
                     "node");
    result[static_cast<size_t>(type)] = &time;
  }
  VOLLEY_REQUIRE(!times.node_time.empty(), ValueError,
                 "temporal sampling by node time needs the time of at least one node type, got "
                 "none (node types: {})",
                 graph.node_type_list());
  return result;
}

// Per edge type (graph order): its time by edge id, or null.
std::vector<const Array*> edge_times(const HeteroGraph& graph, const HeteroTimes& times) {
  std::vector<const Array*> result(static_cast<size_t>(graph.num_edge_types()), nullptr);
  for (const auto& [type, time] : times.edge_time) {
    const int index = graph.find_edge_type(type);
    VOLLEY_REQUIRE(index >= 0, ValueError,
                   "edge time of edge type {}, which the graph does not have (edge types: {})",
                   type.name(), graph.edge_type_list());
    VOLLEY_REQUIRE(result[static_cast<size_t>(index)] == nullptr, ValueError,
                   "edge time of edge type {} is given twice", type.name());
    check_time_array(time, graph.edges(index).num_edges(),
                     fmt::format("edge time of edge type {}", type.name()), "edge");
    result[static_cast<size_t>(index)] = &time;
  }
  return result;
}

// `csr` with `entry` (one time per CSR entry) as its edge_time, rows sorted by it.
Csr timed_csr(const Csr& csr, Array entry) {
  Csr timed = csr.with_times(std::nullopt, std::move(entry));
  if (timed.first_row_unsorted_by_edge_time() < 0) return timed;
  return sort_rows_by_time(timed, TimeKind::kEdge);
}

}  // namespace

Csr attach_entry_times(const Csr& csr, const Array* node_time, const Array* edge_time,
                       const EdgeType& type) {
  VOLLEY_ASSERT((node_time == nullptr) != (edge_time == nullptr));
  const int64_t count = csr.num_edges();
  Array entry = Array::empty(DType::kInt64, {count});
  int64_t* out = entry.data<int64_t>();
  const Array& times = node_time != nullptr ? *node_time : *edge_time;
  const int64_t* time = times.data<int64_t>();
  const int64_t known = times.numel();
  for (int64_t k = 0; k < count; ++k) {
    const int64_t id = node_time != nullptr ? csr.neighbor(k) : csr.edge_id(k);
    VOLLEY_REQUIRE(id >= 0 && id < known, IndexError,
                   "{} id {} of edge type {} has no {} time: its times have {} entries",
                   node_time != nullptr ? "neighbor" : "edge", id, type.name(),
                   node_time != nullptr ? "node" : "edge", known);
    out[k] = time[id];
  }
  return timed_csr(csr, std::move(entry));
}

HeteroGraph attach_hetero_times(const HeteroGraph& graph, const HeteroSamplerOptions& options,
                                const HeteroTimes& times) {
  if (!sampling_internal::check_time_options(options, times)) return graph;
  const bool by_edge = options.time_source == TimeSource::kEdge;
  std::vector<const Array*> nodes, edges;
  if (by_edge) {
    edges = edge_times(graph, times);
  } else {
    nodes = node_times(graph, times);
  }
  std::vector<std::pair<EdgeType, Csr>> timed;
  for (int e = 0; e < graph.num_edge_types(); ++e) {
    const EdgeType& type = graph.edge_types()[static_cast<size_t>(e)];
    const Csr& csr = graph.edges(e);
    const Array* node_time =
        by_edge ? nullptr : nodes[static_cast<size_t>(graph.node_type_index(type.src))];
    const Array* edge_time = by_edge ? edges[static_cast<size_t>(e)] : nullptr;
    if (node_time != nullptr || edge_time != nullptr) {
      timed.emplace_back(type, attach_entry_times(csr, node_time, edge_time, type));
    } else if (by_edge && csr.has_edge_time()) {  // the Csr's own edge times (CSR order)
      timed.emplace_back(type, timed_csr(csr, *csr.edge_time()));
    } else {  // untimed: always admissible; times the Csr carries are not read
      timed.emplace_back(type, csr.with_times(std::nullopt, std::nullopt));
    }
  }
  return HeteroGraph(graph.node_types(), std::move(timed), /*validate=*/false);
}

}  // namespace volley
