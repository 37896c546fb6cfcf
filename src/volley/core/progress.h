// volley/core/progress.h — a progress bar for long work.
//
//   ProgressBar bar("partition", total_edges);
//   ... bar.advance(chunk); ...   // thread-safe
//   bar.finish();                 // also done by the destructor
//
// Draws on stderr only when stderr is a terminal and progress is enabled (set_progress_enabled
// (false) is what `--quiet` does; VOLLEY_PROGRESS=0 does the same from the environment).
// Redraws at most ten times a second, so advance() is cheap to call often.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

namespace volley {

void set_progress_enabled(bool enabled);
// Enabled, not disabled by VOLLEY_PROGRESS=0, and stderr is a terminal.
bool progress_enabled();

class ProgressBar {
 public:
  ProgressBar(std::string label, int64_t total);
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  void advance(int64_t amount = 1);
  void finish();
  bool visible() const { return visible_; }

 private:
  void draw(int64_t done, bool final);

  std::string label_;
  int64_t total_;
  bool visible_;
  bool finished_ = false;
  std::atomic<int64_t> done_{0};
  std::mutex draw_mutex_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace volley
