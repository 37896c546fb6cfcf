#include "volley/sampling/cpu/neighbor_kernel.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "volley/core/error.h"
#include "volley/core/parallel.h"
#include "volley/core/recycler.h"
#include "volley/sampling/cpu/time_filter.h"
#include "volley/sampling/cpu/typed_builder.h"
#include "volley/sampling/internal/positions.h"

namespace volley::cpu {
namespace {

constexpr int64_t kSmallFanout = 64;  // Floyd's membership test by linear scan up to here

// Positions (relative to the row start) of the neighbors to take, into `picked`.
// Uniform without replacement, 0 < k < degree: Floyd's algorithm, result sorted.
void pick_uniform_without_replacement(int64_t degree, int64_t k, PhiloxStream& rng,
                                      NeighborScratch& scratch) {
  auto& picked = scratch.picked;
  picked.clear();
  if (k <= kSmallFanout) {
    for (int64_t j = degree - k; j < degree; ++j) {
      int64_t t = static_cast<int64_t>(rng.bounded64(static_cast<uint64_t>(j + 1)));
      if (std::find(picked.begin(), picked.end(), t) != picked.end()) t = j;
      picked.push_back(t);
    }
  } else {
    auto& bitmap = scratch.bitmap;
    bitmap.assign(static_cast<size_t>(degree / 64 + 1), 0);
    for (int64_t j = degree - k; j < degree; ++j) {
      int64_t t = static_cast<int64_t>(rng.bounded64(static_cast<uint64_t>(j + 1)));
      if (bitmap[static_cast<size_t>(t / 64)] >> (t % 64) & 1) t = j;
      bitmap[static_cast<size_t>(t / 64)] |= uint64_t{1} << (t % 64);
      picked.push_back(t);
    }
  }
  std::sort(picked.begin(), picked.end());
}

void pick_uniform_with_replacement(int64_t degree, int64_t k, PhiloxStream& rng,
                                   NeighborScratch& scratch) {
  auto& picked = scratch.picked;
  picked.clear();
  for (int64_t j = 0; j < k; ++j) {
    picked.push_back(static_cast<int64_t>(rng.bounded64(static_cast<uint64_t>(degree))));
  }
}

// Efraimidis–Spirakis: key_i = log(u_i) / w_i; the k largest keys win. One uniform per neighbor
// in CSR order, drawn whether or not its weight is positive (keeps streams aligned).
void pick_weighted_without_replacement(const float* weights, int64_t degree, int64_t k,
                                       PhiloxStream& rng, NeighborScratch& scratch) {
  auto& picked = scratch.picked;
  auto& keys = scratch.keys;
  picked.clear();
  keys.resize(static_cast<size_t>(degree));
  int64_t positive = 0;
  for (int64_t i = 0; i < degree; ++i) {
    const double u = 1.0 - rng.uniform_double();  // (0, 1]
    if (weights[i] > 0.0f) {
      // deterministic_log, not std::log: the CUDA kernel computes the same bits (pick.h).
      keys[static_cast<size_t>(i)] = sampling_internal::weighted_key(u, weights[i]);
      picked.push_back(i);
      ++positive;
    }
  }
  if (positive > k) {
    // Largest key first; ties broken by position so the choice is deterministic.
    std::nth_element(picked.begin(), picked.begin() + k, picked.end(), [&](int64_t a, int64_t b) {
      const double ka = keys[static_cast<size_t>(a)], kb = keys[static_cast<size_t>(b)];
      return ka > kb || (ka == kb && a < b);
    });
    picked.resize(static_cast<size_t>(k));
  }
  std::sort(picked.begin(), picked.end());
}

// Inverse-CDF draws over the row's weights.
void pick_weighted_with_replacement(const float* weights, int64_t degree, int64_t k,
                                    PhiloxStream& rng, NeighborScratch& scratch) {
  auto& picked = scratch.picked;
  auto& cumulative = scratch.keys;
  picked.clear();
  cumulative.resize(static_cast<size_t>(degree));
  double total = 0.0;
  for (int64_t i = 0; i < degree; ++i) {
    total += static_cast<double>(weights[i]);
    cumulative[static_cast<size_t>(i)] = total;
  }
  if (!(total > 0.0)) return;
  for (int64_t j = 0; j < k; ++j) {
    const double target = rng.uniform_double() * total;
    auto it = std::upper_bound(cumulative.begin(), cumulative.end(), target);
    int64_t position = std::min<int64_t>(it - cumulative.begin(), degree - 1);
    // Never land on a zero-weight neighbor (possible only through rounding at the top end).
    while (position > 0 && weights[position] == 0.0f) --position;
    picked.push_back(position);
  }
}

// The positions to take from a row of `degree` neighbors (`weights`: the row's weights, or null
// for uniform sampling) into scratch.picked, for 0 < fanout and not "take them all".
void pick(const float* weights, int64_t degree, int64_t fanout, bool replace, PhiloxStream& rng,
          NeighborScratch& scratch) {
  if (weights != nullptr) {
    if (replace) {
      pick_weighted_with_replacement(weights, degree, fanout, rng, scratch);
    } else {
      pick_weighted_without_replacement(weights, degree, fanout, rng, scratch);
    }
  } else if (replace) {
    pick_uniform_with_replacement(degree, fanout, rng, scratch);
  } else {
    pick_uniform_without_replacement(degree, fanout, rng, scratch);
  }
}

TimeFilter time_filter(const Csr& graph, const NeighborSamplerOptions& options,
                       std::span<const int64_t> seed_times) {
  if (options.time_source == TimeSource::kNone) return {};
  TimeFilter filter =
      graph_time_filter(graph, options.time_source == TimeSource::kEdge, seed_times.data());
  filter.last = options.temporal_strategy == TemporalStrategy::kLast;
  return filter;
}

// The temporal picks of a row with `admissible` admissible entries when they are a run of
// positions [begin, end): none, all of them, or "last"'s; begin -1 when they are drawn.
struct PickRun {
  int64_t begin, end;
};
PickRun contiguous_picks(const TimeFilter& filter, int64_t admissible, int64_t fanout,
                         bool replace) {
  if (admissible == 0 || fanout == 0) return {0, 0};
  if (fanout == -1 || (admissible <= fanout && (filter.last || !replace))) return {0, admissible};
  if (filter.last) return {admissible - fanout, admissible};
  return {-1, -1};
}

// Temporal picks of one target (row [row_begin, row_begin + degree)) whose tree has time
// `limit`, into scratch.picked as positions relative to the row start. The admissible entries
// (time <= limit) are the first `prefix` of a sorted row (searched by the caller: PrefixChunks),
// else collected here by a scan (`prefix` unused); the uniform rules then run over them as over a
// row of that degree (neighbor_sampler.h), from the Philox stream at counter `stream`.
template <typename Index>
void pick_temporal(const TimeFilter& filter, const Index* indices, int64_t row_begin,
                   int64_t degree, int64_t limit, int64_t fanout, uint64_t seed, bool replace,
                   PhiloxCounter stream, NeighborScratch& scratch, int64_t prefix) {
  auto& picked = scratch.picked;
  picked.clear();
  const int64_t* map = nullptr;  // admissible position -> row position; null: the identity
  int64_t admissible = prefix;
  if (!filter.sorted) {
    scratch.admissible.clear();
    for (int64_t p = 0; p < degree; ++p) {
      if (filter.time(indices, row_begin + p) <= limit) scratch.admissible.push_back(p);
    }
    admissible = static_cast<int64_t>(scratch.admissible.size());
    map = scratch.admissible.data();
  }
  const PickRun run = contiguous_picks(filter, admissible, fanout, replace);
  if (run.begin >= 0) {
    for (int64_t p = run.begin; p < run.end; ++p) picked.push_back(p);
  } else {
    // Made here rather than passed: copying a freshly stored stream into the call waited on
    // the stores (a store-forwarding stall per row).
    PhiloxStream rng(seed, stream);
    pick(nullptr, admissible, fanout, replace, rng, scratch);
  }
  if (map != nullptr) {
    for (int64_t& position : picked) position = map[position];
  }
}

// The admissible prefixes of the sorted rows a pick loop visits in order (items [0, end) of it),
// searched kChunk rows at a time (admissible_prefixes) when the loop first asks for one of a
// chunk: `row_of(i)` is item i's {CSR row, time limit}.
template <typename Index, typename RowOf>
class PrefixChunks {
 public:
  PrefixChunks(const TimeFilter& filter, const int64_t* indptr, const Index* indices, size_t end,
               RowOf row_of, NeighborScratch& scratch)
      : filter_(filter),
        indptr_(indptr),
        indices_(indices),
        end_(end),
        row_of_(row_of),
        scratch_(scratch) {}

