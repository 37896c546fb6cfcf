// python/src/bindings.h — the pieces of the `_volley` extension module and what they share.
//
// Bindings are organised per concept: each bind_<concept>() adds that concept's classes and
// functions to the module (module.cc calls them in dependency order). A new concept adds a
// bind_<concept>.cc beside these and one line to module.cc.
//
// Arrays cross the boundary zero-copy in both directions:
//   * volley::Array → Python (array_to_python): an ndarray over the Array's bytes whose owner
//     capsule holds a copy of the Array's Buffer, so the bytes live as long as any Python view.
//     Host arrays come out as numpy arrays (buffer protocol) — read-only when the Buffer is not
//     writable (memory-mapped files), i.e. numpy's `writeable` flag is False. Device arrays and
//     bfloat16 arrays, which numpy cannot represent, come out as nanobind ndarray objects that
//     speak DLPack (`torch.from_dlpack` takes them).
//   * Python → volley::Array (array_from_python): any C-contiguous array object nanobind accepts
//     (numpy via the buffer protocol, torch and others via DLPack) is wrapped with Buffer::borrow;
//     the Buffer keeps the Python object alive (its release takes the GIL). Borrowed arrays are
//     marked read-only: Volley never writes into memory it borrowed. Non-contiguous inputs are
//     made contiguous by their framework first (a copy).
// The module never links libtorch: torch is reached through DLPack and the buffer protocol only.
//
// Errors: volley::Error kinds become Python exceptions (see bind_core): VolleyValueError
// (ValueError), VolleyIndexError (IndexError), VolleyOSError (OSError), VolleyRuntimeError
// (RuntimeError), VolleyInternalError (a VolleyRuntimeError), VolleyConnectionError,
// VolleyTimeoutError and VolleyPermissionError, all subclasses of VolleyError. VolleyTypeError
// (TypeError) and VolleyImportError (ImportError) are raised by the Python package only.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/vector.h>

#include "volley/core/array.h"
#include "volley/core/error.h"
#include "volley/feature/feature_store.h"
#include "volley/feature/node_state.h"

namespace volley {
class CudaGraph;
struct SampledSubgraph;
struct HeteroSampledSubgraph;
struct NeighborSamplerOptions;
using HeteroSamplerOptions = NeighborSamplerOptions;
struct TypedAttributes;
}  // namespace volley

