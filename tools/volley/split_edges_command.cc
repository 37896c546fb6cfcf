// `volley split-edges DATASET OUTPUT [--val F] [--test F] [--undirected] [--seed S]
//                     [--neg-ratio R]`
// Splits a dataset's edges for link prediction (volley/graph/edge_split.h) into a new dataset
// directory and prints one summary line: units per side, negatives, the message-passing edges
// kept, seconds.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "commands.h"
#include "text.h"
#include "volley/graph/edge_split.h"

namespace volley::cli {

void add_split_edges_command(CLI::App& app, GlobalOptions& /*global*/) {
  struct Arguments {
    std::string input;
    std::string output;
    EdgeSplitOptions options;
  };
  auto arguments = std::make_shared<Arguments>();
  EdgeSplitOptions& options = arguments->options;

  auto* command = app.add_subcommand(
      "split-edges",
      "Split a dataset's edges into train / val / test for link prediction: writes the "
      "training message-passing graph, the supervision edges of each side and fixed seeded "
      "val / test negatives as a new dataset directory");
  command->add_option("dataset", arguments->input, "Dataset directory to split")->required();
  command
      ->add_option("output", arguments->output,
                   "New dataset directory (must not exist, or be "
                   "empty)")
      ->required();
  command
      ->add_option("--val", options.val_fraction,
                   "Fraction of the edges for validation, in "
                   "[0, 1)")
      ->capture_default_str();
  command
      ->add_option("--test", options.test_fraction,
                   "Fraction of the edges for testing, in "
                   "[0, 1); val + test < 1")
      ->capture_default_str();
  command->add_flag("--undirected", options.undirected,
                    "An edge and its reverse are one edge: both directions land on the same side "
                    "(supervision pairs are listed once, src <= dst)");
  command->add_option("--seed", options.seed, "Random seed (same seed, same bytes)")
      ->capture_default_str()
      ->check(kSeed);
  command
      ->add_option("--neg-ratio", options.neg_ratio,
                   "Fixed negatives per val / test edge (0: none); negatives are no edge")
      ->check(kNonNegative)
      ->capture_default_str();

  command->callback([arguments] {
    const auto start = std::chrono::steady_clock::now();
    const EdgeSplitSummary s = split_edges(arguments->input, arguments->output, arguments->options);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf(
        "split %s %s edges: train %s, val %s, test %s; negatives val %s, test %s; "
        "message-passing graph %s edges; %.1f s -> %s\n",
        grouped(s.num_units).c_str(), arguments->options.undirected ? "undirected" : "directed",
        grouped(s.num_train).c_str(), grouped(s.num_val).c_str(), grouped(s.num_test).c_str(),
        grouped(s.num_val_neg).c_str(), grouped(s.num_test_neg).c_str(),
        grouped(s.num_train_graph_edges).c_str(), seconds, arguments->output.c_str());
  });
}

}  // namespace volley::cli
