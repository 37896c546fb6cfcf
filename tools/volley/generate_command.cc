#include "commands.h"

namespace volley::cli {

void add_generate_command(CLI::App& app, GlobalOptions& /*global*/) {
  auto* command = app.add_subcommand("generate", "(being written)");
  command->callback([] { throw CLI::RuntimeError("'generate' is not written yet", 2); });
}

}  // namespace volley::cli
