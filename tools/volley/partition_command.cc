// `volley partition DATASET OUTPUT --parts K --method random|metis|hotness|stream [--fanout ...]
//  [--cache-bytes ...]` on a dataset directory of either kind, and the `volley info` view of a
// partitioned directory of either kind and of its part-P directories (the heterogeneous figures:
// partition_hetero.cc). Prints the quality figures (edge cut, balance, remote reads in a simulated
// epoch) stored in OUTPUT/partition.json; --json prints partition.json as one JSON object.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "text.h"
#include "volley/core/error.h"
#include "volley/graph/hetero_dataset.h"
#include "volley/partition/hetero_partition.h"
#include "volley/partition/partition.h"

namespace volley::cli {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

// "64M", "1.5G", "4096", "512k" -> bytes (binary units).
int64_t parse_bytes(const std::string& text) {
  size_t used = 0;
  double value = 0.0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    throw ValueError(fmt::format("--cache-bytes: expected a size such as 64M, found '{}'", text));
  }
  const std::string unit = text.substr(used);
  double scale = 1.0;
  if (unit.empty() || unit == "B" || unit == "b") {
    scale = 1.0;
  } else if (unit == "K" || unit == "k" || unit == "KiB" || unit == "KB") {
    scale = 1024.0;
  } else if (unit == "M" || unit == "m" || unit == "MiB" || unit == "MB") {
    scale = 1024.0 * 1024.0;
  } else if (unit == "G" || unit == "g" || unit == "GiB" || unit == "GB") {
    scale = 1024.0 * 1024.0 * 1024.0;
  } else {
    throw ValueError(
        fmt::format("--cache-bytes: unknown unit '{}' in '{}' (use K, M or G)", unit, text));
  }
  VOLLEY_REQUIRE(value >= 0.0, ValueError, "--cache-bytes must be >= 0, found '{}'", text);
  VOLLEY_REQUIRE(value * scale < 9223372036854775807.0, ValueError,
                 "--cache-bytes must be at most 9223372036854775807 bytes, found '{}'", text);
  return static_cast<int64_t>(value * scale);
}

void print_quality(const PartitionQuality& quality, int64_t num_edges) {
  std::printf("edge cut: %s (%lld of %lld edges)\n", percent(quality.edge_cut_fraction).c_str(),
              static_cast<long long>(quality.cut_edges), static_cast<long long>(num_edges));
  std::printf("balance (largest / mean part): nodes %.3f, edges %.3f, training nodes %.3f\n",
              quality.node_balance, quality.edge_balance, quality.train_balance);
  if (quality.remote_access_fraction) {
    std::string line = fmt::format("remote reads in a simulated epoch: {}",
                                   percent(*quality.remote_access_fraction));
    if (quality.remote_access_fraction_cached &&
        *quality.remote_access_fraction_cached != *quality.remote_access_fraction) {
      line += fmt::format(" ({} with the cache)", percent(*quality.remote_access_fraction_cached));
    }
    if (quality.metis_remote_access_fraction) {
      line += fmt::format("; metis {}", percent(*quality.metis_remote_access_fraction));
    }
    if (quality.random_remote_access_fraction) {
      line += fmt::format(", random {}", percent(*quality.random_remote_access_fraction));
    }
    std::printf("%s\n", line.c_str());
  }
}

void print_parts(const PartitionBook& book, const std::vector<int64_t>& edges,
                 const std::vector<int64_t>& train, const std::vector<int64_t>& cached) {
  std::printf("%-6s %-24s %12s %14s %10s %10s\n", "part", "new ids", "nodes", "edges", "train",
              "cached");
  for (int64_t p = 0; p < book.num_parts(); ++p) {
    const auto i = static_cast<size_t>(p);
    std::printf("%-6lld %-24s %12lld %14lld %10lld %10lld\n", static_cast<long long>(p),
                fmt::format("[{}, {})", book.begin(p), book.end(p)).c_str(),
                static_cast<long long>(book.size(p)), static_cast<long long>(edges[i]),
                static_cast<long long>(train[i]),
                static_cast<long long>(i < cached.size() ? cached[i] : 0));
  }
}

std::string read_file_text(const std::string& path) {
  std::ifstream stream(path);
  std::stringstream text;
  text << stream.rdbuf();
  return text.str();
}

// A part-P directory of either kind: its partitioned directory and part number (part.json).
struct PartPath {
  std::string parent;
  int64_t part = 0;
};
PartPath part_path(const std::string& path) {
  fs::path part_dir = fs::path(path).lexically_normal();
  if (part_dir.filename().empty()) part_dir = part_dir.parent_path();  // "out/part-2/"
  const std::string parent = part_dir.parent_path().string();
  const Json part_json = Json::parse(read_file_text((fs::path(path) / "part.json").string()),
                                     nullptr, /*allow_exceptions=*/false);
  VOLLEY_REQUIRE(
      part_json.is_object() && part_json.contains("part") && part_json["part"].is_number_integer(),
      IoError, "{}/part.json: part: expected an integer, found none", path);
  return {parent.empty() ? "." : parent, part_json["part"].get<int64_t>()};
}

