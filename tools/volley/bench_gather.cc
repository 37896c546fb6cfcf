#include "commands.h"

namespace volley::cli {

void add_bench_gather(CLI::App& bench) {
  auto* command = bench.add_subcommand("gather", "(being written)");
  command->callback([] { throw CLI::RuntimeError("'bench gather' is not written yet", 2); });
}

}  // namespace volley::cli
