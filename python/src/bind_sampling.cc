// python/src/bind_sampling.cc — neighbor sampling and the batch pipeline.
//
// Results cross zero-copy: a sampled subgraph's and a loader batch's Arrays are handed over as
// they are (host arrays to numpy, device arrays through DLPack). The helpers
// that do so (subgraph_to_python, batch_to_python) and the BatchSource / BatchStream bases are
// shared with the distributed service's bindings (bind_dist.cc).
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nanobind/stl/function.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "volley/core/cuda_device.h"
#include "volley/core/recycler.h"
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

// A subgraph to sample into: one whose arrays Python has let go of (its vectors' capacity reused,
// so a batch maps and faults no fresh pages), or a new one. At most 4 wait, each kept only while
// its vectors hold at most 128 MiB.
std::shared_ptr<HostSubgraph> recycled_subgraph() {
  const auto keep = [](const HostSubgraph& subgraph) {
    const size_t values = subgraph.nodes.capacity() + subgraph.rows.capacity() +
                          subgraph.cols.capacity() + subgraph.edge_ids.capacity();
    return values * sizeof(int64_t) <= (size_t{128} << 20);
  };
  static auto* stock = new Recycler<HostSubgraph>({.max_idle = 4, .keep = keep});
  return stock->acquire();
}

// Seed times from Python: a 1-d int64 host array (ValueError naming what came otherwise).
Array host_times_array(const InputArray& input) {
  const Array times = array_from_python(input, "seed_times");
  VOLLEY_REQUIRE(
      times.ndim() == 1 && times.dtype() == DType::kInt64 && times.buffer().host_accessible(),
      ValueError, "seed_times must be a 1-d int64 host array, got {}", times.describe());
  return times;
}

// The one sampler as Python holds it: on a GPU, with a stream of its own, each batch copied
// into memory of its own that is handed to the caller's stream (see bind_cuda.cc).
struct PyNeighborSampler {
  NeighborSampler sampler;
  CudaStream stream;

  // `seed_times` (temporal sampling): int64 host array, one time per seed; None samples
  // without time (ValueError from the sampler when its options are temporal).
  nb::dict sample(const InputArray& seeds, uint64_t batch_index, uintptr_t consumer_stream,
                  const std::optional<InputArray>& seed_times) {
    const Array seed_array = host_ids_array(seeds, "seeds");
    std::optional<Array> times;
    if (seed_times) times = host_times_array(*seed_times);
    if (!sampler.on_cuda()) {
      auto holder = recycled_subgraph();
      {
        nb::gil_scoped_release release;
        // The sampler's own scratch, kept between batches (its maps are tens of MiB on large
        // graphs; a borrowed one would be trimmed, then mapped and zeroed anew every batch).
        if (times) {
          sampler.sample(seed_array.span<int64_t>(), times->span<int64_t>(), batch_index, *holder);
        } else {
          sampler.sample(seed_array.span<int64_t>(), batch_index, *holder);
        }
      }
      return subgraph_to_python(HostSubgraph::view(holder));
    }
    Batch batch;
    {
      nb::gil_scoped_release release;
      if (stream.handle() == nullptr) stream = CudaStream::create(sampler.device());
      batch = sample_device_batch(
          sampler, seed_array.span<int64_t>(), batch_index, nullptr, nullptr, stream.handle(), {},
          std::nullopt,
          times ? std::optional<std::span<const int64_t>>(times->span<int64_t>()) : std::nullopt);
      batch.hand_over(reinterpret_cast<void*>(consumer_stream));
    }
    nb::dict result;
    result["n_id"] = array_to_python(batch.nodes);
    result["row"] = array_to_python(edge_row(batch.edge_index, 1));
    result["col"] = array_to_python(edge_row(batch.edge_index, 0));
    result["e_id"] = array_to_python(batch.edge_ids);
    result["num_sampled_nodes"] = batch.nodes_per_hop;
    result["num_sampled_edges"] = batch.edges_per_hop;
    result["batch"] = array_to_python(batch.batch_ids);
    return result;
  }
};

using SamplerGraph = std::variant<Csr, CudaGraph>;

