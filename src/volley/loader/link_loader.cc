// volley/loader/link_loader.cc — see link_loader.h.
#include "volley/loader/link_loader.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <span>
#include <utility>

#include "volley/core/parallel.h"
#include "volley/feature/gather.h"  // gather_supports
#include "volley/loader/internal/batch_assembly.h"

namespace volley {

struct LinkLoader::Shared {
  std::vector<int64_t> src, dst;             // the supervision edges
  std::optional<Array> labels;               // [M], as given
  std::optional<NegativeSampler> negatives;  // seed 0; reseeded per epoch
  loader_internal::BatchAssembly assembly;
};

namespace {

void check_negative_options(const LinkNegativeOptions& negatives, bool has_labels) {
  const double amount = negatives.amount;
  VOLLEY_REQUIRE(std::isfinite(amount) && amount >= 0, ValueError,
                 "negative sampling amount must be finite and >= 0, got {}", amount);
  if (negatives.mode == NegativeMode::kTriplet) {
    VOLLEY_REQUIRE(amount >= 1 && amount == std::floor(amount), ValueError,
                   "triplet negative sampling needs a whole amount >= 1 (negatives per positive), "
                   "got {}",
                   amount);
    VOLLEY_REQUIRE(!has_labels, ValueError,
                   "edge_label must be left out for triplet negative sampling (PyG's rule)");
  }
  VOLLEY_REQUIRE(negatives.mode == NegativeMode::kNone || negatives.mode == NegativeMode::kBinary ||
                     negatives.mode == NegativeMode::kTriplet,
                 ValueError, "unknown negative sampling mode {}", static_cast<int>(negatives.mode));
}

// The supervision edges of `edge_label_index`, checked against `n` nodes.
void read_edges(const Array& edge_label_index, int64_t n, std::vector<int64_t>& src,
                std::vector<int64_t>& dst) {
  VOLLEY_REQUIRE(edge_label_index.defined() && edge_label_index.ndim() == 2 &&
                     edge_label_index.shape()[0] == 2 && edge_label_index.dtype() == DType::kInt64,
                 ValueError, "edge_label_index must be an int64 array [2, M], got {}",
                 edge_label_index.defined() ? edge_label_index.describe() : std::string("none"));
  const int64_t m = edge_label_index.shape()[1];
  const int64_t* ids = edge_label_index.data<int64_t>();
  for (int64_t row = 0; row < 2; ++row) {
    for (int64_t i = 0; i < m; ++i) {
      const int64_t id = ids[row * m + i];
      VOLLEY_REQUIRE(id >= 0 && id < n, IndexError,
                     "edge_label_index[{}, {}] = {} is out of range for a graph with {} nodes", row,
                     i, id, n);
    }
  }
  src.assign(ids, ids + m);
  dst.assign(ids + m, ids + 2 * m);
}

int resolve_threads(int requested) { return requested > 0 ? requested : default_num_threads(); }

// Temporal link sampling: loader.input_time holds edge_label_time, one time per supervision edge
// (needed exactly when the sampler is temporal).
void check_edge_label_time(const LoaderOptions& loader, int64_t num_edges) {
  const bool temporal = loader.sampler.time_source != TimeSource::kNone;
  VOLLEY_REQUIRE(!temporal || loader.input_time.has_value(), ValueError,
                 "temporal link sampling (time_attr) needs edge_label_time: one time per "
                 "supervision edge");
  VOLLEY_REQUIRE(temporal || !loader.input_time.has_value(), ValueError,
                 "edge_label_time was given, but sampling is not temporal (set time_attr)");
  if (!temporal) return;
  const Array& time = *loader.input_time;
  VOLLEY_REQUIRE(time.defined() && time.ndim() == 1 && time.dtype() == DType::kInt64 &&
                     time.buffer().host_accessible(),
                 ValueError, "edge_label_time must be a 1-d int64 array in host memory, got {}",
                 time.defined() ? time.describe() : std::string("nothing"));
  VOLLEY_REQUIRE(time.numel() == num_edges, ValueError,
                 "edge_label_time has {} entries, but there are {} supervision edges (one time "
                 "each)",
                 time.numel(), num_edges);
}

// The loader's negative sampler (seed 0; reseeded per epoch), its checks (weights,
// degree_power, max_draws) and the source's (degrees, edge check, node times) made now rather
// than in the first batch. Under node-time sampling, negatives are bounded by node time.
NegativeSampler make_negative_sampler(const std::shared_ptr<const BatchSource>& source,
                                      const LinkLoaderOptions& options) {
  const LinkNegativeOptions& negatives = options.negatives;
  std::vector<int64_t> degrees;
  if (negatives.distribution == NegativeDistribution::kDegree) degrees = source->degrees();
  EdgeOracle oracle;
  if (negatives.reject_existing) {
    const int64_t probe = 0;
    uint8_t hit = 0;
    source->has_edges({&probe, 1}, {&probe, 1}, &hit);
    oracle = [source](std::span<const int64_t> src, std::span<const int64_t> dst, uint8_t* out) {
      source->has_edges(src, dst, out);
    };
  }
  std::vector<int64_t> node_time;
  if (options.loader.sampler.time_source == TimeSource::kNode) node_time = source->node_times();
  return NegativeSampler(source->num_nodes(), degrees, std::move(oracle),
                         {.distribution = negatives.distribution,
                          .degree_power = negatives.degree_power,
                          .weights = negatives.weights,
                          .reject_existing = negatives.reject_existing,
                          .max_draws = negatives.max_draws,
                          .seed = 0,
                          .node_time = std::move(node_time)});
}

// Disjoint seeds (PyG's edge_sample with disjoint=True): the end points as they come, one tree
// each, `arrays` one after the other (no dedupe); local ids are positions in that list.
LinkSeeds disjoint_seeds(std::span<const std::span<const int64_t>> arrays) {
  LinkSeeds seeds;
  seeds.local.resize(arrays.size());
  for (size_t a = 0; a < arrays.size(); ++a) {
    for (const int64_t id : arrays[a]) {
      seeds.local[a].push_back(static_cast<int64_t>(seeds.nodes.size()));
      seeds.nodes.push_back(id);
    }
  }
  return seeds;
}

// Removes from `subgraph` every edge u → v (global ids: u = nodes[cols[k]], v = nodes[rows[k]])
// that is a pair (src[i], dst[i]), or (dst[i], src[i]) when `undirected`; recounts
// edges_per_hop.
void exclude_pairs(std::span<const int64_t> src, std::span<const int64_t> dst, bool undirected,
                   SampledSubgraph& subgraph) {
  std::vector<std::pair<int64_t, int64_t>> pairs;
  pairs.reserve(src.size() * (undirected ? 2 : 1));
  for (size_t i = 0; i < src.size(); ++i) {
    pairs.emplace_back(src[i], dst[i]);
    if (undirected) pairs.emplace_back(dst[i], src[i]);
  }
  std::sort(pairs.begin(), pairs.end());
  const int64_t edges = subgraph.num_edges();
  const int64_t* nodes = subgraph.nodes.data<int64_t>();
  const int64_t* rows = edges > 0 ? subgraph.rows.data<int64_t>() : nullptr;
  const int64_t* cols = edges > 0 ? subgraph.cols.data<int64_t>() : nullptr;
  const int64_t* ids = edges > 0 ? subgraph.edge_ids.data<int64_t>() : nullptr;
  std::vector<int64_t> kept_rows, kept_cols, kept_ids;
  std::vector<int64_t> per_hop(subgraph.edges_per_hop.size(), 0);
  int64_t k = 0;
  for (size_t hop = 0; hop < subgraph.edges_per_hop.size(); ++hop) {
    for (const int64_t end = k + subgraph.edges_per_hop[hop]; k < end; ++k) {
      const std::pair<int64_t, int64_t> edge{nodes[cols[k]], nodes[rows[k]]};
      if (std::binary_search(pairs.begin(), pairs.end(), edge)) continue;
      kept_rows.push_back(rows[k]);
      kept_cols.push_back(cols[k]);
      kept_ids.push_back(ids[k]);
      ++per_hop[hop];
    }
  }
  VOLLEY_ASSERT(k == edges);
  subgraph.rows = Array::from_vector(kept_rows);
  subgraph.cols = Array::from_vector(kept_cols);
  subgraph.edge_ids = Array::from_vector(kept_ids);
  subgraph.edges_per_hop = std::move(per_hop);
}

// Local ids [2, L] of pairs whose ends are local[0][i], local[1][i].
Array pair_index(const std::vector<int64_t>& first, const std::vector<int64_t>& second) {
  const auto count = static_cast<int64_t>(first.size());
  Array out = Array::empty(DType::kInt64, {2, count});
  std::copy(first.begin(), first.end(), out.data<int64_t>());
  std::copy(second.begin(), second.end(), out.data<int64_t>() + count);
  return out;
}

}  // namespace

LinkLoader::LinkLoader(Csr graph, std::optional<FeatureStore> features,
                       std::optional<FeatureStore> labels, Array edge_label_index,
                       std::optional<Array> edge_label, LinkLoaderOptions options,
                       LoaderAttributes attributes)
    : LinkLoader(std::make_shared<LocalBatchSource>(graph, std::move(features), std::move(labels)),
                 std::move(edge_label_index), std::move(edge_label), std::move(options),
                 std::move(attributes), graph.num_edges()) {}

LinkLoader::LinkLoader(std::shared_ptr<const BatchSource> source, Array edge_label_index,
                       std::optional<Array> edge_label, LinkLoaderOptions options,
                       LoaderAttributes attributes, int64_t num_graph_edges)
    : options_(std::move(options)) {
  VOLLEY_REQUIRE(source != nullptr, ValueError, "the link loader needs a batch source, got none");
  const int64_t n = source->num_nodes();
  auto shared = std::make_shared<Shared>();
  read_edges(edge_label_index, n, shared->src, shared->dst);
  num_inputs_ = static_cast<int64_t>(shared->src.size());
  if (edge_label) {
    VOLLEY_REQUIRE(edge_label->ndim() == 1 && edge_label->numel() == num_inputs_ &&
                       (is_integer(edge_label->dtype()) || is_floating(edge_label->dtype()) ||
                        edge_label->dtype() == DType::kBool),
                   ValueError, "edge_label must be a 1-d numeric array of {} labels, got {}",
                   num_inputs_, edge_label->describe());
    shared->labels = std::move(edge_label);
  }
  const LinkNegativeOptions& negatives = options_.negatives;
  check_negative_options(negatives, shared->labels.has_value());
  check_edge_label_time(options_.loader, num_inputs_);
  if (options_.loader.sampler.time_source != TimeSource::kNone) {
    options_.loader.sampler.disjoint = true;  // PyG: temporal link sampling is disjoint
  }
  loader_internal::check_loader_options(options_.loader, num_inputs_);
  source->validate(options_.loader.sampler);
  if (source->feature_width() > 0) {
    VOLLEY_REQUIRE(gather_supports(source->feature_dtype(), options_.loader.feature_dtype),
                   ValueError, "features of dtype {} cannot be delivered as {}",
                   dtype_name(source->feature_dtype()), dtype_name(options_.loader.feature_dtype));
  }
  if (!attributes.node.empty() || !attributes.edge.empty()) {
    loader_internal::check_attributes(attributes, n, num_graph_edges);
  }
  if (negatives.mode != NegativeMode::kNone) {
    shared->negatives.emplace(make_negative_sampler(source, options_));
  }
  shared->assembly.source = std::move(source);
  shared->assembly.attributes = std::move(attributes);
  shared_ = std::move(shared);
}

int64_t LinkLoader::num_batches() const {
  return loader_internal::num_batches(num_inputs_, options_.loader);
}

Array LinkLoader::epoch_positions(int64_t epoch_index) const {
  return loader_internal::epoch_positions(num_inputs_, options_.loader, epoch_index);
}

// What the producers of one epoch share.
struct LinkLoader::EpochWork {
  std::shared_ptr<const Shared> shared;
  Array order;                // int64: supervision-edge positions in epoch order
  LinkLoaderOptions options;  // loader.sampler.seed: this epoch's sampler seed
  std::optional<NegativeSampler> negatives;
  int threads = 1;
  int64_t prefetch = 1;

