// `volley generate OUTPUT --model powerlaw|rmat|temporal --nodes N --edges M [--feature-dim D]
//                  [--feature-dtype float32|float16] [--classes C] [--seed S] [--gamma G]
//                  [--homophily H]`
// `volley generate OUTPUT --model hetero [--nodes PAPERS] [--reverse] [--feature-dim D]
//                  [--classes C] [--seed S] [--homophily H]`
// Writes a seeded synthetic dataset directory (volley/graph/generate.h; the ogbn-mag-shaped
// heterogeneous one: generate_hetero.h) and prints one summary line: name, nodes, edges,
// seconds.
#include <chrono>
#include <cstdio>
#include <string>

#include "commands.h"
#include "volley/graph/generate.h"
#include "volley/graph/generate_hetero.h"

namespace volley::cli {

namespace {
struct Arguments {
  std::string output;
  std::string model = "powerlaw";
  std::string feature_dtype = "float32";
  GeneratorOptions options;
};

// --model hetero: ogbn-mag's defaults for what the command line leaves out.
void use_mag_defaults(GeneratorOptions& options, const CLI::App& command) {
  VOLLEY_REQUIRE(command.count("--edges") == 0, ValueError,
                 "--model hetero takes no --edges: degrees follow ogbn-mag's (--nodes sets the "
                 "number of papers)");
  VOLLEY_REQUIRE(command.count("--gamma") == 0, ValueError, "--model hetero takes no --gamma");
  const GeneratorOptions mag = mag_generator_options();
  if (command.count("--nodes") == 0) options.num_nodes = mag.num_nodes;
  if (command.count("--feature-dim") == 0) options.feature_dim = mag.feature_dim;
  if (command.count("--classes") == 0) options.num_classes = mag.num_classes;
  options.feature_noise = mag.feature_noise;
}
}  // namespace

void add_generate_command(CLI::App& app, GlobalOptions& /*global*/) {
  auto arguments = std::make_shared<Arguments>();
  GeneratorOptions& options = arguments->options;

  auto* command = app.add_subcommand(
      "generate",
      "Write a seeded synthetic graph (power-law Chung-Lu, R-MAT, a temporal interaction stream "
      "with edge/node times, or an ogbn-mag-shaped heterogeneous graph) with features, labels "
      "and a train/val/test split as a dataset directory");
  command->add_option("output", arguments->output, "Dataset directory to write")->required();
  command->add_option("--model", arguments->model, "Graph model")
      ->check(CLI::IsMember({"powerlaw", "rmat", "temporal", "hetero"}))
      ->capture_default_str();
  command
      ->add_option("--nodes", options.num_nodes,
                   "Number of nodes (hetero: papers, default 736389 as ogbn-mag; the other "
                   "types scale with it)")
      ->check(kInt64);
  command
      ->add_option("--edges", options.num_edges,
                   "Number of directed edges (R-MAT: before dropping duplicates; temporal: "
                   "interactions, each stored both ways; hetero: not given, degrees follow "
                   "ogbn-mag)")
      ->check(kInt64);
  command->add_flag("--reverse", options.reverse,
                    "hetero: also write the reverse edge types (rev_writes, ...)");
  command->add_option("--feature-dim", options.feature_dim, "Feature columns (0: no features)")
      ->check(kInt64)
      ->capture_default_str();
  command->add_option("--feature-dtype", arguments->feature_dtype, "Feature element type")
      ->check(CLI::IsMember({"float32", "float16"}))
      ->capture_default_str();
  command->add_option("--classes", options.num_classes, "Number of label classes")
      ->check(kInt64)
      ->capture_default_str();
  command->add_option("--seed", options.seed, "Random seed (same seed, same bytes)")
      ->capture_default_str()
      ->check(kSeed);
  command->add_option("--gamma", options.gamma, "Power-law degree exponent (> 1)")
      ->capture_default_str();
  command
      ->add_option("--homophily", options.homophily,
                   "Power law: fraction of each node's in-neighbors drawn from its own class; "
                   "temporal: fraction of interactions in the user's current interest")
      ->capture_default_str();

  command->callback([arguments, command] {
    GeneratorOptions& options = arguments->options;
    options.model = graph_model_from_name(arguments->model);
    const bool hetero = options.model == GraphModel::kHetero;
    if (hetero) {
      use_mag_defaults(options, *command);
    } else if (command->count("--nodes") == 0 || command->count("--edges") == 0) {
      throw ValueError(fmt::format("--model {} needs --nodes and --edges", arguments->model));
    }
    if (options.reverse && !hetero) throw ValueError("--reverse is for --model hetero only");
    options.feature_dtype = dtype_from_name(arguments->feature_dtype);
    const auto start = std::chrono::steady_clock::now();
    const GeneratedDataset result = generate_dataset(options, arguments->output);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::string types =
        hetero ? fmt::format(" (4 node types, {} edge types)", options.reverse ? 8 : 4) : "";
    std::printf(
        "generated %s: %lld nodes, %lld edges%s, %lld classes, %lld %s %sfeatures in "
        "%.1f s -> %s\n",
        result.name.c_str(), static_cast<long long>(result.num_nodes),
        static_cast<long long>(result.num_edges), types.c_str(),
        static_cast<long long>(options.num_classes), static_cast<long long>(options.feature_dim),
        arguments->feature_dtype.c_str(), hetero ? "paper " : "", seconds,
        arguments->output.c_str());
  });
}

}  // namespace volley::cli
