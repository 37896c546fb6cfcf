// python/src/bind_partition.cc — partitioners, the partition book and partitioned datasets
// (python/volley/partition.py wraps them).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "volley/partition/hetero_partition.h"
#include "volley/partition/partition.h"

namespace volley::python {

namespace {

nb::object optional_float(const std::optional<double>& value) {
  return value ? nb::cast(*value) : nb::none();
}

nb::dict quality_dict(const PartitionQuality& quality) {
  nb::dict d;
  d["edge_cut_fraction"] = quality.edge_cut_fraction;
  d["cut_edges"] = quality.cut_edges;
  d["node_balance"] = quality.node_balance;
  d["edge_balance"] = quality.edge_balance;
  d["train_balance"] = quality.train_balance;
  d["remote_access_fraction"] = optional_float(quality.remote_access_fraction);
  d["remote_access_fraction_cached"] = optional_float(quality.remote_access_fraction_cached);
  d["metis_remote_access_fraction"] = optional_float(quality.metis_remote_access_fraction);
  d["random_remote_access_fraction"] = optional_float(quality.random_remote_access_fraction);
  return d;
}

nb::dict result_dict(const PartitionResult& result) {
  nb::dict d;
  d["offsets"] = nb::cast(result.book.offsets());
  d["part_nodes"] = nb::cast(result.part_nodes);
  d["part_edges"] = nb::cast(result.part_edges);
  d["part_train"] = nb::cast(result.part_train);
  d["part_cached"] = nb::cast(result.part_cached);
  d["quality"] = quality_dict(result.quality);
  d["seconds"] = result.seconds;
  d["assign_seconds"] = result.assign_seconds;
  return d;
}

PartitionOptions make_options(const std::string& method, int64_t num_parts, double tolerance,
                              uint64_t seed, const std::vector<int64_t>& fanouts,
                              int64_t batch_size, int64_t cache_bytes, bool simulate_epoch) {
  PartitionOptions options;
  options.method = partition_method_from_name(method);
  options.num_parts = num_parts;
  options.balance_tolerance = tolerance;
  options.seed = seed;
  options.fanouts = fanouts;
  options.batch_size = batch_size;
  options.cache_bytes = cache_bytes;
  options.simulate_epoch = simulate_epoch;
  return options;
}

}  // namespace

// A heterogeneous run as a dict keyed by node / edge type (hetero_partition.h).
nb::dict hetero_result_dict(const HeteroPartitionResult& result, const HeteroGraph& graph) {
  nb::dict books, balance, cut_per_type, quality, d;
  for (int t = 0; t < graph.num_node_types(); ++t) {
    const std::string& name = graph.node_types()[static_cast<size_t>(t)].name;
    books[name.c_str()] = nb::cast(result.books[static_cast<size_t>(t)].offsets());
    balance[name.c_str()] = result.quality.node_balance[static_cast<size_t>(t)];
  }
  for (int r = 0; r < graph.num_edge_types(); ++r) {
    const EdgeType& type = graph.edge_types()[static_cast<size_t>(r)];
    cut_per_type[nb::make_tuple(type.src, type.relation, type.dst)] =
        result.quality.cut_edges_per_type[static_cast<size_t>(r)];
  }
  quality["edge_cut_fraction"] = result.quality.edge_cut_fraction;
  quality["cut_edges"] = result.quality.cut_edges;
  quality["cut_edges_per_type"] = cut_per_type;
  quality["node_balance"] = balance;
  quality["edge_balance"] = result.quality.edge_balance;
  d["offsets"] = books;
  d["part_edges"] = nb::cast(result.part_edges);
  d["quality"] = quality;
  d["seconds"] = result.seconds;
  d["assign_seconds"] = result.assign_seconds;
  return d;
}

// One partitioning run of either kind, as a dict (`offsets` a list, or {node type: list}).
nb::dict run_partition(const Dataset& dataset, const std::string& output,
                       const PartitionOptions& options) {
  PartitionResult result;
  {
    nb::gil_scoped_release release;
    result = partition_dataset(dataset, output, options);
  }
  return result_dict(result);
}
nb::dict run_partition(const HeteroDataset& dataset, const std::string& output,
                       const PartitionOptions& options) {
  HeteroPartitionResult result;
  {
    nb::gil_scoped_release release;
    result = partition_hetero_dataset(dataset, output, options);
  }
  return hetero_result_dict(result, dataset.graph);
}
// A dataset directory of either kind (the kind read from its manifest).
nb::dict run_partition(const std::string& input, const std::string& output,
                       const PartitionOptions& options) {
  if (!is_hetero_dataset_directory(input)) {
    PartitionResult result;
    {
      nb::gil_scoped_release release;
      result = partition_dataset(input, output, options);
    }
    return result_dict(result);
  }
  HeteroDataset dataset;
  {
    nb::gil_scoped_release release;
    validate_partition_options(options);
    dataset = load_hetero_dataset(input, {.memory_map = true, .validate_graph = true});
  }
  return run_partition(dataset, output, options);
}

// partition_dataset over a dataset directory, a Dataset or a HeteroDataset: one binding.
template <typename Input>
void def_partition(nb::module_& m, const char* name, const char* input_name, const char* doc) {
  m.def(
      name,
      [](const Input& input, const std::string& output, int64_t num_parts,
         const std::string& method, double tolerance, uint64_t seed,
         const std::vector<int64_t>& fanouts, int64_t batch_size, int64_t cache_bytes,
         bool simulate_epoch) {
        return run_partition(input, output,
                             make_options(method, num_parts, tolerance, seed, fanouts, batch_size,
                                          cache_bytes, simulate_epoch));
      },
      nb::arg(input_name), nb::arg("output"), nb::arg("num_parts"), nb::kw_only(),
      nb::arg("method") = "metis", nb::arg("balance_tolerance") = 0.05, nb::arg("seed") = 0,
      nb::arg("fanouts") = std::vector<int64_t>{15, 10, 5}, nb::arg("batch_size") = 1024,
      nb::arg("cache_bytes") = 0, nb::arg("simulate_epoch") = false, doc);
}

// PartitionBook, Partition and HeteroPartition.
static void bind_partition_classes(nb::module_& m) {
  nb::class_<PartitionBook>(m, "PartitionBook",
                            "Which partition owns a new node id (see partition_book.h).")
      .def(nb::init<std::vector<int64_t>>(), nb::arg("offsets"))
      .def_prop_ro("num_parts", &PartitionBook::num_parts)
      .def_prop_ro("num_nodes", &PartitionBook::num_nodes)
      .def_prop_ro("offsets", &PartitionBook::offsets)
      .def("begin", &PartitionBook::begin, nb::arg("part"))
      .def("end", &PartitionBook::end, nb::arg("part"))
      .def("size", &PartitionBook::size, nb::arg("part"))
      .def("owner_of", nb::overload_cast<int64_t>(&PartitionBook::owner_of, nb::const_),
           nb::arg("node"))
      .def(
          "owner_of_array",
          [](const PartitionBook& book, const InputArray& nodes) {
            const Array ids = array_from_python(nodes, "node ids").cast(DType::kInt64);
            Array owners = Array::empty(DType::kInt64, {ids.numel()});
            {
              nb::gil_scoped_release release;
              book.owner_of(ids.span<int64_t>(),
                            {owners.data<int64_t>(), static_cast<size_t>(owners.numel())});
            }
            return array_to_python(owners);
          },
          nb::arg("nodes"), "owner_of for an integer array of new ids (int64 array out).")
      .def("__eq__", [](const PartitionBook& a, const PartitionBook& b) { return a == b; });

  nb::class_<Partition>(m, "Partition", "One partition of a partitioned dataset.")
      .def_ro("part", &Partition::part)
      .def_ro("book", &Partition::book)
      .def_ro("data", &Partition::data)
      .def_prop_ro("first_node", &Partition::first_node)
      .def_prop_ro("cache_ids",
                   [](const Partition& partition) { return array_to_python(partition.cache_ids); })
      .def_prop_ro("cache_features", [](const Partition& partition) {
        return array_to_python(partition.cache_features);
      });
  nb::class_<HeteroPartition>(m, "HeteroPartition",
                              "One partition of a heterogeneous partitioned dataset.")
      .def_ro("part", &HeteroPartition::part)
      .def_prop_ro("data", [](const HeteroPartition& p) { return p.data; })
      .def_prop_ro("books", [](const HeteroPartition& p) {
        nb::dict books;
        for (size_t t = 0; t < p.manifest.node_types.size(); ++t) {
          books[p.manifest.node_types[t].name.c_str()] = nb::cast(p.manifest.books[t]);
        }
        return books;
      });
}

// Partitioning: metis_available, partition_dataset(_in_memory), assign_partitions.
static void bind_partitioners(nb::module_& m) {
  m.def("metis_available", &metis_available,
        "Whether this build has METIS (the metis and hotness methods need it).");
  def_partition<std::string>(
      m, "partition_dataset", "input",
      "Partitions the dataset directory `input` (either kind) into the directory `output`.");
  def_partition<Dataset>(m, "partition_dataset_in_memory", "dataset",
                         "Partitions an in-memory Dataset into the directory `output`.");
  def_partition<HeteroDataset>(m, "partition_dataset_in_memory", "dataset",
                               "Partitions an in-memory HeteroDataset into `output`.");
  m.def(
      "assign_partitions",
      [](const Dataset& dataset, int64_t num_parts, const std::string& method, double tolerance,
         uint64_t seed, const std::vector<int64_t>& fanouts, int64_t batch_size) {
        const PartitionOptions options =
            make_options(method, num_parts, tolerance, seed, fanouts, batch_size, 0, false);
        Array assignment;
        {
          nb::gil_scoped_release release;
          assignment = assign_partitions(dataset, options);
        }
        return array_to_python(assignment);
      },
      nb::arg("dataset"), nb::arg("num_parts"), nb::kw_only(), nb::arg("method") = "metis",
      nb::arg("balance_tolerance") = 0.05, nb::arg("seed") = 0,
      nb::arg("fanouts") = std::vector<int64_t>{15, 10, 5}, nb::arg("batch_size") = 1024,
      "The partition of each node (int32 [N]); nothing written.");
}

// Reading a partitioned dataset: partitions, manifest, node map, verification.
static void bind_partition_readers(nb::module_& m) {
  m.def(
      "load_partition",
      [](const std::string& directory, int64_t part, bool memory_map, bool verify_checksums,
         bool validate_graph) -> nb::object {
        const PartitionLoadOptions options{.memory_map = memory_map,
                                           .verify_checksums = verify_checksums,
                                           .validate_graph = validate_graph};
        if (is_hetero_partitioned_directory(directory)) {
          HeteroPartition typed;
          {
            nb::gil_scoped_release release;
            typed = load_hetero_partition(directory, part, options);
          }
          return nb::cast(std::move(typed));
        }
        Partition partition;
        {
          nb::gil_scoped_release release;
          partition = load_partition(directory, part, options);
        }
        return nb::cast(std::move(partition));
      },
      nb::arg("directory"), nb::arg("part"), nb::kw_only(), nb::arg("memory_map") = true,
      nb::arg("verify_checksums") = false, nb::arg("validate_graph") = true,
      "Loads one partition: a Partition, or a HeteroPartition of a heterogeneous directory.");
  m.def("partition_manifest_json", &read_partition_manifest_text, nb::arg("directory"),
        nb::call_guard<nb::gil_scoped_release>(),
        "partition.json of a partitioned dataset of either kind (checked), as text.");
  m.def(
      "load_node_map",
      [](const std::string& directory, const std::string& node_type, bool verify_checksums) {
        Array map;
        {
          nb::gil_scoped_release release;
          map = load_node_map(directory, node_type, verify_checksums);
        }
        return array_to_python(map);
      },
      nb::arg("directory"), nb::arg("node_type") = "", nb::kw_only(),
      nb::arg("verify_checksums") = false,
      "The node map of `node_type` (\"\": the only one): int64 [N_T], old id -> new id.");
  m.def(
      "invert_node_map",
      [](const InputArray& node_map) {
        const Array map = array_from_python(node_map, "node map");
        Array inverse;
        {
          nb::gil_scoped_release release;
          inverse = invert_node_map(map);
        }
        return array_to_python(inverse);
      },
      nb::arg("node_map"), "new id -> old id.");
  m.def("verify_partitioned_dataset", &verify_partitioned_dataset, nb::arg("directory"),
        nb::call_guard<nb::gil_scoped_release>(),
        "Checks every file of a partitioned dataset of either kind; returns the problems.");
  m.def("is_partitioned_directory", &is_partitioned_directory, nb::arg("path"));
  m.def("is_hetero_partitioned_directory", &is_hetero_partitioned_directory, nb::arg("path"));
}

void bind_partition(nb::module_& m) {
  bind_partition_classes(m);
  bind_partitioners(m);
  bind_partition_readers(m);
}

}  // namespace volley::python