namespace volley::python {

namespace nb = nanobind;

// Any array-like a binding accepts as input: any dtype, device and shape, C-contiguous. `ro`
// lets read-only numpy arrays (e.g. np.load(..., mmap_mode="r")) through without a copy.
using InputArray = nb::ndarray<nb::ro, nb::c_contig>;

// A zero-copy Python view of `array` (None when the array is undefined). Needs the GIL.
nb::object array_to_python(const Array& array);
nb::object array_to_python(const std::optional<Array>& array);

// A zero-copy Array over `input`, keeping the Python object alive. `what` names the argument in
// errors ("edge weights"). Throws volley::ValueError for dtypes Volley has no DType for (complex,
// uint16/32/64). Needs the GIL.
Array array_from_python(const InputArray& input, std::string_view what);
std::optional<Array> array_from_python(const std::optional<InputArray>& input,
                                       std::string_view what);

// A placed graph pickled by handle (bind_share.cc; CudaGraph's __getstate__ / __setstate__ in
// bind_cuda.cc): the state first moves `graph` to shareable memory in place when it is not
// there yet (one copy; core/ipc.h), then names each array by its IPC handle. From the state,
// another process opens the same memory (never a copy). Need the GIL.
nb::object cuda_graph_state(CudaGraph& graph);
CudaGraph cuda_graph_from_state(nb::handle state);
// The state's first step: `graph` moved, once, to shareable memory (the GIL released).
void make_cuda_graph_shareable(CudaGraph& graph);

// Shared by the sampling and distributed-service bindings (bind_sampling.cc):
// A 1-d int64 host Array over `ids` (ValueError naming `what` otherwise). Needs the GIL.
Array host_ids_array(const InputArray& ids, std::string_view what);
// Features or labels handed to a loader: a FeatureStore as it is, or an array (zero-copy).
using RowsInput = std::variant<FeatureStore, InputArray>;
std::optional<FeatureStore> rows_from_python(const std::optional<RowsInput>& input,
                                             std::string_view what);
// Named tables for LoaderAttributes, each a FeatureStore or an array (zero-copy).
using NamedRows = std::vector<std::pair<std::string, RowsInput>>;
std::vector<std::pair<std::string, FeatureStore>> named_stores(const NamedRows& tables);
// A typed graph's tables: one NamedRows per node type and per edge type (graph order);
// TypedAttributes is neighbor_loader.h's (complete where it is called).
TypedAttributes typed_stores(const std::vector<NamedRows>& node_attrs,
                             const std::vector<NamedRows>& edge_attrs);
// A sampled subgraph as a dict of zero-copy arrays (n_id, row, col, e_id; host or device) and
// per-hop counts (num_sampled_nodes, num_sampled_edges). Needs the GIL.
nb::dict subgraph_to_python(const SampledSubgraph& subgraph);
// A loader batch (host or device arrays) as a dict (PyG field names:
// n_id, input_id, edge_index, e_id, x, y, batch_size, num_sampled_nodes, num_sampled_edges,
// index), arrays zero-copy, None for absent x / y; a typed batch adds node_types / edge_types,
// a list (graph order) of dicts (n_id, num_sampled_nodes, batch, attrs / edge_index, e_id,
// num_sampled_edges, attrs). Needs the GIL.
template <typename BatchLike>
nb::dict batch_to_python(BatchLike& batch) {
  nb::dict result;
  result["index"] = batch.index;
  result["batch_size"] = batch.batch_size;
  result["n_id"] = array_to_python(batch.nodes);
  result["input_id"] = array_to_python(batch.input_ids);
  result["edge_index"] = array_to_python(batch.edge_index);
  result["e_id"] = array_to_python(batch.edge_ids);
  result["x"] = array_to_python(batch.x);
  result["y"] = array_to_python(batch.y);
  result["num_sampled_nodes"] = batch.nodes_per_hop;
  result["num_sampled_edges"] = batch.edges_per_hop;
  if constexpr (requires { batch.node_attrs; }) {
    result["batch"] = array_to_python(batch.batch_ids);
    nb::dict node_attrs, edge_attrs;
    for (const auto& [name, values] : batch.node_attrs)
      node_attrs[name.c_str()] = array_to_python(values);
    for (const auto& [name, values] : batch.edge_attrs)
      edge_attrs[name.c_str()] = array_to_python(values);
    result["node_attrs"] = node_attrs;
    result["edge_attrs"] = edge_attrs;
  }
  if constexpr (requires { batch.node_types; }) {  // typed batches: a part per type
    if (!batch.node_types.empty() || !batch.edge_types.empty()) {
      const auto attrs = [](const auto& named) {
        nb::dict out;
        for (const auto& [name, values] : named) out[name.c_str()] = array_to_python(values);
        return out;
      };
      nb::list node_types, edge_types;
      for (const auto& part : batch.node_types) {
        nb::dict entry;
        entry["n_id"] = array_to_python(part.nodes);
        entry["num_sampled_nodes"] = part.nodes_per_hop;
        entry["batch"] = array_to_python(part.batch_ids);
        entry["attrs"] = attrs(part.attrs);
        node_types.append(entry);
      }
      for (const auto& part : batch.edge_types) {
        nb::dict entry;
        entry["edge_index"] = array_to_python(part.edge_index);
        entry["e_id"] = array_to_python(part.edge_ids);
        entry["num_sampled_edges"] = part.edges_per_hop;
        entry["attrs"] = attrs(part.attrs);
        edge_types.append(entry);
      }
      result["node_types"] = node_types;
      result["edge_types"] = edge_types;
    }
  }
  if constexpr (requires { batch.edge_label_index; }) {  // link batches (LinkLoader)
    if (batch.edge_label_index.defined() || batch.src_index.defined()) {
      result["edge_label_index"] = array_to_python(batch.edge_label_index);
      result["edge_label"] = array_to_python(batch.edge_label);
      result["src_index"] = array_to_python(batch.src_index);
      result["dst_pos_index"] = array_to_python(batch.dst_pos_index);
      result["dst_neg_index"] = array_to_python(batch.dst_neg_index);
      result["negatives_kept_existing"] = batch.negatives_kept_existing;
    }
  }
  return result;
}

void bind_core(nb::module_& m);
void bind_graph(nb::module_& m);
void bind_dataset(nb::module_& m);
void bind_sampling(nb::module_& m);
void bind_hetero(nb::module_& m);  // heterogeneous graphs, datasets, sampler
void bind_link(nb::module_& m);    // negative sampling, link seeds
void bind_partition(nb::module_& m);
void bind_feature(nb::module_& m);
void bind_node_state(nb::module_& m);  // writable per-node rows (NodeState)
void bind_share(nb::module_& m);
void bind_cuda(nb::module_& m);  // every build (stubs throw without CUDA)
// "zeros", "normal" or "uniform" (ValueError otherwise): NodeState's and RemoteNodeState's init.
Init node_init_kind(const std::string& name);

void bind_dist(nb::module_& m);         // only in builds with the gRPC service (VOLLEY_WITH_DIST)
void bind_dist_hetero(nb::module_& m);  // the same (bind_dist_hetero.cc)

}  // namespace volley::python