// `callback(index)` as LoaderOptions::on_batch_start: runs on a worker thread with the GIL
// taken; the callable is held by a shared_ptr whose last release takes the GIL, so copies of
// the options (made with the GIL released) never touch Python reference counts.
std::function<void(int64_t)> batch_start_hook(const nb::object& callback) {
  if (callback.is_none()) return {};
  std::shared_ptr<nb::object> held(new nb::object(callback), [](nb::object* object) {
    nb::gil_scoped_acquire acquire;
    delete object;
  });
  return [held](int64_t index) {
    nb::gil_scoped_acquire acquire;
    try {
      (*held)(index);
    } catch (nb::python_error& error) {
      throw RuntimeError(error.what());
    }
  };
}

const char* time_source_name(TimeSource source) {
  return source == TimeSource::kNode ? "node" : source == TimeSource::kEdge ? "edge" : "none";
}

}  // namespace

TimeSource time_source_from_name(const std::string& name) {
  if (name == "none") return TimeSource::kNone;
  if (name == "node") return TimeSource::kNode;
  if (name == "edge") return TimeSource::kEdge;
  throw ValueError(fmt::format("time_source must be 'none', 'node' or 'edge', got '{}'", name));
}

namespace {

std::string sampler_repr(const NeighborSamplerOptions& options) {
  return fmt::format(
      "NeighborSamplerOptions(fanouts=[{}], replace={}, weighted={}, seed={}, "
      "subgraph_type='{}', disjoint={}, time_source='{}', temporal_strategy='{}')",
      fmt::join(options.fanouts, ", "), options.replace ? "True" : "False",
      options.weighted ? "True" : "False", options.seed, subgraph_type_name(options.subgraph_type),
      options.disjoint ? "True" : "False", time_source_name(options.time_source),
      temporal_strategy_name(options.temporal_strategy));
}

using EdgeTuple = std::tuple<std::string, std::string, std::string>;

void bind_sampler_options(nb::module_& m) {
  nb::class_<NeighborSamplerOptions>(
      m, "NeighborSamplerOptions",
      "Neighbor sampling options (volley/sampling/neighbor_sampler.h): fanouts per hop (-1: all "
      "neighbors), replace, weighted, seed, subgraph_type ('directional', 'bidirectional', "
      "'induced') and disjoint. Checked by whatever uses them (ValueError naming the offending "
      "value).")
      .def(
          "__init__",
          [](NeighborSamplerOptions* self, std::vector<int64_t> fanouts, bool replace,
             bool weighted, uint64_t seed, const std::string& subgraph_type, bool disjoint,
             const std::string& time_source, const std::string& temporal_strategy) {
            new (self) NeighborSamplerOptions{std::move(fanouts),
                                              replace,
                                              weighted,
                                              seed,
                                              subgraph_type_from_name(subgraph_type),
                                              disjoint,
                                              time_source_from_name(time_source),
                                              temporal_strategy_from_name(temporal_strategy)};
          },
          nb::arg("fanouts") = std::vector<int64_t>{}, nb::kw_only(), nb::arg("replace") = false,
          nb::arg("weighted") = false, nb::arg("seed") = 0,
          nb::arg("subgraph_type") = "directional", nb::arg("disjoint") = false,
          nb::arg("time_source") = "none", nb::arg("temporal_strategy") = "uniform")
      .def_rw("fanouts", &NeighborSamplerOptions::fanouts)
      .def_rw("replace", &NeighborSamplerOptions::replace)
      .def_rw("weighted", &NeighborSamplerOptions::weighted)
      .def_rw("seed", &NeighborSamplerOptions::seed)
      .def_prop_rw(
          "subgraph_type",
          [](const NeighborSamplerOptions& o) {
            return std::string(subgraph_type_name(o.subgraph_type));
          },
          [](NeighborSamplerOptions& o, const std::string& name) {
            o.subgraph_type = subgraph_type_from_name(name);
          })
      .def_rw("disjoint", &NeighborSamplerOptions::disjoint)
      .def_prop_rw(
          "time_source",
          [](const NeighborSamplerOptions& o) {
            return std::string(time_source_name(o.time_source));
          },
          [](NeighborSamplerOptions& o, const std::string& name) {
            o.time_source = time_source_from_name(name);
          })
      .def_prop_rw(
          "temporal_strategy",
          [](const NeighborSamplerOptions& o) {
            return std::string(temporal_strategy_name(o.temporal_strategy));
          },
          [](NeighborSamplerOptions& o, const std::string& name) {
            o.temporal_strategy = temporal_strategy_from_name(name);
          })
      .def_prop_rw(
          "fanouts_by_type",
          [](const NeighborSamplerOptions& o) {
            std::vector<std::pair<EdgeTuple, std::vector<int64_t>>> out;
            for (const auto& [type, list] : o.fanouts_by_type) {
              out.emplace_back(EdgeTuple{type.src, type.relation, type.dst}, list);
            }
            return out;
          },
          [](NeighborSamplerOptions& o,
             const std::vector<std::pair<EdgeTuple, std::vector<int64_t>>>& by_type) {
            o.fanouts_by_type.clear();
            for (const auto& [type, list] : by_type) {
              o.fanouts_by_type.emplace_back(
                  EdgeType{std::get<0>(type), std::get<1>(type), std::get<2>(type)}, list);
            }
          },
          "Typed graphs: [((src, relation, dst), fanouts), ...], the fanouts of the edge types "
          "named (`fanouts` is the others')")
      .def("__repr__", &sampler_repr);
}

std::string loader_repr(const LoaderOptions& options) {
  return fmt::format(
      "LoaderOptions(batch_size={}, shuffle={}, drop_last={}, num_threads={}, prefetch={}, "
      "seed={}, rank={}, world_size={}, feature_dtype='{}', sampler={})",
      options.batch_size, options.shuffle ? "True" : "False", options.drop_last ? "True" : "False",
      options.num_threads, options.prefetch, options.seed, options.rank, options.world_size,
      dtype_name(options.feature_dtype), sampler_repr(options.sampler));
}

void bind_loader_options(nb::module_& m) {
  nb::class_<LoaderOptions>(
      m, "LoaderOptions",
      "A loader's options (volley/loader/neighbor_loader.h), typed; checked once, when a loader "
      "is built from them (ValueError naming the offending value). on_batch_start is a callable "
      "run on a worker thread before each batch (tests: fault injection).")
      .def(
          "__init__",
          [](LoaderOptions* self, const NeighborSamplerOptions& sampler, int64_t batch_size,
             bool shuffle, bool drop_last, int num_threads, int prefetch, uint64_t seed, int rank,
             int world_size, const std::string& feature_dtype, const nb::object& on_batch_start) {
            new (self) LoaderOptions{.batch_size = batch_size,
                                     .shuffle = shuffle,
                                     .drop_last = drop_last,
                                     .num_threads = num_threads,
                                     .prefetch = prefetch,
                                     .seed = seed,
                                     .rank = rank,
                                     .world_size = world_size,
                                     .sampler = sampler,
                                     .feature_dtype = dtype_from_name(feature_dtype),
                                     .on_batch_start = batch_start_hook(on_batch_start)};
          },
          nb::arg("sampler"), nb::kw_only(), nb::arg("batch_size") = 1, nb::arg("shuffle") = false,
          nb::arg("drop_last") = false, nb::arg("num_threads") = 0, nb::arg("prefetch") = 0,
          nb::arg("seed") = 0, nb::arg("rank") = 0, nb::arg("world_size") = 1,
          nb::arg("feature_dtype") = "float32", nb::arg("on_batch_start").none() = nb::none())
      .def_rw("sampler", &LoaderOptions::sampler)
      .def_rw("batch_size", &LoaderOptions::batch_size)
      .def_rw("shuffle", &LoaderOptions::shuffle)
      .def_rw("drop_last", &LoaderOptions::drop_last)
      .def_rw("num_threads", &LoaderOptions::num_threads)
      .def_rw("prefetch", &LoaderOptions::prefetch)
      .def_rw("lookahead", &LoaderOptions::lookahead,
              "Batches sampled ahead to tell a lookahead row cache what comes (0: none).")
      .def_rw("seed", &LoaderOptions::seed)
      .def_rw("rank", &LoaderOptions::rank)
      .def_rw("world_size", &LoaderOptions::world_size)
      .def_prop_rw(
          "input_time",
          [](const LoaderOptions& options) { return array_to_python(options.input_time); },
          [](LoaderOptions& options, const std::optional<InputArray>& value) {
            options.input_time = array_from_python(value, "input_time");
          },
          nb::arg("value").none(), "int64 time per input node (temporal sampling), or None.")
      .def_prop_rw(
          "feature_dtype",
          [](const LoaderOptions& options) {
            return std::string(dtype_name(options.feature_dtype));
          },
          [](LoaderOptions& options, const std::string& name) {
            options.feature_dtype = dtype_from_name(name);
          })
      .def("__repr__", &loader_repr);
}

void bind_options(nb::module_& m) {
  bind_sampler_options(m);
  bind_loader_options(m);
  m.def(
      "epoch_positions",
      [](int64_t num_inputs, const LoaderOptions& options, int64_t epoch) {
        loader_internal::check_loader_options(options, num_inputs);
        return array_to_python(loader_internal::epoch_positions(num_inputs, options, epoch));
      },
      nb::arg("num_inputs"), nb::arg("options"), nb::arg("epoch"),
      "Positions into `num_inputs` input nodes that options.rank visits in `epoch`, in batch "
      "order (int64): the loaders' epoch order and rank split (see LoaderOptions.rank).");
  m.def(
      "epoch_sampler_seed",
      [](const LoaderOptions& options, int64_t epoch) {
        return loader_internal::epoch_sampler_seed(options, epoch);
      },
      nb::arg("options"), nb::arg("epoch"),
      "The seed options.rank samples epoch `epoch` with (batch b then has batch index b).");
  m.def(
      "num_batches",
      [](int64_t num_inputs, const LoaderOptions& options) {
        loader_internal::check_loader_options(options, num_inputs);
        return loader_internal::num_batches(num_inputs, options);
      },
      nb::arg("num_inputs"), nb::arg("options"),
      "Batches per epoch of options.rank over `num_inputs` input nodes (the options checked "
      "first: ValueError naming the offending value).");
}

}  // namespace

