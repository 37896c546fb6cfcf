// python/src/bind_hetero.cc — heterogeneous graphs, datasets and the hetero sampler
// (python/volley/hetero.py wraps them). Type names cross as str, edge types as (src, rel, dst)
// tuples; arrays zero-copy as everywhere (bindings.h).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "volley/graph/hetero_dataset.h"
#include "volley/graph/hetero_graph.h"
#include "volley/graph/io/hetero_edges.h"
#include "volley/sampling/hetero_sampler.h"

namespace volley::python {

namespace {

// Seed groups as the heterogeneous sampler takes them: `seeds` and `seed_times` (one optional
// array per group, or none) converted into `arrays` (kept alive by the caller), the groups
// viewing them.
std::vector<HeteroSeeds> hetero_seed_groups(
    const std::vector<std::pair<std::string, InputArray>>& seeds,
    const std::vector<std::optional<InputArray>>& seed_times, std::vector<Array>& arrays) {
  VOLLEY_REQUIRE(seed_times.empty() || seed_times.size() == seeds.size(), ValueError,
                 "seed_times: {} entries for {} seed groups (one per group, or none)",
                 seed_times.size(), seeds.size());
  arrays.clear();
  for (size_t i = 0; i < seeds.size(); ++i) {
    const std::string& type = seeds[i].first;
    arrays.push_back(host_ids_array(seeds[i].second, "seeds of node type " + type));
    const bool timed = i < seed_times.size() && seed_times[i].has_value();
    arrays.push_back(timed ? host_ids_array(*seed_times[i], "seed times of node type " + type)
                           : Array());
  }
  std::vector<HeteroSeeds> groups;
  for (size_t i = 0; i < seeds.size(); ++i) {
    groups.push_back({seeds[i].first, arrays[2 * i].span<int64_t>()});
    if (arrays[2 * i + 1].defined()) groups.back().times = arrays[2 * i + 1].span<int64_t>();
  }
  return groups;
}

using EdgeTuple = std::tuple<std::string, std::string, std::string>;

EdgeType edge_type_of(const EdgeTuple& tuple) {
  return {std::get<0>(tuple), std::get<1>(tuple), std::get<2>(tuple)};
}
EdgeTuple tuple_of(const EdgeType& type) { return {type.src, type.relation, type.dst}; }

nb::list array_list(std::vector<std::vector<int64_t>>& lists) {
  nb::list result;
  for (auto& list : lists) result.append(array_to_python(Array::from_vector(list)));
  return result;
}

void bind_hetero_graph(nb::module_& m) {
  nb::class_<HeteroGraph>(m, "HeteroGraph",
                          "Typed nodes and edges (see src/volley/graph/hetero_graph.h).")
      .def(
          "__init__",
          [](HeteroGraph* self, const std::vector<std::pair<std::string, int64_t>>& node_types,
             const std::vector<std::pair<EdgeTuple, Csr>>& edge_types, bool validate) {
            std::vector<NodeTypeInfo> nodes;
            for (const auto& [name, count] : node_types) nodes.push_back({name, count});
            std::vector<std::pair<EdgeType, Csr>> edges;
            for (const auto& [type, csr] : edge_types) edges.emplace_back(edge_type_of(type), csr);
            nb::gil_scoped_release release;
            new (self) HeteroGraph(std::move(nodes), std::move(edges), validate);
          },
          nb::arg("node_types"), nb::arg("edge_types"), nb::arg("validate") = true)
      .def_prop_ro("node_types",
                   [](const HeteroGraph& graph) {
                     std::vector<std::pair<std::string, int64_t>> result;
                     for (const auto& type : graph.node_types())
                       result.emplace_back(type.name, type.num_nodes);
                     return result;
                   })
      .def_prop_ro("edge_types",
                   [](const HeteroGraph& graph) {
                     std::vector<EdgeTuple> result;
                     for (const auto& type : graph.edge_types()) result.push_back(tuple_of(type));
                     return result;
                   })
      .def("num_nodes",
           [](const HeteroGraph& graph, const std::string& type) { return graph.num_nodes(type); })
      .def("edges", [](const HeteroGraph& graph, const EdgeTuple& type) {
        return graph.edges(edge_type_of(type));
      });
  m.def(
      "build_bipartite_csr",
      [](const InputArray& src, const InputArray& dst, int64_t num_src, int64_t num_dst,
         const std::optional<InputArray>& weights, const std::string& type) {
        Array src_array = array_from_python(src, "src");
        Array dst_array = array_from_python(dst, "dst");
        std::optional<Array> weight_array = array_from_python(weights, "edge weights");
        nb::gil_scoped_release release;
        return build_bipartite_csr(src_array, dst_array, num_src, num_dst, weight_array, type);
      },
      nb::arg("src"), nb::arg("dst"), nb::arg("num_src"), nb::arg("num_dst"),
      nb::arg("weights").none() = nb::none(), nb::arg("edge_type") = "");
}

template <std::optional<Array> NodeTypeData::*field>
void def_node_field(nb::class_<NodeTypeData>& cls, const char* name) {
  cls.def_prop_rw(
      name, [](const NodeTypeData& data) { return array_to_python(data.*field); },
      [name](NodeTypeData& data, const std::optional<InputArray>& value) {
        data.*field = array_from_python(value, name);
      },
      nb::arg("value").none());
}

void bind_hetero_dataset(nb::module_& m) {
  nb::class_<NodeTypeData> node_data(m, "NodeTypeData", "The node data of one node type.");
  node_data.def(nb::init<>()).def_rw("num_classes", &NodeTypeData::num_classes);
  def_node_field<&NodeTypeData::features>(node_data, "features");
  def_node_field<&NodeTypeData::labels>(node_data, "labels");
  def_node_field<&NodeTypeData::train_idx>(node_data, "train_idx");
  def_node_field<&NodeTypeData::val_idx>(node_data, "val_idx");
  def_node_field<&NodeTypeData::test_idx>(node_data, "test_idx");
  nb::class_<HeteroDataset>(m, "HeteroDatasetNative", "See src/volley/graph/hetero_dataset.h.")
      .def(nb::init<>())
      .def_rw("name", &HeteroDataset::name)
      .def_rw("graph", &HeteroDataset::graph)
      .def_rw("node_data", &HeteroDataset::node_data);
  m.def(
      "load_hetero_dataset",
      [](const std::string& directory, bool memory_map, bool verify_checksums) {
        DatasetLoadOptions options;
        options.memory_map = memory_map;
        options.verify_checksums = verify_checksums;
        return load_hetero_dataset(directory, options);
      },
      nb::arg("directory"), nb::kw_only(), nb::arg("memory_map") = true,
      nb::arg("verify_checksums") = false, nb::call_guard<nb::gil_scoped_release>());
  m.def("save_hetero_dataset", &save_hetero_dataset, nb::arg("dataset"), nb::arg("directory"),
        nb::call_guard<nb::gil_scoped_release>());
  m.def(
      "verify_hetero_dataset",
      [](const std::string& directory) { return verify_hetero_dataset(directory).problems; },
      nb::arg("directory"), nb::call_guard<nb::gil_scoped_release>());
  m.def("is_hetero_dataset_directory", &is_hetero_dataset_directory, nb::arg("path"));
  m.def("read_hetero_edge_directory", &read_hetero_edge_directory, nb::arg("directory"),
        nb::call_guard<nb::gil_scoped_release>());
}

using NodeTimes = std::vector<std::pair<std::string, InputArray>>;
using EdgeTimes = std::vector<std::pair<EdgeTuple, InputArray>>;

// The timestamps handed to the sampler (zero-copy; checked by attach_hetero_times). Needs the GIL.
HeteroTimes hetero_times(const NodeTimes& node_time, const EdgeTimes& edge_time) {
  HeteroTimes times;
  for (const auto& [type, time] : node_time) {
    times.node_time.emplace_back(type,
                                 array_from_python(time, "node time of node type '" + type + "'"));
  }
  for (const auto& [type, time] : edge_time) {
    const EdgeType edge_type = edge_type_of(type);
    times.edge_time.emplace_back(
        edge_type, array_from_python(time, "edge time of edge type " + edge_type.name()));
  }
  return times;
}

nb::dict hetero_subgraph_dict(HeteroSampledSubgraph& out) {
  nb::dict result;
  result["nodes"] = array_list(out.nodes);
  result["num_seeds"] = out.num_seeds;
  result["nodes_per_hop"] = out.nodes_per_hop;
  result["rows"] = array_list(out.rows);
  result["cols"] = array_list(out.cols);
  result["edge_ids"] = array_list(out.edge_ids);
  result["edges_per_hop"] = out.edges_per_hop;
  if (!out.batch.empty()) result["batch"] = array_list(out.batch);
  return result;
}

void bind_hetero_sampler(nb::module_& m) {
  nb::class_<HeteroNeighborSampler>(m, "HeteroNeighborSampler",
                                    "See src/volley/sampling/hetero_sampler.h.")
      .def(
          "__init__",
          [](HeteroNeighborSampler* self, nb::handle graph, HeteroSamplerOptions options,
             const NodeTimes& node_time, const EdgeTimes& edge_time) {
            HeteroTimes times = hetero_times(node_time, edge_time);
            if (nb::isinstance<CudaHeteroGraph>(graph)) {
              const auto& placed = nb::cast<const CudaHeteroGraph&>(graph);
              nb::gil_scoped_release release;
              new (self) HeteroNeighborSampler(placed, std::move(options), std::move(times));
              return;
            }
            if (!nb::isinstance<HeteroGraph>(graph))
              throw nb::type_error(("graph must be a HeteroGraph or a CudaHeteroGraph, got " +
                                    std::string(nb::type_name(graph.type()).c_str()))
                                       .c_str());
            const auto& host = nb::cast<const HeteroGraph&>(graph);
            nb::gil_scoped_release release;
            new (self) HeteroNeighborSampler(host, std::move(options), std::move(times));
          },
          nb::arg("graph"), nb::arg("options"), nb::arg("node_time") = NodeTimes{},
          nb::arg("edge_time") = EdgeTimes{},
          "CPU sampling over a host graph (HeteroGraph), or CUDA sampling over a placed one "
          "(CudaHeteroGraph; e.g. opened by handle; temporal: placed from attach_hetero_times, "
          "with the same times).")
      .def_prop_ro("on_cuda", &HeteroNeighborSampler::on_cuda)
      .def(
          "sample",
          [](HeteroNeighborSampler& sampler,
             const std::vector<std::pair<std::string, InputArray>>& seeds, uint64_t batch_index,
             const std::vector<std::optional<InputArray>>& seed_times,
             std::optional<uint64_t> seed) {
            std::vector<Array> arrays;
            const std::vector<HeteroSeeds> groups = hetero_seed_groups(seeds, seed_times, arrays);
            HeteroSampledSubgraph out;
            {
              nb::gil_scoped_release release;
              out = sampler.sample_with_seed(groups, seed.value_or(sampler.options().seed),
                                             batch_index);
            }
            return hetero_subgraph_dict(out);
          },
          nb::arg("seeds"), nb::arg("batch_index"),
          nb::arg("seed_times") = std::vector<std::optional<InputArray>>{},
          nb::arg("seed").none() = nb::none(),
          "One batch; `seed` (default: the sampler's) keys the random streams.");
}

}  // namespace

void bind_hetero(nb::module_& m) {
  bind_hetero_graph(m);
  bind_hetero_dataset(m);
  bind_hetero_sampler(m);
  m.def(
      "attach_hetero_times",
      [](const HeteroGraph& graph, const HeteroSamplerOptions& options, const NodeTimes& node_time,
         const EdgeTimes& edge_time) {
        HeteroTimes times = hetero_times(node_time, edge_time);
        nb::gil_scoped_release release;
        return attach_hetero_times(graph, options, times);
      },
      nb::arg("graph"), nb::arg("options"), nb::arg("node_time"), nb::arg("edge_time"),
      "The graph a temporal sampler reads (hetero_sampler.h): each timed edge type's entry "
      "times attached, its rows sorted by them; what a GPU sampler's graph is placed from.");
}

}  // namespace volley::python