  // Item i's prefix; i must not decrease from call to call.
  int64_t operator[](size_t i) {
    if (i >= chunk_end_) search(i, std::min(i + kChunk, end_));
    return scratch_.prefixes[i - chunk_begin_];
  }

 private:
  static constexpr size_t kChunk = 256, kAhead = 16;

  void search(size_t begin, size_t end) {
    auto& queries = scratch_.queries;
    queries.resize(end - begin);  // written in place: push_back was a call per row
    for (size_t i = begin; i < end; ++i) {
      if (i + kAhead < end) __builtin_prefetch(indptr_ + row_of_(i + kAhead).first);
      const auto [row, limit] = row_of_(i);
      queries[i - begin] = {indptr_[row], indptr_[row + 1] - indptr_[row], limit};
    }
    scratch_.prefixes.resize(queries.size());
    admissible_prefixes<Index>(filter_, indices_, queries, scratch_.prefixes.data());
    chunk_begin_ = begin;
    chunk_end_ = end;
  }

  const TimeFilter& filter_;
  const int64_t* indptr_;
  const Index* indices_;
  size_t end_;
  RowOf row_of_;
  NeighborScratch& scratch_;
  size_t chunk_begin_ = 0, chunk_end_ = 0;
};

// The picked edges' ids in their lists, from CSR positions (internal/positions.h).
template <typename Id>
void positions_to_ids(const Id* ids, std::vector<int64_t>& list) {
  sampling_internal::positions_to_ids(ids, list.data(), list.size());
}

// Edge type `edges`' part of hop `hop` into `builder` (TypedSubgraphBuilder, or
// TypedDisjointBuilder: then its batch lists hold each frontier node's tree). The graph is far
// larger than the caches, so the edges are picked in passes whose memory accesses are independent
// and prefetched ahead, rather than in one loop that waits on each: pass 1 (here) picks the edges
// of every frontier node as CSR positions, reading only indptr (prefetched) and, for temporal
// sampling of sorted rows, the admissible prefixes searched a chunk of rows at a time
// (PrefixChunks); pass 2 (positions_to_ids) reads the picked neighbors' ids; pass 3
// (builder.end_edges) maps them to local ids. At the end of the batch the positions become edge
// ids (sample_typed). The output is exactly that of a single pass.
template <typename Index, typename Builder>
void expand_edges(const TypedEdges& edges, int e, int hop, bool replace, uint64_t batch_index,
                  NeighborScratch& scratch, Builder& builder) {
  const Csr& graph = *edges.csr;
  const int64_t* indptr = graph.indptr().data<int64_t>();
  const Index* indices = graph.indices().template data<Index>();
  const float* weights = edges.weighted ? graph.weights()->data<float>() : nullptr;
  const TimeFilter& filter = edges.filter;
  const int64_t fanout = edges.fanouts[hop];
  builder.begin_edges(e, edges.src, edges.dst);
  const int64_t* nodes = builder.nodes(edges.dst);  // no node is added before end_edges
  const int64_t* trees = nullptr;                   // temporal sampling is disjoint
  if constexpr (requires { builder.batch(0); }) trees = builder.batch(edges.dst);
  const size_t frontier_end = builder.frontier_end(edges.dst);
  constexpr size_t kAhead = 16;
  const bool search_ahead = filter.active() && filter.sorted;  // PrefixChunks below
  const auto row_of = [&](size_t i) { return std::pair{nodes[i], filter.seed_times[trees[i]]}; };
  PrefixChunks prefixes(filter, indptr, indices, frontier_end, row_of, scratch);
  // A row read whole by the picks (weights, or times scanned) is prefetched half as far ahead.
  const void* scanned = weights != nullptr                 ? weights
                        : !filter.active() || search_ahead ? nullptr
                        : filter.edge_time != nullptr      ? filter.edge_time
                                                           : static_cast<const void*>(indices);
  const size_t scanned_size = weights != nullptr            ? sizeof(float)
                              : filter.edge_time != nullptr ? sizeof(int64_t)
                                                            : sizeof(Index);
  for (size_t i = builder.frontier_begin(edges.dst); fanout != 0 && i < frontier_end; ++i) {
    if (i + kAhead < frontier_end) __builtin_prefetch(indptr + nodes[i + kAhead]);
    if (scanned != nullptr && i + kAhead / 2 < frontier_end) {
      const auto ahead = static_cast<size_t>(indptr[nodes[i + kAhead / 2]]);
      __builtin_prefetch(static_cast<const char*>(scanned) + ahead * scanned_size);
    }
    const int64_t target = nodes[i];
    const int64_t row_begin = indptr[target];
    const int64_t degree = indptr[target + 1] - row_begin;
    if (degree == 0) continue;
    auto emit = [&](int64_t position) {
      const int64_t k = row_begin + position;
      builder.add_edge(i, k, k);  // CSR positions; pass 2 below reads the ids
    };
    // The picks: a run of positions (the whole row, or a temporal run), else (begin -1) drawn
    // into scratch.picked. One emitting loop for each: GCC inlines add_edge's push_backs then.
    PickRun run{0, degree};
    if (filter.active()) {
      run = search_ahead ? contiguous_picks(filter, prefixes[i], fanout, replace) : PickRun{-1, -1};
      if (run.begin < 0) {
        pick_temporal(filter, indices, row_begin, degree, filter.seed_times[trees[i]], fanout,
                      edges.stream_seed, replace, neighbor_stream_counter(target, hop, batch_index),
                      scratch, search_ahead ? prefixes[i] : -1);
      }
    } else if (fanout != -1 && (replace || degree > fanout)) {
      run = {-1, -1};
      PhiloxStream rng(edges.stream_seed, neighbor_stream_counter(target, hop, batch_index));
      pick(weights == nullptr ? nullptr : weights + row_begin, degree, fanout, replace, rng,
           scratch);
    }
    if (run.begin >= 0) {
      for (int64_t position = run.begin; position < run.end; ++position) emit(position);
    } else {
      for (int64_t position : scratch.picked) emit(position);
    }
  }
  positions_to_ids(indices, builder.neighbors());  // pass 2: the neighbors' ids
  builder.end_edges();
}

// The seeds placed, then `hops` hops over every edge type in order, into `builder`.
template <typename Builder>
void sample_typed(std::span<const TypedEdges> edges, std::span<const TypedSeeds> seeds, size_t hops,
                  const NeighborSamplerOptions& options, uint64_t batch_index,
                  NeighborScratch& scratch, Builder& builder, TypedLists& out) {
  place_seeds(builder, seeds);
  builder.start();
  for (size_t hop = 0; hop < hops; ++hop) {
    for (size_t e = 0; e < edges.size(); ++e) {
      const auto index = static_cast<int>(e);
      if (edges[e].csr->index_dtype() == DType::kInt32) {
        expand_edges<int32_t>(edges[e], index, static_cast<int>(hop), options.replace, batch_index,
                              scratch, builder);
      } else {
        expand_edges<int64_t>(edges[e], index, static_cast<int>(hop), options.replace, batch_index,
                              scratch, builder);
      }
    }
    builder.end_hop();
  }
  builder.finish();
  for (size_t e = 0; e < edges.size(); ++e) {
    if (edges[e].csr->has_edge_ids()) {
      positions_to_ids(edges[e].csr->edge_ids()->data<int64_t>(), *out.edge_ids[e]);
    }
  }
}

// kInduced: replaces the sampled edges by every graph edge between two sampled nodes (the map
// still holds the batch), grouped by target in node order, each target's in CSR order.
template <typename Index>
void induce(const Csr& graph, const SlotMap& map, HostSubgraph& out) {
  const int64_t* indptr = graph.indptr().data<int64_t>();
  const Index* indices = graph.indices().template data<Index>();
  const int64_t* edge_ids = graph.has_edge_ids() ? graph.edge_ids()->data<int64_t>() : nullptr;
  out.rows.clear();
  out.cols.clear();
  out.edge_ids.clear();
  for (size_t i = 0; i < out.nodes.size(); ++i) {
    const int64_t node = out.nodes[i];
    for (int64_t k = indptr[node]; k < indptr[node + 1]; ++k) {
      const int32_t local = map.find(static_cast<int64_t>(indices[k]));
      if (local < 0) continue;
      out.rows.push_back(static_cast<int64_t>(i));
      out.cols.push_back(local);
      out.edge_ids.push_back(edge_ids != nullptr ? edge_ids[k] : k);
    }
  }
  out.edges_per_hop.clear();
}

// kBidirectional: the sampled edges and their reverses, each (source, target) pair once, sorted
// by target then source; a pair keeps the edge id of its first occurrence (sampled edges before
// reverses, in edge order).
void make_bidirectional(HostSubgraph& out) {
  struct Edge {
    int64_t target, source, order, id;
  };
  const size_t count = out.rows.size();
  std::vector<Edge> edges;
  edges.reserve(2 * count);
  for (size_t j = 0; j < count; ++j) {
    const auto order = static_cast<int64_t>(j);
    edges.push_back({out.rows[j], out.cols[j], order, out.edge_ids[j]});
    edges.push_back(
        {out.cols[j], out.rows[j], order + static_cast<int64_t>(count), out.edge_ids[j]});
  }
  std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) {
    if (a.target != b.target) return a.target < b.target;
    if (a.source != b.source) return a.source < b.source;
    return a.order < b.order;
  });
  out.rows.clear();
  out.cols.clear();
  out.edge_ids.clear();
  for (size_t j = 0; j < edges.size(); ++j) {
    if (j > 0 && edges[j].target == edges[j - 1].target && edges[j].source == edges[j - 1].source)
      continue;
    out.rows.push_back(edges[j].target);
    out.cols.push_back(edges[j].source);
    out.edge_ids.push_back(edges[j].id);
  }
  out.edges_per_hop.clear();
}

