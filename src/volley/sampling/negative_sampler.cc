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

using End = NegativeSampler::End;

// The mass of each node of an end (`what`: "the graph", "the source type", ...) under
// `options`, checked; empty for a uniform end (kUniform, or kWeights without weights when
// `weights_optional`).
std::vector<double> node_mass(const char* what, int64_t n, std::span<const int64_t> degrees,
                              const std::vector<double>& weights,
                              const NegativeSamplerOptions& options, bool weights_optional) {
  if (options.distribution == NegativeDistribution::kUniform) return {};
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
  if (weights.empty() && weights_optional) return {};
  VOLLEY_REQUIRE(static_cast<int64_t>(weights.size()) == n, ValueError,
                 "negative sampling weights have {} entries; {} has {} nodes", weights.size(), what,
                 n);
  for (int64_t v = 0; v < n; ++v) {
    const double w = weights[v];
    VOLLEY_REQUIRE(std::isfinite(w) && w >= 0, ValueError,
                   "negative sampling weight {} of node {} is not finite and >= 0", w, v);
    mass[v] = w;
  }
  return mass;
}

// The prefix sums of `mass` into `end` (cumulative, last_positive); ValueError when no node of
// the end has a positive mass.
void prepare_mass(const char* what, const std::vector<double>& mass,
                  const NegativeSamplerOptions& options, End& end) {
  end.cumulative.resize(mass.size());
  std::inclusive_scan(mass.begin(), mass.end(), end.cumulative.begin());
  VOLLEY_REQUIRE(
      !end.cumulative.empty() && end.cumulative.back() > 0 && std::isfinite(end.cumulative.back()),
      ValueError, "negative sampling has no node to draw: the {} of every node of {} is 0",
      options.distribution == NegativeDistribution::kDegree ? "degree" : "weight", what);
  for (auto v = static_cast<int64_t>(mass.size()) - 1; v >= 0; --v) {
    if (mass[v] > 0) {
      end.last_positive = v;
      break;
    }
  }
}

// The time order of an end (by_time, sorted_time, cumulative_by_time).
void prepare_time_order(const std::vector<int64_t>& time, const std::vector<double>& mass,
                        End& end) {
  end.by_time.resize(time.size());
  std::iota(end.by_time.begin(), end.by_time.end(), int64_t{0});
  std::stable_sort(end.by_time.begin(), end.by_time.end(),
                   [&](int64_t a, int64_t b) { return time[a] < time[b]; });
  end.sorted_time.resize(end.by_time.size());
  for (size_t k = 0; k < end.by_time.size(); ++k) end.sorted_time[k] = time[end.by_time[k]];
  if (mass.empty()) return;
  end.cumulative_by_time.resize(end.by_time.size());
  double total = 0;
  for (size_t k = 0; k < end.by_time.size(); ++k) {
    total += mass[end.by_time[k]];
    end.cumulative_by_time[k] = total;
  }
}

// One end's tables, checked (ValueError naming `what`).
std::shared_ptr<const End> make_end(const char* what, int64_t n, std::span<const int64_t> degrees,
                                    const std::vector<double>& weights,
                                    const std::vector<int64_t>& node_time,
                                    const NegativeSamplerOptions& options, bool weights_optional) {
  VOLLEY_REQUIRE(n > 0, ValueError, "negative sampling needs {} with at least one node, got {}",
                 what, n);
  VOLLEY_REQUIRE(node_time.empty() || static_cast<int64_t>(node_time.size()) == n, ValueError,
                 "negative sampling node_time has {} entries; {} has {} nodes", node_time.size(),
                 what, n);
  auto end = std::make_shared<End>();
  end->num_nodes = n;
  const std::vector<double> mass = node_mass(what, n, degrees, weights, options, weights_optional);
  if (!mass.empty()) prepare_mass(what, mass, options, *end);
  if (!node_time.empty()) prepare_time_order(node_time, mass, *end);
  return end;
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
                   std::span<const int64_t> dst, uint8_t* out, int64_t num_neighbors) {
  VOLLEY_REQUIRE(src.size() == dst.size(), ValueError,
                 "edge check needs as many sources as destinations, got {} and {}", src.size(),
                 dst.size());
  const bool by_row_of_src = graph.orientation() == Orientation::kOut;
  const int64_t rows = graph.num_nodes();
  const int64_t others = num_neighbors < 0 ? rows : num_neighbors;
  const int64_t src_count = by_row_of_src ? rows : others;
  const int64_t dst_count = by_row_of_src ? others : rows;
  for (size_t i = 0; i < src.size(); ++i) {
    if (!(src[i] >= 0 && src[i] < src_count && dst[i] >= 0 && dst[i] < dst_count)) {
      throw IndexError(
          src_count != dst_count
              ? fmt::format("edge ({}, {}) at position {} has an id out of range: sources in "
                            "[0, {}), destinations in [0, {})",
                            src[i], dst[i], i, src_count, dst_count)
              : fmt::format("edge ({}, {}) at position {} has an id out of range for a graph "
                            "with {} nodes",
                            src[i], dst[i], i, rows));
    }
    out[i] = by_row_of_src ? row_holds(graph, rows_sorted, src[i], dst[i])
                           : row_holds(graph, rows_sorted, dst[i], src[i]);
  }
}

