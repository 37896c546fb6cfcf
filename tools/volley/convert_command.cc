#include "commands.h"

namespace volley::cli {

void add_convert_command(CLI::App& app, GlobalOptions& /*global*/) {
  auto* command = app.add_subcommand("convert", "(being written)");
  command->callback([] { throw CLI::RuntimeError("'convert' is not written yet", 2); });
}

}  // namespace volley::cli
