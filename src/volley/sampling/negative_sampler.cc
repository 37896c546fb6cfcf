// volley/sampling/negative_sampler.cc — see negative_sampler.h.
#include "volley/sampling/negative_sampler.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>
#include <mutex>
#include <numeric>

#include "volley/core/error.h"
#include "volley/core/parallel.h"

namespace volley {
namespace {

constexpr uint64_t kNegativeSalt =
    0x6e65676174697665ULL;  // "negative": apart from neighbor streams
constexpr int64_t kGrain = 1024;

// The mass of each node under `options` (kDegree / kWeights), checked.
std::vector<double> node_mass(int64_t n, std::span<const int64_t> degrees,
                              const NegativeSamplerOptions& options) {
  std::vector<double> mass(static_cast<size_t>(n));
  if (options.distribution == NegativeDistribution::kDegree) {
    VOLLEY_REQUIRE(static_cast<int64_t>(degrees.size()) == n, ValueError,
                   "degree-based negative sampling needs {} node degrees, got {}", n,
                   degrees.size());
    for (int64_t v = 0; v < n; ++v) {
      const auto degree = static_cast<double>(degrees[v]);
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

std::vector<int64_t> row_lengths(const Csr& graph) {
  std::vector<int64_t> degrees(static_cast<size_t>(graph.num_nodes()));
  for (int64_t v = 0; v < graph.num_nodes(); ++v) degrees[v] = graph.degree(v);
  return degrees;
}

bool row_holds(const Csr& graph, bool sorted, int64_t row, int64_t wanted) {
  int64_t lo = graph.begin(row), hi = graph.end(row);
  if (!sorted) {
    for (int64_t k = lo; k < hi; ++k) {
      if (graph.neighbor(k) == wanted) return true;
    }
    return false;
  }
  while (lo < hi) {  // first position whose neighbor is >= wanted
    const int64_t mid = lo + (hi - lo) / 2;
    if (graph.neighbor(mid) < wanted) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo < graph.end(row) && graph.neighbor(lo) == wanted;
}

// Runs item(i) for every i in [0, count) on the default pool.
template <typename Item>
void for_each_in_parallel(int64_t count, const Item& item) {
  parallel_for(0, count, kGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) item(i);
  });
}

}  // namespace

bool csr_rows_sorted(const Csr& graph) {
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

void csr_has_edges(const Csr& graph, bool rows_sorted, std::span<const int64_t> src,
                   std::span<const int64_t> dst, uint8_t* out) {
  VOLLEY_REQUIRE(src.size() == dst.size(), ValueError,
                 "edge check needs as many sources as destinations, got {} and {}", src.size(),
                 dst.size());
  const int64_t n = graph.num_nodes();
  const bool by_row_of_src = graph.orientation() == Orientation::kOut;
  for (size_t i = 0; i < src.size(); ++i) {
    VOLLEY_REQUIRE(src[i] >= 0 && src[i] < n && dst[i] >= 0 && dst[i] < n, IndexError,
                   "edge ({}, {}) at position {} has an id out of range for a graph with {} nodes",
                   src[i], dst[i], i, n);
    out[i] = by_row_of_src ? row_holds(graph, rows_sorted, src[i], dst[i])
                           : row_holds(graph, rows_sorted, dst[i], src[i]);
  }
}

NegativeSampler::NegativeSampler(const Csr& graph, NegativeSamplerOptions options)
    : num_nodes_(graph.num_nodes()), options_(std::move(options)) {
  VOLLEY_REQUIRE(num_nodes_ > 0, ValueError,
                 "negative sampling needs a graph with at least one node");
  // Whether rows are sorted is learnt once, up front with reject_existing, else on first use.
  struct Sorted {
    std::once_flag once;
    bool value = true;
  };
  auto sorted = std::make_shared<Sorted>();
  const auto learn = [graph, sorted] {
    std::call_once(sorted->once, [&] { sorted->value = csr_rows_sorted(graph); });
  };
  if (options_.reject_existing) learn();
  has_edges_ = [graph, sorted, learn](std::span<const int64_t> src, std::span<const int64_t> dst,
                                      uint8_t* out) {
    learn();
    csr_has_edges(graph, sorted->value, src, dst, out);
  };
  const bool by_degree = options_.distribution == NegativeDistribution::kDegree;
  prepare(by_degree ? row_lengths(graph) : std::vector<int64_t>{});
}

NegativeSampler::NegativeSampler(int64_t num_nodes, std::span<const int64_t> degrees,
                                 EdgeOracle has_edges, NegativeSamplerOptions options)
    : num_nodes_(num_nodes), has_edges_(std::move(has_edges)), options_(std::move(options)) {
  VOLLEY_REQUIRE(num_nodes_ > 0, ValueError,
                 "negative sampling needs a graph with at least one node, got {}", num_nodes_);
  VOLLEY_REQUIRE(!options_.reject_existing || has_edges_, ValueError,
                 "reject_existing needs an edge check, got none");
  prepare(degrees);
}

void NegativeSampler::prepare(std::span<const int64_t> degrees) {
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
  VOLLEY_REQUIRE(
      options_.node_time.empty() || static_cast<int64_t>(options_.node_time.size()) == num_nodes_,
      ValueError, "negative sampling node_time has {} entries; the graph has {} nodes",
      options_.node_time.size(), num_nodes_);
  std::vector<double> mass;  // kUniform: none
  if (kind != NegativeDistribution::kUniform) prepare_mass(degrees, mass);
  if (!options_.node_time.empty()) prepare_time_order(mass);
}

void NegativeSampler::prepare_mass(std::span<const int64_t> degrees, std::vector<double>& mass) {
  const auto kind = options_.distribution;
  mass = node_mass(num_nodes_, degrees, options_);
  cumulative_.resize(mass.size());
  std::inclusive_scan(mass.begin(), mass.end(), cumulative_.begin());
  VOLLEY_REQUIRE(cumulative_.back() > 0 && std::isfinite(cumulative_.back()), ValueError,
                 "negative sampling has no node to draw: the {} of every node is 0",
                 kind == NegativeDistribution::kDegree ? "degree" : "weight");
  for (int64_t v = num_nodes_ - 1; v >= 0; --v) {
    if (mass[v] > 0) {
      last_positive_ = v;
      break;
    }
  }
}

void NegativeSampler::prepare_time_order(const std::vector<double>& mass) {
  const std::vector<int64_t>& time = options_.node_time;
  by_time_.resize(static_cast<size_t>(num_nodes_));
  std::iota(by_time_.begin(), by_time_.end(), int64_t{0});
  std::stable_sort(by_time_.begin(), by_time_.end(),
                   [&](int64_t a, int64_t b) { return time[a] < time[b]; });
  sorted_time_.resize(by_time_.size());
  for (size_t k = 0; k < by_time_.size(); ++k) sorted_time_[k] = time[by_time_[k]];
  if (mass.empty()) return;
  cumulative_by_time_.resize(by_time_.size());
  double total = 0;
  for (size_t k = 0; k < by_time_.size(); ++k) {
    total += mass[by_time_[k]];
    cumulative_by_time_[k] = total;
  }
}

NegativeSampler NegativeSampler::reseeded(uint64_t seed) const {
  NegativeSampler out = *this;
  out.options_.seed = seed;
  return out;
}

PhiloxStream NegativeSampler::stream(uint64_t position, uint64_t batch_index) const {
  return PhiloxStream(options_.seed ^ kNegativeSalt,
                      {{0u, static_cast<uint32_t>(position), static_cast<uint32_t>(position >> 32),
                        static_cast<uint32_t>(batch_index)}});
}

int64_t NegativeSampler::draw(PhiloxStream& rng, const int64_t* bound) const {
  if (bound == nullptr) {
    if (cumulative_.empty()) return static_cast<int64_t>(rng.bounded64(num_nodes_));
    const double u = rng.uniform_double() * cumulative_.back();
    const auto it = std::upper_bound(cumulative_.begin(), cumulative_.end(), u);
    return it == cumulative_.end() ? last_positive_ : it - cumulative_.begin();
  }
  // The nodes no later than *bound are by_time_[0, early).
  const auto early = static_cast<int64_t>(
      std::upper_bound(sorted_time_.begin(), sorted_time_.end(), *bound) - sorted_time_.begin());
  if (early == 0) return by_time_[0];  // none: the earliest node (PyG: node_time.argmin())
  if (cumulative_by_time_.empty()) {
    return by_time_[rng.bounded64(static_cast<uint64_t>(early))];
  }
  const auto end = cumulative_by_time_.begin() + early;
  const double mass = *(end - 1);
  if (!(mass > 0)) return by_time_[0];  // no early node has mass
  const double u = rng.uniform_double() * mass;
  auto it = std::upper_bound(cumulative_by_time_.begin(), end, u);
  if (it == end) it = std::lower_bound(cumulative_by_time_.begin(), end, mass);  // rounding
  return by_time_[it - cumulative_by_time_.begin()];
}

bool NegativeSampler::has_edge(int64_t src, int64_t dst) const {
  const int64_t n = num_nodes_;
  VOLLEY_REQUIRE(src >= 0 && src < n && dst >= 0 && dst < n, IndexError,
                 "edge ({}, {}) has an id out of range for a graph with {} nodes", src, dst, n);
  VOLLEY_REQUIRE(has_edges_ != nullptr, ValueError,
                 "this negative sampler has no edge check (reject_existing is off and the graph "
                 "was not given)");
  uint8_t hit = 0;
  has_edges_(std::span<const int64_t>(&src, 1), std::span<const int64_t>(&dst, 1), &hit);
  return hit != 0;
}

int64_t NegativeSampler::draw_negatives(int64_t count, const int64_t* sources,
                                        const int64_t* bounds, int64_t per_source,
                                        uint64_t batch_index, int64_t* src, int64_t* dst) const {
  const bool reject = options_.reject_existing;
  std::vector<PhiloxStream> streams;
  if (reject) streams.resize(static_cast<size_t>(count), stream(0, batch_index));
  const auto draw_one = [&](int64_t i, PhiloxStream& rng) {
    const int64_t* bound = bounds == nullptr ? nullptr : bounds + i / per_source;
    if (sources == nullptr) src[i] = draw(rng, bound);
    dst[i] = draw(rng, bound);
  };
  for_each_in_parallel(count, [&](int64_t i) {
    PhiloxStream rng = stream(static_cast<uint64_t>(i), batch_index);
    if (sources != nullptr) src[i] = sources[i / per_source];
    draw_one(i, rng);
    if (reject) streams[i] = rng;
  });
  if (!reject || count == 0) return 0;
  // Round r: check every pending candidate in one call; those that are edges draw again.
  std::vector<int64_t> pending(static_cast<size_t>(count));
  std::iota(pending.begin(), pending.end(), int64_t{0});
  std::vector<int64_t> check_src, check_dst;
  std::vector<uint8_t> hit;
  for (int draws = 1;; ++draws) {
    check_src.resize(pending.size());
    check_dst.resize(pending.size());
    hit.assign(pending.size(), 0);
    for (size_t k = 0; k < pending.size(); ++k) {
      check_src[k] = src[pending[k]];
      check_dst[k] = dst[pending[k]];
    }
    has_edges_(check_src, check_dst, hit.data());
    size_t kept = 0;
    for (size_t k = 0; k < pending.size(); ++k) {
      if (hit[k]) pending[kept++] = pending[k];
    }
    pending.resize(kept);
    if (pending.empty() || draws == options_.max_draws) break;
    for_each_in_parallel(static_cast<int64_t>(pending.size()), [&](int64_t k) {
      const int64_t i = pending[k];
      draw_one(i, streams[i]);
    });
  }
  return static_cast<int64_t>(pending.size());
}

const int64_t* NegativeSampler::checked_bounds(std::span<const int64_t> time_bounds,
                                               size_t expected) const {
  if (time_bounds.empty()) return nullptr;
  VOLLEY_REQUIRE(!by_time_.empty(), ValueError,
                 "negative sampling time bounds need options.node_time, got none");
  VOLLEY_REQUIRE(time_bounds.size() == expected, ValueError,
                 "negative sampling got {} time bounds, expected {}", time_bounds.size(), expected);
  return time_bounds.data();
}

NegativePairs NegativeSampler::sample_pairs(int64_t count, uint64_t batch_index,
                                            std::span<const int64_t> time_bounds) const {
  VOLLEY_REQUIRE(count >= 0, ValueError, "negative count must be >= 0, got {}", count);
  const int64_t* bounds = checked_bounds(time_bounds, static_cast<size_t>(count));
  NegativePairs out;
  out.src.resize(static_cast<size_t>(count));
  out.dst.resize(static_cast<size_t>(count));
  out.kept_existing =
      draw_negatives(count, nullptr, bounds, 1, batch_index, out.src.data(), out.dst.data());
  return out;
}

NegativeDestinations NegativeSampler::sample_destinations(
    std::span<const int64_t> sources, int64_t per_source, uint64_t batch_index,
    std::span<const int64_t> time_bounds) const {
  VOLLEY_REQUIRE(per_source >= 0, ValueError, "negatives per source must be >= 0, got {}",
                 per_source);
  const int64_t* bounds = checked_bounds(time_bounds, sources.size());
  const int64_t n = num_nodes_;
  for (size_t i = 0; i < sources.size(); ++i) {
    VOLLEY_REQUIRE(sources[i] >= 0 && sources[i] < n, IndexError,
                   "source id {} at position {} out of range for a graph with {} nodes", sources[i],
                   i, n);
  }
  NegativeDestinations out;
  const auto total = static_cast<int64_t>(sources.size()) * per_source;
  out.dst.resize(static_cast<size_t>(total));
  std::vector<int64_t> src(static_cast<size_t>(total));
  out.kept_existing = draw_negatives(total, sources.data(), bounds, per_source, batch_index,
                                     src.data(), out.dst.data());
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
