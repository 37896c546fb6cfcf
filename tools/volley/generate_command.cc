// `volley generate OUTPUT --model powerlaw|rmat|temporal --nodes N --edges M [--feature-dim D]
//                  [--feature-dtype float32|float16] [--classes C] [--seed S] [--gamma G]
//                  [--homophily H]`
// Writes a seeded synthetic dataset directory (volley/graph/generate.h) and prints one summary
// line: name, nodes, edges, seconds.
#include <chrono>
#include <cstdio>
#include <string>

#include "commands.h"
#include "volley/graph/generate.h"

namespace volley::cli {

void add_generate_command(CLI::App& app, GlobalOptions& /*global*/) {
  struct Arguments {
    std::string output;
    std::string model = "powerlaw";
    std::string feature_dtype = "float32";
    GeneratorOptions options;
  };
  auto arguments = std::make_shared<Arguments>();
  GeneratorOptions& options = arguments->options;

  auto* command = app.add_subcommand(
      "generate",
      "Write a seeded synthetic graph (power-law Chung-Lu, R-MAT, or a temporal interaction "
      "stream with edge/node times) with features, labels and a train/val/test split as a "
      "dataset directory");
  command->add_option("output", arguments->output, "Dataset directory to write")->required();
  command->add_option("--model", arguments->model, "Graph model")
      ->check(CLI::IsMember({"powerlaw", "rmat", "temporal"}))
      ->capture_default_str();
  command->add_option("--nodes", options.num_nodes, "Number of nodes")->required();
  command
      ->add_option("--edges", options.num_edges,
                   "Number of directed edges (R-MAT: before dropping duplicates; temporal: "
                   "interactions, each stored both ways)")
      ->required();
  command->add_option("--feature-dim", options.feature_dim, "Feature columns (0: no features)")
      ->capture_default_str();
  command->add_option("--feature-dtype", arguments->feature_dtype, "Feature element type")
      ->check(CLI::IsMember({"float32", "float16"}))
      ->capture_default_str();
  command->add_option("--classes", options.num_classes, "Number of label classes")
      ->capture_default_str();
  command->add_option("--seed", options.seed, "Random seed (same seed, same bytes)")
      ->capture_default_str();
  command->add_option("--gamma", options.gamma, "Power-law degree exponent (> 1)")
      ->capture_default_str();
  command
      ->add_option("--homophily", options.homophily,
                   "Power law: fraction of each node's in-neighbors drawn from its own class; "
                   "temporal: fraction of interactions in the user's current interest")
      ->capture_default_str();

  command->callback([arguments] {
    GeneratorOptions& options = arguments->options;
    options.model = graph_model_from_name(arguments->model);
    options.feature_dtype = dtype_from_name(arguments->feature_dtype);
    const auto start = std::chrono::steady_clock::now();
    const GeneratedDataset result = generate_dataset(options, arguments->output);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf(
        "generated %s: %lld nodes, %lld edges, %lld classes, %lld %s features in %.1f s -> %s\n",
        result.name.c_str(), static_cast<long long>(result.num_nodes),
        static_cast<long long>(result.num_edges), static_cast<long long>(options.num_classes),
        static_cast<long long>(options.feature_dim), arguments->feature_dtype.c_str(), seconds,
        arguments->output.c_str());
  });
}

}  // namespace volley::cli