// One partition's directory: its rows hold global neighbor ids, so it is described through the
// partitioned dataset it belongs to.
void describe_one_partition(const std::string& path, const std::string& parent, int64_t part,
                            bool as_json, bool verify) {
  const Partition partition = load_partition(
      parent, part, {.memory_map = true, .verify_checksums = verify, .validate_graph = true});
  const Dataset& data = partition.data;
  const int64_t cached = partition.cache_ids ? partition.cache_ids->numel() : 0;
  auto size_of = [](const std::optional<Array>& ids) { return ids ? ids->numel() : 0; };
  if (as_json) {
    std::printf("%s\n", Json({{"path", path},
                              {"kind", "partition"},
                              {"part", part},
                              {"num_parts", partition.book.num_parts()},
                              {"first_node", partition.first_node()},
                              {"num_nodes", data.graph.num_nodes()},
                              {"num_edges", data.graph.num_edges()},
                              {"feature_dim", data.features ? data.features->dim(1) : 0},
                              {"train", size_of(data.train_idx)},
                              {"val", size_of(data.val_idx)},
                              {"test", size_of(data.test_idx)},
                              {"cached", cached},
                              {"verified", verify}})
                            .dump()
                            .c_str());
    return;
  }
  std::printf("partition %lld of %lld (%s)\n", static_cast<long long>(part),
              static_cast<long long>(partition.book.num_parts()), path.c_str());
  std::printf("owned new ids: [%lld, %lld) — %lld nodes\n",
              static_cast<long long>(partition.first_node()),
              static_cast<long long>(partition.book.end(part)),
              static_cast<long long>(data.graph.num_nodes()));
  std::printf("in-edges: %lld (neighbor ids in the global new numbering)\n",
              static_cast<long long>(data.graph.num_edges()));
  std::printf("features: %s\n", data.features ? data.features->describe().c_str() : "none");
  std::printf("split (local rows): train %lld, val %lld, test %lld\n",
              static_cast<long long>(size_of(data.train_idx)),
              static_cast<long long>(size_of(data.val_idx)),
              static_cast<long long>(size_of(data.test_idx)));
  std::printf("cache: %lld remote feature rows\n", static_cast<long long>(cached));
  if (verify) std::printf("verify: ok (checksums and graph ids)\n");
}

// The text description of a homogeneous partitioned directory (`header`: its name, method and
// sizes before the quality figures and the parts).
void print_partitioned(const std::string& path, bool header) {
  const PartitionManifest manifest = read_partition_manifest(path);
  if (header) {
    std::printf("partitioned dataset: %s (%s)\n", manifest.name.c_str(), path.c_str());
    std::printf("method: %s, %lld partitions\n",
                std::string(partition_method_name(manifest.method)).c_str(),
                static_cast<long long>(manifest.book.num_parts()));
    std::printf(
        "nodes: %lld, edges: %lld, feature dim: %lld, classes: %lld\n",
        static_cast<long long>(manifest.num_nodes), static_cast<long long>(manifest.num_edges),
        static_cast<long long>(manifest.feature_dim), static_cast<long long>(manifest.num_classes));
  }
  print_quality(manifest.quality, manifest.num_edges);
  print_parts(manifest.book, manifest.part_edges, manifest.part_train, manifest.part_cached);
}

struct PartitionArguments {
  std::string input;
  std::string output;
  int64_t parts = 2;
  std::string method = "metis";
  std::vector<int64_t> fanouts = {15, 10, 5};
  std::string cache_bytes = "0";
  int64_t batch_size = 1024;
  double tolerance = 0.05;
  uint64_t seed = 0;
  bool simulate = false;
  bool json = false;
};

// `volley partition`: partitions and reports what it did.
void run_partition_command(const PartitionArguments& arguments) {
  PartitionOptions options;
  options.method = partition_method_from_name(arguments.method);
  options.num_parts = arguments.parts;
  options.fanouts = arguments.fanouts;
  options.cache_bytes = parse_bytes(arguments.cache_bytes);
  options.batch_size = arguments.batch_size;
  options.balance_tolerance = arguments.tolerance;
  options.seed = arguments.seed;
  options.simulate_epoch = arguments.simulate;
  const bool typed = is_hetero_dataset_directory(arguments.input);
  std::pair<double, double> seconds;  // the whole call, the assignment
  if (typed) {
    const HeteroPartitionResult result =
        partition_hetero_dataset(arguments.input, arguments.output, options);
    seconds = {result.seconds, result.assign_seconds};
  } else {
    const PartitionResult result = partition_dataset(arguments.input, arguments.output, options);
    seconds = {result.seconds, result.assign_seconds};
  }
  if (arguments.json) {
    Json json = Json::parse(read_partition_manifest_text(arguments.output));
    json["input"] = arguments.input;
    json["output"] = arguments.output;
    std::printf("%s\n", json.dump().c_str());
    return;
  }
  std::printf("partitioned %s%s into %lld parts with %s in %.1f s (assignment %.1f s) -> %s\n",
              typed ? "heterogeneous " : "", arguments.input.c_str(),
              static_cast<long long>(options.num_parts), arguments.method.c_str(), seconds.first,
              seconds.second, arguments.output.c_str());
  typed ? print_hetero_partitioned(arguments.output, /*header=*/false)
        : print_partitioned(arguments.output, /*header=*/false);
}

