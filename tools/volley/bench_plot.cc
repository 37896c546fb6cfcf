#include "bench_plot.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <streambuf>
#include <string>

#include "volley/core/error.h"

namespace volley::cli {
namespace {

namespace fs = std::filesystem;

// Keeps a copy of everything written to std::cout while it is installed.
class CoutCopy : public std::streambuf {
 public:
  CoutCopy() : original_(std::cout.rdbuf(this)) {}
  ~CoutCopy() override { std::cout.rdbuf(original_); }
  CoutCopy(const CoutCopy&) = delete;
  CoutCopy& operator=(const CoutCopy&) = delete;
  const std::string& text() const { return text_; }

 protected:
  int overflow(int c) override {
    if (c == traits_type::eof()) return traits_type::not_eof(c);
    text_.push_back(static_cast<char>(c));
    return original_->sputc(static_cast<char>(c));
  }
  std::streamsize xsputn(const char* data, std::streamsize count) override {
    text_.append(data, static_cast<size_t>(count));
    return original_->sputn(data, count);
  }
  int sync() override { return original_->pubsync(); }

 private:
  std::streambuf* original_;
  std::string text_;
};

// The interpreter that runs volley.plot (see the header).
std::string plot_python() {
  if (const char* python = std::getenv("VOLLEY_PYTHON"); python != nullptr && *python != '\0') {
    return python;
  }
  std::error_code error;
  const fs::path self = fs::read_symlink("/proc/self/exe", error);
  if (!error) {
    // bin/volley of a venv; or, installed from the repaired wheel,
    // <prefix>/lib/pythonX.Y/site-packages/volley.scripts/volley (auditwheel moves it there).
    for (const fs::path& candidate :
         {self.parent_path() / "python3",
          self.parent_path().parent_path().parent_path().parent_path().parent_path() / "bin" /
              "python3"}) {
      if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
    }
  }
  return "python3";
}

// Runs `python -m volley.plot path` with `input` on its stdin; returns its wait status.
int run_plotter(const std::string& python, const std::string& path, const std::string& input) {
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) {
    throw IoError(fmt::format("--plot: cannot create a pipe: {}", std::strerror(errno)));
  }
  const pid_t child = ::fork();
  if (child < 0) {
    throw IoError(fmt::format("--plot: cannot start {}: {}", python, std::strerror(errno)));
  }
  if (child == 0) {
    ::dup2(pipe_fds[0], STDIN_FILENO);
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    const char* argv[] = {python.c_str(), "-m", "volley.plot", path.c_str(), nullptr};
    ::execvp(argv[0], const_cast<char* const*>(argv));
    std::fprintf(stderr, "volley: cannot run %s: %s\n", python.c_str(), std::strerror(errno));
    ::_exit(127);
  }
  ::close(pipe_fds[0]);
  // A plotter that exits early must not kill us with SIGPIPE: its status tells what happened.
  const auto old_handler = std::signal(SIGPIPE, SIG_IGN);
  size_t written = 0;
  while (written < input.size()) {
    const ssize_t n = ::write(pipe_fds[1], input.data() + written, input.size() - written);
    if (n <= 0 && errno != EINTR) break;
    if (n > 0) written += static_cast<size_t>(n);
  }
  ::close(pipe_fds[1]);
  std::signal(SIGPIPE, old_handler);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

struct PlotState {
  std::string path;
  std::unique_ptr<CoutCopy> copy;
};

}  // namespace

void add_plot_option(CLI::App& bench) {
  auto state = std::make_shared<PlotState>();
  bench.add_option("--plot", state->path,
                   "Also draw the measured figures into this PNG (needs matplotlib; "
                   "see `python -m volley.plot --help`)");
  // Keep a copy of stdout from the start: whether --plot was given is known only after parsing,
  // and the subcommand's callback (which prints) runs before bench's own.
  bench.preparse_callback([state](size_t) { state->copy = std::make_unique<CoutCopy>(); });
  bench.callback([state] {
    if (!state->copy) return;
    std::cout.flush();
    const std::string lines = state->copy->text();
    state->copy.reset();
    if (state->path.empty()) return;
    const std::string python = plot_python();
    const int status = run_plotter(python, state->path, lines);
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    VOLLEY_REQUIRE(code == 0, RuntimeError,
                   "--plot {}: `{} -m volley.plot` failed with exit status {} (it needs the "
                   "volley Python package and matplotlib: pip install matplotlib)",
                   state->path, python, code);
    std::fprintf(stderr, "volley: wrote %s\n", state->path.c_str());
  });
}

}  // namespace volley::cli
