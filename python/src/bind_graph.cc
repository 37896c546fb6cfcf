// python/src/bind_graph.cc — Csr and build_csr (python/volley/graph.py wraps them as Graph).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>

#include "bindings.h"
#include "volley/graph/csr.h"
#include "volley/graph/split.h"

namespace volley::python {

namespace {

Orientation parse_orientation(std::string_view name) {
  if (name == "in") return Orientation::kIn;
  if (name == "out") return Orientation::kOut;
  throw ValueError(fmt::format("orientation must be \"in\" or \"out\", got \"{}\"", name));
}

// The Csr class.
void bind_csr_class(nb::module_& m) {
  nb::class_<Csr>(m, "Csr",
                  "An immutable graph in compressed sparse rows (see src/volley/graph/csr.h). "
                  "Array properties are zero-copy views that keep the graph's memory alive.")
      .def_static(
          "from_arrays",
          [](const InputArray& indptr, const InputArray& indices,
             const std::optional<InputArray>& edge_ids, const std::optional<InputArray>& weights,
             std::string_view orientation, bool validate) {
            Array indptr_array = array_from_python(indptr, "indptr");
            Array indices_array = array_from_python(indices, "indices");
            std::optional<Array> edge_id_array = array_from_python(edge_ids, "edge_ids");
            std::optional<Array> weight_array = array_from_python(weights, "weights");
            const Orientation parsed = parse_orientation(orientation);
            nb::gil_scoped_release release;
            return Csr::from_arrays(std::move(indptr_array), std::move(indices_array),
                                    std::move(edge_id_array), std::move(weight_array), parsed,
                                    validate);
          },
          nb::arg("indptr"), nb::arg("indices"), nb::arg("edge_ids").none() = nb::none(),
          nb::arg("weights").none() = nb::none(), nb::arg("orientation") = "in",
          nb::arg("validate") = true,
          "Wraps CSR arrays without copying; with validate, checks every contract (O(E)).")
      .def_prop_ro("num_nodes", &Csr::num_nodes)
      .def_prop_ro("num_edges", &Csr::num_edges)
      .def_prop_ro("orientation",
                   [](const Csr& csr) { return std::string(orientation_name(csr.orientation())); })
      .def_prop_ro("index_dtype",
                   [](const Csr& csr) { return std::string(dtype_name(csr.index_dtype())); })
      .def_prop_ro("indptr", [](const Csr& csr) { return array_to_python(csr.indptr()); })
      .def_prop_ro("indices", [](const Csr& csr) { return array_to_python(csr.indices()); })
      .def_prop_ro("edge_ids", [](const Csr& csr) { return array_to_python(csr.edge_ids()); })
      .def_prop_ro("weights", [](const Csr& csr) { return array_to_python(csr.weights()); })
      .def("transposed", &Csr::transposed, nb::call_guard<nb::gil_scoped_release>(),
           "The same edges in the other orientation (a new graph).")
      .def_prop_ro("node_time", [](const Csr& csr) { return array_to_python(csr.node_time()); })
      .def_prop_ro("edge_time", [](const Csr& csr) { return array_to_python(csr.edge_time()); })
      .def_prop_ro("first_row_unsorted_by_node_time", &Csr::first_row_unsorted_by_node_time)
      .def_prop_ro("first_row_unsorted_by_edge_time", &Csr::first_row_unsorted_by_edge_time)
      .def(
          "with_times",
          [](const Csr& csr, const std::optional<InputArray>& node_time,
             const std::optional<InputArray>& edge_time) {
            std::optional<Array> node = array_from_python(node_time, "node_time");
            std::optional<Array> edge = array_from_python(edge_time, "edge_time");
            nb::gil_scoped_release release;
            return csr.with_times(std::move(node), std::move(edge));
          },
          nb::arg("node_time").none() = nb::none(), nb::arg("edge_time").none() = nb::none(),
          "This graph with int64 node_time [N] / edge_time [E] (CSR order) attached.")
      .def(
          "sort_rows_by_time",
          [](const Csr& csr, std::string_view kind) {
            VOLLEY_REQUIRE(kind == "edge" || kind == "node", ValueError,
                           "kind must be 'edge' or 'node', got '{}'", kind);
            const TimeKind parsed = kind == "edge" ? TimeKind::kEdge : TimeKind::kNode;
            nb::gil_scoped_release release;
            return sort_rows_by_time(csr, parsed);
          },
          nb::arg("kind"), "Each row stably sorted by edge or neighbor node time (a new graph).");
}

// build_csr: a Csr from a COO edge list.
void bind_build_csr(nb::module_& m) {
  m.def(
      "build_csr",
      [](const InputArray& src, const InputArray& dst, const std::optional<InputArray>& weights,
         std::optional<int64_t> num_nodes, std::string_view orientation, bool symmetrize,
         bool drop_self_loops, bool drop_duplicates, bool keep_edge_ids, bool force_int64_indices) {
        Array src_array = array_from_python(src, "src");
        Array dst_array = array_from_python(dst, "dst");
        std::optional<Array> weight_array = array_from_python(weights, "edge weights");
        CsrBuildOptions options;
        options.num_nodes = num_nodes;
        options.orientation = parse_orientation(orientation);
        options.symmetrize = symmetrize;
        options.drop_self_loops = drop_self_loops;
        options.drop_duplicates = drop_duplicates;
        options.keep_edge_ids = keep_edge_ids;
        options.force_int64_indices = force_int64_indices;
        nb::gil_scoped_release release;
        return build_csr(src_array, dst_array, weight_array, options);
      },
      nb::arg("src"), nb::arg("dst"), nb::arg("weights").none() = nb::none(), nb::kw_only(),
      nb::arg("num_nodes").none() = nb::none(), nb::arg("orientation") = "in",
      nb::arg("symmetrize") = false, nb::arg("drop_self_loops") = false,
      nb::arg("drop_duplicates") = false, nb::arg("keep_edge_ids") = true,
      nb::arg("force_int64_indices") = false,
      "Builds a Csr from a COO edge list (edge i: src[i] -> dst[i]); see CsrBuildOptions.");
}

// planetoid_split and random_split.
void bind_splits(nb::module_& m) {
  // Splits (split.h) come back as a (train, val, test) tuple of int64 arrays.
  const auto split_to_python = [](const Split& split) {
    return nb::make_tuple(array_to_python(split.train), array_to_python(split.val),
                          array_to_python(split.test));
  };
  m.def(
      "planetoid_split",
      [split_to_python](const InputArray& labels, int64_t num_classes, int64_t per_class,
                        int64_t num_val, int64_t num_test, uint64_t seed) {
        Array label_array = array_from_python(labels, "labels");
        PlanetoidSplitOptions options;
        options.per_class = per_class;
        options.num_val = num_val;
        options.num_test = num_test;
        options.seed = seed;
        Split split;
        {
          nb::gil_scoped_release release;
          split = planetoid_split(label_array, num_classes, options);
        }
        return split_to_python(split);
      },
      nb::arg("labels"), nb::arg("num_classes"), nb::kw_only(), nb::arg("per_class") = 20,
      nb::arg("num_val") = 500, nb::arg("num_test") = 1000, nb::arg("seed") = 0,
      "Planetoid's random split: per_class training nodes per class, then num_val, num_test.");
  m.def(
      "random_split",
      [split_to_python](int64_t num_nodes, double train_fraction, double val_fraction,
                        uint64_t seed) {
        RandomSplitOptions options;
        options.train_fraction = train_fraction;
        options.val_fraction = val_fraction;
        options.seed = seed;
        Split split;
        {
          nb::gil_scoped_release release;
          split = random_split(num_nodes, options);
        }
        return split_to_python(split);
      },
      nb::arg("num_nodes"), nb::kw_only(), nb::arg("train_fraction") = 0.6,
      nb::arg("val_fraction") = 0.2, nb::arg("seed") = 0,
      "A uniform random split of the nodes into train / val / test.");
}

}  // namespace

void bind_graph(nb::module_& m) {
  bind_csr_class(m);
  bind_build_csr(m);
  bind_splits(m);
}

}  // namespace volley::python
