// python/src/bind_sampling.cc — neighbor sampling and the batch pipeline.
//
// Results cross zero-copy: a sampled subgraph's and a loader batch's Arrays are handed over as
// they are (host arrays to numpy, device arrays through DLPack). The helpers
// that do so (subgraph_to_python, batch_to_python) and the BatchSource / BatchStream bases are
// shared with the distributed service's bindings (bind_dist.cc).
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include <fmt/format.h>
#include <nanobind/stl/function.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "volley/core/cuda_device.h"
#include "volley/loader/cuda_loader.h"  // sample_device_batch
#include "volley/loader/neighbor_loader.h"
#include "volley/sampling/neighbor_sampler.h"

namespace volley::python {
namespace {

// A row of a [2, E] int64 array as a [E] array over the same memory.
Array edge_row(const Array& edge_index, int64_t row) {
  const int64_t e = edge_index.dim(1);
  const size_t bytes = static_cast<size_t>(e) * sizeof(int64_t);
  return Array(edge_index.buffer().slice(static_cast<size_t>(row) * bytes, bytes), DType::kInt64,
               {e});
}

// The one sampler as Python holds it: on a GPU, with a stream of its own, each batch copied
// into memory of its own that is handed to the caller's stream (see bind_cuda.cc).
struct PyNeighborSampler {
  NeighborSampler sampler;
  CudaStream stream;

