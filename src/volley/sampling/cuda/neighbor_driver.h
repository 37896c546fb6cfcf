// volley/sampling/cuda/neighbor_driver.h — the GPU neighbor sampler's driver, a template on the
// executor (core/internal/executor.h): CudaExecutor in neighbor_sampler.cu, HostExecutor in
// neighbor_sampler_host.cc. The bodies are in neighbor_kernels.h.
//
// One batch, hop by hop, in the executor's stream order:
//   1. count    one item per frontier target (CountBody); exclusive scan → each target's output
//               offset; the total E is read back (first wait);
//   2. pick     one item per target (PickBody) draws its positions at its offset (or notes
//               where its run of the row starts), then one item per edge (FillBody) writes
//               row, edge id and neighbor: the edge order is the CPU's — targets in node-list
//               order, each target's neighbors in pick order;
//   3. relabel  first appearance in that order, with a hash table global id → value: earlier
//               nodes hold their local id (< n, the nodes so far); neighbor j of the hop inserts
//               n + j with an atomic min, so a new node's entry ends up holding the position of
//               its first occurrence; j is a first occurrence iff the entry equals n + j; an
//               exclusive scan of those flags numbers the new nodes in position order (second
//               wait, for their count); first occurrences append their node and store the final
//               local id in the table; then every edge reads its column from the table.
// The table lives through the batch (cleared once, grown by rehashing when a hop could fill
// more than half of it); all buffers are Scratch kept by the backend between batches.
#pragma once

#include <algorithm>
#include <mutex>
#include <vector>

#include "volley/core/internal/executor.h"
#include "volley/sampling/cuda/neighbor_kernels.h"
#include "volley/sampling/internal/cuda_sampler_backend.h"

namespace volley::sampling_internal {

inline int64_t next_power_of_two(int64_t value) {
  int64_t power = 1;
  while (power < value) power <<= 1;
  return power;
}

template <class Executor>
class SamplerBackend final : public CudaSamplerBackend {
 public:
  template <typename... Args>
  explicit SamplerBackend(Args&&... executor_args)
      : executor_(std::forward<Args>(executor_args)...),
        nodes_(executor_, internal::Memory::kDevice),
        rows_(executor_, internal::Memory::kDevice),
        cols_(executor_, internal::Memory::kDevice),
        edge_ids_(executor_, internal::Memory::kDevice),
        neighbors_(executor_, internal::Memory::kDevice),
        counts_(executor_, internal::Memory::kDevice),
        offsets_(executor_, internal::Memory::kDevice),
        flags_(executor_, internal::Memory::kDevice),
        ranks_(executor_, internal::Memory::kDevice),
        table_(executor_, internal::Memory::kDevice),
        batch_(executor_, internal::Memory::kDevice),
        seed_times_(executor_, internal::Memory::kDevice) {}

  void sample(const DeviceGraphView& graph, std::span<const int64_t> seeds,
              const BackendOptions& options, uint64_t batch_index, void* stream,
              BackendResult& out) override {
    std::lock_guard lock(mutex_);
    executor_.set_stream(stream);
    if (graph.indices_are_32bit) {
      run<int32_t>(graph, seeds, options, batch_index, out);
    } else {
      run<int64_t>(graph, seeds, options, batch_index, out);
    }
  }

  Executor& executor() { return executor_; }

 private:
  using Workspace = internal::Scratch<Executor>;

  Table table() {
    Table table;
    table.keys = table_.template as<unsigned long long>();
    table.values = table.keys + table_capacity_;
    table.mask = static_cast<unsigned long long>(table_capacity_ - 1);
    return table;
  }

  // A cleared table of `capacity` entries holding nodes[0, node_count) → local id.
  void reset_table(int64_t capacity, int64_t node_count) {
    table_capacity_ = capacity;
    const size_t bytes = static_cast<size_t>(capacity) * 2 * sizeof(unsigned long long);
    table_.reserve(bytes);
    executor_.fill(table_.data(), 0xff, bytes);
    executor_.for_each(node_count, InsertBody{table(), nodes_.template as<int64_t>(), 0});
  }

