#include "volley/core/progress.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

namespace volley {
namespace {
std::atomic<bool> g_enabled{true};
}  // namespace

void set_progress_enabled(bool enabled) { g_enabled = enabled; }

bool progress_enabled() {
  if (!g_enabled.load()) return false;
  if (const char* env = std::getenv("VOLLEY_PROGRESS");
      env != nullptr && std::strcmp(env, "0") == 0) {
    return false;
  }
  return isatty(STDERR_FILENO) == 1;
}

ProgressBar::ProgressBar(std::string label, int64_t total)
    : label_(std::move(label)),
      total_(total),
      visible_(progress_enabled()),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

ProgressBar::~ProgressBar() { finish(); }

void ProgressBar::advance(int64_t amount) {
  const int64_t done = done_.fetch_add(amount) + amount;
  if (!visible_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ < std::chrono::milliseconds(100)) return;
  std::unique_lock lock(draw_mutex_, std::try_to_lock);
  if (!lock.owns_lock() || finished_) return;
  last_draw_ = now;
  draw(done, false);
}

void ProgressBar::finish() {
  std::lock_guard lock(draw_mutex_);
  if (finished_) return;
  finished_ = true;
  if (visible_) draw(done_.load(), true);
}

void ProgressBar::draw(int64_t done, bool final) {
  constexpr int kWidth = 30;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double fraction =
      total_ > 0 ? std::min(1.0, static_cast<double>(done) / static_cast<double>(total_)) : 1.0;
  const int filled = static_cast<int>(fraction * kWidth);
  const std::string bar = std::string(filled, '#') + std::string(kWidth - filled, '.');
  const std::string line = fmt::format("\r{} [{}] {:3.0f}% {}/{} {:.1f}s", label_, bar,
                                       fraction * 100.0, done, total_, seconds);
  std::fputs(line.c_str(), stderr);
  if (final) std::fputc('\n', stderr);
  std::fflush(stderr);
}

}  // namespace volley
