// python/src/bind_link.cc — link prediction: negative sampling, the seed set of a link batch
// (volley/sampling/negative_sampler.h; results are new numpy arrays, int64) and the link loader
// (volley/loader/link_loader.h; batches as batch_to_python's dicts, with the link fields).
#include <string>
#include <vector>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "volley/loader/link_loader.h"
#include "volley/sampling/negative_sampler.h"

namespace volley::python {
namespace {

NegativeDistribution parse_distribution(const std::string& name) {
  if (name == "uniform") return NegativeDistribution::kUniform;
  if (name == "degree") return NegativeDistribution::kDegree;
  if (name == "weights") return NegativeDistribution::kWeights;
  throw ValueError(fmt::format(
      "negative sampling distribution must be 'uniform', 'degree' or 'weights', got '{}'", name));
}

std::vector<double> weights_from_python(const std::optional<InputArray>& weights) {
  if (!weights) return {};
  const Array array = array_from_python(*weights, "negative sampling weights");
  VOLLEY_REQUIRE(array.ndim() == 1 && array.dtype() == DType::kFloat64, ValueError,
                 "negative sampling weights must be a 1-d float64 array, got {} of {} dims",
                 dtype_name(array.dtype()), array.ndim());
  const double* data = array.data<double>();
  return {data, data + array.numel()};
}

nb::object ids_to_python(const std::vector<int64_t>& ids) {
  return array_to_python(Array::from_vector(ids));
}

NegativeSampler make_sampler(const Csr& graph, const std::string& distribution, double degree_power,
                             const std::optional<InputArray>& weights, bool reject_existing,
                             int max_draws, uint64_t seed) {
  return NegativeSampler(graph, {.distribution = parse_distribution(distribution),
                                 .degree_power = degree_power,
                                 .weights = weights_from_python(weights),
                                 .reject_existing = reject_existing,
                                 .max_draws = max_draws,
                                 .seed = seed});
}

std::vector<int64_t> times_from_python(const std::optional<InputArray>& times, const char* what) {
  if (!times) return {};
  const Array array = host_ids_array(*times, what);
  return {array.data<int64_t>(), array.data<int64_t>() + array.numel()};
}

// The sampler of one edge type of a HeteroGraph (negative_sampler.h, "Typed edges").
NegativeSampler make_typed_sampler(const HeteroGraph& graph,
                                   const std::tuple<std::string, std::string, std::string>& type,
                                   const std::string& distribution, double degree_power,
                                   const std::optional<InputArray>& src_weights,
                                   const std::optional<InputArray>& dst_weights,
                                   const std::optional<InputArray>& src_time,
                                   const std::optional<InputArray>& dst_time, bool reject_existing,
                                   int max_draws, uint64_t seed) {
  const EdgeType edge_type{std::get<0>(type), std::get<1>(type), std::get<2>(type)};
  NegativeNodes sources{.weights = weights_from_python(src_weights),
                        .node_time = times_from_python(src_time, "source node times")};
  NegativeNodes destinations{.weights = weights_from_python(dst_weights),
                             .node_time = times_from_python(dst_time, "destination node times")};
  nb::gil_scoped_release release;
  return edge_type_negatives(graph, edge_type, std::move(sources), std::move(destinations),
                             {.distribution = parse_distribution(distribution),
                              .degree_power = degree_power,
                              .reject_existing = reject_existing,
                              .max_draws = max_draws,
                              .seed = seed});
}

// A typed sampler over node counts alone (no degrees, no edge check): uniform or weighted ends.
NegativeSampler make_counted_sampler(int64_t num_sources, int64_t num_destinations,
                                     const std::optional<InputArray>& src_weights,
                                     const std::optional<InputArray>& dst_weights, int max_draws,
                                     uint64_t seed) {
  NegativeNodes sources{.num_nodes = num_sources, .weights = weights_from_python(src_weights)};
  NegativeNodes destinations{.num_nodes = num_destinations,
                             .weights = weights_from_python(dst_weights)};
  const bool weighted = !sources.weights.empty() || !destinations.weights.empty();
  return NegativeSampler(
      std::move(sources), std::move(destinations), nullptr,
      {.distribution = weighted ? NegativeDistribution::kWeights : NegativeDistribution::kUniform,
       .max_draws = max_draws,
       .seed = seed});
}

std::vector<int64_t> bounds_from_python(const std::optional<InputArray>& bounds) {
  return times_from_python(bounds, "time bounds");
}

NegativeMode parse_mode(const std::string& name) {
  if (name == "none") return NegativeMode::kNone;
  if (name == "binary") return NegativeMode::kBinary;
  if (name == "triplet") return NegativeMode::kTriplet;
  throw ValueError(fmt::format(
      "negative sampling mode must be 'binary' or 'triplet' (or none), got '{}'", name));
}

// LinkLoader over a typed graph (link_loader.h, "Typed graphs"): a TypedBatchSource, or a
// HeteroNeighborSampler of this process.
template <typename Source>
void typed_link_loader_init(LinkLoader* self, std::shared_ptr<Source> sampler,
                            const std::tuple<std::string, std::string, std::string>& edge_type,
                            const InputArray& edge_label_index,
                            const std::optional<InputArray>& edge_label, LoaderOptions options,
                            const std::optional<NegativeSampler>& negatives,
                            const std::string& mode, double amount, bool exclude_edges,
                            bool undirected, const std::vector<NamedRows>& node_attrs,
                            const std::vector<NamedRows>& edge_attrs) {
  LinkLoaderOptions link{.loader = std::move(options),
                         .negatives = {.mode = parse_mode(mode), .amount = amount},
                         .exclude_edges = exclude_edges,
                         .undirected = undirected};
  Array index = array_from_python(edge_label_index, "edge_label_index");
  auto label_array = array_from_python(edge_label, "edge_label");
  TypedAttributes attributes = typed_stores(node_attrs, edge_attrs);
  const EdgeType type{std::get<0>(edge_type), std::get<1>(edge_type), std::get<2>(edge_type)};
  nb::gil_scoped_release release;
  new (self) LinkLoader(std::move(sampler), type, std::move(index), std::move(label_array),
                        std::move(link), negatives, std::move(attributes));
}

void bind_link_loader(nb::module_& m) {
  nb::class_<LinkLoader>(m, "LinkLoader",
                         "The C++ link-prediction batch pipeline (loader/link_loader.h).")
      .def(
          "__init__",
          [](LinkLoader* self, const Csr& graph, const std::optional<RowsInput>& features,
             const std::optional<RowsInput>& labels, const InputArray& edge_label_index,
             const std::optional<InputArray>& edge_label, LoaderOptions options,
             const std::string& mode, double amount, const std::string& distribution,
             double degree_power, const std::optional<InputArray>& weights, bool reject_existing,
             int max_draws, bool exclude_edges, bool undirected, const NamedRows& node_attrs,
             const NamedRows& edge_attrs) {
            LinkLoaderOptions link{.loader = std::move(options),
                                   .negatives = {.mode = parse_mode(mode),
                                                 .amount = amount,
                                                 .distribution = parse_distribution(distribution),
                                                 .degree_power = degree_power,
                                                 .weights = weights_from_python(weights),
                                                 .reject_existing = reject_existing,
                                                 .max_draws = max_draws},
                                   .exclude_edges = exclude_edges,
                                   .undirected = undirected};
            auto feature_rows = rows_from_python(features, "features");
            auto label_rows = rows_from_python(labels, "labels");
            Array index = array_from_python(edge_label_index, "edge_label_index");
            auto label_array = array_from_python(edge_label, "edge_label");
            LoaderAttributes attributes{named_stores(node_attrs), named_stores(edge_attrs)};
            nb::gil_scoped_release release;
            new (self)
                LinkLoader(graph, std::move(feature_rows), std::move(label_rows), std::move(index),
                           std::move(label_array), std::move(link), std::move(attributes));
          },
          nb::arg("graph"), nb::arg("features").none(), nb::arg("labels").none(),
          nb::arg("edge_label_index"), nb::arg("edge_label").none(), nb::arg("options"),
          nb::kw_only(), nb::arg("mode") = "none", nb::arg("amount") = 1.0,
          nb::arg("distribution") = "uniform", nb::arg("degree_power") = 0.75,
          nb::arg("weights").none() = nb::none(), nb::arg("reject_existing") = false,
          nb::arg("max_draws") = 16, nb::arg("exclude_edges") = false,
          nb::arg("undirected") = false, nb::arg("node_attrs") = NamedRows{},
          nb::arg("edge_attrs") = NamedRows{},
          "A link loader over a graph, optional features / labels and supervision edges "
          "edge_label_index [2, M] (int64) with optional labels [M].")
      .def("__init__", &typed_link_loader_init<HeteroNeighborSampler>, nb::arg("sampler"),
           nb::arg("edge_type"), nb::arg("edge_label_index"), nb::arg("edge_label").none(),
           nb::arg("options"), nb::arg("negatives").none(), nb::kw_only(), nb::arg("mode") = "none",
           nb::arg("amount") = 1.0, nb::arg("exclude_edges") = false, nb::arg("undirected") = false,
           nb::arg("node_attrs") = std::vector<NamedRows>{},
           nb::arg("edge_attrs") = std::vector<NamedRows>{},
           "A link loader over a typed graph: supervision edges of one edge type, sampled by a "
           "HeteroNeighborSampler, negatives from NegativeSampler.for_edge_type.")
      .def("__init__", &typed_link_loader_init<const TypedBatchSource>, nb::arg("sampler"),
           nb::arg("edge_type"), nb::arg("edge_label_index"), nb::arg("edge_label").none(),
           nb::arg("options"), nb::arg("negatives").none(), nb::kw_only(), nb::arg("mode") = "none",
           nb::arg("amount") = 1.0, nb::arg("exclude_edges") = false, nb::arg("undirected") = false,
           nb::arg("node_attrs") = std::vector<NamedRows>{},
           nb::arg("edge_attrs") = std::vector<NamedRows>{},
           "The same over any TypedBatchSource (e.g. a DistHeteroSource).")
      .def_prop_ro("num_batches", &LinkLoader::num_batches)
      .def_prop_ro("num_inputs", &LinkLoader::num_inputs)
      .def(
          "epoch_positions",
          [](const LinkLoader& loader, int64_t epoch) {
            return array_to_python(loader.epoch_positions(epoch));
          },
          nb::arg("epoch"), "Positions into the supervision edges this rank visits in `epoch`.")
      .def("start_epoch", &LinkLoader::start_epoch, nb::arg("epoch"), nb::arg("first_batch") = 0,
           nb::call_guard<nb::gil_scoped_release>(),
           "Start an epoch (from batch `first_batch`: a resumed one); workers begin at once.");
}

// A LinkLoader over any BatchSource (volley.dist.DistLinkNeighborLoader passes a DistGraph).
void bind_link_loader_over_source(nb::module_& m) {
  m.def(
      "link_loader_over_source",
      [](std::shared_ptr<const BatchSource> source, const InputArray& edge_label_index,
         const std::optional<InputArray>& edge_label, LoaderOptions options,
         const std::string& mode, double amount, const std::string& distribution,
         double degree_power, const std::optional<InputArray>& weights, bool reject_existing,
         int max_draws, bool exclude_edges, bool undirected) {
        LinkLoaderOptions link{.loader = std::move(options),
                               .negatives = {.mode = parse_mode(mode),
                                             .amount = amount,
                                             .distribution = parse_distribution(distribution),
                                             .degree_power = degree_power,
                                             .weights = weights_from_python(weights),
                                             .reject_existing = reject_existing,
                                             .max_draws = max_draws},
                               .exclude_edges = exclude_edges,
                               .undirected = undirected};
        Array index = array_from_python(edge_label_index, "edge_label_index");
        auto label_array = array_from_python(edge_label, "edge_label");
        nb::gil_scoped_release release;
        return std::make_unique<LinkLoader>(std::move(source), std::move(index),
                                            std::move(label_array), std::move(link));
      },
      nb::arg("source"), nb::arg("edge_label_index"), nb::arg("edge_label").none(),
      nb::arg("options"), nb::kw_only(), nb::arg("mode") = "none", nb::arg("amount") = 1.0,
      nb::arg("distribution") = "uniform", nb::arg("degree_power") = 0.75,
      nb::arg("weights").none() = nb::none(), nb::arg("reject_existing") = false,
      nb::arg("max_draws") = 16, nb::arg("exclude_edges") = false, nb::arg("undirected") = false,
      "A LinkLoader over any BatchSource (e.g. a DistGraph: negatives drawn here, edges checked "
      "by their owners).");
}

}  // namespace

void bind_link(nb::module_& m) {
  bind_link_loader(m);
  bind_link_loader_over_source(m);
  nb::class_<NegativeSampler>(m, "NegativeSampler",
                              "Seeded negative sampling (sampling/negative_sampler.h).")
      .def(nb::new_(&make_sampler), nb::arg("graph"), nb::arg("distribution"),
           nb::arg("degree_power"), nb::arg("weights").none(), nb::arg("reject_existing"),
           nb::arg("max_draws"), nb::arg("seed"))
      .def_static("for_edge_type", &make_typed_sampler, nb::arg("graph"), nb::arg("edge_type"),
                  nb::arg("distribution"), nb::arg("degree_power"), nb::arg("src_weights").none(),
                  nb::arg("dst_weights").none(), nb::arg("src_time").none(),
                  nb::arg("dst_time").none(), nb::arg("reject_existing"), nb::arg("max_draws"),
                  nb::arg("seed"), "The sampler of one edge type of a HeteroGraph.")
      .def_static("for_ends", &make_counted_sampler, nb::arg("num_sources"),
                  nb::arg("num_destinations"), nb::arg("src_weights").none(),
                  nb::arg("dst_weights").none(), nb::arg("max_draws"), nb::arg("seed"),
                  "A typed sampler over two node counts (uniform, or by each end's weights).")
      .def(
          "sample_pairs",
          [](const NegativeSampler& self, int64_t count, uint64_t batch_index,
             const std::optional<InputArray>& time_bounds) {
            const std::vector<int64_t> bounds = bounds_from_python(time_bounds);
            NegativePairs pairs;
            {
              nb::gil_scoped_release release;
              pairs = self.sample_pairs(count, batch_index, bounds);
            }
            return nb::make_tuple(ids_to_python(pairs.src), ids_to_python(pairs.dst),
                                  pairs.kept_existing);
          },
          nb::arg("count"), nb::arg("batch_index"), nb::arg("time_bounds").none() = nb::none())
      .def(
          "sample_destinations",
          [](const NegativeSampler& self, const InputArray& sources, int64_t per_source,
             uint64_t batch_index, const std::optional<InputArray>& time_bounds) {
            const Array ids = host_ids_array(sources, "sources");
            const std::vector<int64_t> bounds = bounds_from_python(time_bounds);
            NegativeDestinations drawn;
            {
              nb::gil_scoped_release release;
              drawn =
                  self.sample_destinations(ids.span<int64_t>(), per_source, batch_index, bounds);
            }
            return nb::make_tuple(ids_to_python(drawn.dst), drawn.kept_existing);
          },
          nb::arg("sources"), nb::arg("per_source"), nb::arg("batch_index"),
          nb::arg("time_bounds").none() = nb::none())
      .def("reseeded", &NegativeSampler::reseeded, nb::arg("seed"))
      .def("has_edge", &NegativeSampler::has_edge, nb::arg("src"), nb::arg("dst"));

  m.def(
      "link_seeds",
      [](const std::vector<InputArray>& arrays) {
        std::vector<Array> ids;
        std::vector<std::span<const int64_t>> spans;
        for (size_t a = 0; a < arrays.size(); ++a) {
          ids.push_back(host_ids_array(arrays[a], fmt::format("id array {}", a)));
        }
        for (const Array& array : ids) spans.push_back(array.span<int64_t>());
        const LinkSeeds seeds = link_seeds(spans);
        nb::list local;
        for (const auto& one : seeds.local) local.append(ids_to_python(one));
        return nb::make_tuple(ids_to_python(seeds.nodes), local);
      },
      nb::arg("arrays"),
      "Sorted distinct ids of every array and each id's index in them (negative_sampler.h).");
}

}  // namespace volley::python