  // Counts and offsets of one hop's frontier; returns the hop's edge count.
  template <typename Index>
  int64_t count_hop(const GraphRows<Index>& graph, const int64_t* frontier_nodes, int64_t frontier,
                    const PickRule& rule, int64_t tree_size, const TemporalRows& time) {
    const size_t frontier_bytes = static_cast<size_t>(frontier + 1) * sizeof(int64_t);
    counts_.reserve(frontier_bytes);
    offsets_.reserve(frontier_bytes);
    executor_.for_each(frontier, CountBody<Index>{graph, frontier_nodes, frontier, rule,
                                                  counts_.template as<int64_t>(), tree_size, time});
    executor_.exclusive_scan(counts_.template as<int64_t>(), offsets_.template as<int64_t>(),
                             frontier + 1);
    return executor_.read(offsets_.template as<int64_t>() + frontier);
  }

  // Picks the hop's edges into rows / edge_ids / neighbors_ at edge_count (PickBody per target,
  // then FillBody per edge).
  template <typename Index>
  void pick_hop(const GraphRows<Index>& graph, int64_t frontier_begin, int64_t frontier,
                int64_t edge_count, int64_t hop_edges, const PickRule& rule, int64_t tree_size,
                const TemporalRows& time) {
    const int64_t* frontier_nodes = nodes_.template as<int64_t>() + frontier_begin;
    const int64_t* offsets = offsets_.template as<int64_t>();
    int64_t* bases = counts_.template as<int64_t>();  // free since the scan
    int64_t* rows = rows_.template as<int64_t>() + edge_count;
    int64_t* edge_ids = edge_ids_.template as<int64_t>() + edge_count;
    executor_.for_each(frontier, PickBody<Index>{graph, frontier_nodes, rule, offsets, bases, rows,
                                                 cols_.template as<int64_t>() + edge_count,
                                                 edge_ids, tree_size, time});
    executor_.for_each(
        hop_edges, FillBody<Index>{graph, frontier_nodes, frontier, frontier_begin, offsets, bases,
                                   rows, edge_ids, neighbors_.template as<int64_t>(), tree_size});
  }

  // Numbers the hop's new nodes (appended to nodes_) and fills cols; returns how many.
  int64_t relabel_hop(int64_t node_count, int64_t edge_count, int64_t hop_edges) {
    const int64_t bound = node_count + hop_edges;  // most nodes the batch can hold now
    if (2 * bound > table_capacity_) reset_table(next_power_of_two(2 * bound), node_count);
    const int64_t* neighbors = neighbors_.template as<int64_t>();
    executor_.for_each(hop_edges, InsertBody{table(), neighbors, node_count});
    const size_t flag_bytes = static_cast<size_t>(hop_edges + 1) * sizeof(int64_t);
    auto* flags = reinterpret_cast<int64_t*>(flags_.reserve(flag_bytes));
    auto* ranks = reinterpret_cast<int64_t*>(ranks_.reserve(flag_bytes));
    executor_.for_each(hop_edges, FlagFirstBody{table(), neighbors, hop_edges, node_count, flags});
    executor_.exclusive_scan(flags, ranks, hop_edges + 1);
    const int64_t hop_nodes = executor_.read(ranks + hop_edges);
    if (node_count + hop_nodes >= (int64_t{1} << 31)) throw_batch_too_large(node_count + hop_nodes);
    nodes_.reserve(static_cast<size_t>(node_count + hop_nodes) * sizeof(int64_t),
                   static_cast<size_t>(node_count) * sizeof(int64_t));
    executor_.for_each(hop_edges, AssignBody{table(), neighbors, node_count, flags, ranks,
                                             nodes_.template as<int64_t>()});
    executor_.for_each(hop_edges,
                       ColumnsBody{table(), neighbors, cols_.template as<int64_t>() + edge_count});
    return hop_nodes;
  }

  // The seeds into nodes_ — as keys root * tree_size + seed for disjoint (and temporal)
  // sampling, which the nodes stay until the end of the batch — and the seed times; returns
  // what the bodies need for temporal picks (inactive unless there are seed times).
  TemporalRows upload_seeds(const DeviceGraphView& view, std::span<const int64_t> seeds,
                            const BackendOptions& options, int64_t tree_size) {
    const size_t seed_bytes = seeds.size() * sizeof(int64_t);
    if (tree_size > 0) {
      std::vector<int64_t> keys(seeds.size());
      for (size_t i = 0; i < seeds.size(); ++i) {
        keys[i] = static_cast<int64_t>(i) * tree_size + seeds[i];
      }
      executor_.upload(nodes_.data(), keys.data(), seed_bytes);
    } else {
      executor_.upload(nodes_.data(), seeds.data(), seed_bytes);
    }
    if (options.seed_times.empty()) return {};
    seed_times_.reserve(seed_bytes);
    executor_.upload(seed_times_.data(), options.seed_times.data(), seed_bytes);
    return {view.edge_time, view.node_time, seed_times_.template as<int64_t>(), options.last};
  }

