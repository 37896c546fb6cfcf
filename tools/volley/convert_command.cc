// `volley convert INPUT OUTPUT [--format edgelist|npz|npy|ogb|hetero] [--undirected]
//                 [--num-nodes N]
//                 [--split none|planetoid|random] [--seed S] [--ogb-split NAME]
//                 [--feature-dtype float32|uint8|float16] [--name NAME] ...`
// Reads a graph (text edge list, .npz, an int [2, E] / [E, 2] .npy edge array, or an OGB
// node-property dataset directory, or a directory of per-edge-type edge files for a
// heterogeneous graph: volley/graph/io/hetero_edges.h), builds the in-neighbor Csr and writes a
// dataset directory (volley/graph/dataset.h). Prints one summary line to stdout. OGB directories
// are converted streaming (volley/graph/io/ogb.h) with the dataset's own split.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>

#include "commands.h"
#include "text.h"
#include "volley/core/progress.h"
#include "volley/graph/csr.h"
#include "volley/graph/dataset.h"
#include "volley/graph/hetero_dataset.h"
#include "volley/graph/io/edge_list.h"
#include "volley/graph/io/hetero_edges.h"
#include "volley/graph/io/npy.h"
#include "volley/graph/io/npz.h"
#include "volley/graph/io/ogb.h"
#include "volley/graph/io/ogb_hetero.h"
#include "volley/graph/split.h"

