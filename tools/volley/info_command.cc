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

// In- and out-degrees of a homogeneous graph: which of rows and columns is which.
std::pair<DegreeStats, DegreeStats> degree_stats(const Csr& graph) {
  const auto [rows, columns] = row_column_degrees(graph, graph.num_nodes());
  if (graph.orientation() == Orientation::kIn) return {rows, columns};
  return {columns, rows};
}

Json degree_json(const DegreeStats& stats) {
  return {{"min", stats.min}, {"mean", stats.mean}, {"max", stats.max}};
}

std::string degree_text(const DegreeStats& stats) {
  return fmt::format("min {}, mean {:.2f}, max {}", grouped(stats.min), stats.mean,
                     grouped(stats.max));
}

void print_json(const Json& json) { std::printf("%s\n", json.dump().c_str()); }

// Verifies the dataset at `path`; on problems, prints them (into `json` when as_json) and
// throws IoError naming the first.
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

void describe_dataset(const std::string& path, bool as_json, bool verify) {
  Json json = {{"path", path}, {"kind", "dataset"}};
  if (verify) report_problems_or_throw(path, verify_dataset(path).problems, as_json, json);

  const Dataset dataset = load_dataset(path);
  const Csr& graph = dataset.graph;
  const auto [in_degree, out_degree] = degree_stats(graph);
  const bool has_split = dataset.train_idx || dataset.val_idx || dataset.test_idx;
  auto split_size = [](const std::optional<Array>& ids) { return ids ? ids->numel() : 0; };

  if (as_json) {
    json["name"] = dataset.name;
    json["num_nodes"] = graph.num_nodes();
    json["num_edges"] = graph.num_edges();
    json["orientation"] = orientation_name(graph.orientation());
    json["index_dtype"] = dtype_name(graph.index_dtype());
    json["edge_ids"] = graph.has_edge_ids();
    json["weights"] = graph.has_weights();
    add_time_json(graph, json);
    if (dataset.features) {
      json["features"] = {{"rows", dataset.features->dim(0)},
                          {"width", dataset.features->dim(1)},
                          {"dtype", dtype_name(dataset.features->dtype())}};
    } else {
      json["features"] = nullptr;
    }
    json["num_classes"] = dataset.num_classes;
    json["labels"] = dataset.labels.has_value();
    if (has_split) {
      json["split"] = {{"train", split_size(dataset.train_idx)},
                       {"val", split_size(dataset.val_idx)},
                       {"test", split_size(dataset.test_idx)}};
    } else {
      json["split"] = nullptr;
    }
    json["edge_split"] = edge_split_json(dataset);
    json["in_degree"] = degree_json(in_degree);
    json["out_degree"] = degree_json(out_degree);
    json["disk_io"] = disk_io_support();
    if (verify) json["verify"] = {{"ok", true}, {"problems", Json::array()}};
    print_json(json);
    return;
  }

  std::printf("dataset: %s (%s)\n", dataset.name.c_str(), path.c_str());
  std::printf("nodes: %s\n", grouped(graph.num_nodes()).c_str());
  std::printf("edges: %s\n", grouped(graph.num_edges()).c_str());
  std::printf("orientation: %s (row v lists the %s)\n",
              std::string(orientation_name(graph.orientation())).c_str(),
              graph.orientation() == Orientation::kIn ? "sources of edges into v"
                                                      : "targets of edges out of v");
  std::printf("index dtype: %s\n", std::string(dtype_name(graph.index_dtype())).c_str());
  std::printf("edge ids: %s\n", graph.has_edge_ids() ? "yes" : "no (CSR positions)");
  std::printf("weights: %s\n", graph.has_weights() ? "yes (float32)" : "no");
  print_time_lines(graph);
  if (dataset.features) {
    std::printf("features: %s x %s %s\n", grouped(dataset.features->dim(0)).c_str(),
                grouped(dataset.features->dim(1)).c_str(),
                std::string(dtype_name(dataset.features->dtype())).c_str());
  } else {
    std::printf("features: none\n");
  }
  // How a feature disk tier would read here (feature_store.h: past half the RAM).
  std::printf("disk reads: %s\n", disk_io_support().c_str());
  std::printf("classes: %s%s\n", grouped(dataset.num_classes).c_str(),
              dataset.labels ? "" : " (no labels)");
  if (has_split) {
    std::printf("split: train %s, val %s, test %s\n",
                grouped(split_size(dataset.train_idx)).c_str(),
                grouped(split_size(dataset.val_idx)).c_str(),
                grouped(split_size(dataset.test_idx)).c_str());
  } else {
    std::printf("split: none\n");
  }
  print_edge_split(dataset);
  std::printf("in-degree: %s\n", degree_text(in_degree).c_str());
  std::printf("out-degree: %s\n", degree_text(out_degree).c_str());
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
      if (is_hetero_dataset_directory(path)) {
        describe_hetero_dataset(path, arguments->json, arguments->verify);
      } else {
        describe_dataset(path, arguments->json, arguments->verify);
      }
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
