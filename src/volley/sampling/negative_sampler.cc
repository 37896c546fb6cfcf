// volley/sampling/negative_sampler.cc — see negative_sampler.h.
#include "volley/sampling/negative_sampler.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <numeric>

#include "volley/core/error.h"
#include "volley/core/parallel.h"

namespace volley {
namespace {

constexpr uint64_t kNegativeSalt =
    0x6e65676174697665ULL;  // "negative": apart from neighbor streams
constexpr int64_t kGrain = 1024;

// The mass of each node under `options` (kDegree / kWeights), checked.
std::vector<double> node_mass(const Csr& graph, const NegativeSamplerOptions& options) {
  const int64_t n = graph.num_nodes();
  std::vector<double> mass(static_cast<size_t>(n));
  if (options.distribution == NegativeDistribution::kDegree) {
    for (int64_t v = 0; v < n; ++v) {
      const auto degree = static_cast<double>(graph.degree(v));
      mass[v] = degree > 0 ? std::pow(degree, options.degree_power) : 0.0;
    }
    return mass;
  }
  VOLLEY_REQUIRE(static_cast<int64_t>(options.weights.size()) == n, ValueError,
                 "negative sampling weights have {} entries; the graph has {} nodes",
                 options.weights.size(), n);
  for (int64_t v = 0; v < n; ++v) {
    const double w = options.weights[v];
    VOLLEY_REQUIRE(std::isfinite(w) && w >= 0, ValueError,
                   "negative sampling weight {} of node {} is not finite and >= 0", w, v);
    mass[v] = w;
  }
  return mass;
}

bool rows_are_sorted(const Csr& graph) {
  std::atomic<bool> sorted{true};
  parallel_for(0, graph.num_nodes(), 4096, [&](int64_t begin, int64_t end) {
    for (int64_t v = begin; v < end && sorted.load(std::memory_order_relaxed); ++v) {
      for (int64_t k = graph.begin(v) + 1; k < graph.end(v); ++k) {
        if (graph.neighbor(k - 1) > graph.neighbor(k)) {
          sorted = false;
          return;
        }
      }
    }
  });
  return sorted.load();
}

}  // namespace

NegativeSampler::NegativeSampler(const Csr& graph, NegativeSamplerOptions options)
    : graph_(graph), options_(std::move(options)) {
  VOLLEY_REQUIRE(graph_.num_nodes() > 0, ValueError,
                 "negative sampling needs a graph with at least one node");
  VOLLEY_REQUIRE(options_.max_draws >= 1, ValueError, "max_draws must be at least 1, got {}",
                 options_.max_draws);
  const auto kind = options_.distribution;
  VOLLEY_REQUIRE(kind == NegativeDistribution::kUniform || kind == NegativeDistribution::kDegree ||
                     kind == NegativeDistribution::kWeights,
                 ValueError, "unknown negative sampling distribution {}", static_cast<int>(kind));
  VOLLEY_REQUIRE(options_.weights.empty() || kind == NegativeDistribution::kWeights, ValueError,
                 "negative sampling weights are given ({} entries) but the distribution is not "
                 "kWeights",
                 options_.weights.size());
  VOLLEY_REQUIRE(std::isfinite(options_.degree_power), ValueError,
                 "degree_power must be finite, got {}", options_.degree_power);
  if (kind != NegativeDistribution::kUniform) {
    const std::vector<double> mass = node_mass(graph_, options_);
    cumulative_.resize(mass.size());
    std::inclusive_scan(mass.begin(), mass.end(), cumulative_.begin());
    VOLLEY_REQUIRE(cumulative_.back() > 0 && std::isfinite(cumulative_.back()), ValueError,
                   "negative sampling has no node to draw: the {} of every node is 0",
                   kind == NegativeDistribution::kDegree ? "degree" : "weight");
    for (int64_t v = graph_.num_nodes() - 1; v >= 0; --v) {
      if (mass[v] > 0) {
        last_positive_ = v;
        break;
      }
    }
  }
  if (options_.reject_existing) rows_sorted_ = rows_are_sorted(graph_);
}

PhiloxStream NegativeSampler::stream(uint64_t position, uint64_t batch_index) const {
  return PhiloxStream(options_.seed ^ kNegativeSalt,
                      {{0u, static_cast<uint32_t>(position), static_cast<uint32_t>(position >> 32),
                        static_cast<uint32_t>(batch_index)}});
}

int64_t NegativeSampler::draw(PhiloxStream& rng) const {
  if (cumulative_.empty()) return static_cast<int64_t>(rng.bounded64(graph_.num_nodes()));
  const double u = rng.uniform_double() * cumulative_.back();
  const auto it = std::upper_bound(cumulative_.begin(), cumulative_.end(), u);
  return it == cumulative_.end() ? last_positive_ : it - cumulative_.begin();
}

bool NegativeSampler::has_edge(int64_t src, int64_t dst) const {
  const int64_t n = graph_.num_nodes();
  VOLLEY_REQUIRE(src >= 0 && src < n && dst >= 0 && dst < n, IndexError,
                 "edge ({}, {}) has an id out of range for a graph with {} nodes", src, dst, n);
  const bool by_row_of_src = graph_.orientation() == Orientation::kOut;
  const int64_t row = by_row_of_src ? src : dst;
  const int64_t wanted = by_row_of_src ? dst : src;
  int64_t lo = graph_.begin(row), hi = graph_.end(row);
  if (!rows_sorted_) {
    for (int64_t k = lo; k < hi; ++k) {
      if (graph_.neighbor(k) == wanted) return true;
    }
    return false;
  }
  while (lo < hi) {  // first position whose neighbor is >= wanted
    const int64_t mid = lo + (hi - lo) / 2;
    if (graph_.neighbor(mid) < wanted) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo < graph_.end(row) && graph_.neighbor(lo) == wanted;
}

bool NegativeSampler::draw_negative(PhiloxStream& rng, int64_t& src, int64_t& dst,
                                    bool draw_src) const {
  for (int draws = 1;; ++draws) {
    if (draw_src) src = draw(rng);
    dst = draw(rng);
    if (!options_.reject_existing || !has_edge(src, dst)) return false;
    if (draws == options_.max_draws) return true;
  }
}

namespace {

// Runs item(i) for every i in [0, count) on the default pool; returns how many returned true.
template <typename Item>
int64_t count_in_parallel(int64_t count, const Item& item) {
  std::atomic<int64_t> hits{0};
  parallel_for(0, count, kGrain, [&](int64_t begin, int64_t end) {
    int64_t mine = 0;
    for (int64_t i = begin; i < end; ++i) mine += item(i) ? 1 : 0;
    hits += mine;
  });
  return hits.load();
}

}  // namespace

NegativePairs NegativeSampler::sample_pairs(int64_t count, uint64_t batch_index) const {
  VOLLEY_REQUIRE(count >= 0, ValueError, "negative count must be >= 0, got {}", count);
  NegativePairs out;
  out.src.resize(static_cast<size_t>(count));
  out.dst.resize(static_cast<size_t>(count));
  out.kept_existing = count_in_parallel(count, [&](int64_t i) {
    PhiloxStream rng = stream(static_cast<uint64_t>(i), batch_index);
    return draw_negative(rng, out.src[i], out.dst[i], /*draw_src=*/true);
  });
  return out;
}

NegativeDestinations NegativeSampler::sample_destinations(std::span<const int64_t> sources,
                                                          int64_t per_source,
                                                          uint64_t batch_index) const {
  VOLLEY_REQUIRE(per_source >= 0, ValueError, "negatives per source must be >= 0, got {}",
                 per_source);
  const int64_t n = graph_.num_nodes();
  for (size_t i = 0; i < sources.size(); ++i) {
    VOLLEY_REQUIRE(sources[i] >= 0 && sources[i] < n, IndexError,
                   "source id {} at position {} out of range for a graph with {} nodes", sources[i],
                   i, n);
  }
  NegativeDestinations out;
  const auto total = static_cast<int64_t>(sources.size()) * per_source;
  out.dst.resize(static_cast<size_t>(total));
  out.kept_existing = count_in_parallel(total, [&](int64_t i) {
    PhiloxStream rng = stream(static_cast<uint64_t>(i), batch_index);
    int64_t src = sources[i / per_source];
    return draw_negative(rng, src, out.dst[i], /*draw_src=*/false);
  });
  return out;
}

LinkSeeds link_seeds(std::span<const std::span<const int64_t>> ids) {
  LinkSeeds out;
  size_t total = 0;
  for (size_t a = 0; a < ids.size(); ++a) {
    for (size_t i = 0; i < ids[a].size(); ++i) {
      VOLLEY_REQUIRE(ids[a][i] >= 0, IndexError,
                     "node id {} at position {} of id array {} is negative", ids[a][i], i, a);
    }
    total += ids[a].size();
  }
  out.nodes.reserve(total);
  for (const auto array : ids) out.nodes.insert(out.nodes.end(), array.begin(), array.end());
  std::sort(out.nodes.begin(), out.nodes.end());
  out.nodes.erase(std::unique(out.nodes.begin(), out.nodes.end()), out.nodes.end());
  out.local.resize(ids.size());
  for (size_t a = 0; a < ids.size(); ++a) {
    auto& local = out.local[a];
    local.resize(ids[a].size());
    for (size_t i = 0; i < ids[a].size(); ++i) {
      local[i] =
          std::lower_bound(out.nodes.begin(), out.nodes.end(), ids[a][i]) - out.nodes.begin();
    }
  }
  return out;
}

}  // namespace volley