// `filter` active: a temporal hop, targets[i]'s tree time at filter.seed_times[i].
template <typename Index>
void sample_hop_rows(const Csr& graph, int64_t first_node, std::span<const int64_t> targets,
                     int hop, int64_t fanout, const NeighborSamplerOptions& options,
                     uint64_t batch_index, const TimeFilter& filter, NeighborScratch& scratch,
                     HopSample& out) {
  const int64_t* indptr = graph.indptr().data<int64_t>();
  const Index* indices = graph.indices().template data<Index>();
  const int64_t* edge_ids = graph.has_edge_ids() ? graph.edge_ids()->data<int64_t>() : nullptr;
  const float* weights = options.weighted ? graph.weights()->data<float>() : nullptr;
  const int64_t num_rows = graph.num_nodes();
  out.counts.assign(targets.size(), 0);
  out.neighbors.clear();
  out.edge_ids.clear();
  // Every target is checked first, so the prefetches below only touch rows held here.
  for (size_t i = 0; i < targets.size(); ++i) {
    const int64_t row = targets[i] - first_node;
    VOLLEY_REQUIRE(row >= 0 && row < num_rows, IndexError,
                   "target {} at position {} is not among the rows [{}, {}) held here", targets[i],
                   i, first_node, first_node + num_rows);
  }
  if (fanout == 0) return;
  // As in expand(): picks are recorded as CSR positions, the ids read in prefetched passes at the
  // end, and the admissible prefixes of sorted rows searched a chunk of targets at a time.
  constexpr size_t kAhead = 16;
  const bool search_ahead = filter.active() && filter.sorted;
  const size_t count = targets.size();
  const auto row_of = [&](size_t i) {
    return std::pair{targets[i] - first_node, filter.seed_times[i]};
  };
  PrefixChunks prefixes(filter, indptr, indices, count, row_of, scratch);
  for (size_t i = 0; i < count; ++i) {
    if (i + kAhead < count) __builtin_prefetch(indptr + (targets[i + kAhead] - first_node));
    const int64_t target = targets[i];
    const int64_t row = target - first_node;
    const int64_t row_begin = indptr[row];
    const int64_t degree = indptr[row + 1] - row_begin;
    if (degree == 0) continue;
    const size_t before = out.neighbors.size();
    auto emit = [&](int64_t position) { out.neighbors.push_back(row_begin + position); };
    if (filter.active()) {
      pick_temporal(filter, indices, row_begin, degree, filter.seed_times[i], fanout, options.seed,
                    options.replace, neighbor_stream_counter(target, hop, batch_index), scratch,
                    search_ahead ? prefixes[i] : -1);
      for (int64_t position : scratch.picked) emit(position);
    } else if (fanout == -1 || (!options.replace && degree <= fanout)) {
      for (int64_t position = 0; position < degree; ++position) emit(position);
    } else {
      // The stream is keyed by the GLOBAL id, as in the single-machine sampler.
      PhiloxStream rng(options.seed, neighbor_stream_counter(target, hop, batch_index));
      pick(weights == nullptr ? nullptr : weights + row_begin, degree, fanout, options.replace, rng,
           scratch);
      for (int64_t position : scratch.picked) emit(position);
    }
    out.counts[i] = static_cast<int32_t>(out.neighbors.size() - before);
  }
  out.edge_ids = out.neighbors;
  if (edge_ids != nullptr) positions_to_ids(edge_ids, out.edge_ids);
  positions_to_ids(indices, out.neighbors);
}

}  // namespace

