// `volley info PATH [--json] [--verify]`
// Describes a dataset directory (counts, dtypes, split, degree statistics), an .npz archive (its
// members) or an .npy file (its header). --json prints one JSON object instead of text;
// --verify checks a dataset's files and checksums and exits non-zero listing the problems.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "text.h"
#include "volley/core/buffer.h"
#include "volley/core/files.h"
#include "volley/feature/feature_store.h"
#include "volley/graph/dataset.h"
#include "volley/graph/hetero_dataset.h"
#include "volley/graph/io/npy.h"
#include "volley/graph/io/npz.h"

namespace volley::cli {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

std::string shape_text(const std::vector<int64_t>& shape) {
  std::vector<std::string> parts;
  for (int64_t extent : shape) parts.push_back(grouped(extent));
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

DegreeStats stats_of(const std::vector<int64_t>& degrees, int64_t num_edges) {
  DegreeStats stats;
  if (degrees.empty()) return stats;
  const auto [low, high] = std::minmax_element(degrees.begin(), degrees.end());
  stats.min = *low;
  stats.max = *high;
  stats.mean = static_cast<double>(num_edges) / static_cast<double>(degrees.size());
  return stats;
}

Json degree_json(const DegreeStats& stats) {
  return {{"min", stats.min}, {"mean", stats.mean}, {"max", stats.max}};
}

std::string degree_text(const DegreeStats& stats) {
  return fmt::format("min {}, mean {:.2f}, max {}", grouped(stats.min), stats.mean,
                     grouped(stats.max));
}

void print_json(const Json& json) { std::printf("%s\n", json.dump().c_str()); }

// Temporal sampling's times: present, and whether every row is sorted by them.
void add_time_json(const Csr& graph, Json& json) {
  json["node_time"] = graph.has_node_time();
  json["edge_time"] = graph.has_edge_time();
  json["first_row_unsorted_by_time"] = {{"node", graph.first_row_unsorted_by_node_time()},
                                        {"edge", graph.first_row_unsorted_by_edge_time()}};
}

void print_time_lines(const Csr& graph) {
  const auto time_line = [](bool present, int64_t unsorted) {
    if (!present) return std::string("no");
    if (unsorted < 0) return std::string("yes (int64; every row sorted by it)");
    return fmt::format("yes (int64; row {} is the first not sorted by it)", unsorted);
  };
  std::printf("node time: %s\n",
              time_line(graph.has_node_time(), graph.first_row_unsorted_by_node_time()).c_str());
  std::printf("edge time: %s\n",
              time_line(graph.has_edge_time(), graph.first_row_unsorted_by_edge_time()).c_str());
}

// A link split (graph/edge_split.h): pairs per side of its [2, M] arrays; null without one.
int64_t pairs_of(const std::optional<Array>& edges) { return edges ? edges->dim(1) : 0; }

bool has_edge_split(const Dataset& d) { return d.train_edges || d.val_edges || d.test_edges; }

Json edge_split_json(const Dataset& d) {
  if (!has_edge_split(d)) return nullptr;
  return {{"train", pairs_of(d.train_edges)},
          {"val", pairs_of(d.val_edges)},
          {"test", pairs_of(d.test_edges)},
          {"val_neg", pairs_of(d.val_neg_edges)},
          {"test_neg", pairs_of(d.test_neg_edges)}};
}

void print_edge_split(const Dataset& d) {
  if (!has_edge_split(d)) return;
  std::printf("edge split: train %s, val %s, test %s pairs; negatives val %s, test %s\n",
              grouped(pairs_of(d.train_edges)).c_str(), grouped(pairs_of(d.val_edges)).c_str(),
              grouped(pairs_of(d.test_edges)).c_str(), grouped(pairs_of(d.val_neg_edges)).c_str(),
              grouped(pairs_of(d.test_neg_edges)).c_str());
}

// A dataset directory of either kind as types: a homogeneous one is the one-type case (one node
// type, one edge type over it, and its own extras: orientation, times, link split). Each node
// type's figures and each edge type's are printed by the same functions for both kinds.
struct DatasetView {
  std::string name;
  int64_t num_nodes = 0, num_edges = 0;  // of every type
  std::vector<NodeTypeInfo> node_types;
  std::vector<NodeTypeData> node_data;  // per node type
  std::vector<EdgeType> edge_types;
  std::vector<Csr> edges;            // per edge type
  std::vector<int64_t> num_sources;  // per edge type: its neighbor ids' count
  std::optional<Dataset> one_type;   // the homogeneous dataset itself
  bool typed() const { return !one_type; }
};

DatasetView load_view(const std::string& path) {
  DatasetView view;
  if (is_hetero_dataset_directory(path)) {
    HeteroDataset dataset = load_hetero_dataset(path);
    view.name = dataset.name;
    view.num_nodes = dataset.graph.total_nodes();
    view.num_edges = dataset.graph.total_edges();
    view.node_types = dataset.graph.node_types();
    view.node_data = std::move(dataset.node_data);
    view.edge_types = dataset.graph.edge_types();
    for (int e = 0; e < dataset.graph.num_edge_types(); ++e) {
      view.edges.push_back(dataset.graph.edges(e));
      view.num_sources.push_back(
          dataset.graph.num_nodes(view.edge_types[static_cast<size_t>(e)].src));
    }
    return view;
  }
  const Dataset& d = view.one_type.emplace(load_dataset(path));
  view.name = d.name;
  view.num_nodes = d.graph.num_nodes();
  view.num_edges = d.graph.num_edges();
  view.node_types = {{"", d.graph.num_nodes()}};
  view.node_data = {{d.features, d.labels, d.train_idx, d.val_idx, d.test_idx, d.num_classes}};
  view.edge_types = {{}};
  view.edges = {d.graph};
  view.num_sources = {d.graph.num_nodes()};
  return view;
}

// In- and out-degrees of an edge type (of a homogeneous graph: which of rows and columns is which).
std::pair<DegreeStats, DegreeStats> degree_stats(const Csr& graph, int64_t num_sources) {
  const auto [rows, columns] = row_column_degrees(graph, num_sources);
  if (graph.orientation() == Orientation::kIn) return {rows, columns};
  return {columns, rows};
}

bool has_split(const NodeTypeData& data) { return data.train_idx || data.val_idx || data.test_idx; }
int64_t split_size(const std::optional<Array>& ids) { return ids ? ids->numel() : 0; }

// A node type's features, classes, labels and split.
void add_node_json(const NodeTypeData& data, Json& json) {
  json["features"] = data.features ? Json{{"rows", data.features->dim(0)},
                                          {"width", data.features->dim(1)},
                                          {"dtype", dtype_name(data.features->dtype())}}
                                   : Json();
  json["num_classes"] = data.num_classes;
  json["labels"] = data.labels.has_value();
  json["split"] = has_split(data) ? Json{{"train", split_size(data.train_idx)},
                                         {"val", split_size(data.val_idx)},
                                         {"test", split_size(data.test_idx)}}
                                  : Json();
}

void print_features(const NodeTypeData& data, const char* indent) {
  if (!data.features) {
    std::printf("%sfeatures: none\n", indent);
    return;
  }
  std::printf("%sfeatures: %s x %s %s\n", indent, grouped(data.features->dim(0)).c_str(),
              grouped(data.features->dim(1)).c_str(),
              std::string(dtype_name(data.features->dtype())).c_str());
}

void print_classes_and_split(const NodeTypeData& data, const char* indent) {
  std::printf("%sclasses: %s%s\n", indent, grouped(data.num_classes).c_str(),
              data.labels ? "" : " (no labels)");
  if (!has_split(data)) {
    std::printf("%ssplit: none\n", indent);
    return;
  }
  std::printf(
      "%ssplit: train %s, val %s, test %s\n", indent, grouped(split_size(data.train_idx)).c_str(),
      grouped(split_size(data.val_idx)).c_str(), grouped(split_size(data.test_idx)).c_str());
}

// An edge type's stored arrays, then (add_degree_json, print_degrees) its degrees.
void add_storage_json(const Csr& graph, Json& json) {
  json["index_dtype"] = dtype_name(graph.index_dtype());
  json["edge_ids"] = graph.has_edge_ids();
  json["weights"] = graph.has_weights();
}

void print_storage(const Csr& graph, const char* indent) {
  std::printf("%sindex dtype: %s\n", indent, std::string(dtype_name(graph.index_dtype())).c_str());
  std::printf("%sedge ids: %s\n", indent, graph.has_edge_ids() ? "yes" : "no (CSR positions)");
  std::printf("%sweights: %s\n", indent, graph.has_weights() ? "yes (float32)" : "no");
}

void add_degree_json(const Csr& graph, int64_t num_sources, Json& json) {
  const auto [in_degree, out_degree] = degree_stats(graph, num_sources);
  json["in_degree"] = degree_json(in_degree);
  json["out_degree"] = degree_json(out_degree);
}

void print_degrees(const Csr& graph, int64_t num_sources, const char* indent) {
  const auto [in_degree, out_degree] = degree_stats(graph, num_sources);
  std::printf("%sin-degree: %s\n", indent, degree_text(in_degree).c_str());
  std::printf("%sout-degree: %s\n", indent, degree_text(out_degree).c_str());
}

// The JSON figures: a homogeneous dataset's at the top level, a typed one's per type.
void add_dataset_json(const DatasetView& view, Json& json) {
  json["name"] = view.name;
  json["num_nodes"] = view.num_nodes;
  json["num_edges"] = view.num_edges;
  if (view.typed()) {
    Json nodes = Json::array(), edges = Json::array();
    for (size_t t = 0; t < view.node_types.size(); ++t) {
      Json node = {{"name", view.node_types[t].name}, {"num_nodes", view.node_types[t].num_nodes}};
      add_node_json(view.node_data[t], node);
      nodes.push_back(node);
    }
    for (size_t e = 0; e < view.edges.size(); ++e) {
      const EdgeType& type = view.edge_types[e];
      Json edge = {{"name", type.name()},
                   {"src", type.src},
                   {"relation", type.relation},
                   {"dst", type.dst},
                   {"num_edges", view.edges[e].num_edges()}};
      add_storage_json(view.edges[e], edge);
      add_degree_json(view.edges[e], view.num_sources[e], edge);
      edges.push_back(edge);
    }
    json["node_types"] = nodes;
    json["edge_types"] = edges;
    return;
  }
  const Csr& graph = view.edges.front();
  json["orientation"] = orientation_name(graph.orientation());
  add_storage_json(graph, json);
  add_time_json(graph, json);
  add_node_json(view.node_data.front(), json);
  json["edge_split"] = edge_split_json(*view.one_type);
  add_degree_json(graph, view.num_sources.front(), json);
  json["disk_io"] = disk_io_support();
}

// The text: a homogeneous dataset's figures one per line, a typed one's the same lines per type.
void print_dataset(const DatasetView& view, const std::string& path) {
  if (view.typed()) {
    std::printf("heterogeneous dataset: %s (%s)\n", view.name.c_str(), path.c_str());
    std::printf("nodes: %s in %zu types; edges: %s in %zu types\n", grouped(view.num_nodes).c_str(),
                view.node_types.size(), grouped(view.num_edges).c_str(), view.edges.size());
    for (size_t t = 0; t < view.node_types.size(); ++t) {
      std::printf("node type %s: %s nodes\n", view.node_types[t].name.c_str(),
                  grouped(view.node_types[t].num_nodes).c_str());
      print_features(view.node_data[t], "  ");
      print_classes_and_split(view.node_data[t], "  ");
    }
    for (size_t e = 0; e < view.edges.size(); ++e) {
      std::printf("edge type %s: %s edges (in-neighbor CSR over %s)\n",
                  view.edge_types[e].name().c_str(), grouped(view.edges[e].num_edges()).c_str(),
                  view.edge_types[e].dst.c_str());
      print_storage(view.edges[e], "  ");
      print_degrees(view.edges[e], view.num_sources[e], "  ");
    }
    return;
  }
  const Csr& graph = view.edges.front();
  std::printf("dataset: %s (%s)\n", view.name.c_str(), path.c_str());
  std::printf("nodes: %s\n", grouped(graph.num_nodes()).c_str());
  std::printf("edges: %s\n", grouped(graph.num_edges()).c_str());
  std::printf("orientation: %s (row v lists the %s)\n",
              std::string(orientation_name(graph.orientation())).c_str(),
              graph.orientation() == Orientation::kIn ? "sources of edges into v"
                                                      : "targets of edges out of v");
  print_storage(graph, "");
  print_time_lines(graph);
  print_features(view.node_data.front(), "");
  // How a feature disk tier would read here (feature_store.h: past half the RAM).
  std::printf("disk reads: %s\n", disk_io_support().c_str());
  print_classes_and_split(view.node_data.front(), "");
  print_edge_split(*view.one_type);
  print_degrees(graph, view.num_sources.front(), "");
}

// `volley info` on a dataset directory of either kind.
void describe_dataset(const std::string& path, bool as_json, bool verify) {
  const bool typed = is_hetero_dataset_directory(path);
  Json json = {{"path", path}, {"kind", typed ? "hetero_dataset" : "dataset"}};
  if (verify) {
    report_problems_or_throw(
        path, (typed ? verify_hetero_dataset(path) : verify_dataset(path)).problems, as_json, json);
  }
  const DatasetView view = load_view(path);
  if (as_json) {
    add_dataset_json(view, json);
    if (verify) json["verify"] = {{"ok", true}, {"problems", Json::array()}};
    print_json(json);
    return;
  }
  print_dataset(view, path);
  if (verify) std::printf("verify: ok (every file matches volley.json, checksums included)\n");
}

// "float32" for a readable descr, else the descr itself ("<U7").
std::string dtype_of_descr(const NpyHeaderFields& fields, bool* readable) {
  const auto dtype = dtype_from_npy_descr(fields.descr);
  *readable = dtype.has_value() && !fields.fortran_order && !fields.structured;
  return dtype ? std::string(dtype_name(*dtype)) : fields.descr;
}

// Why an array whose header Volley reads still cannot be read: a shape whose byte size overflows,
// or data bytes other than the shape needs (a truncated file). Empty when it can be read.
std::string data_problem(const NpyHeaderFields& fields, size_t data_offset, uint64_t image_bytes,
                         const std::string& source) {
  const auto dtype = dtype_from_npy_descr(fields.descr);
  if (!dtype) return "";
  if (image_bytes < data_offset) return "truncated inside the header";
  const uint64_t found = image_bytes - data_offset;
  size_t needed = 0;
  try {
    needed = npy_data_bytes(NpyHeader{*dtype, fields.shape, data_offset}, source);
  } catch (const IoError&) {
    return fmt::format("impossible shape {}: its byte size overflows 64 bits",
                       shape_text(fields.shape));
  }
  if (found < needed) {
    return fmt::format("truncated: {} data bytes, the shape needs {}", found, needed);
  }
  if (found > needed) {
    return fmt::format("{} data bytes, the shape needs {} ({} extra)", found, needed,
                       found - needed);
  }
  return "";
}

// " (not readable by Volley)" or " (not readable by Volley: PROBLEM)" or "".
std::string unreadable_note(bool readable, const std::string& problem) {
  if (readable) return "";
  return problem.empty() ? " (not readable by Volley)"
                         : fmt::format(" (not readable by Volley: {})", problem);
}

void describe_npz(const std::string& path, bool as_json) {
  const NpzFile npz = NpzFile::open(path);
  Json members = Json::array();
  std::vector<std::string> lines;
  size_t width = 0;
  for (const auto& member : npz.members()) width = std::max(width, member.name.size());
  for (const auto& member : npz.members()) {
    size_t data_offset = 0;
    const NpyHeaderFields fields = npz.header_fields(member.file_name, &data_offset);
    bool readable = false;
    const std::string dtype = dtype_of_descr(fields, &readable);
    const std::string problem =
        readable ? data_problem(fields, data_offset, member.size, path + ":" + member.file_name)
                 : "";
    readable = readable && problem.empty();
    members.push_back({{"name", member.name},
                       {"dtype", dtype},
                       {"shape", fields.shape},
                       {"readable", readable},
                       {"problem", problem.empty() ? Json() : Json(problem)},
                       {"compression", member.deflated ? "deflated" : "stored"},
                       {"bytes", member.size},
                       {"compressed_bytes", member.compressed_size}});
    lines.push_back(fmt::format("  {:<{}}  {:<8} {:<16} {} {} bytes{}", member.name, width, dtype,
                                shape_text(fields.shape), member.deflated ? "deflated" : "stored",
                                grouped(static_cast<int64_t>(member.size)),
                                unreadable_note(readable, problem)));
  }
  if (as_json) {
    print_json({{"path", path}, {"kind", "npz"}, {"members", members}});
    return;
  }
  std::printf("npz: %s (%zu arrays)\n", path.c_str(), npz.members().size());
  for (const auto& line : lines) std::printf("%s\n", line.c_str());
}

void describe_npy(const std::string& path, bool as_json) {
  const Buffer file = Buffer::map_file(path);
  size_t data_offset = 0;
  const NpyHeaderFields fields =
      parse_npy_header_fields(file.data(), file.size(), &data_offset, path);
  bool readable = false;
  const std::string dtype = dtype_of_descr(fields, &readable);
  const std::string problem = readable ? data_problem(fields, data_offset, file.size(), path) : "";
  readable = readable && problem.empty();
  const auto data_bytes =
      static_cast<int64_t>(file.size() > data_offset ? file.size() - data_offset : 0);
  if (as_json) {
    print_json({{"path", path},
                {"kind", "npy"},
                {"dtype", dtype},
                {"shape", fields.shape},
                {"fortran_order", fields.fortran_order},
                {"readable", readable},
                {"problem", problem.empty() ? Json() : Json(problem)},
                {"data_bytes", data_bytes}});
    return;
  }
  std::printf("npy: %s\n", path.c_str());
  std::printf("dtype: %s%s\n", dtype.c_str(), unreadable_note(readable, problem).c_str());
  std::printf("shape: %s\n", shape_text(fields.shape).c_str());
  std::printf("data bytes: %s\n", grouped(data_bytes).c_str());
}

}  // namespace

std::pair<DegreeStats, DegreeStats> row_column_degrees(const Csr& graph, int64_t num_columns) {
  std::vector<int64_t> row_degree(static_cast<size_t>(graph.num_nodes()));
  std::vector<int64_t> column_degree(static_cast<size_t>(num_columns), 0);
  for (int64_t v = 0; v < graph.num_nodes(); ++v) {
    row_degree[static_cast<size_t>(v)] = graph.degree(v);
  }
  for (int64_t k = 0; k < graph.num_edges(); ++k) {
    ++column_degree[static_cast<size_t>(graph.neighbor(k))];
  }
  return {stats_of(row_degree, graph.num_edges()), stats_of(column_degree, graph.num_edges())};
}

void report_problems_or_throw(const std::string& path, const std::vector<std::string>& problems,
                              bool as_json, nlohmann::ordered_json& json) {
  if (problems.empty()) return;
  if (as_json) {
    json["verify"] = {{"ok", false}, {"problems", problems}};
    std::printf("%s\n", json.dump().c_str());
  } else {
    std::printf("verify: %zu problem%s\n", problems.size(), problems.size() == 1 ? "" : "s");
    for (const auto& problem : problems) std::printf("  %s\n", problem.c_str());
  }
  std::fflush(stdout);
  throw IoError(fmt::format("{}: verification failed: {} problem{} (first: {})", path,
                            problems.size(), problems.size() == 1 ? "" : "s", problems.front()));
}

void add_info_command(CLI::App& app, GlobalOptions& /*global*/) {
  struct Arguments {
    std::string path;
    bool json = false;
    bool verify = false;
  };
  auto arguments = std::make_shared<Arguments>();
  auto* command =
      app.add_subcommand("info", "Describe a dataset directory, an .npz archive or an .npy file");
  command->add_option("path", arguments->path, "Dataset directory, .npz or .npy file")->required();
  command->add_flag("--json", arguments->json, "Print one JSON object instead of text");
  command->add_flag("--verify", arguments->verify,
                    "Check every file and checksum of a dataset; exit non-zero on a problem");
  command->callback([arguments] {
    const std::string& path = arguments->path;
    if (describe_partitioned(path, arguments->json, arguments->verify)) return;
    std::error_code error;
    if (!fs::exists(path, error)) {
      throw IoError(fmt::format("{}: no such file or directory", path));
    }
    if (fs::is_directory(path, error)) {
      if (!is_dataset_directory(path)) {
        throw IoError(
            fmt::format("{}: not a Volley dataset directory (it has no volley.json)", path));
      }
      describe_dataset(path, arguments->json, arguments->verify);
      return;
    }
    VOLLEY_REQUIRE(!arguments->verify, ValueError,
                   "--verify checks dataset directories; '{}' is a file", path);
    require_regular_file(path, path.ends_with(".npz") ? ".npz archive" : ".npy file");
    if (path.ends_with(".npz")) {
      describe_npz(path, arguments->json);
    } else if (path.ends_with(".npy")) {
      describe_npy(path, arguments->json);
    } else {
      throw ValueError(fmt::format(
          "{}: expected a dataset directory, an .npz or an .npy file (by extension)", path));
    }
  });
}

}  // namespace volley::cli
