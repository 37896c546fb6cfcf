#include "bench_util.h"

#include <fmt/format.h>

#include <fstream>
#include <numeric>
#include <stdexcept>

#include <time.h>

#include "volley/core/error.h"
#include "volley/loader/neighbor_loader.h"

namespace volley::cli {

double process_cpu_seconds() {
  timespec now{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

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
    VOLLEY_REQUIRE(fanouts.back() >= -1, ValueError,
                   "--fanout '{}': fanout {} at hop {} must be >= -1 (-1: all neighbors)", text,
                   fanouts.back(), fanouts.size() - 1);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return fanouts;
}

std::vector<int64_t> bench_seed_pool(const std::optional<Array>& train_idx, int64_t num_nodes,
                                     uint64_t seed) {
  std::vector<int64_t> pool;
  if (train_idx && train_idx->numel() > 0) {
    pool = train_idx->to_vector<int64_t>();
  } else {
    pool.resize(static_cast<size_t>(num_nodes));
    std::iota(pool.begin(), pool.end(), 0);
  }
  const Array order = seeded_permutation(static_cast<int64_t>(pool.size()), seed);
  std::vector<int64_t> seeds(pool.size());
  for (size_t i = 0; i < pool.size(); ++i) {
    seeds[i] = pool[static_cast<size_t>(order.data<int64_t>()[i])];
  }
  return seeds;
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
