// python/src/bind_dist_hetero.cc — the heterogeneous distributed service (volley/dist's
// server.h and hetero_client.h): the DistHeteroGraph client and the DistHeteroSource the typed
// loaders sample through. python/volley/_dist_hetero.py wraps them. Compiled with bind_dist.cc
// (VOLLEY_WITH_DIST); calls that may wait on the network release the GIL.
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

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

void bind_dist_hetero(nb::module_& m) {
  using dist::DistHeteroGraph;
  nb::class_<DistHeteroGraph> graph(m, "DistHeteroGraph",
                                    "Heterogeneous partitions served over gRPC, as one graph (see "
                                    "volley/dist/hetero_client.h).");
  def_client_connect(graph, [](const dist::Server& server) { return server.hetero_partition(); });
  graph.def_prop_ro("local_part", &DistHeteroGraph::local_part)
      .def_prop_ro("info",
                   [](const DistHeteroGraph& graph) { return hetero_info_to_python(graph.info()); })
      .def_prop_ro("addresses", &DistHeteroGraph::addresses);
  nb::class_<dist::DistHeteroSource, TypedBatchSource>(
      m, "DistHeteroSource",
      "A DistHeteroGraph as the typed loaders read it: batches sampled with these options "
      "(NeighborSamplerOptions with fanouts_by_type), features (x) and labels (y) of every node "
      "type that has them gathered into each batch (see volley/dist/hetero_client.h).")
      .def(
          "__init__",
          [](dist::DistHeteroSource* self, std::shared_ptr<const DistHeteroGraph> graph,
             HeteroSamplerOptions options, const std::string& feature_dtype) {
            std::optional<DType> dtype;
            if (!feature_dtype.empty()) dtype = dtype_from_name(feature_dtype);
            new (self) dist::DistHeteroSource(std::move(graph), std::move(options), dtype);
          },
          nb::arg("graph"), nb::arg("options"), nb::kw_only(), nb::arg("feature_dtype") = "");
}

}  // namespace volley::python