std::optional<FeatureStore> rows_from_python(const std::optional<RowsInput>& input,
                                             std::string_view what) {
  if (!input) return std::nullopt;
  if (const auto* store = std::get_if<FeatureStore>(&*input)) return *store;
  return FeatureStore(array_from_python(std::get<InputArray>(*input), what));
}

std::vector<std::pair<std::string, FeatureStore>> named_stores(const NamedRows& tables) {
  std::vector<std::pair<std::string, FeatureStore>> stores;
  for (const auto& [name, rows] : tables) {
    stores.emplace_back(name, *rows_from_python(rows, name));
  }
  return stores;
}

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
  result["batch"] = array_to_python(subgraph.batch);
  return result;
}

TypedAttributes typed_stores(const std::vector<NamedRows>& node_attrs,
                             const std::vector<NamedRows>& edge_attrs) {
  TypedAttributes attributes;
  for (const NamedRows& tables : node_attrs) attributes.node.push_back(named_stores(tables));
  for (const NamedRows& tables : edge_attrs) attributes.edge.push_back(named_stores(tables));
  return attributes;
}

namespace {

void bind_samplers(nb::module_& m) {
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
        return subgraph_to_python(HostSubgraph::view(holder));
      },
      nb::arg("graph"), nb::arg("seeds"), nb::arg("fanouts"), nb::arg("replace") = false,
      nb::arg("weighted") = false, nb::arg("seed") = 0, nb::arg("batch_index") = 0,
      "Multi-hop neighbor sampling (see volley/sampling/neighbor_sampler.h). Returns a dict with "
      "n_id, row, col, e_id (int64 arrays) and num_sampled_nodes / num_sampled_edges lists.");

  m.def(
      "sample_neighbors_temporal",
      [](const Csr& graph, const InputArray& seeds, const InputArray& seed_times,
         const NeighborSamplerOptions& options, uint64_t batch_index) {
        const Array seed_array = host_ids_array(seeds, "seeds");
        const Array time_array = host_times_array(seed_times);
        auto holder = recycled_subgraph();
        {
          nb::gil_scoped_release release;
          sample_neighbors(graph, seed_array.span<int64_t>(), time_array.span<int64_t>(), options,
                           batch_index, *holder);
        }
        return subgraph_to_python(HostSubgraph::view(holder));
      },
      nb::arg("graph"), nb::arg("seeds"), nb::arg("seed_times"), nb::arg("options"),
      nb::arg("batch_index") = 0,
      "Temporal neighbor sampling (see volley/sampling/neighbor_sampler.h): seed_times[i] is "
      "the time of seeds[i]; the dict of sample_neighbors, with batch.");

  nb::class_<PyNeighborSampler>(m, "NeighborSampler",
                                "The one sampler: CPU over a Csr, CUDA over a CudaGraph "
                                "(sampling/neighbor_sampler.h).")
      .def(
          "__init__",
          [](PyNeighborSampler* self, const SamplerGraph& graph, std::vector<int64_t> fanouts,
             bool replace, bool weighted, uint64_t seed, const std::string& time_source,
             const std::string& temporal_strategy) {
            NeighborSamplerOptions options{std::move(fanouts), replace, weighted, seed};
            options.time_source = time_source_from_name(time_source);
            options.temporal_strategy = temporal_strategy_from_name(temporal_strategy);
            options.disjoint = options.time_source != TimeSource::kNone;  // as PyG forces it
            std::visit(
                [&](const auto& g) { new (self) PyNeighborSampler{NeighborSampler(g, options)}; },
                graph);
          },
          nb::arg("graph"), nb::arg("fanouts"), nb::arg("replace") = false,
          nb::arg("weighted") = false, nb::arg("seed") = 0, nb::arg("time_source") = "none",
          nb::arg("temporal_strategy") = "uniform")
      .def_prop_ro("on_cuda", [](const PyNeighborSampler& s) { return s.sampler.on_cuda(); })
      .def("sample", &PyNeighborSampler::sample, nb::arg("seeds"), nb::arg("batch_index"),
           nb::arg("stream") = 0, nb::arg("seed_times") = nb::none(),
           "One batch: dict of arrays n_id, row, col, e_id, batch (temporal: each node's seed "
           "position) and per-hop counts; on a GPU device arrays ready in `stream` order (an "
           "integer cudaStream_t). seed_times: one int64 time per seed (temporal sampling).");
}

