// volley — the command-line tool: info, convert, generate, bench.
#include <cstdio>
#include <exception>
#include <string>

#include "commands.h"
#include "volley/core/error.h"
#include "volley/core/parallel.h"
#include "volley/core/progress.h"
#include "volley/core/version.h"

int main(int argc, char** argv) {
  CLI::App app{"Volley: fast graph data paths for GNN training"};
  app.set_version_flag("--version", std::string("volley ") + volley::kVersion);
  app.require_subcommand(1);
  // Options a subcommand does not know fall through to the app, so the global options work on
  // either side of the subcommand: `volley -q generate ...` and `volley generate ... -q`. Set
  // before the subcommands are added: they inherit it.
  app.fallthrough();
  volley::cli::GlobalOptions global;
  app.add_flag("-q,--quiet", global.quiet, "No progress bars");
  app.add_option("-t,--threads", global.threads, "Worker threads (default: all cores)")
      ->check(volley::cli::kNonNegative);
  app.parse_complete_callback([&] {
    volley::set_progress_enabled(!global.quiet);
    if (global.threads > 0) volley::set_num_threads(global.threads);
  });
  volley::cli::add_info_command(app, global);
  volley::cli::add_convert_command(app, global);
  volley::cli::add_generate_command(app, global);
  volley::cli::add_bench_command(app, global);
  volley::cli::add_partition_command(app, global);
  volley::cli::add_split_edges_command(app, global);
  volley::cli::add_serve_command(app, global);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app.exit(error);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "volley: error: %s\n", error.what());
    return 1;
  }
  return 0;
}