  template <typename Index>
  void run(const DeviceGraphView& view, std::span<const int64_t> seeds,
           const BackendOptions& options, uint64_t batch_index, BackendResult& out) {
    GraphRows<Index> graph;
    graph.indptr = view.indptr;
    graph.indices = static_cast<const Index*>(view.indices);
    graph.edge_ids = view.edge_ids;
    graph.weights = view.weights;

    const auto num_seeds = static_cast<int64_t>(seeds.size());
    const size_t seed_bytes = seeds.size() * sizeof(int64_t);
    nodes_.reserve(seed_bytes * 4);  // fresh if the caller holds the last batch
    rows_.reserve(seed_bytes * 8);
    cols_.reserve(seed_bytes * 8);
    edge_ids_.reserve(seed_bytes * 8);
    const bool disjoint = options.disjoint || !options.seed_times.empty();
    const int64_t tree_size = disjoint ? view.num_nodes : 0;
    const TemporalRows time = upload_seeds(view, seeds, options, tree_size);
    // Start with the table size the last batch ended with: no rehash in steady state.
    reset_table(std::max(next_power_of_two(4 * num_seeds), std::max<int64_t>(last_capacity_, 1024)),
                num_seeds);

    out.nodes_per_hop.assign(1, num_seeds);
    out.edges_per_hop.clear();
    int64_t node_count = num_seeds, edge_count = 0, frontier_begin = 0;
    for (size_t hop = 0; hop < options.fanouts.size(); ++hop) {
      const PickRule rule{options.fanouts[hop], options.replace, options.seed,
                          static_cast<int>(hop), batch_index};
      const int64_t frontier = node_count - frontier_begin;
      int64_t hop_edges = 0, hop_nodes = 0;
      if (rule.fanout != 0 && frontier > 0) {
        hop_edges = count_hop(graph, nodes_.template as<int64_t>() + frontier_begin, frontier, rule,
                              tree_size, time);
      }
      if (hop_edges > 0) {
        const size_t kept = static_cast<size_t>(edge_count) * sizeof(int64_t);
        const size_t needed = static_cast<size_t>(edge_count + hop_edges) * sizeof(int64_t);
        rows_.reserve(needed, kept);
        cols_.reserve(needed, kept);
        edge_ids_.reserve(needed, kept);
        neighbors_.reserve(static_cast<size_t>(hop_edges) * sizeof(int64_t));
        pick_hop(graph, frontier_begin, frontier, edge_count, hop_edges, rule, tree_size, time);
        hop_nodes = relabel_hop(node_count, edge_count, hop_edges);
      }
      out.edges_per_hop.push_back(hop_edges);
      out.nodes_per_hop.push_back(hop_nodes);
      frontier_begin = node_count;
      node_count += hop_nodes;
      edge_count += hop_edges;
    }
    last_capacity_ = table_capacity_;
    out.batch = Buffer();
    if (disjoint) {
      batch_.reserve(static_cast<size_t>(node_count) * sizeof(int64_t));
      executor_.for_each(node_count, SplitKeysBody{tree_size, nodes_.template as<int64_t>(),
                                                   batch_.template as<int64_t>()});
      out.batch = batch_.buffer();
    }

    out.nodes = nodes_.buffer();
    out.rows = rows_.buffer();
    out.cols = cols_.buffer();
    out.edge_ids = edge_ids_.buffer();
    out.num_nodes = node_count;
    out.num_edges = edge_count;
  }

  std::mutex mutex_;
  Executor executor_;
  int64_t table_capacity_ = 0;
  int64_t last_capacity_ = 0;
  Workspace nodes_, rows_, cols_, edge_ids_;  // the outputs
  Workspace neighbors_, counts_, offsets_, flags_, ranks_, table_;
  Workspace batch_, seed_times_;  // disjoint / temporal sampling
};

}  // namespace volley::sampling_internal
