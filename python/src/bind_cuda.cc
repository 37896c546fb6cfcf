// python/src/bind_cuda.cc — the GPU data path: placed graphs, the CUDA sampler, device feature
// stores and the CUDA loader. Compiled in every build: without CUDA the native calls throw the
// stubs' RuntimeError ("this build of Volley has no CUDA support"), which Python sees as
// VolleyRuntimeError.
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
#include "volley/feature/cuda_gather.h"
#include "volley/loader/cuda_loader.h"
#include "volley/sampling/cuda_sampler.h"

namespace volley::python {
namespace {

void* as_stream(uintptr_t stream) { return reinterpret_cast<void*>(stream); }

// A row of a [2, E] int64 device array as a [E] array over the same memory.
Array edge_row(const Array& edge_index, int64_t row) {
  const int64_t e = edge_index.dim(1);
  const size_t bytes = static_cast<size_t>(e) * sizeof(int64_t);
  return Array(edge_index.buffer().slice(static_cast<size_t>(row) * bytes, bytes), DType::kInt64,
               {e});
}

// The CUDA sampler as Python holds it: a sampler with its own stream.
struct PySampler {
  CudaNeighborSampler sampler;
  CudaStream stream;

  nb::dict sample(const InputArray& seeds, uint64_t batch_index, uintptr_t consumer_stream) {
    const Array seed_array = host_ids_array(seeds, "seeds");
    DeviceBatch batch;
    {
      nb::gil_scoped_release release;
      if (stream.handle() == nullptr) stream = CudaStream::create(sampler.graph().device());
      batch = sample_device_batch(sampler, seed_array.span<int64_t>(), batch_index, nullptr,
                                  nullptr, stream.handle());
      batch.hand_over(as_stream(consumer_stream));
    }
    nb::dict result;
    result["n_id"] = array_to_python(batch.nodes);
    result["row"] = array_to_python(edge_row(batch.edge_index, 1));
    result["col"] = array_to_python(edge_row(batch.edge_index, 0));
    result["e_id"] = array_to_python(batch.edge_ids);
    result["num_sampled_nodes"] = batch.nodes_per_hop;
    result["num_sampled_edges"] = batch.edges_per_hop;
    return result;
  }
};

}  // namespace

void bind_cuda(nb::module_& m) {
  m.def("cuda_built", &cuda_built, "Whether this build of Volley has CUDA support.");
  m.def("cuda_device_count", &cuda_device_count,
        "Visible CUDA devices (0 without CUDA support or without a device).");
  m.def("cuda_device_name", &cuda_device_name, nb::arg("device"));
  m.def(
      "check_cuda_sampling_mode",
      [](const std::string& mode) {
        return std::string(cuda_sampling_mode_name(parse_cuda_sampling_mode(mode)));
      },
      nb::arg("mode"), "'GPU' or 'UVA' for a mode name (any case); ValueError otherwise.");

  nb::class_<CudaGraph>(m, "CudaGraph", "A graph placed for CUDA sampling (cuda_sampler.h).")
      .def_static(
          "place",
          [](const Csr& graph, const std::string& mode, int device) {
            const CudaSamplingMode parsed = parse_cuda_sampling_mode(mode);
            nb::gil_scoped_release release;
            return CudaGraph::place(graph, {.mode = parsed, .device = device});
          },
          nb::arg("graph"), nb::arg("mode"), nb::arg("device"))
      .def_prop_ro(
          "mode", [](const CudaGraph& g) { return std::string(cuda_sampling_mode_name(g.mode())); })
      .def_prop_ro("device", &CudaGraph::device)
      .def_prop_ro("num_nodes", &CudaGraph::num_nodes)
      .def_prop_ro("num_edges", &CudaGraph::num_edges)
      .def_prop_ro("has_weights", &CudaGraph::has_weights)
      .def_prop_ro("device_bytes", &CudaGraph::device_bytes)
      .def_prop_ro("pinned_bytes", &CudaGraph::pinned_bytes);

  nb::class_<PySampler>(m, "CudaNeighborSampler",
                        "The CUDA sampler with a stream of its own (see bind_cuda.cc).")
      .def(
          "__init__",
          [](PySampler* self, const CudaGraph& graph, std::vector<int64_t> fanouts, bool replace,
             bool weighted, uint64_t seed) {
            new (self) PySampler{
                CudaNeighborSampler(graph, {std::move(fanouts), replace, weighted, seed}), {}};
          },
          nb::arg("graph"), nb::arg("fanouts"), nb::arg("replace") = false,
          nb::arg("weighted") = false, nb::arg("seed") = 0)
      .def("sample", &PySampler::sample, nb::arg("seeds"), nb::arg("batch_index"),
           nb::arg("stream"),
           "One batch: dict of device arrays n_id, row, col, e_id (ready in `stream` order) and "
           "per-hop counts.");

  nb::class_<DeviceFeatureStore>(m, "DeviceFeatureStore",
                                 "Feature rows in device memory and pinned host memory "
                                 "(cuda_gather.h).")
      .def_static(
          "build",
          [](const InputArray& matrix, int64_t device_bytes, std::optional<InputArray> hot_order,
             int device) {
            Array rows = array_from_python(matrix, "features");
            std::optional<Array> order = array_from_python(hot_order, "hot_order");
            DeviceFeatureStoreOptions options;
            options.device_byte_budget = device_bytes < 0 ? std::numeric_limits<size_t>::max()
                                                          : static_cast<size_t>(device_bytes);
            options.hot_order = std::move(order);
            options.device = device;
            nb::gil_scoped_release release;
            return DeviceFeatureStore::build(rows, options);
          },
          nb::arg("matrix"), nb::arg("device_bytes"), nb::arg("hot_order").none(),
          nb::arg("device"), "device_bytes < 0: every row in device memory.")
      .def_prop_ro("num_rows", &DeviceFeatureStore::num_rows)
      .def_prop_ro("width", &DeviceFeatureStore::width)
      .def_prop_ro("ndim", &DeviceFeatureStore::ndim)
      .def_prop_ro("dtype",
                   [](const DeviceFeatureStore& s) { return std::string(dtype_name(s.dtype())); })
      .def_prop_ro("device", &DeviceFeatureStore::device)
      .def_prop_ro("device_rows", &DeviceFeatureStore::device_rows)
      .def_prop_ro("pinned_rows", &DeviceFeatureStore::pinned_rows)
      .def("describe", &DeviceFeatureStore::describe)
      .def(
          "gather",
          [](const DeviceFeatureStore& store, const InputArray& ids, uintptr_t stream) {
            Array id_array = array_from_python(ids, "ids");
            Array rows;
            {
              nb::gil_scoped_release release;
              rows = gather_to_device(store, id_array, as_stream(stream));
            }
            return array_to_python(rows);
          },
          nb::arg("ids"), nb::arg("stream"),
          "Rows `ids` (int64, host or device) as a new device array, ready in `stream` order.");

  nb::class_<CudaEpoch>(m, "CudaEpoch", "One pass of a CudaNeighborLoader.")
      .def(
          "next",
          [](CudaEpoch& epoch, uintptr_t stream) -> nb::object {
            std::optional<DeviceBatch> batch;
            {
              nb::gil_scoped_release release;
              batch = epoch.next(as_stream(stream));
            }
            if (!batch) return nb::none();
            return batch_to_python(*batch);
          },
          nb::arg("stream"),
          "The next batch as a dict of device arrays, ready in `stream` order; None after the "
          "last.")
      .def("stop", &CudaEpoch::stop, nb::call_guard<nb::gil_scoped_release>())
      .def_prop_ro("num_batches", &CudaEpoch::num_batches);

  nb::class_<CudaNeighborLoader>(m, "CudaNeighborLoader",
                                 "The CUDA batch pipeline (loader/cuda_loader.h).")
      .def(
          "__init__",
          [](CudaNeighborLoader* self, const CudaGraph& graph,
             std::optional<DeviceFeatureStore> features, std::optional<DeviceFeatureStore> labels,
             const std::optional<InputArray>& input_nodes, LoaderOptions options) {
            auto input_array = array_from_python(input_nodes, "input_nodes");
            nb::gil_scoped_release release;
            new (self) CudaNeighborLoader(graph, std::move(features), std::move(labels),
                                          std::move(input_array), std::move(options));
          },
          nb::arg("graph"), nb::arg("features").none(), nb::arg("labels").none(),
          nb::arg("input_nodes").none(), nb::arg("options"))
      .def_prop_ro("num_batches", &CudaNeighborLoader::num_batches)
      .def("start_epoch", &CudaNeighborLoader::start_epoch, nb::arg("epoch"),
           nb::call_guard<nb::gil_scoped_release>());
}

}  // namespace volley::python
