// volley/sampling/cuda/hetero_driver.h — the GPU heterogeneous neighbor sampler's driver, a
// template on the executor (core/internal/executor.h): CudaExecutor in neighbor_sampler.cu,
// HostExecutor in neighbor_sampler_host.cc. No kernels of its own: each (hop, edge type) is one
// expansion of hop_steps.h over the homogeneous bodies (neighbor_kernels.h).
//
// The CPU heterogeneous sampler's order (hetero_sampler.h), which makes the result equal:
//   * one node list and one global id → local id table per node type; the seeds first;
//   * hop h: every node type's frontier is fixed before the hop (the nodes it reached at h - 1);
//     then edge types in graph order, each expanding its destination type's frontier over its
//     Csr (the picks are the homogeneous rule's with the edge type's stream seed) and appending
//     the new source-type nodes at once — a node reached by an earlier edge type of the same
//     hop keeps its local id; it is expanded at hop h + 1 only;
//   * per node type the count of new nodes per hop, per edge type the edges per hop.
// Disjoint sampling is the same expansion over keys, as in the homogeneous driver: a node of
// tree r is r * tree_size + id with one tree_size for every node type (at least the largest
// type's count), so each (hop, edge type) expansion dedupes per (tree, node) — the CPU's
// numbering, first seen in edge order — and picks by the node id alone; at the end the keys
// split into each type's nodes and batch (SplitKeysBody). Temporal sampling adds, per edge type
// whose view is timed, the TemporalRows of its entries with the trees' seed times (indexed by
// the key's tree); untimed edge types admit every entry, as on the CPU.
// Sizes stay on the device (hop_steps.h); at the end the batch reads them (one wait) and copies
// its lists to host memory (a second). Every buffer is kept between batches; one batch at a time
// per backend (a mutex).
#pragma once

#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "volley/core/internal/executor.h"
#include "volley/sampling/cuda/hop_steps.h"
#include "volley/sampling/internal/cuda_sampler_backend.h"

namespace volley::sampling_internal {

template <class Executor>
class HeteroSamplerBackend final : public CudaHeteroSamplerBackend {
 public:
  template <typename... Args>
  explicit HeteroSamplerBackend(Args&&... executor_args)
      : executor_(std::forward<Args>(executor_args)...),
        steps_(executor_),
        tally_(executor_),
        seed_times_(executor_, internal::Memory::kDevice) {}

  void sample(const HeteroDeviceView& graph, std::span<const std::span<const int64_t>> seeds,
              const HeteroBackendOptions& options, uint64_t batch_index, void* stream,
              HeteroBackendResult& out) override {
    std::lock_guard lock(mutex_);
    executor_.set_stream(stream);
    const size_t hops = options.fanouts.empty() ? 0 : options.fanouts.front().size();
    start(graph, seeds, options, hops);
    for (size_t hop = 0; hop < hops; ++hop) {
      // Every node type's frontier is fixed before the hop: the nodes its last level added.
      for (auto& list : nodes_) list->levels.next_level();
      for (auto& edges : edges_) edges->levels.next_level();
      for (size_t e = 0; e < edges_.size(); ++e) {
        PickRule rule = options.rule;
        rule.fanout = options.fanouts[e][hop];
        rule.seed = options.stream_seeds[e];
        rule.hop = static_cast<int>(hop);
        rule.batch = batch_index;
        // Made here, not before the hop: an earlier edge type may have grown this list.
        const Frontier frontier = frontier_of(*nodes_[static_cast<size_t>(graph.dst_type[e])]);
        expand(graph, e, frontier, rule, options.tree_size);
      }
      for (auto& list : nodes_) list->levels.end_level(executor_);
      for (auto& edges : edges_) edges->levels.end_level(executor_);
    }
    finish(options.tree_size, out);
  }

  Executor& executor() { return executor_; }

 private:
  // One (hop, edge type) expansion, dispatched on the edge type's index type; temporal picks
  // where the batch has seed times and the edge type has times.
  void expand(const HeteroDeviceView& graph, size_t e, const Frontier& frontier,
              const PickRule& rule, int64_t tree_size) {
    const DeviceGraphView& view = graph.edge_types[e];
    NodeList<Executor>& sources = *nodes_[static_cast<size_t>(graph.src_type[e])];
    TemporalRows time;
    if (timed_ && (view.edge_time != nullptr || view.node_time != nullptr))
      time = {view.edge_time, view.node_time, seed_times_.template as<int64_t>(), last_};
    if (view.indices_are_32bit) {
      steps_.expand(graph_rows<int32_t>(view), frontier, sources, *edges_[e], rule, tree_size,
                    time);
    } else {
      steps_.expand(graph_rows<int64_t>(view), frontier, sources, *edges_[e], rule, tree_size,
                    time);
    }
  }

