#include "commands.h"

namespace volley::cli {

void add_info_command(CLI::App& app, GlobalOptions& /*global*/) {
  auto* command = app.add_subcommand("info", "(being written)");
  command->callback([] { throw CLI::RuntimeError("'info' is not written yet", 2); });
}

}  // namespace volley::cli