void bind_streams(nb::module_& m) {
  nb::class_<BatchSource>(m, "BatchSource",
                          "Where a loader's batches come from (see loader/batch_source.h).")
      .def_prop_ro("num_nodes", &BatchSource::num_nodes)
      .def_prop_ro("feature_width", &BatchSource::feature_width)
      .def_prop_ro("has_labels", &BatchSource::has_labels);

  nb::class_<TypedBatchSource>(m, "TypedBatchSource",
                               "Where a typed loader's batches come from (see "
                               "loader/batch_source.h).");

  nb::class_<BatchStream>(m, "BatchStream",
                          "The batches of one epoch, in order; iterate with next().")
      .def(
          "next",
          [](BatchStream& stream, uintptr_t consumer_stream) -> nb::object {
            std::optional<Batch> batch;
            {
              nb::gil_scoped_release release;
              batch = stream.next_on(reinterpret_cast<void*>(consumer_stream));
            }
            if (!batch) return nb::none();
            return batch_to_python(*batch);
          },
          nb::arg("stream") = 0,
          "The next batch as a dict, or None after the last. Raises the error of a batch that "
          "failed. Device batches are ready in the order of `stream` (an integer cudaStream_t; "
          "0: the legacy default stream) and freed in it; host batches ignore it.")
      .def("stop", &BatchStream::stop, nb::call_guard<nb::gil_scoped_release>(),
           "Stop producing batches early (idempotent).")
      .def_prop_ro("num_batches", &BatchStream::num_batches);

  nb::class_<Epoch, BatchStream>(m, "Epoch",
                                 "One pass of a loader (CPU or CUDA): batches in order.");
}

