// python/src/bind_link.cc — link prediction: negative sampling and the seed set of a link batch
// (volley/sampling/negative_sampler.h). Results are new numpy arrays (int64).
#include <string>
#include <vector>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
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

}  // namespace

void bind_link(nb::module_& m) {
  nb::class_<NegativeSampler>(m, "NegativeSampler",
                              "Seeded negative sampling (sampling/negative_sampler.h).")
      .def(nb::new_(&make_sampler), nb::arg("graph"), nb::arg("distribution"),
           nb::arg("degree_power"), nb::arg("weights").none(), nb::arg("reject_existing"),
           nb::arg("max_draws"), nb::arg("seed"))
      .def(
          "sample_pairs",
          [](const NegativeSampler& self, int64_t count, uint64_t batch_index) {
            NegativePairs pairs;
            {
              nb::gil_scoped_release release;
              pairs = self.sample_pairs(count, batch_index);
            }
            return nb::make_tuple(ids_to_python(pairs.src), ids_to_python(pairs.dst),
                                  pairs.kept_existing);
          },
          nb::arg("count"), nb::arg("batch_index"))
      .def(
          "sample_destinations",
          [](const NegativeSampler& self, const InputArray& sources, int64_t per_source,
             uint64_t batch_index) {
            const Array ids = host_ids_array(sources, "sources");
            NegativeDestinations drawn;
            {
              nb::gil_scoped_release release;
              drawn = self.sample_destinations(ids.span<int64_t>(), per_source, batch_index);
            }
            return nb::make_tuple(ids_to_python(drawn.dst), drawn.kept_existing);
          },
          nb::arg("sources"), nb::arg("per_source"), nb::arg("batch_index"))
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
