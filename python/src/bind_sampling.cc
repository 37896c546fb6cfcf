// python/src/bind_sampling.cc — neighbor sampling and the batch pipeline.
//
// Results cross zero-copy: a sampled subgraph's vectors are moved into a shared holder that the
// returned arrays keep alive; a loader batch's Arrays are handed over as they are.
#include <memory>
#include <variant>
#include <vector>

#include <nanobind/stl/function.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
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

Array seeds_array(const InputArray& seeds) {
  Array array = array_from_python(seeds, "seeds");
  VOLLEY_REQUIRE(array.ndim() == 1 && array.dtype() == DType::kInt64, ValueError,
                 "seeds must be a 1-d int64 array, got {}", array.describe());
  VOLLEY_REQUIRE(array.buffer().host_accessible(), ValueError,
                 "seeds must be in host memory for the CPU sampler, got {} memory",
                 location_name(array.buffer().location()));
  return array;
}

// Features or labels handed to the loader: a FeatureStore as it is, or an array (zero-copy).
using RowsInput = std::variant<FeatureStore, InputArray>;

std::optional<FeatureStore> rows_from_python(const std::optional<RowsInput>& input,
                                             std::string_view what) {
  if (!input) return std::nullopt;
  if (const auto* store = std::get_if<FeatureStore>(&*input)) return *store;
  return FeatureStore(array_from_python(std::get<InputArray>(*input), what));
}

nb::dict batch_to_python(Batch& batch) {
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
  return result;
}

}  // namespace

void bind_sampling(nb::module_& m) {
  m.def(
      "sample_neighbors",
      [](const Csr& graph, const InputArray& seeds, std::vector<int64_t> fanouts, bool replace,
         bool weighted, uint64_t seed, uint64_t batch_index) {
        const Array seed_array = seeds_array(seeds);
        auto holder = std::make_shared<SampledSubgraph>();
        {
          nb::gil_scoped_release release;
          *holder = sample_neighbors(graph, seed_array.span<int64_t>(),
                                     {std::move(fanouts), replace, weighted, seed}, batch_index);
        }
        nb::dict result;
        result["n_id"] = array_to_python(vector_array(holder, holder->nodes));
        result["row"] = array_to_python(vector_array(holder, holder->rows));
        result["col"] = array_to_python(vector_array(holder, holder->cols));
        result["e_id"] = array_to_python(vector_array(holder, holder->edge_ids));
        result["num_sampled_nodes"] = holder->nodes_per_hop;
        result["num_sampled_edges"] = holder->edges_per_hop;
        return result;
      },
      nb::arg("graph"), nb::arg("seeds"), nb::arg("fanouts"), nb::arg("replace") = false,
      nb::arg("weighted") = false, nb::arg("seed") = 0, nb::arg("batch_index") = 0,
      "Multi-hop neighbor sampling (see volley/sampling/neighbor_sampler.h). Returns a dict with "
      "n_id, row, col, e_id (int64 arrays) and num_sampled_nodes / num_sampled_edges lists.");

  nb::class_<Epoch>(m, "Epoch", "One pass of a NeighborLoader; iterate with next().")
      .def(
          "next",
          [](Epoch& epoch) -> nb::object {
            std::optional<Batch> batch;
            {
              nb::gil_scoped_release release;
              batch = epoch.next();
            }
            if (!batch) return nb::none();
            return batch_to_python(*batch);
          },
          "The next batch as a dict, or None after the last. Raises a worker's error.")
      .def("stop", &Epoch::stop, nb::call_guard<nb::gil_scoped_release>(),
           "Stop the workers early (idempotent).")
      .def_prop_ro("num_batches", &Epoch::num_batches);

  nb::class_<NeighborLoader>(m, "NeighborLoader", "The C++ batch pipeline.")
      .def(
          "__init__",
          [](NeighborLoader* self, const Csr& graph, const std::optional<RowsInput>& features,
             const std::optional<RowsInput>& labels, const std::optional<InputArray>& input_nodes,
             std::vector<int64_t> fanouts, int64_t batch_size, bool shuffle, bool drop_last,
             int num_threads, int prefetch, uint64_t seed, bool replace, bool weighted,
             const std::string& feature_dtype, std::optional<nb::callable> on_batch_start) {
            LoaderOptions options;
            options.batch_size = batch_size;
            options.shuffle = shuffle;
            options.drop_last = drop_last;
            options.num_threads = num_threads;
            options.prefetch = prefetch;
            options.seed = seed;
            options.sampler = {std::move(fanouts), replace, weighted, 0};
            options.feature_dtype = dtype_from_name(feature_dtype);
            if (on_batch_start) {
              // Runs on a worker thread: take the GIL around the Python call.
              options.on_batch_start = [callback = *on_batch_start](int64_t index) {
                nb::gil_scoped_acquire acquire;
                try {
                  callback(index);
                } catch (nb::python_error& error) {
                  throw RuntimeError(error.what());
                }
              };
            }
            auto feature_array = rows_from_python(features, "features");
            auto label_array = rows_from_python(labels, "labels");
            auto input_array = array_from_python(input_nodes, "input_nodes");
            nb::gil_scoped_release release;
            new (self) NeighborLoader(graph, std::move(feature_array), std::move(label_array),
                                      std::move(input_array), std::move(options));
          },
          nb::arg("graph"), nb::arg("features").none(), nb::arg("labels").none(),
          nb::arg("input_nodes").none(), nb::arg("fanouts"), nb::arg("batch_size") = 1,
          nb::arg("shuffle") = false, nb::arg("drop_last") = false, nb::arg("num_threads") = 0,
          nb::arg("prefetch") = 0, nb::arg("seed") = 0, nb::arg("replace") = false,
          nb::arg("weighted") = false, nb::arg("feature_dtype") = "float32",
          nb::arg("on_batch_start").none() = nb::none())
      .def_prop_ro("num_batches", &NeighborLoader::num_batches)
      .def("start_epoch", &NeighborLoader::start_epoch, nb::arg("epoch"),
           nb::call_guard<nb::gil_scoped_release>(), "Start an epoch; workers begin at once.");
}

}  // namespace volley::python