namespace volley::cli {
namespace {

namespace fs = std::filesystem;

struct Arguments {
  std::string input;
  std::string output;
  std::string format;  // empty: from the extension
  bool undirected = false;
  bool drop_self_loops = false;
  bool keep_edge_ids = false;
  std::string header = "auto";
  std::optional<int64_t> num_nodes;
  std::string split = "none";
  uint64_t seed = 0;
  double train_fraction = 0.6;
  double val_fraction = 0.2;
  std::string feature_dtype;  // empty: as read
  std::string name;
  std::string ogb_split;  // empty: the only folder under split/
  bool sort_by_time = false;
  std::string time_kind = "auto";  // --sort-by-time: "edge", "node", or "auto"
};

std::string format_of(const Arguments& arguments) {
  if (!arguments.format.empty()) return arguments.format;
  if (is_ogb_directory(arguments.input) || is_ogb_hetero_directory(arguments.input)) return "ogb";
  if (is_hetero_edge_directory(arguments.input)) return "hetero";
  const std::string extension = fs::path(arguments.input).extension().string();
  if (extension == ".npz") return "npz";
  if (extension == ".npy") return "npy";
  return "edgelist";
}

// The graph as read, before it becomes a Csr.
struct Input {
  EdgeList edges;
  std::optional<int64_t> num_nodes;
  std::optional<Array> features;
  std::optional<Array> labels;
};

Input read_input(const Arguments& arguments) {
  const std::string format = format_of(arguments);
  Input input;
  if (format == "npz") {
    NpzGraph graph = read_npz_graph(arguments.input);
    input = {std::move(graph.edges), graph.num_nodes, std::move(graph.features),
             std::move(graph.labels)};
  } else if (format == "npy") {
    input.edges = edge_list_from_array(read_npy(arguments.input), arguments.input);
  } else {
    EdgeListOptions options;
    if (arguments.header != "auto") options.has_header = arguments.header == "yes";
    options.num_nodes = arguments.num_nodes;
    input.edges = read_edge_list(arguments.input, options);
  }
  if (arguments.num_nodes.has_value()) {
    const int64_t n = *arguments.num_nodes;
    VOLLEY_REQUIRE(!input.num_nodes || *input.num_nodes == n, ValueError,
                   "--num-nodes {} disagrees with {}, which has {} nodes", n, arguments.input,
                   input.num_nodes.value_or(0));
    input.num_nodes = n;
  }
  return input;
}

// Features in the requested dtype. uint8 must be exact: every value an integer in [0, 255]
// (binary bag-of-words features are; anything else would silently change the data).
Array convert_features(const Array& features, const std::string& dtype_text) {
  if (dtype_text.empty()) return features;
  const DType dtype = dtype_from_name(dtype_text);
  if (dtype == features.dtype()) return features;
  if (dtype != DType::kUInt8) return features.cast(dtype);
  const Array source =
      features.dtype() == DType::kFloat32 ? features : features.cast(DType::kFloat32);
  Array result = Array::empty(DType::kUInt8, features.shape());
  const float* in = source.data<float>();
  uint8_t* out = result.data<uint8_t>();
  const int64_t width = features.ndim() == 2 ? features.dim(1) : 1;
  for (int64_t i = 0; i < features.numel(); ++i) {
    const float value = in[i];
    VOLLEY_REQUIRE(value >= 0.0f && value <= 255.0f && std::floor(value) == value, ValueError,
                   "feature [{}, {}] = {} is not an integer in [0, 255], so it cannot be stored "
                   "as uint8 exactly (use --feature-dtype float32 or float16)",
                   i / width, i % width, value);
    out[i] = static_cast<uint8_t>(value);
  }
  return result;
}

// Refuses to write into something that is neither absent, empty, nor a Volley dataset.
void check_output(const std::string& output) {
  std::error_code error;
  if (!fs::exists(output, error)) return;
  VOLLEY_REQUIRE(fs::is_directory(output, error), IoError,
                 "{}: exists and is a file; the output must be a (new) dataset directory", output);
  const bool empty = fs::is_empty(output, error);
  VOLLEY_REQUIRE(empty || is_dataset_directory(output), IoError,
                 "{}: exists and is not a Volley dataset directory; refusing to write into it",
                 output);
}

// OGB's on-disk layout, streamed straight into the output directory.
void run_convert_ogb(const Arguments& arguments) {
  VOLLEY_REQUIRE(arguments.split == "none", ValueError,
                 "--split {}: OGB datasets bring their own split (split/<name>/; pick one with "
                 "--ogb-split)",
                 arguments.split);
  VOLLEY_REQUIRE(!arguments.num_nodes.has_value() && !arguments.keep_edge_ids, ValueError,
                 "--num-nodes and --edge-ids do not apply to OGB datasets (the node count is in "
                 "raw/num-node-list.csv.gz)");
  OgbConvertOptions options;
  options.split = arguments.ogb_split;
  options.undirected = arguments.undirected;
  options.drop_self_loops = arguments.drop_self_loops;
  if (!arguments.feature_dtype.empty())
    options.feature_dtype = dtype_from_name(arguments.feature_dtype);
  options.name = arguments.name;
  const bool hetero = is_ogb_hetero_directory(arguments.input);  // ogbn-mag's layout
  const OgbConversion done =
      hetero ? convert_ogb_hetero_dataset(arguments.input, arguments.output, options)
             : convert_ogb_node_dataset(arguments.input, arguments.output, options);
  std::string summary = fmt::format(
      "wrote {} -> {}: {} nodes, {} edges{}", done.name, arguments.output, grouped(done.num_nodes),
      grouped(done.num_edges), hetero ? " (heterogeneous; totals over all types)" : "");
  if (done.feature_dim > 0) {
    summary += fmt::format(", {} {} features", grouped(done.feature_dim),
                           dtype_name(options.feature_dtype));
  }
  if (done.num_classes > 0) summary += fmt::format(", {} classes", done.num_classes);
  if (!done.split.empty()) {
    summary += fmt::format(", split {} {}/{}/{}", done.split, grouped(done.num_train),
                           grouped(done.num_val), grouped(done.num_test));
  }
  std::printf("%s\n", summary.c_str());
}

// A dataset directory rewritten with each row sorted by time (--sort-by-time).
void run_sort_by_time(const Arguments& arguments) {
  VOLLEY_REQUIRE(is_dataset_directory(arguments.input), ValueError,
                 "--sort-by-time rewrites a dataset directory, and {} is not one (no volley.json)",
                 arguments.input);
  VOLLEY_REQUIRE(fs::weakly_canonical(arguments.input) != fs::weakly_canonical(arguments.output),
                 ValueError, "--sort-by-time needs an output directory other than its input");
  check_output(arguments.output);
  Dataset dataset = load_dataset(arguments.input, {.memory_map = false});
  const Csr& graph = dataset.graph;
  std::string kind = arguments.time_kind;
  if (kind == "auto") kind = graph.has_edge_time() ? "edge" : "node";
  VOLLEY_REQUIRE(kind == "edge" || kind == "node", ValueError,
                 "--time-kind must be 'edge', 'node' or 'auto', got '{}'", kind);
  dataset.graph = sort_rows_by_time(graph, kind == "edge" ? TimeKind::kEdge : TimeKind::kNode);
  if (!arguments.name.empty()) dataset.name = arguments.name;
  save_dataset(dataset, arguments.output);
  std::printf("wrote %s -> %s: %s nodes, %s edges, rows sorted by %s time\n", dataset.name.c_str(),
              arguments.output.c_str(), grouped(graph.num_nodes()).c_str(),
              grouped(graph.num_edges()).c_str(), kind.c_str());
}

// A directory of per-edge-type edge files (graph/io/hetero_edges.h).
void run_convert_hetero(const Arguments& arguments) {
  VOLLEY_REQUIRE(!arguments.undirected && !arguments.drop_self_loops && !arguments.num_nodes &&
                     arguments.split == "none" && arguments.feature_dtype.empty(),
                 ValueError,
                 "a heterogeneous input takes only --name (--undirected, --drop-self-loops, "
                 "--num-nodes, --split and --feature-dtype are for homogeneous inputs; give "
                 "T.num_nodes and T.train_idx.npy files instead)");
  HeteroDataset dataset = read_hetero_edge_directory(arguments.input);
  if (!arguments.name.empty()) dataset.name = arguments.name;
  save_hetero_dataset(dataset, arguments.output);
  std::printf("wrote %s -> %s: %s nodes in %d types, %s edges in %d types\n", dataset.name.c_str(),
              arguments.output.c_str(), grouped(dataset.graph.total_nodes()).c_str(),
              dataset.graph.num_node_types(), grouped(dataset.graph.total_edges()).c_str(),
              dataset.graph.num_edge_types());
}

void run_convert(const Arguments& arguments) {
  if (arguments.sort_by_time) return run_sort_by_time(arguments);
  check_output(arguments.output);
  if (format_of(arguments) == "ogb") return run_convert_ogb(arguments);
  if (format_of(arguments) == "hetero") return run_convert_hetero(arguments);
  VOLLEY_REQUIRE(arguments.ogb_split.empty(), ValueError,
                 "--ogb-split applies to --format ogb only");
  // Stages: read, build the graph, node data and split, write.
  ProgressBar progress("convert", 4);
  Input input = read_input(arguments);
  progress.advance();

  CsrBuildOptions build;
  build.num_nodes = input.num_nodes;
  build.orientation = Orientation::kIn;
  build.symmetrize = arguments.undirected;
  build.drop_duplicates = arguments.undirected;
  build.drop_self_loops = arguments.drop_self_loops;
  build.keep_edge_ids = arguments.keep_edge_ids;
  Dataset dataset;
  dataset.name =
      arguments.name.empty() ? fs::path(arguments.input).stem().string() : arguments.name;
  dataset.graph = build_csr(input.edges.src, input.edges.dst, input.edges.weights, build);
  progress.advance();

  const int64_t n = dataset.graph.num_nodes();
  if (input.features) {
    VOLLEY_REQUIRE(input.features->dim(0) == n, ValueError,
                   "{}: features have {} rows, but the graph has {} nodes", arguments.input,
                   input.features->dim(0), n);
    dataset.features = convert_features(*input.features, arguments.feature_dtype);
  }
  if (input.labels) {
    VOLLEY_REQUIRE(input.labels->numel() == n, ValueError,
                   "{}: labels have {} entries, but the graph has {} nodes", arguments.input,
                   input.labels->numel(), n);
    const int64_t* label = input.labels->data<int64_t>();
    int64_t max_label = -1;
    for (int64_t i = 0; i < n; ++i) max_label = std::max(max_label, label[i]);
    dataset.labels = input.labels;
    dataset.num_classes = max_label + 1;
  }
  if (arguments.split == "planetoid") {
    VOLLEY_REQUIRE(dataset.labels.has_value(), ValueError,
                   "--split planetoid needs labels, and {} has none (use --split random)",
                   arguments.input);
    Split split = planetoid_split(*dataset.labels, dataset.num_classes, {.seed = arguments.seed});
    dataset.train_idx = split.train;
    dataset.val_idx = split.val;
    dataset.test_idx = split.test;
  } else if (arguments.split == "random") {
    Split split = random_split(n, {.train_fraction = arguments.train_fraction,
                                   .val_fraction = arguments.val_fraction,
                                   .seed = arguments.seed});
    dataset.train_idx = split.train;
    dataset.val_idx = split.val;
    dataset.test_idx = split.test;
  }
  progress.advance();

  save_dataset(dataset, arguments.output);
  progress.advance();
  progress.finish();

  std::string summary =
      fmt::format("wrote {} -> {}: {} nodes, {} edges", dataset.name, arguments.output, grouped(n),
                  grouped(dataset.graph.num_edges()));
  if (dataset.features) {
    summary += fmt::format(", {} {} features", grouped(dataset.features->dim(1)),
                           dtype_name(dataset.features->dtype()));
  }
  if (dataset.labels) summary += fmt::format(", {} classes", dataset.num_classes);
  if (dataset.train_idx) {
    summary += fmt::format(", split {}/{}/{}", grouped(dataset.train_idx->numel()),
                           grouped(dataset.val_idx->numel()), grouped(dataset.test_idx->numel()));
  }
  std::printf("%s\n", summary.c_str());
}

}  // namespace

void add_convert_command(CLI::App& app, GlobalOptions& /*global*/) {
  auto arguments = std::make_shared<Arguments>();
  auto* command = app.add_subcommand(
      "convert",
      "Convert an edge list, .npz or .npy edge array, or an OGB dataset into a dataset directory");
  command->add_option("input", arguments->input, "Input file (OGB: the dataset's directory)")
      ->required();
  command->add_option("output", arguments->output, "Dataset directory to write")->required();
  command
      ->add_option("--format", arguments->format,
                   "Input format (default: ogb for a directory with raw/edge.csv.gz, else from "
                   "the extension: .npz, .npy, else edgelist; hetero for a directory of "
                   "SRC__RELATION__DST.npy / .txt edge files)")
      ->check(CLI::IsMember({"edgelist", "npz", "npy", "ogb", "hetero"}));
  command->add_option("--ogb-split", arguments->ogb_split,
                      "OGB: the folder under split/ to store (default: the only one)");
  command->add_flag("--undirected", arguments->undirected,
                    "Store every edge both ways and drop duplicate edges");
  command->add_flag("--drop-self-loops", arguments->drop_self_loops, "Drop edges v -> v");
  command->add_flag("--edge-ids", arguments->keep_edge_ids,
                    "Store each edge's position in the input (for edge features)");
  command
      ->add_option("--header", arguments->header,
                   "Edge lists: whether the first line is a header (auto: when not numeric)")
      ->check(CLI::IsMember({"auto", "yes", "no"}))
      ->capture_default_str();
  command
      ->add_option("--num-nodes", arguments->num_nodes,
                   "Number of nodes (default: from the input, or max id + 1)")
      ->check(kNonNegative);
  command->add_option("--split", arguments->split, "Train/val/test split to store")
      ->check(CLI::IsMember({"none", "planetoid", "random"}))
      ->capture_default_str();
  command->add_option("--seed", arguments->seed, "Seed of the split")
      ->capture_default_str()
      ->check(kSeed);
  command->add_option("--train-fraction", arguments->train_fraction, "--split random: train share")
      ->check(kFraction)
      ->capture_default_str();
  command->add_option("--val-fraction", arguments->val_fraction, "--split random: val share")
      ->check(kFraction)
      ->capture_default_str();
  command
      ->add_option("--feature-dtype", arguments->feature_dtype,
                   "Element type of stored features (default: as read; uint8 must be exact)")
      ->check(CLI::IsMember({"float32", "uint8", "float16"}));
  command->add_option("--name", arguments->name, "Dataset name (default: the input's stem)");
  command->add_flag("--sort-by-time", arguments->sort_by_time,
                    "Input is a dataset directory: write it with each row sorted by time "
                    "(edge ids, weights and edge times follow their edges)");
  command
      ->add_option("--time-kind", arguments->time_kind,
                   "--sort-by-time: sort by 'edge' time, 'node' time (of the neighbor), or "
                   "'auto' (edge time when present)")
      ->capture_default_str();
  command->callback([arguments] { run_convert(*arguments); });
}

}  // namespace volley::cli
