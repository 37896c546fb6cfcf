#include "volley/graph/generate.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <future>
#include <limits>
#include <numbers>
#include <numeric>
#include <span>
#include <vector>

#include "volley/core/half.h"
#include "volley/core/parallel.h"
#include "volley/core/philox.h"
#include "volley/core/progress.h"
#include "volley/graph/dataset.h"
#include "volley/graph/generate_hetero.h"
#include "volley/graph/internal/generator.h"
#include "volley/graph/io/npy.h"

namespace volley {

std::string_view graph_model_name(GraphModel model) {
  constexpr std::string_view kNames[] = {"powerlaw", "rmat", "temporal", "hetero"};
  return kNames[static_cast<size_t>(model)];
}

GraphModel graph_model_from_name(std::string_view name) {
  if (name == "powerlaw") return GraphModel::kPowerLaw;
  if (name == "rmat") return GraphModel::kRmat;
  if (name == "temporal") return GraphModel::kTemporal;
  if (name == "hetero") return GraphModel::kHetero;
  throw ValueError(fmt::format(
      "unknown graph model '{}': expected 'powerlaw', 'rmat', 'temporal' or 'hetero'", name));
}

namespace generator_internal {

// A uniformly random permutation of [0, n) (Fisher–Yates, one stream).
std::vector<int32_t> seeded_permutation(int64_t n, uint64_t seed, Purpose purpose) {
  std::vector<int32_t> permutation(static_cast<size_t>(n));
  std::iota(permutation.begin(), permutation.end(), 0);
  PhiloxStream rng = stream_for(seed, purpose, 0);
  for (int64_t i = n - 1; i > 0; --i) {
    const uint32_t j = rng.bounded(static_cast<uint32_t>(i + 1));
    std::swap(permutation[static_cast<size_t>(i)], permutation[j]);
  }
  return permutation;
}

// Builds slots for `ids` drawn ∝ `weights` (Vose's method; sequential, so deterministic).
// Weights must be >= 0 with a positive sum.
void build_alias(std::span<const double> weights, std::span<const int32_t> ids,
                 std::span<AliasSlot> slots) {
  const size_t n = weights.size();
  VOLLEY_ASSERT(ids.size() == n && slots.size() == n && n > 0);
  double total = 0;
  for (double w : weights) total += w;
  VOLLEY_ASSERT(total > 0);
  std::vector<double> scaled(n);
  std::vector<uint32_t> small, large;
  for (size_t i = 0; i < n; ++i) {
    scaled[i] = weights[i] * static_cast<double>(n) / total;
    (scaled[i] < 1.0 ? small : large).push_back(static_cast<uint32_t>(i));
  }
  auto set_slot = [&](uint32_t slot, double probability, uint32_t alias) {
    const double scaled_threshold = std::ldexp(probability, 32);
    slots[slot].threshold = scaled_threshold >= 4294967295.0
                                ? 0xffffffffu
                                : static_cast<uint32_t>(std::max(0.0, scaled_threshold));
    slots[slot].accept = ids[slot];
    slots[slot].reject = ids[alias];
  };
  while (!small.empty() && !large.empty()) {
    const uint32_t less = small.back();
    small.pop_back();
    const uint32_t more = large.back();
    set_slot(less, scaled[less], more);
    scaled[more] -= 1.0 - scaled[less];
    if (scaled[more] < 1.0) {
      large.pop_back();
      small.push_back(more);
    }
  }
  // Leftovers are 1 up to rounding: they always keep their own item.
  for (uint32_t i : large) set_slot(i, 1.0, i);
  for (uint32_t i : small) set_slot(i, 1.0, i);
}

void SourcePool::fill_row(PhiloxStream& rng, int32_t row_class, uint64_t homophily_threshold,
                          int64_t self, int64_t degree, int32_t* out) const {
  constexpr int kMaxRounds = 8;
  int64_t have = 0;
  for (int round = 0; round < kMaxRounds && have < degree; ++round) {
    int64_t budget = 2 * (degree - have) + 16;  // bounds self-loop redraws
    while (have < degree && budget-- > 0) {
      const int32_t source = draw(rng, row_class, homophily_threshold);
      if (source != self) out[have++] = source;
    }
    std::sort(out, out + have);
    have = std::unique(out, out + have) - out;
  }
  if (have == degree) return;
  const int64_t drawn = have;
  int64_t candidate = static_cast<int64_t>(rng.bounded64(static_cast<uint64_t>(size)));
  while (have < degree) {
    if (candidate != self && !std::binary_search(out, out + drawn, candidate)) {
      out[have++] = static_cast<int32_t>(candidate);
    }
    candidate = candidate + 1 == size ? 0 : candidate + 1;
  }
  std::sort(out, out + degree);
}

SourcePool build_source_pool(std::span<const double> weights, std::span<const int32_t> classes,
                             int64_t num_classes) {
  const size_t count = weights.size();
  SourcePool pool;
  pool.size = static_cast<int64_t>(count);
  std::vector<int32_t> ids(count);
  std::iota(ids.begin(), ids.end(), 0);
  pool.global.resize(count);
  build_alias(weights, ids, pool.global);
  if (classes.empty()) return pool;
  pool.class_offset.assign(static_cast<size_t>(num_classes) + 1, 0);
  for (int32_t c : classes) ++pool.class_offset[static_cast<size_t>(c) + 1];
  std::partial_sum(pool.class_offset.begin(), pool.class_offset.end(), pool.class_offset.begin());
  // Members of each class in id order, with their weights.
  std::vector<int64_t> cursor(pool.class_offset.begin(), pool.class_offset.end() - 1);
  std::vector<double> member_weights(count);
  for (size_t v = 0; v < count; ++v) {
    const size_t k = static_cast<size_t>(cursor[static_cast<size_t>(classes[v])]++);
    ids[k] = static_cast<int32_t>(v);
    member_weights[k] = weights[v];
  }
  pool.by_class.resize(count);
  parallel_for(0, num_classes, 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      const size_t first = static_cast<size_t>(pool.class_offset[static_cast<size_t>(c)]);
      const size_t size =
          static_cast<size_t>(pool.class_offset[static_cast<size_t>(c) + 1]) - first;
      if (size == 0) continue;
      build_alias(std::span(member_weights).subspan(first, size),
                  std::span(ids).subspan(first, size),
                  std::span(pool.by_class).subspan(first, size));
    }
  });
  return pool;
}

}  // namespace generator_internal