NegativeSampler::NegativeSampler(const Csr& graph, NegativeSamplerOptions options)
    : options_(std::move(options)) {
  VOLLEY_REQUIRE(graph.num_nodes() > 0, ValueError,
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
  check_options();
  const bool by_degree = options_.distribution == NegativeDistribution::kDegree;
  const std::vector<int64_t> degrees = by_degree ? row_lengths(graph) : std::vector<int64_t>{};
  src_ = dst_ = make_end("the graph", graph.num_nodes(), degrees, options_.weights,
                         options_.node_time, options_, false);
}

NegativeSampler::NegativeSampler(int64_t num_nodes, std::span<const int64_t> degrees,
                                 EdgeOracle has_edges, NegativeSamplerOptions options)
    : has_edges_(std::move(has_edges)), options_(std::move(options)) {
  VOLLEY_REQUIRE(num_nodes > 0, ValueError,
                 "negative sampling needs a graph with at least one node, got {}", num_nodes);
  check_options();
  src_ = dst_ = make_end("the graph", num_nodes, degrees, options_.weights, options_.node_time,
                         options_, false);
}

NegativeSampler::NegativeSampler(NegativeNodes sources, NegativeNodes destinations,
                                 EdgeOracle has_edges, NegativeSamplerOptions options)
    : has_edges_(std::move(has_edges)), options_(std::move(options)) {
  VOLLEY_REQUIRE(options_.weights.empty() && options_.node_time.empty(), ValueError,
                 "a typed edge's negative sampler takes weights and node times per end "
                 "(NegativeNodes), got {} weights and {} node times in the options",
                 options_.weights.size(), options_.node_time.size());
  check_options();
  src_ = make_end("the source type", sources.num_nodes, sources.degrees, sources.weights,
                  sources.node_time, options_, true);
  dst_ = make_end("the destination type", destinations.num_nodes, destinations.degrees,
                  destinations.weights, destinations.node_time, options_, true);
}

void NegativeSampler::check_options() const {
  VOLLEY_REQUIRE(!options_.reject_existing || has_edges_, ValueError,
                 "reject_existing needs an edge check, got none");
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

int64_t NegativeSampler::draw(const End& end, PhiloxStream& rng, const int64_t* bound) {
  if (bound == nullptr || end.by_time.empty()) {
    const std::vector<double>& cumulative = end.cumulative;
    if (cumulative.empty()) return static_cast<int64_t>(rng.bounded64(end.num_nodes));
    const double u = rng.uniform_double() * cumulative.back();
    const auto it = std::upper_bound(cumulative.begin(), cumulative.end(), u);
    return it == cumulative.end() ? end.last_positive : it - cumulative.begin();
  }
  // The nodes no later than *bound are by_time[0, early).
  const auto early = static_cast<int64_t>(
      std::upper_bound(end.sorted_time.begin(), end.sorted_time.end(), *bound) -
      end.sorted_time.begin());
  if (early == 0) return end.by_time[0];  // none: the earliest node (PyG: node_time.argmin())
  const std::vector<double>& cumulative = end.cumulative_by_time;
  if (cumulative.empty()) return end.by_time[rng.bounded64(static_cast<uint64_t>(early))];
  const auto last = cumulative.begin() + early;
  const double mass = *(last - 1);
  if (!(mass > 0)) return end.by_time[0];  // no early node has mass
  const double u = rng.uniform_double() * mass;
  auto it = std::upper_bound(cumulative.begin(), last, u);
  if (it == last) it = std::lower_bound(cumulative.begin(), last, mass);  // rounding
  return end.by_time[it - cumulative.begin()];
}

bool NegativeSampler::has_edge(int64_t src, int64_t dst) const {
  const int64_t n = src_->num_nodes;
  const int64_t m = dst_->num_nodes;
  if (!(src >= 0 && src < n && dst >= 0 && dst < m)) {
    throw IndexError(src_ == dst_ ? fmt::format("edge ({}, {}) has an id out of range for a "
                                                "graph with {} nodes",
                                                src, dst, n)
                                  : fmt::format("edge ({}, {}) has an id out of range: sources "
                                                "in [0, {}), destinations in [0, {})",
                                                src, dst, n, m));
  }
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
    if (sources == nullptr) src[i] = draw(*src_, rng, bound);
    dst[i] = draw(*dst_, rng, bound);
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
  VOLLEY_REQUIRE(!src_->by_time.empty() || !dst_->by_time.empty(), ValueError,
                 "negative sampling time bounds need options.node_time (or node times of an "
                 "end), got none");
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
  const int64_t n = src_->num_nodes;
  for (size_t i = 0; i < sources.size(); ++i) {
    VOLLEY_REQUIRE(sources[i] >= 0 && sources[i] < n, IndexError,
                   "source id {} at position {} out of range for {} with {} nodes", sources[i], i,
                   src_ == dst_ ? "a graph" : "a source type", n);
  }
  NegativeDestinations out;
  const auto total = static_cast<int64_t>(sources.size()) * per_source;
  out.dst.resize(static_cast<size_t>(total));
  std::vector<int64_t> src(static_cast<size_t>(total));
  out.kept_existing = draw_negatives(total, sources.data(), bounds, per_source, batch_index,
                                     src.data(), out.dst.data());
  return out;
}

NegativeSampler edge_type_negatives(const HeteroGraph& graph, const EdgeType& type,
                                    NegativeNodes sources, NegativeNodes destinations,
                                    NegativeSamplerOptions options) {
  sources.num_nodes = graph.num_nodes(graph.node_type_index(type.src));
  destinations.num_nodes = graph.num_nodes(graph.node_type_index(type.dst));
  sources.degrees.assign(static_cast<size_t>(sources.num_nodes), 0);
  destinations.degrees.assign(static_cast<size_t>(destinations.num_nodes), 0);
  const int index = graph.find_edge_type(type);
  if (index < 0) {  // no message-passing edges of this type: none to reject, degrees 0
    const EdgeOracle none = [](std::span<const int64_t>, std::span<const int64_t> dst,
                               uint8_t* out) { std::fill(out, out + dst.size(), uint8_t{0}); };
    return NegativeSampler(std::move(sources), std::move(destinations), none, std::move(options));
  }
  const Csr& edges = graph.edges(index);  // rows: destinations; neighbors: sources (kIn)
  if (options.distribution == NegativeDistribution::kDegree) {
    for (int64_t v = 0; v < edges.num_nodes(); ++v) {
      destinations.degrees[v] = edges.degree(v);
      for (int64_t k = edges.begin(v); k < edges.end(v); ++k) ++sources.degrees[edges.neighbor(k)];
    }
  }
  const bool sorted = options.reject_existing && csr_rows_sorted(edges);
  const int64_t num_sources = sources.num_nodes;
  const EdgeOracle has_edges = [edges, sorted, num_sources](std::span<const int64_t> src,
                                                            std::span<const int64_t> dst,
                                                            uint8_t* out) {
    csr_has_edges(edges, sorted, src, dst, out, num_sources);
  };
  return NegativeSampler(std::move(sources), std::move(destinations), has_edges,
                         std::move(options));
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
