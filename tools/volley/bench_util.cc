#include "bench_util.h"

#include <fmt/format.h>

#include <fstream>
#include <stdexcept>

#include "volley/core/error.h"

namespace volley::cli {

std::vector<int64_t> parse_fanouts(const std::string& text) {
  std::vector<int64_t> fanouts;
  for (size_t start = 0;;) {
    const size_t comma = text.find(',', start);
    const std::string item =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    try {
      size_t used = 0;
      fanouts.push_back(std::stoll(item, &used));
      if (used != item.size()) throw std::invalid_argument(item);
    } catch (const std::exception&) {
      throw ValueError(fmt::format("--fanout '{}': '{}' is not an integer", text, item));
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return fanouts;
}

std::string LoadAverage::text() const {
  if (one < 0) return "unknown";
  return fmt::format("{:.2f} {:.2f} {:.2f}", one, five, fifteen);
}

LoadAverage load_average() {
  LoadAverage load;
  std::ifstream file("/proc/loadavg");
  if (!(file >> load.one >> load.five >> load.fifteen)) return {};
  return load;
}

}  // namespace volley::cli
