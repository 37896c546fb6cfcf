// python/src/bind_dist_hetero.cc — the heterogeneous distributed service (volley/dist's
// server.h and hetero_client.h): the DistHeteroGraph
// client. python/volley/_dist_hetero.py wraps them. Compiled with bind_dist.cc (VOLLEY_WITH_DIST);
// calls that may wait on the network release the GIL.
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "server_init.h"
#include "volley/dist/hetero_client.h"
#include "volley/dist/server.h"
#include "volley/loader/batch.h"

namespace volley::python {

TimeSource time_source_from_name(const std::string& name);  // bind_sampling.cc
// bind_hetero.cc:
std::vector<HeteroSeeds> hetero_seed_groups(
    const std::vector<std::pair<std::string, InputArray>>& seeds,
    const std::vector<std::optional<InputArray>>& seed_times, std::vector<Array>& arrays);

using EdgeTuple = std::tuple<std::string, std::string, std::string>;

nb::dict hetero_info_to_python(const dist::HeteroServiceInfo& info) {
  nb::dict d;
  d["dataset_name"] = info.dataset_name;
  d["fingerprint"] = info.fingerprint;
  nb::list node_types;
  for (const auto& type : info.node_types) {
    nb::dict t;
    t["name"] = type.name;
    t["num_nodes"] = type.book.num_nodes();
    t["offsets"] = type.book.offsets();
    rows_to_python(t, type);
    t["has_node_time"] = type.has_node_time;
    node_types.append(t);
  }
  d["node_types"] = node_types;
  std::vector<EdgeTuple> edge_types;
  for (const auto& type : info.edge_types)
    edge_types.emplace_back(type.src, type.relation, type.dst);
  d["edge_types"] = edge_types;
  d["num_edges"] = info.num_edges;
  d["has_edge_time"] = info.has_edge_time;
  return d;
}

namespace {

using dist::DistHeteroGraph;

void bind_dist_hetero_graph(nb::module_& m) {
  nb::class_<DistHeteroGraph> graph(m, "DistHeteroGraph",
                                    "Heterogeneous partitions served over gRPC, as one graph (see "
                                    "volley/dist/hetero_client.h).");
  def_client_connect(graph, [](const dist::Server& server) { return server.hetero_partition(); });
  graph.def_prop_ro("local_part", &DistHeteroGraph::local_part)
      .def_prop_ro("info",
                   [](const DistHeteroGraph& graph) { return hetero_info_to_python(graph.info()); })
      .def_prop_ro("addresses", &DistHeteroGraph::addresses)
      .def(
          "sample",
          [](const DistHeteroGraph& graph,
             const std::vector<std::pair<std::string, InputArray>>& seeds,
             const std::vector<int64_t>& fanouts,
             const std::vector<std::pair<EdgeTuple, std::vector<int64_t>>>& fanouts_by_type,
             bool replace, bool weighted, uint64_t seed, uint64_t batch_index, bool disjoint,
             const std::string& time_source, const std::string& temporal_strategy,
             const std::vector<std::optional<InputArray>>& seed_times) {
            const HeteroSamplerOptions options =
                hetero_sampler_options(fanouts, fanouts_by_type, replace, weighted, seed, disjoint,
                                       time_source, temporal_strategy);
            std::vector<Array> arrays;
            const std::vector<HeteroSeeds> groups = hetero_seed_groups(seeds, seed_times, arrays);
            HeteroSampledSubgraph out;
            {
              nb::gil_scoped_release release;
              out = graph.sample(groups, options, batch_index);
            }
            return hetero_subgraph_dict(out);
          },
          nb::arg("seeds"), nb::arg("fanouts"), nb::arg("fanouts_by_type"),
          nb::arg("replace") = false, nb::arg("weighted") = false, nb::arg("seed") = 0,
          nb::arg("batch_index") = 0, nb::arg("disjoint") = false, nb::arg("time_source") = "none",
          nb::arg("temporal_strategy") = "uniform",
          nb::arg("seed_times") = std::vector<std::optional<InputArray>>{})
      .def(
          "gather_features",
          [](const DistHeteroGraph& graph, const std::string& node_type, const InputArray& ids,
             const std::string& dtype) {
            return gathered_rows(
                ids, "ids of node type " + node_type, [&](std::span<const int64_t> span) {
                  const auto& type =
                      graph.info()
                          .node_types[static_cast<size_t>(graph.info().node_type_index(node_type))];
                  const DType out = dtype.empty() ? type.feature_dtype : dtype_from_name(dtype);
                  return graph.gather_features(node_type, span, out);
                });
          },
          nb::arg("node_type"), nb::arg("ids"), nb::arg("dtype") = "")
      .def(
          "gather_labels",
          [](const DistHeteroGraph& graph, const std::string& node_type, const InputArray& ids) {
            return gathered_rows(ids, "ids of node type " + node_type,
                                 [&](std::span<const int64_t> span) {
                                   return graph.gather_labels(node_type, span);
                                 });
          },
          nb::arg("node_type"), nb::arg("ids"));
}

}  // namespace

void bind_dist_hetero_source(nb::module_& m) {
  nb::class_<dist::DistHeteroSource, TypedBatchSource>(
      m, "DistHeteroSource",
      "A DistHeteroGraph as the typed loaders read it: batches sampled with these options, "
      "features (x) and labels (y) of every node type that has them gathered into each batch "
      "(see volley/dist/hetero_client.h).")
      .def(
          "__init__",
          [](dist::DistHeteroSource* self, std::shared_ptr<const DistHeteroGraph> graph,
             const std::vector<int64_t>& fanouts,
             const std::vector<std::pair<EdgeTuple, std::vector<int64_t>>>& fanouts_by_type,
             bool replace, bool weighted, bool disjoint, const std::string& time_source,
             const std::string& temporal_strategy, const std::string& feature_dtype) {
            HeteroSamplerOptions options =
                hetero_sampler_options(fanouts, fanouts_by_type, replace, weighted, 0, disjoint,
                                       time_source, temporal_strategy);
            std::optional<DType> dtype;
            if (!feature_dtype.empty()) dtype = dtype_from_name(feature_dtype);
            new (self) dist::DistHeteroSource(std::move(graph), std::move(options), dtype);
          },
          nb::arg("graph"), nb::arg("fanouts"), nb::arg("fanouts_by_type"), nb::kw_only(),
          nb::arg("replace") = false, nb::arg("weighted") = false, nb::arg("disjoint") = false,
          nb::arg("time_source") = "none", nb::arg("temporal_strategy") = "uniform",
          nb::arg("feature_dtype") = "");
}

void bind_dist_hetero(nb::module_& m) {
  bind_dist_hetero_graph(m);
  bind_dist_hetero_source(m);
}

}  // namespace volley::python
