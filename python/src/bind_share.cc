// python/src/bind_share.cc — moving graphs and datasets (of both kinds) and feature stores into
// shared memory, and rebuilding them in another process from handles (python/volley/_share.py
// drives these).
//
// Sharing copies each array that is not yet in shared memory into its own anonymous memfd
// segment (Buffer::create_shareable: nothing in /dev/shm, nothing to leak after kill -9); arrays
// already in shared memory — memfd or /dev/shm — are kept as they are, so sharing is idempotent.
// A handle to one shared array is a tuple (segment, offset, dtype, shape): the segment's
// shared_name() in this process, the byte offset of the array in it, the dtype name and the
// shape. Rebuilding from handles attaches the segments: zero-copy. A graph placed on a GPU
// (CudaGraph) is handed over the same way, its device and pinned arrays named by IPC handles
// (core/ipc.h) instead of memfd handles.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <cstring>
#include <numeric>
#include <type_traits>
#include <utility>
#include <vector>

#include "bindings.h"
#include "volley/core/ipc.h"
#include "volley/feature/feature_store.h"
#include "volley/graph/csr.h"
#include "volley/graph/dataset.h"
#include "volley/graph/hetero_dataset.h"
#include "volley/sampling/cuda_graph.h"

namespace volley::python {

namespace {

bool is_shared(const Array& array) {
  return array.buffer().location() == Location::kSharedMemory &&
         !array.buffer().shared_name().empty();
}

// `array` in shared memory: itself when it already is, else a copy in a new memfd segment.
Array share_array(const Array& array, std::string_view what) {
  if (!array.defined() || is_shared(array)) return array;
  VOLLEY_REQUIRE(array.buffer().host_accessible(), ValueError,
                 "{} ({}) lives on a CUDA device: only host arrays can move to shared memory", what,
                 array.describe());
  Buffer buffer = Buffer::create_shareable(array.nbytes());
  if (array.nbytes() > 0) std::memcpy(buffer.data(), array.raw_data(), array.nbytes());
  return Array(std::move(buffer), array.dtype(), array.shape());
}

std::optional<Array> share_array(const std::optional<Array>& array, std::string_view what) {
  if (!array) return std::nullopt;
  return share_array(*array, what);
}

nb::object handle_of(const Array& array, std::string_view what) {
  VOLLEY_REQUIRE(is_shared(array) || ipc_shareable(array.buffer()), ValueError,
                 "{} ({}) is not in shared memory: call share_memory_() first", what,
                 array.describe());
  nb::list shape;
  for (int64_t size : array.shape()) shape.append(size);
  return nb::make_tuple(array.buffer().shared_name(), array.buffer().offset(),
                        std::string(dtype_name(array.dtype())), nb::tuple(shape));
}

nb::object handle_of(const std::optional<Array>& array, std::string_view what) {
  return array ? handle_of(*array, what) : nb::none();
}

// The parts of a handle, read with the GIL held; attach() then runs without it.
struct ArrayHandle {
  std::string segment;
  size_t offset = 0;
  DType dtype = DType::kFloat32;
  std::vector<int64_t> shape;
};

ArrayHandle parse_handle(nb::handle handle, std::string_view what) {
  VOLLEY_REQUIRE(nb::isinstance<nb::tuple>(handle) && nb::len(handle) == 4, ValueError,
                 "{}: a shared-array handle is a tuple (segment, offset, dtype, shape)", what);
  ArrayHandle parsed;
  parsed.segment = nb::cast<std::string>(handle[0]);
  parsed.offset = nb::cast<size_t>(handle[1]);
  parsed.dtype = dtype_from_name(nb::cast<std::string>(handle[2]));
  for (nb::handle size : handle[3]) parsed.shape.push_back(nb::cast<int64_t>(size));
  return parsed;
}

std::optional<ArrayHandle> parse_optional_handle(nb::handle handle, std::string_view what) {
  if (handle.is_none()) return std::nullopt;
  return parse_handle(handle, what);
}

Array attach(const ArrayHandle& handle) {
  int64_t count = 1;
  for (int64_t size : handle.shape) count *= size;
  const size_t bytes = static_cast<size_t>(count) * dtype_size(handle.dtype);
  // Device and pinned blocks are named by IPC handles (core/ipc.h), host segments by memfd
  // handles or /dev/shm names.
  Buffer segment = handle.segment.rfind("ipc:", 0) == 0 ? open_ipc(IpcHandle::parse(handle.segment))
                                                        : Buffer::attach_shared(handle.segment);
  return Array(segment.slice(handle.offset, bytes), handle.dtype, handle.shape);
}

std::optional<Array> attach(const std::optional<ArrayHandle>& handle) {
  if (!handle) return std::nullopt;
  return attach(*handle);
}

// --- Csr ------------------------------------------------------------------------------------

Csr share_csr(const Csr& csr) {
  return Csr::from_arrays(share_array(csr.indptr(), "indptr"),
                          share_array(csr.indices(), "indices"),
                          share_array(csr.edge_ids(), "edge_ids"),
                          share_array(csr.weights(), "weights"), csr.orientation(),
                          /*validate=*/false);
}

bool csr_is_shared(const Csr& csr) {
  return is_shared(csr.indptr()) && is_shared(csr.indices()) &&
         (!csr.edge_ids() || is_shared(*csr.edge_ids())) &&
         (!csr.weights() || is_shared(*csr.weights()));
}

nb::object csr_state(const Csr& csr) {
  return nb::make_tuple(std::string(orientation_name(csr.orientation())),
                        handle_of(csr.indptr(), "indptr"), handle_of(csr.indices(), "indices"),
                        handle_of(csr.edge_ids(), "edge_ids"), handle_of(csr.weights(), "weights"));
}

struct CsrHandles {
  Orientation orientation = Orientation::kIn;
  ArrayHandle indptr;
  ArrayHandle indices;
  std::optional<ArrayHandle> edge_ids;
  std::optional<ArrayHandle> weights;
};

CsrHandles parse_csr_state(nb::handle state) {
  VOLLEY_REQUIRE(nb::isinstance<nb::tuple>(state) && nb::len(state) == 5, ValueError,
                 "a shared-graph state is a tuple of 5 entries");
  CsrHandles handles;
  const std::string orientation = nb::cast<std::string>(state[0]);
  handles.orientation = orientation == "out" ? Orientation::kOut : Orientation::kIn;
  handles.indptr = parse_handle(state[1], "indptr");
  handles.indices = parse_handle(state[2], "indices");
  handles.edge_ids = parse_optional_handle(state[3], "edge_ids");
  handles.weights = parse_optional_handle(state[4], "weights");
  return handles;
}

Csr attach_csr(const CsrHandles& handles) {
  return Csr::from_arrays(attach(handles.indptr), attach(handles.indices), attach(handles.edge_ids),
                          attach(handles.weights), handles.orientation, /*validate=*/false);
}

// --- Datasets -------------------------------------------------------------------------------
// A homogeneous Dataset and a typed one's node types (NodeTypeData) hold the same optional
// arrays (a Dataset also its edge split): one visit over them shares, names and attaches both.

template <class Owner, class Visit>
void for_each_field(Owner& owner, Visit&& visit) {
  visit("features", owner.features);
  visit("labels", owner.labels);
  visit("train_idx", owner.train_idx);
  visit("val_idx", owner.val_idx);
  visit("test_idx", owner.test_idx);
  if constexpr (std::is_same_v<std::remove_const_t<Owner>, Dataset>) {
    visit("train_edges", owner.train_edges);
    visit("val_edges", owner.val_edges);
    visit("test_edges", owner.test_edges);
    visit("val_neg_edges", owner.val_neg_edges);
    visit("test_neg_edges", owner.test_neg_edges);
  }
}

template <class Owner>
void share_fields(Owner& owner) {
  for_each_field(owner, [](const char* name, std::optional<Array>& array) {
    array = share_array(array, name);
  });
}

template <class Owner>
bool fields_shared(const Owner& owner) {
  bool shared = true;
  for_each_field(owner, [&](const char*, const std::optional<Array>& array) {
    shared = shared && (!array || is_shared(*array));
  });
  return shared;
}

template <class Owner>
nb::list field_handles(const Owner& owner) {
  nb::list handles;
  for_each_field(owner, [&](const char* name, const std::optional<Array>& array) {
    handles.append(handle_of(array, name));
  });
  return handles;
}

// The handles of field_handles, parsed (GIL held); attach_fields then runs without the GIL.
template <class Owner>
std::vector<std::optional<ArrayHandle>> parse_fields(nb::handle handles) {
  std::vector<std::optional<ArrayHandle>> parsed;
  Owner probe;
  size_t count = 0;
  for_each_field(probe, [&](const char*, std::optional<Array>&) { ++count; });
  VOLLEY_REQUIRE(nb::isinstance<nb::list>(handles) && nb::len(handles) == count, ValueError,
                 "a shared dataset's fields are a list of {} handles", count);
  size_t i = 0;
  for_each_field(probe, [&](const char* name, std::optional<Array>&) {
    parsed.push_back(parse_optional_handle(handles[i++], name));
  });
  return parsed;
}

template <class Owner>
void attach_fields(Owner& owner, const std::vector<std::optional<ArrayHandle>>& parsed) {
  size_t i = 0;
  for_each_field(owner,
                 [&](const char*, std::optional<Array>& array) { array = attach(parsed[i++]); });
}

Dataset share_dataset(const Dataset& dataset) {
  Dataset shared = dataset;
  shared.graph = share_csr(dataset.graph);
  share_fields(shared);
  return shared;
}

HeteroGraph share_hetero_graph(const HeteroGraph& graph) {
  std::vector<std::pair<EdgeType, Csr>> edges;
  for (int e = 0; e < graph.num_edge_types(); ++e) {
    edges.emplace_back(graph.edge_types()[static_cast<size_t>(e)], share_csr(graph.edges(e)));
  }
  return HeteroGraph(graph.node_types(), std::move(edges), /*validate=*/false);
}

bool hetero_graph_is_shared(const HeteroGraph& graph) {
  for (int e = 0; e < graph.num_edge_types(); ++e) {
    if (!csr_is_shared(graph.edges(e))) return false;
  }
  return true;
}

// (node types [(name, count)], edge types [("S__R__D", csr_state)]).
nb::object hetero_graph_state(const HeteroGraph& graph) {
  nb::list nodes, edges;
  for (const NodeTypeInfo& type : graph.node_types())
    nodes.append(nb::make_tuple(type.name, type.num_nodes));
  for (int e = 0; e < graph.num_edge_types(); ++e) {
    edges.append(nb::make_tuple(graph.edge_types()[static_cast<size_t>(e)].name(),
                                csr_state(graph.edges(e))));
  }
  return nb::make_tuple(nodes, edges);
}

struct HeteroGraphHandles {
  std::vector<NodeTypeInfo> node_types;
  std::vector<std::pair<EdgeType, CsrHandles>> edge_types;
};

HeteroGraphHandles parse_hetero_graph_state(nb::handle state) {
  VOLLEY_REQUIRE(nb::isinstance<nb::tuple>(state) && nb::len(state) == 2, ValueError,
                 "a shared typed graph's state is a tuple (node types, edge types)");
  HeteroGraphHandles handles;
  for (nb::handle type : state[0]) {
    handles.node_types.push_back({nb::cast<std::string>(type[0]), nb::cast<int64_t>(type[1])});
  }
  for (nb::handle type : state[1]) {
    handles.edge_types.emplace_back(EdgeType::from_name(nb::cast<std::string>(type[0])),
                                    parse_csr_state(type[1]));
  }
  return handles;
}

HeteroGraph attach_hetero_graph(const HeteroGraphHandles& handles) {
  std::vector<std::pair<EdgeType, Csr>> edges;
  for (const auto& [type, csr] : handles.edge_types) edges.emplace_back(type, attach_csr(csr));
  return HeteroGraph(handles.node_types, std::move(edges), /*validate=*/false);
}

HeteroDataset share_hetero_dataset(const HeteroDataset& dataset) {
  HeteroDataset shared = dataset;
  shared.graph = share_hetero_graph(dataset.graph);
  for (NodeTypeData& node : shared.node_data) share_fields(node);
  return shared;
}

// --- FeatureStore ---------------------------------------------------------------------------

bool store_is_shared(const FeatureStore& store) {
  return store.tiers().size() == 1 && !store.has_lookup() && is_shared(store.tiers()[0].rows());
}

// One shared tier in id order. A tiered store (per-process cache tiers) is flattened: its rows
// are gathered, in id order, straight into one new segment.
FeatureStore share_store(const FeatureStore& store) {
  VOLLEY_REQUIRE(store.defined(), ValueError, "an empty feature store cannot be shared");
  if (store.tiers().size() == 1 && !store.has_lookup()) {
    return FeatureStore(share_array(store.tiers()[0].rows(), "features"));
  }
  const int64_t rows = store.num_rows();
  std::vector<int64_t> ids(static_cast<size_t>(rows));
  std::iota(ids.begin(), ids.end(), int64_t{0});
  std::vector<int64_t> shape = {rows};
  if (store.ndim() == 2) shape.push_back(store.width());
  Buffer buffer = Buffer::create_shareable(static_cast<size_t>(rows) * store.row_bytes());
  store.gather(ids, buffer.data());
  return FeatureStore(Array(std::move(buffer), store.dtype(), std::move(shape)));
}

nb::object store_state(const FeatureStore& store) {
  VOLLEY_REQUIRE(store_is_shared(store), ValueError,
                 "this feature store is not one shared tier: call share_memory_() first");
  return handle_of(store.tiers()[0].rows(), "features");
}

// A GPU store by handles: (devices, shard handles, lookup handles or None, pinned handle,
// cliques, hot rows per clique). ValueError unless every array is shareable.
nb::object gpu_store_state(const FeatureStore& store) {
  VOLLEY_REQUIRE(store.shareable(), ValueError,
                 "this GPU feature store is not in shareable memory: call to_shareable() first");
  const FeatureStore::GpuParts parts = store.gpu_parts();
  nb::list shards, lookups;
  for (const Array& shard : parts.shards) shards.append(handle_of(shard, "shard"));
  for (const std::optional<Array>& lookup : parts.lookups)
    lookups.append(handle_of(lookup, "lookup"));
  return nb::make_tuple(parts.devices, shards, lookups, handle_of(parts.pinned, "pinned rows"),
                        parts.cliques, parts.hot_rows);
}

FeatureStore gpu_store_from_state(nb::handle state) {
  VOLLEY_REQUIRE(nb::isinstance<nb::tuple>(state) && nb::len(state) == 6, ValueError,
                 "a GPU feature store's state is a tuple of 6 entries");
  FeatureStore::GpuParts parts;
  parts.devices = nb::cast<std::vector<int>>(state[0]);
  std::vector<ArrayHandle> shards;
  std::vector<std::optional<ArrayHandle>> lookups;
  for (nb::handle shard : state[1]) shards.push_back(parse_handle(shard, "shard"));
  for (nb::handle lookup : state[2]) lookups.push_back(parse_optional_handle(lookup, "lookup"));
  const ArrayHandle pinned = parse_handle(state[3], "pinned rows");
  parts.cliques = nb::cast<std::vector<std::vector<int>>>(state[4]);
  parts.hot_rows = nb::cast<std::vector<int64_t>>(state[5]);
  nb::gil_scoped_release release;
  for (const ArrayHandle& shard : shards) parts.shards.push_back(attach(shard));
  for (const std::optional<ArrayHandle>& lookup : lookups) parts.lookups.push_back(attach(lookup));
  parts.pinned = attach(pinned);
  return FeatureStore::from_gpu_parts(std::move(parts));
}

// --- CudaGraph ------------------------------------------------------------------------------

nb::object placed_state(const CudaGraph& graph) {
  const CudaGraphArrays& arrays = graph.arrays();
  return nb::make_tuple(
      handle_of(arrays.indptr, "indptr"), handle_of(arrays.indices, "indices"),
      handle_of(arrays.edge_ids, "edge_ids"), handle_of(arrays.weights, "weights"),
      handle_of(arrays.node_time, "node_time"), handle_of(arrays.edge_time, "edge_time"),
      arrays.first_row_unsorted_by_node_time, arrays.first_row_unsorted_by_edge_time);
}

// Datasets of both kinds and typed graphs: share, is_shared, state, from_state.
void bind_dataset_sharing(nb::module_& m) {
  m.def("share_dataset", &share_dataset, nb::arg("dataset"),
        nb::call_guard<nb::gil_scoped_release>(),
        "The dataset with every array in shared memory (arrays already shared are kept).");
  m.def("dataset_is_shared", [](const Dataset& dataset) {
    return csr_is_shared(dataset.graph) && fields_shared(dataset);
  });
  m.def(
      "dataset_state",
      [](const Dataset& dataset) {
        return nb::make_tuple(dataset.name, dataset.num_classes, csr_state(dataset.graph),
                              field_handles(dataset));
      },
      nb::arg("dataset"));
  m.def(
      "dataset_from_state",
      [](nb::handle state) {
        VOLLEY_REQUIRE(nb::isinstance<nb::tuple>(state) && nb::len(state) == 4, ValueError,
                       "a shared-dataset state is a tuple of 4 entries");
        Dataset dataset;
        dataset.name = nb::cast<std::string>(state[0]);
        dataset.num_classes = nb::cast<int64_t>(state[1]);
        const CsrHandles graph = parse_csr_state(state[2]);
        const auto fields = parse_fields<Dataset>(state[3]);
        nb::gil_scoped_release release;
        dataset.graph = attach_csr(graph);
        attach_fields(dataset, fields);
        return dataset;
      },
      nb::arg("state"), "Attaches to a shared dataset by its handles (zero-copy).");
  m.def("share_hetero_graph", &share_hetero_graph, nb::arg("graph"),
        nb::call_guard<nb::gil_scoped_release>(),
        "The typed graph with every edge type's arrays in shared memory (shared ones kept).");
  m.def("hetero_graph_is_shared", &hetero_graph_is_shared, nb::arg("graph"));
  m.def("hetero_graph_state", &hetero_graph_state, nb::arg("graph"));
  m.def(
      "hetero_graph_from_state",
      [](nb::handle state) {
        const HeteroGraphHandles handles = parse_hetero_graph_state(state);
        nb::gil_scoped_release release;
        return attach_hetero_graph(handles);
      },
      nb::arg("state"), "Attaches to a shared typed graph by its handles (zero-copy).");
  m.def("share_hetero_dataset", &share_hetero_dataset, nb::arg("dataset"),
        nb::call_guard<nb::gil_scoped_release>(),
        "The typed dataset with every array in shared memory (arrays already shared are kept).");
  m.def("hetero_dataset_is_shared", [](const HeteroDataset& dataset) {
    bool shared = hetero_graph_is_shared(dataset.graph);
    for (const NodeTypeData& node : dataset.node_data) shared = shared && fields_shared(node);
    return shared;
  });
  m.def("hetero_dataset_state", [](const HeteroDataset& dataset) {
    nb::list nodes;
    for (const NodeTypeData& node : dataset.node_data)
      nodes.append(nb::make_tuple(node.num_classes, field_handles(node)));
    return nb::make_tuple(dataset.name, hetero_graph_state(dataset.graph), nodes);
  });
  m.def(
      "hetero_dataset_from_state",
      [](nb::handle state) {
        VOLLEY_REQUIRE(nb::isinstance<nb::tuple>(state) && nb::len(state) == 3, ValueError,
                       "a shared typed dataset's state is a tuple of 3 entries");
        HeteroDataset dataset;
        dataset.name = nb::cast<std::string>(state[0]);
        const HeteroGraphHandles graph = parse_hetero_graph_state(state[1]);
        std::vector<std::pair<int64_t, std::vector<std::optional<ArrayHandle>>>> nodes;
        for (nb::handle node : state[2]) {
          nodes.emplace_back(nb::cast<int64_t>(node[0]), parse_fields<NodeTypeData>(node[1]));
        }
        nb::gil_scoped_release release;
        dataset.graph = attach_hetero_graph(graph);
        for (const auto& [classes, fields] : nodes) {
          NodeTypeData& node = dataset.node_data.emplace_back();
          node.num_classes = classes;
          attach_fields(node, fields);
        }
        return dataset;
      },
      nb::arg("state"), "Attaches to a shared typed dataset by its handles (zero-copy).");
}

}  // namespace

void make_cuda_graph_shareable(CudaGraph& graph) {
  if (graph.shareable()) return;
  nb::gil_scoped_release release;
  graph = graph.to_shareable();
}

nb::object cuda_graph_state(CudaGraph& graph) {
  make_cuda_graph_shareable(graph);
  return placed_state(graph);
}

CudaGraph cuda_graph_from_state(nb::handle state) {
  VOLLEY_REQUIRE(nb::isinstance<nb::tuple>(state) && nb::len(state) == 8, ValueError,
                 "a placed-graph state is a tuple of 8 entries");
  const ArrayHandle indptr = parse_handle(state[0], "indptr");
  const ArrayHandle indices = parse_handle(state[1], "indices");
  std::optional<ArrayHandle> optional[4];
  const char* names[4] = {"edge_ids", "weights", "node_time", "edge_time"};
  for (int i = 0; i < 4; ++i) optional[i] = parse_optional_handle(state[2 + i], names[i]);
  const auto node_time_row = nb::cast<int64_t>(state[6]);
  const auto edge_time_row = nb::cast<int64_t>(state[7]);
  nb::gil_scoped_release release;
  return CudaGraph::from_arrays({.indptr = attach(indptr),
                                 .indices = attach(indices),
                                 .edge_ids = attach(optional[0]),
                                 .weights = attach(optional[1]),
                                 .node_time = attach(optional[2]),
                                 .edge_time = attach(optional[3]),
                                 .first_row_unsorted_by_node_time = node_time_row,
                                 .first_row_unsorted_by_edge_time = edge_time_row});
}

void bind_share(nb::module_& m) {
  m.def("share_csr", &share_csr, nb::arg("csr"), nb::call_guard<nb::gil_scoped_release>(),
        "The graph with every array in shared memory (arrays already shared are kept).");
  m.def("csr_is_shared", &csr_is_shared, nb::arg("csr"));
  m.def("csr_state", &csr_state, nb::arg("csr"),
        "Handles of a shared graph's arrays (ValueError when one is not shared).");
  m.def(
      "csr_from_state",
      [](nb::handle state) {
        CsrHandles handles = parse_csr_state(state);
        nb::gil_scoped_release release;
        return attach_csr(handles);
      },
      nb::arg("state"), "Attaches to a shared graph by its handles (zero-copy).");

  bind_dataset_sharing(m);

  m.def("share_feature_store", &share_store, nb::arg("store"),
        nb::call_guard<nb::gil_scoped_release>(),
        "The store as one shared tier in id order (kept when it already is one).");
  m.def("feature_store_is_shared", &store_is_shared, nb::arg("store"));
  m.def("feature_store_state", &store_state, nb::arg("store"));
  m.def("gpu_feature_store_state", &gpu_store_state, nb::arg("store"),
        "A shareable GPU store's handles and layout (FeatureStore::gpu_parts).");
  m.def("gpu_feature_store_from_state", &gpu_store_from_state, nb::arg("state"),
        "Opens a GPU store by its handles: the same device and pinned memory (no copy).");
  m.def(
      "feature_store_from_state",
      [](nb::handle state) {
        ArrayHandle handle = parse_handle(state, "features");
        nb::gil_scoped_release release;
        return FeatureStore(attach(handle));
      },
      nb::arg("state"), "Attaches to a shared feature store by its handle (zero-copy).");
}

}  // namespace volley::python
