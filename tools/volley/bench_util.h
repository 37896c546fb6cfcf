// tools/volley/bench_util.h — small helpers shared by the `volley bench` subcommands.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace volley::cli {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// "15,10,5" → {15, 10, 5}; ValueError naming the item that is not an integer.
std::vector<int64_t> parse_fanouts(const std::string& text);

// The 1-, 5- and 15-minute load averages from /proc/loadavg, -1 each when unreadable.
struct LoadAverage {
  double one = -1, five = -1, fifteen = -1;
  // "0.47 1.98 3.16" as /proc/loadavg writes them, or "unknown".
  std::string text() const;
};
LoadAverage load_average();

}  // namespace volley::cli