  // Lists for the graph's types (kept when the type counts match the last batch's), the seeds
  // (disjoint: as keys), seed times and the tally uploaded, the tables started.
  void start(const HeteroDeviceView& graph, std::span<const std::span<const int64_t>> seeds,
             const HeteroBackendOptions& options, size_t hops) {
    const auto types = static_cast<size_t>(graph.num_node_types);
    const size_t edge_types = graph.edge_types.size();
    while (nodes_.size() < types) nodes_.push_back(std::make_unique<NodeList<Executor>>(executor_));
    while (edges_.size() < edge_types)
      edges_.push_back(std::make_unique<EdgeLists<Executor>>(executor_));
    nodes_.resize(types);
    edges_.resize(edge_types);
    tally_.start((types + edge_types) * (hops + 2));
    int64_t total_seeds = 0;
    for (size_t t = 0; t < types; ++t) {
      const std::span<const int64_t> group =
          t < seeds.size() ? seeds[t] : std::span<const int64_t>{};
      NodeList<Executor>& list = *nodes_[t];
      list.nodes.reserve(group.size() * sizeof(int64_t) * 4);
      const int64_t root = options.tree_size > 0 ? options.roots[t] : 0;
      upload_seeds(executor_, list, group, root, options.tree_size);
      tally_.take(list.levels, static_cast<int64_t>(group.size()), hops + 2);
      total_seeds += static_cast<int64_t>(group.size());
    }
    const size_t time_bytes = options.seed_times.size() * sizeof(int64_t);
    timed_ = time_bytes > 0;
    last_ = options.last;
    if (timed_) {
      seed_times_.reserve(time_bytes);
      executor_.upload(seed_times_.data(), options.seed_times.data(), time_bytes);
    }
    for (auto& edges : edges_) {
      edges->start(total_seeds * 8 / std::max<int64_t>(1, edge_types));
      tally_.take(edges->levels, 0, hops + 2);
    }
    tally_.upload();
    for (auto& list : nodes_) list->start(executor_);
  }

  // Disjoint: splits each type's keys into nodes and trees. Reads the sizes, then copies every
  // list to `out` (host memory) and waits for the copies.
  void finish(int64_t tree_size, HeteroBackendResult& out) {
    const size_t types = nodes_.size();
    while (trees_.size() < types)
      trees_.push_back(std::make_unique<Workspace>(executor_, internal::Memory::kDevice));
    for (size_t t = 0; tree_size > 0 && t < types; ++t)
      split_trees(executor_, *nodes_[t], tree_size, *trees_[t]);
    const std::vector<int64_t>& marks = tally_.read();
    auto copy = [&](std::vector<int64_t>& to, const Workspace& from, int64_t count) {
      to.resize(static_cast<size_t>(count));
      executor_.copy(to.data(), from.data(), static_cast<size_t>(count) * sizeof(int64_t));
    };
    for (auto* lists : {&out.nodes, &out.nodes_per_hop}) lists->assign(types, {});
    out.batch.assign(tree_size > 0 ? types : 0, {});
    for (auto* lists : {&out.rows, &out.cols, &out.edge_ids, &out.edges_per_hop})
      lists->assign(edges_.size(), {});
    for (size_t t = 0; t < types; ++t) {
      nodes_[t]->finish();
      out.nodes_per_hop[t] = nodes_[t]->levels.counts(marks);
      const int64_t count = nodes_[t]->levels.size_in(marks);
      copy(out.nodes[t], nodes_[t]->nodes, count);
      if (tree_size > 0) copy(out.batch[t], *trees_[t], count);
    }
    for (size_t e = 0; e < edges_.size(); ++e) {
      const Levels& levels = edges_[e]->levels;
      out.edges_per_hop[e] = levels.counts(marks);
      out.edges_per_hop[e].erase(out.edges_per_hop[e].begin());  // the level of the seeds
      const int64_t count = levels.size_in(marks);
      copy(out.rows[e], edges_[e]->rows, count);
      copy(out.cols[e], edges_[e]->cols, count);
      copy(out.edge_ids[e], edges_[e]->edge_ids, count);
    }
    executor_.synchronize();
  }

  using Workspace = internal::Scratch<Executor>;

  std::mutex mutex_;
  Executor executor_;
  HopSteps<Executor> steps_;
  Tally<Executor> tally_;                                    // the batch's sizes
  std::vector<std::unique_ptr<NodeList<Executor>>> nodes_;   // per node type
  std::vector<std::unique_ptr<EdgeLists<Executor>>> edges_;  // per edge type
  std::vector<std::unique_ptr<Workspace>> trees_;            // per node type (disjoint)
  Workspace seed_times_;                                     // per tree (temporal)
  bool timed_ = false, last_ = false;                        // the batch's temporal picks
};

}  // namespace volley::sampling_internal
