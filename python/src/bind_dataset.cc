// python/src/bind_dataset.cc — Dataset and its directory format (python/volley/dataset.py wraps
// them).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "volley/graph/dataset.h"
#include "volley/graph/edge_split.h"

namespace volley::python {

namespace {

// A read-write property for an optional array field of Dataset: reads are zero-copy views,
// writes borrow the assigned Python array (zero-copy), None clears the field.
template <std::optional<Array> Dataset::*field>
void def_array_field(nb::class_<Dataset>& cls, const char* name, const char* doc) {
  cls.def_prop_rw(
      name, [](const Dataset& dataset) { return array_to_python(dataset.*field); },
      [name](Dataset& dataset, const std::optional<InputArray>& value) {
        dataset.*field = array_from_python(value, name);
      },
      nb::arg("value").none(), doc);
}

}  // namespace

void bind_dataset(nb::module_& m) {
  nb::class_<Dataset> dataset(m, "Dataset",
                              "A graph with its node data (see src/volley/graph/dataset.h).");
  dataset.def(nb::init<>())
      .def_rw("name", &Dataset::name)
      .def_rw("graph", &Dataset::graph)
      .def_rw("num_classes", &Dataset::num_classes);
  def_array_field<&Dataset::features>(dataset, "features", "[N, D] node features, or None.");
  def_array_field<&Dataset::labels>(dataset, "labels", "int64 [N] node labels, or None.");
  def_array_field<&Dataset::train_idx>(dataset, "train_idx", "int64 training node ids, or None.");
  def_array_field<&Dataset::val_idx>(dataset, "val_idx", "int64 validation node ids, or None.");
  def_array_field<&Dataset::test_idx>(dataset, "test_idx", "int64 test node ids, or None.");
  def_array_field<&Dataset::train_edges>(dataset, "train_edges",
                                         "int64 [2, M] training supervision pairs, or None.");
  def_array_field<&Dataset::val_edges>(dataset, "val_edges",
                                       "int64 [2, M] validation pairs, or None.");
  def_array_field<&Dataset::test_edges>(dataset, "test_edges", "int64 [2, M] test pairs, or None.");
  def_array_field<&Dataset::val_neg_edges>(dataset, "val_neg_edges",
                                           "int64 [2, M] validation negatives, or None.");
  def_array_field<&Dataset::test_neg_edges>(dataset, "test_neg_edges",
                                            "int64 [2, M] test negatives, or None.");

  m.def(
      "load_dataset",
      [](const std::string& directory, bool memory_map, bool verify_checksums,
         bool validate_graph) {
        DatasetLoadOptions options;
        options.memory_map = memory_map;
        options.verify_checksums = verify_checksums;
        options.validate_graph = validate_graph;
        return load_dataset(directory, options);
      },
      nb::arg("directory"), nb::kw_only(), nb::arg("memory_map") = true,
      nb::arg("verify_checksums") = false, nb::arg("validate_graph") = true,
      nb::call_guard<nb::gil_scoped_release>(), "Reads a dataset directory.");
  m.def("save_dataset", &save_dataset, nb::arg("dataset"), nb::arg("directory"),
        nb::call_guard<nb::gil_scoped_release>(), "Writes a dataset directory.");
  m.def(
      "verify_dataset",
      [](const std::string& directory) { return verify_dataset(directory).problems; },
      nb::arg("directory"), nb::call_guard<nb::gil_scoped_release>(),
      "Checks every file of a dataset directory (checksums included); returns the problems.");
  auto summary_dict = [](const EdgeSplitSummary& s) {
    nb::dict out;
    out["num_units"] = s.num_units;
    out["num_train"] = s.num_train;
    out["num_val"] = s.num_val;
    out["num_test"] = s.num_test;
    out["num_val_neg"] = s.num_val_neg;
    out["num_test_neg"] = s.num_test_neg;
    out["num_train_graph_edges"] = s.num_train_graph_edges;
    return out;
  };
  m.def(
      "split_edges",
      [summary_dict](nb::object source, const std::string& output, double val, double test,
                     bool undirected, uint64_t seed, double neg_ratio) {
        const EdgeSplitOptions options{val, test, undirected, seed, neg_ratio};
        EdgeSplitSummary summary;
        if (nb::isinstance<Dataset>(source)) {
          const Dataset& dataset = nb::cast<const Dataset&>(source);
          nb::gil_scoped_release release;
          summary = split_edges(dataset, output, options);
        } else {
          const std::string input = nb::cast<std::string>(source);
          nb::gil_scoped_release release;
          summary = split_edges(input, output, options);
        }
        return summary_dict(summary);
      },
      nb::arg("source"), nb::arg("output"), nb::kw_only(), nb::arg("val"), nb::arg("test"),
      nb::arg("undirected"), nb::arg("seed"), nb::arg("neg_ratio"),
      "Splits a dataset's edges for link prediction (graph/edge_split.h).");
  m.def("is_dataset_directory", &is_dataset_directory, nb::arg("path"),
        "Whether `path` holds a volley.json.");
}

}  // namespace volley::python