TimeFilter graph_time_filter(const Csr& graph, bool by_edge, const int64_t* seed_times) {
  TimeFilter filter;
  filter.seed_times = seed_times;
  if (by_edge) {
    filter.edge_time = graph.edge_time()->data<int64_t>();
    filter.sorted = graph.first_row_unsorted_by_edge_time() < 0;
  } else {
    filter.node_time = graph.node_time()->data<int64_t>();
    filter.sorted = graph.first_row_unsorted_by_node_time() < 0;
  }
  return filter;
}

std::shared_ptr<NeighborScratch> borrow_scratch() {
  // Working lists beyond this are freed on return: one huge batch is not kept for ever.
  constexpr size_t kKeptListBytes = size_t{16} << 20;
  static auto* stock = new Recycler<NeighborScratch>(
      {.max_idle = std::max<size_t>(2, static_cast<size_t>(default_num_threads())),
       .keep = [](NeighborScratch& scratch) {
         const auto trim = [](auto& list) {
           if (list.capacity() * sizeof(list[0]) > kKeptListBytes) std::exchange(list, {});
         };
         trim(scratch.picked);
         trim(scratch.neighbors);
         trim(scratch.bitmap);
         trim(scratch.keys);
         trim(scratch.admissible);
         trim(scratch.tree_table);  // one tree's: a few KiB unless fanouts take whole rows
         return true;
       }});
  return stock->acquire();
}

