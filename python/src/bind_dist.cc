// python/src/bind_dist.cc — the distributed sampling and feature service (volley/dist): a Server
// per partition, the DistGraph client (a BatchSource, so bind_sampling's NeighborLoader runs
// over it) and the server-client loader. python/volley/dist.py wraps them.
//
// Compiled only in builds with gRPC (VOLLEY_WITH_DIST; module.cc sets `_has_dist`). Every call
// that may wait on the network or on a server's threads releases the GIL.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "server_init.h"
#include "volley/dist/client.h"
#include "volley/dist/hetero_client.h"
#include "volley/dist/node_state_client.h"
#include "volley/dist/server.h"
#include "volley/loader/neighbor_loader.h"

namespace volley::python {

nb::dict hetero_info_to_python(const dist::HeteroServiceInfo& info);  // bind_dist_hetero.cc

namespace {

using dist::ClientOptions;
using dist::DistGraph;
using dist::Server;
using dist::ServerClientLoader;
using dist::ServerOptions;
using dist::ServiceInfo;

nb::dict info_to_python(const ServiceInfo& info) {
  nb::dict d;
  d["dataset_name"] = info.dataset_name;
  d["fingerprint"] = info.fingerprint;
  d["book"] = nb::cast(info.book);
  d["num_nodes"] = info.book.num_nodes();
  d["num_parts"] = info.book.num_parts();
  d["num_edges"] = info.num_edges;
  rows_to_python(d, info);
  d["has_weights"] = info.has_weights;
  d["has_edge_time"] = info.has_edge_time;
  d["has_node_time"] = info.has_node_time;
  return d;
}

void bind_server(nb::module_& m) {
  nb::class_<Server> server(m, "Server",
                            "One partition, homogeneous or heterogeneous, served over gRPC (see "
                            "volley/dist/server.h).");
  def_server_init(server,
                  "Loads part `part` of the partitioned dataset at `directory` (either kind) and "
                  "starts serving.");
  server.def_prop_ro("port", &Server::port)
      .def_prop_ro("heterogeneous", &Server::heterogeneous)
      .def_prop_ro("address", &Server::address)
      .def_prop_ro("part", &Server::part)
      .def_prop_ro("fingerprint", &Server::fingerprint)
      .def_prop_ro("authenticated", &Server::authenticated)
      .def(
          "stats",
          [](const Server& server) {
            const dist::ServerStats stats = server.stats();
            nb::dict d;
            d["requests"] = stats.requests;
            d["failed_requests"] = stats.failed_requests;
            d["active_streams"] = stats.active_streams;
            return d;
          },
          "Request counts: requests, failed_requests, active_streams.")
      .def("shutdown", &Server::shutdown, nb::arg("grace_seconds") = 1.0,
           nb::call_guard<nb::gil_scoped_release>(),
           "Stops serving; waits up to grace_seconds for calls in flight (idempotent).")
      .def("wait", &Server::wait, nb::call_guard<nb::gil_scoped_release>(),
           "Blocks until shutdown().");
}

void bind_dist_graph(nb::module_& m) {
  nb::class_<DistGraph, BatchSource> graph(
      m, "DistGraph", "Partitions served over gRPC, as one graph (see volley/dist/client.h).");
  def_client_connect(graph, [](const Server& server) { return server.partition(); });
  graph.def_prop_ro("info", [](const DistGraph& graph) { return info_to_python(graph.info()); })
      .def_prop_ro("addresses", &DistGraph::addresses)
      .def_prop_ro("local_part", &DistGraph::local_part)
      .def(
          "sample",
          [](const DistGraph& graph, const InputArray& seeds, std::vector<int64_t> fanouts,
             bool replace, bool weighted, uint64_t seed, uint64_t batch_index) {
            const Array seed_array = host_ids_array(seeds, "seeds");
            SampledSubgraph sub;
            {
              nb::gil_scoped_release release;
              graph.sample(seed_array.span<int64_t>(),
                           {std::move(fanouts), replace, weighted, seed}, batch_index, sub);
            }
            return subgraph_to_python(sub);
          },
          nb::arg("seeds"), nb::arg("fanouts"), nb::arg("replace") = false,
          nb::arg("weighted") = false, nb::arg("seed") = 0, nb::arg("batch_index") = 0,
          "Multi-hop sampling across the partitions: exactly sample_neighbors' result on the "
          "whole graph (same dict).")
      .def(
          "gather_features",
          [](const DistGraph& graph, const InputArray& ids, const std::string& dtype) {
            return gathered_rows(ids, "ids", [&](std::span<const int64_t> span) {
              const DType out = dtype.empty() ? graph.feature_dtype() : dtype_from_name(dtype);
              return graph.gather_features(span, out);
            });
          },
          nb::arg("ids"), nb::arg("dtype") = "",
          "Feature rows of `ids` [n, D] in `dtype` (\"\": as stored).")
      .def(
          "gather_labels",
          [](const DistGraph& graph, const InputArray& ids) {
            return gathered_rows(ids, "ids", [&](std::span<const int64_t> span) {
              return graph.gather_labels(span);
            });
          },
          nb::arg("ids"), "Labels of `ids` (int64 [n]).");
}

void bind_server_client_loader(nb::module_& m) {
  nb::class_<ServerClientLoader>(
      m, "ServerClientLoader",
      "Server-client mode: epochs sampled and gathered by a server, streamed to this process "
      "(either graph kind: input_type names a heterogeneous service's input node type).")
      .def(
          "__init__",
          [](ServerClientLoader* self, const std::string& address,
             const std::optional<InputArray>& input_nodes, LoaderOptions options,
             const std::string& token, double deadline_seconds, double connect_seconds,
             int64_t max_message_bytes, bool features, bool labels, const std::string& tls_ca,
             const std::string& tls_cert, const std::string& tls_key, const std::string& input_type,
             const std::string& typed_feature_dtype) {
            ClientOptions client = client_options(token, deadline_seconds, connect_seconds,
                                                  max_message_bytes, tls_ca, tls_cert, tls_key);
            auto input_array = array_from_python(input_nodes, "input_nodes");
            dist::StreamedFields fields{
                .features = features, .labels = labels, .input_type = input_type};
            if (!typed_feature_dtype.empty()) {
              fields.typed_feature_dtype = dtype_from_name(typed_feature_dtype);
            }
            nb::gil_scoped_release release;
            new (self) ServerClientLoader(address, std::move(client), std::move(input_array),
                                          std::move(options), std::move(fields));
          },
          nb::arg("address"), nb::arg("input_nodes").none(), nb::arg("options"), nb::kw_only(),
          nb::arg("token") = "", nb::arg("deadline_seconds") = 30.0,
          nb::arg("connect_seconds") = 30.0, nb::arg("max_message_bytes") = int64_t{512} << 20,
          nb::arg("features") = true, nb::arg("labels") = true, nb::arg("tls_ca") = "",
          nb::arg("tls_cert") = "", nb::arg("tls_key") = "", nb::arg("input_type") = "",
          nb::arg("typed_feature_dtype") = "",
          "Connects to the server at `address`; loader options as NeighborLoader's (typed: "
          "options.sampler with its fanouts_by_type; x as stored unless typed_feature_dtype).")
      .def_prop_ro("num_batches", &ServerClientLoader::num_batches)
      .def_prop_ro("num_inputs", &ServerClientLoader::num_inputs)
      .def_prop_ro("info",
                   [](const ServerClientLoader& loader) {
                     const dist::HeteroServiceInfo* typed = loader.typed_info();
                     return typed ? hetero_info_to_python(*typed) : info_to_python(loader.info());
                   })
      .def("start_epoch", &ServerClientLoader::start_epoch, nb::arg("epoch"),
           nb::arg("first_batch") = 0, nb::call_guard<nb::gil_scoped_release>(),
           "Starts streaming epoch `epoch` (a BatchStream), from batch `first_batch`.");
}

// Node tables on the servers: a RemoteNodeState is a NodeTable (bind_node_state.cc binds its
// rows), made by create / open over a NodeDataService.
void bind_remote_node_state(nb::module_& m) {
  nb::class_<dist::NodeDataService>(m, "NodeDataService",
                                    "The servers of a partitioned dataset, for node tables.")
      .def_static(
          "connect",
          [](std::vector<std::string> addresses, const std::string& token, double deadline_seconds,
             double connect_seconds, int64_t max_message_bytes, const std::string& tls_ca,
             const std::string& tls_cert, const std::string& tls_key) {
            ClientOptions options = client_options(token, deadline_seconds, connect_seconds,
                                                   max_message_bytes, tls_ca, tls_cert, tls_key);
            nb::gil_scoped_release release;
            return dist::NodeDataService::connect(std::move(addresses), std::move(options));
          },
          nb::arg("addresses"), nb::kw_only(), nb::arg("token") = "",
          nb::arg("deadline_seconds") = 30.0, nb::arg("connect_seconds") = 30.0,
          nb::arg("max_message_bytes") = int64_t{512} << 20, nb::arg("tls_ca") = "",
          nb::arg("tls_cert") = "", nb::arg("tls_key") = "")
      .def_prop_ro("addresses", &dist::NodeDataService::addresses)
      .def_prop_ro("node_types", &dist::NodeDataService::node_types)
      .def("num_nodes", &dist::NodeDataService::num_nodes, nb::arg("node_type"));
  nb::class_<dist::RemoteNodeState, NodeTable>(m, "RemoteNodeState",
                                               "A node table held by the partition servers.")
      .def_static(
          "create",
          [](std::shared_ptr<const dist::NodeDataService> service, const std::string& name,
             const std::string& node_type, int64_t dim, const std::string& dtype, int state_slots,
             const std::string& init, double scale, uint64_t seed, bool exist_ok) {
            const NodeStateOptions options{
                .dim = dim, .dtype = dtype_from_name(dtype), .state_slots = state_slots};
            const Init kind = node_init_kind(init);
            nb::gil_scoped_release release;
            return dist::RemoteNodeState::create(std::move(service), name, node_type, options, kind,
                                                 scale, seed, exist_ok);
          },
          nb::arg("service"), nb::arg("name"), nb::arg("node_type"), nb::arg("dim"),
          nb::arg("dtype"), nb::arg("state_slots"), nb::arg("init"), nb::arg("scale"),
          nb::arg("seed"), nb::arg("exist_ok"))
      .def_static("open", &dist::RemoteNodeState::open, nb::arg("service"), nb::arg("name"),
                  nb::arg("node_type"), nb::call_guard<nb::gil_scoped_release>())
      .def("remove", &dist::RemoteNodeState::remove, nb::call_guard<nb::gil_scoped_release>())
      .def(
          "aggregate_from",
          [](dist::RemoteNodeState& self, const dist::RemoteNodeState& source,
             const std::string& op, bool weighted, bool self_loops) {
            const AggregateOptions options{
                .op = aggregation_from_name(op), .weighted = weighted, .self_loops = self_loops};
            nb::gil_scoped_release release;
            self.aggregate_from(source, options);
          },
          nb::arg("source"), nb::arg("op"), nb::arg("weighted"), nb::arg("self_loops"),
          "This table's rows from source's, aggregated by the servers over their graph.")
      .def_prop_ro("name", &dist::RemoteNodeState::name)
      .def_prop_ro("node_type", &dist::RemoteNodeState::node_type);
}

}  // namespace

void bind_dist(nb::module_& m) {
  bind_remote_node_state(m);
  bind_server(m);
  bind_dist_graph(m);
  bind_server_client_loader(m);
  m.def("dataset_fingerprint", &dist::dataset_fingerprint, nb::arg("directory"),
        nb::call_guard<nb::gil_scoped_release>(),
        "CRC-32 (hex) of a partitioned dataset's partition.json: what servers compare.");
  m.attr("dist_protocol_version") = dist::kProtocolVersion;
}

}  // namespace volley::python
