// volley/loader/link_loader.cc — see link_loader.h.
#include "volley/loader/link_loader.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <span>
#include <string>
#include <utility>

#include "volley/core/parallel.h"
#include "volley/feature/gather.h"  // gather_supports
#include "volley/loader/internal/batch_assembly.h"
#include "volley/loader/internal/link_parts.h"

namespace volley {

using loader_internal::SeedGroups;

struct LinkLoader::Shared {
  std::vector<int64_t> src, dst;             // the supervision edges
  std::optional<Array> labels;               // [M], as given
  std::optional<NegativeSampler> negatives;  // seed 0; reseeded per epoch
  loader_internal::BatchAssembly assembly;   // typed graphs: assembly.typed_source is set
  // Typed graphs: the node types of the two ends and the supervision edge type (indices into
  // the sampler's lists; -1: the graph has no edges of that type).
  int src_type = 0;
  int dst_type = 0;
  int edge_type = -1;

  bool typed() const { return assembly.typed_source != nullptr; }
  // The seed group of the destinations: the sources' (0) unless the ends have two types.
  int dst_group() const { return typed() && src_type != dst_type ? 1 : 0; }
};

namespace {

int resolve_threads(int requested) { return requested > 0 ? requested : default_num_threads(); }

// Removes from `subgraph` every edge u → v (global ids: u = nodes[cols[k]], v = nodes[rows[k]])
// that is a pair (src[i], dst[i]), or (dst[i], src[i]) when `undirected`; recounts
// edges_per_hop.
void exclude_pairs(std::span<const int64_t> src, std::span<const int64_t> dst, bool undirected,
                   SampledSubgraph& subgraph) {
  const loader_internal::NodePairs pairs = loader_internal::node_pairs(src, dst, true, undirected);
  const int64_t edges = subgraph.num_edges();
  const int64_t* nodes = subgraph.nodes.data<int64_t>();
  const int64_t* rows = edges > 0 ? subgraph.rows.data<int64_t>() : nullptr;
  const int64_t* cols = edges > 0 ? subgraph.cols.data<int64_t>() : nullptr;
  const int64_t* ids = edges > 0 ? subgraph.edge_ids.data<int64_t>() : nullptr;
  const std::vector<int64_t> kept =
      loader_internal::edges_outside(pairs, nodes, nodes, rows, cols, subgraph.edges_per_hop);
  std::vector<int64_t> kept_rows(kept.size()), kept_cols(kept.size()), kept_ids(kept.size());
  for (size_t i = 0; i < kept.size(); ++i) {
    kept_rows[i] = rows[kept[i]];
    kept_cols[i] = cols[kept[i]];
    kept_ids[i] = ids[kept[i]];
  }
  subgraph.rows = Array::from_vector(kept_rows);
  subgraph.cols = Array::from_vector(kept_cols);
  subgraph.edge_ids = Array::from_vector(kept_ids);
}

// The same over edge type `e` of a typed subgraph whose edges go from node type `from` to `to`:
// removes the pairs in `pairs`.
void exclude_typed_pairs(const loader_internal::NodePairs& pairs, size_t e, size_t from, size_t to,
                         HeteroSampledSubgraph& sub) {
  std::vector<int64_t>& rows = sub.rows[e];
  std::vector<int64_t>& cols = sub.cols[e];
  std::vector<int64_t>& ids = sub.edge_ids[e];
  const std::vector<int64_t> kept =
      loader_internal::edges_outside(pairs, sub.nodes[from].data(), sub.nodes[to].data(),
                                     rows.data(), cols.data(), sub.edges_per_hop[e]);
  for (size_t i = 0; i < kept.size(); ++i) {
    rows[i] = rows[kept[i]];
    cols[i] = cols[kept[i]];
    ids[i] = ids[kept[i]];
  }
  rows.resize(kept.size());
  cols.resize(kept.size());
  ids.resize(kept.size());
}

// The index of node type `name` in `types`; ValueError naming the edge type and the known ones.
int node_type_of(const std::vector<NodeTypeInfo>& types, const std::string& name,
                 const EdgeType& edge_type) {
  for (size_t t = 0; t < types.size(); ++t) {
    if (types[t].name == name) return static_cast<int>(t);
  }
  std::string known;
  for (const NodeTypeInfo& type : types) known += (known.empty() ? "" : ", ") + type.name;
  throw ValueError(fmt::format("edge type {}: unknown node type '{}' (node types: {})",
                               edge_type.name(), name, known));
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
  loader_internal::read_edges(edge_label_index, n, n, shared->src, shared->dst);
  adopt_inputs(*shared, std::move(edge_label));
  source->validate(options_.loader.sampler);
  if (source->feature_width() > 0) {
    VOLLEY_REQUIRE(gather_supports(source->feature_dtype(), options_.loader.feature_dtype),
                   ValueError, "features of dtype {} cannot be delivered as {}",
                   dtype_name(source->feature_dtype()), dtype_name(options_.loader.feature_dtype));
  }
  if (!attributes.node.empty() || !attributes.edge.empty()) {
    loader_internal::check_attributes(attributes, n, num_graph_edges);
  }
  if (options_.negatives.mode != NegativeMode::kNone) {
    shared->negatives.emplace(loader_internal::make_negative_sampler(source, options_));
  }
  shared->assembly.source = std::move(source);
  shared->assembly.attributes = std::move(attributes);
  shared_ = std::move(shared);
}

LinkLoader::LinkLoader(std::shared_ptr<HeteroNeighborSampler> sampler, const EdgeType& edge_type,
                       Array edge_label_index, std::optional<Array> edge_label,
                       LinkLoaderOptions options, std::optional<NegativeSampler> negatives,
                       TypedAttributes attributes)
    : LinkLoader(std::make_shared<const TypedSamplerSource>(std::move(sampler)), edge_type,
                 std::move(edge_label_index), std::move(edge_label), std::move(options),
                 std::move(negatives), std::move(attributes)) {}

LinkLoader::LinkLoader(std::shared_ptr<const TypedBatchSource> source, const EdgeType& edge_type,
                       Array edge_label_index, std::optional<Array> edge_label,
                       LinkLoaderOptions options, std::optional<NegativeSampler> negatives,
                       TypedAttributes attributes)
    : options_(std::move(options)) {
  VOLLEY_REQUIRE(source != nullptr, ValueError, "the typed link loader needs a source, got none");
  auto shared = std::make_shared<Shared>();
  const std::vector<NodeTypeInfo>& types = source->node_types();
  shared->src_type = node_type_of(types, edge_type.src, edge_type);
  shared->dst_type = node_type_of(types, edge_type.dst, edge_type);
  const std::vector<EdgeType>& edge_types = source->edge_types();
  const auto found = std::find(edge_types.begin(), edge_types.end(), edge_type);
  shared->edge_type = found == edge_types.end() ? -1 : static_cast<int>(found - edge_types.begin());
  const NodeTypeInfo& from = types[static_cast<size_t>(shared->src_type)];
  const NodeTypeInfo& to = types[static_cast<size_t>(shared->dst_type)];
  const auto what = [](const NodeTypeInfo& type) {
    return fmt::format("node type '{}' with {} nodes", type.name, type.num_nodes);
  };
  loader_internal::read_edges(edge_label_index, from.num_nodes, to.num_nodes, shared->src,
                              shared->dst, what(from), what(to));
  options_.loader.sampler.time_source = source->options().time_source;  // the source's
  options_.loader.sampler.disjoint = source->options().disjoint;
  adopt_inputs(*shared, std::move(edge_label));
  loader_internal::check_attributes(attributes, *source);
  if (options_.negatives.mode != NegativeMode::kNone) {
    VOLLEY_REQUIRE(negatives.has_value(), ValueError,
                   "negative sampling over edge type {} needs a negative sampler, got none",
                   edge_type.name());
    VOLLEY_REQUIRE(
        negatives->num_sources() == from.num_nodes && negatives->num_destinations() == to.num_nodes,
        ValueError,
        "the negative sampler draws from {} sources and {} destinations; edge type {} "
        "has {} and {}",
        negatives->num_sources(), negatives->num_destinations(), edge_type.name(), from.num_nodes,
        to.num_nodes);
    shared->negatives = std::move(negatives);
  }
  shared->assembly.typed_source = std::move(source);
  shared->assembly.typed_attributes = std::move(attributes);
  shared_ = std::move(shared);
}

void LinkLoader::adopt_inputs(Shared& shared, std::optional<Array> edge_label) {
  num_inputs_ = static_cast<int64_t>(shared.src.size());
  if (edge_label) {
    loader_internal::check_edge_label(*edge_label, num_inputs_);
    shared.labels = std::move(edge_label);
  }
  loader_internal::check_negative_options(options_.negatives, shared.labels.has_value());
  loader_internal::check_edge_label_time(options_.loader, num_inputs_);
  if (options_.loader.sampler.time_source != TimeSource::kNone) {
    options_.loader.sampler.disjoint = true;  // PyG: temporal link sampling is disjoint
  }
  loader_internal::check_loader_options(options_.loader, num_inputs_);
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
  // Seeds of the batch's positives (and negatives), by group (link_parts.h: the sources', then
  // the destinations' when the ends have two node types), and the link fields of `batch`.
  SeedGroups link_fields(int64_t index, const std::vector<int64_t>& src,
                         const std::vector<int64_t>& dst, Batch& batch) const;
  // edge_label for `positives` followed by `negatives` zeros (kNone: labels or undefined).
  Array labels(std::span<const int64_t> positions, int64_t negatives) const;
  bool disjoint() const { return options.loader.sampler.disjoint; }
  // Temporal sampling: each seed's time (per group), the edge_label_time of its supervision
  // edge; negative i (of each end's list) takes edge i mod B's, as PyG's repeat does.
  std::vector<std::vector<int64_t>> seed_times(std::span<const int64_t> positions,
                                               const SeedGroups& seeds) const;
  // Node-time sampling: the time bound of `count` negatives (of pairs, or of sources for
  // triplets): negative i no later than edge i mod B's time (PyG's neg_sample); else none.
  std::vector<int64_t> negative_time_bounds(std::span<const int64_t> positions,
                                            int64_t count) const;
  // Samples the seeds and fills the batch: over the source (homogeneous) or the typed sampler,
  // the batch's positives (src, dst) removed with exclude_edges, trees modulo B when disjoint.
  void sample_untyped(int64_t index, const SeedGroups& seeds,
                      const std::vector<std::vector<int64_t>>& times, std::span<const int64_t> src,
                      std::span<const int64_t> dst, SampledSubgraph& subgraph, Batch& batch) const;
  void sample_typed(int64_t index, const SeedGroups& seeds,
                    const std::vector<std::vector<int64_t>>& times, std::span<const int64_t> src,
                    std::span<const int64_t> dst, Batch& batch) const;
  // exclude_edges over a typed subgraph: the positives from the supervision edge type, and with
  // undirected their reverses from every edge type going from the destination type to the
  // source type.
  void exclude_typed(std::span<const int64_t> src, std::span<const int64_t> dst,
                     HeteroSampledSubgraph& sub) const;
};

std::unique_ptr<Epoch> LinkLoader::start_epoch(int64_t epoch_index, int64_t first_batch) const {
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
  return std::make_unique<Epoch>(batches, std::move(producers), first_batch);
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

SeedGroups LinkLoader::EpochWork::link_fields(int64_t index, const std::vector<int64_t>& src,
                                              const std::vector<int64_t>& dst, Batch& batch) const {
  const auto count = static_cast<int64_t>(src.size());
  const LinkNegativeOptions& mode = options.negatives;
  const std::span<const int64_t> positions = batch.input_ids.span<int64_t>();
  const int group = shared->dst_group();
  const int groups = group + 1;
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
    const int group_of[] = {0, group, group};
    SeedGroups seeds = loader_internal::seed_groups(arrays, group_of, groups, disjoint());
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
  const int group_of[] = {0, group};
  SeedGroups seeds = loader_internal::seed_groups(arrays, group_of, groups, disjoint());
  batch.edge_label_index = loader_internal::pair_index(seeds.local[0], seeds.local[1]);
  batch.edge_label = labels(positions, num_negatives);
  return seeds;
}

std::vector<std::vector<int64_t>> LinkLoader::EpochWork::seed_times(
    std::span<const int64_t> positions, const SeedGroups& seeds) const {
  const int64_t* time = options.loader.input_time->data<int64_t>();
  const auto count = static_cast<int64_t>(positions.size());
  std::vector<std::vector<int64_t>> out(seeds.nodes.size());
  for (size_t g = 0; g < out.size(); ++g) out[g].resize(seeds.nodes[g].size());
  for (size_t a = 0; a < seeds.local.size(); ++a) {  // src, dst (then negatives)
    std::vector<int64_t>& group = out[a == 0 ? 0 : static_cast<size_t>(shared->dst_group())];
    const std::vector<int64_t>& local = seeds.local[a];
    for (size_t i = 0; i < local.size(); ++i) {
      group[local[i]] = time[positions[static_cast<int64_t>(i) % count]];
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
  const SeedGroups seeds = link_fields(index, src, dst, batch);
  std::vector<std::vector<int64_t>> times;
  if (loader.sampler.time_source != TimeSource::kNone) {
    times = seed_times(batch.input_ids.span<int64_t>(), seeds);
  }
  if (shared->typed()) {
    sample_typed(index, seeds, times, src, dst, batch);
  } else {
    sample_untyped(index, seeds, times, src, dst, subgraph, batch);
  }
  return batch;
}

void LinkLoader::EpochWork::sample_untyped(int64_t index, const SeedGroups& seeds,
                                           const std::vector<std::vector<int64_t>>& times,
                                           std::span<const int64_t> src,
                                           std::span<const int64_t> dst, SampledSubgraph& subgraph,
                                           Batch& batch) const {
  const LoaderOptions& loader = options.loader;
  const loader_internal::BatchAssembly& assembly = shared->assembly;
  if (!times.empty()) {
    assembly.source->sample_temporal(seeds.nodes[0], times[0], loader.sampler,
                                     static_cast<uint64_t>(index), subgraph);
  } else {
    assembly.source->sample(seeds.nodes[0], loader.sampler, static_cast<uint64_t>(index), subgraph);
  }
  if (options.exclude_edges) exclude_pairs(src, dst, options.undirected, subgraph);
  const auto count = static_cast<int64_t>(src.size());
  if (disjoint() && count > 0) {  // PyG: a tree's batch id is its supervision edge's position
    int64_t* tree = subgraph.batch.data<int64_t>();
    for (int64_t i = 0; i < subgraph.batch.numel(); ++i) tree[i] %= count;
  }
  assembly.fill(subgraph, loader.feature_dtype, threads, prefetch, batch);
}

void LinkLoader::EpochWork::sample_typed(int64_t index, const SeedGroups& seeds,
                                         const std::vector<std::vector<int64_t>>& times,
                                         std::span<const int64_t> src, std::span<const int64_t> dst,
                                         Batch& batch) const {
  const loader_internal::BatchAssembly& assembly = shared->assembly;
  const std::vector<NodeTypeInfo>& types = assembly.typed_source->node_types();
  const int ends[] = {shared->src_type, shared->dst_type};
  std::vector<HeteroSeeds> groups;
  for (size_t g = 0; g < seeds.nodes.size(); ++g) {
    groups.push_back({types[static_cast<size_t>(ends[g])].name, seeds.nodes[g],
                      times.empty() ? std::span<const int64_t>() : times[g]});
  }
  const auto count = static_cast<int64_t>(src.size());
  const auto edit = [&](HeteroSampledSubgraph& sub) {
    if (options.exclude_edges) exclude_typed(src, dst, sub);
    if (!disjoint() || count == 0) return;
    for (std::vector<int64_t>& trees : sub.batch) {  // each tree's supervision edge
      for (int64_t& tree : trees) tree %= count;
    }
  };
  assembly.fill_typed(groups, options.loader.sampler.seed, index, threads, prefetch, batch, edit);
}

void LinkLoader::EpochWork::exclude_typed(std::span<const int64_t> src,
                                          std::span<const int64_t> dst,
                                          HeteroSampledSubgraph& sub) const {
  const TypedBatchSource& source = *shared->assembly.typed_source;
  const std::vector<NodeTypeInfo>& types = source.node_types();
  const std::vector<EdgeType>& edge_types = source.edge_types();
  const std::string& from = types[static_cast<size_t>(shared->src_type)].name;
  const std::string& to = types[static_cast<size_t>(shared->dst_type)].name;
  for (size_t e = 0; e < edge_types.size(); ++e) {
    const bool forward = static_cast<int>(e) == shared->edge_type;
    const bool reverse = options.undirected && edge_types[e].src == to && edge_types[e].dst == from;
    if (!forward && !reverse) continue;
    const auto type_of = [&](const std::string& name) {
      return static_cast<size_t>(node_type_of(types, name, edge_types[e]));
    };
    exclude_typed_pairs(loader_internal::node_pairs(src, dst, forward, reverse), e,
                        type_of(edge_types[e].src), type_of(edge_types[e].dst), sub);
  }
}

}  // namespace volley