void sample_hop_cpu(const Csr& graph, int64_t first_node, std::span<const int64_t> targets, int hop,
                    int64_t fanout, const NeighborSamplerOptions& options, uint64_t batch_index,
                    const HopTimes& times, NeighborScratch& scratch, HopSample& out) {
  TimeFilter filter;
  filter.seed_times = times.target_times.data();
  filter.edge_time = times.edge_time.empty() ? nullptr : times.edge_time.data();
  filter.node_time = filter.edge_time != nullptr ? nullptr : times.node_time.data();
  filter.sorted = times.rows_sorted;
  filter.last = options.temporal_strategy == TemporalStrategy::kLast;
  if (graph.index_dtype() == DType::kInt32) {
    sample_hop_rows<int32_t>(graph, first_node, targets, hop, fanout, options, batch_index, filter,
                             scratch, out);
  } else {
    sample_hop_rows<int64_t>(graph, first_node, targets, hop, fanout, options, batch_index, filter,
                             scratch, out);
  }
}

void sample_typed_cpu(std::span<const TypedEdges> edges, std::span<const int64_t> num_nodes,
                      std::span<const TypedSeeds> seeds, size_t hops, bool disjoint,
                      const NeighborSamplerOptions& options, uint64_t batch_index,
                      NeighborScratch& scratch, TypedLists& out) {
  if (disjoint) {
    size_t trees = 0;
    for (const TypedSeeds& group : seeds) trees += group.ids.size();
    TypedDisjointBuilder builder(out, trees, scratch);
    sample_typed(edges, seeds, hops, options, batch_index, scratch, builder, out);
  } else {
    std::vector<SlotMap> maps = start_slot_maps(num_nodes, scratch);
    TypedSubgraphBuilder<SlotMap> builder(out, std::span<SlotMap>(maps), scratch.neighbors);
    sample_typed(edges, seeds, hops, options, batch_index, scratch, builder, out);
  }
}

