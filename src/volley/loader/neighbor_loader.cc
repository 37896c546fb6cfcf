#include "volley/loader/neighbor_loader.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <string>

#include <fmt/format.h>

#include "volley/core/parallel.h"
#include "volley/core/philox.h"
#include "volley/feature/gather.h"  // gather_supports
#include "volley/loader/cuda_loader.h"
#include "volley/loader/internal/batch_assembly.h"
#include "volley/loader/internal/lookahead_window.h"
#include "volley/sampling/negative_sampler.h"  // csr_has_edges

namespace volley {

struct NeighborLoader::Shared {
  Array input_nodes;
  // The features when they are a kLookahead store (the loader announces coming batches to it).
  std::optional<FeatureStore> lookahead;
  // The source, attribute tables and recycled batch buffers, shared by every epoch.
  loader_internal::BatchAssembly assembly;
};

LocalBatchSource::LocalBatchSource(Csr graph, std::optional<FeatureStore> features,
                                   std::optional<FeatureStore> labels)
    : graph_(std::move(graph)), features_(std::move(features)), labels_(std::move(labels)) {
  const int64_t n = graph_.num_nodes();
  if (features_) {
    VOLLEY_REQUIRE(features_->defined() && features_->ndim() == 2 && features_->num_rows() == n,
                   ValueError, "features must be [num_nodes = {}, D], got {}", n,
                   features_->describe());
  }
  if (labels_) {
    VOLLEY_REQUIRE(labels_->defined() && labels_->ndim() == 1 && labels_->num_rows() == n &&
                       (is_integer(labels_->dtype()) || labels_->dtype() == DType::kBool),
                   ValueError, "labels must be an integer array [num_nodes = {}], got {}", n,
                   labels_->describe());
  }
}

void LocalBatchSource::validate(const NeighborSamplerOptions& options) const {
  validate_sampler_options(graph_, options);
}

void LocalBatchSource::sample(std::span<const int64_t> seeds, const NeighborSamplerOptions& options,
                              uint64_t batch_index, SampledSubgraph& out) const {
  // One scratch per worker thread (a map sized to the graph), reused across batches.
  thread_local SamplerScratch scratch;
  out = sample_neighbors(graph_, seeds, options, batch_index, &scratch);
}

int64_t LocalBatchSource::feature_width() const { return features_ ? features_->width() : 0; }

DType LocalBatchSource::feature_dtype() const {
  return features_ ? features_->dtype() : DType::kFloat32;
}

void LocalBatchSource::gather_features(std::span<const int64_t> ids, DType out_dtype,
                                       std::byte* out) const {
  VOLLEY_ASSERT(features_.has_value());
  GatherOptions gather;
  gather.out_dtype = out_dtype;
  gather.threads = 1;  // batch-level parallelism: each worker gathers its own batch
  features_->gather(ids, out, gather);
}

void LocalBatchSource::gather_labels(std::span<const int64_t> ids, int64_t* out) const {
  VOLLEY_ASSERT(labels_.has_value());
  GatherOptions gather;
  gather.out_dtype = DType::kInt64;
  gather.threads = 1;
  labels_->gather(ids, reinterpret_cast<std::byte*>(out), gather);
}

void BatchSource::has_edges(std::span<const int64_t> /*src*/, std::span<const int64_t> /*dst*/,
                            uint8_t* /*out*/) const {
  throw ValueError("this source cannot check edges (link prediction with reject_existing)");
}

std::vector<int64_t> BatchSource::degrees() const {
  throw ValueError("this source cannot give node degrees (degree-based negative sampling)");
}

std::vector<int64_t> BatchSource::node_times() const {
  throw ValueError("this source cannot give node times (temporal negative sampling)");
}

void LocalBatchSource::has_edges(std::span<const int64_t> src, std::span<const int64_t> dst,
                                 uint8_t* out) const {
  std::call_once(rows_sorted_once_, [&] { rows_sorted_ = csr_rows_sorted(graph_); });
  csr_has_edges(graph_, rows_sorted_, src, dst, out);
}

std::vector<int64_t> LocalBatchSource::degrees() const {
  std::vector<int64_t> out(static_cast<size_t>(graph_.num_nodes()));
  for (int64_t v = 0; v < graph_.num_nodes(); ++v) out[v] = graph_.degree(v);
  return out;
}

std::vector<int64_t> LocalBatchSource::node_times() const {
  VOLLEY_REQUIRE(graph_.has_node_time(), ValueError,
                 "the graph has no node_time (temporal negative sampling by node time)");
  const Array& time = *graph_.node_time();
  const int64_t* data = time.data<int64_t>();
  return std::vector<int64_t>(data, data + time.numel());
}

namespace {

// SplitMix64 finaliser: mixes (seed, epoch) into an independent-looking 64-bit seed.
uint64_t mix(uint64_t seed, uint64_t value) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (value + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Batches that `count` seeds make.
int64_t batches_of(int64_t count, const LoaderOptions& options) {
  return options.drop_last ? count / options.batch_size
                           : (count + options.batch_size - 1) / options.batch_size;
}

int resolve_threads(int requested) {
  if (requested > 0) return requested;
  return default_num_threads();
}

}  // namespace

Array seeded_permutation(int64_t n, uint64_t seed) {
  Array permutation = Array::empty(DType::kInt64, {n});
  int64_t* p = permutation.data<int64_t>();
  for (int64_t i = 0; i < n; ++i) p[i] = i;
  PhiloxStream rng(seed, {{0, 0x5eed, 0, 0}});
  for (int64_t i = n - 1; i > 0; --i) {
    const auto j = static_cast<int64_t>(rng.bounded64(static_cast<uint64_t>(i + 1)));
    std::swap(p[i], p[j]);
  }
  return permutation;
}

namespace loader_internal {

bool grows_trees(const NeighborSamplerOptions& sampler) {
  return sampler.disjoint || sampler.time_source != TimeSource::kNone;
}

Array checked_input_nodes(const std::optional<Array>& input_nodes, int64_t n, bool distinct) {
  Array inputs;
  if (input_nodes) {
    // An empty selection is no seeds (PyG's loader yields no batch), never "all nodes".
    VOLLEY_REQUIRE(input_nodes->ndim() == 1 && input_nodes->dtype() == DType::kInt64, ValueError,
                   "input_nodes must be a 1-d int64 array, got {}", input_nodes->describe());
    const int64_t* ids = input_nodes->data<int64_t>();
    std::vector<uint8_t> seen(static_cast<size_t>(n), 0);
    for (int64_t i = 0; i < input_nodes->numel(); ++i) {
      VOLLEY_REQUIRE(ids[i] >= 0 && ids[i] < n, IndexError,
                     "input node {} at position {} out of range for a graph with {} nodes", ids[i],
                     i, n);
      VOLLEY_REQUIRE(!distinct || !seen[static_cast<size_t>(ids[i])], ValueError,
                     "input node {} appears twice (second time at position {}); input nodes must "
                     "be distinct",
                     ids[i], i);
      seen[static_cast<size_t>(ids[i])] = 1;
    }
    inputs = *input_nodes;
  } else {
    inputs = Array::empty(DType::kInt64, {n});
    int64_t* ids = inputs.data<int64_t>();
    for (int64_t i = 0; i < n; ++i) ids[i] = i;
  }
  return inputs;
}

Array epoch_order(int64_t num_inputs, bool shuffle, uint64_t seed, int64_t epoch) {
  if (shuffle) return seeded_permutation(num_inputs, mix(seed, static_cast<uint64_t>(epoch)));
  Array order = Array::empty(DType::kInt64, {num_inputs});
  int64_t* p = order.data<int64_t>();
  for (int64_t i = 0; i < num_inputs; ++i) p[i] = i;
  return order;
}

uint64_t epoch_sampler_seed(uint64_t seed, int64_t epoch) {
  // Different epochs sample differently; the same epoch always samples the same.
  return mix(seed ^ 0xa5a5a5a5a5a5a5a5ULL, static_cast<uint64_t>(epoch));
}

namespace {

// The base seed rank `rank` of several samples with (SplitMix64 of seed and rank, 63 bits):
// distinct per rank. The formula of the earlier Python split, kept so that unshuffled
// multi-rank epochs are unchanged.
uint64_t rank_seed(uint64_t seed, int rank) {
  uint64_t z =
      seed * 0x9e3779b97f4a7c15ULL + (static_cast<uint64_t>(rank) + 1) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return (z ^ (z >> 31)) & 0x7fffffffffffffffULL;
}

uint64_t sampling_seed(const LoaderOptions& options) {
  return options.world_size > 1 ? rank_seed(options.seed, options.rank) : options.seed;
}

}  // namespace

void check_loader_options(const LoaderOptions& options, int64_t num_inputs) {
  VOLLEY_REQUIRE(options.batch_size >= 1, ValueError, "batch_size must be >= 1, got {}",
                 options.batch_size);
  VOLLEY_REQUIRE(options.num_threads >= 0, ValueError, "num_threads must be >= 0, got {}",
                 options.num_threads);
  VOLLEY_REQUIRE(options.prefetch >= 0, ValueError, "prefetch must be >= 0, got {}",
                 options.prefetch);
  VOLLEY_REQUIRE(options.lookahead >= 0, ValueError, "lookahead must be >= 0, got {}",
                 options.lookahead);
  VOLLEY_REQUIRE(options.world_size >= 1 && options.rank >= 0 && options.rank < options.world_size,
                 ValueError, "rank must be in [0, world_size), got rank={}, world_size={}",
                 options.rank, options.world_size);
  VOLLEY_REQUIRE(
      options.world_size == 1 || num_inputs == 0 || inputs_per_rank(num_inputs, options) > 0,
      ValueError, "{} input nodes cannot be split over {} ranks{}", num_inputs, options.world_size,
      options.drop_last && num_inputs > 0 ? " with drop_last" : "");
}

int64_t inputs_per_rank(int64_t num_inputs, const LoaderOptions& options) {
  const int64_t world = options.world_size;
  if (world <= 1) return num_inputs;
  return options.drop_last ? num_inputs / world : (num_inputs + world - 1) / world;
}

int64_t num_batches(int64_t num_inputs, const LoaderOptions& options) {
  return batches_of(inputs_per_rank(num_inputs, options), options);
}

Array epoch_positions(int64_t num_inputs, const LoaderOptions& options, int64_t epoch) {
  Array order = epoch_order(num_inputs, options.shuffle, options.seed, epoch);
  if (options.world_size <= 1) return order;
  const int64_t world = options.world_size;
  const int64_t count = inputs_per_rank(num_inputs, options);
  Array positions = Array::empty(DType::kInt64, {count});
  const int64_t* all = order.data<int64_t>();
  int64_t* mine = positions.data<int64_t>();
  for (int64_t i = 0; i < count; ++i) {
    // Padding repeats the order from its start (DistributedSampler's default).
    mine[i] = all[(options.rank + i * world) % num_inputs];
  }
  return positions;
}

uint64_t epoch_sampler_seed(const LoaderOptions& options, int64_t epoch) {
  return epoch_sampler_seed(sampling_seed(options), epoch);
}

EpochShare epoch_share(const Array& input_nodes, const LoaderOptions& options, int64_t epoch) {
  EpochShare share;
  if (options.world_size <= 1) {
    share.input_nodes = input_nodes;
    share.shuffle = options.shuffle;
    share.seed = options.seed;
    return share;
  }
  share.positions = epoch_positions(input_nodes.numel(), options, epoch);
  const int64_t count = share.positions.numel();
  share.input_nodes = Array::empty(DType::kInt64, {count});
  const int64_t* positions = share.positions.data<int64_t>();
  const int64_t* inputs = input_nodes.data<int64_t>();
  int64_t* out = share.input_nodes.data<int64_t>();
  for (int64_t i = 0; i < count; ++i) out[i] = inputs[positions[i]];
  share.seed = sampling_seed(options);
  return share;
}

void remap_input_ids(Batch& batch, const Array& positions) {
  if (!positions.defined()) return;
  const int64_t count = positions.numel();
  const int64_t* map = positions.data<int64_t>();
  int64_t* ids = batch.input_ids.data<int64_t>();
  for (int64_t i = 0; i < batch.input_ids.numel(); ++i) {
    VOLLEY_REQUIRE(ids[i] >= 0 && ids[i] < count, RuntimeError,
                   "batch {}: input id {} outside this rank's {} inputs", batch.index, ids[i],
                   count);
    ids[i] = map[ids[i]];
  }
}

TypedInputs checked_typed_inputs(const std::vector<NodeTypeInfo>& types,
                                 const std::string& input_type,
                                 const std::optional<Array>& input_nodes,
                                 const LoaderOptions& options,
                                 const NeighborSamplerOptions& sampler) {
  const auto found = std::find_if(types.begin(), types.end(),
                                  [&](const NodeTypeInfo& t) { return t.name == input_type; });
  if (found == types.end()) {
    std::string known;
    for (const NodeTypeInfo& type : types) known += (known.empty() ? "" : ", ") + type.name;
    throw ValueError(
        fmt::format("input_nodes: unknown node type '{}' (node types: {})", input_type, known));
  }
  const int64_t n = found->num_nodes;
  check_loader_options(options, input_nodes ? input_nodes->numel() : n);
  const bool temporal = sampler.time_source != TimeSource::kNone;
  Array inputs = checked_input_nodes(input_nodes, n, /*distinct=*/!grows_trees(sampler));
  if (options.input_time) {
    VOLLEY_REQUIRE(temporal, ValueError, "input_time was given, but the sampler samples no times");
    VOLLEY_REQUIRE(options.input_time->ndim() == 1 &&
                       options.input_time->dtype() == DType::kInt64 &&
                       options.input_time->numel() == inputs.numel(),
                   ValueError, "input_time must be int64 [{}] (one per input node), got {}",
                   inputs.numel(), options.input_time->describe());
  }
  return {static_cast<int>(found - types.begin()), std::move(inputs)};
}

}  // namespace loader_internal

NeighborLoader::NeighborLoader(Csr graph, std::optional<FeatureStore> features,
                               std::optional<FeatureStore> labels, std::optional<Array> input_nodes,
                               LoaderOptions options, LoaderAttributes attributes)
    : NeighborLoader(std::make_shared<LocalBatchSource>(graph, features, std::move(labels)),
                     std::move(input_nodes), std::move(options)) {
  loader_internal::check_attributes(attributes, graph.num_nodes(), graph.num_edges());
  auto& shared = *std::const_pointer_cast<Shared>(shared_);
  shared.assembly.attributes = std::move(attributes);
  if (features && features->wants_lookahead()) shared.lookahead = std::move(features);
}

NeighborLoader::NeighborLoader(std::shared_ptr<const BatchSource> source,
                               std::optional<Array> input_nodes, LoaderOptions options)
    : options_(std::move(options)) {
  VOLLEY_REQUIRE(source != nullptr, ValueError, "the loader needs a batch source, got none");
  const int64_t n = source->num_nodes();
  loader_internal::check_loader_options(options_, input_nodes ? input_nodes->numel() : n);
  source->validate(options_.sampler);
  if (source->feature_width() > 0) {
    VOLLEY_REQUIRE(gather_supports(source->feature_dtype(), options_.feature_dtype), ValueError,
                   "features of dtype {} cannot be delivered as {}",
                   dtype_name(source->feature_dtype()), dtype_name(options_.feature_dtype));
  }
  Array inputs = loader_internal::checked_input_nodes(
      input_nodes, n, /*distinct=*/!loader_internal::grows_trees(options_.sampler));
  loader_internal::check_input_time(options_, inputs.numel());
  input_nodes_ = inputs;
  auto shared = std::make_shared<Shared>();
  shared->assembly.source = std::move(source);
  shared->input_nodes = std::move(inputs);
  shared_ = std::move(shared);
}

NeighborLoader::NeighborLoader(std::shared_ptr<HeteroNeighborSampler> sampler,
                               const std::string& input_type, std::optional<Array> input_nodes,
                               LoaderOptions options, TypedAttributes attributes)
    : NeighborLoader(std::make_shared<const TypedSamplerSource>(std::move(sampler)), input_type,
                     std::move(input_nodes), std::move(options), std::move(attributes)) {}

NeighborLoader::NeighborLoader(std::shared_ptr<const TypedBatchSource> source,
                               const std::string& input_type, std::optional<Array> input_nodes,
                               LoaderOptions options, TypedAttributes attributes)
    : options_(std::move(options)) {
  VOLLEY_REQUIRE(source != nullptr, ValueError, "the typed loader needs a source, got none");
  auto [type, inputs] = loader_internal::checked_typed_inputs(
      source->node_types(), input_type, input_nodes, options_, source->options());
  loader_internal::check_attributes(attributes, *source);
  input_nodes_ = inputs;
  auto shared = std::make_shared<Shared>();
  shared->input_nodes = std::move(inputs);
  shared->assembly.input_type = type;
  shared->assembly.typed_source = std::move(source);
  shared->assembly.typed_attributes = std::move(attributes);
  shared_ = std::move(shared);
}

NeighborLoader::NeighborLoader(CudaGraph graph, std::optional<FeatureStore> features,
                               std::optional<FeatureStore> labels, std::optional<Array> input_nodes,
                               LoaderOptions options)
    : cuda_(std::make_shared<const CudaNeighborLoader>(std::move(graph), std::move(features),
                                                       std::move(labels), std::move(input_nodes),
                                                       options)),
      options_(std::move(options)) {
  input_nodes_ = cuda_->input_nodes();
}

int64_t NeighborLoader::num_batches() const {
  return loader_internal::num_batches(input_nodes_.numel(), options_);
}

Array NeighborLoader::epoch_positions(int64_t epoch_index) const {
  return loader_internal::epoch_positions(input_nodes_.numel(), options_, epoch_index);
}

// What the producers of one CPU epoch share: the loader's state, the epoch's order and seed.
struct NeighborLoader::EpochWork {
  std::shared_ptr<const Shared> shared;
  Array order;            // int64: input positions in epoch order
  LoaderOptions options;  // options.sampler.seed: this epoch's sampler seed
  int threads = 1;
  int64_t prefetch = 1;
  int64_t batches = 0;
  // kLookahead tables: the batches sampled ahead and announced to their stores (null: none);
  // `window` for the features of a homogeneous graph, `typed_window` for a typed graph's tables.
  std::unique_ptr<loader_internal::LookaheadWindow> window;
  std::unique_ptr<loader_internal::TypedLookaheadWindow> typed_window;