namespace {

using namespace generator_internal;

int32_t label_of(uint64_t seed, int64_t node, int64_t num_classes) {
  return static_cast<int32_t>(stream_for(seed, Purpose::kLabel, static_cast<uint64_t>(node))
                                  .bounded(static_cast<uint32_t>(num_classes)));
}

// Box–Muller: fills `out` with `count` standard normal floats from `rng`.
void fill_normals(PhiloxStream& rng, float* out, int64_t count) {
  constexpr float kTwoPi = 2.0f * std::numbers::pi_v<float>;
  for (int64_t j = 0; j < count; j += 2) {
    const float u1 = (static_cast<float>(rng.next() >> 8) + 1.0f) * 0x1.0p-24f;  // (0, 1]
    const float u2 = static_cast<float>(rng.next() >> 8) * 0x1.0p-24f;           // [0, 1)
    const float radius = std::sqrt(-2.0f * std::log(u1));
    out[j] = radius * std::cos(kTwoPi * u2);
    if (j + 1 < count) out[j + 1] = radius * std::sin(kTwoPi * u2);
  }
}

// ---------------------------------------------------------------------------------------------
// Power law (Chung–Lu)

// The offset i0 of the weights (rank + i0)^-alpha that brings the largest expected degree down
// to about sqrt(m) (at least twice the mean, at most n - 1). Uses the integral approximation of
// the weight sum; the exact sum is taken later.
double weight_offset(int64_t n, int64_t m, double alpha) {
  const double nodes = static_cast<double>(n), edges = static_cast<double>(m);
  const double cap = std::min(std::max(std::sqrt(edges), 2.0 * edges / nodes), nodes - 1.0);
  auto largest_expected_degree = [&](double offset) {
    const double lo = offset - 0.5, hi = nodes + offset - 0.5;
    const double sum =
        std::abs(alpha - 1.0) < 1e-12
            ? std::log(hi / lo)
            : (std::pow(hi, 1.0 - alpha) - std::pow(lo, 1.0 - alpha)) / (1.0 - alpha);
    return edges * std::pow(offset, -alpha) / sum;
  };
  if (largest_expected_degree(1.0) <= cap) return 1.0;
  double lo = 1.0, hi = 2.0;
  while (largest_expected_degree(hi) > cap && hi < 1e15) hi *= 2.0;
  for (int iteration = 0; iteration < 100; ++iteration) {
    const double mid = std::sqrt(lo * hi);
    (largest_expected_degree(mid) > cap ? lo : hi) = mid;
  }
  return hi;
}

// In-degrees proportional to `weights`, summing to exactly m, each at most n - 1: cumulative
// rounding (each degree is the floor or ceiling of its expectation), then any excess over n - 1
// carried to the following rows.
std::vector<int64_t> degrees_from_weights(std::span<const double> weights, double total,
                                          int64_t m) {
  const int64_t n = static_cast<int64_t>(weights.size());
  std::vector<int64_t> degrees(weights.size());
  double cumulative = 0;
  int64_t previous = 0;
  for (int64_t v = 0; v < n; ++v) {
    cumulative += static_cast<double>(m) * weights[static_cast<size_t>(v)] / total;
    const int64_t next =
        v + 1 == n ? m : std::clamp<int64_t>(std::llround(cumulative), previous, m);
    degrees[static_cast<size_t>(v)] = next - previous;
    previous = next;
  }
  int64_t carry = 0;
  for (int pass = 0; pass < 2; ++pass) {
    for (auto& degree : degrees) {
      const int64_t wanted = degree + carry;
      degree = std::min(wanted, n - 1);
      carry = wanted - degree;
    }
  }
  VOLLEY_ASSERT(carry == 0);
  return degrees;
}

Csr generate_power_law(const GeneratorOptions& options) {
  const int64_t n = options.num_nodes, m = options.num_edges;
  const size_t count = static_cast<size_t>(n);
  const double alpha = 1.0 / (options.gamma - 1.0);
  const double offset = weight_offset(n, m, alpha);

  // Weights by rank, assigned to nodes through a seeded permutation.
  const std::vector<int32_t> node_of_rank =
      seeded_permutation(n, options.seed, Purpose::kRankPermutation);
  std::vector<double> weights(count);
  parallel_for(0, n, 1 << 16, [&](int64_t begin, int64_t end) {
    for (int64_t rank = begin; rank < end; ++rank) {
      weights[static_cast<size_t>(node_of_rank[static_cast<size_t>(rank)])] =
          std::pow(static_cast<double>(rank) + offset, -alpha);
    }
  });
  double total = 0;
  for (double w : weights) total += w;
  const std::vector<int64_t> degrees = degrees_from_weights(weights, total, m);

  std::vector<int32_t> labels;
  uint64_t threshold = 0;
  if (options.homophily > 0 && options.num_classes > 1 && m > 0) {
    const Array label_array = generate_labels(options);
    labels.assign(label_array.data<int64_t>(), label_array.data<int64_t>() + n);
    threshold = homophily_threshold(options.homophily);
  }
  SourcePool pool = build_source_pool(weights, labels, options.num_classes);
  pool.min_class_size = 2;  // a class of one would only offer the row itself
  std::vector<double>().swap(weights);

  Array indptr = Array::empty(DType::kInt64, {n + 1});
  int64_t* row_start = indptr.data<int64_t>();
  row_start[0] = 0;
  std::partial_sum(degrees.begin(), degrees.end(), row_start + 1);
  Array indices = Array::empty(DType::kInt32, {m});
  int32_t* sources = indices.data<int32_t>();
  ProgressBar progress("edges", m);
  parallel_for(0, n, 4096, [&](int64_t begin, int64_t end) {
    for (int64_t v = begin; v < end; ++v) {
      PhiloxStream rng = stream_for(options.seed, Purpose::kRowSources, static_cast<uint64_t>(v));
      pool.fill_row(rng, labels.empty() ? 0 : labels[static_cast<size_t>(v)], threshold, v,
                    degrees[static_cast<size_t>(v)], sources + row_start[v]);
    }
    progress.advance(row_start[end] - row_start[begin]);
  });
  progress.finish();
  return Csr::from_arrays(std::move(indptr), std::move(indices), std::nullopt, std::nullopt,
                          Orientation::kIn, /*validate=*/false);
}

// ---------------------------------------------------------------------------------------------
// Features

// Class centroids [num_classes, dim]: entries N(0, 4 / dim), so two centroids lie about 2.8
// apart whatever the dimension.
std::vector<float> class_centroids(const GeneratorOptions& options) {
  const int64_t dim = options.feature_dim;
  std::vector<float> centroids(static_cast<size_t>(options.num_classes * dim));
  const float scale = 2.0f / std::sqrt(static_cast<float>(dim));
  for (int64_t c = 0; c < options.num_classes; ++c) {
    PhiloxStream rng = stream_for(options.seed, Purpose::kCentroid, static_cast<uint64_t>(c));
    float* centroid = centroids.data() + c * dim;
    fill_normals(rng, centroid, dim);
    for (int64_t j = 0; j < dim; ++j) centroid[j] *= scale;
  }
  return centroids;
}

// Writes rows [first, first + count) of the features into `out` (feature_dtype, row-major).
void fill_feature_rows(const GeneratorOptions& options, const std::vector<float>& centroids,
                       int64_t first, int64_t count, std::byte* out) {
  const int64_t dim = options.feature_dim;
  const float noise = static_cast<float>(options.feature_noise);
  const bool half = options.feature_dtype == DType::kFloat16;
  parallel_for(0, count, 256, [&](int64_t begin, int64_t end) {
    std::vector<float> row(static_cast<size_t>(dim));
    for (int64_t i = begin; i < end; ++i) {
      const int64_t v = first + i;
      PhiloxStream rng = stream_for(options.seed, Purpose::kFeatureNoise, static_cast<uint64_t>(v));
      fill_normals(rng, row.data(), dim);
      const float* centroid =
          centroids.data() + label_of(options.seed, v, options.num_classes) * dim;
      if (half) {
        uint16_t* target = reinterpret_cast<uint16_t*>(out) + i * dim;
        for (int64_t j = 0; j < dim; ++j) target[j] = float_to_half(centroid[j] + noise * row[j]);
      } else {
        float* target = reinterpret_cast<float*>(out) + i * dim;
        for (int64_t j = 0; j < dim; ++j) target[j] = centroid[j] + noise * row[j];
      }
    }
  });
}

Array int64_array_of(std::span<const int32_t> ids) {
  Array array = Array::empty(DType::kInt64, {static_cast<int64_t>(ids.size())});
  std::copy(ids.begin(), ids.end(), array.data<int64_t>());
  return array;
}

}  // namespace