  nb::dict sample(const InputArray& seeds, uint64_t batch_index, uintptr_t consumer_stream) {
    const Array seed_array = host_ids_array(seeds, "seeds");
    if (!sampler.on_cuda()) {
      SampledSubgraph sub;
      {
        nb::gil_scoped_release release;
        sub = sampler.sample(seed_array.span<int64_t>(), batch_index);
      }
      return subgraph_to_python(sub);
    }
    DeviceBatch batch;
    {
      nb::gil_scoped_release release;
      if (stream.handle() == nullptr) stream = CudaStream::create(sampler.device());
      batch = sample_device_batch(sampler, seed_array.span<int64_t>(), batch_index, nullptr,
                                  nullptr, stream.handle());
      batch.hand_over(reinterpret_cast<void*>(consumer_stream));
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

using SamplerGraph = std::variant<Csr, CudaGraph>;

// Features or labels handed to the loader: a FeatureStore as it is, or an array (zero-copy).
using RowsInput = std::variant<FeatureStore, InputArray>;

std::optional<FeatureStore> rows_from_python(const std::optional<RowsInput>& input,
                                             std::string_view what) {
  if (!input) return std::nullopt;
  if (const auto* store = std::get_if<FeatureStore>(&*input)) return *store;
  return FeatureStore(array_from_python(std::get<InputArray>(*input), what));
}

}  // namespace

Array host_ids_array(const InputArray& ids, std::string_view what) {
  Array array = array_from_python(ids, what);
  VOLLEY_REQUIRE(array.ndim() == 1 && array.dtype() == DType::kInt64, ValueError,
                 "{} must be a 1-d int64 array, got {}", what, array.describe());
  VOLLEY_REQUIRE(array.buffer().host_accessible(), ValueError,
                 "{} must be in host memory for the CPU sampler, got {} memory", what,
                 location_name(array.buffer().location()));
  return array;
}

nb::dict subgraph_to_python(const SampledSubgraph& subgraph) {
  nb::dict result;
  result["n_id"] = array_to_python(subgraph.nodes);
  result["row"] = array_to_python(subgraph.rows);
  result["col"] = array_to_python(subgraph.cols);
  result["e_id"] = array_to_python(subgraph.edge_ids);
  result["num_sampled_nodes"] = subgraph.nodes_per_hop;
  result["num_sampled_edges"] = subgraph.edges_per_hop;
  return result;
}

LoaderOptions loader_options(std::vector<int64_t> fanouts, const nb::kwargs& kwargs) {
  LoaderOptions options;
  options.sampler.fanouts = std::move(fanouts);
  for (auto [key, value] : kwargs) {
    const std::string name = nb::cast<std::string>(key);
    if (name == "batch_size") {
      options.batch_size = nb::cast<int64_t>(value);
    } else if (name == "shuffle") {
      options.shuffle = nb::cast<bool>(value);
    } else if (name == "drop_last") {
      options.drop_last = nb::cast<bool>(value);
    } else if (name == "num_threads") {
      options.num_threads = nb::cast<int>(value);
    } else if (name == "prefetch") {
      options.prefetch = nb::cast<int>(value);
    } else if (name == "seed") {
      options.seed = nb::cast<uint64_t>(value);
    } else if (name == "replace") {
      options.sampler.replace = nb::cast<bool>(value);
    } else if (name == "weighted") {
      options.sampler.weighted = nb::cast<bool>(value);
    } else if (name == "feature_dtype") {
      options.feature_dtype = dtype_from_name(nb::cast<std::string>(value));
    } else if (name == "on_batch_start") {
      if (value.is_none()) continue;
      // Runs on a worker thread: take the GIL around the Python call.
      options.on_batch_start = [callback = nb::borrow<nb::callable>(value)](int64_t index) {
        nb::gil_scoped_acquire acquire;
        try {
          callback(index);
        } catch (nb::python_error& error) {
          throw RuntimeError(error.what());
        }
      };
    } else {
      throw ValueError(fmt::format(
          "unknown loader option '{}' (batch_size, shuffle, drop_last, num_threads, prefetch, "
          "seed, replace, weighted, feature_dtype, on_batch_start)",
          name));
    }
  }
  return options;
}

void bind_sampling(nb::module_& m) {
  m.def(
      "sample_neighbors",
      [](const Csr& graph, const InputArray& seeds, std::vector<int64_t> fanouts, bool replace,
         bool weighted, uint64_t seed, uint64_t batch_index) {
        const Array seed_array = host_ids_array(seeds, "seeds");
        SampledSubgraph sub;
        {
          nb::gil_scoped_release release;
          sub = sample_neighbors(graph, seed_array.span<int64_t>(),
                                 {std::move(fanouts), replace, weighted, seed}, batch_index);
        }
        return subgraph_to_python(sub);
      },
      nb::arg("graph"), nb::arg("seeds"), nb::arg("fanouts"), nb::arg("replace") = false,
      nb::arg("weighted") = false, nb::arg("seed") = 0, nb::arg("batch_index") = 0,
      "Multi-hop neighbor sampling (see volley/sampling/neighbor_sampler.h). Returns a dict with "
      "n_id, row, col, e_id (int64 arrays) and num_sampled_nodes / num_sampled_edges lists.");

  nb::class_<PyNeighborSampler>(m, "NeighborSampler",
                                "The one sampler: CPU over a Csr, CUDA over a CudaGraph "
                                "(sampling/neighbor_sampler.h).")
      .def(
          "__init__",
          [](PyNeighborSampler* self, const SamplerGraph& graph, std::vector<int64_t> fanouts,
             bool replace, bool weighted, uint64_t seed) {
            NeighborSamplerOptions options{std::move(fanouts), replace, weighted, seed};
            std::visit(
                [&](const auto& g) {
                  new (self) PyNeighborSampler{NeighborSampler(g, options), {}};
                },
                graph);
          },
          nb::arg("graph"), nb::arg("fanouts"), nb::arg("replace") = false,
          nb::arg("weighted") = false, nb::arg("seed") = 0)
      .def_prop_ro("on_cuda", [](const PyNeighborSampler& s) { return s.sampler.on_cuda(); })
      .def("sample", &PyNeighborSampler::sample, nb::arg("seeds"), nb::arg("batch_index"),
           nb::arg("stream") = 0,
           "One batch: dict of arrays n_id, row, col, e_id and per-hop counts; on a GPU device "
           "arrays ready in `stream` order (an integer cudaStream_t).");

  nb::class_<BatchSource>(m, "BatchSource",
                          "Where a loader's batches come from (see loader/batch_source.h).")
      .def_prop_ro("num_nodes", &BatchSource::num_nodes)
      .def_prop_ro("feature_width", &BatchSource::feature_width)
      .def_prop_ro("has_labels", &BatchSource::has_labels);

  nb::class_<BatchStream>(m, "BatchStream",
                          "The batches of one epoch, in order; iterate with next().")
      .def(
          "next",
          [](BatchStream& stream) -> nb::object {
            std::optional<Batch> batch;
            {
              nb::gil_scoped_release release;
              batch = stream.next();
            }
            if (!batch) return nb::none();
            return batch_to_python(*batch);
          },
          "The next batch as a dict, or None after the last. Raises the error of a batch that "
          "failed.")
      .def("stop", &BatchStream::stop, nb::call_guard<nb::gil_scoped_release>(),
           "Stop producing batches early (idempotent).")
      .def_prop_ro("num_batches", &BatchStream::num_batches);

  nb::class_<Epoch, BatchStream>(m, "Epoch", "One pass of a NeighborLoader.");

  nb::class_<NeighborLoader>(m, "NeighborLoader",
                             "The C++ batch pipeline. Options are keyword arguments named as "
                             "LoaderOptions' fields (see loader_options).")
      .def(
          "__init__",
          [](NeighborLoader* self, const Csr& graph, const std::optional<RowsInput>& features,
             const std::optional<RowsInput>& labels, const std::optional<InputArray>& input_nodes,
             std::vector<int64_t> fanouts, const nb::kwargs& kwargs) {
            LoaderOptions options = loader_options(std::move(fanouts), kwargs);
            auto feature_array = rows_from_python(features, "features");
            auto label_array = rows_from_python(labels, "labels");
            auto input_array = array_from_python(input_nodes, "input_nodes");
            nb::gil_scoped_release release;
            new (self) NeighborLoader(graph, std::move(feature_array), std::move(label_array),
                                      std::move(input_array), std::move(options));
          },
          nb::arg("graph"), nb::arg("features").none(), nb::arg("labels").none(),
          nb::arg("input_nodes").none(), nb::arg("fanouts"), nb::arg("kwargs"),
          "A loader over a graph and optional features / labels of this process.")
      .def(
          "__init__",
          [](NeighborLoader* self, std::shared_ptr<const BatchSource> source,
             const std::optional<InputArray>& input_nodes, std::vector<int64_t> fanouts,
             const nb::kwargs& kwargs) {
            LoaderOptions options = loader_options(std::move(fanouts), kwargs);
            auto input_array = array_from_python(input_nodes, "input_nodes");
            nb::gil_scoped_release release;
            new (self)
                NeighborLoader(std::move(source), std::move(input_array), std::move(options));
          },
          nb::arg("source"), nb::arg("input_nodes").none(), nb::arg("fanouts"), nb::arg("kwargs"),
          "A loader over any BatchSource (e.g. a DistGraph).")
      .def_prop_ro("num_batches", &NeighborLoader::num_batches)
      .def_prop_ro("num_inputs", &NeighborLoader::num_inputs)
      .def("start_epoch", &NeighborLoader::start_epoch, nb::arg("epoch"),
           nb::call_guard<nb::gil_scoped_release>(), "Start an epoch; workers begin at once.");
}

}  // namespace volley::python
