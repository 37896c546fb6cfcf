// python/src/bind_cuda.cc — the GPU data path's own pieces: CUDA device queries, placed graphs
// (the loader is one class for every device, bound in bind_sampling.cc, as are the sampler, the
// feature store and the epoch; bind_feature.cc). Compiled in every build:
// without CUDA the native calls throw the stubs' RuntimeError ("this build of Volley has no CUDA
// support"), which Python sees as VolleyRuntimeError.
//
// Streams cross as integers (a cudaStream_t's value, e.g. torch.cuda.current_stream().cuda_stream;
// 0 is the legacy default stream). Every call that returns device arrays takes the consumer's
// stream: the arrays are ready in that stream's order (it waits on an event; the host does not)
// and their memory is freed in that stream's order when the last Python view goes.
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "volley/core/cuda_device.h"
#include "volley/feature/feature_store.h"
#include "volley/graph/hetero_graph.h"
#include "volley/loader/cuda_loader.h"
#include "volley/sampling/cuda_graph.h"

namespace volley::python {
namespace {

// A placed typed graph pickles as its types plus each edge type's CudaGraph state (by IPC
// handle, as a CudaGraph pickles): (mode, device, [(node type, count)], [edge type names],
// [edge type states]).
nb::object cuda_hetero_graph_state(CudaHeteroGraph& graph) {
  if (!graph.shareable()) {
    nb::gil_scoped_release release;
    graph = graph.to_shareable();
  }
  nb::list node_types, edge_types, edges;
  for (const NodeTypeInfo& type : graph.node_types())
    node_types.append(nb::make_tuple(type.name, type.num_nodes));
  for (int e = 0; e < graph.num_edge_types(); ++e) {
    edge_types.append(graph.edge_types()[static_cast<size_t>(e)].name());
    CudaGraph edge = graph.edges(e);
    edges.append(cuda_graph_state(edge));
  }
  return nb::make_tuple(std::string(cuda_sampling_mode_name(graph.mode())), graph.device(),
                        node_types, edge_types, edges);
}

CudaHeteroGraph cuda_hetero_graph_from_state(nb::handle state) {
  VOLLEY_REQUIRE(nb::isinstance<nb::tuple>(state) && nb::len(state) == 5, ValueError,
                 "a placed typed graph's state is a tuple of 5 entries");
  std::vector<NodeTypeInfo> node_types;
  for (nb::handle type : state[2])
    node_types.push_back({nb::cast<std::string>(type[0]), nb::cast<int64_t>(type[1])});
  std::vector<EdgeType> edge_types;
  for (nb::handle name : state[3])
    edge_types.push_back(EdgeType::from_name(nb::cast<std::string>(name)));
  std::vector<CudaGraph> edges;
  for (nb::handle edge : state[4]) edges.push_back(cuda_graph_from_state(edge));
  return CudaHeteroGraph::from_parts(std::move(node_types), std::move(edge_types), std::move(edges),
                                     parse_cuda_sampling_mode(nb::cast<std::string>(state[0])),
                                     nb::cast<int>(state[1]));
}

void bind_cuda_hetero_graph(nb::module_& m) {
  nb::class_<CudaHeteroGraph>(m, "CudaHeteroGraph",
                              "A typed graph placed for CUDA sampling (sampling/cuda_graph.h).")
      .def_static(
          "place",
          [](const HeteroGraph& graph, const std::string& mode, int device, bool shareable) {
            const CudaSamplingMode parsed = parse_cuda_sampling_mode(mode);
            nb::gil_scoped_release release;
            return CudaHeteroGraph::place(
                graph, {.mode = parsed, .device = device, .shareable = shareable});
          },
          nb::arg("graph"), nb::arg("mode"), nb::arg("device"), nb::arg("shareable") = false)
      .def_prop_ro(
          "mode",
          [](const CudaHeteroGraph& g) { return std::string(cuda_sampling_mode_name(g.mode())); })
      .def_prop_ro("device", &CudaHeteroGraph::device)
      .def_prop_ro("device_bytes", &CudaHeteroGraph::device_bytes)
      .def_prop_ro("pinned_bytes", &CudaHeteroGraph::pinned_bytes)
      .def_prop_ro("shareable", &CudaHeteroGraph::shareable,
                   "Whether every edge type is shareable by IPC handle (pickles without a copy).")
      .def(
          "share_memory_",
          [](CudaHeteroGraph& graph) {
            nb::gil_scoped_release release;
            graph = graph.to_shareable();
          },
          "Moves every edge type to memory other processes open by IPC handle, once, in place.")
      .def(
          "edges",
          [](const CudaHeteroGraph& graph, int edge_type) { return graph.edges(edge_type); },
          nb::arg("edge_type"), "Edge type `edge_type` (graph order), placed (shares its arrays).")
      .def("__getstate__", &cuda_hetero_graph_state)
      .def("__setstate__", [](CudaHeteroGraph& graph, nb::handle state) {
        new (&graph) CudaHeteroGraph(cuda_hetero_graph_from_state(state));
      });
}

}  // namespace

void bind_cuda(nb::module_& m) {
  m.def("cuda_built", &cuda_built, "Whether this build of Volley has CUDA support.");
  m.def("cuda_device_count", &cuda_device_count,
        "Visible CUDA devices (0 without CUDA support or without a device).");
  m.def("cuda_device_name", &cuda_device_name, nb::arg("device"));
  m.def("cuda_emulated", &cuda_emulated,
        "Whether the host-executor device stands in for cuda:0 (VOLLEY_HOST_EXECUTOR=1, tests).");
  m.def(
      "check_cuda_sampling_mode",
      [](const std::string& mode) {
        return std::string(cuda_sampling_mode_name(parse_cuda_sampling_mode(mode)));
      },
      nb::arg("mode"), "'GPU' or 'UVA' for a mode name (any case); ValueError otherwise.");

  nb::class_<CudaGraph>(m, "CudaGraph", "A graph placed for CUDA sampling (sampling/cuda_graph.h).")
      .def_static(
          "place",
          [](const Csr& graph, const std::string& mode, int device, bool shareable) {
            const CudaSamplingMode parsed = parse_cuda_sampling_mode(mode);
            nb::gil_scoped_release release;
            return CudaGraph::place(graph,
                                    {.mode = parsed, .device = device, .shareable = shareable});
          },
          nb::arg("graph"), nb::arg("mode"), nb::arg("device"), nb::arg("shareable") = false)
      .def_prop_ro(
          "mode", [](const CudaGraph& g) { return std::string(cuda_sampling_mode_name(g.mode())); })
      .def_prop_ro("device", &CudaGraph::device)
      .def_prop_ro("num_nodes", &CudaGraph::num_nodes)
      .def_prop_ro("num_edges", &CudaGraph::num_edges)
      .def_prop_ro("has_weights", &CudaGraph::has_weights)
      .def_prop_ro("device_bytes", &CudaGraph::device_bytes)
      .def_prop_ro("pinned_bytes", &CudaGraph::pinned_bytes)
      .def_prop_ro("shareable", &CudaGraph::shareable,
                   "Whether every array is shareable by IPC handle (pickles without a copy).")
      .def("share_memory_", &make_cuda_graph_shareable,
           "Moves the arrays to memory other processes open by IPC handle, once, in place.")
      .def(
          "ipc_handles",
          [](const CudaGraph& graph) {
            const CudaGraphArrays& arrays = graph.arrays();
            return nb::make_tuple(arrays.indptr.buffer().shared_name(),
                                  arrays.indices.buffer().shared_name());
          },
          "The IPC handles of indptr and indices ('' when not shareable): for tests and logs.")
      .def("__getstate__", &cuda_graph_state)
      .def("__setstate__", [](CudaGraph& graph, nb::handle state) {
        new (&graph) CudaGraph(cuda_graph_from_state(state));
      });
  bind_cuda_hetero_graph(m);
}

}  // namespace volley::python