namespace generator_internal {

// In batches of about 16 MiB: while one batch is written (and its CRC taken) on a separate
// thread, the pool generates the next one into the other buffer.
uint32_t stream_features(const GeneratorOptions& options, const std::string& path) {
  const int64_t n = options.num_nodes, dim = options.feature_dim;
  const size_t row_bytes = static_cast<size_t>(dim) * dtype_size(options.feature_dtype);
  const int64_t batch_rows =
      std::clamp<int64_t>(static_cast<int64_t>((size_t{16} << 20) / row_bytes), 1, n);
  const std::vector<float> centroids = class_centroids(options);
  std::vector<std::byte> buffers[2];
  for (auto& buffer : buffers) buffer.resize(static_cast<size_t>(batch_rows) * row_bytes);
  NpyWriter features(path, options.feature_dtype, {n, dim});
  ProgressBar progress("features", n);
  std::future<void> pending_write;
  for (int64_t first = 0, batch = 0; first < n; first += batch_rows, ++batch) {
    const int64_t rows = std::min(batch_rows, n - first);
    std::vector<std::byte>& buffer = buffers[batch % 2];
    fill_feature_rows(options, centroids, first, rows, buffer.data());
    if (pending_write.valid()) pending_write.get();  // the other buffer is free again
    pending_write =
        std::async(std::launch::async, [&features, &buffer, &progress, rows, row_bytes] {
          features.write(buffer.data(), static_cast<size_t>(rows) * row_bytes);
          progress.advance(rows);
        });
  }
  if (pending_write.valid()) pending_write.get();
  progress.finish();
  features.close();
  return features.crc32();
}

}  // namespace generator_internal

