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
// The batch is copied to host memory at the end (one wait). Every buffer is kept between
// batches; one batch at a time per backend (a mutex).
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
      : executor_(std::forward<Args>(executor_args)...), steps_(executor_) {}

  void sample(const HeteroDeviceView& graph, std::span<const std::span<const int64_t>> seeds,
              const HeteroBackendOptions& options, uint64_t batch_index, void* stream,
              HeteroBackendResult& out) override {
    std::lock_guard lock(mutex_);
    executor_.set_stream(stream);
    start(graph, seeds, out);
    const size_t hops = options.fanouts.empty() ? 0 : options.fanouts.front().size();
    std::vector<int64_t> frontier_begin(nodes_.size(), 0);
    for (size_t hop = 0; hop < hops; ++hop) {
      std::vector<int64_t> frontier_end(nodes_.size());  // fixed before the hop
      for (size_t t = 0; t < nodes_.size(); ++t) frontier_end[t] = nodes_[t]->count;
      for (size_t e = 0; e < edges_.size(); ++e) {
        const PickRule rule{options.fanouts[e][hop], options.replace, options.stream_seeds[e],
                            static_cast<int>(hop), batch_index};
        const auto dst = static_cast<size_t>(graph.dst_type[e]);
        // Read here, not before the hop: an earlier edge type may have grown this list.
        const Frontier frontier{nodes_[dst]->nodes.template as<int64_t>() + frontier_begin[dst],
                                frontier_begin[dst], frontier_end[dst] - frontier_begin[dst]};
        out.edges_per_hop[e].push_back(expand(graph, e, frontier, rule));
      }
      for (size_t t = 0; t < nodes_.size(); ++t) {
        out.nodes_per_hop[t].push_back(nodes_[t]->count - frontier_end[t]);
        frontier_begin[t] = frontier_end[t];
      }
    }
    finish(out);
  }

  Executor& executor() { return executor_; }

 private:
  // One (hop, edge type) expansion, dispatched on the edge type's index type.
  int64_t expand(const HeteroDeviceView& graph, size_t e, const Frontier& frontier,
                 const PickRule& rule) {
    const DeviceGraphView& view = graph.edge_types[e];
    NodeList<Executor>& sources = *nodes_[static_cast<size_t>(graph.src_type[e])];
    if (view.indices_are_32bit) {
      return steps_.expand(graph_rows<int32_t>(view), frontier, sources, *edges_[e], rule, 0, {});
    }
    return steps_.expand(graph_rows<int64_t>(view), frontier, sources, *edges_[e], rule, 0, {});
  }

  // Lists for the graph's types (kept when the type counts match the last batch's), the seeds
  // uploaded, the tables started, `out` sized and cleared.
  void start(const HeteroDeviceView& graph, std::span<const std::span<const int64_t>> seeds,
             HeteroBackendResult& out) {
    const auto types = static_cast<size_t>(graph.num_node_types);
    const size_t edge_types = graph.edge_types.size();
    while (nodes_.size() < types) nodes_.push_back(std::make_unique<NodeList<Executor>>(executor_));
    while (edges_.size() < edge_types)
      edges_.push_back(std::make_unique<EdgeLists<Executor>>(executor_));
    nodes_.resize(types);
    edges_.resize(edge_types);
    int64_t total_seeds = 0;
    for (size_t t = 0; t < types; ++t) {
      const std::span<const int64_t> group =
          t < seeds.size() ? seeds[t] : std::span<const int64_t>{};
      const size_t bytes = group.size() * sizeof(int64_t);
      NodeList<Executor>& list = *nodes_[t];
      list.nodes.reserve(bytes * 4);
      if (bytes > 0) executor_.upload(list.nodes.data(), group.data(), bytes);
      list.start(executor_, static_cast<int64_t>(group.size()));
      total_seeds += static_cast<int64_t>(group.size());
    }
    for (auto& edges : edges_) edges->start(total_seeds * 8 / std::max<int64_t>(1, edge_types));
    for (auto* lists : {&out.nodes, &out.nodes_per_hop}) lists->assign(types, {});
    for (auto* lists : {&out.rows, &out.cols, &out.edge_ids, &out.edges_per_hop})
      lists->assign(edge_types, {});
    for (size_t t = 0; t < types; ++t) out.nodes_per_hop[t].push_back(nodes_[t]->count);
  }

  // Copies every list to `out` (host memory) and waits for the copies.
  void finish(HeteroBackendResult& out) {
    auto copy = [&](std::vector<int64_t>& to, const internal::Scratch<Executor>& from,
                    int64_t count) {
      to.resize(static_cast<size_t>(count));
      executor_.copy(to.data(), from.data(), static_cast<size_t>(count) * sizeof(int64_t));
    };
    for (size_t t = 0; t < nodes_.size(); ++t) {
      nodes_[t]->finish();
      copy(out.nodes[t], nodes_[t]->nodes, nodes_[t]->count);
    }
    for (size_t e = 0; e < edges_.size(); ++e) {
      copy(out.rows[e], edges_[e]->rows, edges_[e]->count);
      copy(out.cols[e], edges_[e]->cols, edges_[e]->count);
      copy(out.edge_ids[e], edges_[e]->edge_ids, edges_[e]->count);
    }
    executor_.synchronize();
  }

  std::mutex mutex_;
  Executor executor_;
  HopSteps<Executor> steps_;
  std::vector<std::unique_ptr<NodeList<Executor>>> nodes_;   // per node type
  std::vector<std::unique_ptr<EdgeLists<Executor>>> edges_;  // per edge type
};

}  // namespace volley::sampling_internal
