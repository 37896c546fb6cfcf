#include "commands.h"

namespace volley::cli {

void add_partition_command(CLI::App& app, GlobalOptions& /*global*/) {
  auto* command = app.add_subcommand("partition", "(being written)");
  command->callback([] { throw CLI::RuntimeError("'partition' is not written yet", 2); });
}

}  // namespace volley::cli