void validate_generator_options(const GeneratorOptions& options) {
  const int64_t n = options.num_nodes, m = options.num_edges;
  VOLLEY_REQUIRE(n >= 1, ValueError, "num_nodes (--nodes) must be >= 1, got {}", n);
  VOLLEY_REQUIRE(n <= kMaxNodes, ValueError,
                 "num_nodes (--nodes) must be at most {} (generated graphs use int32 indices), "
                 "got {}",
                 kMaxNodes, n);
  VOLLEY_REQUIRE(m >= 0, ValueError, "num_edges (--edges) must be >= 0, got {}", m);
  const bool hetero = options.model == GraphModel::kHetero;
  VOLLEY_REQUIRE(
      !hetero || (m == 0 && n <= kMaxNodes / 2), ValueError,
      "the hetero model takes num_nodes (--nodes, the papers) in [1, {}] and no num_edges "
      "(degrees follow ogbn-mag's), got {} and {}",
      kMaxNodes / 2, n, m);
  VOLLEY_REQUIRE(hetero || !options.reverse, ValueError,
                 "reverse (--reverse) is for the hetero model only, got model {}",
                 graph_model_name(options.model));
  VOLLEY_REQUIRE(m <= n * (n - 1), ValueError,
                 "num_edges (--edges) = {} exceeds the {} edges a simple directed graph on {} "
                 "nodes can have",
                 m, n * (n - 1), n);
  VOLLEY_REQUIRE(options.num_classes >= 1 && options.num_classes <= kMaxClasses, ValueError,
                 "num_classes (--classes) must be in [1, {}], got {}", kMaxClasses,
                 options.num_classes);
  VOLLEY_REQUIRE(options.feature_dim >= 0, ValueError,
                 "feature_dim (--feature-dim) must be >= 0, got {}", options.feature_dim);
  VOLLEY_REQUIRE(
      options.feature_dtype == DType::kFloat32 || options.feature_dtype == DType::kFloat16,
      ValueError, "feature_dtype (--feature-dtype) must be float32 or float16, got {}",
      dtype_name(options.feature_dtype));
  VOLLEY_REQUIRE(std::isfinite(options.gamma) && options.gamma > 1.0, ValueError,
                 "gamma (--gamma) must be a finite number > 1, got {}", options.gamma);
  VOLLEY_REQUIRE(options.homophily >= 0.0 && options.homophily <= 1.0, ValueError,
                 "homophily must be in [0, 1], got {}", options.homophily);
  VOLLEY_REQUIRE(std::isfinite(options.feature_noise) && options.feature_noise > 0.0, ValueError,
                 "feature_noise must be a finite number > 0, got {}", options.feature_noise);
  const double quadrants[4] = {options.rmat_a, options.rmat_b, options.rmat_c, options.rmat_d};
  for (double p : quadrants) {
    VOLLEY_REQUIRE(std::isfinite(p) && p >= 0.0, ValueError,
                   "R-MAT probabilities must be finite and >= 0, got a={} b={} c={} d={}",
                   options.rmat_a, options.rmat_b, options.rmat_c, options.rmat_d);
  }
  VOLLEY_REQUIRE(options.rmat_a > 0.0, ValueError, "R-MAT probability a must be > 0, got {}",
                 options.rmat_a);
  const double quadrant_sum = quadrants[0] + quadrants[1] + quadrants[2] + quadrants[3];
  VOLLEY_REQUIRE(std::abs(quadrant_sum - 1.0) <= 1e-6, ValueError,
                 "R-MAT probabilities must sum to 1, got a={} b={} c={} d={} (sum {})",
                 options.rmat_a, options.rmat_b, options.rmat_c, options.rmat_d, quadrant_sum);
  const double fractions[3] = {options.train_fraction, options.val_fraction, options.test_fraction};
  for (double f : fractions) {
    VOLLEY_REQUIRE(f >= 0.0 && f <= 1.0, ValueError,
                   "split fractions must be in [0, 1], got train={} val={} test={}",
                   options.train_fraction, options.val_fraction, options.test_fraction);
  }
  VOLLEY_REQUIRE(fractions[0] + fractions[1] + fractions[2] <= 1.0 + 1e-9, ValueError,
                 "split fractions must sum to at most 1, got train={} val={} test={}",
                 options.train_fraction, options.val_fraction, options.test_fraction);
}