  Batch make_batch(int64_t index, SampledSubgraph& subgraph) const;
  // Seeds of the batch's positives (and negatives) and the link fields of `batch`.
  LinkSeeds link_fields(int64_t index, const std::vector<int64_t>& src,
                        const std::vector<int64_t>& dst, Batch& batch) const;
  // edge_label for `positives` followed by `negatives` zeros (kNone: labels or undefined).
  Array labels(std::span<const int64_t> positions, int64_t negatives) const;
  bool disjoint() const { return options.loader.sampler.disjoint; }
  // Temporal sampling: each seed's time, the edge_label_time of its supervision edge; negative
  // i (of each end's list) takes edge i mod B's, as PyG's repeat does.
  std::vector<int64_t> seed_times(std::span<const int64_t> positions, const LinkSeeds& seeds) const;
  // Node-time sampling: the time bound of `count` negatives (of pairs, or of sources for
  // triplets): negative i no later than edge i mod B's time (PyG's neg_sample); else none.
  std::vector<int64_t> negative_time_bounds(std::span<const int64_t> positions,
                                            int64_t count) const;
};

std::unique_ptr<Epoch> LinkLoader::start_epoch(int64_t epoch_index) const {
  auto work = std::make_shared<EpochWork>();
  work->shared = shared_;
  work->order = epoch_positions(epoch_index);
  work->options = options_;
  const uint64_t seed = loader_internal::epoch_sampler_seed(options_.loader, epoch_index);
  work->options.loader.sampler.seed = seed;
  if (shared_->negatives) work->negatives.emplace(shared_->negatives->reseeded(seed));
  const int64_t batches = num_batches();
  work->threads = static_cast<int>(std::min<int64_t>(resolve_threads(options_.loader.num_threads),
                                                     std::max<int64_t>(1, batches)));
  work->prefetch =
      options_.loader.prefetch == 0 ? 2 * work->threads : std::max(options_.loader.prefetch, 1);
  Epoch::Producers producers;
  producers.threads = work->threads;
  producers.prefetch = work->prefetch;
  producers.make_builder = [work]() -> Epoch::BuildBatch {
    auto subgraph = std::make_shared<SampledSubgraph>();  // one per worker thread
    return [work, subgraph](int64_t index) { return work->make_batch(index, *subgraph); };
  };
  producers.context = work;
  return std::make_unique<Epoch>(batches, std::move(producers));
}

Array LinkLoader::EpochWork::labels(std::span<const int64_t> positions, int64_t negatives) const {
  const auto count = static_cast<int64_t>(positions.size());
  const std::optional<Array>& given = shared->labels;
  if (!given) {
    if (options.negatives.mode == NegativeMode::kNone) return Array();
    Array out = Array::zeros(DType::kFloat32, {count + negatives});
    std::fill_n(out.data<float>(), count, 1.0f);
    return out;
  }
  const size_t width = dtype_size(given->dtype());
  Array out = Array::zeros(given->dtype(), {count + negatives});
  const auto* from = static_cast<const std::byte*>(given->raw_data());
  auto* to = static_cast<std::byte*>(out.raw_data());
  for (int64_t i = 0; i < count; ++i) {
    std::memcpy(to + static_cast<size_t>(i) * width,
                from + static_cast<size_t>(positions[i]) * width, width);
  }
  return out;
}

LinkSeeds LinkLoader::EpochWork::link_fields(int64_t index, const std::vector<int64_t>& src,
                                             const std::vector<int64_t>& dst, Batch& batch) const {
  const auto count = static_cast<int64_t>(src.size());
  const LinkNegativeOptions& mode = options.negatives;
  const std::span<const int64_t> positions = batch.input_ids.span<int64_t>();
  if (mode.mode == NegativeMode::kTriplet) {
    const auto per_source = static_cast<int64_t>(mode.amount);
    const std::vector<int64_t> bounds = negative_time_bounds(positions, count);
    NegativeDestinations drawn =
        negatives->sample_destinations(src, per_source, static_cast<uint64_t>(index), bounds);
    batch.negatives_kept_existing = drawn.kept_existing;
    if (disjoint()) {  // PyG's layout: the k-th negatives of every source, then the next k
      std::vector<int64_t> by_round(drawn.dst.size());
      for (int64_t i = 0; i < count; ++i) {
        for (int64_t k = 0; k < per_source; ++k) {
          by_round[k * count + i] = drawn.dst[i * per_source + k];
        }
      }
      drawn.dst = std::move(by_round);
    }
    const std::span<const int64_t> arrays[] = {src, dst, drawn.dst};
    LinkSeeds seeds = disjoint() ? disjoint_seeds(arrays) : link_seeds(arrays);
    batch.src_index = Array::from_vector(seeds.local[0]);
    batch.dst_pos_index = Array::from_vector(seeds.local[1]);
    std::vector<int64_t> negatives_local = seeds.local[2];  // seeds keeps its copy (seed_times)
    if (disjoint()) {                                       // back to [source, k]
      std::vector<int64_t> by_source(negatives_local.size());
      for (int64_t i = 0; i < count; ++i) {
        for (int64_t k = 0; k < per_source; ++k) {
          by_source[i * per_source + k] = negatives_local[k * count + i];
        }
      }
      negatives_local = std::move(by_source);
    }
    batch.dst_neg_index =
        Array(Array::from_vector(negatives_local).buffer(), DType::kInt64, {count, per_source});
    return seeds;
  }
  int64_t num_negatives = 0;
  std::vector<int64_t> all_src = src, all_dst = dst;
  if (mode.mode == NegativeMode::kBinary) {
    num_negatives = static_cast<int64_t>(std::ceil(static_cast<double>(count) * mode.amount));
    const std::vector<int64_t> bounds = negative_time_bounds(positions, num_negatives);
    NegativePairs drawn =
        negatives->sample_pairs(num_negatives, static_cast<uint64_t>(index), bounds);
    batch.negatives_kept_existing = drawn.kept_existing;
    all_src.insert(all_src.end(), drawn.src.begin(), drawn.src.end());
    all_dst.insert(all_dst.end(), drawn.dst.begin(), drawn.dst.end());
  }
  const std::span<const int64_t> arrays[] = {all_src, all_dst};
  LinkSeeds seeds = disjoint() ? disjoint_seeds(arrays) : link_seeds(arrays);
  batch.edge_label_index = pair_index(seeds.local[0], seeds.local[1]);
  batch.edge_label = labels(positions, num_negatives);
  return seeds;
}

std::vector<int64_t> LinkLoader::EpochWork::negative_time_bounds(std::span<const int64_t> positions,
                                                                 int64_t count) const {
  if (options.loader.sampler.time_source != TimeSource::kNode || positions.empty()) return {};
  const int64_t* time = options.loader.input_time->data<int64_t>();
  std::vector<int64_t> out(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    out[i] = time[positions[static_cast<size_t>(i) % positions.size()]];
  }
  return out;
}

std::vector<int64_t> LinkLoader::EpochWork::seed_times(std::span<const int64_t> positions,
                                                       const LinkSeeds& seeds) const {
  const int64_t* time = options.loader.input_time->data<int64_t>();
  const auto count = static_cast<int64_t>(positions.size());
  std::vector<int64_t> out(seeds.nodes.size());
  for (const std::vector<int64_t>& local : seeds.local) {  // src, dst (then negatives)
    for (size_t i = 0; i < local.size(); ++i) {
      out[local[i]] = time[positions[static_cast<int64_t>(i) % count]];
    }
  }
  return out;
}

Batch LinkLoader::EpochWork::make_batch(int64_t index, SampledSubgraph& subgraph) const {
  const LoaderOptions& loader = options.loader;
  if (loader.on_batch_start) loader.on_batch_start(index);
  const int64_t begin = index * loader.batch_size;
  const int64_t end = std::min(order.numel(), begin + loader.batch_size);
  const int64_t count = end - begin;
  Batch batch;
  batch.index = index;
  batch.batch_size = count;
  batch.input_ids = Array::empty(DType::kInt64, {count});
  std::vector<int64_t> src(static_cast<size_t>(count)), dst(static_cast<size_t>(count));
  const int64_t* positions = order.data<int64_t>();
  int64_t* input_ids = batch.input_ids.data<int64_t>();
  for (int64_t i = 0; i < count; ++i) {
    input_ids[i] = positions[begin + i];
    src[i] = shared->src[positions[begin + i]];
    dst[i] = shared->dst[positions[begin + i]];
  }
  const LinkSeeds seeds = link_fields(index, src, dst, batch);
  const loader_internal::BatchAssembly& assembly = shared->assembly;
  if (loader.sampler.time_source != TimeSource::kNone) {
    const std::vector<int64_t> times = seed_times(batch.input_ids.span<int64_t>(), seeds);
    assembly.source->sample_temporal(seeds.nodes, times, loader.sampler,
                                     static_cast<uint64_t>(index), subgraph);
  } else {
    assembly.source->sample(seeds.nodes, loader.sampler, static_cast<uint64_t>(index), subgraph);
  }
  if (options.exclude_edges) exclude_pairs(src, dst, options.undirected, subgraph);
  if (disjoint() && count > 0) {  // PyG: a tree's batch id is its supervision edge's position
    int64_t* tree = subgraph.batch.data<int64_t>();
    for (int64_t i = 0; i < subgraph.batch.numel(); ++i) tree[i] %= count;
  }
  assembly.fill(subgraph, loader.feature_dtype, threads, prefetch, batch);
  return batch;
}

}  // namespace volley