void report_partitioned_problems(const std::string& path, bool as_json,
                                 const std::vector<std::string>& problems) {
  if (!problems.empty()) {
    if (!as_json) {
      std::printf("verify: %zu problem%s\n", problems.size(), problems.size() == 1 ? "" : "s");
      for (const auto& problem : problems) std::printf("  %s\n", problem.c_str());
    } else {
      std::printf("%s\n", Json({{"path", path},
                                {"kind", "partitioned"},
                                {"verify", {{"ok", false}, {"problems", problems}}}})
                              .dump()
                              .c_str());
    }
    std::fflush(stdout);
    throw IoError(fmt::format("{}: verification failed: {} problem{} (first: {})", path,
                              problems.size(), problems.size() == 1 ? "" : "s", problems.front()));
  }
}

void print_partitioned_json(const std::string& manifest_json, const std::string& path,
                            bool verified) {
  Json json = Json::parse(manifest_json);
  json["path"] = path;
  json["kind"] = "partitioned";
  if (verified) json["verify"] = {{"ok", true}, {"problems", Json::array()}};
  std::printf("%s\n", json.dump().c_str());
}

}  // namespace

bool describe_partitioned(const std::string& path, bool as_json, bool verify) {
  std::error_code error;
  if (fs::is_regular_file(fs::path(path) / "part.json", error)) {
    const PartPath part = part_path(path);
    is_hetero_partitioned_directory(part.parent)
        ? describe_hetero_part(path, part.parent, part.part, as_json, verify)
        : describe_one_partition(path, part.parent, part.part, as_json, verify);
    return true;
  }
  if (!is_partitioned_directory(path)) return false;
  if (verify) report_partitioned_problems(path, as_json, verify_partitioned_dataset(path));
  if (as_json) {
    print_partitioned_json(read_partition_manifest_text(path), path, verify);
    return true;
  }
  is_hetero_partitioned_directory(path) ? print_hetero_partitioned(path, /*header=*/true)
                                        : print_partitioned(path, /*header=*/true);
  if (verify) std::printf("verify: ok (every file matches its manifest, checksums included)\n");
  return true;
}

void add_partition_command(CLI::App& app, GlobalOptions& /*global*/) {
  auto arguments = std::make_shared<PartitionArguments>();
  auto* command = app.add_subcommand(
      "partition", "Cut a dataset into partitions (random, METIS, hotness-aware or streaming)");
  command->add_option("dataset", arguments->input, "Dataset directory")->required();
  command->add_option("output", arguments->output, "Output directory (partitioned dataset)")
      ->required();
  command->add_option("-k,--parts", arguments->parts, "Number of partitions")
      ->required()
      ->check(kPositive);
  command->add_option("-m,--method", arguments->method, "random, metis, hotness or stream")
      ->check(CLI::IsMember({"random", "metis", "hotness", "stream"}))
      ->capture_default_str();
  command
      ->add_option("--fanout", arguments->fanouts,
                   "Fanouts of the simulated epoch (hotness; --simulate), e.g. 15,10,5")
      ->delimiter(',')
      ->check(kInt64)
      ->capture_default_str();
  command->add_option("--cache-bytes", arguments->cache_bytes,
                      "Per-partition cache of hot remote feature rows (hotness), e.g. 64M");
  command->add_option("--batch-size", arguments->batch_size, "Batch size of the simulated epoch")
      ->check(kPositive)
      ->capture_default_str();
  command
      ->add_option("--tolerance", arguments->tolerance,
                   "Allowed imbalance of nodes, edges and training nodes (0.05 = 5%)")
      ->capture_default_str();
  command->add_option("--seed", arguments->seed, "Random seed")
      ->capture_default_str()
      ->check(kSeed);
  command->add_flag("--simulate", arguments->simulate,
                    "Also simulate an epoch to report remote reads (any method)");
  command->add_flag("--json", arguments->json, "Print one JSON object instead of text");
  command->callback([arguments] { run_partition_command(*arguments); });
}

}  // namespace volley::cli