// NeighborLoader over a typed graph (a TypedBatchSource, or a HeteroNeighborSampler of this
// process): per-type (name, table) lists become TypedAttributes.
template <typename Source>
void typed_loader_init(NeighborLoader* self, std::shared_ptr<Source> source,
                       const std::string& input_type, const std::optional<InputArray>& input_nodes,
                       LoaderOptions options, const std::vector<NamedRows>& node_attrs,
                       const std::vector<NamedRows>& edge_attrs) {
  auto input_array = array_from_python(input_nodes, "input_nodes");
  TypedAttributes attributes = typed_stores(node_attrs, edge_attrs);
  nb::gil_scoped_release release;
  new (self) NeighborLoader(std::move(source), input_type, std::move(input_array),
                            std::move(options), std::move(attributes));
}

void bind_loader(nb::module_& m) {
  nb::class_<NeighborLoader>(m, "NeighborLoader",
                             "The C++ batch pipeline (loader/neighbor_loader.h): one loader for "
                             "every epoch of this rank.")
      .def(
          "__init__",
          [](NeighborLoader* self, const Csr& graph, const std::optional<RowsInput>& features,
             const std::optional<RowsInput>& labels, const std::optional<InputArray>& input_nodes,
             LoaderOptions options, const NamedRows& node_attrs, const NamedRows& edge_attrs) {
            auto feature_array = rows_from_python(features, "features");
            auto label_array = rows_from_python(labels, "labels");
            auto input_array = array_from_python(input_nodes, "input_nodes");
            LoaderAttributes attributes{named_stores(node_attrs), named_stores(edge_attrs)};
            nb::gil_scoped_release release;
            new (self)
                NeighborLoader(graph, std::move(feature_array), std::move(label_array),
                               std::move(input_array), std::move(options), std::move(attributes));
          },
          nb::arg("graph"), nb::arg("features").none(), nb::arg("labels").none(),
          nb::arg("input_nodes").none(), nb::arg("options"), nb::arg("node_attrs") = NamedRows{},
          nb::arg("edge_attrs") = NamedRows{},
          "A loader over a graph and optional features / labels of this process; node_attrs / "
          "edge_attrs: (name, table) pairs carried into every batch (LoaderAttributes).")
      .def(
          "__init__",
          [](NeighborLoader* self, std::shared_ptr<const BatchSource> source,
             const std::optional<InputArray>& input_nodes, LoaderOptions options) {
            auto input_array = array_from_python(input_nodes, "input_nodes");
            nb::gil_scoped_release release;
            new (self)
                NeighborLoader(std::move(source), std::move(input_array), std::move(options));
          },
          nb::arg("source"), nb::arg("input_nodes").none(), nb::arg("options"),
          "A loader over any BatchSource (e.g. a DistGraph).")
      .def(
          "__init__",
          [](NeighborLoader* self, const CudaGraph& graph, std::optional<FeatureStore> features,
             std::optional<FeatureStore> labels, const std::optional<InputArray>& input_nodes,
             LoaderOptions options) {
            auto input_array = array_from_python(input_nodes, "input_nodes");
            nb::gil_scoped_release release;
            new (self) NeighborLoader(graph, std::move(features), std::move(labels),
                                      std::move(input_array), std::move(options));
          },
          nb::arg("graph"), nb::arg("features").none(), nb::arg("labels").none(),
          nb::arg("input_nodes").none(), nb::arg("options"),
          "The same loader with batches built on the GPU: the device follows where the graph "
          "was placed (CudaGraph) and the features / labels live (GPU tiers of its device).")
      .def("__init__", &typed_loader_init<HeteroNeighborSampler>, nb::arg("sampler"),
           nb::arg("input_type"), nb::arg("input_nodes").none(), nb::arg("options"),
           nb::arg("node_attrs") = std::vector<NamedRows>{},
           nb::arg("edge_attrs") = std::vector<NamedRows>{},
           "The same pipeline over a typed graph: a HeteroNeighborSampler samples seeds of node "
           "type input_type; node_attrs[t] / edge_attrs[e]: (name, table) pairs of node type t / "
           "edge type e (graph order) carried into every batch.")
      .def("__init__", &typed_loader_init<const TypedBatchSource>, nb::arg("sampler"),
           nb::arg("input_type"), nb::arg("input_nodes").none(), nb::arg("options"),
           nb::arg("node_attrs") = std::vector<NamedRows>{},
           nb::arg("edge_attrs") = std::vector<NamedRows>{},
           "The same over any TypedBatchSource (e.g. a DistHeteroSource); its own fields (x, y) "
           "join each node type's attributes.")
      .def_prop_ro("on_cuda", &NeighborLoader::on_cuda)
      .def_prop_ro("num_batches", &NeighborLoader::num_batches)
      .def_prop_ro("num_inputs", &NeighborLoader::num_inputs)
      .def_prop_ro("options", &NeighborLoader::options)
      .def(
          "epoch_positions",
          [](const NeighborLoader& loader, int64_t epoch) {
            return array_to_python(loader.epoch_positions(epoch));
          },
          nb::arg("epoch"),
          "Positions into the input nodes this rank visits in `epoch`, in batch order (int64).")
      .def("start_epoch", &NeighborLoader::start_epoch, nb::arg("epoch"),
           nb::arg("first_batch") = 0, nb::call_guard<nb::gil_scoped_release>(),
           "Start an epoch (from batch `first_batch`: a resumed one); workers begin at once.");
}

}  // namespace

void bind_sampling(nb::module_& m) {
  bind_options(m);
  bind_samplers(m);
  bind_streams(m);
  bind_loader(m);
}

}  // namespace volley::python