namespace {

// `out`'s lists reserved for a batch an eighth larger than the scratch's last one.
void reserve_like_last(const NeighborScratch& scratch, bool disjoint, HostSubgraph& out) {
  const size_t edges = scratch.last_edges + scratch.last_edges / 8;
  const size_t nodes = scratch.last_nodes + scratch.last_nodes / 8;
  for (auto* list : {&out.rows, &out.cols, &out.edge_ids}) list->reserve(edges);
  out.nodes.reserve(nodes);
  if (disjoint) out.batch.reserve(nodes);
}

}  // namespace

// The homogeneous batch: the one-type case of the typed kernel, then the induced or
// bidirectional subgraph of what it sampled.
void sample_neighbors_cpu(const Csr& graph, std::span<const int64_t> seeds,
                          std::span<const int64_t> seed_times,
                          const NeighborSamplerOptions& options, uint64_t batch_index,
                          NeighborScratch& scratch, HostSubgraph& out) {
  for (size_t i = 0; i < seeds.size(); ++i)
    TypedHopEdges::check_seed(seeds[i], i, graph.num_nodes());
  const bool disjoint = options.disjoint || options.time_source != TimeSource::kNone;
  TypedEdges edges{.csr = &graph,
                   .stream_seed = options.seed,
                   .fanouts = options.fanouts.data(),
                   .weighted = options.weighted,
                   .filter = time_filter(graph, options, seed_times)};
  const int64_t num_nodes = graph.num_nodes();
  const TypedSeeds group{.ids = seeds, .name = {}};
  TypedLists& lists = scratch.lists;
  point_at(out, lists);
  reserve_like_last(scratch, disjoint, out);
  if (!disjoint) out.batch.clear();
  sample_typed_cpu({&edges, 1}, {&num_nodes, 1}, {&group, 1}, options.fanouts.size(), disjoint,
                   options, batch_index, scratch, lists);
  scratch.last_edges = out.rows.size(), scratch.last_nodes = out.nodes.size();
  if (options.subgraph_type == SubgraphType::kInduced) {  // the batch's map is still in scratch
    const SlotMap map{scratch.slots[0].data(), scratch.generation};
    if (graph.index_dtype() == DType::kInt32) {
      induce<int32_t>(graph, map, out);
    } else {
      induce<int64_t>(graph, map, out);
    }
  }
  if (options.subgraph_type == SubgraphType::kBidirectional) make_bidirectional(out);
}

}  // namespace volley::cpu
