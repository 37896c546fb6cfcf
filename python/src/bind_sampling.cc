// python/src/bind_sampling.cc — neighbor sampling and the batch pipeline.
//
// Results cross zero-copy: a sampled subgraph's vectors are moved into a shared holder that the
// returned arrays keep alive; a loader batch's Arrays are handed over as they are. The helpers
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
#include "volley/core/recycler.h"
#include "volley/loader/neighbor_loader.h"
#include "volley/sampling/neighbor_sampler.h"

namespace volley::python {
namespace {

// A 1-d int64 Array over a vector that `holder` keeps alive.
Array vector_array(const std::shared_ptr<SampledSubgraph>& holder, std::vector<int64_t>& values) {
  Buffer buffer = Buffer::borrow(values.data(), values.size() * sizeof(int64_t), holder,
                                 /*writable=*/true, Location::kHost);
  return Array(std::move(buffer), DType::kInt64, {static_cast<int64_t>(values.size())});
}

// A subgraph to sample into: one whose arrays Python has let go of (its vectors' capacity reused,
// so a batch maps and faults no fresh pages), or a new one. At most 4 wait, each kept only while
// its vectors hold at most 128 MiB.
std::shared_ptr<SampledSubgraph> recycled_subgraph() {
  static auto* stock = new Recycler<SampledSubgraph>(
      {.max_idle = 4, .keep = [](const SampledSubgraph& subgraph) {
         const size_t bytes = (subgraph.nodes.capacity() + subgraph.rows.capacity() +
                               subgraph.cols.capacity() + subgraph.edge_ids.capacity()) *
                              sizeof(int64_t);
         return bytes <= (size_t{128} << 20);
       }});
  return stock->acquire();
}

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

nb::dict subgraph_to_python(const std::shared_ptr<SampledSubgraph>& holder) {
  nb::dict result;
  result["n_id"] = array_to_python(vector_array(holder, holder->nodes));
  result["row"] = array_to_python(vector_array(holder, holder->rows));
  result["col"] = array_to_python(vector_array(holder, holder->cols));
  result["e_id"] = array_to_python(vector_array(holder, holder->edge_ids));
  result["num_sampled_nodes"] = holder->nodes_per_hop;
  result["num_sampled_edges"] = holder->edges_per_hop;
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
        auto holder = recycled_subgraph();
        {
          nb::gil_scoped_release release;
          sample_neighbors(graph, seed_array.span<int64_t>(),
                           {std::move(fanouts), replace, weighted, seed}, batch_index, *holder);
        }
        return subgraph_to_python(holder);
      },
      nb::arg("graph"), nb::arg("seeds"), nb::arg("fanouts"), nb::arg("replace") = false,
      nb::arg("weighted") = false, nb::arg("seed") = 0, nb::arg("batch_index") = 0,
      "Multi-hop neighbor sampling (see volley/sampling/neighbor_sampler.h). Returns a dict with "
      "n_id, row, col, e_id (int64 arrays) and num_sampled_nodes / num_sampled_edges lists.");

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
