#include "commands.h"

namespace volley::cli {

void add_bench_command(CLI::App& app, GlobalOptions& /*global*/) {
  auto* command = app.add_subcommand("bench", "(being written)");
  command->callback([] { throw CLI::RuntimeError("'bench' is not written yet", 2); });
}

}  // namespace volley::cli