std::string default_dataset_name(const GeneratorOptions& options) {
  if (options.model == GraphModel::kHetero) {
    return fmt::format("mag-{}-seed{}{}", options.num_nodes, options.seed,
                       options.reverse ? "-rev" : "");
  }
  return fmt::format("{}-{}-{}-seed{}", graph_model_name(options.model), options.num_nodes,
                     options.num_edges, options.seed);
}

Csr generate_graph(const GeneratorOptions& options) {
  validate_generator_options(options);
  VOLLEY_REQUIRE(options.model != GraphModel::kHetero, ValueError,
                 "the hetero model's graph is typed: generate it with generate_hetero_graph");
  if (options.model == GraphModel::kTemporal) return generate_temporal(options).graph;
  return options.model == GraphModel::kPowerLaw ? generate_power_law(options)
                                                : generate_rmat(options);
}

Array generate_labels(const GeneratorOptions& options) {
  validate_generator_options(options);
  if (options.model == GraphModel::kTemporal) return generate_temporal(options).labels;
  Array labels = Array::empty(DType::kInt64, {options.num_nodes});
  int64_t* label = labels.data<int64_t>();
  parallel_for(0, options.num_nodes, 1 << 16, [&](int64_t begin, int64_t end) {
    for (int64_t v = begin; v < end; ++v) label[v] = label_of(options.seed, v, options.num_classes);
  });
  return labels;
}

