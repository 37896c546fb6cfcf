// tools/volley/bench_plot.h — `volley bench ... --plot FILE.png`.
//
// With --plot, the JSON lines a bench subcommand prints (they still go to stdout) are also kept
// and, once it has finished, handed on stdin to `PYTHON -m volley.plot FILE.png`, the Python
// package's plotting module (matplotlib), which draws throughput against whatever the lines
// vary (threads, batch size, mode) and, for `bench loader`, the time per batch split into
// sampling and the rest. PYTHON is $VOLLEY_PYTHON when set, else the python3 of the prefix the
// volley executable was installed into (beside it in bin/, or <prefix>/bin/python3 for the
// wheel's <prefix>/lib/pythonX.Y/site-packages/volley.scripts/volley), else python3 on PATH. A
// failing plotter is a RuntimeError naming the command and its exit status.
#pragma once

#include <CLI/CLI.hpp>

namespace volley::cli {

// Adds --plot to `bench` (a subcommand's own options come first; CLI11's fallthrough lets
// `volley bench sample ... --plot f.png` reach it).
void add_plot_option(CLI::App& bench);

}  // namespace volley::cli
