// volley/sampling/cuda/neighbor_driver.h — the GPU neighbor sampler's driver, a template on the
// executor (core/internal/executor.h): CudaExecutor in neighbor_sampler.cu, HostExecutor in
// neighbor_sampler_host.cc. The bodies are in neighbor_kernels.h.
//
// One batch, hop by hop: each hop is one expansion of the nodes the previous hop reached
// (hop_steps.h: count, pick, relabel, in the executor's stream order, two waits per hop).
#pragma once

#include <algorithm>
#include <mutex>
#include <vector>

#include "volley/core/internal/executor.h"
#include "volley/sampling/cuda/hop_steps.h"
#include "volley/sampling/internal/cuda_sampler_backend.h"

namespace volley::sampling_internal {

template <class Executor>
class SamplerBackend final : public CudaSamplerBackend {
 public:
  template <typename... Args>
  explicit SamplerBackend(Args&&... executor_args)
      : executor_(std::forward<Args>(executor_args)...),
        nodes_(executor_),
        edges_(executor_),
        steps_(executor_),
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
      executor_.upload(nodes_.nodes.data(), keys.data(), seed_bytes);
    } else {
      executor_.upload(nodes_.nodes.data(), seeds.data(), seed_bytes);
    }
    if (options.seed_times.empty()) return {};
    seed_times_.reserve(seed_bytes);
    executor_.upload(seed_times_.data(), options.seed_times.data(), seed_bytes);
    return {view.edge_time, view.node_time, seed_times_.template as<int64_t>(), options.last};
  }

  template <typename Index>
  void run(const DeviceGraphView& view, std::span<const int64_t> seeds,
           const BackendOptions& options, uint64_t batch_index, BackendResult& out) {
    const GraphRows<Index> graph = graph_rows<Index>(view);
    const auto num_seeds = static_cast<int64_t>(seeds.size());
    nodes_.nodes.reserve(seeds.size() * sizeof(int64_t) * 4);  // fresh if the caller holds it
    edges_.start(num_seeds * 8);
    const bool disjoint = options.disjoint || !options.seed_times.empty();
    const int64_t tree_size = disjoint ? view.num_nodes : 0;
    const TemporalRows time = upload_seeds(view, seeds, options, tree_size);
    nodes_.start(executor_, num_seeds);

    out.nodes_per_hop.assign(1, num_seeds);
    out.edges_per_hop.clear();
    int64_t frontier_begin = 0;
    for (size_t hop = 0; hop < options.fanouts.size(); ++hop) {
      const PickRule rule{options.fanouts[hop], options.replace, options.seed,
                          static_cast<int>(hop), batch_index};
      const int64_t node_count = nodes_.count;
      const Frontier frontier{nodes_.nodes.template as<int64_t>() + frontier_begin, frontier_begin,
                              node_count - frontier_begin};
      out.edges_per_hop.push_back(
          steps_.expand(graph, frontier, nodes_, edges_, rule, tree_size, time));
      out.nodes_per_hop.push_back(nodes_.count - node_count);
      frontier_begin = node_count;
    }
    nodes_.finish();
    out.batch = Buffer();
    if (disjoint) {
      batch_.reserve(static_cast<size_t>(nodes_.count) * sizeof(int64_t));
      executor_.for_each(nodes_.count, SplitKeysBody{tree_size, nodes_.nodes.template as<int64_t>(),
                                                     batch_.template as<int64_t>()});
      out.batch = batch_.buffer();
    }
    out.nodes = nodes_.nodes.buffer();
    out.rows = edges_.rows.buffer();
    out.cols = edges_.cols.buffer();
    out.edge_ids = edges_.edge_ids.buffer();
    out.num_nodes = nodes_.count;
    out.num_edges = edges_.count;
  }

  std::mutex mutex_;
  Executor executor_;
  NodeList<Executor> nodes_;   // the output nodes
  EdgeLists<Executor> edges_;  // the output edges
  HopSteps<Executor> steps_;
  Workspace batch_, seed_times_;  // disjoint / temporal sampling
};

}  // namespace volley::sampling_internal