Array generate_features(const GeneratorOptions& options, int64_t first_row, int64_t num_rows) {
  validate_generator_options(options);
  VOLLEY_REQUIRE(options.feature_dim > 0, ValueError,
                 "generate_features needs feature_dim (--feature-dim) > 0");
  VOLLEY_REQUIRE(first_row >= 0 && num_rows >= 0 && first_row + num_rows <= options.num_nodes,
                 IndexError, "feature rows [{}, {}) out of range for a graph with {} nodes",
                 first_row, first_row + num_rows, options.num_nodes);
  Array features = Array::empty(options.feature_dtype, {num_rows, options.feature_dim});
  fill_feature_rows(options, class_centroids(options), first_row, num_rows, features.raw_data());
  return features;
}

GeneratedSplit generate_split(const GeneratorOptions& options) {
  validate_generator_options(options);
  const int64_t n = options.num_nodes;
  const std::vector<int32_t> order = seeded_permutation(n, options.seed, Purpose::kSplit);
  auto size_of = [n](double fraction) {
    return static_cast<size_t>(std::floor(fraction * static_cast<double>(n)));
  };
  const size_t train = std::min(size_of(options.train_fraction), order.size());
  const size_t val = std::min(size_of(options.val_fraction), order.size() - train);
  const size_t test = std::min(size_of(options.test_fraction), order.size() - train - val);
  auto sorted_part = [&](size_t begin, size_t size) {
    std::vector<int32_t> part(order.begin() + static_cast<ptrdiff_t>(begin),
                              order.begin() + static_cast<ptrdiff_t>(begin + size));
    std::sort(part.begin(), part.end());
    return int64_array_of(part);
  };
  return {sorted_part(0, train), sorted_part(train, val), sorted_part(train + val, test)};
}

GeneratedDataset generate_dataset(const GeneratorOptions& options, const std::string& directory) {
  if (options.model == GraphModel::kHetero) return generate_hetero_dataset(options, directory);
  validate_generator_options(options);
  GeneratedDataset result{.name = default_dataset_name(options), .num_nodes = options.num_nodes};
  DatasetWriter writer(directory, result.name);
  if (options.model == GraphModel::kTemporal) {
    const generator_internal::TemporalStream stream =
        generator_internal::generate_temporal(options);
    const Csr& graph = stream.graph;
    result.num_edges = graph.num_edges();
    writer.add_array("indptr", graph.indptr());
    writer.add_array("indices", graph.indices());
    writer.add_array("edge_ids", *graph.edge_ids());
    writer.add_array("node_time", *graph.node_time());
    writer.add_array("edge_time", *graph.edge_time());
    writer.add_array("labels", stream.labels);
  } else {
    const Csr graph = generate_graph(options);
    result.num_edges = graph.num_edges();
    writer.add_array("indptr", graph.indptr());
    writer.add_array("indices", graph.indices());
    writer.add_array("labels", generate_labels(options));
  }
  {
    const GeneratedSplit split = generate_split(options);
    writer.add_array("train_idx", split.train_idx);
    writer.add_array("val_idx", split.val_idx);
    writer.add_array("test_idx", split.test_idx);
  }
  if (options.feature_dim > 0) {
    writer.add_written("features", options.feature_dtype, {options.num_nodes, options.feature_dim},
                       stream_features(options, writer.path_of("features")));
  }
  writer.finish(options.num_nodes, result.num_edges, options.num_classes, Orientation::kIn);
  return result;
}

}  // namespace volley
