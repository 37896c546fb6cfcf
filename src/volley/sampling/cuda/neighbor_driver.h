// volley/sampling/cuda/neighbor_driver.h — the GPU neighbor sampler's driver, a template on the
// executor (core/internal/executor.h): CudaExecutor in neighbor_sampler.cu, HostExecutor in
// neighbor_sampler_host.cc. The bodies are in neighbor_kernels.h.
//
// One batch, hop by hop: each hop is one expansion of the nodes the previous hop reached
// (hop_steps.h: count, pick, relabel, in the executor's stream order). Sizes stay on the device
// and the batch waits once, at its end, to read them (a hop with fanout -1 also waits for its
// edge and node counts, which have no bound).
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
        tally_(executor_),
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
    sampling_internal::upload_seeds(executor_, nodes_, seeds, 0, tree_size);
    if (options.seed_times.empty()) return {};
    const size_t seed_bytes = seeds.size() * sizeof(int64_t);
    seed_times_.reserve(seed_bytes);
    executor_.upload(seed_times_.data(), options.seed_times.data(), seed_bytes);
    return {view.edge_time, view.node_time, seed_times_.template as<int64_t>(), options.last};
  }

  template <typename Index>
  void run(const DeviceGraphView& view, std::span<const int64_t> seeds,
           const BackendOptions& options, uint64_t batch_index, BackendResult& out) {
    const GraphRows<Index> graph = graph_rows<Index>(view);
    const auto num_seeds = static_cast<int64_t>(seeds.size());
    const size_t hops = options.fanouts.size();
    nodes_.nodes.reserve(seeds.size() * sizeof(int64_t) * 4);  // fresh if the caller holds it
    edges_.start(num_seeds * 8);
    const bool disjoint = options.disjoint || !options.seed_times.empty();
    const int64_t tree_size = disjoint ? view.num_nodes : 0;
    const TemporalRows time = upload_seeds(view, seeds, options, tree_size);
    tally_.start(2 * (hops + 2));
    tally_.take(nodes_.levels, num_seeds, hops + 2);
    tally_.take(edges_.levels, 0, hops + 2);
    tally_.upload();
    nodes_.start(executor_);
    for (size_t hop = 0; hop < hops; ++hop) {
      PickRule rule = options.rule;
      rule.fanout = options.fanouts[hop];
      rule.seed = options.seed;
      rule.hop = static_cast<int>(hop);
      rule.batch = batch_index;
      nodes_.levels.next_level();
      edges_.levels.next_level();
      steps_.expand(graph, frontier_of(nodes_), nodes_, edges_, rule, tree_size, time);
      nodes_.levels.end_level(executor_);
      edges_.levels.end_level(executor_);
    }
    nodes_.finish();
    out.batch = Buffer();
    if (disjoint) {
      split_trees(executor_, nodes_, tree_size, batch_);
      out.batch = batch_.buffer();
    }
    const std::vector<int64_t>& marks = tally_.read();
    out.nodes_per_hop = nodes_.levels.counts(marks);
    out.edges_per_hop = edges_.levels.counts(marks);
    out.edges_per_hop.erase(out.edges_per_hop.begin());  // the level of the seeds
    out.nodes = nodes_.nodes.buffer();
    out.rows = edges_.rows.buffer();
    out.cols = edges_.cols.buffer();
    out.edge_ids = edges_.edge_ids.buffer();
    out.num_nodes = nodes_.levels.size_in(marks);
    out.num_edges = edges_.levels.size_in(marks);
  }

  std::mutex mutex_;
  Executor executor_;
  NodeList<Executor> nodes_;   // the output nodes
  EdgeLists<Executor> edges_;  // the output edges
  HopSteps<Executor> steps_;
  Tally<Executor> tally_;         // the batch's sizes
  Workspace batch_, seed_times_;  // disjoint / temporal sampling
};

}  // namespace volley::sampling_internal