  EpochWork() = default;
  EpochWork(const EpochWork&) = delete;
  EpochWork& operator=(const EpochWork&) = delete;
  std::vector<int64_t> seeds_of(int64_t index, int64_t* input_ids) const;
  // A typed batch's seeds and their input times (empty: none); input_ids as seeds_of's.
  std::pair<std::vector<int64_t>, std::vector<int64_t>> typed_seeds(int64_t index,
                                                                    int64_t* input_ids) const;
  // Samples typed batch `index` into `out` (its seeds viewed while they live).
  void sample_typed(int64_t index, int64_t* input_ids, HeteroSampledSubgraph& out) const;
  Batch make_batch(int64_t index, SampledSubgraph& subgraph) const;
};

std::pair<std::vector<int64_t>, std::vector<int64_t>> NeighborLoader::EpochWork::typed_seeds(
    int64_t index, int64_t* input_ids) const {
  std::vector<int64_t> seeds = seeds_of(index, input_ids);
  std::vector<int64_t> times;
  if (options.input_time) {
    const int64_t begin = index * options.batch_size;
    const std::span<const int64_t> positions(order.data<int64_t>() + begin, seeds.size());
    times = loader_internal::seed_times_at(*options.input_time, positions);
  }
  return {std::move(seeds), std::move(times)};
}

void NeighborLoader::EpochWork::sample_typed(int64_t index, int64_t* input_ids,
                                             HeteroSampledSubgraph& out) const {
  const auto [seeds, times] = typed_seeds(index, input_ids);
  const loader_internal::BatchAssembly& assembly = shared->assembly;
  const std::string& type = assembly.typed_source->node_types()[assembly.input_type].name;
  assembly.sample_typed({HeteroSeeds{type, seeds, times}}, options.sampler.seed, index, out);
}

std::vector<int64_t> NeighborLoader::EpochWork::seeds_of(int64_t index, int64_t* input_ids) const {
  const int64_t begin = index * options.batch_size;
  const int64_t end = std::min(order.numel(), begin + options.batch_size);
  std::vector<int64_t> seeds(static_cast<size_t>(end - begin));
  const int64_t* positions = order.data<int64_t>();
  const int64_t* inputs = shared->input_nodes.data<int64_t>();
  for (int64_t i = 0; i < end - begin; ++i) {
    if (input_ids != nullptr) input_ids[i] = positions[begin + i];
    seeds[static_cast<size_t>(i)] = inputs[positions[begin + i]];
  }
  return seeds;
}

void NeighborLoader::open_window(EpochWork& work) const {
  // Batch b is announced as tag + b, the tag unique to this epoch in the process.
  static std::atomic<int64_t> epochs{0};
  const int64_t depth = options_.lookahead;
  EpochWork* raw = &work;  // the window lives in `work`: no cycle
  const loader_internal::BatchAssembly& assembly = shared_->assembly;
  if (assembly.typed_source) {
    std::vector<loader_internal::TypedLookaheadWindow::Target> targets;
    for (size_t t = 0; t < assembly.typed_attributes.node.size(); ++t) {
      for (const auto& [name, store] : assembly.typed_attributes.node[t]) {
        if (!store.wants_lookahead()) continue;
        targets.push_back({store, [t](const HeteroSampledSubgraph& sub) {
                             return std::span<const int64_t>(sub.nodes[t]);
                           }});
      }
    }
    if (targets.empty()) return;
    work.typed_window = std::make_unique<loader_internal::TypedLookaheadWindow>(
        std::move(targets), (epochs.fetch_add(1) + 1) << 32, work.batches, depth,
        [raw](int64_t b, HeteroSampledSubgraph& out) { raw->sample_typed(b, nullptr, out); });
  } else if (shared_->lookahead && !options_.input_time) {
    work.window = std::make_unique<loader_internal::LookaheadWindow>(
        std::vector{loader_internal::batch_nodes_target(*shared_->lookahead)},
        (epochs.fetch_add(1) + 1) << 32, work.batches, depth,
        [raw](int64_t b, SampledSubgraph& out) {
          raw->shared->assembly.source->sample(raw->seeds_of(b, nullptr), raw->options.sampler,
                                               static_cast<uint64_t>(b), out);
        });
  }
}

std::unique_ptr<Epoch> NeighborLoader::start_epoch(int64_t epoch_index, int64_t first_batch) const {
  if (cuda_) return cuda_->start_epoch(epoch_index, first_batch);
  auto work = std::make_shared<EpochWork>();
  work->shared = shared_;
  work->order = epoch_positions(epoch_index);
  work->options = options_;
  // The epoch's sampler seed, set once: every batch samples with it.
  work->options.sampler.seed = loader_internal::epoch_sampler_seed(options_, epoch_index);
  const int64_t batches = num_batches();
  work->threads = static_cast<int>(
      std::min<int64_t>(resolve_threads(options_.num_threads), std::max<int64_t>(1, batches)));
  work->prefetch = options_.prefetch == 0 ? 2 * work->threads : std::max(options_.prefetch, 1);
  work->batches = batches;
  if (options_.lookahead > 0 && first_batch == 0) open_window(*work);  // (what it caches differs)
  Epoch::Producers producers;
  producers.threads = work->threads;
  producers.prefetch = work->prefetch;
  producers.make_builder = [work]() -> Epoch::BuildBatch {
    // One subgraph per worker thread, reused across its batches.
    auto subgraph = std::make_shared<SampledSubgraph>();
    return [work, subgraph](int64_t index) { return work->make_batch(index, *subgraph); };
  };
  producers.context = work;
  return std::make_unique<Epoch>(batches, std::move(producers), first_batch);
}

Batch NeighborLoader::EpochWork::make_batch(int64_t index, SampledSubgraph& subgraph) const {
  if (options.on_batch_start) options.on_batch_start(index);
  const int64_t begin = index * options.batch_size;
  const int64_t count = std::min(order.numel(), begin + options.batch_size) - begin;
  Batch batch;
  batch.index = index;
  batch.batch_size = count;
  batch.input_ids = Array::empty(DType::kInt64, {count});
  int64_t* input_ids = batch.input_ids.data<int64_t>();
  const loader_internal::BatchAssembly& assembly = shared->assembly;
  if (assembly.typed_source) {
    thread_local HeteroSampledSubgraph sub;  // one per worker thread, reused across its batches
    if (typed_window) {
      seeds_of(index, input_ids);
      typed_window->take(index, sub);  // sampled once, ahead, by this or another worker
    } else {
      sample_typed(index, input_ids, sub);
    }
    assembly.fill_typed(sub, threads, prefetch, batch);
    return batch;
  }
  const std::vector<int64_t> seeds = seeds_of(index, input_ids);
  const BatchSource& source = *assembly.source;
  if (window) {
    window->take(index, subgraph);  // sampled once, ahead, by this or another worker
  } else if (options.input_time) {
    const std::vector<int64_t> times = loader_internal::seed_times_at(
        *options.input_time, std::span<const int64_t>(input_ids, static_cast<size_t>(count)));
    source.sample_temporal(seeds, times, options.sampler, static_cast<uint64_t>(index), subgraph);
  } else {
    source.sample(seeds, options.sampler, static_cast<uint64_t>(index), subgraph);
  }
  assembly.fill(subgraph, options.feature_dtype, threads, prefetch, batch);
  return batch;
}

}  // namespace volley
